//! DM pairing (CONTRACT §17, docs/pairing.md): who is let in besides the allow lists, what an
//! unknown sender is answered, and the operator's list/approve/revoke. The rules are
//! `core::pairing`; the state of each platform is one meta record `pairing:<platform>`,
//! written compare-and-set ([`crate::ports::MetaStore::swap_meta`]), so processes sharing a
//! store (SQLite file or DynamoDB table) never lose an update and a code is approved once.

use crate::app::{App, AppError};
use crate::core::ids::ChatType;
use crate::core::inbound::Inbound;
use crate::core::pairing::{self, Approval, Approved, DmBehavior, Fresh, PlatformPairing, Request};
use crate::ports::StoreError;
use rand::Rng;
use std::collections::BTreeMap;

/// The refusal sent to users who are not on the allow list.
pub const REFUSAL: &str = "⛔ Sorry, this agent is private and you are not on its allow list. Ask its owner to add your user id.";

/// The record listing every platform that has pairing state.
const INDEX: &str = "pairing:platforms";
/// Compare-and-set attempts before giving up as contended.
const ATTEMPTS: usize = 20;

fn key(platform: &str) -> String {
    format!("pairing:{platform}")
}

/// Whether a sender got in, and if not what was sent.
pub(in crate::app) enum Admission {
    /// On an allow list, or paired.
    Allowed,
    /// Not let in; what Hermes answers (a code, "too many", a refusal; `None`: nothing) was
    /// sent on the origin's reply path and is handed back for a caller that answers itself.
    Denied(Option<String>),
}

impl App {
    pub(in crate::app) fn epoch(&self) -> f64 {
        self.inner.clock.now().timestamp_millis() as f64 / 1000.0
    }

    /// One platform's pairing state, with the stored text it was read from.
    pub(in crate::app) async fn pairing_state(&self, platform: &str) -> Result<(Option<String>, PlatformPairing), AppError> {
        let raw = self.inner.store.get_meta(&key(platform)).await?;
        let st = match &raw {
            None => PlatformPairing::default(),
            Some(v) => serde_json::from_str(v).map_err(|e| StoreError::Corrupt { what: key(platform), reason: e.to_string() })?,
        };
        Ok((raw, st))
    }

    /// Applies `f` to one platform's state, compare-and-set, retried on a lost race (with a
    /// fresh read, so `f` sees the winner's write). Nothing is written when `f` changes nothing.
    pub(in crate::app) async fn update_pairing<T>(&self, platform: &str, f: impl FnMut(&mut PlatformPairing) -> T) -> Result<T, AppError> {
        self.update_pairing_from(platform, None, f).await
    }

    /// [`Self::update_pairing`], starting from a state the caller has just read (`read`:
    /// the stored text and its state), which saves the first read.
    async fn update_pairing_from<T>(
        &self,
        platform: &str,
        mut read: Option<(Option<String>, PlatformPairing)>,
        mut f: impl FnMut(&mut PlatformPairing) -> T,
    ) -> Result<T, AppError> {
        for _ in 0..ATTEMPTS {
            let (raw, before) = match read.take() {
                Some(r) => r,
                None => self.pairing_state(platform).await?,
            };
            let mut after = before.clone();
            let out = f(&mut after);
            if after == before {
                return Ok(out);
            }
            let text = serde_json::to_string(&after).map_err(|e| AppError::BadRequest(e.to_string()))?;
            if self.inner.store.swap_meta(&key(platform), raw.as_deref(), &text).await? {
                if raw.is_none() {
                    self.index_platform(platform).await?;
                }
                return Ok(out);
            }
            tokio::task::yield_now().await;
        }
        Err(AppError::Contended)
    }

    async fn index_platform(&self, platform: &str) -> Result<(), AppError> {
        for _ in 0..ATTEMPTS {
            let raw = self.inner.store.get_meta(INDEX).await?;
            let mut names: Vec<String> = raw.as_deref().and_then(|v| serde_json::from_str(v).ok()).unwrap_or_default();
            if names.iter().any(|n| n == platform) {
                return Ok(());
            }
            names.push(platform.to_string());
            names.sort();
            let text = serde_json::to_string(&names).map_err(|e| AppError::BadRequest(e.to_string()))?;
            if self.inner.store.swap_meta(INDEX, raw.as_deref(), &text).await? {
                return Ok(());
            }
        }
        Err(AppError::Contended)
    }

    /// Every platform with pairing state, by name.
    pub(in crate::app) async fn pairing_platforms(&self) -> Result<Vec<String>, AppError> {
        let raw = self.inner.store.get_meta(INDEX).await?;
        Ok(raw.as_deref().and_then(|v| serde_json::from_str(v).ok()).unwrap_or_default())
    }

    /// What an unknown DM sender on `platform` gets (Hermes' config keys).
    pub(in crate::app) fn dm_behavior(&self, platform: &str) -> DmBehavior {
        let p = self.inner.cfg.platform(platform);
        let global = self.inner.cfg.settings.unauthorized_dm_behavior.as_deref();
        pairing::dm_behavior(platform, p.unauthorized_dm_behavior.as_deref(), global, !p.allowed_users.is_empty())
    }

    /// The allow lists, then the pairing store; for a sender let in by neither, sends what
    /// Hermes sends (`gateway/run.py`): in a DM a code, "too many", or nothing; elsewhere (and
    /// where this gateway keeps its refusal) the refusal. Groups are never paired.
    pub(in crate::app) async fn admit(&self, msg: &Inbound) -> Result<Admission, AppError> {
        let (origin, path) = (&msg.origin, msg.reply);
        if self.is_allowed(origin) {
            return Ok(Admission::Allowed);
        }
        let Some(user) = origin.user_id.as_deref() else {
            self.reply(origin, path, REFUSAL).await;
            return Ok(Admission::Denied(Some(REFUSAL.into())));
        };
        let state = self.pairing_state(&origin.platform).await?;
        if state.1.is_approved(user) {
            return Ok(Admission::Allowed);
        }
        let behavior = self.dm_behavior(&origin.platform);
        let dm = origin.chat_type == ChatType::Dm;
        let text = match behavior {
            DmBehavior::Ignore => {
                tracing::info!(user_id = %user, "ignored: not on the allow list");
                None
            }
            DmBehavior::Pair if dm => {
                let now = self.epoch();
                let name = msg.user_name.clone().or_else(|| origin.chat_name.clone()).unwrap_or_default();
                let answer = self
                    .update_pairing_from(&origin.platform, Some(state), |st| {
                        let mut rng = rand::rng();
                        let mut pick = |n: usize| rng.random_range(0..n);
                        let (salt, id) = (rand::random::<[u8; 16]>(), rand::random::<[u8; 8]>());
                        st.request(user, &name, now, Fresh { pick: &mut pick, salt, id })
                    })
                    .await?;
                // The code never goes into a log line (as Hermes).
                tracing::info!(user_id = %user, "unknown DM sender: pairing");
                match answer {
                    Request::Code(code) => Some(pairing::code_message(&origin.platform, &code)),
                    Request::TooMany => Some(pairing::TOO_MANY.to_string()),
                    Request::Silent => None,
                }
            }
            DmBehavior::Pair | DmBehavior::Refuse => {
                tracing::info!(user_id = %user, "refused: not on the allow list");
                Some(REFUSAL.to_string())
            }
        };
        if let Some(t) = &text {
            self.reply(origin, path, t).await;
        }
        Ok(Admission::Denied(text))
    }

    /// Approves a pending code of `platform`.
    pub(in crate::app) async fn approve_code(&self, platform: &str, code: &str) -> Result<Approval, AppError> {
        let now = self.epoch();
        self.update_pairing(platform, |st| st.approve(code, now)).await
    }

    /// Removes an approved user; false if they were not approved.
    pub(in crate::app) async fn revoke_user(&self, platform: &str, user: &str) -> Result<bool, AppError> {
        self.update_pairing(platform, |st| st.revoke(user)).await
    }

    /// Adds approved users (Hermes' `<platform>-approved.json`); returns how many were new.
    pub(in crate::app) async fn import_approved(&self, platform: &str, users: &BTreeMap<String, Approved>) -> Result<usize, AppError> {
        self.update_pairing(platform, |st| {
            let mut added = 0;
            for (id, a) in users {
                let id = id.trim();
                if !id.is_empty() && !st.approved.contains_key(id) {
                    st.approved.insert(id.to_string(), a.clone());
                    added += 1;
                }
            }
            added
        })
        .await
    }
}
