//! Discord file messages: `POST /channels/{id}/messages` as multipart, the message JSON in
//! `payload_json` and the file in `files[0]` (docs/tools.md#vision-and-speech).

use super::rest::{DiscordClient, classify};
use crate::channels::Sent;
use crate::clients::send_failure;
use crate::ports::{Audio, DeliveryError, Target};
use reqwest::multipart::{Form, Part};
use secrecy::ExposeSecret;
use serde_json::json;

impl DiscordClient {
    /// Sends `audio` as an attachment to the target's channel (its thread when it has one).
    pub async fn send_file(&self, target: &Target, audio: &Audio) -> Result<Sent, DeliveryError> {
        let channel = target.thread_id.as_deref().unwrap_or(&target.chat_id);
        let payload = json!({"attachments": [{"id": 0, "filename": audio.name}], "allowed_mentions": {"parse": []}});
        let file = Part::bytes(audio.bytes.clone())
            .file_name(audio.name.clone())
            .mime_str(&audio.mime)
            .map_err(|e| DeliveryError::Permanent(format!("discord file: {e}")))?;
        let form = Form::new().text("payload_json", payload.to_string()).part("files[0]", file);
        let resp = self
            .http
            .post(format!("{}/channels/{channel}/messages", self.base))
            .header("Authorization", format!("Bot {}", self.token.expose_secret()))
            .multipart(form)
            .send()
            .await
            .map_err(send_failure)?;
        classify(resp, "discord file", false).await
    }
}
