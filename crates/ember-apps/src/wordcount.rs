//! Word count: how often each word occurs.
//!
//! **Tokenizer**: a word is a maximal run of ASCII letters (`A-Z`, `a-z`),
//! lower-cased. Every other byte (digits, punctuation, whitespace, bytes of
//! multi-byte UTF-8 characters, binary bytes) separates words. This is the
//! tokenizer of the C reference `wc_baseline.c`, so counts agree exactly.

use std::cmp::Ordering;
use std::collections::HashMap;

use ember::spill::Codec;
use ember::{Bytes, Emit, Job, MapResult, Records, Split, Sum};

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

/// Calls `f(start, end, has_upper)` for every word `data[start..end]`.
#[inline(always)]
fn tokens(data: &[u8], mut f: impl FnMut(usize, usize, bool)) {
    let n = data.len();
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
            f(start, i, seen & 2 != 0);
        }
    }
}

/// Passes `data[start..end]` to `f`, lower-cased through `buf` if needed.
#[inline(always)]
fn lowered(
    data: &[u8],
    (start, end, upper): (usize, usize, bool),
    buf: &mut Vec<u8>,
    f: &mut impl FnMut(&[u8]),
) {
    let word = &data[start..end];
    if upper {
        buf.clear();
        buf.extend(word.iter().map(|b| b | 0x20));
        f(buf);
    } else {
        f(word);
    }
}

/// Calls `f` with every word of `data`, lower-cased.
pub fn for_each_word(data: &[u8], mut f: impl FnMut(&[u8])) {
    let mut buf = Vec::new();
    tokens(data, |s, e, up| lowered(data, (s, e, up), &mut buf, &mut f));
}

/// Words a map call looks ahead: the slot of word `i + AHEAD` is
/// prefetched while word `i` is counted.
const AHEAD: usize = 8;

/// Like [`for_each_word`], but calls `ahead` with each word [`AHEAD`] words
/// before `f` gets it (words that need lower-casing are not announced).
pub fn for_each_word_ahead(data: &[u8], mut ahead: impl FnMut(&[u8]), mut f: impl FnMut(&[u8])) {
    let mut buf = Vec::new();
    let mut ring = [(0, 0, false); AHEAD];
    let mut seen = 0;
    tokens(data, |s, e, up| {
        if !up {
            ahead(&data[s..e]);
        }
        let slot = &mut ring[seen % AHEAD];
        if seen >= AHEAD {
            lowered(data, *slot, &mut buf, &mut f);
        }
        *slot = (s, e, up);
        seen += 1;
    });
    for i in seen.saturating_sub(AHEAD)..seen {
        lowered(data, ring[i % AHEAD], &mut buf, &mut f);
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

    fn map<E: Emit<Bytes, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        // Two closures need the emitter: one announces, one emits.
        let emit = std::cell::RefCell::new(emit);
        for_each_word_ahead(
            split.data,
            |w| emit.borrow_mut().prefetch(w),
            |w| emit.borrow_mut().emit(w, 1),
        );
        Ok(())
    }

    fn reduce(&self, _word: &Bytes, count: u64) -> u64 {
        count
    }

    /// Words and counts spill as they are.
    fn codec(&self) -> Option<Codec<Bytes, u64>> {
        Some(Codec::new())
    }

    /// Counts are sums: partial counts fold in any order.
    fn pipelinable(&self) -> bool {
        true
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

    fn words(text: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for_each_word(text, |w| out.push(w.to_vec()));
        out
    }

    #[test]
    fn tokenizer_lowercases_and_splits_on_non_letters() {
        let want: Vec<&[u8]> = vec![b"hello", b"world", b"caf", b"x", b"y", b"z"];
        assert_eq!(words(b"Hello, WORLD! caf\xc3\xa9 x2y\0z"), want);
    }

    #[test]
    fn look_ahead_announces_words_before_they_come() {
        let texts: [&[u8]; 4] = [b"", b"a", b"Ab cd", b"a b c d e f g h i j k l m n o p Q r"];
        for text in texts {
            let mut got = Vec::new();
            let announced = std::cell::RefCell::new(Vec::new());
            for_each_word_ahead(
                text,
                |w| announced.borrow_mut().push(w.to_vec()),
                |w| {
                    // Every word that needed no lower-casing was announced.
                    let verbatim = text.windows(w.len()).any(|x| x == w);
                    assert!(!verbatim || announced.borrow().iter().any(|a| a == w));
                    got.push(w.to_vec())
                },
            );
            let announced = announced.into_inner();
            assert_eq!(got, words(text));
            assert_eq!(
                announced.len(),
                got.iter()
                    .filter(|w| text.windows(w.len()).any(|x| x == &w[..]))
                    .count()
            );
        }
    }
}
