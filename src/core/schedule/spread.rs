//! Spread (docs/design.md#spread): each recurring job's occurrences move by a fixed offset
//! in `[0, spread)` derived from the job id with the crate's stable hash (`core::stable_hash`:
//! FNV-1a, then MurmurHash3's finalizer), so every host and every restart computes the
//! same offset, and so the same occurrence always has the same claim key. Rust's randomized hasher would not do.

/// The largest spread accepted (`cron.spread_seconds`, a job's `spread`): one day.
pub const MAX_SPREAD_SECS: u32 = 86_400;

/// The offset in seconds, in `[0, spread)`, of the job `job_id` (0 when `spread` is 0).
pub fn offset(job_id: &str, spread: u32) -> i64 {
    if spread == 0 {
        return 0;
    }
    i64::try_from(crate::core::stable_hash::stable64(job_id) % u64::from(spread)).unwrap_or(0)
}

/// Checks a spread value (config or job field): `0..=86400` seconds.
pub fn check(spread: u64) -> Result<u32, String> {
    u32::try_from(spread)
        .ok()
        .filter(|s| *s <= MAX_SPREAD_SECS)
        .ok_or_else(|| format!("must be between 0 and {MAX_SPREAD_SECS} seconds, got {spread}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_stable_and_in_range() {
        // The hash is pinned in `core::stable_hash`: a change would move every job's claim keys.
        assert_eq!(offset("daily-news", 0), 0);
        assert_eq!(offset("daily-news", 1), 0);
        assert_eq!(offset("daily-news", 600), offset("daily-news", 600));
        for i in 0..10_000 {
            let o = offset(&format!("agent-{i:05}"), 600);
            assert!((0..600).contains(&o), "{o}");
        }
        assert!(check(86_400).is_ok() && check(86_401).is_err());
    }

    /// The busiest second of `ids`' `0 8 * * *` occurrences under `spread`: the fires that
    /// land in it, and how many seconds are used.
    fn peak(ids: &[String], spread: u32) -> (usize, usize) {
        let mut per_second = std::collections::HashMap::new();
        for id in ids {
            *per_second.entry(offset(id, spread)).or_insert(0usize) += 1;
        }
        (per_second.values().copied().max().unwrap_or(0), per_second.len())
    }

    /// docs/cost.md §5: the 08:00 peak of 10,000 agents' daily jobs, before and after a
    /// spread of 600 s, over the real offset function. Run with
    /// `cargo nextest run --lib -E 'test(the_0800_peak)' --no-capture` to print the figures.
    #[test]
    fn the_0800_peak_of_10000_agents() {
        // One job per agent, named as an operator would; and the cost page's case, half of
        // the agents with 3 jobs each under random ids (`core::job::new_id`'s form).
        let named: Vec<String> = (0..10_000).map(|i| format!("agent-{i:05}-morning-brief")).collect();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let random: Vec<String> = (0..15_000)
            .map(|_| {
                x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
                format!("{:012x}", crate::core::stable_hash::fmix64(x) & 0xffff_ffff_ffff)
            })
            .collect();
        for (what, ids) in [("10,000 jobs", &named), ("15,000 jobs", &random)] {
            let (before, _) = peak(ids, 0);
            let (after, used) = peak(ids, 600);
            println!("{what}: peak {before} jobs/s with spread 0; {after} jobs/s with spread 600 ({used} of 600 seconds used)");
            assert_eq!(before, ids.len());
            let mean = ids.len() / 600;
            assert!(after <= 2 * mean + 10, "{what}: {after} at the peak, mean {mean}");
            assert_eq!(used, 600);
        }
    }
}
