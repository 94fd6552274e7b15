//! The Chronos (NAS) timer API client (docs/design.md#nas-api) and the `Timers` adapter built on it:
//! `provision` (dedup key `<job_id>:<fire_at>`), `cancel`, `list`; bearer Nous access token;
//! 15 s timeout; retries with backoff on 5xx and timeouts, none on 4xx.

use crate::clients::{describe, http_client};
use crate::core::job::{Job, Occurrence};
use crate::ports::{ReconcileReport, TimerError, Timers, WAKE_ID};
use async_trait::async_trait;
use chrono::{DateTime, SecondsFormat, Utc};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::Duration;

/// Attempts per call (1 + retries).
const ATTEMPTS: u32 = 3;

/// One armed timer as the NAS lists it.
#[derive(Debug, Clone, Deserialize)]
pub struct Armed {
    /// The job.
    pub job_id: String,
    /// When it fires.
    pub fire_at: DateTime<Utc>,
    /// NAS-side id.
    #[serde(default)]
    pub schedule_id: Option<String>,
}

/// The NAS HTTP client, built once.
pub struct NasClient {
    http: reqwest::Client,
    base: String,
    token: SecretString,
    backoff: Duration,
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

impl NasClient {
    /// Client for `portal_url`.
    pub fn new(portal_url: &str, token: SecretString) -> Self {
        Self {
            http: http_client(Duration::from_secs(15)),
            base: portal_url.trim_end_matches('/').to_string(),
            token,
            backoff: Duration::from_millis(300),
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> Result<Value, TimerError> {
        let url = format!("{}{path}", self.base);
        let mut last = TimerError::Unavailable("no attempt".into());
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(self.backoff * 2u32.pow(attempt - 1)).await;
            }
            let mut rq = self.http.request(method.clone(), &url).bearer_auth(self.token.expose_secret());
            if let Some(b) = body {
                rq = rq.json(b);
            }
            match rq.send().await {
                Err(e) => last = TimerError::Unavailable(describe(e)),
                Ok(r) if r.status().is_server_error() => {
                    last = TimerError::Unavailable(format!("NAS {path}: HTTP {}", r.status().as_u16()))
                }
                Ok(r) if r.status().is_client_error() => {
                    let s = r.status().as_u16();
                    let detail: String = r.text().await.unwrap_or_default().chars().take(200).collect();
                    return Err(TimerError::Refused(format!("NAS {path}: HTTP {s}: {detail}")));
                }
                Ok(r) => return Ok(r.json::<Value>().await.unwrap_or(Value::Null)),
            }
            tracing::warn!(path, attempt = attempt + 1, error = %last, "NAS call failed; retrying");
        }
        Err(last)
    }

    /// Arms (upserts by job id) the timer of one occurrence.
    pub async fn provision(&self, occ: &Occurrence, callback: &str) -> Result<(), TimerError> {
        let body = json!({"job_id": occ.job_id, "fire_at": rfc3339(occ.fire_at), "agent_callback_url": callback, "dedup_key": occ.key()});
        self.call(reqwest::Method::POST, "/api/agent-cron/provision", Some(&body)).await.map(|_| ())
    }

    /// Cancels a job's timer (unknown ids are fine).
    pub async fn cancel(&self, job_id: &str) -> Result<(), TimerError> {
        self.call(reqwest::Method::POST, "/api/agent-cron/cancel", Some(&json!({"job_id": job_id}))).await.map(|_| ())
    }

    /// The armed timers.
    pub async fn list(&self) -> Result<Vec<Armed>, TimerError> {
        let v = self.call(reqwest::Method::GET, "/api/agent-cron/list", None).await?;
        serde_json::from_value(v["armed"].clone()).map_err(|e| TimerError::Refused(format!("NAS list: unexpected body: {e}")))
    }
}

/// The Chronos timer provider.
pub struct ChronosTimers {
    nas: NasClient,
    callback: String,
}

impl ChronosTimers {
    /// Provider calling back `callback_url`.
    pub fn new(nas: NasClient, callback_url: &str) -> Self {
        Self { nas, callback: callback_url.to_string() }
    }
}

#[async_trait]
impl Timers for ChronosTimers {
    fn provider(&self) -> crate::ports::TimerProvider {
        crate::ports::TimerProvider::Chronos
    }

    async fn arm(&self, job: &Job) -> Result<(), TimerError> {
        match job.next_run_at.filter(|_| job.armed()) {
            Some(at) => self.nas.provision(&Occurrence::new(&job.id, at), &self.callback).await,
            None => self.nas.cancel(&job.id).await,
        }
    }

    async fn cancel(&self, job_id: &str) -> Result<(), TimerError> {
        self.nas.cancel(job_id).await
    }

    async fn reconcile(&self, jobs: &[Job]) -> Result<ReconcileReport, TimerError> {
        let armed: HashMap<String, DateTime<Utc>> = self.nas.list().await?.into_iter().map(|a| (a.job_id, a.fire_at)).collect();
        let mut report = ReconcileReport::default();
        for j in jobs {
            let want = j.next_run_at.filter(|_| j.armed()).map(|t| Occurrence::new(&j.id, t));
            match (want, armed.get(&j.id)) {
                (Some(o), Some(have)) if *have == o.fire_at => report.unchanged += 1,
                (Some(o), _) => {
                    self.nas.provision(&o, &self.callback).await?;
                    report.armed += 1;
                }
                (None, Some(_)) => {
                    self.nas.cancel(&j.id).await?;
                    report.cancelled += 1;
                }
                (None, None) => {}
            }
        }
        // The wake timer is no job's: it stays until it fires.
        for id in armed.keys().filter(|id| *id != WAKE_ID && !jobs.iter().any(|j| &j.id == *id)) {
            self.nas.cancel(id).await?;
            report.cancelled += 1;
        }
        Ok(report)
    }

    /// Provisions the timer [`WAKE_ID`] (upserted: one wake per deployment; the callback
    /// sweeps everything stored, so the latest arm is the one that counts).
    async fn arm_wake(&self, at: DateTime<Utc>) -> Result<bool, TimerError> {
        self.nas.provision(&Occurrence::new(WAKE_ID, at), &self.callback).await.map(|()| true)
    }
}
