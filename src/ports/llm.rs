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
    /// Tools offered.
    pub tools: Vec<ToolSpec>,
    /// Per-job model override.
    pub model: Option<String>,
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
}

/// A chat-completions model.
#[async_trait]
pub trait Llm: Send + Sync {
    /// `offline`, `openai`, `anthropic`, `fallback`, …
    fn name(&self) -> &'static str;

    /// One completion.
    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError>;
}
