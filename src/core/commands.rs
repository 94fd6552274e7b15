//! Parsing of the session commands users type on any platform (docs/design.md#commands).

/// A session command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cmd {
    /// `/new [title]`.
    New(Option<String>),
    /// `/reset`.
    Reset,
    /// `/stop`.
    Stop,
    /// `/queue <prompt>` or `/q <prompt>` (the prompt may be empty: usage error).
    Queue(String),
    /// `/status`.
    Status,
    /// `/resume [session_id]`.
    Resume(Option<String>),
    /// `/help`.
    Help,
    /// `/whoami`: the caller's platform, scope, user id and tier (as Hermes).
    Whoami,
    /// `/sessions`: this chat's recent sessions (as `/resume` without an id).
    Sessions,
    /// `/usage`: this session's token usage.
    Usage,
}

/// Parses `text` as a command. Unknown `/words` are not commands (they go to the agent).
/// Telegram's `/cmd@botname` form is accepted.
pub fn parse(text: &str) -> Option<Cmd> {
    let t = text.trim_start();
    let rest = t.strip_prefix('/')?;
    let (word, arg) = rest.split_once(char::is_whitespace).map_or((rest, ""), |(w, a)| (w, a.trim()));
    let word = word.split('@').next().unwrap_or(word).to_ascii_lowercase();
    let opt = |a: &str| (!a.is_empty()).then(|| a.to_string());
    Some(match word.as_str() {
        "new" => Cmd::New(opt(arg)),
        "reset" => Cmd::Reset,
        "stop" => Cmd::Stop,
        "queue" | "q" => Cmd::Queue(arg.to_string()),
        "status" => Cmd::Status,
        "resume" => Cmd::Resume(opt(arg)),
        "help" | "start" => Cmd::Help,
        "whoami" => Cmd::Whoami,
        "sessions" => Cmd::Sessions,
        "usage" => Cmd::Usage,
        _ => return None,
    })
}

/// The commands of the chat menus (Telegram's `setMyCommands`), one `(name, description)`
/// each, in `/help`'s order.
pub const MENU: [(&str, &str); 10] = [
    ("new", "Start a fresh conversation"),
    ("reset", "Same as /new"),
    ("stop", "Stop the running task"),
    ("queue", "Run a prompt after the current one"),
    ("status", "Session, queue and schedule information"),
    ("resume", "List recent sessions, or switch back to one"),
    ("sessions", "List this chat's recent sessions"),
    ("usage", "Token usage of this session"),
    ("whoami", "Your platform, user id and access tier"),
    ("help", "The list of commands"),
];

/// The `/help` text.
pub const HELP: &str = "Commands:\n\
/new [title] — start a fresh conversation (clears queued messages)\n\
/reset — same as /new\n\
/stop — stop the running task (queued items are kept)\n\
/queue <prompt> (or /q) — run this prompt as its own turn after the current one\n\
/status — session, queue and schedule information\n\
/resume [session_id] — list recent sessions, or switch back to one\n\
/sessions — list this chat's recent sessions\n\
/usage — token usage of this session\n\
/whoami — your platform, user id and access tier\n\
/help — this list";

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_commands() {
        assert_eq!(parse("/new"), Some(Cmd::New(None)));
        assert_eq!(parse("/new  Trip plans "), Some(Cmd::New(Some("Trip plans".into()))));
        assert_eq!(parse("/q  do this\nand that"), Some(Cmd::Queue("do this\nand that".into())));
        assert_eq!(parse("/queue"), Some(Cmd::Queue(String::new())));
        assert_eq!(parse("/STOP@my_bot"), Some(Cmd::Stop));
        assert_eq!(parse("/resume 20260101_000000_abcdef12"), Some(Cmd::Resume(Some("20260101_000000_abcdef12".into()))));
        assert_eq!(parse("/whoami"), Some(Cmd::Whoami));
        assert_eq!(parse("/sessions@bot"), Some(Cmd::Sessions));
        assert_eq!(parse("/usage"), Some(Cmd::Usage));
        for (c, _) in MENU {
            assert!(HELP.lines().any(|l| l.starts_with(&format!("/{c}"))), "/help lists /{c}");
            assert!(parse(&format!("/{c}")).is_some(), "/{c} is a command");
        }
        assert_eq!(parse("/etc/passwd is a file"), None);
        assert_eq!(parse("hello /new"), None);
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,40}") { let _ = parse(&s); }
    }
}
