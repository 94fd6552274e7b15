//! Discord interaction follow-ups: `POST {api_base}/webhooks/{application_id}/{token}` with
//! the interaction token (valid 15 minutes, no bot token needed), split at 2000 characters,
//! and what the user sees for each outcome of a slash command.

use crate::app::{AppError, Outcome};
use crate::channels::discord::rest::{LIMIT, classify};
use crate::channels::{FollowUp, Sent, with_retry};
use crate::clients::send_failure;
use crate::core::queue::BusyInputMode;
use crate::core::queue::{ACK_INTERRUPT, ACK_QUEUE};
use crate::core::text::split_message;
use crate::ports::{DeliveryError, StreamTarget};
use async_trait::async_trait;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

const MODEL_APOLOGY: &str = "⚠️ Sorry, I couldn't reach the model just now. Your message is saved; please try again in a moment.";
const APOLOGY: &str = "⚠️ Sorry, something went wrong handling that. Please try again in a moment.";
const STOPPED: &str = "⏹ Stopped before answering.";

/// A client for interaction follow-ups, built once with the channel.
#[derive(Clone)]
pub struct InteractionClient {
    http: reqwest::Client,
    base: String,
    backoff: Duration,
}

impl InteractionClient {
    /// Client for `api_base` (e.g. `https://discord.com/api/v10`) over `http`.
    pub fn new(http: reqwest::Client, api_base: &str) -> Self {
        Self { http, base: api_base.trim_end_matches('/').to_string(), backoff: Duration::from_millis(500) }
    }

    /// Sends `text` as follow-ups of one interaction, split at 2000 characters on line
    /// boundaries; each chunk is retried on temporary failures and never re-sent once accepted.
    pub async fn followup(&self, application_id: &str, token: &str, text: &str) -> Result<(), DeliveryError> {
        for chunk in split_message(text, LIMIT) {
            with_retry("discord follow-up", self.backoff, || self.once(application_id, token, &chunk)).await?;
        }
        Ok(())
    }

    /// Replaces the text of follow-up `message_id` of one interaction
    /// (`PATCH /webhooks/{application_id}/{token}/messages/{message_id}`; `@original` is the
    /// deferred answer itself), one attempt. What a streamed interaction answer is edited with.
    pub async fn edit_followup(&self, application_id: &str, token: &str, message_id: &str, text: &str) -> Result<(), DeliveryError> {
        let url = format!("{}/webhooks/{application_id}/{token}/messages/{message_id}", self.base);
        let body = json!({"content": text, "allowed_mentions": {"parse": []}});
        let resp = self.http.patch(&url).json(&body).send().await.map_err(send_failure)?;
        classify(resp, "discord follow-up edit", false).await.map(|_| ())
    }

    /// Sends one follow-up (≤ 2000 characters), retried on temporary failures, and returns
    /// its message id (what a streamed answer is then edited by).
    pub async fn followup_one(&self, application_id: &str, token: &str, chunk: &str) -> Result<Option<String>, DeliveryError> {
        let sent = with_retry("discord follow-up", self.backoff, || self.once(application_id, token, chunk)).await?;
        Ok(sent.message_id)
    }

    /// One chunk. A 404 is retryable: a follow-up can race the deferred response that
    /// acknowledges the interaction, and Discord knows the webhook only after that.
    /// `wait=true` makes Discord answer with the created message (its id).
    async fn once(&self, application_id: &str, token: &str, chunk: &str) -> Result<Sent, DeliveryError> {
        let url = format!("{}/webhooks/{application_id}/{token}?wait=true", self.base);
        // No pings from echoed text: model output must not mention @everyone or roles.
        let body = json!({"content": chunk, "allowed_mentions": {"parse": []}});
        let resp = self.http.post(&url).json(&body).send().await.map_err(send_failure)?;
        classify(resp, "discord follow-up", true).await
    }
}

/// The follow-ups of one deferred slash command.
#[derive(Clone)]
pub struct Followups {
    /// The client.
    pub client: InteractionClient,
    /// The interaction's application.
    pub application_id: String,
    /// The interaction token.
    pub token: String,
    /// What a busy session does with the message (picks the acknowledgement).
    pub busy_mode: BusyInputMode,
}

/// A slash command's answer streamed into its follow-ups (docs/design.md#streaming): the
/// first follow-up is sent once enough text arrived, then edited as it grows.
#[async_trait]
impl StreamTarget for Followups {
    fn parts(&self, text: &str) -> Vec<String> {
        split_message(text, LIMIT)
    }

    async fn send_one(&self, part: &str) -> Result<Option<String>, DeliveryError> {
        self.client.followup_one(&self.application_id, &self.token, part).await
    }

    async fn edit(&self, message_id: &str, text: &str) -> Result<(), DeliveryError> {
        self.client.edit_followup(&self.application_id, &self.token, message_id, text).await
    }

    async fn send(&self, text: &str) -> Result<(), DeliveryError> {
        self.client.followup(&self.application_id, &self.token, text).await
    }
}

#[async_trait]
impl FollowUp for Followups {
    fn stream(&self) -> Option<Arc<dyn StreamTarget>> {
        Some(Arc::new(self.clone()))
    }

    async fn finish(self: Box<Self>, result: Result<Outcome, AppError>) {
        for text in followup_texts(self.busy_mode, result) {
            if let Err(e) = self.client.followup(&self.application_id, &self.token, &text).await {
                tracing::error!(error = %e, "discord follow-up failed");
                return;
            }
        }
    }
}

/// What the user sees for an outcome, one follow-up per entry: notices first, then the
/// reply. A duplicate gets nothing (the first delivery answered it).
pub fn followup_texts(busy_mode: BusyInputMode, result: Result<Outcome, AppError>) -> Vec<String> {
    let out = match result {
        Ok(out) => out,
        Err(AppError::Model(_)) => return vec![MODEL_APOLOGY.to_string()],
        Err(e) => {
            tracing::error!(error = %e, "discord interaction failed");
            return vec![APOLOGY.to_string()];
        }
    };
    if out.duplicate {
        return Vec::new();
    }
    if out.refused {
        // The refusal or the pairing code the app answered (nothing under `ignore`).
        return out.reply.into_iter().collect();
    }
    if out.busy {
        let ack = if busy_mode == BusyInputMode::Queue { ACK_QUEUE } else { ACK_INTERRUPT };
        return vec![ack.to_string()];
    }
    if out.streamed {
        // The notices and the reply went out as streamed follow-ups already.
        return out.notices;
    }
    let mut texts = out.notices;
    texts.push(out.reply.filter(|r| !r.trim().is_empty()).unwrap_or_else(|| STOPPED.to_string()));
    texts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::REFUSAL;

    #[test]
    fn a_streamed_outcome_leaves_only_the_notices_not_yet_shown() {
        let out = |streamed: bool, notices: Vec<String>| Outcome { reply: Some("answer".into()), notices, streamed, ..Outcome::default() };
        let q = BusyInputMode::Queue;
        assert!(followup_texts(q, Ok(out(true, vec![]))).is_empty(), "the reply was streamed: nothing again");
        assert_eq!(followup_texts(q, Ok(out(true, vec!["n".into()]))), vec!["n".to_string()]);
        assert_eq!(followup_texts(q, Ok(out(false, vec!["n".into()]))), vec!["n".to_string(), "answer".to_string()]);
        let refused = Outcome { refused: true, reply: Some(REFUSAL.into()), ..Outcome::default() };
        assert_eq!(followup_texts(q, Ok(refused)), vec![REFUSAL.to_string()]);
        let ignored = Outcome { refused: true, ..Outcome::default() };
        assert!(followup_texts(q, Ok(ignored)).is_empty(), "`ignore` answers nothing");
    }
}
