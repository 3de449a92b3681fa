//! Sort: 100-byte records with 10-byte keys (the TeraSort / gensort
//! layout), ordered by key; records with equal keys keep their input order.
//!
//! **Record layout** (gensort's binary records): bytes 0..10 the key
//! (random), 10..12 `00 11`, 12..44 the row number as 32 upper-case hex
//! digits, 44..48 `88 99 AA BB`, 48..96 filler (hex digits of the row
//! number, four of each), 96..100 `CC DD EE FF`. Only the key matters to
//! the sort; the row number lets a reader check the order of ties.
//!
//! **On ember**: a map-only job over `Records::Fixed(100)` whose map emits
//! `(key, record index)`; the runtime concatenates the pairs in input order
//! and sorts them stably by key, which gives the permutation; the records
//! are then gathered in that order by all the runtime's threads. An input
//! whose length is not a multiple of 100 is [`Error::InvalidInput`].

use std::io::{self, Write};

use ember::{Error, Input, MapOnlyJob, Records, Result, RunOptions, Runtime, Split, Stats};
use rand::Rng;
use rayon::prelude::*;

use crate::text::rng_for;

/// Bytes per record.
pub const RECORD_LEN: usize = 100;
/// Bytes of the key at the start of each record.
pub const KEY_LEN: usize = 10;
/// A record's key.
pub type SortKey = [u8; KEY_LEN];
/// A record's index in the input (so at most 2^32 records, 400 GiB).
pub type RecordIndex = u32;

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortSpec {
    /// Number of records.
    pub records: u64,
    /// Random seed.
    pub seed: u64,
}

impl Default for SortSpec {
    /// The WORKLOADS.md shape: 10 million records (1 GB).
    fn default() -> Self {
        SortSpec {
            records: 10_000_000,
            seed: 7,
        }
    }
}

/// Records per independently seeded block of the generator.
const BLOCK_RECORDS: u64 = 1 << 16;

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Record `row`, with the key drawn from `r`.
fn record(row: u64, r: &mut impl Rng, out: &mut [u8]) {
    r.fill(&mut out[..KEY_LEN]);
    out[10..12].copy_from_slice(&[0x00, 0x11]);
    let id = format!("{row:032X}");
    out[12..44].copy_from_slice(id.as_bytes());
    out[44..48].copy_from_slice(&[0x88, 0x99, 0xAA, 0xBB]);
    for (j, b) in out[48..96].iter_mut().enumerate() {
        *b = HEX[((row >> (4 * (j / 4 % 16))) & 15) as usize];
    }
    out[96..100].copy_from_slice(&[0xCC, 0xDD, 0xEE, 0xFF]);
}

/// The records of block `b`.
fn block(spec: &SortSpec, b: u64) -> Vec<u8> {
    let first = b * BLOCK_RECORDS;
    let n = BLOCK_RECORDS.min(spec.records - first) as usize;
    let mut r = rng_for(spec.seed, b);
    let mut out = vec![0u8; n * RECORD_LEN];
    for (i, rec) in out.chunks_exact_mut(RECORD_LEN).enumerate() {
        record(first + i as u64, &mut r, rec);
    }
    out
}

/// Writes the records of `spec` to `out` (blocks generated in parallel),
/// calling `progress(bytes_written)` as it goes. The same spec gives the
/// same bytes.
pub fn write_records(
    spec: &SortSpec,
    out: &mut impl Write,
    mut progress: impl FnMut(u64),
) -> io::Result<()> {
    let blocks = spec.records.div_ceil(BLOCK_RECORDS);
    let batch = 16;
    let mut written = 0;
    for first in (0..blocks).step_by(batch) {
        let last = (first + batch as u64).min(blocks);
        let data: Vec<Vec<u8>> = (first..last)
            .into_par_iter()
            .map(|b| block(spec, b))
            .collect();
        for d in data {
            out.write_all(&d)?;
            written += d.len() as u64;
        }
        progress(written);
    }
    Ok(())
}

/// The records in memory (for tests and small inputs).
pub fn records(spec: &SortSpec) -> Vec<u8> {
    let mut v = Vec::with_capacity(spec.records as usize * RECORD_LEN);
    write_records(spec, &mut v, |_| {}).expect("writing to memory cannot fail");
    v
}

/// Checks that `data` is whole records, and few enough for a
/// [`RecordIndex`]; returns the record count.
pub fn check_records(data: &[u8]) -> Result<usize> {
    let n = data.len() / RECORD_LEN;
    let extra = data.len() % RECORD_LEN;
    if extra != 0 {
        return Err(Error::InvalidInput(format!(
            "{} bytes is not a whole number of {RECORD_LEN}-byte records: \
             {extra} bytes left over after record {n}",
            data.len()
        )));
    }
    if n as u64 > RecordIndex::MAX as u64 + 1 {
        return Err(Error::InvalidInput(format!(
            "{n} records; at most {} can be sorted",
            RecordIndex::MAX as u64 + 1
        )));
    }
    Ok(n)
}

/// The key of a record.
#[inline(always)]
fn key_of(record: &[u8]) -> SortKey {
    record[..KEY_LEN].try_into().expect("a record holds a key")
}

/// The map-only job: `(key, record index)` for every record.
#[derive(Debug, Clone, Copy, Default)]
pub struct SortJob;

impl MapOnlyJob for SortJob {
    type Key = SortKey;
    type Value = RecordIndex;

    fn records(&self) -> Records {
        Records::Fixed(RECORD_LEN)
    }

    fn map(&self, split: Split<'_>, out: &mut Vec<(SortKey, RecordIndex)>) {
        let first = split.offset as usize / RECORD_LEN;
        out.reserve(split.data.len() / RECORD_LEN);
        for (i, rec) in split.data.chunks_exact(RECORD_LEN).enumerate() {
            // `check_records` bounds the index.
            out.push((key_of(rec), (first + i) as RecordIndex));
        }
    }
}

/// The result of [`sort_with`].
pub struct Sorted {
    /// The sorted records.
    pub records: Vec<u8>,
    /// Stats of the map-only run (map: keys extracted; merge: the stable
    /// sort of the pairs).
    pub stats: Stats,
    /// Seconds spent gathering the records in key order.
    pub gather_secs: f64,
}

/// Sorts `data` (whole records) on `rt`.
pub fn sort_with(rt: &Runtime, data: &[u8], opts: &RunOptions) -> Result<Sorted> {
    check_records(data)?;
    let out = rt.run_map_only(&SortJob, &Input::bytes(data), opts)?;
    let start = std::time::Instant::now();
    let records = gather(data, &out.pairs, |p| p.1 as usize, rt.threads());
    Ok(Sorted {
        records,
        stats: out.stats,
        gather_secs: start.elapsed().as_secs_f64(),
    })
}

/// The records of `data` in the order `order` gives (record `index(o)` for
/// each `o`), copied by `threads` threads, each filling one contiguous
/// share of the output.
pub fn gather<T: Sync>(
    data: &[u8],
    order: &[T],
    index: impl Fn(&T) -> usize + Sync,
    threads: usize,
) -> Vec<u8> {
    let mut out = vec![0u8; order.len() * RECORD_LEN];
    let share = order.len().div_ceil(threads.max(1)).max(1);
    let copy = |dst: &mut [u8], order: &[T]| {
        for (d, o) in dst.chunks_exact_mut(RECORD_LEN).zip(order) {
            let at = index(o) * RECORD_LEN;
            d.copy_from_slice(&data[at..at + RECORD_LEN]);
        }
    };
    std::thread::scope(|s| {
        let mut shares = out.chunks_mut(share * RECORD_LEN).zip(order.chunks(share));
        let mine = shares.next();
        for (dst, ord) in shares {
            s.spawn(move || copy(dst, ord));
        }
        if let Some((dst, ord)) = mine {
            copy(dst, ord);
        }
    });
    out
}

/// The plain sequential sort, the correctness oracle and the benchmark
/// baseline: each record's key and index packed into one `u128` (key in
/// the top 80 bits, index in the low 32, so equal keys order by index),
/// an unstable sort of those, then the records gathered in order.
pub fn sequential(data: &[u8]) -> Result<Vec<u8>> {
    check_records(data)?;
    let mut keys: Vec<u128> = data
        .chunks_exact(RECORD_LEN)
        .enumerate()
        .map(|(i, rec)| {
            let mut k = [0u8; 16];
            k[..KEY_LEN].copy_from_slice(&rec[..KEY_LEN]);
            u128::from_be_bytes(k) | i as u128
        })
        .collect();
    keys.sort_unstable();
    Ok(gather(data, &keys, |k| *k as u32 as usize, 1))
}

/// A plain parallel sort of the records themselves, for comparison: the
/// records copied into a vector of `[u8; 100]` and stably sorted by key
/// with rayon's `par_sort_by`, on a pool of `threads` threads.
pub fn parallel_sort(data: &[u8], threads: usize) -> Result<Vec<u8>> {
    check_records(data)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Error::Config(format!("cannot start {threads} threads: {e}")))?;
    Ok(pool.install(|| {
        let mut recs: Vec<[u8; RECORD_LEN]> = data
            .par_chunks_exact(RECORD_LEN)
            .map(|r| r.try_into().expect("a whole record"))
            .collect();
        recs.par_sort_by(|a, b| a[..KEY_LEN].cmp(&b[..KEY_LEN]));
        recs.into_flattened()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_have_the_gensort_layout() {
        let spec = SortSpec {
            records: BLOCK_RECORDS + 3,
            seed: 1,
        };
        let data = records(&spec);
        assert_eq!(data.len(), (BLOCK_RECORDS as usize + 3) * RECORD_LEN);
        assert_eq!(data, records(&spec));
        let last = &data[data.len() - RECORD_LEN..];
        assert_eq!(&last[10..12], &[0x00, 0x11]);
        assert_eq!(&last[12..44], format!("{:032X}", BLOCK_RECORDS + 2).as_bytes());
        assert_eq!(&last[44..48], &[0x88, 0x99, 0xAA, 0xBB]);
        assert_eq!(&last[96..], &[0xCC, 0xDD, 0xEE, 0xFF]);
        assert_ne!(data, records(&SortSpec { seed: 2, ..spec }));
    }
}
