//! A profile's key space in a shared store (docs/design.md#profiles), applied in one place
//! for every adapter. Session keys carry the profile already (`agent:<profile>:…`); every
//! other key (job ids in jobs, claims, runs and the ledger; meta keys; once keys; inbound
//! platforms) is stored as `@<profile>/<key>` for a named profile and unchanged for `main`,
//! so a store written before profiles existed is `main`'s, byte for byte. Listings filter
//! with GLOB patterns; a raw key never starts with `@`, so `main`'s pattern excludes every
//! other profile.

use crate::core::profile::Profile;

/// The key space of one profile.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    profile: Profile,
}

impl Scope {
    /// The key space of `profile`.
    pub fn new(profile: Profile) -> Self {
        Self { profile }
    }

    /// The profile.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The stored form of a key that does not carry the profile itself.
    pub fn key(&self, raw: &str) -> String {
        if self.profile.is_main() { raw.to_string() } else { format!("@{}/{raw}", self.profile) }
    }

    /// The key a stored key ([`Scope::key`]) was made from, if it is this profile's.
    pub fn strip<'a>(&self, stored: &'a str) -> Option<&'a str> {
        if self.profile.is_main() {
            (!stored.starts_with('@')).then_some(stored)
        } else {
            stored.strip_prefix('@')?.strip_prefix(self.profile.as_str())?.strip_prefix('/')
        }
    }

    /// GLOB pattern of the stored keys ([`Scope::key`]) of this profile.
    pub fn key_glob(&self) -> String {
        if self.profile.is_main() { "[^@]*".to_string() } else { format!("@{}/*", self.profile) }
    }

    /// GLOB pattern of this profile's session keys.
    pub fn session_glob(&self) -> String {
        format!("agent:{}:*", self.profile)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn main_is_unchanged_and_others_are_apart() {
        let main = Scope::default();
        let b = Scope::new(Profile::parse("b").unwrap());
        assert_eq!(main.key("memory"), "memory");
        assert_eq!(b.key("memory"), "@b/memory");
        let c = rusqlite::Connection::open_in_memory().unwrap();
        let glob = |k: &str, p: &str| -> bool { c.query_row("SELECT ?1 GLOB ?2", [k, p], |r| r.get(0)).unwrap() };
        assert!(glob(&main.key("x"), &main.key_glob()) && !glob(&b.key("x"), &main.key_glob()));
        assert!(glob(&b.key("x"), &b.key_glob()) && !glob(&main.key("x"), &b.key_glob()));
        assert!(!glob("@bb/x", &b.key_glob()), "a profile whose name extends another's is apart");
        assert_eq!((main.strip("memory"), main.strip("@b/memory")), (Some("memory"), None));
        assert_eq!((b.strip("@b/memory"), b.strip("@bb/memory"), b.strip("memory")), (Some("memory"), None, None));
        assert!(glob("agent:b:api:dm:1", &b.session_glob()) && !glob("agent:bb:api:dm:1", &b.session_glob()));
    }
}
