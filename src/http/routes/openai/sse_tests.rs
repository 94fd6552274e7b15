//! The SSE stream's framing: role chunk, deltas, tool progress, keepalive, finish, [DONE].

use super::*;
use futures_util::StreamExt;

fn chunk() -> Chunk {
    Chunk { id: "chatcmpl-1".into(), created: 1, model: "m".into() }
}

async fn collect(frames: Vec<Frame>, keepalive: Duration, gap: Duration) -> String {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        for f in frames {
            tokio::time::sleep(gap).await;
            let _ = tx.send(f);
        }
    });
    let parts: Vec<_> = body_stream(rx, chunk(), keepalive).collect().await;
    parts.into_iter().map(|b| String::from_utf8(b.unwrap().to_vec()).unwrap()).collect()
}

#[tokio::test]
async fn a_stream_is_role_deltas_progress_finish_done() {
    let out = Outcome { reply: Some("hello".into()), streamed: true, usage: (3, 4), ..Outcome::default() };
    let frames = vec![
        Frame::Delta("hel".into()),
        Frame::Tool(json!({"tool": "t", "toolCallId": "c1", "status": "running"})),
        Frame::Delta("lo".into()),
        Frame::End(Ok(out)),
    ];
    let text = collect(frames, Duration::from_secs(30), Duration::from_millis(1)).await;
    let events: Vec<&str> = text.split("\n\n").filter(|e| !e.is_empty()).collect();
    assert!(events[0].contains(r#""delta":{"role":"assistant"}"#), "{text}");
    assert!(events[1].contains(r#""content":"hel""#), "{text}");
    assert!(events[2].starts_with("event: hermes.tool.progress\ndata: "), "{text}");
    assert!(events[3].contains(r#""content":"lo""#), "{text}");
    assert!(events[4].contains(r#""finish_reason":"stop""#) && events[4].contains(r#""total_tokens":7"#), "{text}");
    assert_eq!(events[5], "data: [DONE]");
    assert_eq!(events.len(), 6, "the streamed reply is not sent again: {text}");
}

#[tokio::test]
async fn silence_gets_keepalives_and_a_failed_turn_an_error_finish() {
    let frames = vec![Frame::End(Err(AppError::Model(crate::ports::LlmError::BadResponse("boom".into()))))];
    let text = collect(frames, Duration::from_millis(20), Duration::from_millis(120)).await;
    assert!(text.contains(": keepalive\n\n"), "{text}");
    assert!(text.contains(r#""finish_reason":"error""#) && text.contains(r#""error_code":"agent_error""#), "{text}");
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
}

#[tokio::test]
async fn an_unstreamed_reply_goes_out_before_the_finish() {
    let out = Outcome { reply: Some("from a command".into()), ..Outcome::default() };
    let text = collect(vec![Frame::End(Ok(out))], Duration::from_secs(30), Duration::ZERO).await;
    assert!(text.contains(r#""content":"from a command""#), "{text}");
}
