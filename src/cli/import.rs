//! `hermes-zero import [HERMES_HOME]` (docs/design.md#hermes): checks Hermes' `state.db` first (so a
//! file of another schema version, or a locked or corrupt one, imports nothing), then copies
//! SOUL.md, skills, job scripts, jobs.json (and syncs it), the memory files and — when this home has none —
//! `config.yaml` (once it loads here), then imports every session with its messages — each
//! chat's current Hermes session (Hermes' routing index) as that chat's current session here,
//! every other one under its own `imported-` key — and the approved DM pairing lists
//! (docs/pairing.md). Prints counts and what became of the config; a second run adds nothing.

use crate::app::App;
use crate::app::sessions::import::{Copied, SessionImport, copy_file, env_names, memory_entries};
use crate::core::session::ImportedSession;
use crate::store::hermes_state::{HermesState, HermesStateError};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What a run added (`--json` prints exactly these keys).
#[derive(Debug, Default, Serialize)]
struct Counts {
    sessions: usize,
    messages: usize,
    jobs: usize,
    skills: usize,
    memory_entries: usize,
    paired_users: usize,
}

/// The default Hermes home: `~/.hermes`.
pub fn default_source(env: &crate::config::Env) -> PathBuf {
    env.get("HOME").map_or_else(|| PathBuf::from(".hermes"), |h| PathBuf::from(h).join(".hermes"))
}

/// Runs the import from `src` into the app's home and store; `config_in_use` is the config
/// file this run loaded, if any.
pub async fn run(app: App, src: &Path, config_in_use: Option<&Path>, json: bool) -> anyhow::Result<ExitCode> {
    if !src.is_dir() {
        eprintln!("hermes-zero: no Hermes home at {} (pass its path: hermes-zero import DIR)", src.display());
        return Ok(ExitCode::FAILURE);
    }
    if std::fs::canonicalize(src).ok() == std::fs::canonicalize(app.home()).ok() {
        eprintln!("hermes-zero: {} is this home already; pass a different --home to import into", src.display());
        return Ok(ExitCode::FAILURE);
    }
    let db = src.join("state.db");
    let legacy_routes = std::fs::read_to_string(src.join("sessions").join("sessions.json")).ok();
    let state = if db.is_file() {
        match HermesState::open(&db).and_then(|s| with_routes(&s, legacy_routes.as_deref()).map(|list| (s, list))) {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("hermes-zero: {e}; nothing was imported");
                return Ok(ExitCode::FAILURE);
            }
        }
    } else {
        None
    };
    let mut counts = Counts::default();
    let config = copy_config(src, app.home(), config_in_use)?;
    let mut notes = copy_files(&app, src, &mut counts).await?;
    let mut continued = 0usize;
    if let Some((state, sessions)) = state {
        for s in &sessions {
            let messages = match state.messages(&s.id) {
                Ok(m) => m,
                Err(e) => {
                    eprintln!("hermes-zero: {e}; sessions imported so far are complete, run import again to resume");
                    return Ok(ExitCode::FAILURE);
                }
            };
            match app.sessions().import(s, &messages).await {
                Ok(SessionImport::Imported(n)) => {
                    counts.sessions += 1;
                    counts.messages += n;
                }
                Ok(SessionImport::Continued(n)) => {
                    counts.sessions += 1;
                    counts.messages += n;
                    continued += 1;
                }
                Ok(SessionImport::ChatTaken(n, key)) => {
                    counts.sessions += 1;
                    counts.messages += n;
                    notes.push(format!(
                        "session {} is its chat's current session in Hermes, but {key} has a session here already (kept); imported it on its own",
                        s.id
                    ));
                }
                Ok(SessionImport::Present) => {}
                Err(crate::app::AppError::BadRequest(m)) => notes.push(format!("skipped {m}")),
                Err(e) => return Err(e.into()),
            }
        }
    }
    let (lists, pairing_notes) = crate::app::sessions::import::approved_lists(src);
    notes.extend(pairing_notes);
    for (platform, users) in &lists {
        counts.paired_users += app.pairing().import_approved(platform, users).await?;
    }
    notes.extend(env_note(src));
    for n in &notes {
        eprintln!("note: {n}");
    }
    print_counts(src, &counts, json)?;
    if continued > 0 && !json {
        println!("  chats continued: {continued} (each chat's current Hermes session is its current session here)");
    }
    match config {
        Some(line) if json => eprintln!("note: config.yaml {line}"),
        Some(line) => println!("  config.yaml:    {line}"),
        None => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// Copies Hermes' `config.yaml` into `home` when this home has none and this run read none:
/// only a file that loads here (a Hermes config loads unchanged, CONTRACT §9), written
/// privately (it may hold an inline key) and whole (a temporary file renamed). Returns what
/// happened, in words (None: Hermes' home has no config.yaml).
fn copy_config(src: &Path, home: &Path, in_use: Option<&Path>) -> anyhow::Result<Option<String>> {
    let from = src.join("config.yaml");
    let Ok(text) = std::fs::read_to_string(&from) else { return Ok(None) };
    let to = home.join("config.yaml");
    if let Some(used) = in_use.or_else(|| to.exists().then_some(to.as_path())) {
        let same = std::fs::read_to_string(used).is_ok_and(|t| t == text);
        return Ok(Some(if same {
            format!("already in place ({} has the same content)", used.display())
        } else {
            format!("not copied: this home already reads {} (kept it; compare it with {})", used.display(), from.display())
        }));
    }
    if let Err(e) = crate::config::load_settings(home, Some(&from), &crate::config::Env::from_process()) {
        return Ok(Some(format!("not copied: it does not load here ({e})")));
    }
    let tmp = home.join(".config.yaml.import");
    crate::runtime::private::write_private(&tmp, &text)?;
    std::fs::rename(&tmp, &to)?;
    Ok(Some(format!("copied to {} (doctor shows what it sets)", to.display())))
}

/// Every session of `state`, each with the chat it is current in (Hermes' routing: the
/// `gateway_routing` table, then `sessions/sessions.json`'s text `legacy`).
fn with_routes(state: &HermesState, legacy: Option<&str>) -> Result<Vec<ImportedSession>, HermesStateError> {
    let mut routes = state.routes(legacy)?;
    let mut sessions = state.sessions()?;
    for s in &mut sessions {
        s.route = routes.remove(&s.id);
    }
    Ok(sessions)
}

/// The note about Hermes' `.env`: never copied; the names (never the values) to set here.
fn env_note(src: &Path) -> Option<String> {
    let text = std::fs::read_to_string(src.join(".env")).ok()?;
    let names = env_names(&text);
    (!names.is_empty()).then(|| {
        format!(
            "{} was not copied (secrets stay where they are); set these variables for hermes-zero: {}",
            src.join(".env").display(),
            names.join(", ")
        )
    })
}

/// The counts: `--json` prints exactly the six keys, else one line each.
fn print_counts(src: &Path, counts: &Counts, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(counts)?);
    } else {
        println!("imported from {}:", src.display());
        println!("  sessions:       {} ({} messages)", counts.sessions, counts.messages);
        println!("  jobs:           {}", counts.jobs);
        println!("  skills:         {}", counts.skills);
        println!("  memory entries: {}", counts.memory_entries);
        println!("  paired users:   {}", counts.paired_users);
    }
    Ok(())
}

/// Copies SOUL.md, the memory files, job scripts and jobs.json (then syncs it) and imports the
/// skills into the store; returns notes
/// about what was kept as it was.
async fn copy_files(app: &App, src: &Path, counts: &mut Counts) -> anyhow::Result<Vec<String>> {
    let home = app.home();
    let mut notes = Vec::new();
    let note_kept = |notes: &mut Vec<String>, what: &Path, r: Copied| {
        if r == Copied::Kept {
            notes.push(format!("{} exists with other content; kept it (the Hermes copy was not imported)", what.display()));
        }
    };
    note_kept(&mut notes, &home.join("SOUL.md"), copy_file(&src.join("SOUL.md"), &home.join("SOUL.md"))?);
    for f in ["MEMORY.md", "USER.md"] {
        let (from, to) = (src.join("memories").join(f), home.join("memories").join(f));
        let r = copy_file(&from, &to)?;
        if r == Copied::Yes {
            counts.memory_entries += memory_entries(&std::fs::read_to_string(&to).unwrap_or_default());
        }
        note_kept(&mut notes, &to, r);
    }
    // Skills go into the store (so they serve on DynamoDB too), beside this home's folder.
    let imported = app.skills().import_folder(&src.join("skills")).await?;
    counts.skills = imported.imported;
    for k in imported.kept {
        notes.push(format!("skill `{k}` exists with another SKILL.md; kept it"));
    }
    let (scripts, kept) = copy_scripts(&src.join("scripts"), &home.join("scripts"))?;
    if scripts > 0 {
        notes.push(format!("copied {scripts} job script(s) to {}", home.join("scripts").display()));
    }
    for k in kept {
        notes.push(format!("script `{k}` exists with other content; kept it"));
    }
    let jobs_file = app.jobs_file();
    let r = copy_file(&src.join("cron").join("jobs.json"), &jobs_file)?;
    note_kept(&mut notes, &jobs_file, r);
    if r != Copied::NoSource {
        match app.jobs().sync_file().await {
            Ok(rep) => counts.jobs = rep.created.len(),
            Err(e) => notes.push(format!("jobs were not synced: {e}")),
        }
    }
    Ok(notes)
}

/// Copies Hermes' `scripts/` tree (job scripts, docs/jobs.md#script-jobs) into `to`: folders
/// 0700, files owner-readable and -writable keeping their exec bits, never group- or
/// world-writable; a file already there is kept (named when its content differs); symlinks
/// are not followed. Returns how many files were copied and the ones kept.
fn copy_scripts(from: &Path, to: &Path) -> std::io::Result<(usize, Vec<String>)> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    if !from.is_dir() {
        return Ok((0, Vec::new()));
    }
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(to)?;
    let (mut copied, mut kept) = (0, Vec::new());
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let (t, dest) = (e.file_type()?, to.join(e.file_name()));
        if t.is_dir() {
            let (n, k) = copy_scripts(&e.path(), &dest)?;
            copied += n;
            kept.extend(k);
        } else if t.is_file() && dest.exists() {
            if std::fs::read(e.path())? != std::fs::read(&dest)? {
                kept.push(e.file_name().to_string_lossy().into_owned());
            }
        } else if t.is_file() {
            let mode = (e.metadata()?.permissions().mode() & 0o755) | 0o600;
            let mut out = std::fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(&dest)?;
            std::io::copy(&mut std::fs::File::open(e.path())?, &mut out)?;
            std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(mode))?;
            copied += 1;
        }
    }
    Ok((copied, kept))
}
