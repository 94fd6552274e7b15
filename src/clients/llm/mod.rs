//! Model adapters: `openai` (any OpenAI-compatible chat-completions endpoint) and `offline`.

pub mod offline;
pub mod openai;

use crate::config::{Loaded, ModelProvider};
use crate::ports::Llm;
use std::sync::Arc;

/// Builds the configured model adapter.
pub fn from_config(cfg: &Loaded) -> Arc<dyn Llm> {
    match cfg.settings.model.provider {
        ModelProvider::Offline => Arc::new(offline::OfflineLlm),
        ModelProvider::Openai => Arc::new(openai::OpenAiLlm::new(&cfg.settings.model, cfg.secrets.model_api_key.clone())),
    }
}
