//! Slack's file upload (the v2 flow that replaced `files.upload`): `files.getUploadURLExternal`
//! (form-encoded `filename`, `length`) names an upload URL and a file id, the bytes are posted
//! there, and `files.completeUploadExternal` shares the file in the channel and thread
//! (docs/tools.md#vision-and-speech).

use super::api::{SlackClient, classify};
use crate::channels::Sent;
use crate::clients::{retry_after, send_failure};
use crate::ports::{Audio, DeliveryError, Target};
use reqwest::multipart::{Form, Part};
use secrecy::ExposeSecret;
use serde_json::{Value, json};

impl SlackClient {
    /// Uploads `audio` as a file into the target's channel (in its thread when it has one).
    pub async fn upload_file(&self, target: &Target, audio: &Audio) -> Result<Sent, DeliveryError> {
        let form = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("filename", &audio.name)
            .append_pair("length", &audio.bytes.len().to_string())
            .finish();
        let resp = self
            .http
            .post(format!("{}/files.getUploadURLExternal", self.base))
            .bearer_auth(self.token.expose_secret())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .map_err(send_failure)?;
        let v = read("files.getUploadURLExternal", resp).await?;
        let (Some(upload_url), Some(file_id)) = (v["upload_url"].as_str(), v["file_id"].as_str()) else {
            return Err(DeliveryError::Permanent("slack files.getUploadURLExternal: no upload_url or file_id".into()));
        };
        // The upload URL is signed: no token goes with the bytes.
        let part = Part::bytes(audio.bytes.clone())
            .file_name(audio.name.clone())
            .mime_str(&audio.mime)
            .map_err(|e| DeliveryError::Permanent(format!("slack upload: {e}")))?;
        let up = self.http.post(upload_url).multipart(Form::new().part("file", part)).send().await.map_err(send_failure)?;
        let status = up.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(match status {
                429 => DeliveryError::RateLimited(retry_after(up.headers(), 60).unwrap_or(1)),
                s if s >= 500 => DeliveryError::Retryable(format!("slack file upload HTTP {s}")),
                s => DeliveryError::Permanent(format!("slack file upload HTTP {s}")),
            });
        }
        let mut body = json!({"files": [{"id": file_id, "title": audio.name}], "channel_id": target.chat_id});
        if let Some(thread) = &target.thread_id {
            body["thread_ts"] = json!(thread);
        }
        let resp = self
            .http
            .post(format!("{}/files.completeUploadExternal", self.base))
            .bearer_auth(self.token.expose_secret())
            .json(&body)
            .send()
            .await
            .map_err(send_failure)?;
        read("files.completeUploadExternal", resp).await?;
        Ok(Sent { message_id: Some(file_id.to_string()) })
    }
}

async fn read(method: &str, resp: reqwest::Response) -> Result<Value, DeliveryError> {
    let status = resp.status().as_u16();
    let wait = retry_after(resp.headers(), 60);
    let v: Value = resp.json().await.unwrap_or(Value::Null);
    classify(method, status, wait, v)
}
