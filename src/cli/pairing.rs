//! `hermes-zero pairing list|approve|revoke`: DM pairing from the terminal, through the same
//! use cases as the dashboard's Pairing tab (docs/pairing.md).

use super::PairingCmd;
use crate::app::{AppError, is_platform_name};
use crate::config::Loaded;
use crate::runtime;
use std::path::Path;
use std::process::ExitCode;

/// Runs one `pairing` sub-command: 0 done, 1 refused (wrong code, lockout, unknown user),
/// 2 usage error (a bad platform name).
pub async fn run(home: &Path, cfg: Loaded, cmd: PairingCmd) -> anyhow::Result<ExitCode> {
    let platform = match &cmd {
        PairingCmd::Approve { platform, .. } | PairingCmd::Revoke { platform, .. } => Some(platform.clone()),
        PairingCmd::List { .. } => None,
    };
    if let Some(p) = platform.filter(|p| !is_platform_name(p)) {
        eprintln!("hermes-zero: `{p}` is not a platform name (e.g. telegram)");
        return Ok(ExitCode::from(2));
    }
    let app = runtime::build_app(home, cfg).await?;
    let pairing = app.pairing();
    let res = match cmd {
        PairingCmd::List { json } => pairing.list().await.map(|l| {
            if json {
                println!("{}", serde_json::to_string_pretty(&l).unwrap_or_default());
                return;
            }
            println!("Pending ({}):", l.pending.len());
            for p in &l.pending {
                println!("  {:<10} {}  user {} {}  {} min ago", p.platform, p.code, p.user_id, p.user_name, p.age_minutes);
            }
            println!("Approved ({}):", l.approved.len());
            for a in &l.approved {
                println!("  {:<10} user {} {}", a.platform, a.user_id, a.user_name);
            }
        }),
        PairingCmd::Approve { platform, code } => pairing.approve(&platform, &code).await.map(|p| {
            let name = if p.user_name.is_empty() { String::new() } else { format!(" ({})", p.user_name) };
            println!("Approved {} user {}{name}.", p.platform, p.user_id);
        }),
        PairingCmd::Revoke { platform, user } => match pairing.revoke(&platform, &user).await {
            Ok(true) => {
                println!("Revoked {platform} user {user}.");
                Ok(())
            }
            Ok(false) => Err(AppError::NotFound(format!("{platform} user {user} is not approved"))),
            Err(e) => Err(e),
        },
    };
    match res {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(AppError::BadRequest(m) | AppError::NotFound(m)) => {
            eprintln!("hermes-zero: {m}");
            Ok(ExitCode::FAILURE)
        }
        Err(e) => Err(e.into()),
    }
}
