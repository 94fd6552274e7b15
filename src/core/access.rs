//! Who sees and reaches what (docs/who-sees-what.md): admins, linked identities, the
//! owner filter `session_search` hands the store, the owner of a memory user profile, and the
//! delivery policy of `send_message` and job `deliver` targets. Pure: fed by [`AccessRules`],
//! which config builds from the settings.

use super::ids::Origin;
use std::collections::BTreeMap;

/// The settings the checks read (built by `config::Loaded::access_rules`).
#[derive(Debug, Clone, Default)]
pub struct AccessRules {
    /// `admin_users` plus `cron.admin_users`: a bare user id or `platform:user_id`.
    pub admin_users: Vec<String>,
    /// `identities`: a person's name to their `platform:user_id`s.
    pub identities: BTreeMap<String, Vec<String>>,
    /// Allow list per platform (after the environment).
    pub allowed: BTreeMap<String, Vec<String>>,
    /// Home channel per platform (empty ones left out).
    pub homes: BTreeMap<String, String>,
    /// `delivery.allow_targets`: `platform:chat_id[:thread_id]`.
    pub allow_targets: Vec<String>,
    /// `allow_all_users`.
    pub allow_all_users: bool,
}

/// Longest profile owner name the operator may give (`memory --user`).
pub const MAX_OWNER_LEN: usize = 256;

/// One user on one platform.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct UserRef {
    /// Platform name.
    pub platform: String,
    /// The user's id there.
    pub user_id: String,
}

impl UserRef {
    fn parse(s: &str) -> Option<Self> {
        let (p, u) = s.trim().split_once(':')?;
        (!p.is_empty() && !u.is_empty()).then(|| Self { platform: p.to_string(), user_id: u.to_string() })
    }
}

/// The sessions a non-admin caller's `session_search` may read, as the store matches them:
/// the exact keys, and the caller's users (their DMs, `…:dm:<user>[:…]`, and their per-user
/// group/thread/channel sessions, whose key ends in `:<user>`), in `profile`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchOwners {
    /// The profile part of the keys.
    pub profile: String,
    /// Keys admitted whole (the caller's current chat).
    pub exact: Vec<String>,
    /// The caller's users (their linked identities included).
    pub users: Vec<UserRef>,
}

impl SearchOwners {
    /// Whether the session `key` belongs to the caller.
    pub fn admits(&self, key: &str) -> bool {
        if self.exact.iter().any(|k| k == key) {
            return true;
        }
        let parts: Vec<&str> = key.split(':').collect();
        if parts.len() < 5 || parts[0] != "agent" || parts[1] != self.profile {
            return false;
        }
        self.users.iter().any(|u| {
            parts[2] == u.platform
                && match parts[3] {
                    "dm" => parts[4] == u.user_id,
                    "group" | "thread" | "channel" => parts.len() >= 6 && parts.last() == Some(&u.user_id.as_str()),
                    _ => false,
                }
        })
    }

    /// SQLite `GLOB` patterns matching exactly what [`Self::admits`] admits (besides the
    /// exact keys): literal parts have `*`, `?` and `[` escaped.
    pub fn globs(&self) -> Vec<String> {
        let esc =
            |s: &str| s.chars().map(|c| if matches!(c, '*' | '?' | '[') { format!("[{c}]") } else { c.to_string() }).collect::<String>();
        let mut out = Vec::new();
        for u in &self.users {
            let base = format!("agent:{}:{}", esc(&self.profile), esc(&u.platform));
            let user = esc(&u.user_id);
            out.push(format!("{base}:dm:{user}"));
            out.push(format!("{base}:dm:{user}:*"));
            for t in ["group", "thread", "channel"] {
                out.push(format!("{base}:{t}:*:{user}"));
            }
        }
        out
    }
}

impl AccessRules {
    /// Whether `origin`'s sender is an admin (`admin_users`/`cron.admin_users`: a bare id or
    /// `platform:user_id`). No user id: not an admin.
    pub fn is_admin(&self, origin: Option<&Origin>) -> bool {
        let Some((o, user)) = origin.and_then(|o| o.user_id.as_deref().map(|u| (o, u))) else { return false };
        let qualified = format!("{}:{user}", o.platform);
        self.admin_users.iter().any(|a| a.trim() == user || a.trim() == qualified)
    }

    /// The user of `origin` and every identity linked to it in `identities`.
    pub fn linked_users(&self, origin: &Origin) -> Vec<UserRef> {
        let Some(user) = origin.user_id.as_deref() else { return Vec::new() };
        let me = UserRef { platform: origin.platform.clone(), user_id: user.to_string() };
        let mut out = vec![me.clone()];
        for ids in self.identities.values() {
            let refs: Vec<UserRef> = ids.iter().filter_map(|s| UserRef::parse(s)).collect();
            if refs.contains(&me) {
                out.extend(refs);
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// The owner name of `origin`'s memory user profile: the linked identity's name, else
    /// `platform:user_id`; `None` without a user id.
    pub fn profile_owner(&self, origin: &Origin) -> Option<String> {
        let user = origin.user_id.as_deref()?;
        Some(self.linked_owner(format!("{}:{user}", origin.platform)))
    }

    /// `platform:user_id`'s profile owner: its linked identity (`id:<name>`), else itself.
    fn linked_owner(&self, me: String) -> String {
        let linked = self.identities.iter().find(|(_, ids)| ids.iter().any(|s| s.trim() == me));
        linked.map_or(me, |(name, _)| format!("id:{name}"))
    }

    /// The owner of the user profile the operator names (`memory --user`, `/api/memory?user=`):
    /// `platform:user_id` (resolved to its linked identity as [`Self::profile_owner`] does),
    /// `id:<name>`, or `chat:<platform>:<chat_id>` (a chat whose platform gives no user). A
    /// malformed name is an error naming the accepted forms.
    pub fn profile_owner_named(&self, name: &str) -> Result<String, String> {
        let name = name.trim();
        let bad = || {
            format!(
                "`{}` is not a user: give `platform:user_id` (telegram:111), `id:<name>` (a linked identity) or `chat:<platform>:<chat_id>`",
                name.chars().take(80).collect::<String>()
            )
        };
        let (kind, rest) = name.split_once(':').ok_or_else(bad)?;
        let kind_ok = !kind.is_empty() && kind.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
        let chars_ok = name.len() <= MAX_OWNER_LEN && !name.chars().any(|c| c.is_whitespace() || c.is_control());
        let rest_ok = match kind {
            "chat" => rest.split_once(':').is_some_and(|(p, c)| !p.is_empty() && !c.is_empty()),
            _ => !rest.is_empty(),
        };
        if !(kind_ok && chars_ok && rest_ok) {
            return Err(bad());
        }
        Ok(if matches!(kind, "id" | "chat") { name.to_string() } else { self.linked_owner(name.to_string()) })
    }

    /// How many users the allow lists hold across platforms (`allow_all_users`: many).
    pub fn allowed_user_count(&self) -> usize {
        if self.allow_all_users {
            return usize::MAX;
        }
        self.allowed.values().map(Vec::len).sum()
    }

    /// Whether a delivery target may be reached by a caller in chat `current` (`None`: the
    /// operator's CLI, REST API or jobs.json, or a job run without a chat) who is `admin` or
    /// not. `target` is a resolved chat (`platform`, `chat_id`, `thread_id`). Allowed: the
    /// current chat, a home channel, the DM of a user on an allow list (its chat id is the
    /// user id), a `delivery.allow_targets` entry (one without a thread covers its threads),
    /// and anything for an admin. The error says why and what is allowed.
    pub fn check_delivery(
        &self,
        admin: bool,
        current: Option<&Origin>,
        platform: &str,
        chat_id: &str,
        thread_id: Option<&str>,
    ) -> Result<(), String> {
        if admin || current.is_some_and(|o| o.platform == platform && o.chat_id == chat_id) {
            return Ok(());
        }
        if self.homes.get(platform).is_some_and(|h| h == chat_id) {
            return Ok(());
        }
        if self.allowed.get(platform).is_some_and(|l| l.iter().any(|u| u.trim() == chat_id)) {
            return Ok(());
        }
        let listed = self.allow_targets.iter().any(|t| {
            let mut p = t.trim().splitn(3, ':');
            p.next() == Some(platform) && p.next() == Some(chat_id) && p.next().is_none_or(|th| Some(th) == thread_id)
        });
        if listed {
            return Ok(());
        }
        let label = match thread_id {
            Some(t) => format!("{platform}:{chat_id}:{t}"),
            None => format!("{platform}:{chat_id}"),
        };
        Err(format!(
            "delivery to `{label}` is not allowed: only the current chat, the home channels, chats of allowed users and \
`delivery.allow_targets` can be reached (docs/who-sees-what.md)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ids::ChatType;

    fn rules() -> AccessRules {
        AccessRules {
            admin_users: vec!["telegram:900".into(), "U9".into()],
            identities: BTreeMap::from([("ann".to_string(), vec!["telegram:111".to_string(), "slack:U1".to_string()])]),
            allowed: BTreeMap::from([("telegram".to_string(), vec!["111".to_string(), "222".to_string()])]),
            homes: BTreeMap::from([("telegram".to_string(), "-100".to_string())]),
            allow_targets: vec!["discord:55".into(), "telegram:-200:7".into()],
            allow_all_users: false,
        }
    }

    fn dm(p: &str, u: &str) -> Origin {
        Origin::new(p, u, ChatType::Dm, Some(u), None).unwrap()
    }

    #[test]
    fn admins_by_bare_or_qualified_id() {
        let r = rules();
        assert!(r.is_admin(Some(&dm("telegram", "900"))));
        assert!(!r.is_admin(Some(&dm("discord", "900"))));
        assert!(r.is_admin(Some(&dm("slack", "U9"))));
        assert!(!r.is_admin(Some(&dm("telegram", "111"))));
        assert!(!r.is_admin(None));
    }

    #[test]
    fn owners_admit_own_dms_and_per_user_groups_only() {
        let r = rules();
        let o = SearchOwners { profile: "main".into(), exact: vec![], users: r.linked_users(&dm("telegram", "111")) };
        assert_eq!(o.users.len(), 2);
        for k in
            ["agent:main:telegram:dm:111", "agent:main:telegram:group:-5:111", "agent:main:slack:dm:U1", "agent:main:slack:thread:C1:t:U1"]
        {
            assert!(o.admits(k), "{k}");
        }
        for k in [
            "agent:main:telegram:dm:222",
            "agent:main:telegram:group:-5:222",
            "agent:main:telegram:group:111",
            "agent:x:telegram:dm:111",
            "agent:main:api:dm:111x",
        ] {
            assert!(!o.admits(k), "{k}");
        }
        assert_eq!(r.profile_owner(&dm("slack", "U1")).as_deref(), Some("id:ann"));
        assert_eq!(r.profile_owner(&dm("telegram", "222")).as_deref(), Some("telegram:222"));
        // The operator names a profile the same way a chat finds it.
        assert_eq!(r.profile_owner_named(" telegram:111 ").as_deref(), Ok("id:ann"));
        assert_eq!(r.profile_owner_named("slack:U1").as_deref(), Ok("id:ann"));
        for same in ["telegram:222", "id:bob", "chat:whatsapp:g1"] {
            assert_eq!(r.profile_owner_named(same).as_deref(), Ok(same));
        }
        for bad in ["", "111", ":111", "telegram:", "Tele gram:1", "telegram:1 2", "chat:x", "chat::1", "a:\u{7}"] {
            let e = r.profile_owner_named(bad).unwrap_err();
            assert!(e.contains("is not a user"), "{bad}: {e}");
        }
        assert!(r.profile_owner_named(&format!("telegram:{}", "1".repeat(MAX_OWNER_LEN))).is_err());
    }

    #[test]
    fn delivery_policy() {
        let r = rules();
        let me = dm("telegram", "111");
        assert!(r.check_delivery(false, Some(&me), "telegram", "111", None).is_ok());
        assert!(r.check_delivery(false, None, "telegram", "222", None).is_ok(), "allowed user's DM");
        assert!(r.check_delivery(false, None, "telegram", "-100", None).is_ok(), "home");
        assert!(r.check_delivery(false, None, "discord", "55", Some("9")).is_ok(), "allow_targets covers threads");
        assert!(r.check_delivery(false, None, "telegram", "-200", Some("7")).is_ok());
        assert!(r.check_delivery(false, None, "telegram", "-200", Some("8")).is_err());
        let e = r.check_delivery(false, Some(&me), "telegram", "999", None).unwrap_err();
        assert!(e.contains("telegram:999") && e.contains("not allowed"), "{e}");
        assert!(r.check_delivery(true, None, "telegram", "999", None).is_ok());
    }
}
