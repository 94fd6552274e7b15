//! The process's async runtime, the same for `serve`, the CLI and Lambda: a small, bounded
//! blocking pool whose idle threads leave soon. A burst of concurrent work (each new
//! session's skills-folder scan, file reads, name lookups) otherwise grows tokio's pool to
//! dozens of threads, each bringing its own glibc malloc arena whose freed memory stays in
//! the process: the RSS after 100 concurrent chats followed the thread count (BENCHMARKS §8).
//! The arenas themselves could be capped only with `mallopt` (unsafe, which this crate
//! forbids) or `MALLOC_ARENA_MAX` in the environment, which an operator may still set.

use std::time::Duration;

/// Threads of tokio's blocking pool (tokio's default is 512). Our blocking work is short
/// (directory scans, file reads, name lookups, HTML rendering); the store has its own thread.
pub const BLOCKING_THREADS: usize = 4;
/// How long an idle blocking thread waits for work before it exits (tokio's default: 10 s).
const BLOCKING_KEEP_ALIVE: Duration = Duration::from_secs(2);

/// A multi-thread runtime with the pool bounds above.
pub fn async_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(BLOCKING_THREADS)
        .thread_keep_alive(BLOCKING_KEEP_ALIVE)
        .build()
}
