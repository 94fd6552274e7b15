//! The channel against recorded payload shapes and a local fake of the Graph API's media
//! endpoints: normalization of each message type, the handshake, and capped downloads.

use super::*;
use crate::core::inbound::AttachmentKind;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::Utc;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

const IMAGE: &[u8] = b"\x89PNG\r\n\x1a\nfake-image-bytes";

fn channel(api_base: &str) -> WhatsApp {
    WhatsApp {
        app_secret: Some("app-secret".to_string().into()),
        verify_token: Some("verify-me".to_string().into()),
        phone_number_id: Some("PN1".into()),
        client: Some(GraphClient::new(
            crate::clients::client_builder().build().unwrap(),
            api_base,
            "v21.0",
            "tok".to_string().into(),
            "PN1".into(),
        )),
    }
}

fn notification(messages: Value) -> Value {
    json!({"object": "whatsapp_business_account", "entry": [{"id": "WABA", "changes": [{"field": "messages", "value": {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550001111", "phone_number_id": "PN1"},
        "contacts": [{"profile": {"name": "Ann"}, "wa_id": "4915100000001"}],
        "messages": messages}}]}]})
}

fn receive(ch: &WhatsApp, method: Method, query: Option<&str>, body: &Value) -> Result<Received, ChannelError> {
    let body = serde_json::to_vec(body).unwrap();
    let headers = HeaderMap::new();
    ch.receive(&RawRequest { method: &method, headers: &headers, query, body: &body, now: Utc::now() })
}

fn one(r: Received) -> crate::core::inbound::Inbound {
    match r {
        Received::Deferred { msg, then: None, .. } => msg,
        _ => panic!("expected one deferred message"),
    }
}

#[test]
fn an_image_becomes_an_image_attachment_with_its_caption() {
    let ch = channel("http://127.0.0.1:9");
    let m = json!([{"from": "4915100000001", "id": "wamid.IMG", "timestamp": "1700000000", "type": "image",
        "image": {"caption": "what is this?", "mime_type": "image/jpeg", "sha256": "abc", "id": "MEDIA1"}}]);
    let msg = one(receive(&ch, Method::POST, None, &notification(m)).unwrap());
    assert_eq!(msg.text, "what is this?");
    assert_eq!(msg.message_id.as_deref(), Some("wamid.IMG"));
    assert_eq!((msg.origin.platform.as_str(), msg.origin.chat_id.as_str()), ("whatsapp", "4915100000001"));
    assert_eq!(msg.origin.user_id.as_deref(), Some("4915100000001"));
    assert_eq!(msg.user_name.as_deref(), Some("Ann"));
    assert_eq!(msg.attachments.len(), 1);
    let a = &msg.attachments[0];
    assert_eq!((a.kind, a.id.as_str(), a.mime.as_deref()), (AttachmentKind::Image, "MEDIA1", Some("image/jpeg")));
}

#[test]
fn each_message_type_maps_to_its_kind() {
    let ch = channel("http://127.0.0.1:9");
    let m = json!([
        {"from": "1", "id": "w1", "type": "text", "text": {"body": "hi"}},
        {"from": "1", "id": "w2", "type": "audio", "audio": {"mime_type": "audio/ogg; codecs=opus", "id": "A1", "voice": true}},
        {"from": "1", "id": "w3", "type": "document", "document": {"filename": "notes.txt", "mime_type": "text/plain", "id": "D1"}},
        {"from": "1", "id": "w4", "type": "sticker", "sticker": {"mime_type": "image/webp", "id": "S1"}},
        {"from": "1", "id": "w5", "type": "location", "location": {"latitude": 1.0, "longitude": 2.0}},
        {"from": "1", "id": "w6", "type": "reaction", "reaction": {"message_id": "w1", "emoji": "👍"}},
        {"from": "1", "id": "w7", "type": "interactive", "interactive": {"type": "button_reply", "button_reply": {"id": "b", "title": "Yes"}}}
    ]);
    let Received::DeferredMany { msgs, .. } = receive(&ch, Method::POST, None, &notification(m)).unwrap() else {
        panic!("expected a batch")
    };
    let ids: Vec<_> = msgs.iter().map(|m| m.message_id.clone().unwrap()).collect();
    assert_eq!(ids, ["w1", "w2", "w3", "w4", "w5", "w7"], "the reaction is no message; the order is kept");
    assert_eq!((msgs[0].text.as_str(), msgs[0].attachments.len()), ("hi", 0));
    assert_eq!((msgs[1].attachments[0].kind, msgs[1].attachments[0].id.as_str()), (AttachmentKind::Audio, "A1"));
    assert_eq!((msgs[2].attachments[0].kind, msgs[2].attachments[0].name.as_deref()), (AttachmentKind::Document, Some("notes.txt")));
    assert_eq!(msgs[3].attachments[0].kind, AttachmentKind::Other);
    assert_eq!(msgs[4].attachments[0].kind, AttachmentKind::Other);
    assert_eq!(msgs[5].text, "Yes");
}

#[test]
fn statuses_other_numbers_and_other_objects_are_ignored() {
    let ch = channel("http://127.0.0.1:9");
    let statuses = json!({"object": "whatsapp_business_account", "entry": [{"id": "WABA", "changes": [{"field": "messages", "value": {
        "messaging_product": "whatsapp", "metadata": {"phone_number_id": "PN1"},
        "statuses": [{"id": "wamid.X", "status": "delivered", "timestamp": "1700000000", "recipient_id": "1"}]}}]}]});
    let mut other_number = notification(json!([{"from": "1", "id": "w1", "type": "text", "text": {"body": "hi"}}]));
    other_number["entry"][0]["changes"][0]["value"]["metadata"]["phone_number_id"] = json!("PN2");
    let mut other_object = notification(json!([{"from": "1", "id": "w1", "type": "text", "text": {"body": "hi"}}]));
    other_object["object"] = json!("page");
    for body in [statuses, other_number, other_object] {
        assert!(matches!(receive(&ch, Method::POST, None, &body), Ok(Received::Answer(r)) if r.status == StatusCode::OK), "{body}");
    }
    assert!(receive(&ch, Method::POST, None, &json!("nope")).is_err());
}

#[test]
fn the_handshake_needs_subscribe_and_the_verify_token() {
    let ch = channel("http://127.0.0.1:9");
    let headers = HeaderMap::new();
    let req = |m: &'static Method, q: &'static str| RawRequest { method: m, headers: &headers, query: Some(q), body: b"", now: Utc::now() };
    let ok = "hub.mode=subscribe&hub.verify_token=verify-me&hub.challenge=1158201444";
    assert!(ch.authenticate(&req(&Method::GET, ok)).is_ok());
    assert!(matches!(ch.receive(&req(&Method::GET, ok)), Ok(Received::Answer(r)) if r == WebReply::text("1158201444")));
    assert!(ch.authenticate(&req(&Method::GET, "hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1")).is_err());
    assert!(ch.authenticate(&req(&Method::GET, "hub.mode=unsubscribe&hub.verify_token=verify-me&hub.challenge=1")).is_err());
    assert!(ch.authenticate(&req(&Method::GET, "hub.challenge=1")).is_err());
    let unset = WhatsApp { verify_token: None, ..channel("http://127.0.0.1:9") };
    assert!(unset.authenticate(&req(&Method::GET, ok)).is_err());
    // A POST is checked by its signature, whatever its query says.
    assert!(ch.authenticate(&req(&Method::POST, ok)).is_err());
}

/// A fake Graph API: `GET /v21.0/{media_id}` → the media's url and size, `GET /files/{id}`
/// → its bytes (bearer checked on both), recording the paths asked for.
async fn fake_graph(size_announced: usize) -> (String, Arc<Mutex<Vec<String>>>) {
    type S = (Arc<Mutex<Vec<String>>>, Arc<Mutex<String>>, usize);
    async fn media(State((seen, base, size)): State<S>, Path(id): Path<String>, h: HeaderMap) -> Response {
        seen.lock().unwrap().push(format!("media {id}"));
        if h.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer tok") {
            return (StatusCode::UNAUTHORIZED, axum::Json(json!({"error": {"message": "bad token", "code": 190}}))).into_response();
        }
        let url = format!("{}/files/{id}", base.lock().unwrap());
        axum::Json(
            json!({"messaging_product": "whatsapp", "url": url, "mime_type": "image/png", "sha256": "x", "file_size": size, "id": id}),
        )
        .into_response()
    }
    async fn file(State((seen, _, _)): State<S>, Path(id): Path<String>, h: HeaderMap) -> Response {
        seen.lock().unwrap().push(format!("file {id}"));
        if h.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer tok") {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        if id == "STREAM" {
            // No Content-Length: only the cap while reading can stop it.
            let chunks = (0..64).map(|_| Ok::<_, std::io::Error>(Bytes::from_static(IMAGE)));
            return axum::body::Body::from_stream(futures_util::stream::iter(chunks)).into_response();
        }
        Bytes::from_static(IMAGE).into_response()
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let base = Arc::new(Mutex::new(String::new()));
    let router = axum::Router::new().route("/v21.0/{id}", get(media)).route("/files/{id}", get(file)).with_state((
        seen.clone(),
        base.clone(),
        size_announced,
    ));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    *base.lock().unwrap() = url.clone();
    tokio::spawn(async move { axum::serve(l, router).await });
    (url, seen)
}

fn image(id: &str) -> Attachment {
    Attachment { kind: AttachmentKind::Image, id: id.into(), mime: None, name: None, size: None }
}

#[tokio::test]
async fn fetch_downloads_the_media_with_the_bearer_token() {
    let (url, seen) = fake_graph(IMAGE.len()).await;
    let bytes = channel(&url).fetch(&image("MEDIA1"), 1024).await.unwrap();
    assert_eq!(bytes, IMAGE);
    assert_eq!(*seen.lock().unwrap(), ["media MEDIA1", "file MEDIA1"]);
}

#[tokio::test]
async fn fetch_refuses_an_announced_size_over_the_cap_before_downloading() {
    let (url, seen) = fake_graph(10_000_000).await;
    let err = channel(&url).fetch(&image("BIG"), 1024).await.unwrap_err();
    assert!(matches!(&err, DeliveryError::TooLarge(Some(10_000_000))), "{err:?}");
    assert_eq!(*seen.lock().unwrap(), ["media BIG"], "the bytes were never asked for");
}

#[tokio::test]
async fn fetch_caps_while_reading_when_the_size_lies() {
    let (url, _) = fake_graph(1).await;
    // The announced size is 1 byte; the download declares more, or declares nothing and streams.
    let err = channel(&url).fetch(&image("LIES"), 8).await.unwrap_err();
    assert!(matches!(&err, DeliveryError::TooLarge(_)), "{err:?}");
    let err = channel(&url).fetch(&image("STREAM"), 100).await.unwrap_err();
    assert!(matches!(&err, DeliveryError::TooLarge(None)), "{err:?}");
    assert_eq!(channel(&url).fetch(&image("STREAM"), 64 * IMAGE.len()).await.unwrap().len(), 64 * IMAGE.len());
}

#[test]
fn settings_come_from_hermes_whatsapp_cloud_variables() {
    let env = crate::config::Env::from_pairs([
        ("WHATSAPP_CLOUD_ALLOWED_USERS", "4915100000001, 4915100000002"),
        ("WHATSAPP_ALLOWED_USERS", "999"),
        ("WHATSAPP_CLOUD_HOME_CHANNEL", "4915100000001"),
        ("WHATSAPP_CLOUD_ACCESS_TOKEN", "tok"),
    ]);
    let cfg = crate::config::load_settings(std::path::Path::new("/nonexistent/hz-wa-home"), None, &env).unwrap();
    let p = cfg.platform("whatsapp");
    assert_eq!(p.allowed_users, ["4915100000001", "4915100000002"], "Hermes' plain WHATSAPP_* belong to its Baileys bridge");
    assert_eq!(p.home_channel, "4915100000001");
    let ch = WhatsApp::from_config(&cfg, crate::clients::client_builder().build().unwrap());
    assert!(matches!(ch.ready(), Err(DeliveryError::NotConfigured(m)) if m.contains("WHATSAPP_CLOUD_PHONE_NUMBER_ID")));
}

#[tokio::test]
async fn fetch_refuses_ids_that_are_not_graph_ids() {
    let (url, seen) = fake_graph(1).await;
    for id in ["", "../me", "a/b", "x?y"] {
        assert!(matches!(channel(&url).fetch(&image(id), 8).await, Err(DeliveryError::Permanent(_))), "{id}");
    }
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_rejected_token_is_permanent() {
    let (url, _) = fake_graph(1).await;
    let mut ch = channel(&url);
    ch.client =
        Some(GraphClient::new(crate::clients::client_builder().build().unwrap(), &url, "v21.0", "wrong".to_string().into(), "PN1".into()));
    assert!(matches!(ch.fetch(&image("M"), 8).await, Err(DeliveryError::Permanent(m)) if m.contains("190")));
}
