//! Command bodies: each builds what it needs and calls the use cases.

use super::{Command, SessionsCmd};
use crate::app::{App, Inbound, ReplyPath, Reset};
use crate::config::Loaded;
use crate::core::ids::{ChatType, Origin, SessionId, SessionKey};
use crate::runtime;
use anyhow::Context;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// Runs one command.
pub async fn dispatch(cmd: Command, home: PathBuf, cfg: Loaded) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Serve { listen, idle_exit } => {
            let polling = runtime::telegram_poll::Polling::from_config(&cfg);
            let m = &cfg.model.primary;
            tracing::info!(provider = m.provider, wire = m.wire.as_str(), model = %m.model, why = %m.why, "model provider");
            let wired = runtime::wire(&home, cfg).await?;
            let listener = tokio::net::TcpListener::bind(&listen).await.with_context(|| format!("cannot listen on {listen}"))?;
            let idle_exit = idle_exit.map(std::time::Duration::from_secs);
            runtime::serve::run(listener, wired, runtime::serve::shutdown_signal(), idle_exit, polling).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Chat => chat(runtime::wire(&home, cfg).await?.app).await,
        Command::Mcp { action } => super::mcp::run(runtime::build_app(&home, cfg).await?, action).await,
        Command::Sessions { action } => sessions(runtime::build_app(&home, cfg).await?, action).await,
        Command::Cron { action } => super::cron::run(runtime::build_app(&home, cfg).await?, *action).await,
        Command::Memory { action } => super::memory::run(runtime::build_app(&home, cfg).await?, action).await,
        Command::Skills { action } => super::skills::run(runtime::build_app(&home, cfg).await?, action).await,
        Command::Pairing { action } => super::pairing::run(&home, cfg, action).await,
        Command::ChronosDev { listen, duplicates, audience, fire_early_secs } => {
            let listener = tokio::net::TcpListener::bind(&listen).await.with_context(|| format!("cannot listen on {listen}"))?;
            let issuer = format!("http://{}", listener.local_addr()?);
            let audience = audience.unwrap_or_else(|| cfg.fire_audience());
            let key = crate::dev::chronos::load_or_create_key(&home)?;
            let clock = runtime::clock(&cfg);
            let state = crate::dev::chronos::ChronosDev::new(key, issuer, audience, duplicates, clock)?;
            state.set_fire_early(fire_early_secs);
            crate::dev::chronos::run(listener, state, runtime::serve::shutdown_signal()).await?;
            Ok(ExitCode::SUCCESS)
        }
        #[cfg(feature = "testing")]
        Command::McpDevStdio => {
            crate::dev::mcp_stdio::run().await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Telegram { action } => super::setup::telegram(&cfg, action).await,
        Command::Webhook { action } => super::webhook::run(&cfg, action).await,
        Command::Discord { action } => super::setup::discord(&cfg, action).await,
        Command::Doctor { create_table } => Ok(doctor(&home, cfg, create_table).await),
        Command::Import { hermes_home, json } => {
            let src = hermes_home.unwrap_or_else(|| super::import::default_source(&crate::config::Env::from_process()));
            let in_use = cfg.file.clone();
            super::import::run(runtime::build_app(&home, cfg).await?, &src, in_use.as_deref(), json).await
        }
    }
}

async fn chat(app: App) -> anyhow::Result<ExitCode> {
    let user =
        std::env::var("USER").ok().filter(|u| !u.is_empty() && !u.contains(':') && !u.contains(' ')).unwrap_or_else(|| "operator".into());
    let origin = Origin::new("local", "terminal", ChatType::Dm, Some(&user), None)?;
    println!("hermes-zero chat — model: {}, store: {}. Type /exit (or Ctrl-D) to leave.", app.model_name(), app.store_kind());
    let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(1);
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines().map_while(Result::ok) {
            if tx.blocking_send(line).is_err() {
                break;
            }
        }
    });
    loop {
        print!("you> ");
        std::io::stdout().flush().ok();
        let Some(line) = rx.recv().await else { break };
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        if text == "/exit" || text == "/quit" {
            break;
        }
        let msg = Inbound {
            origin: origin.clone(),
            text: text.to_string(),
            message_id: None,
            user_name: Some(user.clone()),
            reply: ReplyPath::Origin,
            attachments: Vec::new(),
        };
        match app.sessions().handle_inbound(msg).await {
            Ok(out) => {
                for n in &out.notices {
                    println!("{n}");
                }
                if let Some(r) = out.reply {
                    println!("hermes> {r}");
                }
            }
            Err(e) => println!("error: {e}"),
        }
    }
    println!();
    Ok(ExitCode::SUCCESS)
}

async fn sessions(app: App, action: SessionsCmd) -> anyhow::Result<ExitCode> {
    match action {
        SessionsCmd::List { json } => list_sessions(&app, json).await?,
        SessionsCmd::Show { id, json } => {
            let id = SessionId::parse(&id)?;
            let Some((rec, msgs)) = app.sessions().show(&id, usize::MAX >> 1).await? else {
                eprintln!("no session {id}");
                return Ok(ExitCode::FAILURE);
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&serde_json::json!({"session": rec, "messages": msgs}))?);
            } else {
                println!("session {} ({}), started {}", rec.session_id, rec.session_key, rec.started_at);
                if let Some(r) = &rec.end_reason {
                    println!("ended: {r}");
                }
                for m in msgs {
                    let calls: Vec<&str> = m.tool_calls.iter().map(|c| c.name.as_str()).collect();
                    let extra = if calls.is_empty() { String::new() } else { format!(" [calls: {}]", calls.join(", ")) };
                    let extra = match &m.model {
                        Some(model) => format!("{extra} [model: {model}]"),
                        None => extra,
                    };
                    println!("[{}] {}: {}{extra}", m.at.format("%H:%M:%S"), m.role.as_str(), m.content);
                }
            }
        }
        SessionsCmd::Reset { key } => {
            let key = SessionKey::parse(&key)?;
            match app.sessions().reset(&key).await? {
                Some(Reset { session_id: id, dropped }) => {
                    println!("{key}: new session {id} ({dropped} queued item(s) dropped)");
                }
                None => {
                    eprintln!("no session for {key}");
                    return Ok(ExitCode::FAILURE);
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `sessions list [--json]`: every session key with its current session, newest first.
async fn list_sessions(app: &App, json: bool) -> anyhow::Result<()> {
    let sessions = app.sessions();
    let entries = sessions.list(1000).await?;
    if json {
        let mut out = Vec::with_capacity(entries.len());
        for e in &entries {
            let mut v = serde_json::to_value(e)?;
            v["title"] = serde_json::json!(sessions.record(&e.session_id).await?.and_then(|r| r.title));
            out.push(v);
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else if entries.is_empty() {
        println!("no sessions yet");
    } else {
        println!("{:<48} {:<26} {:>6}  {:<20}  TITLE", "SESSION KEY", "SESSION ID", "MSGS", "UPDATED");
        for e in entries {
            let n = sessions.message_count(&e.session_id).await?;
            let title = sessions.record(&e.session_id).await?.and_then(|r| r.title).unwrap_or_default();
            let at = e.updated_at.format("%Y-%m-%d %H:%M:%SZ");
            println!("{:<48} {:<26} {:>6}  {at:<20}  {title}", e.session_key, e.session_id, n);
        }
    }
    Ok(())
}

async fn doctor(home: &std::path::Path, cfg: Loaded, create_table: bool) -> ExitCode {
    let mut problems = Vec::new();
    println!("home:     {}", home.display());
    println!("config:   {}", cfg.file.as_ref().map_or_else(|| "(none: defaults)".to_string(), |p| p.display().to_string()));
    for w in &cfg.warnings {
        println!("warning:  {w}");
    }
    println!("timezone: {}", cfg.settings.timezone);
    super::checks::models(&cfg, &mut problems);
    if home.join("SOUL.md").exists() {
        println!("soul:     SOUL.md found");
    }
    if create_table {
        match runtime::create_table(&cfg).await {
            Ok(done) => println!("table:    {done}"),
            Err(e) => problems.push(e.to_string()),
        }
    }
    let store = match runtime::open_store(home, &cfg).await {
        Ok(s) => match s.list_entries(1).await {
            Ok(_) => {
                println!("store:    {} ok", s.kind());
                Some(s)
            }
            Err(e) if s.kind() == "dynamodb" && !create_table => {
                problems.push(format!("store is not readable: {e} (a new table is made by `hermes-zero doctor --create-table`)"));
                None
            }
            Err(e) => {
                problems.push(format!("store is not readable: {e}"));
                None
            }
        },
        Err(e) => {
            problems.push(e.to_string());
            None
        }
    };
    super::checks::jobs_and_provider(home, &cfg, store.as_deref(), &mut problems).await;
    let tg = &cfg.secrets;
    if tg.telegram_bot_token.is_some() && tg.telegram_webhook_secret.is_none() {
        problems.push("TELEGRAM_BOT_TOKEN is set but TELEGRAM_WEBHOOK_SECRET is not: the webhook would refuse every update".into());
    }
    if tg.telegram_bot_token.is_some() && cfg.settings.platforms.telegram.allowed_users.is_empty() && !cfg.settings.allow_all_users {
        // What a stranger then gets follows `unauthorized_dm_behavior` (docs/pairing.md).
        let dm = crate::core::pairing::dm_behavior(
            "telegram",
            cfg.settings.platforms.telegram.unauthorized_dm_behavior.as_deref(),
            cfg.settings.unauthorized_dm_behavior.as_deref(),
            false,
        );
        let then = match dm {
            crate::core::pairing::DmBehavior::Pair => "a DM sender gets a pairing code (hermes-zero pairing approve)",
            crate::core::pairing::DmBehavior::Ignore => "strangers get no answer (unauthorized_dm_behavior: ignore)",
            crate::core::pairing::DmBehavior::Refuse => "everyone gets the refusal",
        };
        println!("warning:  no Telegram user is allowed (TELEGRAM_ALLOWED_USERS): {then}");
    }
    super::checks::web(&cfg);
    super::checks::media_and_toolsets(&cfg, &mut problems);
    if cfg.settings.tools.web.allow_private {
        println!("warning:  tools.web.allow_private is on: web_fetch can reach private, loopback and link-local addresses");
    }
    if problems.is_empty() {
        println!("ok");
        ExitCode::SUCCESS
    } else {
        for p in &problems {
            println!("problem:  {p}");
        }
        ExitCode::FAILURE
    }
}
