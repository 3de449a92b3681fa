//! Keys of plain types, with no hand-written `Key` impl: `String`, tuples
//! of keys, and a struct made a key by `plain_key!`. A real job keyed by
//! each runs on the hash, hash+tree and append containers (and `Auto`) on
//! 1-3 threads, and must equal a `BTreeMap` built sequentially.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::marker::PhantomData;

use ember::{
    Bytes, ContainerKind, Emit, Input, Job, Key, MapResult, Records, RunOptions, Runtime, Split,
    Sum,
};

/// A grid cell: a user type, made a key in one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Cell {
    x: i8,
    y: i8,
}
ember::plain_key!(Cell);

/// How a job keys a 4-byte record: `[a, letter, letter, value]`.
trait Keying: Sync {
    type K: Key + Debug;
    /// The key `map` emits.
    fn key(rec: &[u8]) -> <Self::K as Key>::Ref<'_>;
    /// The same key, owned (for the sequential oracle).
    fn owned(rec: &[u8]) -> Self::K;
}

/// The record's two letters as text.
fn letters(rec: &[u8]) -> &str {
    std::str::from_utf8(&rec[1..3]).unwrap()
}

struct ByPair;
impl Keying for ByPair {
    type K = (u32, Bytes);
    fn key(rec: &[u8]) -> (u32, &[u8]) {
        (rec[0] as u32 % 7, &rec[1..3])
    }
    fn owned(rec: &[u8]) -> (u32, Bytes) {
        (rec[0] as u32 % 7, Bytes::new(&rec[1..3]))
    }
}

struct ByWords;
impl Keying for ByWords {
    type K = (u64, u64);
    fn key(rec: &[u8]) -> (u64, u64) {
        (rec[0] as u64 % 5, rec[1] as u64 % 3)
    }
    fn owned(rec: &[u8]) -> (u64, u64) {
        Self::key(rec)
    }
}

struct ByTriple;
impl Keying for ByTriple {
    type K = (String, u8, bool);
    fn key(rec: &[u8]) -> (&str, u8, bool) {
        (letters(rec), rec[0] % 3, rec[3].is_multiple_of(2))
    }
    fn owned(rec: &[u8]) -> (String, u8, bool) {
        let (s, n, b) = Self::key(rec);
        (s.to_string(), n, b)
    }
}

struct ByText;
impl Keying for ByText {
    type K = String;
    fn key(rec: &[u8]) -> &str {
        letters(rec)
    }
    fn owned(rec: &[u8]) -> String {
        letters(rec).to_string()
    }
}

struct ByCell;
impl Keying for ByCell {
    type K = Cell;
    fn key(rec: &[u8]) -> Cell {
        Cell {
            x: (rec[0] % 9) as i8 - 4,
            y: rec[1] as i8 - b'c' as i8,
        }
    }
    fn owned(rec: &[u8]) -> Cell {
        Self::key(rec)
    }
}

/// Sums each record's value under the key `T` gives it.
struct Totals<T>(PhantomData<T>);

impl<T: Keying> Job for Totals<T> {
    type Key = T::K;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Fixed(4)
    }

    fn map<E: Emit<T::K, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        for rec in split.data.chunks_exact(4) {
            emit.emit(T::key(rec), rec[3] as u64);
        }
        Ok(())
    }

    fn reduce(&self, _key: &T::K, total: u64) -> u64 {
        total
    }
}

/// Records with letters in `a..=e`, from a fixed 64-bit LCG.
fn records(n: usize) -> Vec<u8> {
    let mut state = 3u64;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as u8
    };
    (0..n)
        .flat_map(|_| [next(), b'a' + next() % 5, b'a' + next() % 5, next()])
        .collect()
}

fn check<T: Keying>() {
    let data = records(10_000);
    let mut oracle = BTreeMap::new();
    for rec in data.chunks_exact(4) {
        *oracle.entry(T::owned(rec)).or_insert(0u64) += rec[3] as u64;
    }
    let expected: Vec<(T::K, u64)> = oracle.into_iter().collect();
    let job = Totals::<T>(PhantomData);
    for threads in 1..=3 {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for kind in [
            ContainerKind::Auto,
            ContainerKind::Hash,
            ContainerKind::HashTree,
            ContainerKind::Append,
            ContainerKind::Intern,
        ] {
            for split in [64, 4096] {
                let opts = RunOptions::default().container(kind).split_size(split);
                let out = rt.run_with(&job, &Input::bytes(&data), &opts).unwrap();
                assert_eq!(
                    out.pairs, expected,
                    "{kind:?}, {threads} threads, split {split}"
                );
            }
        }
    }
}

#[test]
fn a_pair_with_a_byte_string_is_a_key() {
    check::<ByPair>();
}

#[test]
fn a_pair_of_integers_is_a_key() {
    check::<ByWords>();
}

#[test]
fn a_triple_with_a_string_is_a_key() {
    check::<ByTriple>();
}

#[test]
fn a_string_is_a_key() {
    check::<ByText>();
}

#[test]
fn a_plain_key_struct_is_a_key() {
    check::<ByCell>();
}
