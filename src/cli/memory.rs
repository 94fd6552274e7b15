//! `hermes-zero memory show|edit [--user USER]|users`: the agent's memory stores from the
//! terminal, through the same use cases as the dashboard's Memory tab (docs/design.md#memory):
//! its notes, and the shared user profile or one user's own (docs/who-sees-what.md).

use super::MemoryCmd;
use crate::app::{App, AppError, Memory};
use crate::core::memory::{edit_text, parse_edit_text};
use anyhow::Context;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Runs one `memory` sub-command.
pub async fn run(app: App, cmd: MemoryCmd) -> anyhow::Result<ExitCode> {
    match cmd {
        MemoryCmd::Show { json, user } => match view(&app, user.as_deref()) {
            Ok(m) => show(&m, json).await,
            Err(code) => Ok(code),
        },
        MemoryCmd::Edit { file, user } => match view(&app, user.as_deref()) {
            Ok(m) => edit(&m, file).await,
            Err(code) => Ok(code),
        },
        MemoryCmd::Users { json } => users(&app, json).await,
    }
}

/// The view on `--user`'s profile (none: the shared one); a malformed user is a usage error
/// (exit 2), told before anything is read.
fn view(app: &App, user: Option<&str>) -> Result<Memory, ExitCode> {
    app.memory().user(user).map_err(|e| {
        eprintln!("hermes-zero: --user: {e}");
        ExitCode::from(2)
    })
}

async fn show(memory: &Memory, json: bool) -> anyhow::Result<ExitCode> {
    let v = memory.show().await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    for t in ["memory", "user"] {
        let s = &v[t];
        let state = if s["enabled"].as_bool().unwrap_or(true) { "" } else { " (disabled)" };
        let whose = match (t, v["owner"].as_str()) {
            ("user", Some(owner)) => format!(" ({owner})"),
            ("user", None) if v["user_profile"] == "per_user" => " (shared; each user has their own: memory users)".into(),
            _ => String::new(),
        };
        println!("{t}{whose}: {}{state}", s["usage"].as_str().unwrap_or_default());
        for e in s["entries"].as_array().into_iter().flatten() {
            println!("  - {}", e.as_str().unwrap_or_default().replace('\n', "\n    "));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `memory users`: one line per user with a profile of their own.
async fn users(app: &App, json: bool) -> anyhow::Result<ExitCode> {
    let list = app.memory().users().await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&list)?);
    } else if list.is_empty() {
        println!("no user has a profile of their own yet (memory.user_profile: per_user; docs/who-sees-what.md)");
    } else {
        for u in &list {
            println!("{}  {} entries  {}", u["user"].as_str().unwrap_or_default(), u["entries"], u["usage"].as_str().unwrap_or_default());
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn edit(memory: &Memory, file: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let before = edit_text(&memory.entries().await?);
    let text = match file {
        Some(p) if p.as_os_str() == "-" => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s).context("cannot read stdin")?;
            s
        }
        Some(p) => std::fs::read_to_string(&p).with_context(|| format!("cannot read {}", p.display()))?,
        None => match in_editor(&before)? {
            Some(t) => t,
            None => {
                println!("No changes.");
                return Ok(ExitCode::SUCCESS);
            }
        },
    };
    let stores = match parse_edit_text(&text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hermes-zero: memory not changed: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    match memory.set(&stores).await {
        Ok(()) => {}
        Err(AppError::BadRequest(e)) => {
            eprintln!("hermes-zero: memory not changed: {e}");
            return Ok(ExitCode::FAILURE);
        }
        Err(e) => return Err(e.into()),
    }
    show(memory, false).await
}

/// Opens `text` in `$VISUAL` / `$EDITOR` (default `vi`) on a private temp file (mode 0600,
/// removed afterwards); the edited text, or None when it was saved unchanged.
fn in_editor(text: &str) -> anyhow::Result<Option<String>> {
    let editor = ["VISUAL", "EDITOR"]
        .into_iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| "vi".into());
    let path = std::env::temp_dir().join(format!("hermes-zero-memory-{:016x}.md", rand::random::<u64>()));
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let mut f = opts.open(&path).with_context(|| format!("cannot create {}", path.display()))?;
    std::io::Write::write_all(&mut f, text.as_bytes())?;
    drop(f);
    let result = run_editor(&editor, &path).and_then(|()| Ok(std::fs::read_to_string(&path)?));
    std::fs::remove_file(&path).ok();
    let after = result?;
    Ok((after != text).then_some(after))
}

/// Runs the editor on `path` through the shell (so `code --wait` works) and waits for it.
fn run_editor(editor: &str, path: &Path) -> anyhow::Result<()> {
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(path)
        .status()
        .with_context(|| format!("cannot start the editor `{editor}`"))?;
    anyhow::ensure!(status.success(), "the editor `{editor}` exited with {status}; memory not changed");
    Ok(())
}
