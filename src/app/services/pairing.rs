//! [`Pairing`]: the operator's side of DM pairing (`hermes-zero pairing …`, the dashboard's
//! Pairing tab, `/api/pairing…`; docs/pairing.md).

use crate::app::{App, AppError};
use crate::core::pairing::{Approval, Approved, CODE_TTL_SECONDS, MAX_FAILED_ATTEMPTS, is_platform_name};
use serde::Serialize;
use std::collections::BTreeMap;

/// Pending codes and approved users of every platform. Cheap to clone.
#[derive(Clone)]
pub struct Pairing {
    pub(super) app: App,
}

/// A code waiting for approval, as Hermes lists it: the code itself is never shown (only a
/// hash is stored), `code` is the first 8 hex characters of its hash.
#[derive(Debug, Clone, Serialize)]
pub struct PendingView {
    /// Platform.
    pub platform: String,
    /// Hash prefix (tells entries apart).
    pub code: String,
    /// Who asked.
    pub user_id: String,
    /// Their name.
    pub user_name: String,
    /// Minutes since the code was made.
    pub age_minutes: i64,
}

/// An approved user.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovedView {
    /// Platform.
    pub platform: String,
    /// User id.
    pub user_id: String,
    /// Their name.
    pub user_name: String,
    /// When (epoch seconds).
    pub approved_at: f64,
}

/// Everything `pairing list` shows.
#[derive(Debug, Clone, Serialize)]
pub struct PairingList {
    /// Pending codes (unexpired).
    pub pending: Vec<PendingView>,
    /// Approved users.
    pub approved: Vec<ApprovedView>,
}

/// Who a code let in.
#[derive(Debug, Clone, Serialize)]
pub struct Paired {
    /// Platform.
    pub platform: String,
    /// User id.
    pub user_id: String,
    /// Their name.
    pub user_name: String,
}

fn check_platform(p: &str) -> Result<&str, AppError> {
    if is_platform_name(p) { Ok(p) } else { Err(AppError::BadRequest(format!("`{p}` is not a platform name (e.g. telegram)"))) }
}

impl Pairing {
    /// Pending codes and approved users, by platform.
    pub async fn list(&self) -> Result<PairingList, AppError> {
        let now = self.app.epoch();
        let mut out = PairingList { pending: Vec::new(), approved: Vec::new() };
        for platform in self.app.pairing_platforms().await? {
            let (_, st) = self.app.pairing_state(&platform).await?;
            for p in st.pending.values().filter(|p| now - p.created_at <= CODE_TTL_SECONDS) {
                out.pending.push(PendingView {
                    platform: platform.clone(),
                    code: p.hash.chars().take(8).collect(),
                    user_id: p.user_id.clone(),
                    user_name: p.user_name.clone(),
                    age_minutes: ((now - p.created_at) / 60.0) as i64,
                });
            }
            for (id, a) in &st.approved {
                out.approved.push(ApprovedView {
                    platform: platform.clone(),
                    user_id: id.clone(),
                    user_name: a.user_name.clone(),
                    approved_at: a.approved_at,
                });
            }
        }
        Ok(out)
    }

    /// Approves a pending code: the user it was given to is allowed from now on.
    pub async fn approve(&self, platform: &str, code: &str) -> Result<Paired, AppError> {
        let platform = check_platform(platform)?;
        if code.trim().is_empty() {
            return Err(AppError::BadRequest("the code must not be empty".into()));
        }
        match self.app.approve_code(platform, code).await? {
            Approval::Approved { user_id, user_name } => {
                tracing::info!(%platform, %user_id, "pairing approved");
                Ok(Paired { platform: platform.to_string(), user_id, user_name })
            }
            Approval::Invalid => Err(AppError::NotFound(format!("no pending code `{}` on {platform} (wrong or expired)", code.trim()))),
            Approval::LockedOut => Err(AppError::BadRequest(format!(
                "{platform} is locked for an hour after {MAX_FAILED_ATTEMPTS} failed approvals; try again later"
            ))),
        }
    }

    /// Removes an approved user; false if they were not approved.
    pub async fn revoke(&self, platform: &str, user: &str) -> Result<bool, AppError> {
        let platform = check_platform(platform)?;
        if user.trim().is_empty() {
            return Err(AppError::BadRequest("the user id must not be empty".into()));
        }
        self.app.revoke_user(platform, user).await
    }
}

impl Pairing {
    /// Adds Hermes' approved users of `platform` (`import`); returns how many were new.
    pub async fn import_approved(&self, platform: &str, users: &BTreeMap<String, Approved>) -> Result<usize, AppError> {
        let platform = check_platform(platform)?;
        self.app.import_approved(platform, users).await
    }
}

impl App {
    /// DM pairing for the operator: list, approve, revoke.
    pub fn pairing(&self) -> Pairing {
        Pairing { app: self.clone() }
    }
}
