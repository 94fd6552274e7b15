//! Entry point: set up logging, pick the runtime (Lambda when `AWS_LAMBDA_RUNTIME_API` is set,
//! else the command line).

use clap::Parser;
use std::process::ExitCode;

/// Set by the Lambda service; its presence means "run as a Lambda function" (docs/design.md#cli).
const LAMBDA_VAR: &str = "AWS_LAMBDA_RUNTIME_API";

fn main() -> ExitCode {
    let on_lambda = std::env::var_os(LAMBDA_VAR).is_some_and(|v| !v.is_empty());
    let filter = |default: &str| {
        tracing_subscriber::EnvFilter::try_from_env("RUST_LOG").unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default))
    };
    if on_lambda {
        // CloudWatch: one JSON object per line, no colours.
        tracing_subscriber::fmt().json().with_env_filter(filter("info")).with_writer(std::io::stderr).with_ansi(false).init();
        return lambda();
    }
    let cli = hermes_zero::cli::Cli::parse();
    tracing_subscriber::fmt().with_env_filter(filter(cli.default_log_level())).with_writer(std::io::stderr).with_target(false).init();
    hermes_zero::cli::run(cli)
}

#[cfg(feature = "aws")]
fn lambda() -> ExitCode {
    hermes_zero::runtime::lambda::main()
}

#[cfg(not(feature = "aws"))]
fn lambda() -> ExitCode {
    eprintln!("hermes-zero: {LAMBDA_VAR} is set, but this build has no AWS Lambda support; build with `--features aws`");
    ExitCode::FAILURE
}
