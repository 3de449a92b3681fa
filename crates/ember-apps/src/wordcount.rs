//! Word count: how often each word occurs.
//!
//! **Tokenizer**: a word is a maximal run of ASCII letters (`A-Z`, `a-z`),
//! lower-cased. Every other byte (digits, punctuation, whitespace, bytes of
//! multi-byte UTF-8 characters, binary bytes) separates words. This is the
//! tokenizer of the C reference `wc_baseline.c`, so counts agree exactly.

use std::cmp::Ordering;
use std::collections::HashMap;

use ember::{Bytes, Emit, Job, Records, Split, Sum};

/// 0: not a letter; 1: lower-case letter; 2: upper-case letter.
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = match c as u8 {
            b'a'..=b'z' => 1,
            b'A'..=b'Z' => 2,
            _ => 0,
        };
        c += 1;
    }
    t
};

/// True for the bytes that separate words.
pub fn is_separator(b: u8) -> bool {
    CLASS[b as usize] == 0
}

/// Calls `f` with every word of `data`, lower-cased.
#[inline]
pub fn for_each_word(data: &[u8], mut f: impl FnMut(&[u8])) {
    let n = data.len();
    let mut lower = Vec::new();
    let mut i = 0;
    while i < n {
        while i < n && CLASS[data[i] as usize] == 0 {
            i += 1;
        }
        let start = i;
        let mut seen = 0;
        while i < n {
            let c = CLASS[data[i] as usize];
            if c == 0 {
                break;
            }
            seen |= c;
            i += 1;
        }
        if i > start {
            let word = &data[start..i];
            if seen & 2 == 0 {
                f(word);
            } else {
                lower.clear();
                lower.extend(word.iter().map(|b| b | 0x20));
                f(&lower);
            }
        }
    }
}

/// The word count job. Its output order is by key (word); use
/// [`WordCount::by_count`] for most-frequent-first.
#[derive(Debug, Clone, Copy, Default)]
pub struct WordCount {
    by_count: bool,
}

impl WordCount {
    /// Output ordered by word.
    pub fn new() -> Self {
        WordCount { by_count: false }
    }

    /// Output ordered by count, most frequent first, ties by word.
    pub fn by_count() -> Self {
        WordCount { by_count: true }
    }
}

impl Job for WordCount {
    type Key = Bytes;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Separator(is_separator)
    }

    fn map<E: Emit<Bytes, u64>>(&self, split: Split<'_>, emit: &mut E) {
        for_each_word(split.data, |w| emit.emit(w, 1));
    }

    fn reduce(&self, _word: &Bytes, count: u64) -> u64 {
        count
    }

    fn order(&self, a: &(Bytes, u64), b: &(Bytes, u64)) -> Ordering {
        if self.by_count {
            b.1.cmp(&a.1)
        } else {
            a.0.cmp(&b.0)
        }
    }
}

/// The plain sequential word count, the correctness oracle: every
/// `(word, count)`, sorted by word.
pub fn sequential(inputs: &[&[u8]]) -> Vec<(Vec<u8>, u64)> {
    let mut counts: HashMap<Vec<u8>, u64> = HashMap::new();
    for data in inputs {
        for word in data.split(|b| !b.is_ascii_alphabetic()) {
            if !word.is_empty() {
                *counts.entry(word.to_ascii_lowercase()).or_insert(0) += 1;
            }
        }
    }
    let mut out: Vec<_> = counts.into_iter().collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_lowercases_and_splits_on_non_letters() {
        let mut words = Vec::new();
        for_each_word(b"Hello, WORLD! caf\xc3\xa9 x2y\0z", |w| {
            words.push(w.to_vec())
        });
        let want: Vec<&[u8]> = vec![b"hello", b"world", b"caf", b"x", b"y", b"z"];
        assert_eq!(words, want);
    }
}
