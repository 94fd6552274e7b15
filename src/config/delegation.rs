//! Hermes' `delegation:` block: the limits of `delegate_task` (docs/tools.md#todo-clarify-and-delegation).
//! Hermes' other keys there (`provider`, `model`, `base_url`, …) pass silently: children use
//! the parent's model.

use serde::{Deserialize, Serialize};

/// Children one `delegate_task` call may run at once when nothing is configured (Hermes').
pub const DEFAULT_MAX_CONCURRENT_CHILDREN: usize = 3;

/// Hermes' `delegation:` block.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct DelegationSettings {
    /// Hermes 0.19.0's key: most tasks one call may run, all in parallel (default 3, at least 1).
    pub max_concurrent_children: Option<i64>,
    /// The same limit under the shorter name (`max_concurrent_children` wins when both are set).
    pub max_concurrent: Option<i64>,
    /// Model calls each child may make (Hermes' default 50).
    pub max_iterations: u32,
    /// Characters of one child's answer returned to the parent; a longer one is cut to a
    /// head + tail window with a footer (Hermes' default 24000).
    pub max_summary_chars: usize,
}

impl Default for DelegationSettings {
    fn default() -> Self {
        Self { max_concurrent_children: None, max_concurrent: None, max_iterations: 50, max_summary_chars: 24_000 }
    }
}

impl DelegationSettings {
    /// The concurrency limit in force (at least 1).
    pub fn max_children(&self) -> usize {
        let n = self.max_concurrent_children.or(self.max_concurrent);
        n.map_or(DEFAULT_MAX_CONCURRENT_CHILDREN, |n| usize::try_from(n.max(1)).unwrap_or(DEFAULT_MAX_CONCURRENT_CHILDREN))
    }
}
