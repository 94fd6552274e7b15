//! Naming, schema repair, result capping and the Lambda refusal of the MCP tools.

use super::*;

#[test]
fn names_follow_hermes() {
    assert_eq!(tool_name("my-server", "list-devices"), "mcp_my_server_list_devices");
    assert_eq!(tool_name("time", "get.now"), "mcp_time_get_now");
    assert_eq!(sanitize("ä b"), "__b");
}

#[test]
fn schemas_are_repaired_as_in_hermes() {
    assert_eq!(normalize_schema(&Value::Null), json!({"type": "object", "properties": {}}));
    assert_eq!(normalize_schema(&json!({"type": "object"})), json!({"type": "object", "properties": {}}));
    let full = json!({"type": "object", "properties": {"a": {"type": "number"}}});
    assert_eq!(normalize_schema(&full), full);
}

#[test]
fn results_are_capped_on_a_char_boundary() {
    let s = "é".repeat(MAX_RESULT_BYTES);
    let c = cap(&s);
    assert!(c.len() < MAX_RESULT_BYTES + 200 && c.contains("[truncated"));
    assert_eq!(cap("short"), "short");
    let err = output(&McpCallResult { text: String::new(), structured: None, is_error: true });
    assert_eq!(err, ToolOutput::Json(json!({"error": "MCP tool returned an error"})));
}

#[tokio::test]
async fn stdio_is_refused_on_lambda_and_http_is_not() {
    let mut s = Settings::default();
    s.mcp_servers.insert("local".into(), McpServer { command: "true".into(), ..McpServer::default() });
    s.mcp_servers.insert("remote".into(), McpServer { url: "http://127.0.0.1:9/mcp".into(), ..McpServer::default() });
    s.mcp_servers.insert("off".into(), McpServer { url: "http://x".into(), enabled: Some(false), ..McpServer::default() });
    let hub = McpHub::from_settings(&s, true);
    let states: Vec<_> = hub.servers.iter().map(|s| (s.name.as_str(), s.refusal())).collect();
    assert_eq!(states, [("local", Some("refused: stdio servers run only self-hosted, not on Lambda".into())), ("remote", None)]);
    let e = McpConnection::connect(&s.mcp_servers["local"], true, Duration::from_secs(1)).await.err();
    assert!(matches!(e, Some(McpError::Refused(_))), "{e:?}");
}
