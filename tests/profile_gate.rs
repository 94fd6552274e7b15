//! A routed profile is built only for an authenticated request (CONTRACT §17, issue #27):
//! profile `a` has a stdio MCP server that writes a marker file when it starts. Requests
//! under `/p/a/` without its credentials (no key, a wrong key, the deployment's key, a
//! forged webhook, a bogus fire token) spawn nothing, and each answers exactly as the same
//! request to a profile that does not exist. With a's key, the profile is built and the
//! server starts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

type Headers = [(&'static str, &'static str)];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unauthenticated_profile_url_builds_and_spawns_nothing() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("profile-gate");
    let marker = home.path().join("spawned.marker");
    home.write("config.yaml", &config(Some(&llm), None, ""));
    let mcp = format!(
        "mcp_servers:\n  probe:\n    command: {}\n    args: [mcp-dev-stdio]\n    timeout: 10\n    env:\n      HZ_MCP_MARKER: {}\n",
        bin(),
        marker.display()
    );
    home.write("profiles/a/config.yaml", &config(Some(&llm), None, &format!("{}{mcp}", pinned_key_chronos("inst"))));
    home.write("profiles/a/.env", "API_SERVER_KEY=key-a\nTELEGRAM_WEBHOOK_SECRET=tg-a\nSLACK_SIGNING_SECRET=slack-a\n");
    let gw = Gateway::start(home.path(), &[]);
    let ask = |method: reqwest::Method, path: String, auth: Option<&'static str>, headers: &'static Headers| {
        let mut rq = gw.http.request(method, format!("{}{path}", gw.base)).body("{\"update_id\": 1}");
        if let Some(a) = auth {
            rq = rq.header("authorization", a);
        }
        for (k, v) in headers {
            rq = rq.header(*k, *v);
        }
        async move {
            let r = rq.send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    use reqwest::Method as M;
    let tries: &[(M, &str, Option<&'static str>, &'static Headers)] = &[
        (M::GET, "/healthz", None, &[]),
        (M::GET, "/healthz", Some("Bearer wrong"), &[]),
        (M::GET, "/healthz", Some("Bearer test-key-123"), &[]),
        (M::GET, "/api/sessions", None, &[]),
        (M::POST, "/api/messages", Some("Bearer key-b"), &[]),
        (M::GET, "/api/nothing", None, &[]),
        (M::POST, "/api/cron/fire", Some("Bearer not.a.jwt"), &[]),
        (M::POST, "/api/cron/fire", None, &[]),
        (M::POST, "/webhooks/telegram", None, &[("x-telegram-bot-api-secret-token", "guess")]),
        (M::POST, "/webhooks/slack", None, &[("x-slack-signature", "v0=00"), ("x-slack-request-timestamp", "1")]),
        (M::POST, "/webhooks/nothing", None, &[]),
    ];
    for (method, path, auth, headers) in tries {
        let known = ask(method.clone(), format!("/p/a{path}"), *auth, headers).await;
        let unknown = ask(method.clone(), format!("/p/ghost{path}"), *auth, headers).await;
        let invalid = ask(method.clone(), format!("/p/Bad!{path}"), *auth, headers).await;
        assert_eq!(known.0, 401, "{method} /p/a{path}: {known:?}");
        assert_eq!(known, unknown, "{method} {path}: a known and an unknown profile answer alike");
        assert_eq!(known, invalid, "{method} {path}: and so does an invalid name");
    }
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(!marker.exists(), "an unauthenticated request spawned profile a's MCP server");
    assert!(!home.path().join("profiles/ghost").exists(), "nothing created for an unknown profile");

    // The dashboard's static page is the same for every name, and builds nothing either.
    let (s, page) = ask(M::GET, "/p/a/ui".into(), None, &[]).await;
    assert_eq!((s, ask(M::GET, "/p/ghost/ui".into(), None, &[]).await), (200, (200, page)));
    assert!(!marker.exists());

    // With a's key the profile is built and its MCP server starts.
    let (s, body) = ask(M::GET, "/p/a/healthz".into(), Some("Bearer key-a"), &[]).await;
    assert_eq!(s, 200, "{body}");
    assert!(wait_until(10, || marker.exists()).await, "the authenticated request built a and started its MCP server");
}
