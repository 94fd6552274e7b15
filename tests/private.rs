//! Black-box tests of private files and a quiet CLI: the home is 0700, `state.db` and the key
//! files 0600 (existing ones are tightened at start); a command prints its result on stdout
//! and nothing on stderr unless something is wrong, `-v` shows info logs.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

/// The binary as a user runs it: no `RUST_LOG`.
fn run(home: &Path, args: &[&str]) -> Output {
    Command::new(bin()).arg("--home").arg(home).args(args).env_remove("RUST_LOG").env_remove("HERMES_HOME").output().unwrap()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn set_mode(p: &Path, m: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
}

#[test]
fn a_new_home_and_its_store_are_private() {
    let parent = TempHome::new("private-new");
    let home = parent.path().join("fresh");
    let o = run(&home, &["cron", "list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(mode(&home), 0o700);
    let db = home.join("state.db");
    assert_eq!(mode(&db), 0o600);
    for side in ["state.db-wal", "state.db-shm"] {
        if home.join(side).exists() {
            assert_eq!(mode(&home.join(side)), 0o600, "{side}");
        }
    }
}

#[test]
fn existing_files_are_tightened_at_start() {
    let home = TempHome::new("private-old");
    assert!(run(home.path(), &["cron", "list"]).status.success());
    home.write("api_key", "k");
    home.write("chronos-dev/key.pem", "-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n");
    for (f, m) in [("state.db", 0o644), ("api_key", 0o644), ("chronos-dev/key.pem", 0o664)] {
        set_mode(&home.path().join(f), m);
    }
    set_mode(home.path(), 0o755);
    let o = run(home.path(), &["sessions", "list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(mode(home.path()), 0o700);
    for f in ["state.db", "api_key", "chronos-dev/key.pem"] {
        assert_eq!(mode(&home.path().join(f)), 0o600, "{f}");
    }
}

#[test]
fn cli_commands_print_results_on_stdout_and_nothing_on_stderr() {
    let home = TempHome::new("quiet");
    let o = run(home.path(), &["cron", "add", "every 1h", "stretch", "--name", "stretch"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "stretch");
    assert_eq!(stderr(&o), "", "no info logs by default");
    for args in [&["cron", "list"][..], &["cron", "list", "--all", "--json"], &["sessions", "list"], &["cron", "sync"]] {
        let o = run(home.path(), args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(!stdout(&o).is_empty(), "{args:?} prints its result");
        assert_eq!(stderr(&o), "", "{args:?} writes nothing to stderr");
    }
    // `-v` shows the info logs.
    let o = run(home.path(), &["-v", "cron", "add", "every 2h", "water", "--name", "water"]);
    assert!(o.status.success());
    assert_eq!(stdout(&o).trim(), "water");
    assert!(stderr(&o).contains("INFO") && stderr(&o).contains("created `water`"), "{}", stderr(&o));
    // Errors still go to stderr.
    let o = run(home.path(), &["cron", "run", "nope"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no job `nope`"), "{}", stderr(&o));
}
