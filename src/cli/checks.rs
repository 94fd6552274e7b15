//! `doctor` checks of the model chain, ignored Hermes sections, jobs, skills and the timer
//! provider, and the web tools' backends (beyond config and store).

use crate::config::Loaded;
use crate::config::models::{Endpoint, Wire};
use crate::config::provider;
use crate::core::jobfile;
use crate::ports::Store;
use std::path::Path;

/// Validates jobs.json (skipped jobs are warnings) and the skills its jobs bind, and the timer
/// provider; pushes problems. `store` tells which past one-shots are already stored.
pub async fn jobs_and_provider(home: &Path, cfg: &Loaded, store: Option<&dyn Store>, problems: &mut Vec<String>) {
    let file = home.join(&cfg.settings.cron.jobs_file);
    match std::fs::read_to_string(&file) {
        Err(_) => println!("jobs:     no {} (jobs come from the API, CLI and chat)", file.display()),
        Ok(text) => match jobfile::parse_file(&text, &file.display().to_string(), crate::runtime::clock(cfg).now(), cfg.tz) {
            Err(e) => problems.push(e.to_string()),
            Ok(mut parsed) => {
                let stored = match store {
                    Some(s) => s.list_jobs().await.unwrap_or_default(),
                    None => Vec::new(),
                };
                parsed.skip_new_past_one_shots(|id| stored.iter().any(|j| j.id == id));
                println!("jobs:     {} declared in {}", parsed.jobs.len(), file.display());
                // A skipped job is a warning, not a failure: every other job loads.
                for k in &parsed.skipped {
                    println!("warning:  {}: skipped {k}", file.display());
                }
                for s in &parsed.jobs {
                    for skill in &s.skills {
                        let dir = home.join("skills");
                        match crate::app::skill_exists(store, &dir, skill).await {
                            Ok(true) => {}
                            Ok(false) => problems.push(format!(
                                "job `{}` binds skill `{skill}` but it is not in the store and {} does not exist",
                                s.id,
                                dir.join(skill).join("SKILL.md").display()
                            )),
                            Err(e) => problems.push(format!("job `{}` binds skill `{skill}`: skills in the store unreadable: {e}", s.id)),
                        }
                    }
                    if let Some(script) = &s.script {
                        let p = home.join(crate::core::script::SCRIPTS_DIR).join(script);
                        match crate::core::script::check_path(script) {
                            Err(e) => problems.push(format!("job `{}`: {e}", s.id)),
                            Ok(()) if !p.is_file() => {
                                problems.push(format!("job `{}` runs script `{script}` but {} does not exist", s.id, p.display()))
                            }
                            Ok(()) => {}
                        }
                    }
                }
            }
        },
    }
    let choice = provider::choose(cfg, std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some());
    println!("timers:   {} — {}", choice.provider, choice.why);
    if choice.provider == crate::core::timers::TimerProvider::Chronos {
        use crate::ports::JwksSource;
        let c = &cfg.settings.cron.chronos;
        let jwks = std::sync::Arc::new(crate::clients::jwks::HttpJwks::default());
        if let Err(e) = crate::app::jobs::fire_token::FireVerifier::from_config(cfg, jwks.clone()) {
            problems.push(e);
        }
        if !c.jwks_url.is_empty()
            && let Err(e) = jwks.fetch(&c.jwks_url).await
        {
            problems.push(format!("cron.chronos.jwks_url {}: {e}", c.jwks_url));
        }
        if let Some(token) = &cfg.secrets.nous_access_token {
            let nas = crate::clients::nas::NasClient::new(&c.portal_url, token.clone());
            match nas.list().await {
                Ok(a) => println!("chronos:  NAS reachable, {} timer(s) armed", a.len()),
                Err(e) => problems.push(format!("the NAS at {} is not usable: {e}", c.portal_url)),
            }
        }
    }
}

fn describe(e: &Endpoint) -> String {
    match e.wire {
        Wire::Offline => format!("offline ({})", e.why),
        _ => format!("{} ({}) {} at {} — {}", e.provider, e.wire.as_str(), e.model, e.base_url, e.why),
    }
}

/// Prints the model chain and the ignored Hermes sections; an OAuth-only provider is a
/// problem (it cannot answer), a missing key only a warning (local servers need none).
pub fn models(cfg: &Loaded, problems: &mut Vec<String>) {
    let chain = std::iter::once(&cfg.model.primary).chain(&cfg.model.fallbacks);
    for (i, e) in chain.enumerate() {
        let label = if i == 0 { "model:   ".to_string() } else { format!("fallback {i}:") };
        println!("{label} {}", describe(e));
        match e.wire {
            Wire::OauthOnly => problems.push(e.oauth_line.clone().unwrap_or_default()),
            Wire::OpenaiChat | Wire::AnthropicMessages if e.api_key.is_none() => {
                println!("warning:  no API key for {}: set {} (fine for local servers without auth)", e.provider, e.key_hint)
            }
            _ => {}
        }
    }
    if !cfg.ignored.is_empty() {
        println!("ignored:  {} — not supported by hermes-zero", cfg.ignored.join(", "));
    }
}

/// The web tools' backends (`web.*` and the vendors' variables): which vendor serves
/// `web_search` and `web_extract`, or why they are not offered. Never a problem: a gateway
/// without a search vendor still runs, without those two tools.
pub fn web(cfg: &Loaded) {
    let choice = crate::config::web_choice(&cfg.settings.web, &cfg.env);
    if let (Some(s), Some(e)) = (&choice.search, &choice.extract) {
        println!("web:      web_search via {}, web_extract via {}", s.kind.name(), e.kind.name());
    }
    for note in &choice.notes {
        println!("web:      {note}");
    }
}

/// The media tools' backends (`vision_analyze`'s model, `text_to_speech`'s vendor) and the
/// Hermes toolsets in `toolsets` / `platform_toolsets` this gateway has no tool for (listed as
/// ignored, never a problem). A configured vision model that cannot be used is a problem.
pub fn media_and_toolsets(cfg: &Loaded, problems: &mut Vec<String>) {
    let s = &cfg.settings;
    match crate::config::vision_endpoint(&s.auxiliary.vision, &cfg.model, s.model.supports_vision, &cfg.env) {
        Ok(Some(ep)) => println!("vision:   vision_analyze via {} {} at {} — {}", ep.provider, ep.model, ep.base_url, ep.why),
        Ok(None) => println!("vision:   vision_analyze not offered (set auxiliary.vision.* or model.supports_vision)"),
        Err(e) => problems.push(e),
    }
    match crate::config::speech_choice(&s.tts, &cfg.env) {
        Ok(c) => println!("tts:      text_to_speech via {} {} at {}", c.provider, c.model, c.base_url),
        Err(why) => println!("tts:      text_to_speech not offered: {why}"),
    }
    let have = crate::app::tools::builtin(&crate::runtime::tool_ports()).toolsets();
    let ignored = crate::app::tools::toolsets::ignored(s, &have);
    if !ignored.is_empty() {
        println!("toolsets: ignored {} — Hermes toolsets hermes-zero does not have", ignored.join(", "));
    }
}
