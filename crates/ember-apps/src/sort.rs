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
//! `(key, record index)` for each record of its split, sorted (see
//! [`SortJob`]); the runtime concatenates the splits' pairs in input order
//! and sorts them stably by key, which gives the permutation; the records
//! are then gathered in that order by as many threads as the runtime has.
//! An input whose length is not a multiple of 100 is
//! [`Error::InvalidInput`].

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
    check_len(data.len() as u64)?;
    Ok(data.len() / RECORD_LEN)
}

/// The map-only job: every record's [`Packed`] key and index.
#[derive(Debug, Clone, Copy, Default)]
pub struct SortJob;

impl MapOnlyJob for SortJob {
    type Key = Packed;
    type Value = ();

    fn records(&self) -> Records {
        Records::Fixed(RECORD_LEN)
    }

    /// Emits the split's records packed and sorted (the map-side sort of
    /// Hadoop): each split is one sorted run, which the runtime's merge
    /// merges rather than sorts. Packed keys are distinct (they hold the
    /// index), so any correct merge gives the one stable order.
    ///
    /// Keys are emitted as one `u128` rather than as a `[u8; 10]` key
    /// beside a `u32` index: the merge compares two words instead of
    /// calling `memcmp`.
    fn map(&self, split: Split<'_>, out: &mut Vec<(Packed, ())>) {
        let first = split.offset as usize / RECORD_LEN;
        let start = out.len();
        out.extend(
            split
                .data
                .chunks_exact(RECORD_LEN)
                .enumerate()
                .map(|(i, rec)| (pack(rec, first + i), ())),
        );
        out[start..].sort_unstable();
    }
}

/// A record's key and index as one integer whose order is (key, index):
/// the key in the top 80 bits, the index in the low 32.
pub type Packed = u128;

#[inline(always)]
fn pack(record: &[u8], index: usize) -> Packed {
    let mut k = [0u8; 16];
    k[..KEY_LEN].copy_from_slice(&record[..KEY_LEN]);
    // `check_records` bounds the index.
    u128::from_be_bytes(k) | index as RecordIndex as u128
}

/// The index of the record a packed key was made from.
#[inline(always)]
pub fn index_of(p: Packed) -> RecordIndex {
    p as RecordIndex
}

/// A sort order computed on ember: the input's records as [`Packed`] keys,
/// in key order (ties in input order).
pub struct Order {
    /// The packed keys in order.
    pub keys: Vec<Packed>,
    /// Stats of the map-only run (map: keys extracted and each split
    /// sorted; merge: the sorted runs merged).
    pub stats: Stats,
}

impl Order {
    /// The input's records in this order, gathered into `out` (which must
    /// hold them exactly) by `threads` threads.
    pub fn gather_into(&self, data: &[u8], threads: usize, out: &mut [u8]) {
        gather_into(data, &self.keys, |&p| index_of(p) as usize, threads, out);
    }

    /// The input's records in this order, written to `w` (gathered in
    /// pieces into one reused buffer by `threads` threads).
    pub fn write(&self, data: &[u8], threads: usize, w: &mut impl Write) -> io::Result<()> {
        let mut buf = Vec::new();
        for piece in self.keys.chunks(WRITE_RECORDS) {
            buf.resize(piece.len() * RECORD_LEN, 0);
            gather_into(data, piece, |&p| index_of(p) as usize, threads, &mut buf);
            w.write_all(&buf)?;
        }
        Ok(())
    }
}

/// Sorted runs (splits) per thread of [`sort_order`] by default.
pub const RUNS_PER_THREAD: usize = 2;

/// The smallest default split of [`sort_order`].
pub const MIN_SPLIT: usize = 1 << 20;

/// Records gathered per write by [`Order::write`] (16 MB).
const WRITE_RECORDS: usize = 160_000;

/// Sorts `data` (whole records) on `rt`: the order only; the records are
/// then gathered with [`Order::gather_into`] or [`Order::write`].
///
/// Unless `opts` sets a split size, the input is cut into
/// [`RUNS_PER_THREAD`] splits per thread (of at least [`MIN_SPLIT`] bytes)
/// rather than the runtime's default of at most 4 MiB: every split is one
/// sorted run, and the p-way merge's tree compares each pair once per
/// doubling of the runs (measured on 1 GB, 2 threads: 16 runs, merge
/// 0.27-0.28 s, total 0.47-0.51 s; 4 runs, merge 0.15 s, total
/// 0.41-0.44 s), while 2 splits per thread still balance the map.
pub fn sort_order(rt: &Runtime, data: &[u8], opts: &RunOptions) -> Result<Order> {
    check_records(data)?;
    sort_order_input(rt, &Input::bytes(data), opts)
}

/// [`sort_order`] over any [`Input`], in particular one streamed in ingest
/// chunks ([`ember::Ingest::Chunked`], [`Input::reader`]): the keys are
/// extracted while the input is read (record index = byte offset / 100).
/// Only the order can be streamed: gathering the records
/// ([`Order::gather_into`], [`Order::write`]) needs random access to all
/// of them, so the caller keeps or re-reads them. A single part (file) only,
/// as record indices count from the start of one file. A streamed input
/// that ends inside a record is [`Error::InvalidInput`] after the run.
pub fn sort_order_input(rt: &Runtime, input: &Input<'_>, opts: &RunOptions) -> Result<Order> {
    if input.parts() != 1 {
        return Err(Error::InvalidInput(format!(
            "sort reads one file of records, not {}",
            input.parts()
        )));
    }
    // A streamed input's length, if known, is checked up front. Every
    // split is a sorted run for the merge: few, large ones (as in
    // `sort_order`); a stream's splits cannot span chunks, so one split per
    // thread per chunk.
    let known = input.len();
    let split_size = opts.split_size.or(Some(if input.is_streamed() {
        let chunk = opts.chunk_size.unwrap_or(ember::DEFAULT_CHUNK_SIZE);
        chunk.div_ceil(rt.threads())
    } else {
        (known / (RUNS_PER_THREAD * rt.threads())).max(MIN_SPLIT)
    }));
    check_len(known as u64)?;
    let out = rt.run_map_only(
        &SortJob,
        input,
        &RunOptions {
            split_size,
            ..opts.clone()
        },
    )?;
    check_len(out.stats.input_bytes)?;
    Ok(Order {
        // Same size and alignment: collected in place.
        keys: out.pairs.into_iter().map(|(p, ())| p).collect(),
        stats: out.stats,
    })
}

/// Checks that `len` bytes are whole records, and few enough for a
/// [`RecordIndex`].
fn check_len(len: u64) -> Result<()> {
    let n = len / RECORD_LEN as u64;
    let extra = len % RECORD_LEN as u64;
    if extra != 0 {
        return Err(Error::InvalidInput(format!(
            "{len} bytes is not a whole number of {RECORD_LEN}-byte records: \
             {extra} bytes left over after record {n}"
        )));
    }
    if n > RecordIndex::MAX as u64 + 1 {
        return Err(Error::InvalidInput(format!(
            "{n} records; at most {} can be sorted",
            RecordIndex::MAX as u64 + 1
        )));
    }
    Ok(())
}

/// Copies the records of `data` into `out` in the order `order` gives
/// (record `index(o)` for each `o`), with `threads` threads each filling
/// one contiguous share of `out`.
///
/// # Panics
///
/// If `out` is not exactly `order.len()` records long.
pub fn gather_into<T: Sync>(
    data: &[u8],
    order: &[T],
    index: impl Fn(&T) -> usize + Sync,
    threads: usize,
    out: &mut [u8],
) {
    assert_eq!(out.len(), order.len() * RECORD_LEN, "output size");
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
}

/// The plain sequential sort, the correctness oracle and the benchmark
/// baseline, into `out` (exactly `data.len()` bytes): each record's key
/// and index packed into one `u128` (key in the top 80 bits, index in the
/// low 32, so equal keys order by index), an unstable sort of those, then
/// the records gathered in order.
pub fn sequential_into(data: &[u8], out: &mut [u8]) -> Result<()> {
    check_records(data)?;
    let mut keys: Vec<u128> = data
        .chunks_exact(RECORD_LEN)
        .enumerate()
        .map(|(i, rec)| pack(rec, i))
        .collect();
    keys.sort_unstable();
    gather_into(data, &keys, |&k| index_of(k) as usize, 1, out);
    Ok(())
}

/// [`sequential_into`] a new vector.
pub fn sequential(data: &[u8]) -> Result<Vec<u8>> {
    let mut out = vec![0; data.len()];
    sequential_into(data, &mut out)?;
    Ok(out)
}

/// A plain parallel sort of the records themselves, for comparison: the
/// records copied into `recs` (cleared first; its capacity is reused) and
/// stably sorted by key with rayon's `par_sort_by`, on `pool`.
pub fn parallel_sort_into(
    data: &[u8],
    pool: &rayon::ThreadPool,
    recs: &mut Vec<[u8; RECORD_LEN]>,
) -> Result<()> {
    check_records(data)?;
    recs.clear();
    pool.install(|| {
        recs.par_extend(
            data.par_chunks_exact(RECORD_LEN)
                .map(|r| <[u8; RECORD_LEN]>::try_from(r).expect("a whole record")),
        );
        recs.par_sort_by(|a, b| a[..KEY_LEN].cmp(&b[..KEY_LEN]));
    });
    Ok(())
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
        assert_eq!(
            &last[12..44],
            format!("{:032X}", BLOCK_RECORDS + 2).as_bytes()
        );
        assert_eq!(&last[44..48], &[0x88, 0x99, 0xAA, 0xBB]);
        assert_eq!(&last[96..], &[0xCC, 0xDD, 0xEE, 0xFF]);
        assert_ne!(data, records(&SortSpec { seed: 2, ..spec }));
    }
}
