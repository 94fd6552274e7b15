//! Profiles (docs/design.md#profiles): several agents on one deployment, each with its own
//! home (config, SOUL, skills, jobs file) and its own key space in the shared store. The
//! default profile is `main`, whose keys (`agent:main:…`) are those of a single-agent store.

use std::fmt;

/// A validated profile name: `[a-z0-9][a-z0-9_-]{0,63}` (Hermes' rule).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Profile(String);

/// The default profile's name.
pub const MAIN: &str = "main";

/// A name that is not a valid profile name.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid profile name `{0}`: use 1 to 64 characters a-z, 0-9, `_` and `-`, starting with a letter or digit")]
pub struct ProfileError(pub String);

impl Profile {
    /// The default profile.
    pub fn main() -> Self {
        Self(MAIN.to_string())
    }

    /// Parses a profile name; `default` (Hermes' name for the root home) is `main`.
    pub fn parse(name: &str) -> Result<Self, ProfileError> {
        if name == "default" {
            return Ok(Self::main());
        }
        let mut chars = name.chars();
        let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
        if first_ok && rest_ok && name.len() <= 64 { Ok(Self(name.to_string())) } else { Err(ProfileError(name.to_string())) }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the default profile.
    pub fn is_main(&self) -> bool {
        self.0 == MAIN
    }

    /// The home of this profile under the root home: the root itself for `main`, else
    /// `<root>/profiles/<name>` (Hermes' layout).
    pub fn home(&self, root: &std::path::Path) -> std::path::PathBuf {
        if self.is_main() { root.to_path_buf() } else { root.join("profiles").join(&self.0) }
    }
}

impl Default for Profile {
    fn default() -> Self {
        Self::main()
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_hermes_rule() {
        for ok in ["main", "a", "0", "work-bot_2", &"x".repeat(64)] {
            assert_eq!(Profile::parse(ok).map(|p| p.as_str().to_string()), Ok(ok.to_string()));
        }
        for bad in ["", "A", "-a", "_a", "a b", "a/b", "a:b", "ä", "../x", &"x".repeat(65)] {
            assert!(Profile::parse(bad).is_err(), "{bad:?}");
        }
        assert!(Profile::parse("default").unwrap().is_main());
        let root = std::path::Path::new("/h");
        assert_eq!(Profile::main().home(root), root);
        assert_eq!(Profile::parse("b").unwrap().home(root), root.join("profiles/b"));
    }
}
