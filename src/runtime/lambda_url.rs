//! HTTP events of the Lambda entry (feature `aws`), served by the same router as `serve`.
//!
//! - A **Function URL** event (payload 2.0 whose `requestContext.domainName` is
//!   `<url-id>.lambda-url.<region>.on.aws`) is answered with Lambda *response streaming*: the
//!   runtime posts `…/invocation/{id}/response` with `Lambda-Runtime-Function-Response-Mode:
//!   streaming`, chunked, as `application/vnd.awslambda.http-integration-response`: a JSON
//!   prelude `{"statusCode","headers","cookies"}`, eight NUL bytes, then the body bytes as
//!   the router produces them. An SSE answer (`/v1/chat/completions` with `stream: true`)
//!   thus reaches the caller delta by delta, and every other answer is simply one or a few
//!   chunks. The URL must be deployed with
//!   `InvokeMode: RESPONSE_STREAM` (infra/aws/template.yaml); a `BUFFERED` URL does not read
//!   the prelude.
//! - **API Gateway** (REST v1, HTTP API v2) and **ALB** events, which cannot stream to their
//!   caller, are answered buffered in the shape of their origin through `lambda_http`.
//!
//! The settle phase (`lambda.rs`) still runs after the whole answer was posted: the Runtime
//! API acknowledges a streamed response once its last chunk arrived.

use axum::Router;
use axum::body::BodyDataStream;
use axum::http::header::SET_COOKIE;
use lambda_http::RequestExt;
use lambda_http::request::LambdaRequest;
use lambda_runtime::tower::ServiceExt;
use lambda_runtime::{Context, Error, FunctionResponse, LambdaEvent, MetadataPrelude, StreamResponse, service_fn};
use serde_json::Value;
use std::convert::Infallible;

/// What the handler answers: buffered JSON (fire, tick and non-streaming HTTP events) or a
/// streamed HTTP answer (Function URL events).
pub(super) type Answer = FunctionResponse<Value, BodyDataStream>;

/// The host suffix of a Function URL (`<url-id>.lambda-url.<region>.on.aws`).
const URL_HOST_PART: &str = ".lambda-url.";

/// Serves one HTTP event with `router`; `stage` is an API Gateway stage to strip from the path.
pub(super) async fn serve(router: Router, request: LambdaRequest, stage: Option<String>, context: Context) -> Result<Answer, Error> {
    if is_function_url(&request) {
        let req = lambda_http::Request::from(request).with_lambda_context(context);
        let response = router.oneshot(strip_stage(req, stage.as_deref())).await.unwrap_or_else(|e: Infallible| match e {});
        return Ok(FunctionResponse::StreamingResponse(streamed(response)));
    }
    let inner = service_fn(move |req: lambda_http::Request| {
        let router = router.clone();
        let req = strip_stage(req, stage.as_deref());
        async move { router.oneshot(req).await }
    });
    let adapter: lambda_http::Adapter<'static, _, _> = lambda_http::Adapter::from(inner);
    let response = adapter.oneshot(LambdaEvent::new(request, context)).await.unwrap_or_else(|e: Infallible| match e {});
    Ok(FunctionResponse::BufferedResponse(serde_json::to_value(response)?))
}

/// Whether the event came through a Function URL (the only HTTP origin that streams).
fn is_function_url(request: &LambdaRequest) -> bool {
    match request {
        LambdaRequest::ApiGatewayV2(ev) => ev.request_context.domain_name.as_deref().is_some_and(|d| d.contains(URL_HOST_PART)),
        _ => false,
    }
}

/// The router's answer as a streamed response: status, headers and `Set-Cookie` values in
/// the prelude, the body as it is produced.
fn streamed(response: axum::response::Response) -> StreamResponse<BodyDataStream> {
    let (parts, body) = response.into_parts();
    let mut headers = parts.headers;
    let cookies = headers.get_all(SET_COOKIE).iter().map(|c| String::from_utf8_lossy(c.as_bytes()).into_owned()).collect();
    headers.remove(SET_COOKIE);
    StreamResponse { metadata_prelude: MetadataPrelude { status_code: parts.status, headers, cookies }, stream: body.into_data_stream() }
}

/// Removes the API Gateway stage prefix (`/prod/healthz` → `/healthz`): the router serves
/// from the root whatever the stage is called.
fn strip_stage(req: lambda_http::Request, stage: Option<&str>) -> lambda_http::Request {
    let Some(stage) = stage else { return req };
    let (mut parts, body) = req.into_parts();
    let path = parts.uri.path();
    let prefix = format!("/{stage}");
    let rest = match path.strip_prefix(&prefix) {
        Some("") => "/",
        Some(r) if r.starts_with('/') => r,
        _ => return lambda_http::Request::from_parts(parts, body),
    };
    let pq = match parts.uri.query() {
        Some(q) => format!("{rest}?{q}"),
        None => rest.to_string(),
    };
    let mut uri = parts.uri.clone().into_parts();
    if let Ok(p) = pq.parse() {
        uri.path_and_query = Some(p);
        if let Ok(u) = axum::http::Uri::from_parts(uri) {
            parts.uri = u;
        }
    }
    lambda_http::Request::from_parts(parts, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;
    use futures_util::StreamExt;
    use serde_json::json;

    fn req(uri: &str) -> lambda_http::Request {
        let mut r = lambda_http::Request::new(lambda_http::Body::Empty);
        *r.uri_mut() = uri.parse().unwrap();
        r
    }

    #[test]
    fn stage_prefix_is_removed() {
        assert_eq!(strip_stage(req("/prod/healthz?x=1"), Some("prod")).uri().path_and_query().map(|p| p.as_str()), Some("/healthz?x=1"));
        assert_eq!(strip_stage(req("/prod"), Some("prod")).uri().path(), "/");
        assert_eq!(strip_stage(req("/production/x"), Some("prod")).uri().path(), "/production/x");
        assert_eq!(strip_stage(req("/healthz"), None).uri().path(), "/healthz");
    }

    /// A payload-2.0 event on `domain`.
    fn v2(domain: &str) -> LambdaRequest {
        serde_json::from_value(json!({
            "version": "2.0", "routeKey": "$default", "rawPath": "/healthz", "rawQueryString": "", "headers": {},
            "requestContext": {"accountId": "1", "apiId": "a", "domainName": domain, "domainPrefix": "a", "stage": "$default",
                "http": {"method": "GET", "path": "/healthz", "protocol": "HTTP/1.1", "sourceIp": "203.0.113.7", "userAgent": "t"},
                "requestId": "r", "routeKey": "$default", "time": "01/Dec/2026:08:00:00 +0000", "timeEpoch": 0},
            "isBase64Encoded": false
        }))
        .unwrap()
    }

    #[test]
    fn only_a_function_url_event_streams() {
        assert!(is_function_url(&v2("abcdefghij.lambda-url.us-east-1.on.aws")));
        assert!(!is_function_url(&v2("abcdefghij.execute-api.us-east-1.amazonaws.com")), "an HTTP API cannot stream");
    }

    #[tokio::test]
    async fn the_prelude_carries_status_headers_and_cookies() {
        let response = axum::response::Response::builder()
            .status(StatusCode::CREATED)
            .header("content-type", "text/event-stream")
            .header(SET_COOKIE, "a=1")
            .header(SET_COOKIE, "b=2")
            .body(axum::body::Body::from("data: x\n\n"))
            .unwrap();
        let StreamResponse { metadata_prelude: p, mut stream } = streamed(response);
        assert_eq!((p.status_code, p.cookies), (StatusCode::CREATED, vec!["a=1".to_string(), "b=2".to_string()]));
        assert_eq!(p.headers.get("content-type").unwrap(), "text/event-stream");
        assert!(p.headers.get(SET_COOKIE).is_none(), "cookies travel in their own field");
        assert_eq!(stream.next().await.unwrap().unwrap(), "data: x\n\n");
    }
}
