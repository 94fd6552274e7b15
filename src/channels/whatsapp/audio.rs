//! WhatsApp audio messages through the Cloud API: the file is uploaded first
//! (`POST /{phone-number-id}/media`, multipart `messaging_product`, `type`, `file`), then sent
//! by its media id (`POST /{phone-number-id}/messages` with `type: audio`). An Ogg/Opus file
//! plays as a voice note (docs/tools.md#vision-and-speech).

use super::api::{GraphClient, answer};
use crate::channels::Sent;
use crate::clients::send_failure;
use crate::ports::{Audio, DeliveryError};
use reqwest::multipart::{Form, Part};
use secrecy::ExposeSecret;
use serde_json::json;

impl GraphClient {
    /// Uploads `audio` and sends it to the WhatsApp id `to`.
    pub async fn send_audio(&self, to: &str, audio: &Audio) -> Result<Sent, DeliveryError> {
        let token = self.token.expose_secret();
        let file = Part::bytes(audio.bytes.clone())
            .file_name(audio.name.clone())
            .mime_str(&audio.mime)
            .map_err(|e| DeliveryError::Permanent(format!("whatsapp audio: {e}")))?;
        let form = Form::new().text("messaging_product", "whatsapp").text("type", audio.mime.clone()).part("file", file);
        let url = format!("{}/{}/media", self.base, self.phone_number_id);
        let up = answer(self.http.post(url).bearer_auth(token).multipart(form).send().await.map_err(send_failure)?).await?;
        let Some(id) = up["id"].as_str() else { return Err(DeliveryError::Permanent("the media upload answer has no id".into())) };
        let body = json!({"messaging_product": "whatsapp", "recipient_type": "individual", "to": to, "type": "audio", "audio": {"id": id}});
        let url = format!("{}/{}/messages", self.base, self.phone_number_id);
        let v = answer(self.http.post(url).bearer_auth(token).json(&body).send().await.map_err(send_failure)?).await?;
        Ok(Sent { message_id: v["messages"][0]["id"].as_str().map(str::to_string) })
    }
}
