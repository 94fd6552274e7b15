//! An item's write shard (docs/design.md#shards), from the crate's stable hash
//! (`core::stable_hash`). Kept out of the DynamoDB adapter so the spread is checked in every
//! build.

/// The default number of write shards (`store.dynamodb_shards`).
pub const DEFAULT_SHARDS: u32 = 8;
/// The most write shards a table may have (each listing is one query per shard).
pub const MAX_SHARDS: u32 = 64;

/// The shard (`0..n`) of an item whose own key is `key`.
pub fn shard_of(key: &str, n: u32) -> u32 {
    u32::try_from(crate::core::stable_hash::stable64(key) % u64::from(n.max(1))).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 10,000 synthetic keys of each kind spread evenly: every shard within ±15 % of the mean.
    /// (64 shards get 64,000 keys: with 156 keys a shard, ±15 % is only two standard
    /// deviations of a perfect random spread, so some shard would miss it by chance.)
    #[test]
    fn keys_spread_evenly() {
        for n in [2u32, 4, 8, 16, 64] {
            let total = 10_000u32.max(1_000 * n);
            for kind in ["session key", "session id", "job id"] {
                let mut counts = vec![0u32; n as usize];
                for i in 0..total {
                    let key = match kind {
                        "session key" => format!("agent:main:telegram:dm:{i}"),
                        "session id" => format!("20260101_120000_{i:08x}"),
                        _ => format!("{i:012x}"),
                    };
                    counts[shard_of(&key, n) as usize] += 1;
                }
                let mean = f64::from(total) / f64::from(n);
                for (k, c) in counts.iter().enumerate() {
                    let dev = (f64::from(*c) - mean).abs() / mean;
                    assert!(dev <= 0.15, "n={n} kind={kind} shard {k}: {c} items, mean {mean:.0} ({:.1} %)", dev * 100.0);
                }
            }
        }
    }

    /// Pinned values (the hash itself is pinned in `core::stable_hash`): a change would
    /// strand every item written before it.
    #[test]
    fn hash_is_pinned() {
        assert_eq!(shard_of("a", 64), (0x82a2_a958_a9be_ce5b_u64 % 64) as u32);
        assert_eq!(shard_of("anything", 1), 0);
    }
}
