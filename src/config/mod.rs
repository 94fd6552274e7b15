//! Typed configuration: one [`Settings`] built from defaults, then `config.yaml`, then the
//! environment (CONTRACT §5), validated at load. Secrets come only from the environment and
//! are held in [`secrecy::SecretString`] so they cannot be logged by accident.
//!
//! Knows file formats and key names; knows nothing of HTTP, stores or models.

mod load;
pub mod provider;
mod types;

pub use load::{ConfigError, Env, Loaded, Secrets, load_settings, parse_yaml};
pub use types::*;
