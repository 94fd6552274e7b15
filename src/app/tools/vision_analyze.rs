//! `vision_analyze` (Hermes' `tools/vision_tools.py`): one image — an http(s) URL fetched
//! with `web_fetch`'s address rules, a `data:` URL, or a photo the user sent in this turn
//! (`attachment:N`, fetched through the platform's channel) — goes with Hermes' prompt to the
//! vision model (`auxiliary.vision.*`, else the main model with `model.supports_vision`,
//! chosen at wiring time) and its answer comes back as `{"success": true, "analysis": …}`.
//! Not offered without a vision model. A failure (a refused address, not an image, a model
//! answering 401/429/garbage) is a tool error; the turn goes on.
//!
//! Must not know: the model's wire format, the platforms' file APIs.

use super::web_fetch::{get_vetted, parse_url};
use super::{Tool, ToolCtx, ToolError, ToolOutput, parse_args};
use crate::core::inbound::{Attachment, AttachmentKind};
use crate::core::media;
use crate::core::session::{Image, Message, Role};
use crate::ports::{ChatRequest, Fetcher, Llm, Resolve};
use async_trait::async_trait;
use base64::Engine;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// The `vision_analyze` tool.
pub struct VisionAnalyze {
    model: Option<Arc<dyn Llm>>,
    fetcher: Arc<dyn Fetcher>,
    dns: Arc<dyn Resolve>,
}

impl VisionAnalyze {
    /// A `vision_analyze` asking `model` (`None`: not offered), fetching URLs through
    /// `fetcher` after vetting them with `dns`.
    pub fn new(model: Option<Arc<dyn Llm>>, fetcher: Arc<dyn Fetcher>, dns: Arc<dyn Resolve>) -> Self {
        Self { model, fetcher, dns }
    }
}

#[derive(Debug, Deserialize)]
struct Args {
    #[serde(default)]
    image_url: String,
    #[serde(default)]
    question: String,
}

#[async_trait]
impl Tool for VisionAnalyze {
    fn name(&self) -> &str {
        "vision_analyze"
    }

    /// Reads only: looking at an image is never an effect (docs/design/jobs.md#retry).
    fn has_effect(&self, _args: &serde_json::Value) -> bool {
        false
    }

    fn toolset(&self) -> &str {
        "vision"
    }

    fn description(&self) -> &str {
        "Analyze an image with a vision model and get back a text description and an answer to your question. Accepts \
an http(s) URL, a data: URL, or a photo the user sent in this conversation turn as `attachment:1` (the first photo; \
`attachment:2` the second, …)."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "image_url": {"type": "string", "description": "Image URL (http/https), data: URL, or attachment:N for the Nth photo the user sent in this turn."},
                "question": {"type": "string", "description": "Your specific question or request about the image."}
            },
            "required": ["image_url", "question"]
        })
    }

    fn offered(&self, _ctx: &ToolCtx<'_>) -> bool {
        self.model.is_some()
    }

    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(150))
    }

    async fn call(&self, ctx: &ToolCtx<'_>, args: Value) -> Result<ToolOutput, ToolError> {
        let model = self.model.as_ref().ok_or_else(|| ToolError::Failed("No vision model is configured (auxiliary.vision.*)".into()))?;
        let a: Args = parse_args(args)?;
        let source = a.image_url.trim();
        let (bytes, said) = match source.strip_prefix("attachment") {
            Some(n) => attachment(ctx, n).await?,
            None if source.starts_with("data:") => (data_url(source)?, None),
            None if source.is_empty() => return Err(ToolError::BadArgs("vision_analyze needs an `image_url`".into())),
            None => (self.download(ctx, source).await?, None),
        };
        // JPEG, PNG, GIF and WebP are known by their first bytes; a platform's photo by its type.
        let mime = media::image_mime(&bytes, said.as_deref());
        if said.is_none() && mime == "image/jpeg" && !bytes.starts_with(&[0xff, 0xd8, 0xff]) {
            return Err(ToolError::Failed(format!("Error analyzing image: {source} is not a JPEG, PNG, GIF or WebP image")));
        }
        let prompt =
            format!("Fully describe and explain everything about this image, then answer the following question:\n\n{}", a.question);
        let mut msg = Message::text(Role::User, prompt, ctx.now());
        msg.images.push(Image { mime, base64: base64::engine::general_purpose::STANDARD.encode(&bytes) });
        let req = ChatRequest { messages: vec![msg], tools: Vec::new(), model: None, route: None };
        let resp = model.complete(&req).await.map_err(|e| ToolError::Failed(format!("Error analyzing image: {e}")))?;
        if resp.content.trim().is_empty() {
            return Err(ToolError::Failed("Error analyzing image: the vision model returned no text".into()));
        }
        Ok(ToolOutput::Json(json!({"success": true, "analysis": resp.content})))
    }
}

impl VisionAnalyze {
    /// The image at an http(s) URL, vetted hop by hop, at most [`media::IMAGE_MAX`] bytes.
    async fn download(&self, ctx: &ToolCtx<'_>, text: &str) -> Result<Vec<u8>, ToolError> {
        let url = parse_url(text)?;
        let (url, mut resp) = get_vetted(ctx, self.fetcher.as_ref(), self.dns.as_ref(), url).await?;
        if !(200..300).contains(&resp.status) {
            return Err(ToolError::Failed(format!("Error analyzing image: HTTP {} fetching {url}", resp.status_text)));
        }
        let max = usize::try_from(media::IMAGE_MAX).unwrap_or(usize::MAX);
        let (bytes, cut) = resp
            .body
            .read_capped(max)
            .await
            .map_err(|e| ToolError::Failed(format!("Error analyzing image: could not fetch {url}: {e}")))?;
        if cut {
            return Err(ToolError::Failed(format!("Error analyzing image: {url} is larger than {}", media::human_size(media::IMAGE_MAX))));
        }
        Ok(bytes)
    }
}

/// The bytes of a `data:<mime>;base64,…` URL.
fn data_url(text: &str) -> Result<Vec<u8>, ToolError> {
    let b64 = text.split_once(";base64,").map(|(_, b)| b).ok_or_else(|| ToolError::BadArgs("only base64 data: URLs are read".into()))?;
    base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .map_err(|e| ToolError::BadArgs(format!("invalid base64 in the data: URL: {e}")))
}

/// The photo `:N` (1-based; bare `attachment` is the first) of the user messages this turn
/// answers, fetched through the chat's platform.
async fn attachment(ctx: &ToolCtx<'_>, n: &str) -> Result<(Vec<u8>, Option<String>), ToolError> {
    let index = match n.trim_start_matches(':').trim() {
        "" => 1,
        k => {
            k.parse::<usize>().ok().filter(|i| *i > 0).ok_or_else(|| ToolError::BadArgs(format!("`attachment{n}` is not attachment:N")))?
        }
    };
    let origin = ctx.origin.ok_or_else(|| ToolError::Failed("there is no chat, so no attachment, in a job run".into()))?;
    let recent = ctx.app.inner.store.recent_messages(ctx.session_id, 20).await.map_err(|e| ToolError::Failed(e.to_string()))?;
    let start = recent.iter().rposition(|m| m.role == Role::Assistant && m.tool_calls.is_empty()).map_or(0, |i| i + 1);
    let photos: Vec<&Attachment> = recent[start..]
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| &m.attachments)
        .filter(|a| a.kind == AttachmentKind::Image)
        .collect();
    let a = photos.get(index - 1).ok_or_else(|| {
        ToolError::Failed(format!("attachment:{index} does not exist: the user sent {} photo(s) in this turn", photos.len()))
    })?;
    let max = usize::try_from(media::IMAGE_MAX).unwrap_or(usize::MAX);
    let bytes = ctx
        .app
        .inner
        .delivery
        .fetch(&origin.platform, a, max)
        .await
        .map_err(|e| ToolError::Failed(format!("Error analyzing image: {e}")))?;
    Ok((bytes, Some(a.mime.clone().unwrap_or_else(|| "image/jpeg".into()))))
}
