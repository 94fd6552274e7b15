//! The environment of a child process the gateway starts (a stdio MCP server, later a job
//! script): never the gateway's own environment, which holds its secrets (bot tokens,
//! signing secrets, model keys, `API_SERVER_KEY`…), but a minimal one, as Hermes'
//! `_build_safe_env` (`tools/mcp_tool.py`) builds it — the OS basics of the parent (PATH,
//! HOME, USER, LANG, LC_*, TZ, TERM, SHELL, TMPDIR, XDG_*, and Windows' location
//! variables), overlaid with the child's own configured `env` entries. The caller clears
//! the inherited environment (`Command::env_clear`) and sets exactly this.

use std::collections::BTreeMap;

/// Parent variables passed through by name (Hermes' `_SAFE_ENV_KEYS`, plus `TZ` and the
/// `LC_*` family, which carry no secret and keep a child's clock and locale the gateway's).
const SAFE_KEYS: [&str; 9] = ["PATH", "HOME", "USER", "LANG", "LC_ALL", "TERM", "SHELL", "TMPDIR", "TZ"];

/// Windows process and location variables (Hermes' `_SAFE_ENV_KEYS_CASE_INSENSITIVE`),
/// compared upper-cased.
const SAFE_KEYS_ANY_CASE: [&str; 27] = [
    "ALLUSERSPROFILE",
    "APPDATA",
    "COMMONPROGRAMFILES",
    "COMMONPROGRAMFILES(X86)",
    "COMMONPROGRAMW6432",
    "COMPUTERNAME",
    "COMSPEC",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "NUMBER_OF_PROCESSORS",
    "OS",
    "PATHEXT",
    "PROCESSOR_ARCHITECTURE",
    "PROGRAMDATA",
    "PROGRAMFILES",
    "PROGRAMFILES(X86)",
    "PROGRAMW6432",
    "PUBLIC",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "TMP",
    "USERDOMAIN",
    "USERNAME",
    "USERPROFILE",
    "WINDIR",
];

/// Whether a parent variable may reach a child.
pub fn is_safe(name: &str) -> bool {
    SAFE_KEYS.contains(&name)
        || name.starts_with("LC_")
        || name.starts_with("XDG_")
        || SAFE_KEYS_ANY_CASE.contains(&name.to_ascii_uppercase().as_str())
}

/// The whole environment of a child: the safe variables of `parent`, then `own` (the
/// child's configured `env`, which wins on a clash and may name anything, a secret the
/// operator chose to give it included).
pub fn child_env<'a>(parent: impl IntoIterator<Item = (&'a str, &'a str)>, own: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> =
        parent.into_iter().filter(|(k, _)| is_safe(k)).map(|(k, v)| (k.to_string(), v.to_string())).collect();
    env.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_safe_parent_names_and_the_own_entries_pass() {
        let parent = [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/h"),
            ("LANG", "C.UTF-8"),
            ("LC_TIME", "de_DE"),
            ("TZ", "Europe/Berlin"),
            ("XDG_CONFIG_HOME", "/x"),
            ("SystemRoot", "C:\\Windows"),
            ("TELEGRAM_BOT_TOKEN", "1:secret"),
            ("SLACK_SIGNING_SECRET", "s"),
            ("OPENAI_API_KEY", "sk-x"),
            ("API_SERVER_KEY", "k"),
            ("AWS_SECRET_ACCESS_KEY", "a"),
            ("HERMES_HOME", "/h"),
        ];
        let own = BTreeMap::from([("GITHUB_TOKEN".to_string(), "mine".to_string()), ("HOME".to_string(), "/srv".to_string())]);
        let env = child_env(parent, &own);
        let names: Vec<&str> = env.keys().map(String::as_str).collect();
        assert_eq!(names, ["GITHUB_TOKEN", "HOME", "LANG", "LC_TIME", "PATH", "SystemRoot", "TZ", "XDG_CONFIG_HOME"]);
        assert_eq!(env["HOME"], "/srv", "the server's own entry wins");
    }
}
