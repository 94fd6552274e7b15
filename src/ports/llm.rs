//! The model port: one chat-completions call, its request and answer, and its classified
//! failures. Adapters live in `clients/llm/`.

use crate::core::session::{Message, ToolCall};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// A tool the model may call.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: serde_json::Value,
}

/// One model request.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// The prompt: system first, then the transcript.
    pub messages: Vec<Message>,
    /// Tools offered (shared: built once per tool, cloned per call by reference count).
    pub tools: Vec<std::sync::Arc<ToolSpec>>,
    /// Model override (a job's `model`, a session's `/model`).
    pub model: Option<String>,
    /// A job's own provider and base URL (`None`: the configured model and its fallbacks).
    pub route: Option<ModelRoute>,
}

/// A job's own model endpoint (Hermes' per-job `provider` / `base_url`): the adapter resolves
/// it as `model.*` is (the provider's default URL and key variables), the job's `model`
/// naming the model id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ModelRoute {
    /// Hermes' provider name (`None`: the configured provider).
    pub provider: Option<String>,
    /// Base URL override.
    pub base_url: Option<String>,
}

/// One model answer.
#[derive(Debug, Clone, Default)]
pub struct ChatResponse {
    /// Text (may be empty when calling tools).
    pub content: String,
    /// Tool calls requested.
    pub tool_calls: Vec<ToolCall>,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's prompt cache (part of `input_tokens`).
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's prompt cache (part of `input_tokens`).
    pub cache_creation_tokens: u64,
    /// Why the model stopped (`end_turn`, `tool_use`, `stop`, `max_tokens`, …; may be empty).
    pub stop_reason: String,
    /// The model id that answered (`offline` for the built-in reply).
    pub model: String,
}

/// Model failures, classified once.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// Timed out or could not connect (after retries).
    #[error("model unreachable: {0}")]
    Unreachable(String),
    /// 429 after retries.
    #[error("model rate-limited")]
    RateLimited,
    /// 401/403.
    #[error("model rejected the API key (HTTP {0})")]
    Unauthorized(u16),
    /// Other non-success status.
    #[error("model returned HTTP {status}: {detail}")]
    Status {
        /// HTTP status.
        status: u16,
        /// Short upstream detail (never a secret).
        detail: String,
    },
    /// The body was not a chat completion.
    #[error("model answer not understood: {0}")]
    BadResponse(String),
    /// A job's own model (`provider` / `base_url`) cannot be used.
    #[error("the job's model: {0}")]
    Route(String),
}

/// A chat-completions model.
#[async_trait]
pub trait Llm: Send + Sync {
    /// `offline`, `openai`, `anthropic`, `fallback`, …
    fn name(&self) -> &'static str;

    /// One completion.
    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError>;

    /// One completion asked for as a stream (`stream: true`): `on_text` sees each text delta
    /// as it arrives and the whole answer (text, tool calls, usage) is returned as by
    /// [`Llm::complete`]. Retries and fallbacks happen only before the first delta was handed
    /// over, so no text is ever shown twice (docs/design.md#streaming). Default: `complete`,
    /// then its text as one delta.
    async fn complete_streamed(&self, req: &ChatRequest, on_text: &mut TextSink<'_>) -> Result<ChatResponse, LlmError> {
        let r = self.complete(req).await?;
        if !r.content.is_empty() {
            on_text(&r.content);
        }
        Ok(r)
    }
}

/// Where a streamed completion hands its text deltas, in order.
pub type TextSink<'a> = dyn FnMut(&str) + Send + 'a;
