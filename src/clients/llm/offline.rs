//! The `offline` model: a deterministic answer that says how to configure a real model, so
//! the service runs end to end with no network and no key.

use crate::core::session::Role;
use crate::ports::{ChatRequest, ChatResponse, Llm, LlmError};
use async_trait::async_trait;

/// The offline adapter.
#[derive(Debug, Default)]
pub struct OfflineLlm;

#[async_trait]
impl Llm for OfflineLlm {
    fn name(&self) -> &'static str {
        "offline"
    }

    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let last = req.messages.iter().rev().find(|m| m.role == Role::User).map_or("", |m| m.content.as_str());
        let quoted: String = last.chars().take(200).collect();
        Ok(ChatResponse {
            content: format!(
                "[offline] I received: \"{quoted}\". No model is configured, so this is an automatic reply. \
To use a real model, set model.provider (openrouter, anthropic, openai, custom, …) and model.default in \
$HERMES_HOME/config.yaml and put the provider's API key in its variable (e.g. OPENROUTER_API_KEY or ANTHROPIC_API_KEY)."
            ),
            model: "offline".into(),
            ..ChatResponse::default()
        })
    }
}
