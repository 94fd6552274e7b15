//! The "answered inline" marker: while a transport answers a message itself (a Discord
//! interaction's follow-up), replies to that chat must not also go through the platform
//! adapter. Scoped to the handling task, so later turns of a drain deliver normally.

use crate::core::ids::Origin;
use std::future::Future;

tokio::task_local! {
    /// The channel whose replies the current task answers as interaction follow-ups.
    static INLINE_CHANNEL: String;
}

/// Runs `f` with replies to the Discord channel `channel_id` marked as answered inline.
/// Background tasks spawned by `f` (later turns of a drain) are not marked: their replies
/// go through the bot channel API as usual, since the interaction token may have expired.
pub async fn answering_inline<F: Future>(channel_id: String, f: F) -> F::Output {
    INLINE_CHANNEL.scope(channel_id, f).await
}

/// Whether a reply to `origin` is being answered inline by the interaction handler running in
/// this task (so the platform adapter must not post it a second time).
pub fn answered_inline(origin: &Origin) -> bool {
    origin.platform == "discord" && INLINE_CHANNEL.try_with(|c| *c == origin.chat_id).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ids::ChatType;

    #[tokio::test]
    async fn inline_marker_covers_only_its_channel_and_task() {
        let here = Origin::new("discord", "c1", ChatType::Group, Some("42"), None).unwrap();
        let other = Origin { chat_id: "c2".into(), ..here.clone() };
        let tg = Origin { platform: "telegram".into(), ..here.clone() };
        assert!(!answered_inline(&here));
        let seen = answering_inline("c1".into(), async {
            let spawned = tokio::spawn({
                let here = here.clone();
                async move { answered_inline(&here) }
            });
            (answered_inline(&here), answered_inline(&other), answered_inline(&tg), spawned.await.unwrap())
        })
        .await;
        assert_eq!(seen, (true, false, false, false));
    }
}
