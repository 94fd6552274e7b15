//! Telegram's `sendVoice`: one Ogg/Opus file uploaded as multipart (`chat_id`, `voice`, the
//! topic's `message_thread_id`), shown as a voice note (docs/tools.md#vision-and-speech).

use super::api::{TelegramClient, classify};
use crate::channels::Sent;
use crate::clients::send_failure;
use crate::ports::{Audio, DeliveryError, Target};
use reqwest::multipart::{Form, Part};
use secrecy::ExposeSecret;

impl TelegramClient {
    /// Sends `audio` as a voice note.
    pub async fn send_voice(&self, target: &Target, audio: &Audio) -> Result<Sent, DeliveryError> {
        let url = format!("{}/bot{}/sendVoice", self.base, self.token.expose_secret());
        let file = Part::bytes(audio.bytes.clone())
            .file_name(audio.name.clone())
            .mime_str(&audio.mime)
            .map_err(|e| DeliveryError::Permanent(format!("telegram voice: {e}")))?;
        let mut form = Form::new().text("chat_id", target.chat_id.clone()).part("voice", file);
        if let Some(t) = target.thread_id.as_deref().filter(|t| t.parse::<i64>().is_ok()) {
            form = form.text("message_thread_id", t.to_string());
        }
        let resp = self.http.post(url).multipart(form).send().await.map_err(send_failure)?;
        let v = classify(resp).await?;
        Ok(Sent { message_id: v["result"]["message_id"].as_i64().map(|id| id.to_string()) })
    }
}
