//! Which toolsets a turn is offered (docs/tools.md#toolsets), from Hermes' keys: a job's
//! `enabled_toolsets`, else the platform's `platform_toolsets.<platform>` (a job run's
//! platform is `cron`, the API's `api_server`), else `toolsets`; none of them: every tool.
//! Hermes' `agent.disabled_toolsets` is taken out of whatever list applies, last.
//! A Hermes composite (`hermes-cli`, `hermes-telegram`, `hermes-gateway`, …) stands for every
//! toolset here, `hermes-api-server` for all but the interactive ones, `hermes-webhook` for
//! Hermes' webhook-safe few. MCP servers join as `job_toolsets` says. A name this gateway has
//! no tool for (`terminal`, `file`, `browser`, …) adds nothing: `doctor` lists it as ignored.

use super::{ToolCtx, Toolset, TurnKind, job_toolsets};
use crate::app::App;
use crate::config::Settings;

/// Hermes' platform key of a turn's platform (`api` is Hermes' `api_server`).
fn platform_key(platform: &str) -> &str {
    match platform {
        "api" => "api_server",
        other => other,
    }
}

/// Whether `name` is a Hermes composite toolset (`hermes-<platform>`, `hermes-cli`, …).
fn composite(name: &str) -> bool {
    name.starts_with("hermes-")
}

/// The toolsets `name` stands for, given the toolsets this gateway has (`have`).
fn expand(name: &str, have: &[String]) -> Vec<String> {
    let native = || have.iter().filter(|t| !t.starts_with("mcp-")).cloned();
    match name {
        // Hermes' API server offers no interactive tools (clarify, send_message, speech).
        "hermes-api-server" => native().filter(|t| !["clarify", "messaging", "tts"].contains(&t.as_str())).collect(),
        "hermes-webhook" => ["web", "vision", "clarify"].map(String::from).to_vec(),
        "hermes-acp" => native().filter(|t| !["clarify", "messaging", "tts", "cronjob"].contains(&t.as_str())).collect(),
        n if composite(n) => native().collect(),
        n => vec![n.to_string()],
    }
}

/// The configured list a turn on `platform` (`None`: a job run) follows, if any.
fn configured<'a>(s: &'a Settings, platform: Option<&str>) -> Option<&'a Vec<String>> {
    let key = platform.map_or("cron", platform_key);
    s.platform_toolsets.get(key).or(s.toolsets.as_ref())
}

/// The toolsets a turn is narrowed to (`None`: no list applies, every tool is offered).
/// `per_job` is a job's `enabled_toolsets`; `have` every toolset of the registry.
pub fn enabled(s: &Settings, platform: Option<&str>, per_job: &[String], have: &[String]) -> Option<Vec<String>> {
    let disabled = &s.agent.disabled_toolsets;
    let list: &[String] = match (per_job.is_empty(), configured(s, platform)) {
        (false, _) => per_job,
        (true, Some(list)) => list,
        // No list: every tool, less `agent.disabled_toolsets`.
        (true, None) if disabled.is_empty() => return None,
        (true, None) => have,
    };
    let mut names: Vec<String> = Vec::new();
    for n in list.iter().flat_map(|n| expand(n.trim(), have)) {
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let mut on = job_toolsets(&names, have);
    on.retain(|t| !disabled.contains(t));
    Some(on)
}

/// `toolset` narrowed as [`enabled`] says.
pub fn narrow(toolset: Toolset, s: &Settings, platform: Option<&str>, per_job: &[String], have: &[String]) -> Toolset {
    match enabled(s, platform, per_job, have) {
        None => toolset,
        Some(on) => toolset.in_toolsets(&on.iter().map(String::as_str).collect::<Vec<_>>()),
    }
}

impl App {
    /// `/status`'s line of the tools a chat turn in `e`'s chat is offered now.
    pub(in crate::app) fn status_tools(&self, e: &crate::core::session::SessionEntry) -> String {
        let ctx = ToolCtx {
            app: self,
            session_id: &e.session_id,
            origin: Some(&e.origin),
            kind: TurnKind::Chat,
            deadline: None,
            call_id: None,
            turn: None,
        };
        let have = self.inner.tools.toolsets();
        let set = narrow(self.inner.tools.toolset(&ctx), &self.inner.cfg.settings, Some(&e.origin.platform), &[], &have);
        let names: Vec<String> = set.specs().into_iter().map(|t| t.name.clone()).collect();
        if names.is_empty() { "Tools: none".into() } else { format!("Tools: {}", names.join(", ")) }
    }
}

/// The names in `toolsets` and `platform_toolsets` this gateway has no tool for, each once:
/// Hermes' own toolsets (`terminal`, `file`, `browser`, `code_execution`, …), shown by
/// `doctor` as ignored. Composites, `no_mcp` and configured MCP servers are not listed.
pub fn ignored(s: &Settings, have: &[String]) -> Vec<String> {
    let mcp = |n: &str| s.mcp_servers.contains_key(n) || n.strip_prefix("mcp-").is_some_and(|m| s.mcp_servers.contains_key(m));
    let mut out: Vec<String> = Vec::new();
    for n in s.toolsets.iter().flatten().chain(s.platform_toolsets.values().flatten()).map(|n| n.trim()) {
        if composite(n) || n == "no_mcp" || n.is_empty() || mcp(n) || have.iter().any(|h| h == n) || out.iter().any(|o| o == n) {
            continue;
        }
        out.push(n.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn have() -> Vec<String> {
        ["time", "memory", "messaging", "web", "vision", "tts", "mcp-git"].map(String::from).to_vec()
    }

    fn settings(yaml: &str) -> Settings {
        crate::config::parse_yaml(yaml, "c").unwrap().0
    }

    #[test]
    fn a_platforms_list_wins_over_toolsets_and_a_jobs_list_over_both() {
        let s = settings("toolsets: [memory]\nplatform_toolsets: {telegram: [web, terminal], cron: [tts]}\n");
        assert_eq!(enabled(&s, Some("telegram"), &[], &have()).unwrap(), ["web", "terminal", "mcp-git"]);
        assert_eq!(enabled(&s, Some("slack"), &[], &have()).unwrap(), ["memory", "mcp-git"]);
        assert_eq!(enabled(&s, None, &[], &have()).unwrap(), ["tts", "mcp-git"]);
        assert_eq!(enabled(&s, None, &["web".into(), "no_mcp".into()], &have()).unwrap(), ["web"]);
        assert!(enabled(&settings(""), Some("telegram"), &[], &have()).is_none(), "no list: every tool");
        let off = settings("agent: {disabled_toolsets: [memory, mcp-git]}\nplatform_toolsets: {slack: [memory, web]}\n");
        assert_eq!(enabled(&off, Some("telegram"), &[], &have()).unwrap(), ["time", "messaging", "web", "vision", "tts"]);
        assert_eq!(enabled(&off, Some("slack"), &[], &have()).unwrap(), ["web"], "applied last");
    }

    #[test]
    fn composites_stand_for_every_toolset_here() {
        let s = settings("platform_toolsets: {telegram: [hermes-telegram], api_server: [hermes-api-server], webhook: [hermes-webhook]}\n");
        assert_eq!(
            enabled(&s, Some("telegram"), &[], &have()).unwrap(),
            ["time", "memory", "messaging", "web", "vision", "tts", "mcp-git"]
        );
        assert_eq!(enabled(&s, Some("api"), &[], &have()).unwrap(), ["time", "memory", "web", "vision", "mcp-git"]);
        assert_eq!(enabled(&s, Some("webhook"), &[], &have()).unwrap(), ["web", "vision", "clarify", "mcp-git"]);
    }

    #[test]
    fn hermes_toolsets_this_gateway_lacks_are_listed_as_ignored() {
        let s = settings(
            "toolsets: [hermes-cli, terminal]\nplatform_toolsets: {telegram: [web, file, terminal, no_mcp, git], slack: [browser]}\nmcp_servers: {git: {url: 'http://x'}}\n",
        );
        assert_eq!(ignored(&s, &have()), ["terminal", "browser", "file"]);
    }
}
