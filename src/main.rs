//! Entry point: parse the command line, set up logging, pick the runtime.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_env("RUST_LOG").unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).init();
    hermes_zero::cli::run(hermes_zero::cli::Cli::parse())
}
