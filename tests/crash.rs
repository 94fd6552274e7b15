//! Seeded random crash suite (issue #17, docs/design.md#guarantees).
//!
//! Six lanes, each with its own home (half in `busy_input_mode: queue`, half in the default
//! `interrupt`), restart the real binary again and again. Each run draws, from the seed, a
//! workload (chat messages to the Telegram webhook and `POST /api/messages`, a burst of
//! messages to one busy key, a clock jump that makes one-shot jobs due or missed, or one that
//! lands just before a minute so the slow job overlaps itself) and a crash
//! `HERMES_CRASH_AT=<point>#<n>`: abort on the n-th time the process reaches the named point. A run whose point is not reached within its time is SIGKILLed instead (counted as
//! `kills`, not as a crash). Lanes stop after `MIN_CRASHES / LANES` aborts each; then every lane
//! starts once more without a crash point and must drain everything. Lanes run with
//! `session_reset: none` and `restart_loop_threshold: 1000`, so neither a reset nor the loop
//! suspension (which deliberately leaves a message unanswered) hides a lost message.
//!
//! After every crash the store (the lane's `state.db`) and the fakes are checked:
//!
//! - **Accepted means stored.** A message the gateway answered 200/202 is in a transcript, in
//!   the pending slot or in the FIFO. (Unacknowledged messages are re-sent by the next run,
//!   as Telegram retries a webhook.)
//! - **Answered or woken.** Every stored user message has an assistant message after it, or its
//!   entry still holds a (now abandoned) lease or a resume mark, so a wake exists. At the end
//!   every message has an answer and no lease, slot, queue item, resume mark or running job
//!   is left.
//! - **Never answered twice outside the at-least-once window.** The window: from the append
//!   of a turn's final answer until the lease moves on (to the next stored message, or is
//!   released). A crash inside it leaves a lease over a transcript that ends in an answer; the
//!   resume turn answers again. Each such crash (seen in the store right after it) allows one
//!   more copy of that message's answer, in the transcript and on Telegram; any other copy is
//!   a violation.
//! - **Every occurrence at most once.** Each job is a one-shot with a unique prompt: the model
//!   sees its prompt at most once per claimed attempt, the store holds at most one claim per
//!   attempt and one run record per claim, and Telegram gets at most one message for it (its
//!   output, its failure or its `missed` notice). A third of the jobs are flaky: the fake
//!   model fails their first call (503), so their first attempt fails with no effect and a
//!   retry attempt (`retry~<job>~<fire_at>~2`, its own claim, fired by the ticker once a later
//!   run's clock jump makes it due) runs them again: retries are in the workload and the
//!   occurrence is still delivered at most once. A failure alert or a "recovered" line
//!   (one per failing streak, issue #30) is not a delivery of the occurrence; a one-shot gets
//!   at most one alert.
//! - **Overlap: a skipped occurrence runs nothing.** Each lane also has a slow recurring job
//!   (`s<lane>`, `* * * * *`, `overlap: skip` by default) whose prompt the fake model answers
//!   only after [`SLOW_MS`]. An `Overlap` run jumps the clock to just before a minute, so the
//!   first tick runs the job's overdue occurrence and the tick after the minute finds that
//!   run still running: the new occurrence is claimed and recorded `skipped`. A `skipped` run
//!   record has its claim `skipped`, no session (so no model call) and nothing delivered; a
//!   `skipped` claim has its record; every occurrence has at most one run record; the slow
//!   job's prompt reaches the model, and its answer Telegram, at most once per claim not
//!   skipped, and it is never retried. A job is `running` exactly while it has a running
//!   mark (a crash mid-run leaves both; the next start's recovery clears both), and at the
//!   end no mark is left. The summary prints how many occurrences were skipped by overlap.
//!
//! Prints `seed=S` first and `crashes=N violations=V seed=S` last; replay with
//! `HZ_CRASH_SEED=S` (the schedule of each lane is a pure function of the seed; timing between
//! lanes is not). Each violation is printed with its lane, run and crash point.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

const LANES: usize = 6;
const MIN_CRASHES: usize = 200;
/// A lane gives up after this many runs even if it has not crashed enough (the test then fails).
const MAX_RUNS: usize = 200;
/// Chat keys per lane (Telegram chats and API chats alike).
const CHATS: usize = 3;
/// Marks the prompt of each lane's slow job (`s<lane>`, every minute): the fake model answers
/// it after [`SLOW_MS`], so a run of it is still running when its next occurrence comes due.
const SLOW: &str = "[slow]";
const SLOW_MS: u64 = 2500;
/// An overlap run starts this many seconds (plus the lane's mean startup) before a minute.
const LEAD_SECS: f64 = 2.0;

const CHAT_POINTS: &[&str] =
    &["turn:user_stored", "turn:model_answered", "turn:answer_stored", "turn:reply_delivered", "turn:released", "wake:leased"];
const FIFO_POINTS: &[&str] = &["queue:stored", "queue:popped", "turn:model_answered", "turn:answer_stored", "turn:reply_delivered"];
const SLOT_POINTS: &[&str] = &["queue:stored", "slot:moved", "turn:model_answered", "turn:answer_stored", "turn:reply_delivered"];
const FIRE_POINTS: &[&str] = &[
    "fire:due",
    "fire:claimed",
    "fire:armed",
    "turn:model_answered",
    "turn:answer_stored",
    "delivery:ledger_begun",
    "delivery:sent",
    "delivery:recorded",
    "fire:ran",
    "fire:finalized",
];

#[derive(Clone, Copy, Debug)]
enum Work {
    Chat,
    Busy,
    Fire,
    /// A fire whose clock lands just before a minute, so the slow job's occurrence comes due
    /// while its previous run still runs.
    Overlap,
}

/// One run's draw.
#[derive(Debug)]
struct Plan {
    work: Work,
    point: &'static str,
    hit: u32,
    /// Seconds the lane's clock jumps before the run.
    bump: i64,
    new_jobs: usize,
    /// New messages: (via Telegram, chat index).
    msgs: Vec<(bool, usize)>,
}

struct Msg {
    n: u64,
    text: String,
    tg: bool,
    chat: usize,
    acked: bool,
}

struct Lane {
    id: usize,
    home: TempHome,
    fifo: bool,
    rng: StdRng,
    offset: i64,
    msgs: Vec<Msg>,
    jobs: Vec<String>,
    /// Whether the slow job is in the store.
    slow: bool,
    next: u64,
    /// Extra answers allowed per user text (crashes inside the at-least-once window).
    allow: HashMap<String, usize>,
    /// The window states already counted: (session, transcript length). A state seen again
    /// after a later crash (no resume ran in between) allows nothing more.
    windows: std::collections::HashSet<(String, usize)>,
    aborts: usize,
    /// Aborts per crash point.
    points: HashMap<&'static str, usize>,
    kills: usize,
    runs: usize,
    /// Messages answered more than once (all inside the window, or reported).
    twice: usize,
    /// Time spent waiting for `serve` to listen.
    startup: Duration,
    violations: Vec<String>,
    http: reqwest::Client,
}

/// What the fakes received, counted by text.
struct Seen {
    tg: HashMap<String, usize>,
    prompts: HashMap<String, usize>,
}

fn seen(llm: &FakeLlm, tg: &FakeTelegram) -> Seen {
    let mut s = Seen { tg: HashMap::new(), prompts: HashMap::new() };
    for m in tg.sent() {
        *s.tg.entry(m["text"].as_str().unwrap_or("").to_string()).or_default() += 1;
    }
    for r in llm.requests() {
        *s.prompts.entry(last_user(&r)).or_default() += 1;
    }
    s
}

/// What the lane's store holds.
#[derive(Default)]
struct View {
    entries: Vec<Value>,
    transcripts: HashMap<String, Vec<(String, String)>>,
    queued: Vec<String>,
    runs: HashMap<String, usize>,
    claims: HashMap<String, usize>,
    /// Claims of retry attempts, by job.
    retry_claims: HashMap<String, usize>,
    running_jobs: Vec<String>,
    /// Every claim (retry attempts too): (job id or retry key, fire_at, status).
    claim_rows: Vec<(String, i64, String)>,
    /// Every run record.
    run_docs: Vec<Value>,
    /// Every job: (id, state is `running`, has a running mark).
    marks: Vec<(String, bool, bool)>,
}

fn view(home: &Path) -> View {
    let path = home.join("state.db");
    let mut v = View::default();
    let Ok(c) = rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE) else { return v };
    c.busy_timeout(Duration::from_secs(5)).unwrap();
    let docs = |sql: &str| -> Vec<(String, Value)> {
        let mut st = c.prepare(sql).unwrap();
        st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .unwrap()
            .map(|r| r.unwrap())
            .map(|(k, d)| (k, serde_json::from_str(&d).unwrap()))
            .collect()
    };
    v.entries = docs("SELECT session_key, doc FROM session_entries").into_iter().map(|(_, d)| d).collect();
    for (sid, m) in docs("SELECT session_id, doc FROM messages ORDER BY session_id, seq") {
        let role = m["role"].as_str().unwrap_or("").to_string();
        v.transcripts.entry(sid).or_default().push((role, m["content"].as_str().unwrap_or("").to_string()));
    }
    v.queued = docs("SELECT session_key, doc FROM queue_items").into_iter().map(|(_, d)| d["text"].as_str().unwrap().to_string()).collect();
    for (job, doc) in docs("SELECT job_id, doc FROM runs") {
        *v.runs.entry(job).or_default() += 1;
        v.run_docs.push(doc);
    }
    let mut st = c.prepare("SELECT job_id, fire_at, status FROM claims").unwrap();
    for row in st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?))).unwrap() {
        let row = row.unwrap();
        let job = row.0.clone();
        v.claim_rows.push(row);
        // A retry attempt's claim: `retry~<job_id>~<fire_at>~<n>`.
        match job.strip_prefix("retry~").and_then(|k| k.split('~').next()) {
            Some(base) => *v.retry_claims.entry(base.to_string()).or_default() += 1,
            None => *v.claims.entry(job).or_default() += 1,
        }
    }
    drop(st);
    let jobs = docs("SELECT id, doc FROM jobs");
    v.running_jobs = jobs.iter().filter(|(_, d)| d["state"] == "running").map(|(id, _)| id.clone()).collect();
    v.marks = jobs.into_iter().map(|(id, d)| (id, d["state"] == "running", !d["running"].is_null())).collect();
    v
}

/// User texts of a transcript with no assistant message after them.
fn unanswered(t: &[(String, String)]) -> Vec<String> {
    let last_answer = t.iter().rposition(|(r, _)| r == "assistant");
    t.iter().enumerate().filter(|(i, (r, _))| r == "user" && last_answer.is_none_or(|a| a < *i)).map(|(_, (_, c))| c.clone()).collect()
}

/// The prompt of job `id` (`j<lane>-<n>`): unique, and every third one flaky ([`FAIL_ONCE`]:
/// its first model call fails, so its occurrence is retried).
fn job_prompt(id: &str) -> String {
    let n: u64 = id.rsplit('-').next().and_then(|n| n.parse().ok()).unwrap_or(0);
    if n.is_multiple_of(3) { format!("job-{} {FAIL_ONCE}", &id[1..]) } else { format!("job-{}", &id[1..]) }
}

/// The id of the lane's slow recurring job.
fn slow_id(lane: usize) -> String {
    format!("s{lane}")
}

/// The prompt of the lane's slow job: the fake model answers it after [`SLOW_MS`].
fn slow_prompt(lane: usize) -> String {
    format!("slow-{lane} {SLOW}")
}

fn tg_chat(lane: usize, chat: usize) -> i64 {
    7000 + 10 * lane as i64 + chat as i64
}

/// Starts `serve` on the lane's home; returns the child and its base URL, or None if it died
/// before listening (a crash point reached during the startup sweep).
async fn start(home: &Path, offset: i64, crash: Option<&str>) -> (Child, Option<String>) {
    let mut cmd = Command::new(bin());
    cmd.args(["--home", home.to_str().unwrap(), "serve", "--listen", "127.0.0.1:0"])
        .env_remove("HERMES_HOME")
        .env("API_SERVER_KEY", API_KEY)
        .env("TELEGRAM_BOT_TOKEN", "123:abc")
        .env("TELEGRAM_WEBHOOK_SECRET", "tg-secret")
        .env("HERMES_CLOCK_OFFSET_SECS", offset.to_string())
        .env("RUST_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(c) = crash {
        cmd.env("HERMES_CRASH_AT", c);
    }
    let mut child = cmd.spawn().unwrap();
    let rx = listening(&mut child);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(addr) = rx.try_recv() {
            return (child, Some(addr));
        }
        if child.try_wait().unwrap().is_some() {
            return (child, None);
        }
        assert!(Instant::now() < deadline, "serve neither listened nor exited within 20 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn listening(child: &mut Child) -> Receiver<String> {
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("listening on ").nth(1) {
                tx.send(rest.split_whitespace().next().unwrap_or("").to_string()).ok();
            }
        }
    });
    rx
}

/// Waits until the child exits or `until`; None if it is still running.
async fn exited(child: &mut Child, until: Instant) -> Option<std::process::ExitStatus> {
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        if Instant::now() >= until {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Sends one message; whether the gateway accepted it (200/202 with a body it could write).
async fn send(http: reqwest::Client, base: String, lane: usize, n: u64, text: String, tg: bool, chat: usize) -> bool {
    let r = if tg {
        let update = tg_update(lane as i64 * 1_000_000 + n as i64, n as i64, 42, tg_chat(lane, chat), &text);
        http.post(format!("{base}/webhooks/telegram")).header("X-Telegram-Bot-Api-Secret-Token", "tg-secret").json(&update).send().await
    } else {
        let body = json!({"chat_id": format!("l{lane}c{chat}"), "user_id": "u1", "text": text, "message_id": format!("m{n}")});
        http.post(format!("{base}/api/messages")).bearer_auth(API_KEY).json(&body).send().await
    };
    match r {
        Ok(r) if matches!(r.status().as_u16(), 200 | 202) => r.json::<Value>().await.is_ok_and(|b| b["ok"] != false),
        _ => false,
    }
}

impl Lane {
    fn new(id: usize, seed: u64, llm: &FakeLlm, tg: &FakeTelegram) -> Self {
        let fifo = id.is_multiple_of(2);
        let home = TempHome::new(&format!("crash{id}"));
        let extra = format!(
            "timezone: UTC\ncron:\n  tick_interval_seconds: 1\n  wrap_response: false\n  retry:\n    delays: [30, 60]\nagent:\n  api_max_retries: 1\nsession_reset:\n  mode: none\nrestart_loop_threshold: 1000\nbusy_input_mode: {}\ndelivery:\n  allow_targets: [\"telegram:{}\"]\n",
            if fifo { "queue" } else { "interrupt" },
            tg_chat(id, 9)
        );
        home.write("config.yaml", &config(Some(llm), Some(tg), &extra));
        let rng = StdRng::seed_from_u64(seed ^ (0x9e37_79b9_7f4a_7c15u64.wrapping_mul(id as u64 + 1)));
        let http = hermes_zero::clients::client_builder().timeout(Duration::from_secs(5)).pool_max_idle_per_host(0).build().unwrap();
        Self {
            id,
            home,
            fifo,
            rng,
            offset: 0,
            msgs: Vec::new(),
            jobs: Vec::new(),
            slow: false,
            next: 0,
            allow: HashMap::new(),
            windows: Default::default(),
            aborts: 0,
            points: HashMap::new(),
            kills: 0,
            runs: 0,
            twice: 0,
            startup: Duration::ZERO,
            violations: Vec::new(),
            http,
        }
    }

    fn plan(&mut self) -> Plan {
        let r = &mut self.rng;
        let work = match r.random_range(0..20) {
            0..=7 => Work::Chat,
            8..=13 => Work::Busy,
            14..=17 => Work::Fire,
            _ => Work::Overlap,
        };
        let points = match work {
            Work::Chat => CHAT_POINTS,
            Work::Busy if self.fifo => FIFO_POINTS,
            Work::Busy => SLOT_POINTS,
            Work::Fire | Work::Overlap => FIRE_POINTS,
        };
        let point = points[r.random_range(0..points.len())];
        let hit = match work {
            Work::Busy | Work::Overlap => r.random_range(1..=3),
            _ if r.random_bool(0.7) => 1,
            _ => 2,
        };
        let bump = match work {
            Work::Fire | Work::Overlap => r.random_range(61..=200),
            _ => r.random_range(0..=2),
        };
        let new_jobs = if r.random_bool(0.6) { r.random_range(1..=2) } else { 0 };
        let msgs = match work {
            Work::Chat => (0..r.random_range(1..=3)).map(|_| (r.random_bool(0.6), r.random_range(0..CHATS))).collect(),
            Work::Busy => {
                let (tg, chat) = (r.random_bool(0.7), r.random_range(0..CHATS));
                vec![(tg, chat); r.random_range(3..=5)]
            }
            Work::Fire | Work::Overlap => (0..r.random_range(0..=1)).map(|_| (r.random_bool(0.5), r.random_range(0..CHATS))).collect(),
        };
        Plan { work, point, hit, bump, new_jobs, msgs }
    }

    /// Re-sends unacknowledged messages, creates jobs and sends the plan's new messages, all
    /// at once; records which were accepted.
    async fn workload(&mut self, base: &str, plan: &Plan) {
        for (tg, chat) in &plan.msgs {
            self.next += 1;
            let text = format!("m{}-{}", self.id, self.next);
            self.msgs.push(Msg { n: self.next, text, tg: *tg, chat: *chat, acked: false });
        }
        let mut sends = Vec::new();
        for (i, m) in self.msgs.iter().enumerate().filter(|(_, m)| !m.acked) {
            let (http, base, text) = (self.http.clone(), base.to_string(), m.text.clone());
            sends.push((i, tokio::spawn(send(http, base, self.id, m.n, text, m.tg, m.chat))));
        }
        let mut creates = Vec::new();
        if !self.slow {
            // Until it is stored (a crash may beat the create; a second create answers 400).
            let body = json!({"id": slow_id(self.id), "schedule": "* * * * *", "prompt": slow_prompt(self.id),
                "deliver": format!("telegram:{}", tg_chat(self.id, 9))});
            self.http.post(format!("{base}/api/jobs")).bearer_auth(API_KEY).json(&body).send().await.ok();
        }
        for _ in 0..plan.new_jobs {
            self.next += 1;
            let id = format!("j{}-{}", self.id, self.next);
            self.jobs.push(id.clone());
            let body =
                json!({"id": id, "schedule": "in 1m", "prompt": job_prompt(&id), "deliver": format!("telegram:{}", tg_chat(self.id, 9))});
            let req = self.http.post(format!("{base}/api/jobs")).bearer_auth(API_KEY).json(&body);
            creates.push(tokio::spawn(async move { req.send().await.map(|r| r.status().as_u16()) }));
        }
        for (i, t) in sends {
            if t.await.unwrap() {
                self.msgs[i].acked = true;
            }
        }
        for t in creates {
            // A refused job would leave the fire workload empty: no crash may hide that.
            if let Ok(status) = t.await.unwrap()
                && status >= 400
            {
                self.violations.push(format!("lane {}: POST /api/jobs answered {status}", self.id));
            }
        }
    }

    /// One run: start with a crash point, drive the workload, wait for the abort (or kill),
    /// then check the store and the fakes.
    async fn run(&mut self, llm: &FakeLlm, tg: &FakeTelegram) {
        let plan = self.plan();
        self.runs += 1;
        self.offset += plan.bump;
        if matches!(plan.work, Work::Overlap) {
            // Land the lane's clock LEAD_SECS (plus the mean startup) before a minute: the
            // first tick runs the slow job's overdue occurrence with the next one, the minute,
            // only a second or two away, and the tick after the minute finds the run running.
            let mean = self.startup.as_secs_f64() / self.runs as f64;
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
            let at = (now + self.offset as f64 + LEAD_SECS + mean).rem_euclid(60.0);
            self.offset += (60.0 - at).floor() as i64;
        }
        let crash = format!("{}#{}", plan.point, plan.hit);
        let t = Instant::now();
        let (mut child, base) = start(self.home.path(), self.offset, Some(&crash)).await;
        let started = Instant::now();
        self.startup += started - t;
        if let Some(base) = &base {
            self.workload(base, &plan).await;
        }
        // Fires wait for the ticker's first tick (1 s); drains of a busy key run after the replies.
        let linger = Duration::from_millis(match plan.work {
            Work::Chat => 350,
            Work::Busy => 600,
            Work::Fire => 1900,
            // The first tick (1 s), then the slow run (SLOW_MS) with the skip beside it.
            Work::Overlap => 1000 + SLOW_MS + 300,
        });
        let until = (started + linger).max(Instant::now() + Duration::from_millis(150));
        match exited(&mut child, until).await {
            Some(s) if s.signal() == Some(6) => {
                self.aborts += 1;
                *self.points.entry(plan.point).or_default() += 1;
            }
            Some(s) => self.violations.push(format!("lane {} run {}: serve exited unexpectedly ({s}) with {crash}", self.id, self.runs)),
            None => {
                child.kill().ok();
                child.wait().ok();
                self.kills += 1;
            }
        }
        let ctx = format!("lane {} run {} crash={crash} work={:?}", self.id, self.runs, plan.work);
        self.check(&ctx, false, llm, tg);
    }

    /// The final run: no crash point; re-sends what was never accepted and waits (bounded)
    /// until every key and job is at rest, then checks strictly.
    async fn finish(&mut self, llm: &FakeLlm, tg: &FakeTelegram) {
        self.offset += 2;
        let (mut child, base) = start(self.home.path(), self.offset, None).await;
        let base = base.expect("the final serve listens");
        let deadline = Instant::now() + Duration::from_secs(30);
        let plan = Plan { work: Work::Chat, point: "", hit: 0, bump: 0, new_jobs: 0, msgs: vec![] };
        while self.msgs.iter().any(|m| !m.acked) && Instant::now() < deadline {
            self.workload(&base, &plan).await;
        }
        // Past the first tick, so a due job (the slow one often is) runs and is waited for
        // rather than killed in flight.
        tokio::time::sleep(Duration::from_millis(1200)).await;
        loop {
            let v = view(self.home.path());
            let busy = v
                .entries
                .iter()
                .any(|e| !e["lease"].is_null() || e["resume_pending"] == true || e["pending"].as_array().is_some_and(|p| !p.is_empty()));
            if (!busy && v.queued.is_empty() && v.running_jobs.is_empty()) || Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        child.kill().ok();
        child.wait().ok();
        self.check(&format!("lane {} final run", self.id), true, llm, tg);
    }

    /// Checks the invariants of the module doc; `strict` at the end (everything answered).
    fn check(&mut self, ctx: &str, strict: bool, llm: &FakeLlm, tg: &FakeTelegram) {
        let v = view(self.home.path());
        let s = seen(llm, tg);
        let mut bad = Vec::new();
        let by_session: HashMap<&str, &Value> = v.entries.iter().map(|e| (e["session_id"].as_str().unwrap_or(""), e)).collect();
        // The at-least-once window: a lease over a transcript that ends in an answer.
        if !strict {
            for e in v.entries.iter().filter(|e| !e["lease"].is_null()) {
                let sid = e["session_id"].as_str().unwrap_or("");
                let t = v.transcripts.get(sid).map(Vec::as_slice).unwrap_or(&[]);
                if t.last().is_some_and(|(r, _)| r == "assistant")
                    && self.windows.insert((sid.to_string(), t.len()))
                    && let Some((_, u)) = t.iter().rev().find(|(r, _)| r == "user")
                {
                    *self.allow.entry(u.clone()).or_default() += 1;
                }
            }
        }
        let mut stored: Vec<&str> = v.queued.iter().map(String::as_str).collect();
        for e in &v.entries {
            stored.extend(e["pending"].as_array().into_iter().flatten().filter_map(|p| p["text"].as_str()));
        }
        let mut answers: HashMap<&str, usize> = HashMap::new();
        for (sid, t) in v.transcripts.iter().filter(|(sid, _)| !sid.starts_with("cron_")) {
            stored.extend(t.iter().filter(|(r, _)| r == "user").map(|(_, c)| c.as_str()));
            for (_, c) in t.iter().filter(|(r, _)| r == "assistant") {
                *answers.entry(c.as_str()).or_default() += 1;
            }
            let open = unanswered(t);
            let woken = by_session.get(sid.as_str()).is_some_and(|e| !e["lease"].is_null() || e["resume_pending"] == true);
            if !open.is_empty() && (strict || !woken) {
                bad.push(format!("{ctx}: session {sid} has unanswered {open:?} and no wake"));
            }
        }
        for m in &self.msgs {
            if (m.acked || strict) && !stored.contains(&m.text.as_str()) {
                bad.push(format!("{ctx}: accepted message {} (acked={}) is not stored", m.text, m.acked));
            }
            let answer = format!("echo: {}", m.text);
            let limit = 1 + self.allow.get(&m.text).copied().unwrap_or(0);
            let (a, t) = (answers.get(answer.as_str()).copied().unwrap_or(0), s.tg.get(&answer).copied().unwrap_or(0));
            if strict && a.max(t) > 1 {
                self.twice += 1;
            }
            if a > limit || t > limit {
                bad.push(format!("{ctx}: {} answered {a}× in the store, {t}× on Telegram (allowed {limit})", m.text));
            }
        }
        for id in &self.jobs {
            let prompt = job_prompt(id);
            let runs = s.prompts.get(&prompt).copied().unwrap_or(0);
            let records = v.runs.get(id).copied().unwrap_or(0);
            let claims = v.claims.get(id).copied().unwrap_or(0);
            // At most one retry (the lanes' delays allow two, but a flaky job fails once).
            let retries = v.retry_claims.get(id).copied().unwrap_or(0);
            // A failure alert (issue #30) is one more message per failing streak, not a
            // delivery of the occurrence: a one-shot has one streak, so at most one alert.
            let named = |t: &str| t.contains(&format!("'{id}'"));
            let alert = |t: &str| t.starts_with("🚨 Scheduled job '") || t.starts_with("✅ Scheduled job '");
            let count = |f: &dyn Fn(&str) -> bool| s.tg.iter().filter(|(t, _)| f(t)).map(|(_, n)| n).sum::<usize>();
            let sent = count(&|t| t == format!("echo: {prompt}") || (named(t) && !alert(t)));
            let alerts = count(&|t| named(t) && alert(t));
            let attempts = claims + retries;
            if claims > 1
                || retries > usize::from(prompt.contains(FAIL_ONCE))
                || runs > attempts
                || records > attempts
                || sent > 1
                || alerts > 1
            {
                bad.push(format!(
                    "{ctx}: job {id} ran {runs}× (model), {claims} claims + {retries} retry claims, {records} run records, delivered {sent}×, {alerts} alerts"
                ));
            }
        }
        self.slow |= v.marks.iter().any(|(id, _, _)| *id == slow_id(self.id));
        bad.extend(self.check_overlap(ctx, &v, &s));
        if strict && !v.running_jobs.is_empty() {
            bad.push(format!("{ctx}: jobs still running: {:?}", v.running_jobs));
        }
        for (id, state, mark) in &v.marks {
            // A crash mid-run leaves both; recovery clears both (the final run's startup sweep).
            if state != mark || (strict && *mark) {
                bad.push(format!("{ctx}: job {id} running={state} with running mark={mark}"));
            }
        }
        // Report each problem once (later checks see the same state again).
        for b in bad {
            let key = b.split_once(": ").map_or(b.clone(), |(_, what)| what.to_string());
            if !self.violations.iter().any(|v| v.ends_with(&key)) {
                self.violations.push(b);
            }
        }
    }
}

impl Lane {
    /// The overlap invariants: every occurrence has at most one run record; a `skipped` one has
    /// its claim `skipped`, no session (so no model call) and nothing delivered; the slow
    /// job's prompt reached the model, and its answer Telegram, at most once per claim that
    /// was not skipped (a crash between a skip's claim and its record leaves it `claimed`).
    fn check_overlap(&self, ctx: &str, v: &View, s: &Seen) -> Vec<String> {
        let mut bad = Vec::new();
        let mut per_occ: HashMap<(String, String, u64), usize> = HashMap::new();
        for r in &v.run_docs {
            let key = (
                r["job_id"].as_str().unwrap_or("").to_string(),
                r["fire_at"].as_str().unwrap_or("").to_string(),
                r["attempt"].as_u64().unwrap_or(1),
            );
            *per_occ.entry(key).or_default() += 1;
        }
        for ((job, at, attempt), n) in per_occ.iter().filter(|(_, n)| **n > 1) {
            bad.push(format!("{ctx}: occurrence {job}@{at} attempt {attempt} has {n} run records"));
        }
        let claim_status = |job: &str, at: i64| v.claim_rows.iter().find(|(j, t, _)| j == job && *t == at).map(|(_, _, st)| st.as_str());
        for r in &v.run_docs {
            let (job, at) = (r["job_id"].as_str().unwrap_or(""), r["fire_at"].as_str().unwrap_or(""));
            let t = chrono::DateTime::parse_from_rfc3339(at).map(|t| t.timestamp()).unwrap_or(0);
            // The session a run of this occurrence would have (the lanes' timezone is UTC).
            let session = format!("cron_{job}_{}", chrono::DateTime::from_timestamp(t, 0).unwrap().format("%Y%m%d_%H%M%S"));
            if r["status"] != "skipped" {
                // Keeps the name above honest: a first attempt that ran has that session.
                if r["attempt"] == 1 && r["trigger"] == "ticker" && r["session_id"] != "" && r["session_id"] != session.as_str() {
                    bad.push(format!("{ctx}: run of {job}@{at} has session {} (expected {session})", r["session_id"]));
                }
                continue;
            }
            if claim_status(job, t) != Some("skipped") || r["session_id"] != "" || v.transcripts.contains_key(&session) {
                bad.push(format!(
                    "{ctx}: skipped {job}@{at} has claim {:?}, session {} (stored: {})",
                    claim_status(job, t),
                    r["session_id"],
                    v.transcripts.contains_key(&session)
                ));
            }
        }
        for (job, at, _) in v.claim_rows.iter().filter(|(_, _, st)| st == "skipped") {
            let at = chrono::DateTime::from_timestamp(*at, 0).unwrap();
            let recorded = v.run_docs.iter().any(|r| {
                r["job_id"] == job.as_str()
                    && r["status"] == "skipped"
                    && r["fire_at"].as_str().and_then(|f| chrono::DateTime::parse_from_rfc3339(f).ok()).is_some_and(|f| f == at)
            });
            if !recorded {
                bad.push(format!("{ctx}: claim {job}@{at} is skipped with no skipped run record"));
            }
        }
        let (id, prompt) = (slow_id(self.id), slow_prompt(self.id));
        let retry = format!("retry~{id}~");
        let claims: Vec<&str> = v
            .claim_rows
            .iter()
            .filter(|(j, _, _)| *j == id || j.starts_with(&retry))
            .map(|(j, _, st)| if j.starts_with(&retry) { "retry" } else { st.as_str() })
            .collect();
        let ran = claims.iter().filter(|st| **st != "skipped").count();
        let calls = s.prompts.iter().filter(|(p, _)| p.contains(&prompt)).map(|(_, n)| n).sum::<usize>();
        let sent = s.tg.iter().filter(|(t, _)| t.starts_with("echo: ") && t.contains(&prompt)).map(|(_, n)| n).sum::<usize>();
        if claims.contains(&"retry") || calls > ran || sent > ran {
            bad.push(format!("{ctx}: slow job {id}: claims {claims:?}, {calls} model calls, {sent} answers on Telegram"));
        }
        bad
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn seeded_random_crashes_keep_the_invariants() {
    let seed: u64 = std::env::var("HZ_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 % 1_000_000_007);
    println!("seed={seed}");
    eprintln!("seed={seed} (replay with HZ_CRASH_SEED={seed})");
    let t0 = Instant::now();
    let llm = FakeLlm::start().await;
    llm.set_delay(60);
    llm.slow_when(SLOW_MS, |r| last_user(r).contains(SLOW));
    let tg = FakeTelegram::start().await;
    // HZ_CRASH_MIN raises (or, to debug, lowers) the number of crashes.
    let min: usize = std::env::var("HZ_CRASH_MIN").ok().and_then(|s| s.parse().ok()).unwrap_or(MIN_CRASHES);
    let per_lane = min.div_ceil(LANES);
    let mut tasks = Vec::new();
    for id in 0..LANES {
        let (llm, tg) = (llm.clone(), tg.clone());
        tasks.push(tokio::spawn(async move {
            let mut lane = Lane::new(id, seed, &llm, &tg);
            while lane.aborts < per_lane && lane.runs < MAX_RUNS {
                lane.run(&llm, &tg).await;
            }
            lane.finish(&llm, &tg).await;
            lane
        }));
    }
    let mut lanes = Vec::new();
    for t in tasks {
        lanes.push(t.await.unwrap());
    }
    let crashes: usize = lanes.iter().map(|l| l.aborts).sum();
    let kills: usize = lanes.iter().map(|l| l.kills).sum();
    let runs: usize = lanes.iter().map(|l| l.runs).sum();
    let violations: Vec<&String> = lanes.iter().flat_map(|l| &l.violations).collect();
    let msgs: usize = lanes.iter().map(|l| l.msgs.len()).sum();
    let jobs: usize = lanes.iter().map(|l| l.jobs.len()).sum();
    let mut points: Vec<(&str, usize)> = Vec::new();
    for l in &lanes {
        for (p, n) in &l.points {
            match points.iter_mut().find(|(q, _)| q == p) {
                Some((_, m)) => *m += n,
                None => points.push((p, *n)),
            }
        }
    }
    points.sort();
    let window: usize = lanes.iter().flat_map(|l| l.allow.values()).sum();
    let twice: usize = lanes.iter().map(|l| l.twice).sum();
    println!("aborts by point: {points:?}");
    println!("crashes inside the at-least-once window: {window}; messages answered more than once there: {twice}");
    for v in &violations {
        println!("VIOLATION {v}");
    }
    let startup = lanes.iter().map(|l| l.startup).sum::<Duration>().as_millis() / runs.max(1) as u128;
    println!("runs={runs} kills={kills} messages={msgs} jobs={jobs} startup={startup}ms elapsed={:.1}s", t0.elapsed().as_secs_f64());
    // Retries are in the workload: flaky jobs' failed first attempts were retried.
    let retried: usize = lanes.iter().map(|l| view(l.home.path()).retry_claims.values().sum::<usize>()).sum();
    let claimed: usize = lanes.iter().map(|l| view(l.home.path()).claims.values().sum::<usize>()).sum();
    // Overlap is in the workload: slow jobs' occurrences came due while a run still ran.
    let skipped: usize = lanes.iter().map(|l| view(l.home.path()).run_docs.iter().filter(|r| r["status"] == "skipped").count()).sum();
    let slow_calls: usize = llm.requests().iter().filter(|r| last_user(r).contains(SLOW)).count();
    println!("occurrences claimed={claimed} retry attempts claimed={retried} skipped by overlap={skipped} slow runs={slow_calls}");
    println!("crashes={crashes} violations={} seed={seed}", violations.len());
    assert!(retried > 0 || min < MIN_CRASHES, "no retry attempt ran (seed={seed})");
    assert!(skipped > 0 || min < MIN_CRASHES, "no occurrence was skipped by overlap (seed={seed})");
    assert!(violations.is_empty(), "{} violations (seed={seed}); see VIOLATION lines", violations.len());
    assert!(crashes >= min, "only {crashes} crashes in {runs} runs (seed={seed})");
}
