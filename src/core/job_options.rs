//! A job's run options from Hermes 0.19.0's `cron/jobs.py` (docs/jobs.md): `context_from`,
//! `enabled_toolsets`, `provider`, `base_url` and `attach_to_session`, stored flat on the job
//! under Hermes' own field names, and their parsing from a job object (jobs.json, the REST
//! API, the CLI and the `cronjob` tool all go through [`JobOptions::parse`]). Two options go
//! beyond Hermes (docs/jobs.md#failure-alerts, #budgets): `failure_deliver` and `max_tokens`.
//! Pure.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The field names this module reads from a job object (kept out of the job's `extra`).
pub const FIELDS: &[&str] =
    &["context_from", "enabled_toolsets", "provider", "base_url", "attach_to_session", "failure_deliver", "max_tokens"];

/// A job's run options (all optional; an empty job runs as before).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobOptions {
    /// Jobs whose newest stored output goes into this job's prompt, in Hermes' order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_from: Vec<String>,
    /// When not empty: only these toolsets' tools are offered in this job's runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub enabled_toolsets: Vec<String>,
    /// This job's model provider (Hermes' names), resolved as `model.provider` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// This job's model base URL (no trailing slash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Whether the delivered text is also appended to the target chat's session (`None`:
    /// `cron.mirror_delivery` decides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attach_to_session: Option<bool>,
    /// Where this job's failure alert and "recovered" line go (empty: `cron.failure_deliver`,
    /// and when that is empty too, the job's own targets).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failure_deliver: Vec<String>,
    /// Most tokens (prompt plus completion over every model call) one run may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
}

impl JobOptions {
    /// Reads the options from a job object, as Hermes' `create_job` normalizes them: a
    /// `context_from` string is a one-id list, blank entries are dropped, a trailing `/` of
    /// `base_url` is cut. A value of the wrong type is refused, naming the field.
    pub fn parse(j: &Value) -> Result<Self, String> {
        let context_from = id_list(j.get("context_from").unwrap_or(&Value::Null), "context_from")?;
        for id in &context_from {
            if !crate::core::job::valid_id(id) {
                return Err(format!("`context_from` names an invalid job id `{id}`"));
            }
        }
        let enabled_toolsets = match j.get("enabled_toolsets").unwrap_or(&Value::Null) {
            Value::Null => vec![],
            Value::String(s) => split(s),
            Value::Array(a) => a
                .iter()
                .map(|x| x.as_str().map(|s| s.trim().to_string()).ok_or("`enabled_toolsets` must list strings"))
                .filter(|r| !matches!(r, Ok(s) if s.is_empty()))
                .collect::<Result<_, _>>()?,
            _ => return Err("`enabled_toolsets` must be a list of toolset names".into()),
        };
        let base_url = text(j, "base_url")?.map(|u| u.trim_end_matches('/').to_string());
        if let Some(u) = &base_url
            && !(u.starts_with("http://") || u.starts_with("https://"))
        {
            return Err(format!("`base_url` `{u}` is not an http(s) URL"));
        }
        let attach_to_session = match j.get("attach_to_session") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => return Err("`attach_to_session` must be true or false".into()),
        };
        Ok(Self {
            context_from,
            enabled_toolsets,
            provider: text(j, "provider")?,
            base_url,
            attach_to_session,
            failure_deliver: targets(j.get("failure_deliver").unwrap_or(&Value::Null))?,
            max_tokens: max_tokens(j.get("max_tokens").unwrap_or(&Value::Null))?,
        })
    }

    /// The options as job-object fields (for merging an update over a stored job).
    pub fn to_fields(&self) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        m.insert("context_from".into(), serde_json::json!(self.context_from));
        m.insert("enabled_toolsets".into(), serde_json::json!(self.enabled_toolsets));
        m.insert("provider".into(), serde_json::json!(self.provider));
        m.insert("base_url".into(), serde_json::json!(self.base_url));
        m.insert("attach_to_session".into(), serde_json::json!(self.attach_to_session));
        m.insert("failure_deliver".into(), serde_json::json!(self.failure_deliver));
        m.insert("max_tokens".into(), serde_json::json!(self.max_tokens));
        m
    }

    /// Whether the job names its own model endpoint (a provider or a base URL).
    pub fn routes_model(&self) -> bool {
        self.provider.is_some() || self.base_url.is_some()
    }
}

/// `failure_deliver`: targets as `deliver` takes them (a comma-separated string or a list).
fn targets(v: &Value) -> Result<Vec<String>, String> {
    let list = match v {
        Value::Null => vec![],
        Value::String(s) => split(s),
        Value::Array(a) => a
            .iter()
            .map(|x| x.as_str().map(|s| s.trim().to_string()).ok_or("`failure_deliver` must list delivery targets"))
            .filter(|r| !matches!(r, Ok(s) if s.is_empty()))
            .collect::<Result<_, _>>()?,
        _ => return Err("`failure_deliver` must be a delivery target or a list of them".into()),
    };
    let mut out: Vec<String> = Vec::new();
    for t in list {
        crate::core::jobfile::check_target(&t).map_err(|e| format!("`failure_deliver`: {e}"))?;
        if !out.contains(&t) {
            out.push(t);
        }
    }
    Ok(out)
}

/// `max_tokens`: a whole number of at least 1 (or numeric text), `null` for no limit.
fn max_tokens(v: &Value) -> Result<Option<u64>, String> {
    let n = match v {
        Value::Null => return Ok(None),
        Value::String(s) if s.trim().is_empty() => return Ok(None),
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    match n {
        Some(n) if n >= 1 => Ok(Some(n)),
        _ => Err(format!("`max_tokens` must be a whole number of tokens, at least 1, got {v}")),
    }
}

fn split(s: &str) -> Vec<String> {
    s.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

fn id_list(v: &Value, field: &str) -> Result<Vec<String>, String> {
    match v {
        Value::Null => Ok(vec![]),
        Value::String(s) => Ok(split(s)),
        Value::Array(a) => a
            .iter()
            .map(|x| x.as_str().map(|s| s.trim().to_string()).ok_or_else(|| format!("`{field}` must be a job id or a list of job ids")))
            .filter(|r| !matches!(r, Ok(s) if s.is_empty()))
            .collect(),
        _ => Err(format!("`{field}` must be a job id or a list of job ids")),
    }
}

fn text(j: &Value, k: &str) -> Result<Option<String>, String> {
    match j.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(_) => Err(format!("`{k}` must be a string")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hermes_forms_load_and_normalize() {
        let o = JobOptions::parse(&json!({
            "context_from": "a1b2c3d4e5f6", "enabled_toolsets": ["web", " ", "memory"], "provider": "custom",
            "base_url": "http://127.0.0.1:9/v1/", "attach_to_session": true,
            "failure_deliver": "telegram:-100, local, telegram:-100", "max_tokens": "4000"
        }))
        .unwrap();
        assert_eq!(o.context_from, ["a1b2c3d4e5f6"]);
        assert_eq!(o.enabled_toolsets, ["web", "memory"]);
        assert_eq!((o.provider.as_deref(), o.base_url.as_deref()), (Some("custom"), Some("http://127.0.0.1:9/v1")));
        assert_eq!(o.attach_to_session, Some(true));
        assert_eq!((o.failure_deliver.clone(), o.max_tokens), (vec!["telegram:-100".to_string(), "local".to_string()], Some(4000)));
        let none = JobOptions::parse(&json!({"context_from": null, "enabled_toolsets": null, "provider": null, "base_url": null})).unwrap();
        assert_eq!(none, JobOptions::default());
        assert_eq!(JobOptions::parse(&json!({"context_from": ["a", "b"]})).unwrap().context_from, ["a", "b"]);
        // Round trip through the stored form.
        let back: JobOptions = serde_json::from_value(serde_json::to_value(&o).unwrap()).unwrap();
        assert_eq!(back, o);
        assert_eq!(JobOptions::parse(&Value::Object(o.to_fields())).unwrap(), o);
    }

    #[test]
    fn wrong_types_are_refused_naming_the_field() {
        for (body, field) in [
            (json!({"context_from": 5}), "context_from"),
            (json!({"context_from": [1]}), "context_from"),
            (json!({"context_from": "a b"}), "context_from"),
            (json!({"enabled_toolsets": 3}), "enabled_toolsets"),
            (json!({"enabled_toolsets": [true]}), "enabled_toolsets"),
            (json!({"provider": 1}), "provider"),
            (json!({"base_url": false}), "base_url"),
            (json!({"base_url": "ftp://x"}), "base_url"),
            (json!({"attach_to_session": "yes"}), "attach_to_session"),
            (json!({"failure_deliver": 7}), "failure_deliver"),
            (json!({"failure_deliver": ["tele gram"]}), "failure_deliver"),
            (json!({"max_tokens": 0}), "max_tokens"),
            (json!({"max_tokens": -5}), "max_tokens"),
            (json!({"max_tokens": "lots"}), "max_tokens"),
        ] {
            let e = JobOptions::parse(&body).unwrap_err();
            assert!(e.contains(&format!("`{field}`")), "{body}: {e}");
        }
    }
}
