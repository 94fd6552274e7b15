//! Acceptance signal: lets a caller that must not wait for a whole turn (the Telegram long
//! poll, docs/design.md#telegram-polling) learn the moment an inbound message is durably
//! stored — the turn's first write or a queue/pending write — while the turn goes on in a
//! task of its own. A task-local, so the use cases take no extra parameter: outside
//! [`detach`] the signal is a no-op.

use crate::app::{AppError, Outcome};
use std::future::Future;
use std::sync::Mutex;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

tokio::task_local! {
    static ACCEPTED: Mutex<Option<oneshot::Sender<()>>>;
}

/// Marks the message of the running [`detach`]ed future as stored (first call wins).
pub(in crate::app) fn accepted() {
    let _ = ACCEPTED.try_with(|slot| {
        if let Some(tx) = slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
            let _ = tx.send(());
        }
    });
}

/// How a [`detach`]ed message stands when [`detach`] returns.
#[derive(Debug)]
pub enum Accepted {
    /// Stored; its turn goes on in this task.
    Running(JoinHandle<Result<Outcome, AppError>>),
    /// Handled completely (a command, a duplicate, a refusal, a turn that ended first).
    Done(Outcome),
}

/// Runs `handling` (an inbound message's handling) in a task of its own and returns as
/// soon as the message is stored or the handling ended, whichever comes first. An error
/// before the message was stored is returned: nothing of it is kept.
pub async fn detach<F>(handling: F) -> Result<Accepted, AppError>
where
    F: Future<Output = Result<Outcome, AppError>> + Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let mut task = tokio::spawn(ACCEPTED.scope(Mutex::new(Some(tx)), handling));
    tokio::select! {
        biased;
        done = &mut task => finished(done),
        stored = rx => match stored {
            Ok(()) => Ok(Accepted::Running(task)),
            // The sender went with the finished task.
            Err(_) => finished(task.await),
        },
    }
}

fn finished(done: Result<Result<Outcome, AppError>, tokio::task::JoinError>) -> Result<Accepted, AppError> {
    match done {
        Ok(r) => r.map(Accepted::Done),
        Err(e) => Err(AppError::BadRequest(format!("the message's handling stopped: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn returns_at_the_signal_while_the_turn_goes_on() {
        let (go_tx, go_rx) = oneshot::channel::<()>();
        let r = detach(async move {
            accepted();
            let _ = go_rx.await;
            Ok(Outcome { reply: Some("late".into()), ..Outcome::default() })
        })
        .await
        .unwrap();
        let Accepted::Running(task) = r else { panic!("expected Running") };
        go_tx.send(()).unwrap();
        let out = tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap().unwrap();
        assert_eq!(out.reply.as_deref(), Some("late"));
    }

    #[tokio::test]
    async fn without_the_signal_waits_for_the_end() {
        let r = detach(async { Ok(Outcome { duplicate: true, ..Outcome::default() }) }).await.unwrap();
        assert!(matches!(r, Accepted::Done(o) if o.duplicate));
        let e = detach(async { Err(AppError::Contended) }).await.unwrap_err();
        assert!(matches!(e, AppError::Contended));
    }

    #[test]
    fn outside_detach_the_signal_is_a_no_op() {
        accepted();
    }
}
