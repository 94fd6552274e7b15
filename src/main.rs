//! Entry point: set up logging, pick the runtime (Lambda when `AWS_LAMBDA_RUNTIME_API` is set,
//! else the command line).

use clap::Parser;
use std::process::ExitCode;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Set by the Lambda service; its presence means "run as a Lambda function" (docs/design.md#cli).
const LAMBDA_VAR: &str = "AWS_LAMBDA_RUNTIME_API";

fn main() -> ExitCode {
    hermes_zero::clients::install_crypto_provider();
    let on_lambda = std::env::var_os(LAMBDA_VAR).is_some_and(|v| !v.is_empty());
    // `RUST_LOG` as a list of `target=level` directives (`warn`, `hermes_zero=debug,info`);
    // unset, empty or unparsable: the default level. `Targets` rather than `EnvFilter`: no
    // span/field filters, and no regex engine in the binary (BENCHMARKS.md §5). The fmt layer
    // itself lets everything through (its own default is INFO); `Targets` decides.
    let filter = |default: &str| {
        std::env::var("RUST_LOG")
            .ok()
            .filter(|v| !v.trim().is_empty())
            .and_then(|v| v.parse::<Targets>().ok())
            .unwrap_or_else(|| default.parse::<Targets>().unwrap_or_default())
    };
    if on_lambda {
        // CloudWatch: one JSON object per line, no colours.
        tracing_subscriber::fmt()
            .json()
            .with_max_level(LevelFilter::TRACE)
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .finish()
            .with(filter("info"))
            .init();
        return lambda();
    }
    let cli = hermes_zero::cli::Cli::parse();
    tracing_subscriber::fmt()
        .with_max_level(LevelFilter::TRACE)
        .with_writer(std::io::stderr)
        .with_target(false)
        .finish()
        .with(filter(cli.default_log_level()))
        .init();
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
