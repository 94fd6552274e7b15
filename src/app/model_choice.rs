//! Which model a chat turn uses (docs/sessions.md#commands): the session's `/model` choice
//! (on its entry), else the agent's default set with `/model --global` (a store meta
//! record, so every process sees it), else the configured `model.*`. Choices are checked
//! against the provider table and the environment when they are made
//! (`config::models::resolve_choice`), so a turn never starts on a model it cannot reach.
//!
//! Why cached: the default is read by every chat turn, and a turn's store requests are
//! budgeted (docs/design.md#store-cost). This process keeps what it read for
//! [`DEFAULT_TTL_SECS`]; a `/model --global` made in another process is seen after that.

use crate::app::{App, AppError};
use crate::core::session::{ModelChoice, SessionEntry};
use chrono::{DateTime, Duration, Utc};
use std::sync::{Mutex, PoisonError};

/// Store meta record of the agent's default model (`/model --global`).
pub const DEFAULT_MODEL_KEY: &str = "model:default";
/// How long this process trusts the default it read.
pub const DEFAULT_TTL_SECS: i64 = 30;

/// The default model as this process last read it, and when.
#[derive(Default)]
pub(in crate::app) struct DefaultModel(Mutex<Option<(DateTime<Utc>, Option<ModelChoice>)>>);

impl App {
    /// The agent's default model choice (`/model --global`), `None` for the configured one.
    pub(in crate::app) async fn default_model(&self) -> Result<Option<ModelChoice>, AppError> {
        let now = self.inner.clock.now();
        if let Some((at, v)) = &*self.inner.default_model.0.lock().unwrap_or_else(PoisonError::into_inner)
            && now - *at < Duration::seconds(DEFAULT_TTL_SECS)
            && *at <= now
        {
            return Ok(v.clone());
        }
        let raw = self.inner.store.get_meta(DEFAULT_MODEL_KEY).await?;
        let v = raw.and_then(|r| match serde_json::from_str::<ModelChoice>(&r) {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::warn!(error = %e, "the stored default model is not readable; using the configured one");
                None
            }
        });
        *self.inner.default_model.0.lock().unwrap_or_else(PoisonError::into_inner) = Some((now, v.clone()));
        Ok(v)
    }

    /// Stores the agent's default model (`None`: back to the configured one).
    pub(in crate::app) async fn set_default_model(&self, choice: Option<&ModelChoice>) -> Result<(), AppError> {
        match choice {
            Some(c) => {
                let raw = serde_json::to_string(c).map_err(|e| AppError::BadRequest(e.to_string()))?;
                self.inner.store.put_meta(DEFAULT_MODEL_KEY, &raw).await?;
            }
            None => self.inner.store.delete_meta(DEFAULT_MODEL_KEY).await?,
        }
        *self.inner.default_model.0.lock().unwrap_or_else(PoisonError::into_inner) = Some((self.inner.clock.now(), choice.cloned()));
        Ok(())
    }

    /// The model of a chat turn of `entry`: its own choice, else the default (`None`: the
    /// configured model). A failed read of the default falls back to the configured model.
    pub(in crate::app) async fn turn_model(&self, entry: &SessionEntry) -> Option<ModelChoice> {
        if entry.model.is_some() {
            return entry.model.clone();
        }
        self.default_model().await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "default model unreadable; using the configured one");
            None
        })
    }

    /// The configured model as `provider` and model id.
    pub(in crate::app) fn configured_model(&self) -> ModelChoice {
        let p = &self.inner.cfg.model.primary;
        ModelChoice { provider: Some(p.provider.to_string()), model: p.model.clone() }
    }
}

/// The model route of a session's `/model` choice: its provider, when it names one (the
/// router resolves it as `model.*` is; docs/sessions.md#commands).
pub(in crate::app) fn route_of(choice: Option<crate::core::session::ModelChoice>) -> Option<crate::ports::ModelRoute> {
    choice.and_then(|c| c.provider).map(|p| crate::ports::ModelRoute { provider: Some(p), base_url: None })
}
