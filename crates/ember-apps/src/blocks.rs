//! Reproducible parallel generation of large inputs: the output is cut into
//! fixed-size blocks, each made from its own random stream seeded by
//! `(seed, block index)`, so the bytes do not depend on the thread count.

use std::io::{self, Write};

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

/// Blocks generated in parallel before they are written out in order, at
/// most.
const BATCH: u64 = 32;
/// Bytes generated in parallel before they are written out, at most (of
/// sort's 6.5 MB blocks, 16 at a time).
const BATCH_BYTES: u64 = 100 << 20;

/// The random stream of one block: `seed` and `stream` mixed (SplitMix64's
/// finalizer) into the seed of a fresh generator.
pub(crate) fn rng(seed: u64, stream: u64) -> Xoshiro256PlusPlus {
    let mut z = seed ^ stream.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    Xoshiro256PlusPlus::seed_from_u64(z ^ (z >> 31))
}

/// Writes `total` bytes made of blocks of `block` bytes (the last one may be
/// shorter): `make(index, len)` returns block `index`, exactly `len` bytes.
/// Blocks are made in parallel batches (`BATCH` blocks, fewer if they would
/// exceed `BATCH_BYTES`) and written in order; `progress` gets the bytes
/// written so far.
pub(crate) fn write_blocks(
    total: u64,
    block: u64,
    out: &mut impl Write,
    mut progress: impl FnMut(u64),
    make: impl Fn(u64, usize) -> Vec<u8> + Sync,
) -> io::Result<()> {
    let block = block.max(1);
    let blocks = total.div_ceil(block);
    let batch = (BATCH_BYTES / block).clamp(1, BATCH);
    let mut written = 0;
    for first in (0..blocks).step_by(batch as usize) {
        let last = (first + batch).min(blocks);
        let data: Vec<Vec<u8>> = (first..last)
            .into_par_iter()
            .map(|b| {
                let len = block.min(total - b * block) as usize;
                let bytes = make(b, len);
                debug_assert_eq!(bytes.len(), len);
                bytes
            })
            .collect();
        for d in data {
            out.write_all(&d)?;
            written += d.len() as u64;
        }
        progress(written);
    }
    Ok(())
}

/// FNV-1a of some bytes: pins a generator's output in its tests (a change
/// to a generator changes every benchmark input, so it must be deliberate).
#[cfg(test)]
pub(crate) fn checksum(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}
