//! The one stable hash of the crate: FNV-1a (64 bit), then MurmurHash3's 64-bit finalizer.
//! Unlike `std`'s randomized hasher it is the same on every host, build and Rust version,
//! which is what its users need: a DynamoDB item's write shard (`store::shard`) and a job's
//! spread offset (`core::schedule::spread`), both found again only if the hash never changes.

/// FNV-1a (64 bit).
fn fnv1a(key: &str) -> u64 {
    key.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// MurmurHash3's 64-bit finalizer (also a cheap mixer for tests' sample ids): FNV's low bits are weak for keys that differ only in
/// their last characters (`agent-0001`, sequential chat ids), and callers take the low bits.
pub fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The stable 64-bit hash of `key`. It must never change.
pub fn stable64(key: &str) -> u64 {
    fmix64(fnv1a(key))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_hash_is_pinned() {
        // FNV-1a's published test vector for "a", then the finalizer: a change here would move
        // every stored shard and every job's spread offset.
        assert_eq!(super::fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(super::fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(super::stable64(""), 0xefd0_1f60_ba99_2926);
        assert_eq!(super::stable64("a"), 0x82a2_a958_a9be_ce5b);
    }
}
