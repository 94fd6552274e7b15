//! Channels: the chat platforms, each one implementation of [`Channel`] — inbound (its
//! webhook routes, authentication of the raw request before anything is parsed, retry
//! recognition, normalization into a core [`Inbound`], the HTTP answer) and outbound (send,
//! edit, split to the platform's limit, failures classified once).
//!
//! [`Channels`] is the registry: built once at wiring time (`runtime`), held in the HTTP
//! state (the router generates one webhook route per [`Route`] a channel names) and behind the
//! app's `Delivery` port (replies and job output go out through it, with retries).
//!
//! Adding a platform is one folder here plus one line in [`Channels::from_config`]; see
//! `docs/design.md#add-channel`. Knows platform wire formats and HTTP status codes; knows no
//! session rule (those live in `app` and `core`) and no axum router (that is `http`'s).

pub mod api;
pub mod discord;
mod registry;
mod retry;
pub mod slack;
pub mod telegram;
pub mod whatsapp;

pub use registry::Channels;
pub use retry::{ATTEMPTS, with_retry};

use crate::app::{AppError, Outcome};
use crate::core::text::split_message;
use crate::ports::{DeliveryError, StreamTarget, Target};
use async_trait::async_trait;
use axum::http::{HeaderMap, Method, StatusCode};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use std::sync::Arc;

pub use crate::core::inbound::{Attachment, AttachmentKind, Inbound, ReplyPath};

/// One webhook route a channel serves; the router adds it as it is.
#[derive(Debug, Clone)]
pub struct Route {
    /// HTTP method (a platform's verification handshake may use GET on the same path).
    pub method: Method,
    /// Path, e.g. `/webhooks/telegram`.
    pub path: &'static str,
}

impl Route {
    /// `POST path`.
    pub fn post(path: &'static str) -> Self {
        Self { method: Method::POST, path }
    }

    /// `GET path` (a verification handshake, such as WhatsApp's `hub.challenge`).
    pub fn get(path: &'static str) -> Self {
        Self { method: Method::GET, path }
    }
}

/// A webhook call as it arrived, before anything is parsed.
#[derive(Debug, Clone, Copy)]
pub struct RawRequest<'a> {
    /// Method.
    pub method: &'a Method,
    /// Headers (signatures, secrets, retry markers).
    pub headers: &'a HeaderMap,
    /// Raw query string, if any.
    pub query: Option<&'a str>,
    /// The body exactly as received (signatures cover these bytes).
    pub body: &'a [u8],
    /// Now, from the app clock (signature freshness windows).
    pub now: DateTime<Utc>,
}

impl RawRequest<'_> {
    /// A header as text, when present and visible ASCII.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// The HTTP answer a channel gives its platform.
#[derive(Debug, Clone, PartialEq)]
pub struct WebReply {
    /// Status code.
    pub status: StatusCode,
    /// Body.
    pub body: ReplyBody,
}

/// The body of a [`WebReply`].
#[derive(Debug, Clone, PartialEq)]
pub enum ReplyBody {
    /// JSON.
    Json(Value),
    /// Plain text (e.g. a verification challenge echoed back).
    Text(String),
}

impl WebReply {
    /// 200 with a JSON body.
    pub fn json(v: Value) -> Self {
        Self { status: StatusCode::OK, body: ReplyBody::Json(v) }
    }

    /// A JSON body with another status.
    pub fn json_status(status: StatusCode, v: Value) -> Self {
        Self { status, body: ReplyBody::Json(v) }
    }

    /// 200 with a plain-text body.
    pub fn text(s: impl Into<String>) -> Self {
        Self { status: StatusCode::OK, body: ReplyBody::Text(s.into()) }
    }
}

/// What a channel made of an authenticated request.
pub enum Received {
    /// Answer the platform now; no message reaches the app (a handshake such as Discord's
    /// PING, an ignored update, an immediate answer).
    Answer(WebReply),
    /// A message for the app; the request is answered by [`Channel::answer`] after it is
    /// handled.
    Turn(Inbound),
    /// A message for the app, handled in the background: the request is answered now with
    /// `ack` (a platform that needs an answer within seconds), and the result goes to `then`.
    Deferred {
        /// The message.
        msg: Inbound,
        /// The immediate answer.
        ack: WebReply,
        /// Who answers the user once the message is handled (None: the app's replies to the
        /// origin are the answer).
        then: Option<Box<dyn FollowUp>>,
    },
    /// Several messages in one request (a WhatsApp webhook may batch them), handled in the
    /// background one after the other, in order, like [`Received::Deferred`] with `then:
    /// None`: the request is answered now with `ack`, the app's replies go to each origin.
    DeferredMany {
        /// The messages, in the platform's order.
        msgs: Vec<Inbound>,
        /// The immediate answer.
        ack: WebReply,
    },
}

/// Answers the user from the outcome of a deferred message (e.g. Discord interaction
/// follow-ups). Runs in the background, so it logs its own failures.
#[async_trait]
pub trait FollowUp: Send {
    /// Where the turn's reply streams while it grows, when the transport can show that
    /// (docs/design.md#streaming); the outcome then says `streamed` and `finish` must not
    /// show the reply again. Default: none, the reply comes whole in the outcome.
    fn stream(&self) -> Option<Arc<dyn StreamTarget>> {
        None
    }
    /// Sends what the outcome means to the user.
    async fn finish(self: Box<Self>, result: Result<Outcome, AppError>);
}

/// A request the channel could not normalize (mapped to 400, with this text).
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    /// Malformed or not the platform's shape.
    #[error("{0}")]
    BadRequest(String),
}

/// A request that is not from the platform (mapped to 401 with no detail; the reason is
/// only logged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unauthenticated(pub &'static str);

/// A message the platform accepted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sent {
    /// Its id on the platform, when the answer named one (needed to edit it later).
    pub message_id: Option<String>,
}

/// One chat platform: how its webhook calls come in and how messages go out to it.
#[async_trait]
pub trait Channel: Send + Sync {
    /// Platform name, as in origins, targets and session keys (`telegram`).
    fn name(&self) -> &'static str;

    /// The webhook routes this channel serves (the router adds each one).
    fn routes(&self) -> Vec<Route>;

    /// Checks that the raw request comes from the platform (secret, signature, freshness).
    /// Runs before anything is parsed: a caller without the credentials learns nothing.
    fn authenticate(&self, req: &RawRequest<'_>) -> Result<(), Unauthenticated>;

    /// Recognises a platform retry from the request alone (e.g. a retry-count header) and
    /// answers it without a turn. Retries that carry the same message id need nothing here:
    /// the store deduplicates by [`Inbound::message_id`].
    fn retry(&self, _req: &RawRequest<'_>) -> Option<WebReply> {
        None
    }

    /// Normalizes an authenticated request.
    fn receive(&self, req: &RawRequest<'_>) -> Result<Received, ChannelError>;

    /// The HTTP answer after a [`Received::Turn`] was handled. An error is mapped like any
    /// use-case error.
    fn answer(&self, result: Result<Outcome, AppError>) -> Result<WebReply, AppError> {
        result.map(|_| WebReply::json(json!({"ok": true})))
    }

    /// The platform's message length limit.
    fn limit(&self) -> usize;

    /// Splits `text` into messages the platform accepts (default: at [`Channel::limit`]
    /// characters, on line boundaries).
    fn split(&self, text: &str) -> Vec<String> {
        split_message(text, self.limit())
    }

    /// Whether outbound messages can be sent at all (credentials set); checked once per
    /// delivery before anything is split.
    fn ready(&self) -> Result<(), DeliveryError> {
        Ok(())
    }

    /// Sends one message (≤ the limit), failures classified once (rate-limited with its wait,
    /// retryable, permanent).
    async fn send(&self, target: &Target, text: &str) -> Result<Sent, DeliveryError>;

    /// Whether [`Channel::edit`] works (streaming replies edit one message as the answer
    /// grows; a channel that cannot gets the whole answer in one message). Default: no.
    fn edits(&self) -> bool {
        false
    }

    /// The shortest gap between two edits of messages in `target`'s chat that the platform's
    /// rate limits allow; streaming never edits more often, whatever `edit_interval` says.
    /// Default: no floor.
    fn min_edit_gap(&self, _target: &Target) -> std::time::Duration {
        std::time::Duration::ZERO
    }

    /// Replaces the text of a sent message (streaming replies), one attempt, failures
    /// classified like [`Channel::send`]'s. Default: not supported.
    async fn edit(&self, _target: &Target, _message_id: &str, _text: &str) -> Result<(), DeliveryError> {
        Err(DeliveryError::Permanent(format!("{} messages cannot be edited yet", self.name())))
    }

    /// Downloads an inbound [`Attachment`]'s bytes, refusing more than `max_bytes` (checked
    /// against the announced size first, then while reading). Default: not supported.
    async fn fetch(&self, _attachment: &Attachment, _max_bytes: usize) -> Result<Vec<u8>, DeliveryError> {
        Err(DeliveryError::Permanent(format!("{} files cannot be fetched yet", self.name())))
    }

    /// Whether [`Channel::send_audio`] sends a voice note (Ogg/Opus) rather than a file.
    /// Default: no.
    fn voice_notes(&self) -> bool {
        false
    }

    /// Sends one audio file to `target` (a voice note or an attachment), failures classified
    /// like [`Channel::send`]'s. Default: not supported.
    async fn send_audio(&self, _target: &Target, _audio: &crate::ports::Audio) -> Result<Sent, DeliveryError> {
        Err(DeliveryError::Permanent(format!("{} cannot send audio", self.name())))
    }
}

#[cfg(test)]
mod tests;
