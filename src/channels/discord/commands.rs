//! The slash commands the interactions endpoint handles (see `interaction`), as Discord's
//! application-command objects, and their registration:
//! `PUT {api_base}/applications/{application_id}[/guilds/{guild_id}]/commands` (a bulk
//! overwrite: the list replaces what was registered before).

use crate::clients::{describe, http_client};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};
use std::time::Duration;

/// Discord's option type for a string.
const STRING: u8 = 3;

fn command(name: &str, description: &str, option: Option<(&str, &str, bool)>) -> Value {
    let options: Vec<Value> =
        option.map(|(n, d, required)| json!({"type": STRING, "name": n, "description": d, "required": required})).into_iter().collect();
    // type 1: CHAT_INPUT (a slash command).
    json!({"type": 1, "name": name, "description": description, "options": options})
}

/// Every slash command `interaction::command_text` understands, with its options.
pub fn definitions() -> Vec<Value> {
    vec![
        command("ask", "Ask the agent", Some(("text", "What to ask", true))),
        command("new", "Start a fresh conversation (clears queued messages)", Some(("title", "Title of the new session", false))),
        command("reset", "Start a fresh conversation (same as /new)", None),
        command("stop", "Stop the running task (queued items are kept)", None),
        command("queue", "Run this prompt as its own turn after the current one", Some(("prompt", "The prompt to queue", true))),
        command("retry", "Answer your last message again", None),
        command("undo", "Remove the last exchange (or N of them)", Some(("count", "How many exchanges", false))),
        command("title", "Show or set this session's title", Some(("title", "The new title", false))),
        command("compress", "Summarize this conversation's context now", None),
        command(
            "model",
            "Show or switch the model ([provider:]model [--global])",
            Some(("model", "[provider:]model, optionally --global", false)),
        ),
        command("status", "Session, queue and schedule information", None),
        command("resume", "List recent sessions, or switch back to one", Some(("session_id", "The session to resume", false))),
        command("sessions", "List this chat's recent sessions", None),
        command("usage", "Token usage of this session", None),
        command("sethome", "Make this chat the platform's home channel", None),
        command("whoami", "Your platform, user id and access tier", None),
        command("help", "The list of commands", None),
    ]
}

/// Discord REST calls for setting the application up, with the bot token.
pub struct SetupClient {
    http: reqwest::Client,
    base: String,
    token: SecretString,
}

impl SetupClient {
    /// Client for `api_base` (e.g. `https://discord.com/api/v10`).
    pub fn new(api_base: &str, token: SecretString) -> Self {
        Self { http: http_client(Duration::from_secs(20)), base: api_base.trim_end_matches('/').to_string(), token }
    }

    async fn call(&self, req: reqwest::RequestBuilder) -> Result<Value, String> {
        let resp = req.header("Authorization", format!("Bot {}", self.token.expose_secret())).send().await.map_err(describe)?;
        let status = resp.status();
        let v: Value = resp.json().await.unwrap_or(Value::Null);
        if status.is_success() { Ok(v) } else { Err(format!("Discord answered HTTP {}: {v}", status.as_u16())) }
    }

    /// The bot's application id (`GET /applications/@me`).
    pub async fn application_id(&self) -> Result<String, String> {
        let v = self.call(self.http.get(format!("{}/applications/@me", self.base))).await?;
        v["id"].as_str().map(str::to_string).ok_or_else(|| format!("GET /applications/@me named no id: {v}"))
    }

    /// Registers [`definitions`] globally, or in one guild (instant); returns Discord's answer.
    pub async fn register(&self, application_id: &str, guild: Option<&str>) -> Result<Value, String> {
        let url = match guild {
            Some(g) => format!("{}/applications/{application_id}/guilds/{g}/commands", self.base),
            None => format!("{}/applications/{application_id}/commands", self.base),
        };
        self.call(self.http.put(url).json(&definitions())).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_definition_is_a_command_the_endpoint_understands() {
        let names: Vec<String> = definitions().iter().map(|d| d["name"].as_str().unwrap().to_string()).collect();
        assert_eq!(
            names,
            [
                "ask", "new", "reset", "stop", "queue", "retry", "undo", "title", "compress", "model", "status", "resume", "sessions",
                "usage", "sethome", "whoami", "help"
            ]
        );
        // Every chat menu command is a slash command here too, in the menu's order.
        let menu: Vec<&str> = crate::core::commands::MENU.iter().map(|(n, _)| *n).collect();
        assert_eq!(names[1..], menu[..]);
        for d in definitions() {
            let desc = d["description"].as_str().unwrap();
            assert!(!desc.is_empty() && desc.chars().count() <= 100, "Discord allows 1-100 characters: {desc}");
        }
    }
}
