//! A job's run options from Hermes 0.19.0's `cron/jobs.py` (docs/jobs.md): `context_from`,
//! `enabled_toolsets`, `provider`, `base_url` and `attach_to_session`, stored flat on the job
//! under Hermes' own field names, and their parsing from a job object (jobs.json, the REST
//! API, the CLI and the `cronjob` tool all go through [`JobOptions::parse`]). Pure.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The field names this module reads from a job object (kept out of the job's `extra`).
pub const FIELDS: &[&str] = &["context_from", "enabled_toolsets", "provider", "base_url", "attach_to_session"];

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
        Ok(Self { context_from, enabled_toolsets, provider: text(j, "provider")?, base_url, attach_to_session })
    }

    /// The options as job-object fields (for merging an update over a stored job).
    pub fn to_fields(&self) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        m.insert("context_from".into(), serde_json::json!(self.context_from));
        m.insert("enabled_toolsets".into(), serde_json::json!(self.enabled_toolsets));
        m.insert("provider".into(), serde_json::json!(self.provider));
        m.insert("base_url".into(), serde_json::json!(self.base_url));
        m.insert("attach_to_session".into(), serde_json::json!(self.attach_to_session));
        m
    }

    /// Whether the job names its own model endpoint (a provider or a base URL).
    pub fn routes_model(&self) -> bool {
        self.provider.is_some() || self.base_url.is_some()
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
            "base_url": "http://127.0.0.1:9/v1/", "attach_to_session": true
        }))
        .unwrap();
        assert_eq!(o.context_from, ["a1b2c3d4e5f6"]);
        assert_eq!(o.enabled_toolsets, ["web", "memory"]);
        assert_eq!((o.provider.as_deref(), o.base_url.as_deref()), (Some("custom"), Some("http://127.0.0.1:9/v1")));
        assert_eq!(o.attach_to_session, Some(true));
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
        ] {
            let e = JobOptions::parse(&body).unwrap_err();
            assert!(e.contains(&format!("`{field}`")), "{body}: {e}");
        }
    }
}
