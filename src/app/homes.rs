//! Home channels (docs/sessions.md#commands): each platform's configured
//! `home_channel` (`<PLATFORM>_HOME_CHANNEL`), overridden by the chat that last ran
//! `/sethome` there. Hermes' `/sethome` rewrites `<PLATFORM>_HOME_CHANNEL` in its `.env`, so
//! the chat that ran it wins until the next `/sethome`; here that choice is a store meta
//! record (one for all platforms), so it holds across processes and on DynamoDB, and the
//! configuration stays the operator's file.

use crate::app::{App, AppError};
use crate::core::access::AccessRules;
use crate::core::ids::Origin;
use crate::ports::Target;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Store meta record of the home channels set with `/sethome`.
pub const HOMES_KEY: &str = "home_channels";

/// One stored home channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredHome {
    /// The chat.
    pub chat_id: String,
    /// The topic or thread it was set from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// The chat's name when the platform gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// The home channels in force, by platform.
pub(in crate::app) type Homes = BTreeMap<String, Target>;

impl App {
    async fn stored_homes(&self) -> Result<(Option<String>, BTreeMap<String, StoredHome>), AppError> {
        let raw = self.inner.store.get_meta(HOMES_KEY).await?;
        let map = match raw.as_deref().map(serde_json::from_str::<BTreeMap<String, StoredHome>>) {
            Some(Ok(m)) => m,
            Some(Err(e)) => {
                tracing::warn!(error = %e, "stored home channels unreadable; using the configured ones");
                BTreeMap::new()
            }
            None => BTreeMap::new(),
        };
        Ok((raw, map))
    }

    /// The home channel of every platform that has one: the stored `/sethome` choice, else
    /// the configured one. A failed store read falls back to the configuration.
    pub(in crate::app) async fn homes(&self) -> Homes {
        let mut out = Homes::new();
        for (platform, chat) in self.access().homes {
            out.insert(platform.clone(), Target { platform, chat_id: chat, thread_id: None });
        }
        match self.stored_homes().await {
            Ok((_, stored)) => {
                for (platform, h) in stored {
                    out.insert(platform.clone(), Target { platform, chat_id: h.chat_id, thread_id: h.thread_id });
                }
            }
            Err(e) => tracing::warn!(error = %e, "stored home channels unavailable; using the configured ones"),
        }
        out
    }

    /// The access rules with `homes` as the home channels.
    pub(in crate::app) fn access_with(&self, homes: &Homes) -> AccessRules {
        let mut rules = self.access();
        rules.homes = homes.iter().map(|(p, t)| (p.clone(), t.chat_id.clone())).collect();
        rules
    }

    /// Makes `origin`'s chat its platform's home channel (compare-and-set on the record).
    pub(in crate::app) async fn set_home(&self, origin: &Origin) -> Result<(), AppError> {
        let home = StoredHome { chat_id: origin.chat_id.clone(), thread_id: origin.thread_id.clone(), name: origin.chat_name.clone() };
        for _ in 0..16 {
            let (raw, mut map) = self.stored_homes().await?;
            map.insert(origin.platform.clone(), home.clone());
            let next = serde_json::to_string(&map).map_err(|e| AppError::BadRequest(e.to_string()))?;
            if self.inner.store.swap_meta(HOMES_KEY, raw.as_deref(), &next).await? {
                return Ok(());
            }
        }
        Err(AppError::Contended)
    }
}
