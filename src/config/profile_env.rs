//! The environment of a routed profile (docs/design.md#profiles): one of many agents served
//! by one process. As in Hermes' multiplexed gateway, a profile's variables (its secrets,
//! model, allowed users…) come from `<profile home>/.env` only; of the process environment
//! it sees just the deployment-wide names below, so a secret of one agent (or of the
//! process's own profile) never reaches another.
//!
//! `.env` is read by a small parser of its own on purpose: the dotenv crates expand `$VAR`
//! from the *process* environment, which would let a profile's file copy another's secret.

use super::env::Env;
use std::path::Path;

/// Process variables every routed profile sees: the OS, the deployment's store, timers and
/// identity (never a credential of an agent). `AWS_*` is the function's own role and region.
const DEPLOYMENT_VARS: [&str; 18] = [
    "PATH",
    "HOME",
    "USER",
    "LANG",
    "LC_ALL",
    "TZ",
    "TMPDIR",
    "SSL_CERT_FILE",
    "RUST_LOG",
    "HERMES_HOME",
    "HERMES_CLOCK_OFFSET_SECS",
    "HERMES_STORE",
    "HERMES_DYNAMODB_TABLE",
    "HERMES_INSTANCE_ID",
    "HERMES_CHRONOS_PORTAL_URL",
    "HERMES_CHRONOS_JWKS_URL",
    "HERMES_CHRONOS_PUBLIC_KEY_PEM",
    "HERMES_CHRONOS_CALLBACK_URL",
];

/// Whether a process variable is deployment-wide (seen by every routed profile).
pub fn is_deployment_var(name: &str) -> bool {
    DEPLOYMENT_VARS.contains(&name) || name.starts_with("AWS_")
}

/// The environment of a routed profile whose home is `home`: the deployment-wide variables
/// of `process`, overlaid with `<home>/.env` (absent: none). An unreadable or malformed
/// file is an error naming it.
pub fn routed_env(process: &Env, home: &Path) -> Result<Env, String> {
    let path = home.join(".env");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("{}: cannot read: {e}", path.display())),
    };
    let own = parse_dotenv(&text).map_err(|(line, why)| format!("{}: line {line}: {why}", path.display()))?;
    let global = process.pairs().filter(|(k, _)| is_deployment_var(k)).map(|(k, v)| (k.to_string(), v.to_string()));
    Ok(Env::from_pairs(global.chain(own)))
}

/// Parses dotenv text: `KEY=value` lines, `export ` allowed, `#` comments, values bare
/// (an inline ` #` starts a comment), 'single-quoted' (literal) or "double-quoted" (`\n`,
/// `\"`, `\\` escapes). No `$VAR` expansion. Errors carry the 1-based line number.
pub fn parse_dotenv(text: &str) -> Result<Vec<(String, String)>, (usize, String)> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").map_or(line, str::trim_start);
        let Some((key, value)) = line.split_once('=') else { return Err((i + 1, "expected KEY=value".into())) };
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
            return Err((i + 1, format!("`{key}` is not a variable name")));
        }
        out.push((key.to_string(), unquote(value.trim()).ok_or((i + 1, "unterminated quote".to_string()))?));
    }
    Ok(out)
}

fn unquote(v: &str) -> Option<String> {
    if let Some(rest) = v.strip_prefix('\'') {
        return rest.find('\'').map(|end| rest[..end].to_string());
    }
    if let Some(rest) = v.strip_prefix('"') {
        let mut s = String::new();
        let mut chars = rest.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => return Some(s),
                '\\' => match chars.next()? {
                    'n' => s.push('\n'),
                    other => s.push(other),
                },
                c => s.push(c),
            }
        }
        return None;
    }
    Some(v.split(" #").next().unwrap_or_default().trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotenv_lines() {
        let text = "# c\nA=1\nexport B = two words # note\nC='x $Y # z'\nD=\"a\\nb\\\"\"\nE=\n";
        let got = parse_dotenv(text).unwrap();
        let want = [("A", "1"), ("B", "two words"), ("C", "x $Y # z"), ("D", "a\nb\""), ("E", "")];
        assert_eq!(got, want.map(|(k, v)| (k.to_string(), v.to_string())).to_vec());
        assert_eq!(parse_dotenv("ok=1\nnot a line\n").unwrap_err().0, 2);
        assert_eq!(parse_dotenv("A=\"open\n").unwrap_err().0, 1);
        assert!(parse_dotenv("-X=1").is_err());
    }

    #[test]
    fn a_routed_profile_sees_only_deployment_vars_and_its_own_file() {
        let dir = std::env::temp_dir().join(format!("hz-penv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(".env"), "API_SERVER_KEY=mine\nHERMES_MODEL=m2\n").unwrap();
        let process =
            Env::from_pairs([("API_SERVER_KEY", "process"), ("TELEGRAM_BOT_TOKEN", "t"), ("PATH", "/bin"), ("AWS_REGION", "eu-west-1")]);
        let env = routed_env(&process, &dir).unwrap();
        assert_eq!((env.get("API_SERVER_KEY"), env.get("HERMES_MODEL")), (Some("mine"), Some("m2")));
        assert_eq!((env.get("TELEGRAM_BOT_TOKEN"), env.get("PATH"), env.get("AWS_REGION")), (None, Some("/bin"), Some("eu-west-1")));
        std::fs::remove_file(dir.join(".env")).unwrap();
        assert_eq!(routed_env(&process, &dir).unwrap().get("API_SERVER_KEY"), None, "no file: no secrets at all");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
