//! The process environment, read once at start into a snapshot that settings, secrets and
//! channels read from (never `std::env` at run time, never mutated).

use secrecy::SecretString;
use std::collections::HashMap;

/// A snapshot of the process environment, read once at start (never mutated at runtime).
#[derive(Clone, Default)]
pub struct Env(HashMap<String, String>);

/// Names only: the values may be secrets.
impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.0.keys().collect();
        names.sort();
        f.debug_tuple("Env").field(&names).finish()
    }
}

impl Env {
    /// The real environment.
    pub fn from_process() -> Self {
        Self(std::env::vars().collect())
    }

    /// A given environment (tests).
    pub fn from_pairs<I: IntoIterator<Item = (K, V)>, K: Into<String>, V: Into<String>>(pairs: I) -> Self {
        Self(pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect())
    }

    /// Every variable (name, value).
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// A non-empty value.
    pub fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str).filter(|v| !v.trim().is_empty())
    }

    /// A non-empty value as a secret.
    pub fn secret(&self, k: &str) -> Option<SecretString> {
        self.get(k).map(|v| SecretString::from(v.to_string()))
    }
}
