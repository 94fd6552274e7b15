//! Memory end to end on the real binary with a scripted OpenAI-compatible model: a memory
//! saved in one session is in the next session's system prompt; the flush turn before a
//! manual reset happens with ≥ `memory.flush_min_turns` user turns (and delivers nothing),
//! not with fewer; `GET/PUT /api/memory` and `memory show|edit`; two allowed Telegram users
//! each get their own user profile (docs/who-sees-what.md), and `memory.user_profile: shared`
//! keeps Hermes' one profile.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};

fn system_of(req: &Value) -> String {
    req["messages"][0]["content"].as_str().unwrap_or_default().to_string()
}

fn tool_names(req: &Value) -> Vec<String> {
    req["tools"].as_array().into_iter().flatten().map(|t| t["function"]["name"].as_str().unwrap_or_default().to_string()).collect()
}

#[tokio::test]
async fn a_memory_saved_in_one_session_is_in_the_next_sessions_prompt() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("memory-next");
    home.write("config.yaml", &config(Some(&llm), None, ""));
    let gw = Gateway::start(home.path(), &[]);
    let msg = |text: &str| json!({"chat_id": "c1", "user_id": "u1", "text": text});

    llm.push(Reply::Tool {
        name: "memory".into(),
        args: json!({"action": "add", "target": "user", "content": "Name is Ann; prefers metric units"}),
    });
    llm.push(Reply::Text("Noted.".into()));
    let (s, v) = gw.post_message(msg("remember: I'm Ann and I like metric")).await;
    assert_eq!((s, v["reply"].as_str()), (200, Some("Noted.")), "{v}");
    let reqs = llm.requests();
    assert!(tool_names(&reqs[0]).contains(&"memory".to_string()), "{:?}", tool_names(&reqs[0]));
    let result = reqs[1]["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].clone();
    assert!(result.as_str().unwrap().contains("\"success\":true"), "{result}");
    assert!(!system_of(&reqs[0]).contains("Name is Ann"), "not in the session that saved it");

    let (s, v) = gw.post_message(msg("/new")).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(llm.calls(), 2, "one user turn is below flush_min_turns: no flush");
    let (s, _) = gw.post_message(msg("what units do I like?")).await;
    assert_eq!(s, 200);
    let sys = system_of(llm.requests().last().unwrap());
    assert!(sys.contains("USER PROFILE (who the user is) [2% — 33/1,375 chars]"), "{sys}");
    assert!(sys.contains("Name is Ann; prefers metric units"), "{sys}");

    // The store is visible from the API and the CLI.
    let (s, v) = gw.get("/api/memory").await;
    assert_eq!(s, 200);
    assert_eq!(v["user"]["entries"], json!(["Name is Ann; prefers metric units"]));
    assert_eq!(v["memory"]["limit"], 2200);
    let out = cli(home.path(), &["memory", "show", "--json"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let shown: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(shown["user"]["entries"], v["user"]["entries"]);
}

#[tokio::test]
async fn the_flush_turn_runs_before_a_reset_only_with_enough_user_turns_and_delivers_nothing() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = TempHome::new("memory-flush");
    home.write("config.yaml", &config(Some(&llm), Some(&tg), ""));
    let gw = Gateway::start(home.path(), &[]);
    let mut n = 0;
    let mut say = async |chat: i64, text: &str| {
        n += 1;
        assert_eq!(gw.telegram("tg-secret", tg_update(n, n, 42, chat, text)).await, 200);
    };

    // Five user turns, then /reset: no flush.
    for i in 0..5 {
        say(7, &format!("short {i}")).await;
    }
    let calls = llm.calls();
    say(7, "/reset").await;
    assert_eq!(llm.calls(), calls, "5 user turns < flush_min_turns (6): no flush turn");

    // Six user turns, then /reset: one flush turn with only `memory`, nothing delivered.
    for i in 0..6 {
        say(8, &format!("long {i}")).await;
    }
    let (_, list) = gw.get("/api/sessions").await;
    let ending =
        list["sessions"].as_array().unwrap().iter().find(|e| e["chat_id"] == "8").unwrap()["session_id"].as_str().unwrap().to_string();
    let (calls, sent) = (llm.calls(), tg.sent().len());
    llm.push(Reply::Tool {
        name: "memory".into(),
        args: json!({"action": "add", "target": "memory", "content": "chat 8 talks in numbered lines"}),
    });
    llm.push(Reply::Text("FLUSH-SAYS-NOTHING".into()));
    say(8, "/reset").await;
    let reqs = llm.requests();
    assert_eq!(reqs.len(), calls + 2, "the flush turn: a tool round and the closing answer");
    let flush = &reqs[calls];
    assert_eq!(tool_names(flush), ["memory"]);
    assert!(last_user(flush).starts_with("[System: This session is about to be reset"), "{}", last_user(flush));
    assert!(flush["messages"].as_array().unwrap().iter().any(|m| m["content"] == "long 5"), "the conversation is in the flush prompt");
    let new_sent: Vec<String> =
        tg.wait_for(sent + 1, 5).await[sent..].iter().map(|m| m["text"].as_str().unwrap_or_default().to_string()).collect();
    assert_eq!(new_sent.len(), 1, "{new_sent:?}");
    assert!(new_sent[0].starts_with("✨ New session started"), "{new_sent:?}");
    let (_, v) = gw.get("/api/memory").await;
    assert_eq!(v["memory"]["entries"], json!(["chat 8 talks in numbered lines"]));
    // The flush left no trace in the ended session's transcript.
    let (_, show) = gw.get(&format!("/api/sessions/{ending}")).await;
    assert_eq!(show["messages"].as_array().unwrap().len(), 12, "{show}");
    assert!(!show.to_string().contains("FLUSH-SAYS-NOTHING") && !show.to_string().contains("numbered lines"));
}

#[tokio::test]
async fn api_memory_put_validates_limits_and_cli_edit_applies_a_file() {
    let home = TempHome::new("memory-edit");
    home.write("config.yaml", "memory:\n  user_char_limit: 20\n");
    let gw = Gateway::start(home.path(), &[]);
    let put = |body: Value| {
        let (http, url, key) = (gw.http.clone(), format!("{}/api/memory", gw.base), gw.key.clone());
        async move {
            let r = http.put(url).bearer_auth(key).json(&body).send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let r = gw.http.put(format!("{}/api/memory", gw.base)).json(&json!({"memory": []})).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let (s, v) = put(json!({"memory": ["uses fish shell", "  ", "uses fish shell"], "user": ["Ann"]})).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["memory"]["entries"], json!(["uses fish shell"]), "blank and duplicate entries dropped");
    assert_eq!(v["user"]["usage"], "15% — 3/20 chars");
    let (s, v) = put(json!({"user": ["a profile far longer than twenty characters"]})).await;
    assert_eq!(s, 400);
    assert!(v["error"].as_str().unwrap().contains("user is over its limit: 43/20 chars"), "{v}");
    let (_, v) = gw.get("/api/memory").await;
    assert_eq!(v["user"]["entries"], json!(["Ann"]), "a refused change writes nothing");
    drop(gw);

    home.write("edit.txt", "# comment\n=== memory ===\nfirst\n§\nsecond\nline\n=== user ===\nAnn, UTC+1\n");
    let file = home.path().join("edit.txt");
    let out = cli(home.path(), &["memory", "edit", "--file", file.to_str().unwrap()], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cli(home.path(), &["memory", "show", "--json"], &[]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["memory"]["entries"], json!(["first", "second\nline"]));
    assert_eq!(v["user"]["entries"], json!(["Ann, UTC+1"]));
    home.write("bad.txt", "=== user ===\nthis user profile is much too long for the limit\n");
    let out = cli(home.path(), &["memory", "edit", "--file", home.path().join("bad.txt").to_str().unwrap()], &[]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("memory not changed"), "{}", stderr(&out));
    // An editor run: the EDITOR command rewrites the file in place.
    let out = cli(home.path(), &["memory", "edit"], &[("EDITOR", "sed -i -e 's/^first$/edited/'"), ("VISUAL", "")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("- edited"), "{}", stdout(&out));
}

/// Two allowed Telegram users of one agent, the fakes, and a `say` that waits for the reply.
struct TwoUsers {
    llm: FakeLlm,
    tg: FakeTelegram,
    gw: Gateway,
    _home: TempHome,
    n: i64,
}

impl TwoUsers {
    async fn start(tag: &str, extra: &str) -> Self {
        let llm = FakeLlm::start().await;
        let tg = FakeTelegram::start().await;
        let home = TempHome::new(tag);
        let platforms = format!("platforms:\n  telegram:\n    api_base: {}\n    allowed_users: ['111', '222']\n{extra}", tg.url);
        home.write("config.yaml", &config(Some(&llm), None, &platforms));
        let gw = Gateway::start(home.path(), &[]);
        Self { llm, tg, gw, _home: home, n: 0 }
    }

    /// `user` writes `text` in their DM; returns the model requests of that turn once its
    /// one reply was sent.
    async fn say(&mut self, user: i64, text: &str) -> Vec<Value> {
        self.n += 1;
        let (calls, sent) = (self.llm.calls(), self.tg.sent().len());
        assert_eq!(self.gw.telegram("tg-secret", tg_update(self.n, self.n, user, user, text)).await, 200);
        assert_eq!(self.tg.wait_for(sent + 1, 10).await.len(), sent + 1, "{user}'s `{text}` got its reply");
        self.llm.requests()[calls..].to_vec()
    }

    fn memory_call(&self, args: Value) {
        self.llm.push(Reply::Tool { name: "memory".into(), args });
        self.llm.push(Reply::Text("Noted.".into()));
    }
}

/// The memory tool's result as the model got it in the turn's second request.
fn tool_result(reqs: &[Value]) -> String {
    let msgs = reqs[1]["messages"].as_array().unwrap();
    msgs.iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn two_allowed_users_each_get_their_own_user_profile() {
    let mut t = TwoUsers::start("memory-per-user", "").await;
    t.memory_call(json!({"action": "add", "target": "user", "content": "111 likes tea"}));
    let reqs = t.say(111, "remember: I like tea").await;
    assert!(tool_result(&reqs).contains("\"success\":true"), "{}", tool_result(&reqs));

    // 222's first session: 111's entry is not in its prompt.
    t.memory_call(json!({"action": "add", "target": "user", "content": "222 drinks coffee"}));
    let reqs = t.say(222, "remember: I drink coffee").await;
    let sys = system_of(&reqs[0]);
    assert!(sys.contains("persistent memory") && !sys.contains("111 likes tea"), "{sys}");
    // 222 tries to remove 111's entry: refused, listing 222's own entries only.
    t.memory_call(json!({"action": "remove", "target": "user", "old_text": "likes tea"}));
    let reqs = t.say(222, "forget that I like tea").await;
    let refusal = tool_result(&reqs);
    assert!(refusal.contains("No entry matched 'likes tea'") && refusal.contains("222 drinks coffee"), "{refusal}");
    assert!(!refusal.contains("111 likes tea"), "another user's entry quoted: {refusal}");

    // 111's next session has their own profile, not 222's.
    t.say(111, "/new").await;
    let reqs = t.say(111, "what do I like?").await;
    let sys = system_of(&reqs[0]);
    assert!(sys.contains("USER PROFILE (who the user is)") && sys.contains("111 likes tea"), "{sys}");
    assert!(!sys.contains("222 drinks coffee"), "{sys}");

    let (s, v) = t.gw.get("/api/memory").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["user_profile"], "per_user");
    assert_eq!(v["profiles"]["telegram:111"]["entries"], json!(["111 likes tea"]), "{v}");
    assert_eq!(v["profiles"]["telegram:222"]["entries"], json!(["222 drinks coffee"]), "{v}");
    assert_eq!(v["user"]["entries"], json!([]), "the shared profile is untouched: {v}");
}

#[tokio::test]
async fn shared_mode_keeps_hermes_one_profile_for_everybody() {
    let mut t = TwoUsers::start("memory-shared", "memory:\n  user_profile: shared\n").await;
    t.memory_call(json!({"action": "add", "target": "user", "content": "111 likes tea"}));
    t.say(111, "remember: I like tea").await;
    let reqs = t.say(222, "hello").await;
    assert!(system_of(&reqs[0]).contains("111 likes tea"), "one profile, as Hermes: {}", system_of(&reqs[0]));
    // The documented risk: a refusal lists the one profile's entries, whoever wrote them.
    t.memory_call(json!({"action": "remove", "target": "user", "old_text": "coffee"}));
    let reqs = t.say(222, "forget coffee").await;
    assert!(tool_result(&reqs).contains("111 likes tea"), "{}", tool_result(&reqs));
    let (_, v) = t.gw.get("/api/memory").await;
    assert_eq!((&v["user_profile"], &v["user"]["entries"]), (&json!("shared"), &json!(["111 likes tea"])), "{v}");
    assert_eq!(v["profiles"], json!({}), "{v}");
}

#[tokio::test]
async fn the_api_and_the_cli_show_and_edit_each_users_profile() {
    let home = TempHome::new("memory-users");
    home.write(
        "config.yaml",
        "platforms:\n  telegram:\n    allowed_users: ['111', '222']\nidentities:\n  ann: ['telegram:111', 'slack:U1']\nmemory:\n  user_char_limit: 40\n",
    );
    let gw = Gateway::start(home.path(), &[]);
    let put = |q: &str, body: Value| {
        let (http, url, key) = (gw.http.clone(), format!("{}/api/memory{q}", gw.base), gw.key.clone());
        async move {
            let r = http.put(url).bearer_auth(key).json(&body).send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let (s, v) = put("?user=telegram%3A222", json!({"user": ["likes coffee"]})).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!((&v["owner"], &v["user"]["entries"]), (&json!("telegram:222"), &json!(["likes coffee"])), "{v}");
    // A linked identity's ids all name one profile.
    let (s, v) = put("?user=slack:U1", json!({"user": ["Ann, UTC+1"]})).await;
    assert_eq!((s, &v["owner"]), (200, &json!("id:ann")), "{v}");
    let (s, v) = put("?user=telegram:222", json!({"user": ["a profile far longer than forty characters!"]})).await;
    assert_eq!(s, 400, "{v}");
    let (_, v) = gw.get("/api/memory?user=telegram:111").await;
    assert_eq!((&v["owner"], &v["user"]["entries"]), (&json!("id:ann"), &json!(["Ann, UTC+1"])), "{v}");
    let (_, v) = gw.get("/api/memory").await;
    assert_eq!(v["user_profile"], "per_user");
    assert_eq!(v["user"]["entries"], json!([]), "the shared profile is untouched: {v}");
    assert_eq!(v["profiles"]["telegram:222"]["entries"], json!(["likes coffee"]), "a refused change wrote nothing: {v}");
    let owners: Vec<&String> = v["profiles"].as_object().unwrap().keys().collect();
    assert_eq!(owners, ["id:ann", "telegram:222"]);
    for bad in ["?user=111", "?user=telegram%3A1%202", "?who=telegram:1", "?user=telegram:1&user=telegram:2"] {
        let (s, v) = gw.get(&format!("/api/memory{bad}")).await;
        assert_eq!(s, 400, "{bad}: {v}");
        assert!(v["error"].as_str().is_some_and(|e| e.contains("not a user") || e.contains("user")), "{bad}: {v}");
    }
    let r = gw.http.get(format!("{}/api/memory?user=telegram:222", gw.base)).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 401, "the key first");
    drop(gw);

    let out = cli(home.path(), &["memory", "users", "--json"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let users: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(users.as_array().unwrap().iter().map(|u| u["user"].as_str().unwrap()).collect::<Vec<_>>(), ["id:ann", "telegram:222"]);
    assert_eq!(users[1]["usage"], "30% — 12/40 chars", "{users}");
    home.write("edit.txt", "=== user ===\nlikes tea\n");
    let file = home.path().join("edit.txt");
    let out = cli(home.path(), &["memory", "edit", "--user", "telegram:222", "--file", file.to_str().unwrap()], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("user (telegram:222): ") && stdout(&out).contains("- likes tea"), "{}", stdout(&out));
    let out = cli(home.path(), &["memory", "show", "--user", "telegram:222", "--json"], &[]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["user"]["entries"], json!(["likes tea"]));
    let out = cli(home.path(), &["memory", "show"], &[]);
    assert!(stdout(&out).contains("each user has their own: memory users"), "{}", stdout(&out));
    let out = cli(home.path(), &["memory", "show", "--user", "not-a-user"], &[]);
    assert_eq!(out.status.code(), Some(2), "a usage error");
    assert!(stderr(&out).contains("--user: `not-a-user` is not a user"), "{}", stderr(&out));
}
