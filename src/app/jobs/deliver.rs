//! Job delivery (docs/design.md#delivery): resolving `deliver` targets, and sending through the ledger
//! keyed by `(occurrence, target)` and by each part of a long message, so nothing is sent twice.
//! A target's row is written before its send (with the run's answer, for the first one); its
//! final status rides on the run's finishing write (`jobs::run`).

use crate::app::App;
use crate::app::jobs::types::Tail;
use crate::core::job::{DeliveryResult, Job, Occurrence};
use crate::ports::{DeliveryError, Target};

/// A resolved delivery target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// Stored only.
    Local,
    /// A chat.
    Chat(Target),
    /// Cannot be delivered (e.g. no home channel configured).
    Invalid(String),
}

impl App {
    /// Resolves a job's targets: `local`, `origin`, `<platform>` (home channel),
    /// `<platform>:<chat>[:<thread>]`; default `origin` if the job has one, else `local`.
    /// De-duplicated by resolved chat.
    pub(in crate::app) async fn resolve_targets(&self, job: &Job) -> Vec<(String, Resolved)> {
        let mut list = job.deliver.clone();
        if list.is_empty() {
            list.push(if job.origin.is_some() { "origin".into() } else { "local".into() });
        }
        // The home channels are read only when a target needs them (a bare platform, or a
        // chat checked against the delivery policy): a fire's store requests are budgeted.
        let needs_homes = list.iter().any(|l| match l.split(':').count() {
            1 => l != "local" && l != "origin",
            _ => job.origin.is_some(),
        });
        let homes = if needs_homes { self.homes().await } else { Default::default() };
        let mut out: Vec<(String, Resolved)> = Vec::new();
        for label in list {
            let r = self.resolve_one(job, &label, &homes);
            if !out.iter().any(|(_, o)| *o == r && r != Resolved::Local) {
                out.push((label, r));
            }
        }
        out
    }

    fn resolve_one(&self, job: &Job, label: &str, homes: &crate::app::homes::Homes) -> Resolved {
        // A platform is known when a channel delivers to it; its home channel is the chat
        // that ran `/sethome` there, else its settings or `<PLATFORM>_HOME_CHANNEL`.
        let home = |platform: &str| self.inner.delivery.delivers_to(platform).then(|| homes.get(platform).cloned());
        let mut parts = label.splitn(3, ':');
        let platform = parts.next().unwrap_or_default();
        match (platform, parts.next(), parts.next()) {
            ("local", None, _) => Resolved::Local,
            ("origin", None, _) => match &job.origin {
                Some(o) if self.inner.delivery.delivers_to(&o.platform) => {
                    Resolved::Chat(Target { platform: o.platform.clone(), chat_id: o.chat_id.clone(), thread_id: o.thread_id.clone() })
                }
                _ => Resolved::Local,
            },
            (pl, None, _) => match home(pl) {
                Some(Some(t)) => Resolved::Chat(t),
                Some(None) => {
                    Resolved::Invalid(format!("no home channel for {pl} ({}_HOME_CHANNEL)", crate::config::platform_env_prefix(pl)))
                }
                None => Resolved::Invalid(format!("unknown platform `{pl}`")),
            },
            (pl, Some(chat), thread) => {
                // A job made in a chat is held to the delivery policy again when sent (a job
                // stored before the policy, or a policy since narrowed): the job's own chat
                // counts as its current chat. The operator's jobs (jobs.json, CLI, REST: no
                // origin) deliver where the operator put them.
                let made_in = job.origin.as_ref().and_then(|o| {
                    crate::core::ids::Origin::new(&o.platform, &o.chat_id, crate::core::ids::ChatType::Dm, o.user_id.as_deref(), None).ok()
                });
                let rules = self.access_with(homes);
                let checked = match &made_in {
                    Some(o) => rules.check_delivery(rules.is_admin(Some(o)), Some(o), pl, chat, thread),
                    None => Ok(()),
                };
                match checked {
                    Ok(()) => Resolved::Chat(Target { platform: pl.into(), chat_id: chat.into(), thread_id: thread.map(str::to_string) }),
                    Err(e) => Resolved::Invalid(e),
                }
            }
        }
    }

    /// Delivers `text` for an occurrence to every target once (ledger), with the delivery
    /// port's retries. Returns one result per target. The first target's ledger row is
    /// written together with the run's held answer (`tail.append`, stored before anything is
    /// sent); each target's final status is left in `tail.ledger` for the run's finishing
    /// write (docs/design.md#store-cost). `mirror` is the unwrapped output to append to the
    /// job's own chat's session once sent there (`attach_to_session`, `jobs::mirror`).
    pub(in crate::app) async fn deliver_job_output(
        &self,
        job: &Job,
        occ: &Occurrence,
        text: &str,
        mirror: Option<&str>,
        tail: &mut Tail,
    ) -> Vec<DeliveryResult> {
        let mut results = Vec::new();
        for (label, r) in self.resolve_targets(job).await {
            let res = |status: &str, error: Option<String>| DeliveryResult { target: label.clone(), status: status.into(), error };
            let target = match r {
                Resolved::Local => {
                    results.push(res("stored", None));
                    continue;
                }
                Resolved::Invalid(e) => {
                    results.push(res("failed", Some(e)));
                    continue;
                }
                Resolved::Chat(t) => t,
            };
            let key = format!("{}:{}:{}", target.platform, target.chat_id, target.thread_id.as_deref().unwrap_or(""));
            let answer = tail.append.take();
            match self.inner.store.fire_deliver(occ, &key, self.inner.clock.now(), answer.as_ref()).await {
                Ok(true) => {}
                Ok(false) => {
                    results.push(res("skipped", Some("already delivered for this occurrence".into())));
                    continue;
                }
                Err(e) => {
                    // Nothing was written: the answer waits for the next write.
                    tail.append = answer;
                    results.push(res("failed", Some(format!("ledger: {e}"))));
                    continue;
                }
            }
            crate::app::crash::crash_point("delivery:ledger_begun");
            let sent = self.send_parts(occ, &key, &target, text).await;
            crate::app::crash::crash_point("delivery:sent");
            tail.ledger.push((key, if sent.is_ok() { "sent" } else { "failed" }.to_string()));
            match sent {
                Ok(()) => {
                    if let Some(m) = mirror {
                        self.mirror_delivery(job, &target, m).await;
                    }
                    results.push(res("sent", None));
                }
                Err(e) => {
                    tracing::error!(job_id = %job.id, target = %label, error = %e, "job delivery failed");
                    results.push(res("failed", Some(e)));
                }
            }
        }
        results
    }

    /// Sends the parts of `text` (split to the platform's limit), each recorded in the ledger
    /// as `<key>#<n>` before it is sent, so no retry or re-run sends a part twice
    /// (docs/design.md#delivery). A part whose outcome is unknown is not sent again and the
    /// rest still go out; any other failure stops the delivery there.
    async fn send_parts(&self, occ: &Occurrence, key: &str, target: &Target, text: &str) -> Result<(), String> {
        let parts = self.inner.delivery.parts(target, text).map_err(|e| e.to_string())?;
        let total = parts.len();
        let mut unknown = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            let part_key = format!("{key}#{}", i + 1);
            // One part is guarded by the target's own row (docs/design.md#delivery).
            if total == 1 {
                return self.inner.delivery.send_part(target, part).await.map_err(|e| e.to_string());
            }
            match self.inner.store.ledger_begin(occ, &part_key, self.inner.clock.now()).await {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => return Err(format!("ledger: {e}")),
            }
            let sent = self.inner.delivery.send_part(target, part).await;
            let status = match &sent {
                Ok(()) => "sent",
                Err(DeliveryError::Unknown(_)) => "unknown",
                Err(_) => "failed",
            };
            if let Err(e) = self.inner.store.ledger_finish(occ, &part_key, status, self.inner.clock.now()).await {
                tracing::warn!(job_id = %occ.job_id, error = %e, "could not update the delivery ledger");
            }
            match sent {
                Ok(()) => {}
                Err(e @ DeliveryError::Unknown(_)) => unknown.push(format!("part {} of {total}: {e}", i + 1)),
                Err(e) => return Err(if total > 1 { format!("part {} of {total}: {e}", i + 1) } else { e.to_string() }),
            }
        }
        if unknown.is_empty() { Ok(()) } else { Err(unknown.join("; ")) }
    }
}

#[cfg(test)]
#[path = "deliver_tests.rs"]
mod tests;
