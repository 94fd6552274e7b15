//! Memory use cases (docs/design.md#memory): the two stores kept in the store's meta records
//! (so SQLite and DynamoDB alike), their guarded writes, the per-session frozen snapshot in
//! the system prompt, the flush turn before a reset, and the [`Memory`] service the CLI and
//! the dashboard use.
//!
//! Writes: the meta port has no compare-and-set, so a write is serialized within the process
//! (one async lock) and, across processes, re-read after writing: a write whose mark is not in
//! the stored document was overwritten and is applied again on the newer state. What remains
//! is last-writer-wins between two processes writing within the same instant, after both
//! verified — a window of one store round trip, for a record written a few times a session.

use crate::app::tools::ToolCtx;
use crate::app::types::TurnKind;
use crate::app::{App, AppError};
use crate::config::MemorySettings;
use crate::core::ids::{Origin, SessionId};
use crate::core::memory::{self, Op, Shelf, Stored, Target, USER_INDEX_KEY, WRITER_MARKS};
use crate::core::session::{Message, Role};
use crate::ports::ChatRequest;
use serde_json::{Value, json};
use std::time::Duration;

/// Serializes this process's memory writes.
static WRITE_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Model rounds a flush turn may take.
const FLUSH_ROUNDS: usize = 3;
/// Time a flush turn may take.
const FLUSH_BUDGET: Duration = Duration::from_secs(60);

/// Name of a session's frozen snapshot note (`TurnStore`; read with its transcript).
pub(in crate::app) const SNAPSHOT_NOTE: &str = "memory_snapshot";

impl App {
    fn memory_settings(&self) -> &MemorySettings {
        &self.inner.cfg.settings.memory
    }

    /// The shelf of `t` for a caller in `origin`: the agent's notes, the shared profile, or,
    /// with per-user profiles (docs/who-sees-what.md), the caller's own (by linked identity,
    /// else `platform:user_id`, else the chat when the platform gives no user).
    pub(in crate::app) fn memory_shelf(&self, t: Target, origin: Option<&Origin>) -> Shelf {
        if t != Target::User || !self.inner.cfg.per_user_profile() {
            return Shelf::shared(t);
        }
        let owner = origin.map(|o| self.access().profile_owner(o).unwrap_or_else(|| format!("chat:{}:{}", o.platform, o.chat_id)));
        Shelf::new(t, owner)
    }

    /// A store as stored. A shared store never written falls back (read-only) to Hermes' file
    /// under the home (`memories/MEMORY.md`, as `import` copies it); the first write moves it in.
    pub(in crate::app) async fn memory_load(&self, shelf: &Shelf) -> Result<Stored, AppError> {
        let key = shelf.meta_key();
        match self.inner.store.get_meta(&key).await? {
            Some(raw) => serde_json::from_str(&raw).map_err(|e| AppError::BadRequest(format!("stored memory `{key}` is not valid: {e}"))),
            None => {
                let entries = shelf
                    .file_name()
                    .and_then(|f| std::fs::read_to_string(self.inner.home.join("memories").join(f)).ok())
                    .map(|s| memory::split_entries(&s))
                    .unwrap_or_default();
                Ok(Stored { entries, ..Stored::default() })
            }
        }
    }

    /// The owners of per-user profiles written so far.
    pub(in crate::app) async fn memory_profile_owners(&self) -> Result<Vec<String>, AppError> {
        let raw = self.inner.store.get_meta(USER_INDEX_KEY).await?;
        Ok(raw.and_then(|r| serde_json::from_str(&r).ok()).unwrap_or_default())
    }

    /// Records `owner` in the per-user profile index (under the write lock).
    async fn memory_index_owner(&self, owner: &str) -> Result<(), AppError> {
        let mut owners = self.memory_profile_owners().await?;
        if !owners.iter().any(|o| o == owner) {
            owners.push(owner.to_string());
            owners.sort();
            let raw = serde_json::to_string(&owners).map_err(|e| AppError::BadRequest(e.to_string()))?;
            self.inner.store.put_meta(USER_INDEX_KEY, &raw).await?;
        }
        Ok(())
    }

    /// Applies `f` to a store's entries and writes the result (see the module doc). `f`
    /// returns the new entries (None: nothing to write) or a refusal for the caller.
    pub(in crate::app) async fn memory_write<F, R>(&self, shelf: &Shelf, f: F) -> Result<Result<R, String>, AppError>
    where
        F: Fn(&[String]) -> Result<(Option<Vec<String>>, R), String>,
    {
        let _guard = WRITE_LOCK.lock().await;
        let t = shelf.target;
        for _ in 0..4 {
            let cur = self.memory_load(shelf).await?;
            let (next, out) = match f(&cur.entries) {
                Ok(x) => x,
                Err(refusal) => return Ok(Err(refusal)),
            };
            let Some(entries) = next else { return Ok(Ok(out)) };
            let mark = format!("{:016x}", rand::random::<u64>());
            let mut writers = cur.writers.clone();
            writers.push(mark.clone());
            let skip = writers.len().saturating_sub(WRITER_MARKS);
            writers.drain(..skip);
            let doc = Stored { version: cur.version + 1, entries, writers };
            let raw = serde_json::to_string(&doc).map_err(|e| AppError::BadRequest(e.to_string()))?;
            if let Some(owner) = &shelf.owner {
                self.memory_index_owner(owner).await?;
            }
            self.inner.store.put_meta(&shelf.meta_key(), &raw).await?;
            if self.memory_load(shelf).await?.writers.contains(&mark) {
                return Ok(Ok(out));
            }
            tracing::warn!(target = t.as_str(), "memory write was overwritten by another process; applying it again");
        }
        Err(AppError::Contended)
    }

    /// Applies one op for the `memory` tool: Hermes' success result, or the refusal text.
    /// Its entries are the shelf's only, so a refusal quoting them quotes nobody else's.
    pub(in crate::app) async fn memory_apply(&self, shelf: &Shelf, op: &Op) -> Result<Result<Value, String>, AppError> {
        let t = shelf.target;
        let lim = self.memory_settings().limit(t);
        self.memory_write(shelf, |entries| {
            let applied = memory::apply(entries, op, lim)?;
            let after = applied.entries.clone().unwrap_or_else(|| entries.to_vec());
            let result = json!({
                "success": true, "done": true, "target": t.as_str(), "usage": memory::usage(&after, lim),
                "entry_count": after.len(), "message": applied.message,
                "note": "Write saved. This update is complete — do not repeat it.",
            });
            Ok((applied.entries, result))
        })
        .await
    }

    /// SOUL.md (or the default) plus the memory snapshot frozen at the session's first turn
    /// (stored, so every process and later turn sees the same prompt); the chat prompt adds
    /// the skills index (`app::skills`). A store failure leaves the snapshot out for this
    /// turn, never the turn.
    /// The snapshot note is passed as already read (`Some(None)`: absent); `None` reads it.
    /// The user profile in it is `origin`'s (per-user profiles) or the shared one.
    pub(in crate::app) async fn memory_system_prompt_from(
        &self,
        session: &SessionId,
        known: Option<Option<&str>>,
        origin: Option<&Origin>,
    ) -> String {
        let base = self.system_prompt();
        let m = self.memory_settings();
        if !m.memory_enabled && !m.user_profile_enabled {
            return base;
        }
        let snapshot = match self.session_snapshot(session, known, origin).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(session_id = %session, error = %e, "memory snapshot unavailable; turn runs without it");
                String::new()
            }
        };
        let mut prompt = format!("{}\n\n{}", base.trim_end(), memory::MEMORY_GUIDANCE);
        if !snapshot.is_empty() {
            prompt.push_str("\n\n");
            prompt.push_str(&snapshot);
        }
        prompt
    }

    /// The session's frozen snapshot: its note (`known` when the caller read it), or, on its
    /// first turn, the memory rendered now and stored as the note.
    async fn session_snapshot(
        &self,
        session: &SessionId,
        known: Option<Option<&str>>,
        origin: Option<&Origin>,
    ) -> Result<String, AppError> {
        let raw = match known {
            Some(k) => k.map(str::to_string),
            None => self.inner.store.turn_read(session, 0, &[SNAPSHOT_NOTE]).await?.notes.remove(SNAPSHOT_NOTE),
        };
        if let Some(raw) = raw {
            let v: Value = serde_json::from_str(&raw).unwrap_or_default();
            return Ok(v["text"].as_str().unwrap_or_default().to_string());
        }
        let text = self.render_snapshot(origin).await?;
        self.inner.store.turn_put_note(session, SNAPSHOT_NOTE, Some(&json!({"text": text}).to_string())).await?;
        Ok(text)
    }

    /// The enabled stores' blocks as they are now, the user profile `origin`'s.
    async fn render_snapshot(&self, origin: Option<&Origin>) -> Result<String, AppError> {
        let m = self.memory_settings();
        let mut blocks = Vec::new();
        for t in Target::ALL.into_iter().filter(|t| m.enabled(*t)) {
            let b = memory::render_block(t, &self.memory_load(&self.memory_shelf(t, origin)).await?.entries, m.limit(t));
            if !b.is_empty() {
                blocks.push(b);
            }
        }
        Ok(blocks.join("\n\n"))
    }

    /// Runs before a session ends by a reset: the flush turn when the session had enough
    /// user turns, then the session's snapshot is dropped. Never fails: a problem is logged
    /// and the reset goes on.
    pub(in crate::app) async fn before_reset(&self, session: &SessionId, origin: &Origin) {
        let budget = crate::app::budget::turn_budget(FLUSH_BUDGET);
        match tokio::time::timeout(budget, self.flush_memories(session, origin)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(session_id = %session, error = %e, "memory flush before reset failed; resetting anyway"),
            Err(_) => tracing::warn!(session_id = %session, "memory flush before reset timed out; resetting anyway"),
        }
        if let Err(e) = self.inner.store.turn_put_note(session, SNAPSHOT_NOTE, None).await {
            tracing::warn!(session_id = %session, error = %e, "could not drop the memory snapshot");
        }
    }

    /// The flush turn: the session's conversation, Hermes' flush prompt, only the `memory`
    /// tool, at most [`FLUSH_ROUNDS`] model calls. Nothing is delivered or stored in the
    /// transcript; only memory writes happen.
    async fn flush_memories(&self, session: &SessionId, origin: &Origin) -> Result<(), AppError> {
        let m = self.memory_settings();
        if !m.memory_enabled && !m.user_profile_enabled {
            return Ok(());
        }
        let transcript = self.inner.store.recent_messages(session, self.inner.cfg.settings.model.max_context_messages).await?;
        let user_turns = transcript.iter().filter(|x| x.role == Role::User).count();
        if user_turns < m.flush_min_turns.max(1) {
            return Ok(());
        }
        let now = self.inner.clock.now();
        let mut live = Vec::new();
        for t in Target::ALL.into_iter().filter(|t| m.enabled(*t)) {
            live.push((t, self.memory_load(&self.memory_shelf(t, Some(origin))).await?.entries));
        }
        let mut prompt = vec![Message::text(Role::System, self.chat_system_prompt_from(session, None, None, Some(origin)).await, now)];
        prompt.extend(
            transcript
                .iter()
                .filter(|x| matches!(x.role, Role::User | Role::Assistant) && !x.content.trim().is_empty())
                .map(|x| Message::text(x.role, x.content.clone(), x.at)),
        );
        prompt.push(Message::text(Role::User, memory::flush_prompt(&live), now));
        let ctx = ToolCtx {
            app: self,
            session_id: session,
            origin: Some(origin),
            kind: TurnKind::Chat,
            deadline: None,
            call_id: None,
            turn: None,
        };
        let toolset = self.inner.tools.toolset(&ctx).only(&["memory"]);
        if toolset.is_empty() {
            return Ok(());
        }
        let tools = toolset.specs();
        for _ in 0..FLUSH_ROUNDS {
            let resp =
                self.inner.llm.complete(&ChatRequest { messages: prompt.clone(), tools: tools.clone(), model: None, route: None }).await?;
            if resp.tool_calls.is_empty() {
                break;
            }
            let mut msg = Message::text(Role::Assistant, resp.content.clone(), self.inner.clock.now());
            msg.tool_calls = resp.tool_calls.clone();
            prompt.push(msg);
            for call in &resp.tool_calls {
                let result = toolset.execute(&ctx, call).await;
                let mut t = Message::text(Role::Tool, result.content, self.inner.clock.now());
                t.tool_call_id = Some(call.id.clone());
                prompt.push(t);
            }
        }
        tracing::info!(session_id = %session, user_turns, "memory flush before reset done");
        Ok(())
    }

    /// Memory for people: the CLI and the dashboard.
    pub fn memory(&self) -> Memory {
        Memory { app: self.clone(), owner: None }
    }
}

/// The two memory stores as people see and edit them (`memory show|edit [--user OWNER]`, the
/// dashboard's Memory tab, `GET/PUT /api/memory[?user=OWNER]`): the agent's notes and the
/// shared profile, or, with an owner, that user's profile. Cheap to clone.
#[derive(Clone)]
pub struct Memory {
    app: App,
    /// Whose profile `user` is (`None`: the shared one).
    owner: Option<String>,
}

impl Memory {
    /// The same view on one user's profile (`None` or blank: the shared one). `user` is
    /// `platform:user_id` (its linked identity's profile when `identities` links it),
    /// `id:<name>` or `chat:<platform>:<chat_id>`; anything else is a `BadRequest`.
    pub fn user(self, user: Option<&str>) -> Result<Self, AppError> {
        let owner = match user.map(str::trim).filter(|u| !u.is_empty()) {
            Some(u) => Some(self.app.access().profile_owner_named(u).map_err(AppError::BadRequest)?),
            None => None,
        };
        Ok(Self { owner, ..self })
    }

    /// The owners of the per-user profiles written so far, each with its entry count and
    /// usage (`memory users`).
    pub async fn users(&self) -> Result<Vec<Value>, AppError> {
        let lim = self.app.memory_settings().limit(Target::User);
        let mut out = Vec::new();
        for owner in self.app.memory_profile_owners().await? {
            let entries = self.app.memory_load(&Shelf::new(Target::User, Some(owner.clone()))).await?.entries;
            out.push(json!({"user": owner, "entries": entries.len(), "usage": memory::usage(&entries, lim)}));
        }
        Ok(out)
    }

    /// Whose profile this view's `user` store is (`None`: the shared one).
    pub fn owner(&self) -> Option<&str> {
        self.owner.as_deref()
    }

    fn shelf(&self, t: Target) -> Shelf {
        Shelf::new(t, self.owner.clone())
    }

    /// Both stores: entries, usage, limit and whether each is enabled; `profiles` lists the
    /// per-user profiles with their entries and `user_profile` the mode in use.
    pub async fn show(&self) -> Result<Value, AppError> {
        let m = self.app.memory_settings();
        let view = |entries: &[String], t: Target| {
            let lim = m.limit(t);
            json!({
                "entries": entries, "chars": memory::char_count(entries), "limit": lim,
                "usage": memory::usage(entries, lim), "enabled": m.enabled(t),
            })
        };
        let mut out = json!({});
        for t in Target::ALL {
            out[t.as_str()] = view(&self.app.memory_load(&self.shelf(t)).await?.entries, t);
        }
        let mut profiles = serde_json::Map::new();
        for owner in self.app.memory_profile_owners().await? {
            let entries = self.app.memory_load(&Shelf::new(Target::User, Some(owner.clone()))).await?.entries;
            profiles.insert(owner, view(&entries, Target::User));
        }
        out["profiles"] = Value::Object(profiles);
        out["user_profile"] = json!(if self.app.inner.cfg.per_user_profile() { "per_user" } else { "shared" });
        out["owner"] = json!(self.owner);
        Ok(out)
    }

    /// The current entries of both stores, with their limits (for the edit text).
    pub async fn entries(&self) -> Result<Vec<(Target, Vec<String>, usize)>, AppError> {
        let m = self.app.memory_settings();
        let mut out = Vec::new();
        for t in Target::ALL {
            out.push((t, self.app.memory_load(&self.shelf(t)).await?.entries, m.limit(t)));
        }
        Ok(out)
    }

    /// Replaces whole stores. Every store is checked against its limit first; one over it
    /// refuses the whole change and nothing is written.
    pub async fn set(&self, stores: &[(Target, Vec<String>)]) -> Result<(), AppError> {
        let m = self.app.memory_settings();
        let mut clean = Vec::new();
        for (t, entries) in stores {
            let entries = memory::split_entries(&entries.join(memory::ENTRY_DELIMITER));
            memory::check_limit(*t, &entries, m.limit(*t)).map_err(AppError::BadRequest)?;
            clean.push((*t, entries));
        }
        for (t, entries) in clean {
            let want = entries.clone();
            let wrote = self.app.memory_write(&self.shelf(t), move |cur| Ok(((cur != want.as_slice()).then(|| want.clone()), ()))).await?;
            wrote.map_err(AppError::BadRequest)?;
            tracing::info!(target = t.as_str(), entries = entries.len(), "memory edited");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
