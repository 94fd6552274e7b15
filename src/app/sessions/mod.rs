//! Conversations: one chat message from any platform ([`inbound`]: allow list, dedupe, the
//! lazy reset check, the lease or the two-level queue, the turn, the reply), the session
//! commands typed in a chat ([`commands`]; the settings ones in [`choices`], the ones that
//! rewrite the conversation in [`rewind`]), the acceptance signal for transports that must
//! not wait for a whole turn ([`accept`]), starting a fresh conversation ([`lifecycle`]),
//! files that come with a message ([`media`]), DM pairing ([`pairing`]) and bringing a Hermes home over ([`import`]).
//!
//! Calls run one way: `inbound` → `commands` → `choices` / `rewind`, `media`, `lifecycle` → `app::turn`.

pub mod accept;
pub(in crate::app) mod choices;
pub(in crate::app) mod commands;
#[cfg(test)]
mod commands_tests;
pub mod import;
pub(in crate::app) mod inbound;
pub(in crate::app) mod lifecycle;
pub(in crate::app) mod media;
pub(in crate::app) mod pairing;
#[cfg(test)]
mod pairing_tests;
pub(in crate::app) mod rewind;
