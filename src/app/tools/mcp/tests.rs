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
    // The real connector: it would try to start `true` and fail to connect, so `Refused`
    // shows the entry was turned down before the port was asked.
    let hub = McpHub::from_settings(&s, true, crate::test_support::mcp_connector());
    let states: Vec<_> = hub.servers.iter().map(|s| (s.name.as_str(), s.refusal())).collect();
    assert_eq!(states, [("local", Some("refused: stdio servers run only self-hosted, not on Lambda".into())), ("remote", None)]);
    let e = hub.servers[0].connection().await.err();
    assert!(matches!(e, Some(McpError::Refused(_))), "{e:?}");
    assert!(hub.servers[0].live().state.starts_with("error: stdio MCP servers (`command`) run only self-hosted"));
    // Off Lambda the same entry reaches the connector, which cannot finish a handshake with `true`.
    let hub = McpHub::from_settings(&s, false, crate::test_support::mcp_connector());
    let e = hub.servers[0].connection().await.err();
    assert!(matches!(e, Some(McpError::Connect(_))), "{e:?}");
}

#[test]
fn an_entry_without_url_or_command_has_no_endpoint() {
    let blank = McpServer { url: "  ".into(), ..McpServer::default() };
    assert_eq!(endpoint(&blank), None);
    let both = McpServer { url: " http://h/mcp ".into(), command: "x".into(), ..McpServer::default() };
    assert_eq!(endpoint(&both), Some(McpEndpoint::Http { url: "http://h/mcp".into(), headers: Default::default() }));
}

#[tokio::test]
async fn a_servers_tools_are_in_its_mcp_toolset() {
    let now = "2025-03-01T12:00:00Z".parse().unwrap();
    let yaml = "mcp_servers:\n  my-srv:\n    url: http://127.0.0.1:9/mcp\n";
    let app = crate::test_support::TestApp::new(now).yaml(yaml).llm(crate::test_support::CountingLlm::new("ok")).build();
    let server = app.inner.mcp.servers[0].clone();
    let tool = McpTool { name: "get.now".into(), description: String::new(), input_schema: Value::Null };
    register(&app, &server, &[tool], now);
    assert_eq!(app.inner.tools.of_toolsets(&["mcp-my-srv"]), ["mcp_my_srv_get_now"]);
    assert!(app.inner.tools.of_toolsets(&["mcp-my_srv", "web"]).iter().all(|n| n.starts_with("web_")));
}
