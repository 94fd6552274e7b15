//! WhatsApp Cloud API: `GET /webhooks/whatsapp` (Meta's subscription handshake: the
//! `hub.challenge` echoed when `hub.verify_token` matches), `POST /webhooks/whatsapp`
//! (`X-Hub-Signature-256` checked over the raw body before anything is parsed; answered 200 at
//! once, the messages handled in the background) and the Graph API for replies (split at 4096
//! characters) and media downloads.

pub mod api;
mod audio;
pub mod payload;
pub mod signature;

use crate::channels::{Attachment, Channel, ChannelError, RawRequest, Received, Route, Sent, Unauthenticated, WebReply};
use crate::config::Loaded;
use crate::ports::{DeliveryError, Target};
use api::GraphClient;
use async_trait::async_trait;
use axum::http::Method;
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;
use subtle::ConstantTimeEq;

/// The webhook path (both the handshake and the notifications).
pub const PATH: &str = "/webhooks/whatsapp";

/// The WhatsApp Cloud API channel.
pub struct WhatsApp {
    app_secret: Option<SecretString>,
    verify_token: Option<SecretString>,
    phone_number_id: Option<String>,
    client: Option<GraphClient>,
}

impl WhatsApp {
    /// From Hermes' variables: `WHATSAPP_CLOUD_APP_SECRET` (webhook signatures),
    /// `WHATSAPP_CLOUD_VERIFY_TOKEN` (handshake), `WHATSAPP_CLOUD_ACCESS_TOKEN` and
    /// `WHATSAPP_CLOUD_PHONE_NUMBER_ID` (outbound), and `platforms.whatsapp.api_base` /
    /// `api_version` (`WHATSAPP_CLOUD_API_VERSION` wins).
    pub fn from_config(cfg: &Loaded, http: reqwest::Client) -> Self {
        let p = cfg.platform("whatsapp");
        let base = if p.api_base.trim().is_empty() { api::DEFAULT_API_BASE } else { p.api_base.as_str() };
        let version = cfg
            .env
            .get("WHATSAPP_CLOUD_API_VERSION")
            .map(str::to_string)
            .or(Some(p.api_version.clone()))
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| api::DEFAULT_API_VERSION.into());
        let phone_number_id = cfg.env.get("WHATSAPP_CLOUD_PHONE_NUMBER_ID").map(str::trim).filter(|s| !s.is_empty()).map(str::to_string);
        let token = cfg.env.secret("WHATSAPP_CLOUD_ACCESS_TOKEN");
        let client = match (token, &phone_number_id) {
            (Some(t), Some(id)) => Some(GraphClient::new(http, base, &version, t, id.clone())),
            _ => None,
        };
        Self {
            app_secret: cfg.env.secret("WHATSAPP_CLOUD_APP_SECRET"),
            verify_token: cfg.env.secret("WHATSAPP_CLOUD_VERIFY_TOKEN"),
            phone_number_id,
            client,
        }
    }

    fn client(&self) -> Result<&GraphClient, DeliveryError> {
        self.client.as_ref().ok_or_else(|| {
            DeliveryError::NotConfigured("whatsapp (WHATSAPP_CLOUD_ACCESS_TOKEN and WHATSAPP_CLOUD_PHONE_NUMBER_ID must be set)".into())
        })
    }

    /// The handshake's check: `hub.mode=subscribe` and the verify token, in constant time.
    fn verify_handshake(&self, query: Option<&str>) -> Result<(), Unauthenticated> {
        let Some(expected) = &self.verify_token else { return Err(Unauthenticated("WHATSAPP_CLOUD_VERIFY_TOKEN is not set")) };
        if query_param(query, "hub.mode").as_deref() != Some("subscribe") {
            return Err(Unauthenticated("hub.mode is not subscribe"));
        }
        let given = query_param(query, "hub.verify_token").unwrap_or_default();
        if bool::from(given.as_bytes().ct_eq(expected.expose_secret().as_bytes())) {
            Ok(())
        } else {
            Err(Unauthenticated("wrong hub.verify_token"))
        }
    }
}

/// One query parameter, percent-decoded.
fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    url::form_urlencoded::parse(query?.as_bytes()).find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
}

#[async_trait]
impl Channel for WhatsApp {
    fn name(&self) -> &'static str {
        "whatsapp"
    }

    fn routes(&self) -> Vec<Route> {
        vec![Route::get(PATH), Route::post(PATH)]
    }

    fn authenticate(&self, req: &RawRequest<'_>) -> Result<(), Unauthenticated> {
        if *req.method == Method::GET {
            return self.verify_handshake(req.query);
        }
        let Some(secret) = &self.app_secret else { return Err(Unauthenticated("WHATSAPP_CLOUD_APP_SECRET is not set")) };
        let Some(sig) = req.header(signature::SIGNATURE_HEADER) else { return Err(Unauthenticated("no X-Hub-Signature-256")) };
        if signature::verify(secret.expose_secret().as_bytes(), sig, req.body) { Ok(()) } else { Err(Unauthenticated("bad signature")) }
    }

    fn receive(&self, req: &RawRequest<'_>) -> Result<Received, ChannelError> {
        if *req.method == Method::GET {
            let challenge = query_param(req.query, "hub.challenge").ok_or_else(|| ChannelError::BadRequest("no hub.challenge".into()))?;
            return Ok(Received::Answer(WebReply::text(challenge)));
        }
        let n: payload::Notification =
            serde_json::from_slice(req.body).map_err(|e| ChannelError::BadRequest(format!("not a WhatsApp notification: {e}")))?;
        let mut msgs = payload::inbounds(&n, self.phone_number_id.as_deref());
        // Meta waits for a 200 only briefly and redelivers otherwise: answer now, handle later
        // (a redelivery is a duplicate by its message id).
        let ack = WebReply::json(json!({"ok": true}));
        Ok(match msgs.len() {
            0 => Received::Answer(WebReply::json(json!({"ok": true, "ignored": "no message"}))),
            1 => Received::Deferred { msg: msgs.remove(0), ack, then: None },
            _ => Received::DeferredMany { msgs, ack },
        })
    }

    fn limit(&self) -> usize {
        api::LIMIT
    }

    fn ready(&self) -> Result<(), DeliveryError> {
        self.client().map(|_| ())
    }

    async fn send(&self, target: &Target, text: &str) -> Result<Sent, DeliveryError> {
        self.client()?.send_text(&target.chat_id, text).await
    }

    async fn fetch(&self, attachment: &Attachment, max_bytes: usize) -> Result<Vec<u8>, DeliveryError> {
        self.client()?.fetch_media(&attachment.id, max_bytes).await
    }

    fn voice_notes(&self) -> bool {
        true
    }

    async fn send_audio(&self, target: &Target, audio: &crate::ports::Audio) -> Result<Sent, DeliveryError> {
        self.client()?.send_audio(&target.chat_id, audio).await
    }
}

#[cfg(test)]
mod tests;
