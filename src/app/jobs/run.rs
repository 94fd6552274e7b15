//! The run half of the fire path (docs/design.md#job-run): the run's fresh session and
//! prompt (written with the claim), the agent turn, delivery, and the one finishing write
//! (docs/design.md#store-cost) that records the ledger statuses, the answer when no delivery
//! stored it, the run and the job's finish.

use crate::app::cas::retry_cas;
use crate::app::jobs::mirror::mirror_enabled;
use crate::app::jobs::retry::Failure;
use crate::app::jobs::script::ScriptEnd;
use crate::app::jobs::types::{PREAMBLE, RunStart, Tail, ended_run, is_silent, run_id, wrap_response};
use crate::app::turn::agent;
use crate::app::turn::types::TurnSpec;
use crate::app::types::TURN_BUDGET_SECS;
use crate::app::types::TurnKind;
use crate::app::{App, AppError};
use crate::core::ids::SessionId;
use crate::core::job::{Job, JobState, Occurrence, RunOutcome, RunRecord};
use crate::core::session::{Message, Role};
use crate::ports::{FireFinish, RunAppend};
use chrono::{DateTime, Utc};

/// Where a run stands before its model call.
enum Stage {
    /// A script said there is nothing to report.
    Silent,
    /// The run's answer without a model call (a `no_agent` script's stdout, a failed script).
    Answer(Result<String, String>),
    /// The prompt for the model, or why it could not be built.
    Prompt(Result<Message, String>),
}

impl App {
    /// The session and prompt of attempt `attempt` of a run of `occ` starting `now`; `extra`
    /// is a manual run's one-time text (`## Run Context`). Each attempt has its own fresh
    /// session (`_<attempt>` after the stamp for a retry).
    pub(in crate::app) async fn run_start(
        &self,
        job: &Job,
        occ: &Occurrence,
        now: DateTime<Utc>,
        extra: Option<&str>,
        attempt: u32,
    ) -> RunStart {
        let stamp = occ.fire_at.with_timezone(&self.inner.cfg.tz).format("%Y%m%d_%H%M%S");
        let session_id = match attempt {
            0 | 1 => SessionId::named(format!("cron_{}_{stamp}", job.id)),
            n => SessionId::named(format!("cron_{}_{stamp}_{n}", job.id)),
        };
        let scripted = job.script.is_some();
        // A script job's prompt is built once its script ran (`script_stage`); here only its
        // skills are checked, with no store read for `context_from`.
        let body = if scripted { job.prompt.clone() } else { self.prompt_body(job, extra, None).await };
        let prompt = if job.no_agent { Ok(String::new()) } else { self.job_prompt(job, body).await };
        let extra = extra.map(str::to_string);
        RunStart { session_id, prompt: prompt.map(|p| Message::text(Role::User, p, now)), started: now, scripted, extra, attempt }
    }

    /// Builds the job prompt: skills' SKILL.md in order (from the store, else the skills
    /// folder; one store read when the job names skills), then the prompt's `body`.
    async fn job_prompt(&self, job: &Job, body: String) -> Result<String, String> {
        let mut parts = Vec::new();
        if !job.skills.is_empty() {
            let store = self.skill_store_load().await.map_err(|e| format!("skills could not be read: {e}"))?;
            for s in &job.skills {
                let text = match self.skill_find(s, &store.index).await {
                    Some(src) => self
                        .skill_file(&src, crate::core::skill_write::SKILL_MD)
                        .await
                        .map_err(|e| format!("skill `{s}` could not be read: {e}"))?,
                    None => None,
                };
                let text = text.ok_or_else(|| {
                    format!("skill `{s}` could not be read: no such skill in the store or under {}", self.skills_dir().display())
                })?;
                parts.push(format!("# Skill: {s}\n\n{}", text.trim()));
            }
        }
        parts.push(body);
        Ok(parts.join("\n\n---\n\n"))
    }

    /// A script job's stage before the model: its script's end as the run uses it.
    async fn script_stage(&self, job: &Job, script: &str, start: &RunStart) -> Stage {
        match self.run_script(job, script).await {
            ScriptEnd::Failed(e) => Stage::Answer(Err(e)),
            ScriptEnd::Silent(why) => {
                tracing::info!(job_id = %job.id, why, "silent run: no model call, nothing delivered");
                Stage::Silent
            }
            ScriptEnd::Output(out) if job.no_agent => Stage::Answer(Ok(out)),
            ScriptEnd::Output(out) => {
                let body = self.prompt_body(job, start.extra.as_deref(), Some(&out)).await;
                Stage::Prompt(self.job_prompt(job, body).await.map(|p| Message::text(Role::User, p, start.started)))
            }
        }
    }

    pub(in crate::app) async fn record_missed(&self, job: &Job, occ: &Occurrence, trigger: &str) -> (RunRecord, Tail) {
        let now = self.inner.clock.now();
        let text = format!("⏰ Scheduled job '{}' was missed: it was due at {} and did not run.", job.name, occ.fire_at.to_rfc3339());
        let mut tail = Tail::default();
        let deliveries = self.deliver_job_output(job, occ, &text, None, &mut tail).await;
        let mut run = ended_run(occ, trigger, now, now, RunOutcome::Missed, text, job.last_error.clone());
        run.deliveries = deliveries;
        (run, tail)
    }

    /// The job's answer: one agent turn over the stored prompt, within the turn budget.
    /// The final answer is held in `tail` for the next write. A failure says whether a retry
    /// may cure it ([`Failure`]).
    async fn job_answer(&self, job: &Job, start: &RunStart, prompt: Message, tail: &mut Tail) -> Result<String, Failure> {
        tail.session_used = true;
        let budget = crate::app::budget::turn_budget(std::time::Duration::from_secs(TURN_BUDGET_SECS as u64));
        let spec = TurnSpec {
            session_id: &start.session_id,
            notes: vec![PREAMBLE.to_string()],
            kind: TurnKind::Job,
            deadline: Some(tokio::time::Instant::now() + budget),
            model: job.model.clone(),
            route: job
                .options
                .routes_model()
                .then(|| crate::ports::ModelRoute { provider: job.options.provider.clone(), base_url: job.options.base_url.clone() }),
            toolsets: job.options.enabled_toolsets.clone(),
            system: self.system_prompt(),
            origin: None,
            fence: None,
            stream: None,
            // The session is new (one per claimed occurrence): it holds just this prompt.
            transcript: Some(vec![prompt]),
            prompt_unstored: start.scripted,
        };
        let meter = self.job_meter(job.options.max_tokens).await;
        let ran =
            crate::app::budget::metered(meter.clone(), tokio::time::timeout(budget, agent::run(self, spec, || async { false }))).await;
        tail.over_budget = self.finish_meter(&meter).await;
        match ran {
            Ok(Ok(out)) => {
                let model_seconds = (self.inner.clock.now() - start.started).num_milliseconds() as f64 / 1000.0;
                self.count_job_run(out.input_tokens, out.output_tokens, model_seconds);
                let after = 1 + out.appended;
                tail.append = out.held.map(|m| match out.held_prompt {
                    Some(p) => RunAppend { session_id: start.session_id.clone(), after: 0, messages: vec![p, m] },
                    None => RunAppend { session_id: start.session_id.clone(), after, messages: vec![m] },
                });
                if out.reply.trim().is_empty() { Err(Failure::permanent("the model returned an empty answer")) } else { Ok(out.reply) }
            }
            Ok(Err(e)) => Err(Failure::of_turn(&e)),
            Err(_) => Err(Failure { text: format!("timed out after {} s", budget.as_secs()), transient: true }),
        }
    }

    /// Runs one occurrence in its fresh session (its prompt stored by the claim) and
    /// delivers the result; returns the run and what it still has to write.
    pub(in crate::app) async fn run_job(&self, job: &Job, occ: &Occurrence, trigger: &str, start: RunStart) -> (RunRecord, Tail) {
        let mut rec = RunRecord {
            run_id: run_id(&job.id, occ.fire_at, start.started),
            job_id: job.id.clone(),
            fire_at: occ.fire_at,
            trigger: trigger.into(),
            started_at: start.started,
            finished_at: None,
            status: RunOutcome::Ok,
            output: String::new(),
            error: None,
            deliveries: vec![],
            session_id: start.session_id.to_string(),
            attempt: start.attempt,
        };
        let mut tail = Tail::default();
        let stage = match &job.script {
            Some(script) => self.script_stage(job, script, &start).await,
            None => Stage::Prompt(start.prompt.clone()),
        };
        let answer = match stage {
            Stage::Silent => {
                rec.status = RunOutcome::Silent;
                rec.session_id.clear();
                rec.finished_at = Some(self.inner.clock.now());
                return (rec, tail);
            }
            Stage::Answer(a) => a.map_err(Failure::permanent),
            Stage::Prompt(Ok(prompt)) => self.job_answer(job, &start, prompt, &mut tail).await,
            Stage::Prompt(Err(e)) => Err(Failure::permanent(e)),
        };
        // Taken whatever the outcome, so no mark outlives its run.
        let effect = self.inner.effects.take(start.session_id.as_str());
        if job.script.is_some() && !tail.session_used {
            // No turn ran: the run's session was never written.
            rec.session_id.clear();
        }
        let mut mirror = None;
        let text = match answer {
            Ok(a) if is_silent(&a) => {
                rec.output = a;
                None
            }
            Ok(a) => {
                rec.output = a.clone();
                if mirror_enabled(job, self.inner.cfg.settings.cron.mirror_delivery) {
                    mirror = Some(a.clone());
                }
                Some(if self.inner.cfg.settings.cron.wrap_response { wrap_response(&job.name, &job.id, &a) } else { a })
            }
            Err(f) => {
                tracing::error!(job_id = %job.id, attempt = start.attempt, error = %f.text, "job run failed");
                let over = tail.over_budget.is_some();
                rec.status = if over { RunOutcome::OverBudget } else { RunOutcome::Error };
                // A budget stop is not a blip: it is never retried.
                let manual = trigger == "manual";
                tail.retry = (!manual && !over).then(|| self.retry_plan(job, occ.fire_at, start.attempt, &f, effect)).flatten();
                if let Some(r) = &tail.retry {
                    // Nothing is delivered: the failure summary waits for the last attempt.
                    tracing::warn!(job_id = %job.id, attempt = r.attempt, at = %r.at, "the run had no effect; retrying");
                    rec.error =
                        Some(format!("{} (attempt {} of the occurrence; retrying at {})", f.text, start.attempt, r.at.to_rfc3339()));
                    rec.finished_at = Some(self.inner.clock.now());
                    return (rec, tail);
                }
                rec.error = Some(f.text.clone());
                let line: String = f.text.lines().next().unwrap_or_default().chars().take(300).collect();
                Some(if over {
                    format!("⛔ Scheduled job '{}' stopped: {line}", job.name)
                } else {
                    format!("⚠️ Scheduled job '{}' failed: {line}", job.name)
                })
            }
        };
        if let Some(text) = text {
            rec.deliveries = self.deliver_job_output(job, occ, &text, mirror.as_deref(), &mut tail).await;
            if rec.status == RunOutcome::Ok && rec.deliveries.iter().any(|d| d.status == "failed") {
                rec.status = RunOutcome::DeliveryFailed;
            }
        }
        rec.finished_at = Some(self.inner.clock.now());
        (rec, tail)
    }

    /// Records a run with nothing left to write (see [`App::finalize_with`]).
    #[cfg(test)]
    pub(in crate::app) async fn finalize(&self, claimed: &Job, run: &RunRecord) -> Result<Option<DateTime<Utc>>, AppError> {
        self.finalize_with(claimed, run, Tail::default()).await
    }

    /// The run's one finishing write: its ledger statuses and held answer (`tail`), the
    /// claim's status and the run record, and the job's status and state, the job written
    /// only while its running mark is still the one this run's claim set. Returns the next
    /// occurrence. A scheduled fire's first attempt writes over the job as its claim stored
    /// it (no read); a conflict (someone wrote it meanwhile) re-reads. A manual run re-reads.
    pub(in crate::app) async fn finalize_with(
        &self,
        claimed: &Job,
        run: &RunRecord,
        tail: Tail,
    ) -> Result<Option<DateTime<Utc>>, AppError> {
        let status = run.status.job_status();
        let error = run.error.clone().or_else(|| run.deliveries.iter().find_map(|d| d.error.clone()));
        let now = self.inner.clock.now();
        let finish = |job: Option<Job>| FireFinish {
            run: run.clone(),
            retention: self.inner.cfg.settings.cron.output_retention,
            job,
            ledger: tail.ledger.clone(),
            append: tail.append.clone(),
            runs_hint: claimed.running.is_some().then_some(claimed.repeat.completed),
        };
        let first = std::sync::atomic::AtomicBool::new(claimed.running.is_some());
        // The job's status before this record, for the failing streak (`jobs::alerts`).
        let prior = std::sync::Mutex::new(None);
        let written = retry_cas(|| async {
            let read = if first.swap(false, std::sync::atomic::Ordering::Relaxed) {
                Some(claimed.clone())
            } else {
                self.inner.store.get_job(&claimed.id).await?
            };
            *prior.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = read.as_ref().map(|j| j.last_status);
            let mut next = read.as_ref().map_or(claimed.next_run_at, |j| j.next_run_at);
            let job = read.and_then(|mut j| {
                let before = (j.last_status, j.last_error.clone());
                let owned = j.finish_claimed(claimed.running.as_ref(), status, error.clone(), now);
                if owned && tail.retry.is_some() {
                    // The occurrence is not over: its next attempt is pending on the job, and
                    // the job's status stays its last finished occurrence's (an attempt that
                    // plans another is no failure of the job yet: the failing streak, read only
                    // after a failing status, keeps its cost; docs/design/jobs.md#retry).
                    (j.last_status, j.last_error) = before;
                    j.retry_due = tail.retry.clone();
                    if j.state == JobState::Completed {
                        j.state = JobState::Scheduled;
                        j.completed_at = None;
                    }
                }
                if !owned {
                    tracing::warn!(job_id = %j.id, "the job no longer runs this occurrence (recovered or superseded); left as it is");
                }
                owned.then_some(j)
            });
            if let Some(j) = self.inner.store.fire_finish(&finish(job)).await? {
                // Armed after the claim already; arm again only if the schedule moved since.
                if j.next_run_at != claimed.next_run_at || j.armed() != claimed.armed() || j.retry_due.is_some() {
                    self.rearm(&j).await;
                }
                next = j.next_run_at;
            }
            Ok(next)
        })
        .await;
        let next = match written {
            Ok(next) => next,
            Err(AppError::Contended) => {
                tracing::warn!(job_id = %claimed.id, "could not record the run on the job (contended); its claim still records it");
                self.inner.store.fire_finish(&finish(None)).await?;
                *prior.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
                claimed.next_run_at
            }
            Err(e) => return Err(e),
        };
        if tail.retry.is_none() {
            // An attempt that plans another is not yet a failure of the job: only the
            // occurrence's last attempt counts toward the failing streak.
            self.note_streak(claimed, run, prior.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner)).await;
        }
        for _ in &tail.ledger {
            crate::app::crash::crash_point("delivery:recorded");
        }
        Ok(next)
    }
}

#[cfg(test)]
#[path = "options_tests.rs"]
mod options_tests;
