//! The runtime's unsafe code on small inputs, for a memory checker: the
//! p-way merge (items moved out of runs through raw pointers, an output
//! filled through `set_len`), the top-k merge, the append container (values
//! grouped into uninitialised slots) and the hash table, through the public
//! API. Keys longer than [`INLINE_KEY_BYTES`] and `String` values and
//! outputs live on the heap, so an item moved twice, dropped twice or
//! never written shows up as an invalid read or free.
//!
//! It is an ordinary test (every run is checked against a `BTreeMap`), and
//! `.ci/run` runs it again under `valgrind --error-exitcode=1`, which
//! fails on any invalid read, write or free, or use of uninitialised
//! memory. Kept small so that this takes well under a minute there.

use std::collections::BTreeMap;

use ember::plumbing::INLINE_KEY_BYTES;
use ember::{
    Bytes, ContainerKind, Emit, Input, Job, KeepAll, MapResult, RunOptions, Runtime, Split, Sum,
};

/// Distinct words in the input: enough that the p-way merge splits its
/// runs into ranges (it sorts small outputs in one piece).
const WORDS: usize = 3_000;

/// Lines of text: words `w{i}` padded past the inline key size for one in
/// three, each word repeated, in an order that mixes them across splits.
fn text() -> Vec<u8> {
    let mut out = Vec::new();
    for line in 0..1_500 {
        for j in 0..8 {
            let i = (line * 7_919 + j * 104_729) % WORDS;
            let pad = if i.is_multiple_of(3) {
                INLINE_KEY_BYTES
            } else {
                0
            };
            out.extend_from_slice(format!("w{i}{:x<pad$} ", "").as_bytes());
        }
        out.push(b'\n');
    }
    out
}

/// Word count with heap keys and `String` outputs (hash, append and merge).
struct Count;

impl Job for Count {
    type Key = Bytes;
    type Value = u64;
    type Combiner = Sum;
    type Out = String;

    fn map<E: Emit<Bytes, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        for w in split.data.split(|b| b.is_ascii_whitespace()) {
            if !w.is_empty() {
                emit.emit(w, 1);
            }
        }
        Ok(())
    }

    fn reduce(&self, _word: &Bytes, n: u64) -> String {
        n.to_string()
    }
}

/// Every occurrence kept as a `String` value: the append container groups
/// heap values, and reduce reads every one.
struct Occurrences;

impl Job for Occurrences {
    type Key = Bytes;
    type Value = String;
    type Combiner = KeepAll;
    type Out = String;

    fn map<E: Emit<Bytes, String>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        for w in split.data.split(|b| b.is_ascii_whitespace()) {
            if !w.is_empty() {
                emit.emit(w, String::from_utf8_lossy(w).into_owned());
            }
        }
        Ok(())
    }

    fn reduce(&self, word: &Bytes, all: &mut [String]) -> String {
        assert!(all.iter().all(|w| w.as_bytes() == word.as_bytes()));
        all.len().to_string()
    }
}

/// The expected output: each word's count, in key order.
fn counts(text: &[u8]) -> Vec<(Vec<u8>, String)> {
    let mut n = BTreeMap::<&[u8], u64>::new();
    for w in text
        .split(|b| b.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
    {
        *n.entry(w).or_default() += 1;
    }
    n.into_iter()
        .map(|(w, n)| (w.to_vec(), n.to_string()))
        .collect()
}

/// Output pairs with plain byte keys, to compare.
fn plain(pairs: Vec<(Bytes, String)>) -> Vec<(Vec<u8>, String)> {
    pairs
        .into_iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v))
        .collect()
}

/// Run options: small splits (many map tasks and partitions), a container
/// and maybe a top k.
fn opts(container: ContainerKind, top: Option<usize>) -> RunOptions {
    RunOptions::default()
        .split_size(4 << 10)
        .container(container)
        .top(top)
}

#[test]
fn merges_and_containers_touch_only_what_they_own() {
    let text = text();
    let want = counts(&text);
    assert_eq!(want.len(), WORDS);
    let input = Input::bytes(&text);
    for threads in [2, 3] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for container in [
            ContainerKind::Hash,
            ContainerKind::Append,
            ContainerKind::Intern,
        ] {
            let what = format!("{threads} threads, {container:?}");
            let all = opts(container, None);
            let got = rt.run_with(&Count, &input, &all).unwrap();
            assert!(plain(got.pairs) == want, "{what}: counts");
            let got = rt.run_with(&Occurrences, &input, &all).unwrap();
            assert!(plain(got.pairs) == want, "{what}: occurrences");
            for k in [1, 100, WORDS + 1] {
                let top = opts(container, Some(k));
                let got = rt.run_with(&Count, &input, &top).unwrap();
                let n = k.min(WORDS);
                assert!(plain(got.pairs) == want[..n], "{what}: top {k}");
            }
        }
    }
}
