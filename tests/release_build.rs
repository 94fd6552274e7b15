//! A build without the `testing` feature (every release build) ignores the testing aids:
//! `HERMES_CRASH_AT` never aborts the process and `HERMES_CLOCK_OFFSET_SECS` does not move the
//! clock (docs/design.md#guarantees). Runs only in such a build (`cargo test`, default
//! features); `scripts/test.sh` builds with every feature, where the aids are on.

#![cfg(not(feature = "testing"))]
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_testing_aids_have_no_effect_without_the_testing_feature() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("release-aids");
    home.write("config.yaml", &config(Some(&llm), None, ""));
    // A crash point on the message path does not abort the process.
    let mut gw = Gateway::start(home.path(), &[("HERMES_CRASH_AT", "turn:user_stored")]);
    let (status, body) = gw.post_message(json!({"text": "hello", "chat_id": "c1", "user_id": "u1"})).await;
    assert_eq!(status, 200, "{body}");
    assert!(gw.child.try_wait().unwrap().is_none(), "the crash point aborted a release build");
    gw.kill();
    // An hourly job is not due an hour and a minute "later": the clock was not shifted.
    let o = cli(home.path(), &["cron", "add", "every 1h", "report", "--name", "hourly"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let calls = llm.calls();
    let o = cli(home.path(), &["cron", "tick"], &[("HERMES_CLOCK_OFFSET_SECS", "3660")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(llm.calls(), calls, "the job ran: the clock offset was honoured");
    assert!(stderr(&o).contains("HERMES_CLOCK_OFFSET_SECS is ignored"), "the ignored variable is named:\n{}", stderr(&o));
}
