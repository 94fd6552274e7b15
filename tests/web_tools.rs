//! `web_search` and `web_extract` end to end on the real binary, against local fakes that
//! speak each vendor's wire protocol (tests/common/web_vendors.rs): every one of Hermes'
//! six backends answers a search in Hermes' shape; extract keeps the order asked, refuses
//! private addresses before the vendor sees them and cuts a long page to Hermes' head + tail
//! window; a vendor answering 401, 429 or garbage is a tool error and the model still
//! answers; without a backend the tools are not offered and `doctor` says why; the brief's
//! news job, written with `web_search`, runs and is delivered to Telegram.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::web_vendors::{FakeVendor, Mode, Vendor, hits};
use common::*;
use serde_json::{Value, json};

/// The content of the newest tool message of a recorded model request.
fn last_tool_result(req: &Value) -> String {
    req["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_string()
}

fn offered(req: &Value) -> Vec<String> {
    req["tools"].as_array().map(|t| t.iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect()).unwrap_or_default()
}

/// A gateway on `home` with the model at `llm` and the vendors' variables of `fakes`.
fn gateway(home: &TempHome, llm: &FakeLlm, fakes: &[&FakeVendor], extra: &str) -> Gateway {
    home.write("config.yaml", &config(Some(llm), None, extra));
    let env: Vec<(&str, String)> = fakes.iter().flat_map(|f| f.env()).collect();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Gateway::start(home.path(), &env)
}

async fn ask(gw: &Gateway, text: &str) -> Value {
    let (s, v) = gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": text})).await;
    assert_eq!(s, 200, "{v}");
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_of_hermes_six_backends_answers_web_search_in_hermes_shape() {
    for vendor in Vendor::ALL {
        let (llm, fake) = (FakeLlm::start().await, FakeVendor::start(vendor).await);
        let home = TempHome::new("web-search");
        let gw = gateway(&home, &llm, &[&fake], "");
        llm.push(Reply::Tool { name: "web_search".into(), args: json!({"query": "ai news", "limit": 2}) });
        llm.push(Reply::Text("found".into()));
        assert_eq!(ask(&gw, "search the news").await["reply"], "found");
        let reqs = llm.requests();
        assert!(offered(&reqs[0]).iter().any(|t| t == "web_search") && offered(&reqs[0]).iter().any(|t| t == "web_extract"), "{vendor:?}");
        let got: Value = serde_json::from_str(&last_tool_result(&reqs[1])).unwrap();
        let want: Vec<Value> = hits(vendor)
            .iter()
            .enumerate()
            .map(|(i, (t, u, s))| {
                let description = if matches!(vendor, Vendor::Exa | Vendor::Parallel) { format!("{s} more") } else { s.clone() };
                json!({"title": t, "url": u, "description": description, "position": i + 1})
            })
            .collect();
        assert_eq!(got, json!({"success": true, "data": {"web": want}}), "{vendor:?}");
        let seen = fake.seen();
        assert_eq!(seen.len(), 1, "{vendor:?}: one vendor call");
        let (b, q) = (&seen[0].body, &seen[0].query);
        match vendor {
            Vendor::Tavily => {
                assert_eq!((&b["query"], &b["max_results"], &b["include_raw_content"]), (&json!("ai news"), &json!(2), &json!(false)))
            }
            Vendor::Exa => {
                assert_eq!((&b["query"], &b["numResults"], &b["contents"]), (&json!("ai news"), &json!(2), &json!({"highlights": true})))
            }
            Vendor::Parallel => {
                assert_eq!(
                    (&b["objective"], &b["search_queries"], &b["mode"]),
                    (&json!("ai news"), &json!(["ai news"]), &json!("agentic"))
                );
                assert_eq!(seen[0].headers["parallel-beta"], "search-extract-2025-10-10");
            }
            Vendor::Firecrawl => assert_eq!((&b["query"], &b["limit"]), (&json!("ai news"), &json!(2))),
            Vendor::Searxng => assert!(q.contains("q=ai+news") && q.contains("format=json") && q.contains("pageno=1"), "{q}"),
            Vendor::Brave => assert!(q.contains("q=ai+news") && q.contains("count=2"), "{q}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_backend_picks_among_configured_vendors_and_the_first_in_hermes_order_wins_otherwise() {
    let (llm, brave, exa) = (FakeLlm::start().await, FakeVendor::start(Vendor::Brave).await, FakeVendor::start(Vendor::Exa).await);
    let home = TempHome::new("web-order");
    let gw = gateway(&home, &llm, &[&brave, &exa], "");
    llm.push(Reply::Tool { name: "web_search".into(), args: json!({"query": "q"}) });
    llm.push(Reply::Text("ok".into()));
    ask(&gw, "go").await;
    assert_eq!((exa.seen().len(), brave.seen().len()), (1, 0), "Exa comes before Brave");
    drop(gw);
    let gw = gateway(&home, &llm, &[&brave, &exa], "web:\n  backend: brave-free\n");
    llm.push(Reply::Tool { name: "web_search".into(), args: json!({"query": "q"}) });
    llm.push(Reply::Text("ok".into()));
    ask(&gw, "go").await;
    assert_eq!((exa.seen().len(), brave.seen().len()), (1, 1), "web.backend picks Brave");
    // Brave cannot extract: web_extract says so in Hermes' words.
    llm.push(Reply::Tool { name: "web_extract".into(), args: json!({"urls": ["https://93.184.216.34/a"]}) });
    llm.push(Reply::Text("ok".into()));
    ask(&gw, "read it").await;
    let r = last_tool_result(&llm.requests().last().unwrap().clone());
    assert!(r.contains("Brave Search (Free) is a search-only backend") && r.contains("web.extract_backend"), "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_extract_keeps_the_order_refuses_private_addresses_and_cuts_long_pages() {
    for vendor in [Vendor::Tavily, Vendor::Exa, Vendor::Parallel, Vendor::Firecrawl] {
        let (llm, fake) = (FakeLlm::start().await, FakeVendor::start(vendor).await);
        fake.set_page_chars(10_000);
        let home = TempHome::new("web-extract");
        let gw = gateway(&home, &llm, &[&fake], "web:\n  extract_char_limit: 4000\n");
        let urls = json!(["http://127.0.0.1:9/admin", "https://93.184.216.34/long", {"url": "https://93.184.216.34/other"}, 7]);
        llm.push(Reply::Tool { name: "web_extract".into(), args: json!({ "urls": urls }) });
        llm.push(Reply::Text("read".into()));
        assert_eq!(ask(&gw, "read these").await["reply"], "read");
        let got: Value = serde_json::from_str(&last_tool_result(&llm.requests()[1])).unwrap();
        let r = got["results"].as_array().unwrap();
        assert_eq!(r.len(), 4, "{vendor:?}: {got}");
        assert!(r[0]["error"].as_str().unwrap().starts_with("Blocked: URL targets a private or internal network address"), "{}", r[0]);
        assert!(r[3]["error"].as_str().unwrap().contains("Invalid URL item at index 3"), "{}", r[3]);
        for (i, path) in [(1, "/long"), (2, "/other")] {
            let url = format!("https://93.184.216.34{path}");
            assert_eq!((r[i]["url"].as_str(), &r[i]["error"]), (Some(url.as_str()), &Value::Null), "{vendor:?}");
            let content = r[i]["content"].as_str().unwrap();
            assert!(content.starts_with(&format!("# Page {url}\n")), "{vendor:?}: {content:.80}");
            assert!(
                content.contains("[... middle omitted — see footer ...]") && content.contains("of 10,000 total clean characters."),
                "{vendor:?}"
            );
            assert!(content.chars().count() < 4400, "{vendor:?}: cut to the budget plus the footer");
        }
        let sent: Vec<String> = fake
            .seen()
            .iter()
            .flat_map(|s| if s.body["urls"].is_array() { s.body["urls"].as_array().unwrap().clone() } else { vec![s.body["url"].clone()] })
            .map(|u| u.as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            sent,
            ["https://93.184.216.34/long", "https://93.184.216.34/other"],
            "{vendor:?}: the private URL never reached the vendor"
        );
        // A page within the per-call budget comes back whole.
        fake.set_page_chars(0);
        llm.push(Reply::Tool { name: "web_extract".into(), args: json!({"urls": ["https://93.184.216.34/short"], "char_limit": 2000}) });
        llm.push(Reply::Text("ok".into()));
        ask(&gw, "and this").await;
        let got: Value = serde_json::from_str(&last_tool_result(&llm.requests()[3])).unwrap();
        let u = "https://93.184.216.34/short";
        assert_eq!(got["results"][0]["content"], format!("# Page {u}\nThe body of {u}.\n"), "{vendor:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vendor_answering_401_429_or_garbage_is_a_tool_error_and_the_model_still_answers() {
    let cases = [
        (Vendor::Tavily, Mode::Status(401), "Tavily search failed: HTTP 401 Unauthorized"),
        (Vendor::Brave, Mode::Status(429), "Brave Search returned HTTP 429"),
        (Vendor::Exa, Mode::Garbage, "Exa search failed: the answer is not valid JSON"),
        (Vendor::Searxng, Mode::Garbage, "Could not parse SearXNG response as JSON"),
        (Vendor::Firecrawl, Mode::Status(429), "Firecrawl search failed: HTTP 429 Too Many Requests: rate limited"),
    ];
    for (vendor, mode, want) in cases {
        let (llm, fake) = (FakeLlm::start().await, FakeVendor::start(vendor).await);
        fake.set_mode(mode);
        let home = TempHome::new("web-fail");
        let gw = gateway(&home, &llm, &[&fake], "");
        llm.push(Reply::Tool { name: "web_search".into(), args: json!({"query": "news"}) });
        llm.push(Reply::Text("The search is down; try later.".into()));
        assert_eq!(ask(&gw, "news?").await["reply"], "The search is down; try later.", "{vendor:?}");
        let r = last_tool_result(&llm.requests()[1]);
        let v: Value = serde_json::from_str(&r).unwrap();
        assert!(v["error"].as_str().unwrap().starts_with(want), "{vendor:?}: {r}");
        assert!(!r.contains(vendor.key()) || vendor.key().is_empty(), "no key in the result");
    }
    // A wrong key is the vendor's 401, told as such.
    let (llm, fake) = (FakeLlm::start().await, FakeVendor::start(Vendor::Parallel).await);
    let home = TempHome::new("web-badkey");
    home.write("config.yaml", &config(Some(&llm), None, ""));
    let gw = Gateway::start(home.path(), &[("PARALLEL_API_KEY", "wrong-key-0000"), ("PARALLEL_BASE_URL", &fake.url)]);
    llm.push(Reply::Tool { name: "web_search".into(), args: json!({"query": "news"}) });
    llm.push(Reply::Text("no luck".into()));
    assert_eq!(ask(&gw, "news?").await["reply"], "no luck");
    let r = last_tool_result(&llm.requests()[1]);
    assert!(r.contains("Parallel search failed: HTTP 401 Unauthorized: Unauthorized: invalid API key"), "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_backend_the_tools_are_not_offered_and_doctor_says_why() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("web-none");
    let gw = gateway(&home, &llm, &[], "web:\n  backend: ddgs\n");
    ask(&gw, "hi").await;
    let tools = offered(&llm.requests()[0]);
    assert!(tools.iter().any(|t| t == "web_fetch"), "{tools:?}");
    assert!(!tools.iter().any(|t| t == "web_search" || t == "web_extract"), "{tools:?}");
    let out = stdout(&cli(home.path(), &["doctor"], &[]));
    assert!(out.contains("web_search and web_extract are not offered: no web backend is configured"), "{out}");
    assert!(out.contains("web.backend `ddgs` is not a backend hermes-zero speaks"), "{out}");
    let tavily = [("TAVILY_API_KEY", "tvly-doctor-secret-1"), ("SEARXNG_URL", "http://127.0.0.1:9")];
    let out = stdout(&cli(home.path(), &["doctor"], &tavily));
    assert!(out.contains("web_search via tavily, web_extract via tavily"), "{out}");
    assert!(!out.contains("tvly-doctor-secret-1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_briefs_news_job_searches_the_web_and_is_delivered_to_telegram() {
    let (llm, tg, fake) = (FakeLlm::start().await, FakeTelegram::start().await, FakeVendor::start(Vendor::Tavily).await);
    let home = TempHome::new("web-news-job");
    home.write("config.yaml", &config(Some(&llm), Some(&tg), "cron:\n  wrap_response: false\n"));
    let env: Vec<(&str, String)> = fake.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let prompt = "Every morning at 8, gather the AI-industry news and summarize it";
    let o = cli(home.path(), &["cron", "add", "0 8 * * *", prompt, "--name", "ai-news", "--deliver", "telegram:42"], &env);
    assert!(o.status.success(), "{}", stderr(&o));
    llm.push(Reply::Tool { name: "web_search".into(), args: json!({"query": "AI industry news today", "limit": 5}) });
    llm.push(Reply::Text("AI news: tavily headline 1; tavily headline 2.".into()));
    let o = cli(home.path(), &["cron", "run", "ai-news"], &env);
    assert!(o.status.success() && stdout(&o).contains(": ok"), "{}\n{}", stdout(&o), stderr(&o));
    let reqs = llm.requests();
    assert!(offered(&reqs[0]).iter().any(|t| t == "web_search"), "the job is offered web_search");
    assert!(last_tool_result(&reqs[1]).contains("https://news.example/tavily/1"));
    assert_eq!(fake.seen()[0].body["query"], "AI industry news today");
    let sent = tg.sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(
        (sent[0]["chat_id"].as_str(), sent[0]["text"].as_str()),
        (Some("42"), Some("AI news: tavily headline 1; tavily headline 2."))
    );
}

/// The Python of the vendor-SDK venv (`HZ_WEB_SDK_PY`, made by scripts/test.sh); required
/// under CI, where a missing venv is a failure, not a skip.
fn sdk_python() -> Option<String> {
    match std::env::var("HZ_WEB_SDK_PY") {
        Ok(p) if !p.trim().is_empty() => Some(p),
        _ if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("HZ_WEB_SDK_PY is not set under CI=true: scripts/test.sh makes target/web-sdk-venv and exports it")
        }
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_vendors_python_sdks_talk_to_the_fakes() {
    let Some(python) = sdk_python() else {
        println!("SKIPPED: HZ_WEB_SDK_PY is not set (scripts/test.sh makes target/web-sdk-venv with the vendors' SDKs)");
        return;
    };
    let fakes = [Vendor::Tavily, Vendor::Exa, Vendor::Firecrawl, Vendor::Parallel];
    let mut started = Vec::new();
    for v in fakes {
        started.push(FakeVendor::start(v).await);
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/web_sdks.py");
    let mut cmd = std::process::Command::new(&python);
    cmd.arg(script).args(started.iter().map(|f| f.url.clone()));
    for f in &started {
        for (k, v) in f.env() {
            cmd.env(k, v);
        }
    }
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), tokio::task::spawn_blocking(move || cmd.output().unwrap()))
        .await
        .expect("the SDK script finishes within 60 s")
        .unwrap();
    assert!(out.status.success(), "SDK script failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    let page = common::web_vendors::page_text("https://93.184.216.34/a", 0);
    for v in fakes {
        let n = match v {
            Vendor::Tavily => "tavily",
            Vendor::Exa => "exa",
            Vendor::Firecrawl => "firecrawl",
            _ => "parallel",
        };
        let want: Vec<Value> = hits(v)
            .iter()
            .map(
                |(t, u, s)| if matches!(v, Vendor::Exa | Vendor::Parallel) { json!([t, u, format!("{s} more")]) } else { json!([t, u, s]) },
            )
            .collect();
        assert_eq!(got[format!("{n}_search")], json!(want), "{n}: {got}");
        assert_eq!(got[format!("{n}_extract")], json!([page]), "{n}: {got}");
    }
    // What the SDKs sent is what our adapters send: same paths and the same fields.
    let paths: Vec<Vec<String>> = started.iter().map(|f| f.seen().iter().map(|s| format!("{} {}", s.method, s.path)).collect()).collect();
    assert_eq!(
        paths,
        [
            vec!["POST /search", "POST /extract"],
            vec!["POST /search", "POST /contents"],
            vec!["POST /v2/search", "POST /v2/scrape"],
            vec!["POST /v1beta/search", "POST /v1beta/extract"]
        ]
    );
    let exa_search = &started[1].seen()[0].body;
    assert_eq!((&exa_search["numResults"], &exa_search["contents"]["highlights"]), (&json!(2), &json!(true)), "{exa_search}");
    assert_eq!(started[1].seen()[1].body["text"], json!(true));
    assert_eq!(started[3].seen()[0].headers["parallel-beta"], "search-extract-2025-10-10");
}
