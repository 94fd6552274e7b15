//! The model a request names: the configured chain, or — for a session that picked another
//! provider with `/model provider:model` — that provider's adapter, resolved by
//! `config::models::resolve_choice` from the environment snapshot the first time it is
//! asked for, and kept for the life of the process.

use super::endpoint_llm;
use crate::config::Loaded;
use crate::ports::{ChatRequest, ChatResponse, Llm, LlmError, TextSink};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Routes requests with a provider override to that provider's adapter.
pub struct Routed {
    configured: Arc<dyn Llm>,
    cfg: Loaded,
    others: Mutex<HashMap<&'static str, Arc<dyn Llm>>>,
}

impl Routed {
    /// The router over `configured` (the configured chain).
    pub fn new(configured: Arc<dyn Llm>, cfg: Loaded) -> Self {
        Self { configured, cfg, others: Mutex::default() }
    }

    /// The adapter serving `req`.
    fn pick(&self, req: &ChatRequest) -> Result<Arc<dyn Llm>, LlmError> {
        let Some(name) = req.provider.as_deref() else { return Ok(self.configured.clone()) };
        let model = req.model.as_deref().unwrap_or_default();
        let ep = crate::config::models::resolve_choice(&self.cfg.model, &self.cfg.env, Some(name), model)
            .map_err(|e| LlmError::Unreachable(format!("/model provider: {e}")))?;
        if ep.provider == self.cfg.model.primary.provider {
            return Ok(self.configured.clone());
        }
        let mut others = self.others.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(others.entry(ep.provider).or_insert_with(|| endpoint_llm(&ep, &self.cfg)).clone())
    }
}

#[async_trait]
impl Llm for Routed {
    fn name(&self) -> &'static str {
        self.configured.name()
    }

    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.pick(req)?.complete(req).await
    }

    async fn complete_streamed(&self, req: &ChatRequest, on_text: &mut TextSink<'_>) -> Result<ChatResponse, LlmError> {
        self.pick(req)?.complete_streamed(req, on_text).await
    }
}
