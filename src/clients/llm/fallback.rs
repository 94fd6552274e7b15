//! The fallback chain (Hermes' `fallback_providers` / `fallback_model`): an [`Llm`] that asks
//! each model in order and moves on when one stays rate-limited, failing (5xx) or unreachable
//! after its own retries. Any other failure (bad key, bad request) is the answer: a second
//! model would not fix it.

use crate::ports::{ChatRequest, ChatResponse, Llm, LlmError, TextSink};
use async_trait::async_trait;
use std::sync::Arc;

/// Models tried in order.
pub struct FallbackLlm {
    chain: Vec<Arc<dyn Llm>>,
}

impl FallbackLlm {
    /// A chain: the primary first, then the fallbacks.
    pub fn new(chain: Vec<Arc<dyn Llm>>) -> Self {
        Self { chain }
    }
}

/// Whether the next model in the chain should answer after `e`.
pub fn falls_through(e: &LlmError) -> bool {
    match e {
        LlmError::RateLimited | LlmError::Unreachable(_) => true,
        LlmError::Status { status, .. } => *status >= 500,
        LlmError::Unauthorized(_) | LlmError::BadResponse(_) | LlmError::Route(_) => false,
    }
}

#[async_trait]
impl Llm for FallbackLlm {
    fn name(&self) -> &'static str {
        "fallback"
    }

    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut last = LlmError::Unreachable("no model configured".into());
        for (i, llm) in self.chain.iter().enumerate() {
            // A job's own model override names the primary's model; fallbacks keep theirs.
            let owned;
            let req = if i == 0 || req.model.is_none() {
                req
            } else {
                owned = ChatRequest { model: None, ..req.clone() };
                &owned
            };
            match llm.complete(req).await {
                Ok(r) => {
                    if i > 0 {
                        tracing::warn!(model = %r.model, position = i, "primary model failed; a fallback answered");
                    }
                    return Ok(r);
                }
                Err(e) if falls_through(&e) && i + 1 < self.chain.len() => {
                    tracing::warn!(error = %e, adapter = llm.name(), "model failed; trying the next in the fallback chain");
                    last = e;
                }
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    /// Like [`FallbackLlm::complete`], but the next model answers only while no text of the
    /// failed one was handed over: after the first delta a failure is the answer, so the
    /// platform never shows two models' text (docs/design.md#streaming).
    async fn complete_streamed(&self, req: &ChatRequest, on_text: &mut TextSink<'_>) -> Result<ChatResponse, LlmError> {
        let mut last = LlmError::Unreachable("no model configured".into());
        for (i, llm) in self.chain.iter().enumerate() {
            let owned;
            let req = if i == 0 || req.model.is_none() {
                req
            } else {
                owned = ChatRequest { model: None, ..req.clone() };
                &owned
            };
            let mut shown = false;
            let mut sink = |t: &str| {
                shown = true;
                on_text(t);
            };
            match llm.complete_streamed(req, &mut sink).await {
                Ok(r) => return Ok(r),
                Err(e) if !shown && falls_through(&e) && i + 1 < self.chain.len() => {
                    tracing::warn!(error = %e, adapter = llm.name(), "model failed before streaming; trying the next in the fallback chain");
                    last = e;
                }
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    struct Scripted(Mutex<Vec<Result<&'static str, LlmError>>>);

    #[async_trait]
    impl Llm for Scripted {
        fn name(&self) -> &'static str {
            "scripted"
        }
        async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
            let next = self.0.lock().map_err(|_| LlmError::BadResponse("poisoned".into()))?.remove(0);
            next.map(|m| ChatResponse { content: "ok".into(), model: m.into(), ..ChatResponse::default() })
        }
    }

    fn chain(parts: Vec<Vec<Result<&'static str, LlmError>>>) -> FallbackLlm {
        FallbackLlm::new(parts.into_iter().map(|p| Arc::new(Scripted(Mutex::new(p))) as Arc<dyn Llm>).collect())
    }

    fn req() -> ChatRequest {
        ChatRequest { messages: vec![], tools: vec![], model: None, route: None }
    }

    #[tokio::test]
    async fn next_model_answers_on_429_5xx_and_timeouts_only() {
        let c = chain(vec![
            vec![Err(LlmError::RateLimited)],
            vec![Err(LlmError::Status { status: 503, detail: String::new() })],
            vec![Ok("third")],
        ]);
        assert_eq!(c.complete(&req()).await.unwrap().model, "third");
        let c = chain(vec![vec![Err(LlmError::Unreachable("timed out".into()))], vec![Ok("second")]]);
        assert_eq!(c.complete(&req()).await.unwrap().model, "second");
        let c = chain(vec![vec![Err(LlmError::Unauthorized(401))], vec![Ok("second")]]);
        assert!(matches!(c.complete(&req()).await, Err(LlmError::Unauthorized(401))));
        let c = chain(vec![vec![Err(LlmError::Status { status: 400, detail: String::new() })], vec![Ok("second")]]);
        assert!(matches!(c.complete(&req()).await, Err(LlmError::Status { status: 400, .. })));
        let c = chain(vec![vec![Err(LlmError::RateLimited)], vec![Err(LlmError::Status { status: 500, detail: String::new() })]]);
        assert!(matches!(c.complete(&req()).await, Err(LlmError::Status { status: 500, .. })), "the last failure is reported");
    }

    /// Shows some text, then fails as a retryable upstream would.
    struct HalfStream;

    #[async_trait]
    impl Llm for HalfStream {
        fn name(&self) -> &'static str {
            "half"
        }
        async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
            Err(LlmError::RateLimited)
        }
        async fn complete_streamed(&self, _: &ChatRequest, on_text: &mut TextSink<'_>) -> Result<ChatResponse, LlmError> {
            on_text("partial ");
            Err(LlmError::Unreachable("cut".into()))
        }
    }

    #[tokio::test]
    async fn a_streamed_fallback_happens_only_before_the_first_delta() {
        let mut seen = Vec::new();
        let c = chain(vec![vec![Err(LlmError::RateLimited)], vec![Ok("second")]]);
        let r = c.complete_streamed(&req(), &mut |t: &str| seen.push(t.to_string())).await.unwrap();
        assert_eq!((r.model.as_str(), seen.clone()), ("second", vec!["ok".to_string()]));
        seen.clear();
        let c = FallbackLlm::new(vec![Arc::new(HalfStream), Arc::new(Scripted(Mutex::new(vec![Ok("second")])))]);
        let r = c.complete_streamed(&req(), &mut |t: &str| seen.push(t.to_string())).await;
        assert!(matches!(r, Err(LlmError::Unreachable(_))), "text was shown: the failure is the answer");
        assert_eq!(seen, vec!["partial "]);
    }
}
