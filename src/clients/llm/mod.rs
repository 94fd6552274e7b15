//! Model adapters: `openai` (any OpenAI-compatible chat-completions endpoint), `anthropic`
//! (native Messages API), `offline`, the one-line answer of OAuth-only providers, and the
//! fallback chain over them, and the per-job routes (`route`). Which adapter serves which provider name is
//! `config::models::PROVIDERS`.

pub mod anthropic;
pub mod anthropic_stream;
pub mod fallback;
pub mod offline;
pub mod openai;
pub mod openai_stream;
pub mod retry;
pub mod route;
pub mod sse;

use crate::config::Loaded;
use crate::config::models::{Endpoint, Wire};
use crate::ports::{ChatRequest, ChatResponse, Llm, LlmError};
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;

/// Builds the configured model: the primary endpoint, wrapped in the fallback chain when
/// `fallback_providers` / `fallback_model` name more, behind the router that serves a
/// request naming another endpoint — a job's own `provider` / `base_url`, or a session's
/// `/model provider:model` ([`route::RoutingLlm`]).
pub fn routed(cfg: &Arc<Loaded>) -> Arc<dyn Llm> {
    Arc::new(route::RoutingLlm::new(configured(cfg), cfg.clone()))
}

/// The configured chain alone.
fn configured(cfg: &Loaded) -> Arc<dyn Llm> {
    let primary = endpoint_llm(&cfg.model.primary, cfg);
    if cfg.model.fallbacks.is_empty() {
        return primary;
    }
    let chain = std::iter::once(primary).chain(cfg.model.fallbacks.iter().map(|e| endpoint_llm(e, cfg))).collect();
    Arc::new(fallback::FallbackLlm::new(chain))
}

/// The adapter for one endpoint.
pub fn endpoint_llm(ep: &Endpoint, cfg: &Loaded) -> Arc<dyn Llm> {
    let s = &cfg.settings;
    let timeout = Duration::from_secs(s.model.timeout_seconds);
    let attempts = s.agent.api_max_retries;
    match ep.wire {
        Wire::Offline => Arc::new(offline::OfflineLlm),
        Wire::OauthOnly => Arc::new(OauthOnly { line: ep.oauth_line.clone().unwrap_or_default(), provider: ep.provider }),
        Wire::OpenaiChat => Arc::new(openai::OpenAiLlm::new(ep, timeout, attempts)),
        Wire::AnthropicMessages => Arc::new(anthropic::AnthropicLlm::new(ep, timeout, attempts, &s.prompt_caching.cache_ttl)),
    }
}

/// An OAuth-only provider: every turn answers with the line naming the key-based alternative.
struct OauthOnly {
    line: String,
    provider: &'static str,
}

#[async_trait]
impl Llm for OauthOnly {
    fn name(&self) -> &'static str {
        "oauth-only"
    }

    async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
        Ok(ChatResponse { content: self.line.clone(), model: self.provider.to_string(), ..ChatResponse::default() })
    }
}
