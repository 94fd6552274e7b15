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
    /// `/sethome`: this chat becomes its platform's home channel.
    SetHome,
    /// `/model [provider:]model [--global]` (the raw arguments; see [`ModelArg::parse`]).
    Model(String),
    /// `/retry`: answer the last user message again.
    Retry,
    /// `/undo [N]`: remove the last N exchanges (the raw argument).
    Undo(String),
    /// `/title [text]`.
    Title(Option<String>),
    /// `/compress`: summarize the conversation's context now.
    Compress,
}

impl Cmd {
    /// The command's name as typed (without the slash), for messages about it.
    pub fn name(&self) -> &'static str {
        match self {
            Cmd::New(_) => "new",
            Cmd::Reset => "reset",
            Cmd::Stop => "stop",
            Cmd::Queue(_) => "queue",
            Cmd::Status => "status",
            Cmd::Resume(_) => "resume",
            Cmd::Help => "help",
            Cmd::Whoami => "whoami",
            Cmd::Sessions => "sessions",
            Cmd::Usage => "usage",
            Cmd::SetHome => "sethome",
            Cmd::Model(_) => "model",
            Cmd::Retry => "retry",
            Cmd::Undo(_) => "undo",
            Cmd::Title(_) => "title",
            Cmd::Compress => "compress",
        }
    }

    /// Whether the command changes the conversation or its settings, so it waits for the
    /// running turn: Hermes refuses these mid-turn ([`busy_refusal`]).
    pub fn needs_idle(&self) -> bool {
        matches!(self, Cmd::SetHome | Cmd::Model(_) | Cmd::Retry | Cmd::Undo(_) | Cmd::Title(_) | Cmd::Compress)
    }
}

/// Hermes' answer to a command that cannot run while a turn runs (`gateway/run.py`).
pub fn busy_refusal(cmd: &Cmd) -> String {
    match cmd {
        Cmd::Model(_) => "Agent is running — wait or /stop first, then switch models.".to_string(),
        c => format!("⏳ Agent is running — `/{}` can't run mid-turn. Wait for the current response or `/stop` first.", c.name()),
    }
}

/// Splits `/word rest` into the lowercased word (Telegram's `@botname` suffix dropped) and
/// the trimmed rest; `None` when `text` does not start with a slash.
pub fn split_word(text: &str) -> Option<(String, &str)> {
    let rest = text.trim_start().strip_prefix('/')?;
    let (word, arg) = rest.split_once(char::is_whitespace).map_or((rest, ""), |(w, a)| (w, a.trim()));
    let word = word.split('@').next().unwrap_or(word).to_ascii_lowercase();
    (!word.is_empty()).then_some((word, arg))
}

/// Parses `text` as a command. Unknown `/words` are not commands (they go to the agent, or
/// run a skill of that name). Telegram's `/cmd@botname` form is accepted.
pub fn parse(text: &str) -> Option<Cmd> {
    let (word, arg) = split_word(text)?;
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
        "sethome" | "set-home" | "set_home" => Cmd::SetHome,
        "model" => Cmd::Model(arg.to_string()),
        "retry" => Cmd::Retry,
        "undo" => Cmd::Undo(arg.to_string()),
        "title" => Cmd::Title(opt(arg)),
        "compress" => Cmd::Compress,
        _ => return None,
    })
}

/// The skill a `/<skill-name> [text]` message names, as Hermes resolves it
/// (`agent/skill_commands.py`): the word with `_` read as `-` (Telegram's menu cannot hold
/// `-`), and the text after it. `None` for a command word or no slash.
pub fn skill_word(text: &str) -> Option<(String, &str)> {
    let (word, arg) = split_word(text)?;
    if parse(text).is_some() {
        return None;
    }
    Some((word.replace('_', "-"), arg))
}

/// Hermes' user message for a skill invoked as `/<name> [text]`
/// (`build_skill_invocation_message`): the activation note, the skill's `SKILL.md`, and
/// the user's instruction when one was given.
pub fn skill_invocation(name: &str, skill_md: &str, instruction: &str) -> String {
    let mut parts = vec![
        format!(
            "[IMPORTANT: The user has invoked the \"{name}\" skill, indicating they want you to follow its instructions. The full skill content is loaded below.]"
        ),
        String::new(),
        skill_md.trim().to_string(),
    ];
    if !instruction.trim().is_empty() {
        parts.push(String::new());
        parts.push(format!("The user has provided the following instruction alongside the skill invocation: {}", instruction.trim()));
    }
    parts.join("\n")
}

/// `/model`'s arguments: `[provider:]model`, or `model --provider <name>`, and `--global`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelArg {
    /// The provider named (`provider:` prefix or `--provider`), lowercased.
    pub provider: Option<String>,
    /// The model id (empty: show the current model).
    pub model: String,
    /// `--global`: the agent's default, not this session's.
    pub global: bool,
}

impl ModelArg {
    /// Parses `/model`'s arguments. A `name:` prefix is a provider when `is_provider` knows
    /// it; a prefix that looks like a provider name (letters, digits, `-`, `_`) and is not
    /// one is refused, so a typo never becomes a model id. Model ids that hold a colon
    /// after a `/` or `.` (`vendor/model:free`) stay whole.
    pub fn parse(raw: &str, is_provider: impl Fn(&str) -> bool) -> Result<Self, String> {
        let mut out = ModelArg::default();
        let mut words = Vec::new();
        let mut it = raw.split_whitespace();
        while let Some(w) = it.next() {
            match w {
                "--global" | "-g" => out.global = true,
                "--session" => {}
                "--provider" => {
                    let p = it.next().ok_or("Usage: /model <name> --provider <provider>")?;
                    out.provider = Some(p.to_ascii_lowercase());
                }
                w if w.starts_with("--") => return Err(format!("Unknown option `{w}`. Usage: /model [provider:]model [--global]")),
                w => words.push(w),
            }
        }
        if words.len() > 1 {
            return Err("Usage: /model [provider:]model [--global] (one model id)".into());
        }
        let word = words.first().copied().unwrap_or_default();
        out.model = word.to_string();
        if let Some((p, m)) = word.split_once(':') {
            let looks_like_provider = !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if is_provider(p) {
                out.provider = Some(p.to_ascii_lowercase());
                out.model = m.to_string();
            } else if looks_like_provider {
                return Err(format!("Unknown provider `{p}`."));
            }
        }
        if let Some(p) = out.provider.as_deref().filter(|p| !is_provider(p)) {
            return Err(format!("Unknown provider `{p}`."));
        }
        if out.model.is_empty() && (out.provider.is_some() || out.global) {
            return Err("Usage: /model [provider:]model [--global] (name the model)".into());
        }
        Ok(out)
    }
}

/// Hermes' title cleanup (`SessionDB.sanitize_title`): control and invisible characters
/// dropped, whitespace runs collapsed; `Ok(None)` when nothing is left, `Err` past 100
/// characters.
pub fn clean_title(raw: &str) -> Result<Option<String>, String> {
    let invisible = |c: char| matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}' | '\u{fff9}'..='\u{fffc}');
    let kept: String = raw.chars().filter(|c| !invisible(*c) && (!c.is_control() || c.is_whitespace())).collect();
    let cleaned = kept.split_whitespace().collect::<Vec<_>>().join(" ");
    let n = cleaned.chars().count();
    if n > MAX_TITLE_CHARS {
        return Err(format!("Title too long ({n} chars, max {MAX_TITLE_CHARS})"));
    }
    Ok((!cleaned.is_empty()).then_some(cleaned))
}

/// Hermes' `MAX_TITLE_LENGTH`.
pub const MAX_TITLE_CHARS: usize = 100;

/// `/undo`'s count: none is 1, `N` ≥ 1; Hermes' wording for anything else.
pub fn undo_count(raw: &str) -> Result<usize, String> {
    let Some(first) = raw.split_whitespace().next() else { return Ok(1) };
    first.parse::<usize>().map(|n| n.max(1)).map_err(|_| format!("Invalid count \"{first}\" — use /undo or /undo N."))
}

/// The commands of the chat menus (Telegram's `setMyCommands`, Discord's registration),
/// one `(name, description)` each, in `/help`'s order.
pub const MENU: [(&str, &str); 16] = [
    ("new", "Start a fresh conversation"),
    ("reset", "Same as /new"),
    ("stop", "Stop the running task"),
    ("queue", "Run a prompt after the current one"),
    ("retry", "Answer the last message again"),
    ("undo", "Remove the last exchange"),
    ("title", "Show or set this session's title"),
    ("compress", "Summarize the conversation's context now"),
    ("model", "Show or switch this session's model"),
    ("status", "Session, queue and schedule information"),
    ("resume", "List recent sessions, or switch back to one"),
    ("sessions", "List this chat's recent sessions"),
    ("usage", "Token usage of this session"),
    ("sethome", "Make this chat the platform's home channel"),
    ("whoami", "Your platform, user id and access tier"),
    ("help", "The list of commands"),
];

/// The `/help` text.
pub const HELP: &str = "Commands:\n\
/new [title] — start a fresh conversation (clears queued messages)\n\
/reset — same as /new\n\
/stop — stop the running task (queued items are kept)\n\
/queue <prompt> (or /q) — run this prompt as its own turn after the current one\n\
/retry — answer your last message again\n\
/undo [N] — remove the last exchange (or N of them)\n\
/title [text] — show or set this session's title\n\
/compress — summarize this conversation's context now\n\
/model [provider:]model [--global] — show or switch the model (this session; --global for every session)\n\
/status — session, queue and schedule information\n\
/resume [session_id] — list recent sessions, or switch back to one\n\
/sessions — list this chat's recent sessions\n\
/usage — token usage of this session\n\
/sethome — make this chat the platform's home channel (job and message deliveries)\n\
/whoami — your platform, user id and access tier\n\
/help — this list\n\
/<skill-name> [text] — run a turn with that installed skill";

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
        assert_eq!(parse("/sethome@bot"), Some(Cmd::SetHome));
        assert_eq!(parse("/model openrouter:x/y --global"), Some(Cmd::Model("openrouter:x/y --global".into())));
        assert_eq!(parse("/retry"), Some(Cmd::Retry));
        assert_eq!(parse("/undo 2"), Some(Cmd::Undo("2".into())));
        assert_eq!(parse("/title  My  trip "), Some(Cmd::Title(Some("My  trip".into()))));
        assert_eq!(parse("/title"), Some(Cmd::Title(None)));
        assert_eq!(parse("/compress"), Some(Cmd::Compress));
        for (c, _) in MENU {
            assert!(HELP.lines().any(|l| l.starts_with(&format!("/{c}"))), "/help lists /{c}");
            let cmd = parse(&format!("/{c}"));
            assert_eq!(cmd.as_ref().map(Cmd::name), Some(c), "/{c} is a command named {c}");
        }
        assert_eq!(parse("/etc/passwd is a file"), None);
        assert_eq!(parse("hello /new"), None);
    }

    #[test]
    fn commands_that_change_the_conversation_wait_for_the_turn() {
        for c in ["sethome", "model x", "retry", "undo", "title t", "compress"] {
            let cmd = parse(&format!("/{c}")).unwrap();
            assert!(cmd.needs_idle(), "/{c}");
            assert!(busy_refusal(&cmd).contains("/stop"), "{}", busy_refusal(&cmd));
        }
        for c in ["new", "stop", "status", "queue x", "help", "whoami", "usage", "sessions", "resume"] {
            assert!(!parse(&format!("/{c}")).unwrap().needs_idle(), "/{c} runs mid-turn");
        }
        assert_eq!(
            busy_refusal(&Cmd::Retry),
            "⏳ Agent is running — `/retry` can't run mid-turn. Wait for the current response or `/stop` first."
        );
    }

    #[test]
    fn skill_words_are_the_unknown_commands() {
        assert_eq!(skill_word("/code_review@bot please look"), Some(("code-review".to_string(), "please look")));
        assert_eq!(skill_word("/arxiv"), Some(("arxiv".to_string(), "")));
        assert_eq!(skill_word("/new"), None);
        assert_eq!(skill_word("hello"), None);
        let m = skill_invocation("arxiv", "---\nname: arxiv\n---\n# Arxiv\nSearch papers.\n", " find LLM papers ");
        assert!(m.starts_with("[IMPORTANT: The user has invoked the \"arxiv\" skill, indicating they want you to follow its instructions. The full skill content is loaded below.]\n\n---"));
        assert!(m.ends_with("\n\nThe user has provided the following instruction alongside the skill invocation: find LLM papers"), "{m}");
        assert!(!skill_invocation("a", "body", "  ").contains("alongside"));
    }

    #[test]
    fn model_arguments() {
        let known = |p: &str| ["openrouter", "anthropic", "custom"].contains(&p.to_ascii_lowercase().as_str());
        let p = |s: &str| ModelArg::parse(s, known);
        assert_eq!(p(""), Ok(ModelArg::default()));
        assert_eq!(p("gpt-5"), Ok(ModelArg { provider: None, model: "gpt-5".into(), global: false }));
        assert_eq!(
            p("OpenRouter:anthropic/claude-sonnet-4.5 --global"),
            Ok(ModelArg { provider: Some("openrouter".into()), model: "anthropic/claude-sonnet-4.5".into(), global: true })
        );
        assert_eq!(p("claude-x --provider anthropic").unwrap().provider.as_deref(), Some("anthropic"));
        assert_eq!(p("meta/llama-3:free").unwrap(), ModelArg { provider: None, model: "meta/llama-3:free".into(), global: false });
        assert_eq!(p("nosuch:model"), Err("Unknown provider `nosuch`.".into()));
        assert_eq!(p("m --provider nosuch"), Err("Unknown provider `nosuch`.".into()));
        assert!(p("--global").is_err() && p("a b").is_err() && p("a --bogus").is_err() && p("a --provider").is_err());
    }

    #[test]
    fn titles_and_undo_counts() {
        assert_eq!(clean_title("  My \u{200b}trip\n\tplans \u{7}"), Ok(Some("My trip plans".into())));
        assert_eq!(clean_title(" \u{feff} "), Ok(None));
        assert!(clean_title(&"x".repeat(101)).unwrap_err().contains("max 100"));
        assert_eq!(clean_title(&"é".repeat(100)).unwrap().map(|t| t.chars().count()), Some(100));
        assert_eq!((undo_count(""), undo_count(" 3 "), undo_count("0")), (Ok(1), Ok(3), Ok(1)));
        assert_eq!(undo_count("two"), Err("Invalid count \"two\" — use /undo or /undo N.".into()));
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,40}") {
            let _ = parse(&s);
            let _ = skill_word(&s);
            let _ = ModelArg::parse(&s, |p| p == "openai");
            let _ = clean_title(&s);
        }
    }
}
