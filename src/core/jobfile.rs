//! jobs.json and job definitions (docs/design.md#jobs-file): both the seed's short form (`description`,
//! `skill`, `deliver_to`) and Hermes' own form (`prompt`, `skills`, `deliver`, `repeat`,
//! parsed `schedule` objects, `script`/`no_agent`/`workdir`). Unknown fields are kept. A job that cannot be loaded is skipped
//! with its index and reason and every other job loads; only a file that is not a job list
//! at all is refused.

use crate::core::job::{JobOrigin, Overlap, Repeat, valid_id};
use crate::core::job_options::{self, JobOptions};
use crate::core::schedule::{self, Schedule, ScheduleError};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde_json::{Map, Value};

/// A job definition, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// Schedule as written.
    pub schedule_text: String,
    /// Parsed schedule.
    pub schedule: Schedule,
    /// A one-shot whose time has passed (allowed only for jobs that already exist).
    pub past_one_shot: bool,
    /// Prompt.
    pub prompt: String,
    /// Skills.
    pub skills: Vec<String>,
    /// Delivery targets.
    pub deliver: Vec<String>,
    /// Enabled.
    pub enabled: bool,
    /// Repeat.
    pub repeat: Repeat,
    /// Model override.
    pub model: Option<String>,
    /// Zone.
    pub timezone: Option<String>,
    /// Origin.
    pub origin: Option<JobOrigin>,
    /// Unknown fields.
    pub extra: Map<String, Value>,
    /// `overlap`: `skip` (default) or `allow` (docs/design.md#overlap).
    pub overlap: Overlap,
    /// `spread` in seconds (None: `cron.spread_seconds`; docs/design.md#spread).
    pub spread: Option<u32>,
    /// Script run before each run (`core::script`).
    pub script: Option<String>,
    /// The script is the job (no model call).
    pub no_agent: bool,
    /// The script's working directory (absolute).
    pub workdir: Option<String>,
    /// Hermes' run options.
    pub options: JobOptions,
    /// `retry`: delays in seconds of the retries of a run that had no effect (`[]`: none;
    /// None: `cron.retry.delays`; docs/design/jobs.md#retry).
    pub retry: Option<Vec<u32>>,
}

/// A refused jobs.json.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{file}: job #{index}{id}: {reason}")]
pub struct JobFileError {
    /// The file.
    pub file: String,
    /// 0-based index in the `jobs` array.
    pub index: usize,
    /// ` (id)` when known.
    pub id: String,
    /// Why.
    pub reason: String,
}

const KNOWN: &[&str] = &[
    "id",
    "name",
    "schedule",
    "prompt",
    "description",
    "skills",
    "skill",
    "deliver",
    "deliver_to",
    "enabled",
    "repeat",
    "model",
    "timezone",
    "origin",
    "overlap",
    "spread",
    "script",
    "no_agent",
    "workdir",
    "retry",
];

/// A job of jobs.json that was not loaded, and why (shown by `cron list --all`, `doctor` and
/// the dashboard).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SkippedJob {
    /// 0-based index in the `jobs` array.
    pub index: usize,
    /// The job's id (or name) when it has one.
    #[serde(default)]
    pub id: Option<String>,
    /// Why it was skipped.
    pub reason: String,
}

impl std::fmt::Display for SkippedJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.id {
            Some(id) => write!(f, "job #{} ({id}): {}", self.index, self.reason),
            None => write!(f, "job #{}: {}", self.index, self.reason),
        }
    }
}

/// A parsed jobs.json: the jobs that load and the ones skipped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobFile {
    /// Valid jobs, in file order.
    pub jobs: Vec<JobSpec>,
    /// Jobs that could not be loaded.
    pub skipped: Vec<SkippedJob>,
    /// Index in the file of each loaded job.
    index_of: std::collections::HashMap<String, usize>,
}

impl JobFile {
    /// Moves the past one-shots for which `exists` is false to `skipped`: a job already in the
    /// store keeps its (finished) one-shot, a new one would never run.
    pub fn skip_new_past_one_shots(&mut self, exists: impl Fn(&str) -> bool) {
        let (keep, past): (Vec<_>, Vec<_>) = std::mem::take(&mut self.jobs).into_iter().partition(|s| !s.past_one_shot || exists(&s.id));
        self.jobs = keep;
        for s in past {
            let index = self.index_of.get(&s.id).copied().unwrap_or_default();
            self.skipped.push(SkippedJob {
                index,
                id: Some(s.id.clone()),
                reason: format!("the one-shot time ({}) is in the past", s.schedule_text),
            });
        }
        self.skipped.sort_by_key(|k| k.index);
    }
}

/// Parses a whole jobs.json text (`{"jobs":[…]}` or a bare list). A job that cannot be loaded is
/// skipped with its reason; only a text that is not a job list is refused.
pub fn parse_file(text: &str, file: &str, now: DateTime<Utc>, tz: Tz) -> Result<JobFile, JobFileError> {
    let refuse = |reason: String| JobFileError { file: file.into(), index: 0, id: String::new(), reason };
    let v: Value = serde_json::from_str(text).map_err(|e| refuse(format!("not valid JSON: {e}")))?;
    let list = match (&v, v.get("jobs")) {
        (Value::Array(a), _) | (Value::Object(_), Some(Value::Array(a))) => a,
        _ => return Err(refuse("expected {\"jobs\": [...]} or a list of jobs".into())),
    };
    let mut out = JobFile::default();
    for (index, j) in list.iter().enumerate() {
        let label = ["id", "name"].iter().find_map(|k| j.get(*k).and_then(Value::as_str)).map(str::to_string);
        let skip = |reason: String| SkippedJob { index, id: label.clone(), reason };
        match parse_job(j, now, tz) {
            Err(reason) => out.skipped.push(skip(reason)),
            Ok(spec) if out.jobs.iter().any(|o| o.id == spec.id) => out.skipped.push(skip(format!("duplicate id `{}`", spec.id))),
            Ok(spec) => {
                out.index_of.insert(spec.id.clone(), index);
                out.jobs.push(spec);
            }
        }
    }
    Ok(out)
}

fn string_list(v: &Value, field: &str) -> Result<Vec<String>, String> {
    match v {
        Value::Null => Ok(vec![]),
        Value::String(s) => Ok(s.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()),
        Value::Array(a) => {
            a.iter().map(|x| x.as_str().map(|s| s.trim().to_string()).ok_or_else(|| format!("`{field}` must list strings"))).collect()
        }
        _ => Err(format!("`{field}` must be a string or a list of strings")),
    }
}

/// Validates one delivery target.
pub fn check_target(t: &str) -> Result<(), String> {
    let mut parts = t.split(':');
    let platform = parts.next().unwrap_or_default();
    let ok_platform = !platform.is_empty() && platform.chars().all(|c| c.is_ascii_lowercase());
    let rest: Vec<&str> = parts.collect();
    // Chat and thread ids: numbers, `-100…` supergroup ids, `@channel` names, snowflakes.
    let ok_id =
        |p: &str| !p.is_empty() && p.len() <= 128 && p.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '@' | '.'));
    if ok_platform && rest.len() <= 2 && rest.iter().all(|p| ok_id(p)) {
        Ok(())
    } else {
        Err(format!("invalid delivery target `{t}` (use local, origin, a platform like telegram, or platform:chat_id[:thread_id])"))
    }
}

fn parse_deliver(j: &Value) -> Result<Vec<String>, String> {
    let mut out = string_list(j.get("deliver").unwrap_or(&Value::Null), "deliver")?;
    if let Some(d) = j.get("deliver_to").filter(|d| !d.is_null()) {
        let p = d.get("platform").and_then(Value::as_str).ok_or("`deliver_to.platform` is required")?;
        let c = d
            .get("chat_id")
            .map(|c| c.as_str().map(str::to_string).unwrap_or_else(|| c.to_string()))
            .ok_or("`deliver_to.chat_id` is required")?;
        let mut t = format!("{p}:{}", c.trim_matches('"'));
        if let Some(th) = d.get("thread_id").filter(|t| !t.is_null()) {
            t.push(':');
            t.push_str(th.as_str().map(str::to_string).unwrap_or_else(|| th.to_string()).trim_matches('"'));
        }
        out.push(t);
    }
    let mut seen = Vec::new();
    for t in out {
        check_target(&t)?;
        if !seen.contains(&t) {
            seen.push(t);
        }
    }
    Ok(seen)
}

/// Parses `repeat`: `{times, completed}`, `"forever"`, `"once"` or a number.
pub fn parse_repeat(v: &Value) -> Result<Repeat, String> {
    match v {
        Value::Null => Ok(Repeat::default()),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "forever" | "" => Ok(Repeat::default()),
            "once" => Ok(Repeat { times: Some(1), completed: 0 }),
            n => n
                .parse::<u32>()
                .ok()
                .filter(|n| *n > 0)
                .map(|n| Repeat { times: Some(n), completed: 0 })
                .ok_or_else(|| format!("invalid repeat `{s}`")),
        },
        Value::Number(n) => n
            .as_u64()
            .filter(|n| *n > 0 && *n <= u64::from(u32::MAX))
            .map(|n| Repeat { times: Some(n as u32), completed: 0 })
            .ok_or_else(|| "repeat must be a positive number".into()),
        Value::Object(o) => {
            let times = match o.get("times") {
                None | Some(Value::Null) => None,
                Some(t) => {
                    Some(t.as_u64().filter(|n| *n > 0 && *n <= u64::from(u32::MAX)).ok_or("repeat.times must be a positive number")? as u32)
                }
            };
            let completed = o.get("completed").and_then(Value::as_u64).unwrap_or(0).min(u64::from(u32::MAX)) as u32;
            Ok(Repeat { times, completed })
        }
        _ => Err("repeat must be {times, completed}, \"forever\", \"once\" or a number".into()),
    }
}

fn parse_schedule(v: &Value, now: DateTime<Utc>, tz: Tz) -> Result<(String, Schedule, bool), String> {
    let text = match v {
        Value::String(s) => s.trim().to_string(),
        Value::Object(_) => v.get("display").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| v.to_string()),
        Value::Null => return Err("`schedule` is required".into()),
        _ => return Err("`schedule` must be a string or a schedule object".into()),
    };
    match schedule::parse_value(v, now, tz) {
        Ok(s) => Ok((if v.is_string() { text } else { s.to_text() }, s, false)),
        Err(ScheduleError::InPast(_)) => {
            let s = schedule::parse_value(v, DateTime::<Utc>::MIN_UTC, tz).map_err(|e| e.to_string())?;
            Ok((if v.is_string() { text } else { s.to_text() }, s, true))
        }
        Err(e) => Err(e.to_string()),
    }
}

fn opt_str(j: &Value, k: &str) -> Result<Option<String>, String> {
    match j.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(_) => Err(format!("`{k}` must be a string")),
    }
}

/// Parses one job object (jobs.json entry, API body, tool arguments).
pub fn parse_job(j: &Value, now: DateTime<Utc>, tz: Tz) -> Result<JobSpec, String> {
    let o = j.as_object().ok_or("a job must be a JSON object")?;
    let name = opt_str(j, "name")?;
    let id = match opt_str(j, "id")? {
        Some(id) => id,
        None => name.as_deref().map(slug).filter(|s| !s.is_empty()).ok_or("a job needs an `id` or a `name`")?,
    };
    if !valid_id(&id) {
        return Err(format!("invalid id `{id}` (1–64 of letters, digits, `_`, `-`, `.`)"));
    }
    let timezone = opt_str(j, "timezone")?;
    let job_tz = match &timezone {
        Some(z) => z.parse::<Tz>().map_err(|_| format!("`timezone` `{z}` is not an IANA timezone"))?,
        None => tz,
    };
    let (schedule_text, schedule, past_one_shot) = parse_schedule(j.get("schedule").unwrap_or(&Value::Null), now, job_tz)?;
    let (script, no_agent, workdir) = parse_script_fields(j)?;
    let prompt = match opt_str(j, "prompt")?.or(opt_str(j, "description")?) {
        Some(p) => p,
        None if no_agent => String::new(),
        None => return Err("`prompt` (or `description`) is required".into()),
    };
    let mut skills = string_list(j.get("skills").unwrap_or(&Value::Null), "skills")?;
    skills.extend(string_list(j.get("skill").unwrap_or(&Value::Null), "skill")?);
    // `skills` and the legacy `skill` naming the same skill inject it once.
    let mut seen = std::collections::HashSet::new();
    skills.retain(|s| seen.insert(s.clone()));
    for s in &skills {
        if !valid_id(s) {
            return Err(format!("invalid skill name `{s}`"));
        }
    }
    let enabled = match j.get("enabled") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("`enabled` must be true or false".into()),
    };
    let origin = match j.get("origin") {
        None | Some(Value::Null) => None,
        Some(v) => Some(serde_json::from_value::<JobOrigin>(v.clone()).map_err(|e| format!("invalid `origin`: {e}"))?),
    };
    let options = JobOptions::parse(j)?;
    let extra: Map<String, Value> = o
        .iter()
        .filter(|(k, _)| !KNOWN.contains(&k.as_str()) && !job_options::FIELDS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok(JobSpec {
        name: name.unwrap_or_else(|| id.clone()),
        id,
        schedule_text,
        schedule,
        past_one_shot,
        prompt,
        skills,
        deliver: parse_deliver(j)?,
        enabled,
        repeat: parse_repeat(j.get("repeat").unwrap_or(&Value::Null))?,
        model: opt_str(j, "model")?,
        timezone,
        origin,
        extra,
        overlap: match opt_str(j, "overlap")? {
            Some(o) => Overlap::parse(&o)?,
            None => Overlap::default(),
        },
        spread: parse_spread(j.get("spread").unwrap_or(&Value::Null))?,
        script,
        no_agent,
        workdir,
        options,
        retry: parse_retry(j.get("retry").unwrap_or(&Value::Null))?,
    })
}

/// Parses `retry`: a list of delays in seconds (numbers or numeric text), `[]` for no
/// retry, `null` for the configured default.
fn parse_retry(v: &Value) -> Result<Option<Vec<u32>>, String> {
    let list = match v {
        Value::Null => return Ok(None),
        Value::Array(a) => a,
        _ => return Err(format!("`retry` must be a list of delays in seconds (e.g. [60, 300]), got {v}")),
    };
    let delays = list
        .iter()
        .map(|d| match d {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        })
        .map(|d| d.and_then(|d| u32::try_from(d).ok()).ok_or_else(|| format!("`retry` must list whole seconds, got {v}")))
        .collect::<Result<Vec<u32>, String>>()?;
    crate::core::retry::check_delays(&delays).map_err(|e| format!("`retry`: {e}"))?;
    Ok(Some(delays))
}

/// Parses `spread`: seconds as a number (or numeric text), `null` for the configured default.
fn parse_spread(v: &Value) -> Result<Option<u32>, String> {
    let secs = match v {
        Value::Null => return Ok(None),
        Value::Number(n) => n.as_u64(),
        Value::String(s) if s.trim().is_empty() => return Ok(None),
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    let secs = secs.ok_or_else(|| format!("`spread` must be a number of seconds, got {v}"))?;
    schedule::spread::check(secs).map(Some).map_err(|e| format!("`spread` {e}"))
}

/// `script`, `no_agent` and `workdir` (Hermes' names and types): a `no_agent` job needs a
/// script, and `workdir` is an absolute path.
fn parse_script_fields(j: &Value) -> Result<(Option<String>, bool, Option<String>), String> {
    let script = opt_str(j, "script")?;
    let no_agent = match j.get("no_agent") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("`no_agent` must be true or false".into()),
    };
    if no_agent && script.is_none() {
        return Err(crate::core::script::NO_AGENT_NEEDS_SCRIPT.into());
    }
    let workdir = opt_str(j, "workdir")?;
    if let Some(w) = &workdir
        && !w.starts_with('/')
    {
        return Err(format!("`workdir` must be an absolute path (got {w:?})"));
    }
    Ok((script, no_agent, workdir))
}

impl crate::core::job::Job {
    /// A new, scheduled job from a validated definition, its first occurrence computed from
    /// `now` in its zone (`tz` unless the job names one).
    pub fn from_spec(spec: &JobSpec, declared: bool, now: DateTime<Utc>, tz: Tz) -> Self {
        let mut job = Self {
            id: spec.id.clone(),
            name: spec.name.clone(),
            schedule_text: spec.schedule_text.clone(),
            schedule: spec.schedule.clone(),
            prompt: spec.prompt.clone(),
            skills: spec.skills.clone(),
            deliver: spec.deliver.clone(),
            enabled: spec.enabled,
            repeat: spec.repeat,
            model: spec.model.clone(),
            timezone: spec.timezone.clone(),
            origin: spec.origin.clone(),
            declared,
            extra: spec.extra.clone(),
            next_run_at: None,
            last_run_at: None,
            last_status: None,
            last_error: None,
            state: crate::core::job::JobState::Scheduled,
            paused_at: None,
            completed_at: None,
            running: None,
            created_at: now,
            version: 0,
            overlap: spec.overlap,
            spread: spec.spread,
            spread_offset: 0,
            script: spec.script.clone(),
            no_agent: spec.no_agent,
            workdir: spec.workdir.clone(),
            options: spec.options.clone(),
            retry: spec.retry.clone(),
            retry_due: None,
        };
        job.next_run_at = Self::first_run(&job.schedule, now, job.tz(tz));
        job
    }
}

/// A job id from a name: lowercase letters and digits joined by `-`.
pub fn slug(name: &str) -> String {
    let s: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    s.split('-').filter(|p| !p.is_empty()).collect::<Vec<_>>().join("-").chars().take(64).collect()
}

#[cfg(test)]
mod tests;
