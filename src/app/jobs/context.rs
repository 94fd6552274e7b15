//! The body of a job run's prompt (docs/jobs.md): the job's prompt, with the newest stored
//! output of each `context_from` job before it in Hermes 0.19.0's wording and order
//! (`cron/scheduler.py` `_build_job_prompt`), and a manual run's one-time text after it
//! under `## Run Context`. Reads the store only for a job that has `context_from` (one
//! request per named job).

use crate::app::App;
use crate::core::job::Job;

/// Hermes' cap on one injected output (`_MAX_CONTEXT_CHARS`).
const MAX_CONTEXT_CHARS: usize = 8000;

/// How many recent runs are looked at for the newest output (a failed run stores none).
const RUNS_LOOKED_AT: usize = 10;

/// One `context_from` block, as Hermes writes it.
pub(in crate::app) fn context_block(job_id: &str, output: &str) -> String {
    let mut out: String = output.trim().to_string();
    if out.chars().count() > MAX_CONTEXT_CHARS {
        out = out.chars().take(MAX_CONTEXT_CHARS).collect::<String>() + "\n\n[... output truncated ...]";
    }
    format!(
        "## Output from job '{job_id}'\nThe following is the most recent output from a preceding cron job. Use it as context for your analysis.\n\n```\n{out}\n```\n\n"
    )
}

/// A manual run's one-time text, appended to the prompt of that run only.
pub(in crate::app) fn run_context(body: &str, text: Option<&str>) -> String {
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        Some(t) => format!("{body}\n\n## Run Context\n\n{t}"),
        None => body.to_string(),
    }
}

impl App {
    /// The prompt text of one run of `job` (after a script job's stdout in Hermes' words, when
    /// given): each `context_from` job's newest output put
    /// before it in turn (so the last one named comes first, as in Hermes), then the manual
    /// run's `extra` text after it. A job with no stored output (or none at all) is skipped
    /// with a warning, never an error.
    pub(in crate::app) async fn prompt_body(&self, job: &Job, extra: Option<&str>, script_output: Option<&str>) -> String {
        let prompt = match script_output {
            Some(out) => crate::core::script::with_output(out, &job.prompt),
            None => job.prompt.clone(),
        };
        let mut body = run_context(&prompt, extra);
        for id in &job.options.context_from {
            match self.newest_output(id).await {
                Some(out) => body = format!("{}{body}", context_block(id, &out)),
                None => {
                    tracing::warn!(job_id = %job.id, source = %id, "context_from: no stored output of that job (unknown id or no run yet); skipped")
                }
            }
        }
        body
    }

    /// The newest non-empty output stored for `job_id`'s runs.
    async fn newest_output(&self, job_id: &str) -> Option<String> {
        match self.inner.store.list_runs(job_id, RUNS_LOOKED_AT).await {
            Ok(runs) => runs.into_iter().map(|r| r.output).find(|o| !o.trim().is_empty()),
            Err(e) => {
                tracing::warn!(source = %job_id, error = %e, "context_from: could not read that job's runs; skipped");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{context_block, run_context};

    #[test]
    fn blocks_in_hermes_wording_and_the_cap() {
        assert_eq!(
            context_block("a1", " news \n"),
            "## Output from job 'a1'\nThe following is the most recent output from a preceding cron job. Use it as context for your analysis.\n\n```\nnews\n```\n\n"
        );
        let long = context_block("a1", &"x".repeat(9000));
        assert!(long.contains(&format!("{}\n\n[... output truncated ...]\n```", "x".repeat(8000))) && !long.contains(&"x".repeat(8001)));
        assert_eq!(run_context("p", Some(" only today ")), "p\n\n## Run Context\n\nonly today");
        assert_eq!(run_context("p", Some("  ")), "p");
        assert_eq!(run_context("p", None), "p");
    }
}
