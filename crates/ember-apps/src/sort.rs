//! Sort: 100-byte records with 10-byte keys (the TeraSort / gensort
//! layout), ordered by key; records with equal keys keep their input order.
//!
//! **Record layout** (gensort's binary records): bytes 0..10 the key
//! (random), 10..12 `00 11`, 12..44 the row number as 32 upper-case hex
//! digits, 44..48 `88 99 AA BB`, 48..96 filler (hex digits of the row
//! number, four of each), 96..100 `CC DD EE FF`. Only the key matters to
//! the sort; the row number lets a reader check the order of ties.
//!
//! **On ember**, two plans, both through the public API:
//!
//! - [`sort_order`] (a whole input in memory) is the TeraSort plan: a
//!   sample of the keys gives splitters that cut the key space into
//!   ranges of about equal size; map routes each record's packed key
//!   (key and record index, [`Packed`]) to its range (the job's key is the
//!   range number, so the array container holds it); reduce sorts each
//!   range on its own. The ranges are in key order, so their outputs, in
//!   range order, are the whole order: nothing is left to merge.
//! - [`sort_order_input`] (any input, also one streamed in chunks, which
//!   cannot be sampled before it is read) is a map-only job whose map sorts
//!   each split into one run and whose merge is the runtime's one-pass
//!   p-way merge (SupMR section IV).
//!
//! Either way the records are then gathered in that order on the
//! runtime's workers, which needs them all at hand (mapped). Records
//! larger than the memory budget are sorted by [`external_sort`] instead
//! ([`SortPlan`] decides): map keeps whole records, and a worker past its
//! share of the budget writes them to disk as sorted runs; the runs are
//! then merged in key ranges on the workers, and the records stream, in
//! order, to the output. An input
//! whose length is not a multiple of 100 is [`Error::InvalidInput`].

use std::io::{self, Write};

use ember::spill::{Codec, Compression};
use ember::{
    Combiner, Emit, Error, Input, Job, KeepAll, KeyHint, MapOnlyJob, MapResult, RecordShape,
    Records, Result, RunOptions, Runtime, Split, Stats,
};
use rand::Rng;
use rayon::prelude::*;

use crate::blocks;
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

/// The records of block `b`, `len` bytes of them.
fn block(spec: &SortSpec, b: u64, len: usize) -> Vec<u8> {
    let first = b * BLOCK_RECORDS;
    let mut r = rng_for(spec.seed, b);
    let mut out = vec![0u8; len];
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
    progress: impl FnMut(u64),
) -> io::Result<()> {
    let rec = RECORD_LEN as u64;
    blocks::write_blocks(
        spec.records * rec,
        BLOCK_RECORDS * rec,
        out,
        progress,
        |b, len| block(spec, b, len),
    )
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
    fn map(&self, split: Split<'_>, out: &mut Vec<(Packed, ())>) -> MapResult {
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
        Ok(())
    }
}

/// A record's key and index as one integer whose order is (key, index):
/// the key in the top 80 bits, the index in the low 32.
pub type Packed = u128;

/// Packs record `index`'s key (its first [`KEY_LEN`] bytes) and its
/// index into one [`Packed`].
#[inline(always)]
pub fn pack(record: &[u8], index: usize) -> Packed {
    let mut k = [0u8; 16];
    k[..KEY_LEN].copy_from_slice(&record[..KEY_LEN]);
    // `check_records` bounds the index.
    u128::from_be_bytes(k) | index as RecordIndex as u128
}

/// The index of the record a packed key was made from.
#[inline(always)]
fn index_of(p: Packed) -> RecordIndex {
    p as RecordIndex
}

/// A sort order computed on ember: the input's records as [`Packed`] keys,
/// in key order (ties in input order), held in consecutive runs (the key
/// ranges of [`sort_order`], or the one merged run of
/// [`sort_order_input`]).
pub struct Order {
    /// Consecutive pieces of the order.
    runs: Vec<Vec<Packed>>,
    /// Stats of the run.
    pub stats: Stats,
}

impl Order {
    /// Number of records ordered.
    pub fn len(&self) -> usize {
        self.runs.iter().map(Vec::len).sum()
    }

    /// True if there are no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The packed keys in order.
    pub fn keys(&self) -> impl Iterator<Item = Packed> + '_ {
        self.runs.iter().flatten().copied()
    }

    /// The records of `data` (the input the order was computed from) in
    /// this order, one at a time on the calling thread.
    pub fn records<'a>(&'a self, data: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.keys().map(move |p| {
            let at = index_of(p) as usize * RECORD_LEN;
            &data[at..at + RECORD_LEN]
        })
    }

    /// The input's records in this order, gathered into `out` (which must
    /// hold them exactly) by `rt`'s workers.
    pub fn gather_into(&self, rt: &Runtime, data: &[u8], out: &mut [u8]) {
        let runs: Vec<&[Packed]> = self.runs.iter().map(Vec::as_slice).collect();
        gather_into(data, &runs, Some(rt), out);
    }

    /// The input's records in this order, written to `w` (gathered in
    /// pieces into one reused buffer by `rt`'s workers).
    pub fn write(&self, rt: &Runtime, data: &[u8], w: &mut impl Write) -> io::Result<()> {
        let mut buf = Vec::new();
        for piece in self.runs.iter().flat_map(|r| r.chunks(WRITE_RECORDS)) {
            buf.resize(piece.len() * RECORD_LEN, 0);
            gather_into(data, &[piece], Some(rt), &mut buf);
            w.write_all(&buf)?;
        }
        Ok(())
    }
}

/// Sorted runs (splits) per thread of [`sort_order_input`] by default.
pub const RUNS_PER_THREAD: usize = 2;

/// The smallest default split of [`sort_order`] and [`sort_order_input`].
pub const MIN_SPLIT: usize = 1 << 20;

/// Records gathered per write by [`Order::write`] (16 MB).
const WRITE_RECORDS: usize = 160_000;

/// Keys per range of [`sort_order`], on average: a range's keys (1 MiB)
/// sort inside the L2 cache.
const RANGE_KEYS: usize = 1 << 16;

/// Sampled keys per range: the splitters are every `OVERSAMPLE`-th sampled
/// key, so a range's size varies by about `1 / sqrt(OVERSAMPLE)`.
const OVERSAMPLE: usize = 64;

/// Bits of a key's prefix that index [`Ranges`]' table.
const PREFIX_BITS: u32 = 12;

/// Key ranges: splitters cutting the [`Packed`] key space into ranges of
/// about equal size over the input they were sampled from. Range `r` holds
/// the keys `k` with `splitters[r - 1] < k <= splitters[r]`.
#[derive(Debug, Clone)]
struct Ranges {
    splitters: Vec<Packed>,
    /// `first[p]`: the number of splitters whose prefix is below `p`, that
    /// is the first range a key with prefix `p` can be in (a table lookup
    /// replaces most of the binary search).
    first: Vec<u32>,
}

impl Ranges {
    /// Ranges for the records of `data` (whole records): about one per
    /// [`RANGE_KEYS`] records, at least `min` (so that the reduce tasks
    /// balance), from [`OVERSAMPLE`] evenly spaced records per range. The
    /// splitters are packed keys, which are distinct (they hold the record
    /// index), so even equal keys spread over ranges.
    fn sample(data: &[u8], min: usize) -> Ranges {
        let n = data.len() / RECORD_LEN;
        let ranges = n.div_ceil(RANGE_KEYS).max(min).clamp(1, n.max(1));
        let samples = (ranges * OVERSAMPLE).min(n);
        let mut sample: Vec<Packed> = (0..samples)
            .map(|j| {
                let i = j * n / samples;
                pack(&data[i * RECORD_LEN..], i)
            })
            .collect();
        sample.sort_unstable();
        let splitters: Vec<Packed> = (1..ranges)
            .map(|r| sample[r * samples / ranges - 1])
            .collect();
        Ranges::new(splitters)
    }

    /// Ranges cut by `splitters` (ascending).
    fn new(splitters: Vec<Packed>) -> Ranges {
        debug_assert!(splitters.is_sorted());
        let mut first = Vec::with_capacity((1 << PREFIX_BITS) + 1);
        let mut s = 0;
        for p in 0..=1usize << PREFIX_BITS {
            while s < splitters.len() && Self::prefix(splitters[s]) < p {
                s += 1;
            }
            first.push(s as u32);
        }
        Ranges { splitters, first }
    }

    #[inline(always)]
    fn prefix(k: Packed) -> usize {
        (k >> (128 - PREFIX_BITS)) as usize
    }

    /// Number of ranges (always at least one).
    fn len(&self) -> usize {
        self.splitters.len() + 1
    }

    /// The range of key `k`: the number of splitters below it.
    #[inline(always)]
    fn of(&self, k: Packed) -> usize {
        let p = Self::prefix(k);
        let (lo, hi) = (self.first[p] as usize, self.first[p + 1] as usize);
        // Splitters with a smaller prefix are below `k`, those with a larger
        // one above it; only those sharing its prefix are compared.
        lo + self.splitters[lo..hi].partition_point(|&s| s < k)
    }
}

/// The range-partitioned sort job of [`sort_order`]: map routes each
/// record's packed key to its key range (one value per range per split);
/// reduce sorts a range.
struct RangeJob<'a> {
    ranges: &'a Ranges,
}

impl Job for RangeJob<'_> {
    type Key = u32;
    type Value = Vec<Packed>;
    type Combiner = KeepAll;
    type Out = Vec<Packed>;

    fn records(&self) -> Records {
        Records::Fixed(RECORD_LEN)
    }

    fn keys(&self) -> KeyHint {
        KeyHint::Dense(self.ranges.len())
    }

    fn map<E: Emit<u32, Vec<Packed>>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        let first = split.offset as usize / RECORD_LEN;
        let n = split.data.len() / RECORD_LEN;
        let ranges = self.ranges.len();
        // Room for a range's expected share and some, when there is one to
        // speak of (a tiny split allocates as it goes).
        let each = n / ranges;
        let room = if each >= 16 { each + each / 4 + 16 } else { 0 };
        let mut out: Vec<Vec<Packed>> = (0..ranges).map(|_| Vec::with_capacity(room)).collect();
        for (i, rec) in split.data.chunks_exact(RECORD_LEN).enumerate() {
            let k = pack(rec, first + i);
            out[self.ranges.of(k)].push(k);
        }
        for (r, keys) in out.into_iter().enumerate() {
            if !keys.is_empty() {
                emit.emit(r as u32, keys);
            }
        }
        Ok(())
    }

    /// The range's pieces (one per split that had keys in it), joined and
    /// sorted. Packed keys are distinct, so the order of the pieces (which
    /// depends on the schedule) does not matter.
    fn reduce(&self, _range: &u32, pieces: &mut [Vec<Packed>]) -> Vec<Packed> {
        let mut keys = match pieces {
            [one] => std::mem::take(one),
            _ => pieces.concat(),
        };
        keys.sort_unstable();
        keys
    }
}

/// Sorts `data` (whole records) on `rt`: the order only; the records are
/// then gathered with [`Order::gather_into`] or [`Order::write`].
///
/// The TeraSort plan (see the module docs): key ranges sampled from `data`,
/// at least 8 per thread, then one MapReduce job whose map routes keys to
/// ranges and whose reduce sorts each range. Unless `opts` sets a split
/// size, the input is cut into 4 splits per thread (of at least
/// [`MIN_SPLIT`] bytes), so that few, large pieces reach each range.
///
/// `ember-bench sort` and `ember-bench merge` measure it against the
/// map-side sort and p-way merge of [`sort_order_input`]
/// (docs/measurements.md).
pub fn sort_order(rt: &Runtime, data: &[u8], opts: &RunOptions) -> Result<Order> {
    check_records(data)?;
    let ranges = Ranges::sample(data, 8 * rt.threads());
    let opts = opts.clone().split_size(
        opts.split_size
            .or(Some((data.len() / (4 * rt.threads())).max(MIN_SPLIT))),
    );
    let out = rt.run_with(&RangeJob { ranges: &ranges }, &Input::bytes(data), &opts)?;
    Ok(Order {
        // In range order, that is key order.
        runs: out.pairs.into_iter().map(|(_, keys)| keys).collect(),
        stats: out.stats,
    })
}

/// The order of any [`Input`], in particular one streamed in ingest
/// chunks ([`ember::Ingest::Chunked`], [`Input::reader`]), which cannot be
/// sampled before it is read: a map-only job whose map extracts and sorts
/// each split's keys while the input is read (record index = byte offset /
/// 100), then the runtime's one-pass p-way merge of the sorted runs.
///
/// Only the order can be streamed: gathering the records
/// ([`Order::gather_into`], [`Order::write`]) needs random access to all
/// of them, so the caller keeps or re-reads them. A single part (file) only,
/// as record indices count from the start of one file. A streamed input
/// that ends inside a record is [`Error::InvalidInput`] after the run.
///
/// Unless `opts` sets a split size, the input is cut into
/// [`RUNS_PER_THREAD`] splits per thread (of at least [`MIN_SPLIT`] bytes)
/// rather than the runtime's default of at most 4 MiB: every split is one
/// sorted run, and the p-way merge's tree compares each pair once per
/// doubling of the runs, so fewer runs merge faster, while 2 splits per
/// thread still balance the map (docs/measurements.md, "Sort").
pub fn sort_order_input(rt: &Runtime, input: &Input<'_>, opts: &RunOptions) -> Result<Order> {
    if input.parts() != 1 {
        return Err(Error::InvalidInput(format!(
            "sort reads one file of records, not {}",
            input.parts()
        )));
    }
    // A streamed input's length, if known, is checked up front. A stream's
    // splits cannot span chunks, so one split per thread per chunk.
    let known = input.len();
    let split_size = opts.split_size.or(Some(if input.is_streamed() {
        let chunk = opts.chunk_size.unwrap_or(ember::tune::DEFAULT_CHUNK_SIZE);
        chunk.div_ceil(rt.threads())
    } else {
        (known / (RUNS_PER_THREAD * rt.threads())).max(MIN_SPLIT)
    }));
    check_len(known as u64)?;
    let out = rt.run_map_only(&SortJob, input, &opts.clone().split_size(split_size))?;
    check_len(out.stats.input_bytes)?;
    Ok(Order {
        // Same size and alignment: collected in place.
        runs: vec![out.pairs.into_iter().map(|(p, ())| p).collect()],
        stats: out.stats,
    })
}

/// How a sort runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortPlan {
    /// The records fit in the memory budget: their order is computed in
    /// memory ([`sort_order`]) and they are gathered from the mapped input.
    InMemory,
    /// They do not: [`external_sort`], through sorted runs on disk.
    External,
}

impl SortPlan {
    /// The plan for `bytes` of records under a memory budget of `limit`
    /// bytes (`None`: the machine's default,
    /// [`default_memory_limit`](ember::tune::default_memory_limit)):
    /// external when the records are larger than the budget. The in-memory
    /// plan reads the records in random order to gather them, which is
    /// fast only while they all stay in memory.
    pub fn for_input(bytes: u64, limit: Option<u64>) -> SortPlan {
        match bytes > limit.unwrap_or_else(ember::tune::default_memory_limit) {
            true => SortPlan::External,
            false => SortPlan::InMemory,
        }
    }
}

impl std::fmt::Display for SortPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SortPlan::InMemory => "in memory",
            SortPlan::External => "external",
        })
    }
}

/// Bytes of a record after its key.
const REST_LEN: usize = RECORD_LEN - KEY_LEN;

/// A record after its key.
type Rest = [u8; REST_LEN];

/// The combiner of keys that are emitted once (the external sort's packed
/// keys, which hold the record index): the state is the value itself.
/// Were a key emitted twice, the first value would be kept.
#[derive(Debug, Clone, Copy, Default)]
pub struct Once;

impl<V: Send> Combiner<V> for Once {
    type State = V;
    type Reduced<'a>
        = V
    where
        V: 'a;

    fn init(&self, v: V) -> V {
        v
    }

    fn add(&self, _state: &mut V, _v: V) {}

    fn merge(&self, _state: &mut V, _other: V) {}

    fn finish<O>(&self, state: V, reduce: impl FnOnce(V) -> O) -> O {
        reduce(state)
    }
}

/// The external sort's job: map emits every record as its packed key
/// (key and index, [`Packed`]) and the rest of the record. The keys are
/// unique, so the runtime's unique container keeps them as they come; a
/// worker past its share of the memory budget sorts them and writes them
/// to disk as runs (the job's [`Codec`]). Reduce hands each record's rest
/// back as it is.
#[derive(Debug, Clone, Copy, Default)]
struct ExternalJob;

impl Job for ExternalJob {
    type Key = Packed;
    type Value = Rest;
    type Combiner = Once;
    type Out = Rest;

    fn records(&self) -> Records {
        Records::Fixed(RECORD_LEN)
    }

    fn keys(&self) -> KeyHint {
        KeyHint::Unique
    }

    fn map<E: Emit<Packed, Rest>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        let first = split.offset as usize / RECORD_LEN;
        for (i, rec) in split.data.chunks_exact(RECORD_LEN).enumerate() {
            let rest: Rest = rec[KEY_LEN..].try_into().expect("a whole record");
            emit.emit(pack(rec, first + i), rest);
        }
        Ok(())
    }

    fn reduce(&self, _key: &Packed, rest: Rest) -> Rest {
        rest
    }

    /// Spills sort by the key's first eight bytes, so that the sort moves
    /// 16-byte (prefix, index) pairs, not 112-byte entries; runs are
    /// LZ4-compressed: the gensort layout repeats most of a record's bytes
    /// (about a third of the bytes remain), and every spilled byte is
    /// written once and read back once.
    fn codec(&self) -> Option<Codec<Packed, Rest>> {
        let codec = Codec::new().prefix(|k| (k >> 64) as u64);
        Some(codec.compression(Compression::Lz4))
    }
}

/// The records' shape for [`Runtime::sort_records`].
const SHAPE: RecordShape = RecordShape {
    len: RECORD_LEN,
    key: KEY_LEN,
};

/// Sorts the records of `input` (one file, mapped or streamed) and writes
/// them to `out` in order, within the memory budget of `opts` (else the
/// machine's default): an external sort. An input held in memory or mapped
/// is sorted by the runtime's record sort ([`Runtime::sort_records`]:
/// runs of raw records sorted on packed keys, merged in key ranges; the
/// split size is not used). A streamed input goes through a generic
/// MapReduce job instead: map keeps whole records; a worker
/// whose records pass its share of the budget sorts them and writes them
/// to disk as runs; reduce merges every run (what the workers still hold
/// is spilled too) in key ranges on the workers, and the records stream
/// to `out` in order, so the sorted records are never all in memory. Records that fit in the
/// budget are not spilled, and are sorted in memory and written the same
/// way. The output is the bytes [`sequential`] gives; returns the run's
/// stats. A write that fails is [`Error::Output`]; a streamed input that
/// ends inside a record is [`Error::InvalidInput`], after its records
/// were written (so write to a file that is kept only on success).
pub fn external_sort(
    rt: &Runtime,
    input: &Input<'_>,
    opts: &RunOptions,
    out: &mut impl Write,
) -> Result<Stats> {
    if input.parts() != 1 {
        return Err(Error::InvalidInput(format!(
            "sort reads one file of records, not {}",
            input.parts()
        )));
    }
    check_len(input.len() as u64)?;
    if !input.is_streamed() {
        return rt.sort_records(input, SHAPE, opts, out);
    }
    let mut record = [0u8; RECORD_LEN];
    let stats = rt.run_each(&ExternalJob, input, opts, |key, rest| {
        record[..KEY_LEN].copy_from_slice(&key.to_be_bytes()[..KEY_LEN]);
        record[KEY_LEN..].copy_from_slice(&rest);
        out.write_all(&record).map_err(Error::Output)
    })?;
    check_len(stats.input_bytes)?;
    Ok(stats)
}

/// [`external_sort`] into a regular file, from its current position on
/// (not opened for appending): a mapped input's key ranges are written at
/// their offsets by the workers that merge them
/// ([`Runtime::sort_records_to_file`]), a streamed input's in order.
pub fn external_sort_to_file(
    rt: &Runtime,
    input: &Input<'_>,
    opts: &RunOptions,
    out: &std::fs::File,
) -> Result<Stats> {
    if input.parts() == 1 && !input.is_streamed() {
        check_len(input.len() as u64)?;
        return rt.sort_records_to_file(input, SHAPE, opts, out);
    }
    let mut w = std::io::BufWriter::with_capacity(1 << 20, out);
    let stats = external_sort(rt, input, opts, &mut w)?;
    w.flush().map_err(Error::Output)?;
    Ok(stats)
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

/// Records ahead of the one being copied whose lines [`gather_into`]
/// prefetches: the reads are random, so without this each waits for
/// memory in turn.
const GATHER_AHEAD: usize = 16;

/// Copies the records of `data` into `out` in the order that the
/// consecutive pieces of `order` give: on `rt`'s workers, each filling one
/// contiguous share of `out` (one share per worker), or on the calling
/// thread if `rt` is `None` (the sequential baseline). No thread is
/// started: a gather after every run must not pay for creating threads,
/// nor compete with the pool for the CPUs.
///
/// # Panics
///
/// If `out` is not exactly as many records long as `order` holds.
fn gather_into(data: &[u8], order: &[&[Packed]], rt: Option<&Runtime>, out: &mut [u8]) {
    let total: usize = order.iter().map(|p| p.len()).sum();
    assert_eq!(out.len(), total * RECORD_LEN, "output size");
    let threads = rt.map_or(1, Runtime::threads);
    let share = total.div_ceil(threads).max(1);
    let copy = |(dst, order): (&mut [u8], Vec<&[Packed]>)| {
        let mut dst = dst.chunks_exact_mut(RECORD_LEN);
        let mut ahead = order.iter().copied().flatten().skip(GATHER_AHEAD);
        for o in order.iter().copied().flatten() {
            if let Some(next) = ahead.next() {
                let at = index_of(*next) as usize * RECORD_LEN;
                ember::plumbing::prefetch(data[at..].as_ptr());
                ember::plumbing::prefetch(data[at + RECORD_LEN - 1..].as_ptr());
            }
            let at = index_of(*o) as usize * RECORD_LEN;
            dst.next()
                .expect("a share's pieces fill it")
                .copy_from_slice(&data[at..at + RECORD_LEN]);
        }
    };
    let shares = shares(order, out, share);
    match rt {
        Some(rt) => rt.install(|| shares.into_par_iter().for_each(copy)),
        None => shares.into_iter().for_each(copy),
    }
}

/// Cuts `out` into shares of `share` records (the last may be shorter),
/// each with its part of the pieces of `order`: whole pieces, and the parts
/// of the pieces a share boundary cuts.
fn shares<'a, 'o>(
    order: &[&'a [Packed]],
    out: &'o mut [u8],
    share: usize,
) -> Vec<(&'o mut [u8], Vec<&'a [Packed]>)> {
    let mut pieces = order.iter().copied().filter(|p| !p.is_empty());
    let mut rest: &[Packed] = &[];
    let mut shares = Vec::new();
    for dst in out.chunks_mut(share * RECORD_LEN) {
        let mut want = dst.len() / RECORD_LEN;
        let mut mine = Vec::new();
        while want > 0 {
            if rest.is_empty() {
                rest = pieces.next().expect("the pieces fill the output");
            }
            let (take, left) = rest.split_at(want.min(rest.len()));
            want -= take.len();
            mine.push(take);
            rest = left;
        }
        shares.push((dst, mine));
    }
    shares
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
    gather_into(data, &[&keys], None, out);
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
    use proptest::prelude::*;

    proptest! {
        /// The table lookup finds the same range as a binary search over
        /// all splitters, also when many splitters share a prefix.
        #[test]
        fn a_key_is_in_the_range_its_splitters_say(
            mut splitters in prop::collection::vec(any::<u128>(), 0..40),
            shared in any::<bool>(),
            keys in prop::collection::vec(any::<u128>(), 1..200),
        ) {
            let squash = |k: u128| if shared { k >> 20 | 0xABC << 116 } else { k };
            let mut splitters: Vec<u128> = splitters.drain(..).map(squash).collect();
            splitters.sort_unstable();
            let ranges = Ranges::new(splitters.clone());
            prop_assert_eq!(ranges.len(), splitters.len() + 1);
            for k in keys.into_iter().map(squash).chain(splitters.iter().copied()) {
                prop_assert_eq!(ranges.of(k), splitters.partition_point(|&s| s < k));
            }
        }
    }

    #[test]
    fn sampled_ranges_are_about_equal() {
        let data = records(&SortSpec {
            records: 200_000,
            seed: 3,
        });
        let ranges = Ranges::sample(&data, 8);
        assert_eq!(ranges.len(), 8);
        let mut counts = vec![0usize; ranges.len()];
        for (i, rec) in data.chunks_exact(RECORD_LEN).enumerate() {
            counts[ranges.of(pack(rec, i))] += 1;
        }
        let even = 200_000 / 8;
        for c in counts {
            assert!(
                c > even / 2 && c < even * 2,
                "a range of {c} keys, {even} expected"
            );
        }
    }

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
