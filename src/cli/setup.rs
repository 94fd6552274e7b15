//! Platform setup commands (docs/design.md#cli), so no step needs curl:
//! `telegram set-webhook | delete-webhook | info` and `discord register-commands`.
//! Each prints what the platform answered; missing credentials exit 78.

use super::{DiscordCmd, EXIT_CONFIG, TelegramCmd};
use crate::channels::discord::commands::SetupClient;
use crate::channels::telegram::bot::BotApi;
use crate::config::Loaded;
use std::process::ExitCode;

fn config_error(msg: &str) -> anyhow::Result<ExitCode> {
    eprintln!("hermes-zero: {msg}");
    Ok(ExitCode::from(EXIT_CONFIG))
}

/// The webhook URL for `base`: `<base>/webhooks/telegram`; https, or http only for localhost.
pub fn webhook_url(base: &str) -> Result<String, String> {
    let u = url::Url::parse(base.trim()).map_err(|e| format!("`{base}` is not a URL: {e}"))?;
    let local = matches!(u.host_str(), Some("localhost" | "127.0.0.1" | "[::1]" | "::1"));
    if u.scheme() != "https" && !(u.scheme() == "http" && local) {
        return Err(format!("`{base}` must be an https:// URL (Telegram calls only HTTPS webhooks; http is accepted for localhost only)"));
    }
    if u.query().is_some() || u.fragment().is_some() {
        return Err(format!("`{base}` must be the public base URL, without a query or fragment"));
    }
    Ok(format!("{}/webhooks/telegram", u.as_str().trim_end_matches('/')))
}

/// `telegram …`.
pub async fn telegram(cfg: &Loaded, action: TelegramCmd) -> anyhow::Result<ExitCode> {
    let Some(token) = cfg.secrets.telegram_bot_token.clone() else {
        return config_error("TELEGRAM_BOT_TOKEN is not set (create a bot with @BotFather and set its token)");
    };
    let api = BotApi::new(&cfg.settings.platforms.telegram.api_base, token);
    let answer = match action {
        TelegramCmd::SetWebhook { public_url } => {
            let Some(secret) = cfg.secrets.telegram_webhook_secret.clone() else {
                return config_error(
                    "TELEGRAM_WEBHOOK_SECRET is not set: choose a random secret (e.g. `openssl rand -hex 32`), set it for `serve` and here",
                );
            };
            let url = match webhook_url(&public_url) {
                Ok(u) => u,
                Err(e) => return config_error(&e),
            };
            println!("registering {url} (with TELEGRAM_WEBHOOK_SECRET as the secret token)");
            let answer = api.set_webhook(&url, &secret).await;
            if answer.is_ok() {
                // The command menu, so users see /new, /status, /whoami… as they type `/`.
                match api.set_my_commands(&crate::core::commands::MENU).await {
                    Ok(_) => println!("registered {} commands (setMyCommands)", crate::core::commands::MENU.len()),
                    Err(e) => eprintln!("warning: the command menu was not registered: {e}"),
                }
            }
            answer
        }
        TelegramCmd::DeleteWebhook => api.delete_webhook().await,
        TelegramCmd::Info => api.webhook_info().await,
    };
    let result = answer.map_err(|e| anyhow::anyhow!("Telegram refused: {e}"))?;
    println!("Telegram answered: ok, {}", serde_json::to_string_pretty(&result)?);
    Ok(ExitCode::SUCCESS)
}

/// `discord …`.
pub async fn discord(cfg: &Loaded, action: DiscordCmd) -> anyhow::Result<ExitCode> {
    let DiscordCmd::RegisterCommands { guild, application_id } = action;
    let Some(token) = cfg.secrets.discord_bot_token.clone() else {
        return config_error("DISCORD_BOT_TOKEN is not set (Developer Portal → your application → Bot → Reset Token)");
    };
    let client = SetupClient::new(&cfg.settings.platforms.discord.api_base, token);
    let app_id = match application_id.filter(|s| !s.trim().is_empty()) {
        Some(id) => id,
        None => client
            .application_id()
            .await
            .map_err(|e| anyhow::anyhow!("cannot learn the application id (set DISCORD_APPLICATION_ID): {e}"))?,
    };
    let answer = client.register(&app_id, guild.as_deref()).await.map_err(|e| anyhow::anyhow!("registering the commands failed: {e}"))?;
    let names: Vec<&str> = answer.as_array().map(|a| a.iter().filter_map(|c| c["name"].as_str()).collect()).unwrap_or_default();
    let scope = guild.map_or_else(|| "globally (may take up to an hour to appear)".to_string(), |g| format!("in guild {g}"));
    println!("registered {} commands {scope} for application {app_id}: /{}", names.len(), names.join(", /"));
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhook_urls() {
        assert_eq!(webhook_url("https://bot.example.com").unwrap(), "https://bot.example.com/webhooks/telegram");
        assert_eq!(webhook_url("https://bot.example.com/hz/").unwrap(), "https://bot.example.com/hz/webhooks/telegram");
        assert_eq!(webhook_url("http://localhost:8080").unwrap(), "http://localhost:8080/webhooks/telegram");
        for bad in ["http://bot.example.com", "ftp://x", "bot.example.com", "https://x.com/?a=1", ""] {
            assert!(webhook_url(bad).is_err(), "{bad}");
        }
    }
}
