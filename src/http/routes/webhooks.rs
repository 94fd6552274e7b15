//! The platform webhooks, generated from the channel registry: one route per
//! [`Route`](crate::channels::Route) a channel names, all served by one handler —
//! authenticate the raw request, recognise a retry, normalize, then answer now, after the
//! turn, or at once with the turn in the background.

use crate::channels::{Channel, Channels, RawRequest, Received, ReplyBody, WebReply};
use crate::http::HttpState;
use crate::http::error::ApiError;
use crate::http::extract::RawBody;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, on};
use std::sync::Arc;

impl IntoResponse for WebReply {
    fn into_response(self) -> Response {
        match self.body {
            ReplyBody::Json(v) => (self.status, axum::Json(v)).into_response(),
            ReplyBody::Text(t) => (self.status, t).into_response(),
        }
    }
}

/// The webhook routes of every registered channel.
pub fn routes(channels: &Channels) -> Router<Arc<HttpState>> {
    let mut router = Router::new();
    for channel in channels.iter() {
        for route in channel.routes() {
            let Ok(filter) = MethodFilter::try_from(route.method.clone()) else {
                tracing::error!(channel = channel.name(), method = %route.method, path = route.path, "unroutable webhook method; skipped");
                continue;
            };
            let channel = channel.clone();
            let handler = move |State(s): State<Arc<HttpState>>, method: Method, uri: Uri, headers: HeaderMap, RawBody(body)| {
                let channel = channel.clone();
                async move { webhook(&s, channel, &method, &uri, &headers, &body).await }
            };
            router = router.route(route.path, on(filter, handler));
        }
    }
    router
}

/// One webhook call for `channel`.
async fn webhook(
    s: &HttpState,
    channel: Arc<dyn Channel>,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    let req = RawRequest { method, headers, query: uri.query(), body, now: s.app.now() };
    // Authenticate before looking at the body: a caller without the credentials learns nothing.
    if let Err(why) = channel.authenticate(&req) {
        tracing::debug!(channel = channel.name(), reason = why.0, "webhook call refused");
        return Err(ApiError::unauthorized());
    }
    if let Some(answer) = channel.retry(&req) {
        return Ok(answer.into_response());
    }
    match channel.receive(&req)? {
        Received::Answer(answer) => Ok(answer.into_response()),
        Received::Turn(msg) => Ok(channel.answer(s.app.sessions().handle_inbound(msg).await)?.into_response()),
        Received::Deferred { msg, ack, then } => {
            let (sessions, name) = (s.app.sessions(), channel.name());
            // Counted until the follow-up is done: the Lambda settle phase waits for it.
            let running = s.channels.deferred_guard();
            let sink = then.as_ref().and_then(|t| t.stream());
            tokio::spawn(async move {
                let result = sessions.handle_inbound_streaming(msg, sink).await;
                match (then, result) {
                    (Some(then), result) => then.finish(result).await,
                    (None, Err(e)) => tracing::error!(channel = name, error = %e, "deferred webhook message failed"),
                    (None, Ok(_)) => {}
                }
                drop(running);
            });
            Ok(ack.into_response())
        }
        Received::DeferredMany { msgs, ack } => {
            let sessions = s.app.sessions();
            // Counted until the whole batch is handled: the Lambda settle phase waits for it.
            let running = s.channels.deferred_guard();
            tokio::spawn(async move {
                for msg in msgs {
                    // Each message's failure is its own: the next one still runs.
                    if let Err(e) = sessions.handle_inbound(msg).await {
                        tracing::warn!(error = %e, "a batched webhook message failed");
                    }
                }
                drop(running);
            });
            Ok(ack.into_response())
        }
    }
}
