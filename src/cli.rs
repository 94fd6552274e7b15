//! The command line (docs/design.md#cli): parsing with clap and dispatch to the runtimes and use
//! cases. Exit codes: 0 ok, 1 runtime error, 2 usage error, 78 bad configuration.

mod checks;
mod commands;
mod cron;
mod import;
mod mcp;
mod memory;
mod pairing;
mod setup;
mod skills;
mod webhook;

pub use webhook::WebhookCmd;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Scale-to-zero gateway for a Hermes-style chat agent.
#[derive(Debug, Parser)]
#[command(name = "hermes-zero", version, about, propagate_version = true)]
pub struct Cli {
    /// Home directory (config.yaml, state.db, SOUL.md, cron/, skills/). Default: $HERMES_HOME, else ~/.hermes-zero.
    #[arg(long, global = true, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Profile: an agent with its own home (<home>/profiles/NAME: config.yaml, SOUL.md,
    /// skills, cron/jobs.json) and its own key space in the shared store. Default:
    /// $HERMES_PROFILE, else `main` (the home itself).
    #[arg(long, short = 'p', global = true, value_name = "NAME")]
    pub profile: Option<String>,
    /// Config file. Default: <home>/config.yaml.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Show info logs on stderr (by default a CLI command shows only warnings and errors).
    #[arg(short, long, global = true)]
    pub verbose: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// HTTP server with the built-in ticker (embedded store by default).
    Serve {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: String,
        /// Exit 0 after SECS without inbound requests (`/healthz` does not count), once no turn
        /// or fire runs and all stored chat work is finished or has a wake armed with the
        /// timer provider.
        #[arg(long, value_name = "SECS")]
        idle_exit: Option<u64>,
    },
    /// Interactive terminal chat on platform `local`.
    Chat,
    /// Inspect sessions.
    Sessions {
        /// Sub-command.
        #[command(subcommand)]
        action: SessionsCmd,
    },
    /// Scheduled jobs.
    Cron {
        /// Sub-command.
        #[command(subcommand)]
        action: Box<CronCmd>,
    },
    /// The agent's memory: its notes and the user profile.
    Memory {
        /// Sub-command.
        #[command(subcommand)]
        action: MemoryCmd,
    },
    /// The agent's skills: the store's (written in chats, imported) over $HERMES_HOME/skills.
    Skills {
        /// Sub-command.
        #[command(subcommand)]
        action: SkillsCmd,
    },
    /// DM pairing: pending codes, approving them, revoking users (docs/pairing.md).
    Pairing {
        /// Sub-command.
        #[command(subcommand)]
        action: PairingCmd,
    },
    /// The configured MCP servers (`mcp_servers`).
    Mcp {
        /// Sub-command.
        #[command(subcommand)]
        action: McpCmd,
    },
    /// Testing aid (feature `testing`): a tiny MCP server on stdin/stdout.
    #[cfg(feature = "testing")]
    #[command(hide = true)]
    McpDevStdio,
    /// Local NAS emulator: timer API, JWKS and real signed fire callbacks.
    ChronosDev {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8790")]
        listen: String,
        /// Deliver every fire N extra times (each with a fresh jti) to test at-most-once.
        #[arg(long, default_value_t = 0)]
        duplicates: u32,
        /// `aud` of the fire tokens (default agent:<cron.chronos.instance_id or hermes-zero>).
        #[arg(long)]
        audience: Option<String>,
        /// Testing aid: fire timers this many seconds before their `fire_at` (the agent accepts
        /// fires up to 60 s early), so a whole loop runs in seconds.
        #[arg(long, default_value_t = 0, hide = true)]
        fire_early_secs: u32,
    },
    /// Import a Hermes home: SOUL.md, skills, jobs, memory files and every session.
    Import {
        /// The Hermes home to read (default ~/.hermes).
        hermes_home: Option<PathBuf>,
        /// Print only the counts as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Telegram setup: register or remove the webhook, show its state.
    Telegram {
        /// Sub-command.
        #[command(subcommand)]
        action: TelegramCmd,
    },
    /// Discord setup: register the slash commands.
    Discord {
        /// Sub-command.
        #[command(subcommand)]
        action: DiscordCmd,
    },
    /// Webhook routes (`platforms.webhook.extra.routes`): their URLs, and a signed test delivery.
    Webhook {
        /// Sub-command.
        #[command(subcommand)]
        action: WebhookCmd,
    },
    /// Validate config, jobs, skills, store and provider; exit 1 with reasons.
    Doctor {
        /// Create the DynamoDB table first when `store.kind` is dynamodb (idempotent).
        #[arg(long)]
        create_table: bool,
    },
}

/// Definition flags shared by `cron add` and `cron edit`.
#[derive(Debug, clap::Args)]
pub struct JobFlags {
    /// Human name.
    #[arg(long)]
    pub name: Option<String>,
    /// Delivery targets: local, origin, telegram, telegram:<chat_id>[:<thread_id>] (comma-separated).
    #[arg(long)]
    pub deliver: Option<String>,
    /// Skill to bind (repeatable); its SKILL.md goes into the prompt.
    #[arg(long = "skill")]
    pub skills: Vec<String>,
    /// forever, once, or a number of runs.
    #[arg(long)]
    pub repeat: Option<String>,
    /// An occurrence due while the previous run still runs: skip (default) or allow.
    #[arg(long)]
    pub overlap: Option<String>,
    /// Move each recurring occurrence by a fixed offset in [0, SECS) from the job id
    /// (default: cron.spread_seconds).
    #[arg(long, value_name = "SECS")]
    pub spread: Option<u32>,
    /// Retry delays in seconds of a run that failed with no effect: `60,300,900`, `[]` (or
    /// "") for none, `default` for cron.retry.delays.
    #[arg(long, value_name = "SECS,…")]
    pub retry: Option<String>,
    /// Script under $HERMES_HOME/scripts/ run before each run (`.sh`/`.bash` with bash, else
    /// python3); its stdout goes into the prompt ("" clears it).
    #[arg(long)]
    pub script: Option<String>,
    /// The script is the job: its stdout is delivered as it is, no model call (needs --script).
    #[arg(long)]
    pub no_agent: bool,
    /// The script's working directory (absolute; "" clears it).
    #[arg(long)]
    pub workdir: Option<String>,
    /// This job's model id (empty: the configured model).
    #[arg(long)]
    pub model: Option<String>,
    /// This job's model provider, by Hermes' names (empty: the configured one).
    #[arg(long)]
    pub provider: Option<String>,
    /// This job's model base URL (needs `--provider`).
    #[arg(long = "base-url")]
    pub base_url: Option<String>,
    /// Where this job's failure alert and "recovered" line go (targets as --deliver; empty:
    /// cron.failure_deliver, else the job's own targets).
    #[arg(long = "failure-deliver")]
    pub failure_deliver: Option<String>,
    /// Most tokens (prompt plus completion over every model call) one run may use ("" clears it).
    #[arg(long = "max-tokens")]
    pub max_tokens: Option<String>,
    /// Jobs whose newest output goes into the prompt (comma-separated ids; empty: none).
    #[arg(long = "context-from")]
    pub context_from: Option<String>,
    /// Only these toolsets' tools are offered in the job's runs (comma-separated; empty: all).
    #[arg(long = "enabled-toolsets")]
    pub enabled_toolsets: Option<String>,
    /// Also append the delivered text to the target chat's session (true or false).
    #[arg(long = "attach-to-session")]
    pub attach_to_session: Option<bool>,
}

/// `cron` sub-commands.
#[derive(Debug, Subcommand)]
pub enum CronCmd {
    /// Jobs with schedule, next run and last status.
    List {
        /// Include disabled and completed jobs.
        #[arg(long)]
        all: bool,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Create a job; prints its id.
    Add {
        /// `every 30m`, `in 2h`, `0 8 * * *`, `every weekday at 9am`, `2026-12-01T09:00`, …
        schedule: String,
        /// What the agent should do (may be left out with --no-agent).
        prompt: Option<String>,
        /// Definition flags.
        #[command(flatten)]
        flags: JobFlags,
    },
    /// Change a job.
    Edit {
        /// Job id or name.
        id: String,
        /// New schedule.
        #[arg(long)]
        schedule: Option<String>,
        /// New prompt.
        #[arg(long)]
        prompt: Option<String>,
        /// Definition flags.
        #[command(flatten)]
        flags: JobFlags,
    },
    /// Pause a job.
    Pause {
        /// Job id or name.
        id: String,
    },
    /// Resume a paused job.
    Resume {
        /// Job id or name.
        id: String,
    },
    /// Fire a job now through the normal claim.
    Run {
        /// Job id or name.
        id: String,
        /// A one-time text for this run only (put under `## Run Context`; the job is not changed).
        #[arg(long)]
        prompt: Option<String>,
    },
    /// Delete a job.
    Remove {
        /// Job id or name.
        id: String,
    },
    /// Recent runs and their outputs.
    Runs {
        /// Job id or name.
        id: String,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Sync jobs.json into the store.
    Sync,
    /// One ticker pass, then exit (for a system cron line).
    Tick,
    /// Provider in use, why, armed timers, last tick.
    Status,
}

/// `memory` sub-commands.
#[derive(Debug, Subcommand)]
pub enum MemoryCmd {
    /// Both stores with their entries and usage (and the users with a profile of their own).
    Show {
        /// JSON output.
        #[arg(long)]
        json: bool,
        /// Show this user's own profile as the user store: `platform:user_id`, `id:<name>` or
        /// `chat:<platform>:<chat_id>` (default: the shared profile).
        #[arg(long, value_name = "USER")]
        user: Option<String>,
    },
    /// Edit both stores in $EDITOR (or apply a file in the same format with --file).
    Edit {
        /// Apply this file instead of opening an editor (`-` reads stdin).
        #[arg(long, value_name = "PATH")]
        file: Option<PathBuf>,
        /// Edit this user's own profile as the user store (as `show --user`).
        #[arg(long, value_name = "USER")]
        user: Option<String>,
    },
    /// The users with a profile of their own (`memory.user_profile: per_user`).
    Users {
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
}

/// `skills` sub-commands.
#[derive(Debug, Subcommand)]
pub enum SkillsCmd {
    /// Every skill: name, where it lives (store or files) and its description.
    List {
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// One skill's SKILL.md (with --json: its files and where it lives as well).
    Show {
        /// The skill's name.
        name: String,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Write every skill into DIR/<name>/ (SKILL.md and supporting files), Hermes' layout.
    Export {
        /// The directory to write into (created if missing).
        dir: PathBuf,
    },
}

/// `pairing` sub-commands.
#[derive(Debug, Subcommand)]
pub enum PairingCmd {
    /// Pending codes and approved users of every platform.
    List {
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Approve a code an unknown DM sender was given: they are allowed from now on.
    Approve {
        /// Platform (telegram, discord, slack, whatsapp, …).
        platform: String,
        /// The code from their chat.
        code: String,
    },
    /// Remove an approved user.
    Revoke {
        /// Platform.
        platform: String,
        /// Their user id.
        user: String,
    },
}

/// `mcp` sub-commands.
#[derive(Debug, Subcommand)]
pub enum McpCmd {
    /// Servers with their transport, state and tools (a missing or stale tool list is
    /// fetched, and cached for `mcp_cache_seconds`).
    List {
        /// JSON output.
        #[arg(long)]
        json: bool,
        /// Fetch every server's tool list now, even a fresh cached one.
        #[arg(long)]
        refresh: bool,
    },
}

/// `telegram` sub-commands (TELEGRAM_BOT_TOKEN; `platforms.telegram.api_base`).
#[derive(Debug, Subcommand)]
pub enum TelegramCmd {
    /// Register `<public-url>/webhooks/telegram` as the bot's webhook, with
    /// TELEGRAM_WEBHOOK_SECRET as its secret token (`serve` then stops polling once it runs
    /// with the same secret). The URL must be https (http only for localhost).
    SetWebhook {
        /// The public base URL of `serve`, e.g. https://bot.example.com.
        public_url: String,
    },
    /// Remove the webhook (pending updates are kept), e.g. to go back to polling.
    DeleteWebhook,
    /// Show the webhook registration (getWebhookInfo): URL, pending updates, last error.
    Info,
}

/// `discord` sub-commands (DISCORD_BOT_TOKEN; `platforms.discord.api_base`).
#[derive(Debug, Subcommand)]
pub enum DiscordCmd {
    /// Register the slash commands the interactions endpoint handles (/ask and the session
    /// commands), replacing the registered list. Global commands may take up to an hour to
    /// appear; `--guild` registers them in one server instantly.
    RegisterCommands {
        /// Register in this guild (server) id only, instantly.
        #[arg(long, value_name = "ID")]
        guild: Option<String>,
        /// The application id (default: DISCORD_APPLICATION_ID, else asked from Discord with
        /// the bot token).
        #[arg(long, env = "DISCORD_APPLICATION_ID", value_name = "ID")]
        application_id: Option<String>,
    },
}

/// `sessions` sub-commands.
#[derive(Debug, Subcommand)]
pub enum SessionsCmd {
    /// Session keys with their current session.
    List {
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// A session's transcript.
    Show {
        /// Session id.
        id: String,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Start a fresh session for a key (same effect as `/new`).
    Reset {
        /// Session key.
        key: String,
    },
}

impl Cli {
    /// The log level when `RUST_LOG` is not set: `info` for the long-running `serve` and
    /// `chronos-dev` and with `-v`; otherwise `warn`, so a command's stdout is its result and
    /// stderr holds only warnings and errors.
    pub fn default_log_level(&self) -> &'static str {
        match self.command {
            _ if self.verbose => "info",
            Command::Serve { .. } | Command::ChronosDev { .. } => "info",
            _ => "warn",
        }
    }
}

/// Exit code for bad configuration (sysexits EX_CONFIG).
pub const EXIT_CONFIG: u8 = 78;

/// Resolves the home directory.
pub fn resolve_home(flag: Option<PathBuf>, env: &crate::config::Env) -> PathBuf {
    flag.or_else(|| env.get("HERMES_HOME").map(PathBuf::from))
        .or_else(|| env.get("HOME").map(|h| PathBuf::from(h).join(".hermes-zero")))
        .unwrap_or_else(|| PathBuf::from(".hermes-zero"))
}

/// The profile from `--profile` (a bad name is a usage error, exit 2) or `HERMES_PROFILE`
/// (a bad value is a configuration error, exit 78); `main` when neither is set.
pub fn resolve_profile(flag: Option<&str>, env: &crate::config::Env) -> Result<crate::core::profile::Profile, (u8, String)> {
    use crate::core::profile::Profile;
    match (flag, env.get("HERMES_PROFILE").filter(|v| !v.is_empty())) {
        (Some(f), _) => Profile::parse(f).map_err(|e| (2, format!("--profile: {e}"))),
        (None, Some(v)) => Profile::parse(v).map_err(|e| (EXIT_CONFIG, format!("configuration error: HERMES_PROFILE: {e}"))),
        (None, None) => Ok(Profile::main()),
    }
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    let env = crate::config::Env::from_process();
    let profile = match resolve_profile(cli.profile.as_deref(), &env) {
        Ok(p) => p,
        Err((code, msg)) => {
            eprintln!("hermes-zero: {msg}");
            return ExitCode::from(code);
        }
    };
    let root = resolve_home(cli.home, &env);
    let home = profile.home(&root);
    let mut cfg = match crate::config::load_settings(&home, cli.config.as_deref(), &env) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("hermes-zero: configuration error: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    if !profile.is_main() {
        cfg.store_home = Some(root);
    }
    cfg.profile = profile;
    for w in &cfg.warnings {
        tracing::warn!("{w}");
    }
    crate::runtime::private::secure_home(&home, std::path::Path::new(&cfg.settings.store.path));
    if let Some(root) = &cfg.store_home {
        crate::runtime::private::secure_home(root, std::path::Path::new(&cfg.settings.store.path));
    }
    let rt = match crate::runtime::process::async_runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("hermes-zero: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(commands::dispatch(cli.command, home, cfg)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("hermes-zero: {e:#}");
            ExitCode::FAILURE
        }
    }
}
