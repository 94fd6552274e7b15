//! Typed configuration: one [`Settings`] built from defaults, then `config.yaml`, then the
//! environment (docs/design.md#config), validated at load. Secrets come only from the environment and
//! are held in [`secrecy::SecretString`] so they cannot be logged by accident.
//!
//! Knows file formats, key names and the provider table (`models`); knows nothing of HTTP,
//! stores or model clients.

mod delegation;
mod env;
mod hermes;
mod load;
mod media;
pub mod models;
pub mod profile_env;
pub mod provider;
mod types;
mod web;
mod webhooks;

pub use delegation::*;
pub use env::Env;
pub use hermes::*;
pub use load::{ConfigError, Loaded, Parsed, Secrets, load_settings, parse_yaml, parse_yaml_full, platform_env_prefix};
pub use media::*;
pub use types::*;
pub use web::*;
pub use webhooks::webhook_routes;
