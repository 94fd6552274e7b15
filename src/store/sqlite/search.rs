//! SQLite body of [`SessionStore::search_messages`](crate::ports::SessionStore::search_messages):
//! one FTS5 `MATCH` on the `message_search` index that `schema` step 2 keeps in sync
//! (docs/design.md#session-search).
//!
//! Why every term is rendered as a quoted FTS5 phrase: inside double quotes nothing is an
//! operator (`AND`, `(`, `*`, `:`, `-`, `NEAR`), so whatever the user or model typed is
//! matched as text and can never be an FTS5 syntax error.

use super::from_ms;
use crate::core::access::SearchOwners;
use crate::core::ids::{SessionId, SessionKey};
use crate::core::search::SearchTerms;
use crate::core::session::Role;
use crate::ports::{SearchHit, StoreError};
use crate::store::backend;
use rusqlite::{Connection, params};

/// The FTS5 query of `terms`: each one a quoted phrase (inner quotes doubled), all required.
pub(super) fn fts5_query(terms: &SearchTerms) -> String {
    terms.terms().iter().map(|t| format!("\"{}\"", t.replace('"', "\"\""))).collect::<Vec<_>>().join(" ")
}

type HitRow = (String, Option<String>, String, String, i64);

/// The newest `limit` indexed messages outside `exclude` that match `terms`.
/// Only conversations of `scope`'s profile are searched (messages without a record count as
/// `main`'s, as before profiles existed).
pub(super) fn search(
    c: &Connection,
    scope: &crate::store::scope::Scope,
    terms: &SearchTerms,
    exclude: Option<&SessionId>,
    owners: Option<&SearchOwners>,
    limit: usize,
) -> Result<Vec<SearchHit>, StoreError> {
    let mut st = c
        .prepare_cached(
            "SELECT f.session_id, s.session_key, f.role, snippet(message_search, 0, '>>>', '<<<', '...', 32), f.at
             FROM message_search f LEFT JOIN sessions s ON s.session_id = f.session_id
             WHERE message_search MATCH ?1 AND f.session_id IS NOT ?2
               AND (s.session_key GLOB ?4 OR (s.session_key IS NULL AND ?5))
               AND (?6 IS NULL
                    OR s.session_key IN (SELECT value FROM json_each(?6))
                    OR EXISTS (SELECT 1 FROM json_each(?7) g WHERE s.session_key GLOB g.value))
             ORDER BY f.at DESC, f.seq DESC LIMIT ?3",
        )
        .map_err(backend)?;
    let exclude = exclude.map(SessionId::as_str);
    // The owner filter as two JSON lists (exact keys, GLOB patterns); NULL: every session.
    let exact = owners.map(|o| serde_json::Value::from(o.exact.clone()).to_string());
    let globs = owners.map_or_else(|| "[]".to_string(), |o| serde_json::Value::from(o.globs()).to_string());
    let rows = st
        .query_map(
            params![fts5_query(terms), exclude, limit as i64, scope.session_glob(), scope.profile().is_main(), exact, globs],
            |r| -> rusqlite::Result<HitRow> { Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)) },
        )
        .map_err(backend)?;
    rows.map(|r| r.map_err(backend).map(to_hit)).collect()
}

fn to_hit((session_id, key, role, snippet, at): HitRow) -> SearchHit {
    SearchHit {
        session_id: SessionId::named(session_id),
        session_key: key.and_then(|k| SessionKey::parse(&k).ok()),
        role: if role == "user" { Role::User } else { Role::Assistant },
        snippet,
        at: from_ms(at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_become_quoted_phrases() {
        let t = SearchTerms::parse(r#"say "a ""b"" c" NEAR(x)"#).unwrap();
        assert_eq!(fts5_query(&t), r#""say" "a" "b" "c" "NEAR(x""#);
    }

    /// Hostile queries run as plain text against a real FTS5 table: never a syntax error.
    #[tokio::test]
    async fn hostile_queries_are_not_errors() {
        let store = super::super::SqliteStore::in_memory().unwrap();
        for q in
            [r#""foo AND ("#, "a:b", "-x", "*", "x*", "^y", "NEAR(a b)", "{a b}:c", r#"" OR ""#, "ab\"cd", "'; DROP TABLE messages; --"]
        {
            if let Ok(t) = SearchTerms::parse(q) {
                store
                    .with(move |c| search(c, &crate::store::scope::Scope::default(), &t, None, None, 5))
                    .await
                    .unwrap_or_else(|e| panic!("{q}: {e}"));
            }
        }
    }
}
