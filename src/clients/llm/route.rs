//! Per-request model routes (docs/jobs.md#per-job-model): a request carrying a job's own
//! `provider` / `base_url` ([`ModelRoute`]) is answered by that endpoint (resolved by
//! `config::models::resolve_route`, built once and kept), followed by the configured
//! fallbacks; every other request goes to the configured model as before.

use super::{endpoint_llm, fallback::FallbackLlm};
use crate::config::Loaded;
use crate::ports::{ChatRequest, ChatResponse, Llm, LlmError, ModelRoute, TextSink};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// The endpoints built so far, by route and model.
type Built = HashMap<(ModelRoute, Option<String>), Arc<dyn Llm>>;

/// The configured model, plus the endpoints jobs name, built on first use.
pub struct RoutingLlm {
    default: Arc<dyn Llm>,
    cfg: Arc<Loaded>,
    built: Mutex<Built>,
}

impl RoutingLlm {
    /// Routes over `default` (the configured model and its fallback chain) with `cfg`'s
    /// provider table, environment and fallbacks.
    pub fn new(default: Arc<dyn Llm>, cfg: Arc<Loaded>) -> Self {
        Self { default, cfg, built: Mutex::new(HashMap::new()) }
    }

    /// The model answering `req`: its route's endpoint (then the configured fallbacks), or
    /// the configured model.
    fn pick(&self, req: &ChatRequest) -> Result<Arc<dyn Llm>, LlmError> {
        let Some(route) = &req.route else { return Ok(self.default.clone()) };
        let key = (route.clone(), req.model.clone());
        if let Some(l) = self.built.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
            return Ok(l.clone());
        }
        let cfg = &self.cfg;
        let ep = crate::config::models::resolve_route(
            &cfg.model,
            &cfg.env,
            route.provider.as_deref(),
            route.base_url.as_deref(),
            req.model.as_deref(),
        )
        .map_err(LlmError::Route)?;
        tracing::info!(provider = ep.provider, model = %ep.model, key = %ep.key_hint, "a job's own model endpoint");
        let primary = endpoint_llm(&ep, cfg);
        let llm: Arc<dyn Llm> = if cfg.model.fallbacks.is_empty() {
            primary
        } else {
            let chain = std::iter::once(primary).chain(cfg.model.fallbacks.iter().map(|e| endpoint_llm(e, cfg))).collect();
            Arc::new(FallbackLlm::new(chain))
        };
        self.built.lock().unwrap_or_else(PoisonError::into_inner).insert(key, llm.clone());
        Ok(llm)
    }
}

#[async_trait]
impl Llm for RoutingLlm {
    fn name(&self) -> &'static str {
        self.default.name()
    }

    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.pick(req)?.complete(req).await
    }

    async fn complete_streamed(&self, req: &ChatRequest, on_text: &mut TextSink<'_>) -> Result<ChatResponse, LlmError> {
        self.pick(req)?.complete_streamed(req, on_text).await
    }
}
