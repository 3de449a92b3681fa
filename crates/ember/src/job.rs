//! What a user writes: a [`Job`] with `map`, a [`Combiner`] and `reduce`,
//! and the [`Emit`] sink `map` writes its pairs into.

use std::cmp::Ordering;

use crate::combine::Combiner;
use crate::derive::names;
use crate::key::Key;
use crate::spill::Codec;

/// Where the input may be cut into splits without cutting a record in two.
///
/// Splits are cut only at record boundaries, so `map` never sees part of a
/// record; a record never spans two input files. The same cuts are made for
/// an input in memory and a streamed one (whose chunks end at record
/// boundaries too, the incomplete last record carried into the next chunk).
#[derive(Debug, Clone, Copy)]
pub enum Records {
    /// Newline-terminated lines: a split ends just after a `\n`.
    Lines,
    /// Records are runs of bytes between separator bytes (for example words
    /// between non-letters): a split may end just before any byte for which
    /// the function returns true.
    Separator(fn(u8) -> bool),
    /// Fixed-size records of this many bytes, counted from the start of each
    /// input part; a trailing partial record is passed to `map` as it is.
    Fixed(usize),
    /// Each input part (file) is one record and one split.
    Whole,
    /// Records of the job's own format (CSV with quoted newlines,
    /// length-prefixed binary records, ...), found by `next(data, min)`.
    ///
    /// **Contract.** `data` always starts at a record boundary: the start
    /// of an input part, or a boundary `next` returned before. It ends at
    /// the end of the part, or anywhere at all for a streamed input (a
    /// chunk may end mid-record). `min` is in `1..=data.len()`. `next`
    /// returns:
    ///
    /// - `Some(b)`: `b` is the end of the record that holds byte `min - 1`,
    ///   that is the first record boundary with `min <= b <= data.len()`;
    ///   `data[..b]` is whole records. `b` must not depend on bytes after
    ///   `data`: return `Some(data.len())` only if a record certainly ends
    ///   there, whatever follows.
    /// - `None`: that record does not end within `data`.
    ///
    /// At the end of an input part, `None` makes the rest of the part, from
    /// the last boundary, one final record: `map` gets it as it is
    /// (truncated or not; the job decides what it means), as with `Fixed`.
    /// A streamed input reads on instead, so a record longer than a chunk
    /// makes its chunk grow.
    ///
    /// A boundary after the first one at or after `min` is still correct
    /// (the split is larger); one outside `min..=data.len()` breaks the
    /// contract, and the run fails with [`Error::Panicked`] in
    /// [`Phase::Split`], as it does when `next` panics.
    ///
    /// Cost: planning an input in memory calls `next` once per split, each
    /// call scanning from a boundary, so a format whose state is known only
    /// by scanning from a record start (CSV quoting) is cut in one pass. A
    /// streamed chunk is cut at its last boundary, found by calling `next`
    /// from the chunk's start in steps of at most 64 KiB, then record by
    /// record (`min == 1`) over the last step.
    ///
    /// ```
    /// use ember::Records;
    ///
    /// /// Records are a little-endian `u32` length and that many bytes.
    /// fn framed(data: &[u8], min: usize) -> Option<usize> {
    ///     let mut at = 0;
    ///     while at < min {
    ///         let len = data.get(at..at + 4)?;
    ///         at += 4 + u32::from_le_bytes(len.try_into().unwrap()) as usize;
    ///     }
    ///     (at <= data.len()).then_some(at)
    /// }
    ///
    /// let records = Records::Custom(framed);
    /// # let _ = records;
    /// assert_eq!(framed(&[1, 0, 0, 0, 7, 0, 0, 0, 0], 1), Some(5));
    /// assert_eq!(framed(&[1, 0, 0, 0, 7, 0, 0, 0, 0], 6), Some(9));
    /// assert_eq!(framed(&[1, 0, 0, 0, 7, 2, 0], 6), None);
    /// ```
    ///
    /// [`Error::Panicked`]: crate::Error::Panicked
    /// [`Phase::Split`]: crate::Phase::Split
    Custom(fn(&[u8], usize) -> Option<usize>),
}

/// Which intermediate container a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ContainerKind {
    /// Chosen by the runtime from the job's key hint and a sample of the
    /// input (the default).
    #[default]
    Auto,
    /// Open-addressing hash table per partition, combiner at insert.
    Hash,
    /// Fixed-size hash table with an ordered tree in each bucket (Metis).
    HashTree,
    /// A plain array indexed by key: integer keys in `0..n` (the job's
    /// [`KeyHint::Dense`]).
    Array,
    /// Append-only pair buffers, grouped by sorting at reduce time.
    Append,
    /// Append-only values beside per-worker key numbers (each key stored
    /// once per worker), grouped by number at reduce time: the append
    /// container's pairs in a fraction of its memory where keys are long
    /// against values.
    Intern,
    /// Append-only, never grouped: for keys each emitted once
    /// ([`KeyHint::Unique`]).
    Unique,
}

names!(ContainerKind, "container" {
    Auto => "auto",
    Hash => "hash",
    HashTree => "hash_tree",
    Array => "array",
    Append => "append",
    Intern => "intern",
    Unique => "unique",
});

/// What a job knows about its keys: guides `Auto` and enables the array and
/// unique containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyHint {
    /// Nothing known: the runtime samples.
    #[default]
    Unknown,
    /// Integer keys in `0..n` (histogram's 768, k-means' clusters): the
    /// array container can hold them.
    Dense(usize),
    /// Every key is emitted once over the whole input (sort): nothing to
    /// group.
    Unique,
}

/// A piece of the input handed to one `map` call.
#[derive(Debug, Clone, Copy)]
pub struct Split<'a> {
    /// The bytes of the split: whole records only.
    pub data: &'a [u8],
    /// Which input part (file) the split comes from, in input order.
    pub part: usize,
    /// Byte offset of `data` within that part.
    pub offset: u64,
}

impl Split<'_> {
    /// The error for a malformed record that starts at `record`, a slice
    /// of this split's data (a line, a field); for a slice from elsewhere,
    /// the split's start.
    ///
    /// ```
    /// use ember::{Malformed, Split};
    ///
    /// let split = Split { data: b"1\n2\nx\n", part: 0, offset: 100 };
    /// let line = split.data.split(|&b| b == b'\n').nth(2).unwrap();
    /// assert_eq!(split.malformed(line, "not a number").at(), 4);
    /// ```
    pub fn malformed(&self, record: &[u8], message: impl Into<String>) -> Malformed {
        let start = self.data.as_ptr() as usize;
        let at = (record.as_ptr() as usize)
            .checked_sub(start)
            .filter(|&at| at <= self.data.len())
            .unwrap_or(0);
        Malformed::new(at, message)
    }
}

/// A record `map` cannot interpret: where it starts within the split and
/// what is wrong. The run fails with
/// [`Error::Malformed`](crate::Error::Malformed), which names the input
/// file and the record's byte offset in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    at: usize,
    message: String,
}

impl Malformed {
    /// A malformed record at byte `at` of the split's data.
    pub fn new(at: usize, message: impl Into<String>) -> Self {
        Malformed {
            at,
            message: message.into(),
        }
    }

    /// The record's byte offset within the split's data.
    pub fn at(&self) -> usize {
        self.at
    }

    /// What is wrong with it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// What `map` returns: `Err` stops the run with the record's place.
pub type MapResult = std::result::Result<(), Malformed>;

/// The sink `map` emits key/value pairs into.
///
/// Containers and pipelines implement it; a job's `map` is generic over it,
/// so emitting is a static call into the worker's own container, with no
/// lock and no allocation unless the key is new to this worker.
pub trait Emit<K: Key, V> {
    /// Emits one pair. The key may borrow from anything: it is copied only
    /// the first time this worker sees it.
    fn emit(&mut self, key: K::Ref<'_>, value: V);

    /// A hint that `key` will be emitted soon: a container may start
    /// loading the memory it will need, so that the cache misses of several
    /// keys overlap. Calling it a few keys ahead pays off when the container
    /// outgrows the caches (word count on a large vocabulary); it never
    /// changes results. Does nothing by default.
    #[inline(always)]
    fn prefetch(&mut self, key: K::Ref<'_>) {
        let _ = key;
    }

    /// Emits `(key, value.clone())` for every key of `keys`, in order: the
    /// same pairs as calling [`Emit::emit`] for each. The hash container
    /// hashes the whole batch first and starts loading every key's slot
    /// before it inserts any, so that the cache misses of a large table
    /// overlap and each key is hashed once; a map function that emits many
    /// keys with one value (word count) should prefer it. Batches of a few
    /// dozen keys suit it.
    #[inline(always)]
    fn emit_batch(&mut self, keys: &[K::Ref<'_>], value: V)
    where
        V: Clone,
    {
        for &k in keys {
            self.emit(k, value.clone());
        }
    }

    /// Emits `(key, value.clone())` for the key of every probe, in order:
    /// [`Emit::emit_batch`] for keys whose probes `map` prepared itself.
    /// Word count prepares its words' probes from the text around them
    /// ([`BytesProbe::within`](crate::plumbing::BytesProbe::within)), which
    /// is faster than from each word's slice alone.
    #[inline(always)]
    fn emit_probes(&mut self, probes: &[K::Probe<'_>], value: V)
    where
        V: Clone,
    {
        for p in probes {
            self.emit(K::probe_ref(p), value.clone());
        }
    }
}

/// The per-key state a job's combiner keeps.
pub type StateOf<J> = <<J as Job>::Combiner as Combiner<<J as Job>::Value>>::State;

/// What a job's `reduce` receives for a key (its combiner's
/// [`Reduced`](Combiner::Reduced)): the total for [`Sum`](crate::Sum), a
/// slice of values for [`KeepAll`](crate::KeepAll).
pub type ReducedOf<'a, J> = <<J as Job>::Combiner as Combiner<<J as Job>::Value>>::Reduced<'a>;

/// A MapReduce job.
///
/// ```
/// use ember::{Bytes, Emit, Input, Job, MapResult, Records, Runtime, Split, Sum};
///
/// /// Counts whitespace-separated words.
/// struct Words;
///
/// impl Job for Words {
///     type Key = Bytes;
///     type Value = u64;
///     type Combiner = Sum;
///     type Out = u64;
///
///     fn records(&self) -> Records {
///         Records::Separator(|b| b.is_ascii_whitespace())
///     }
///     fn map<E: Emit<Bytes, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
///         for w in split.data.split(|b| b.is_ascii_whitespace()).filter(|w| !w.is_empty()) {
///             emit.emit(w, 1);
///         }
///         Ok(())
///     }
///     fn reduce(&self, _key: &Bytes, total: u64) -> u64 {
///         total
///     }
/// }
///
/// let rt = Runtime::builder().threads(2).build().unwrap();
/// let out = rt.run(&Words, &Input::bytes(b"b a b")).unwrap();
/// let pairs: Vec<(&[u8], u64)> = out.pairs.iter().map(|(k, v)| (k.as_bytes(), *v)).collect();
/// assert_eq!(pairs, vec![(&b"a"[..], 1), (&b"b"[..], 2)]);
/// ```
pub trait Job: Sync {
    /// The key type.
    type Key: Key;
    /// The value type `map` emits.
    type Value: Send;
    /// How values of one key fold together (applied at insert), and what
    /// `reduce` receives.
    type Combiner: Combiner<Self::Value> + Default;
    /// What `reduce` produces for a key.
    type Out: Send;

    /// Where the input may be cut. Lines by default.
    fn records(&self) -> Records {
        Records::Lines
    }

    /// What the job knows about its keys (dense integers, unique, or
    /// nothing): lets the runtime use the array or unique container.
    fn keys(&self) -> KeyHint {
        KeyHint::Unknown
    }

    /// The intermediate container; `Auto` (the default) lets the runtime
    /// choose by the key hint and a sample of the input.
    fn container(&self) -> ContainerKind {
        ContainerKind::Auto
    }

    /// The combiner a run uses (each worker gets a clone; a run may call
    /// this more than once). By default the combiner's `Default` value; a
    /// job whose combiner has parameters (a top-k's `k`) returns the one it
    /// wants here, and the combiner's `Default` is only its neutral
    /// setting.
    fn combiner(&self) -> Self::Combiner {
        Self::Combiner::default()
    }

    /// Maps one split, emitting pairs. A record it cannot interpret is an
    /// `Err` ([`Split::malformed`] makes one): the run stops and returns
    /// [`Error::Malformed`](crate::Error::Malformed) with its place.
    fn map<E: Emit<Self::Key, Self::Value>>(&self, split: Split<'_>, emit: &mut E) -> MapResult;

    /// Reduces one key's values, as its combiner hands them over
    /// ([`ReducedOf`]: the total for [`Sum`](crate::Sum), a slice for
    /// [`KeepAll`](crate::KeepAll)), to its output value.
    fn reduce(&self, key: &Self::Key, values: ReducedOf<'_, Self>) -> Self::Out;

    /// How the job's keys and combiner states are written to disk, for a
    /// run whose intermediate data passes its memory budget
    /// ([`RunOptions::memory_limit`](crate::RunOptions::memory_limit)):
    /// `Some(Codec::new())` where both implement
    /// [`Encode`](crate::spill::Encode). `None` (the default): the job
    /// does not spill, and a run that passes a limit the caller set fails
    /// with [`Error::MemoryLimit`](crate::Error::MemoryLimit).
    fn codec(&self) -> Option<Codec<Self::Key, StateOf<Self>>> {
        None
    }

    /// True when the job's map and reduce may be pipelined
    /// ([`Mode::Pipelined`](crate::Mode)): its `reduce` input is the state of
    /// an associative and commutative combiner, so partial states may be
    /// folded in any order and at any time, as map output arrives, with the
    /// same result. False by default (such jobs run with the barrier).
    fn pipelinable(&self) -> bool {
        false
    }

    /// The output order. By key by default; ties a comparator leaves are
    /// always broken by key, so the output is deterministic.
    fn order(&self, a: &(Self::Key, Self::Out), b: &(Self::Key, Self::Out)) -> Ordering {
        a.0.cmp(&b.0)
    }

    /// Declares how [`Job::order`] orders the output. A job that keeps the
    /// default `order`, or orders by key in its own, may return
    /// [`OutputOrder::Key`]: its output is then sorted by comparing keys
    /// directly, without a call of `order` per comparison (word count's
    /// merge phase over a million distinct words took a fifth less time).
    /// The default, [`OutputOrder::Comparator`], is right for every job.
    fn output_order(&self) -> OutputOrder {
        OutputOrder::Comparator
    }
}

/// How a job's output is ordered ([`Job::output_order`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OutputOrder {
    /// By [`Job::order`], ties broken by key.
    #[default]
    Comparator,
    /// By key: declares that [`Job::order`] orders pairs as their keys'
    /// `Ord` does, so the runtime compares keys instead of calling it.
    Key,
}

/// A map-only job: no grouping and no reduce (SMR section 5.1; Phoenix's
/// string match and matrix multiply). Each `map` call appends its pairs to a
/// plain vector (SMR's array buffer); the output is every pair, in input
/// order, then stably sorted by key unless [`MapOnlyJob::sort_output`] says
/// not to. Either way it does not depend on the thread count or split size.
pub trait MapOnlyJob: Sync {
    /// The key type.
    type Key: Ord + Send;
    /// The value type.
    type Value: Send;

    /// Where the input may be cut. Lines by default.
    fn records(&self) -> Records {
        Records::Lines
    }

    /// Maps one split, appending pairs to `out`; a record it cannot
    /// interpret is an `Err`, as for [`Job::map`].
    fn map(&self, split: Split<'_>, out: &mut Vec<(Self::Key, Self::Value)>) -> MapResult;

    /// Sort the output by key (stably)? Yes by default; no leaves it in
    /// input order.
    fn sort_output(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::ContainerKind;

    #[test]
    fn container_kinds_parse_by_name() {
        for k in ContainerKind::ALL {
            assert_eq!(k.name().parse::<ContainerKind>().unwrap(), *k);
        }
        assert_eq!(
            "hash-tree".parse::<ContainerKind>().unwrap(),
            ContainerKind::HashTree
        );
        let e = "heap".parse::<ContainerKind>().unwrap_err().to_string();
        assert!(e.contains("unknown container 'heap'"), "{e}");
    }
}
