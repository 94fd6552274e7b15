//! [`Webhooks`]: what the edges do with webhook routes (CONTRACT §16): look a route up, hold
//! it to its rate window, spend a delivery id once, deliver a `deliver_only` message, and
//! run an accepted delivery (`app::webhooks`).

use crate::app::webhooks::types::Accepted;
use crate::app::{App, AppError};
use crate::core::webhook::{DEDUPE_SECS, WebhookRoute, WebhookRoutes};
use crate::ports::Target;

/// Webhook routes. Cheap to clone.
#[derive(Clone)]
pub struct Webhooks {
    pub(super) app: App,
}

/// The store key a delivery id is spent under (the store adds the profile's key space).
fn once_key(route: &str, delivery_id: &str) -> String {
    format!("webhook:{route}:{delivery_id}")
}

impl Webhooks {
    /// Every configured route and the body cap.
    pub fn routes(&self) -> &WebhookRoutes {
        &self.app.inner.cfg.webhooks
    }

    /// The route named `name`, if configured.
    pub fn route(&self, name: &str) -> Option<&WebhookRoute> {
        self.routes().routes.get(name)
    }

    /// Records a delivery on `route` in this process's rate window; false when the route is
    /// over its `rate_limit` for the last minute (Hermes' 429).
    pub fn admit(&self, route: &WebhookRoute) -> bool {
        self.app.inner.webhook_rates.admit(&route.name, route.rate_limit, self.app.now())
    }

    /// Spends `delivery_id` on `route` for an hour, in the store (so a retry that lands on
    /// another process is seen too); false when it was spent within the hour (a duplicate).
    pub async fn claim(&self, route: &str, delivery_id: &str) -> Result<bool, AppError> {
        let now = self.app.now();
        let expires = now + chrono::Duration::seconds(DEDUPE_SECS);
        Ok(self.app.inner.store.use_once(&once_key(route, delivery_id), expires, now).await?)
    }

    /// `deliver_only`: sends the rendered text to the route's target with no model call;
    /// the target it went to, or why it could not be sent.
    pub async fn deliver_only(&self, route: &WebhookRoute, d: &Accepted) -> Result<Option<Target>, String> {
        self.app.webhook_deliver(&route.deliver, &d.extra, &d.prompt).await
    }

    /// Runs an accepted delivery to the end (session, turn, delivery); failures are logged.
    pub async fn run(&self, route: &WebhookRoute, d: &Accepted) {
        self.app.webhook_run(route, d).await;
    }
}
