//! A job over 4-byte integer records, shared by the runtime's tests
//! (included with `#[path]`): it counts each key and every record `map`
//! sees, to tell a kept sample from a redone one.

#![allow(dead_code)] // each test file uses its own subset

use ember::{Emit, Job, MapResult, Split, Sum};

/// Counts 4-byte little-endian integer keys, and every record `map` sees
/// (to tell a kept sample from a redone one).
pub struct Tally {
    pub hint: ember::KeyHint,
    pub mapped: std::sync::atomic::AtomicU64,
}

impl Job for Tally {
    type Key = u32;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> ember::Records {
        ember::Records::Fixed(4)
    }

    fn keys(&self) -> ember::KeyHint {
        self.hint
    }

    fn pipelinable(&self) -> bool {
        true
    }

    fn map<E: Emit<u32, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        for r in split.data.chunks_exact(4) {
            emit.emit(u32::from_le_bytes(r.try_into().unwrap()), 1);
        }
        self.mapped.fetch_add(
            split.data.len() as u64 / 4,
            std::sync::atomic::Ordering::Relaxed,
        );
        Ok(())
    }

    fn reduce(&self, _key: &u32, n: u64) -> u64 {
        n
    }
}

/// Records in the [`keyed`] inputs.
pub const RECORDS: u32 = 200_000;
/// 100 keys, each repeated.
pub const FEW: fn(u32) -> u32 = |i| i.wrapping_mul(2_654_435_761) % 100;
/// Every key once.
pub const UNIQUE: fn(u32) -> u32 = |i| i.wrapping_mul(2_654_435_761);

/// [`RECORDS`] 4-byte records for [`Tally`], record `i` holding `key(i)`.
pub fn keyed(key: fn(u32) -> u32) -> Vec<u8> {
    (0..RECORDS).flat_map(|i| key(i).to_le_bytes()).collect()
}
