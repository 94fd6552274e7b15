//! `hermes-zero skills list|show NAME|export DIR`: the agent's skills from the terminal —
//! the store's (written by `skill_manage`, imported) over `$HERMES_HOME/skills` — through the
//! same service as the dashboard's Skills tab (`app::Skills`).

use super::SkillsCmd;
use crate::app::{App, AppError};
use std::process::ExitCode;

/// Runs one `skills` sub-command.
pub async fn run(app: App, cmd: SkillsCmd) -> anyhow::Result<ExitCode> {
    let skills = app.skills();
    match cmd {
        SkillsCmd::List { json } => {
            let list = skills.list().await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else if list.is_empty() {
                println!("no skills (none in the store, none under {})", app.skills_dir().display());
            } else {
                for s in &list {
                    let name = s["name"].as_str().unwrap_or_default();
                    let source = s["source"].as_str().unwrap_or_default();
                    println!("{name:<32} {source:<6} {}", s["description"].as_str().unwrap_or_default());
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        SkillsCmd::Show { name, json } => match skills.show(&name).await {
            Ok(v) if json => {
                println!("{}", serde_json::to_string_pretty(&v)?);
                Ok(ExitCode::SUCCESS)
            }
            Ok(v) => {
                print!("{}", v["content"].as_str().unwrap_or_default());
                Ok(ExitCode::SUCCESS)
            }
            Err(AppError::NotFound(e)) => {
                eprintln!("hermes-zero: {e} (see `hermes-zero skills list`)");
                Ok(ExitCode::from(1))
            }
            Err(e) => Err(e.into()),
        },
        SkillsCmd::Export { dir } => {
            let n = skills.export(&dir).await?;
            println!("exported {n} skill(s) to {}", dir.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}
