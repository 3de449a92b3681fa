//! Word count: how often each word occurs.
//!
//! **Tokenizer**: a word is a maximal run of ASCII letters (`A-Z`, `a-z`),
//! lower-cased. Every other byte (digits, punctuation, whitespace, bytes of
//! multi-byte UTF-8 characters, binary bytes) separates words. This is the
//! tokenizer of the C reference `wc_baseline.c`, so counts agree exactly.

use std::cmp::Ordering;
use std::collections::HashMap;

use ember::plumbing::{BytesProbe, INLINE_KEY_BYTES};
use ember::spill::Codec;
use ember::{Bytes, Emit, Job, MapResult, OutputOrder, Records, Split, Sum};

use crate::decimal::push_after;
use crate::tokens::{self, Kernel};

/// True for the bytes that separate words.
pub fn is_separator(b: u8) -> bool {
    tokens::is_separator(b)
}

/// Passes `word` to `f`, lower-cased through `buf` if it has `upper`-case
/// letters.
#[inline(always)]
fn lowered(word: &[u8], upper: bool, buf: &mut Vec<u8>, f: &mut impl FnMut(&[u8])) {
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
    tokens::tokens(Kernel::detect(), data, |s, e, up| {
        lowered(&data[s..e], up, &mut buf, &mut f)
    });
}

/// Calls `f(start, end)` for every word `data[start..end]`, in order, as it
/// stands in `data` (not lower-cased): for callers that read the words'
/// bytes themselves (the bench's counting limit).
pub fn for_each_word_range(data: &[u8], mut f: impl FnMut(usize, usize)) {
    tokens::tokens(Kernel::detect(), data, |s, e, _| f(s, e));
}

/// Words [`for_each_batch`] hands over at a time (the last batch of a call
/// may be shorter).
pub const BATCH: usize = 32;

/// Calls `f` with the probes of the words of `data`, lower-cased, in
/// order, [`BATCH`] at a time: for [`Emit::emit_probes`], which prefetches
/// a batch's slots before inserting any. A word's probe is prepared from
/// the text around it ([`BytesProbe::within`]).
pub fn for_each_batch(data: &[u8], mut f: impl FnMut(&[BytesProbe<'_>])) {
    batches::<false>(Kernel::detect(), data, |probes, _| f(probes));
}

/// [`for_each_batch`] with every batch's words on one line: calls
/// `f(probes, line)`, `line` the 0-based index in `data` of the line the
/// words are on. One pass of the tokenizer over all of `data`, where a
/// pass per line pays the tokenizer's start and its last short block on
/// every line (an inverted index of lines: a dozen words a line).
pub fn for_each_line_batch(data: &[u8], f: impl FnMut(&[BytesProbe<'_>], usize)) {
    batches::<true>(Kernel::detect(), data, f);
}

/// The line that batches cut at lines are on.
struct LineCursor {
    /// Its 0-based index.
    line: usize,
    /// Where it ends: its newline's offset, or `usize::MAX` for the last
    /// line.
    end: usize,
}

impl LineCursor {
    fn new(data: &[u8]) -> Self {
        LineCursor {
            line: 0,
            end: newline_from(data, 0),
        }
    }

    /// Moves on to the line of byte `at` (past this line's end). Not
    /// inlined: it runs once a line, the tokenizer's callback once a word.
    #[inline(never)]
    fn advance(&mut self, data: &[u8], at: usize) {
        while self.end < at {
            self.line += 1;
            self.end = newline_from(data, self.end + 1);
        }
    }
}

/// The offset of the first newline of `data` at or after `from`, or
/// `usize::MAX`.
fn newline_from(data: &[u8], from: usize) -> usize {
    memchr::memchr(b'\n', &data[from..]).map_or(usize::MAX, |i| from + i)
}

/// [`for_each_batch`] (`AT_LINES` false: `f`'s line is always 0) or
/// [`for_each_line_batch`] (true) with the given tokenizer kernel. A
/// constant, so that word count's loop has no line check at all.
///
/// The tokenizer calls back once per word, so that callback only notes the
/// word's range: handing a full batch over (lower-casing, building the
/// slices, the inserts) is a call of its own every [`BATCH`] words. With
/// the hand-over inlined into it, the callback was too large to inline into
/// the tokenizer's loop, and every word paid a call and a stack frame.
#[inline(always)]
fn batches<const AT_LINES: bool>(
    kernel: Kernel,
    data: &[u8],
    mut f: impl FnMut(&[BytesProbe<'_>], usize),
) {
    let mut ranges = [(0, 0, false); BATCH];
    let mut n = 0;
    let mut lower = Vec::new();
    let mut cursor = match AT_LINES {
        true => LineCursor::new(data),
        false => LineCursor {
            line: 0,
            end: usize::MAX,
        },
    };
    tokens::tokens(kernel, data, |s, e, up| {
        if AT_LINES && s > cursor.end {
            let line = cursor.line;
            if n > 0 {
                flush(data, &ranges[..n], &mut lower, &mut |p| f(p, line));
                n = 0;
            }
            cursor.advance(data, s);
        }
        ranges[n] = (s, e, up);
        n += 1;
        if n == BATCH {
            let line = cursor.line;
            flush(data, &ranges, &mut lower, &mut |p| f(p, line));
            n = 0;
        }
    });
    if n > 0 {
        let line = cursor.line;
        flush(data, &ranges[..n], &mut lower, &mut |p| f(p, line));
    }
}

/// Hands `f` the probes of the words `data[start..end]` of `ranges`, those
/// with upper case lower-cased into `lower`. Never inlined: see
/// [`batches`].
#[inline(never)]
fn flush(
    data: &[u8],
    ranges: &[(usize, usize, bool)],
    lower: &mut Vec<u8>,
    f: &mut impl FnMut(&[BytesProbe<'_>]),
) {
    lower_into(data, ranges, lower);
    let mut at = 0;
    let mut probes = [BytesProbe::default(); BATCH];
    for (probe, &(s, e, upper)) in probes.iter_mut().zip(ranges) {
        *probe = if upper {
            at += e - s;
            BytesProbe::within(lower, at - (e - s), at)
        } else {
            BytesProbe::within(data, s, e)
        };
    }
    f(&probes[..ranges.len()]);
}

/// Writes the words of `ranges` with upper case, lower-cased, one after
/// another into `lower`, followed by at least a block of slack (so that
/// [`BytesProbe::within`] loads each as one block). A short word inside
/// `data` is lower-cased a block at a time: the bytes past its end are
/// overwritten by the next word's, or fall in the slack.
#[inline(always)]
fn lower_into(data: &[u8], ranges: &[(usize, usize, bool)], lower: &mut Vec<u8>) {
    const BLOCK: usize = INLINE_KEY_BYTES;
    let mut at = 0;
    for &(s, e, _) in ranges.iter().filter(|r| r.2) {
        let n = e - s;
        if lower.len() < at + n.max(BLOCK) + BLOCK {
            lower.resize(at + n.max(BLOCK) + BLOCK, 0);
        }
        match data.get(s..s + BLOCK) {
            Some(block) if n <= BLOCK => {
                let lowered = u128::from_le_bytes(block.try_into().expect("a block"))
                    | u128::from_le_bytes([0x20; BLOCK]);
                lower[at..at + BLOCK].copy_from_slice(&lowered.to_le_bytes());
            }
            _ => {
                for (to, b) in lower[at..at + n].iter_mut().zip(&data[s..e]) {
                    *to = b | 0x20;
                }
            }
        }
        at += n;
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
        for_each_batch(split.data, |words| emit.emit_probes(words, 1));
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

    #[inline]
    fn order(&self, a: &(Bytes, u64), b: &(Bytes, u64)) -> Ordering {
        if self.by_count {
            b.1.cmp(&a.1)
        } else {
            a.0.cmp(&b.0)
        }
    }

    fn output_order(&self) -> OutputOrder {
        match self.by_count {
            true => OutputOrder::Comparator,
            false => OutputOrder::Key,
        }
    }
}

/// Appends the output line of `word` and its `count`, `word<TAB>count`
/// and a newline.
pub fn push_line(word: &[u8], count: u64, line: &mut Vec<u8>) {
    line.extend_from_slice(word);
    push_after(line, b'\t', count);
    line.push(b'\n');
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
    use ember::Key;

    /// A probe's word, checked to be probed as the word alone.
    fn word_of(p: &BytesProbe<'_>) -> Vec<u8> {
        let word = Bytes::probe_ref(p);
        let alone = Bytes::probe(word);
        assert_eq!(Bytes::probe_hash(p), Bytes::probe_hash(&alone));
        let key = Bytes::from_probe(p);
        assert!(key == Bytes::from(word) && key.matches(&alone));
        word.to_vec()
    }

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
    fn batches_are_the_words_in_order_for_every_kernel() {
        let mut text = b"Hello, WORLD! caf\xc3\xa9 x2y\0z ".repeat(20);
        text.extend_from_slice(b"MixedCase");
        for kernel in Kernel::available() {
            let mut got = Vec::new();
            batches::<false>(kernel, &text, |ps, line| {
                assert!(!ps.is_empty() && ps.len() <= BATCH && line == 0);
                got.extend(ps.iter().map(word_of));
            });
            assert_eq!(got, words(&text), "{kernel:?}");
        }
    }

    proptest::proptest! {
        /// Batches of any input are its words, lower-cased, in order
        /// (words that straddle batches and blocks, upper case, bytes
        /// >= 0x80), for every kernel.
        #[test]
        fn batches_match_the_plain_tokenizer(
            data in proptest::collection::vec(
                proptest::prop_oneof![
                    4 => b'a'..=b'z',
                    2 => b'A'..=b'Z',
                    2 => proptest::prelude::any::<u8>(),
                    1 => proptest::prelude::Just(b' '),
                ],
                0..2000,
            ),
        ) {
            let mut want = Vec::new();
            tokens::tokens_plain(&data, |s, e, _| want.push(data[s..e].to_ascii_lowercase()));
            for kernel in Kernel::available() {
                let mut got = Vec::new();
                batches::<false>(kernel, &data, |ps, _| got.extend(ps.iter().map(word_of)));
                proptest::prop_assert_eq!(&got, &want);
            }
        }

        /// Batches cut at lines are each line's words, lower-cased, in
        /// order, with the line's index: lines empty, without words,
        /// longer than a batch or a block, and a last line with or without
        /// its newline, for every kernel.
        #[test]
        fn line_batches_are_the_words_of_each_line(
            data in proptest::collection::vec(
                proptest::prop_oneof![
                    8 => b'a'..=b'z',
                    2 => b'A'..=b'Z',
                    2 => proptest::prelude::any::<u8>(),
                    2 => proptest::prelude::Just(b' '),
                    1 => proptest::prelude::Just(b'\n'),
                ],
                0..3000,
            ),
        ) {
            let mut want = Vec::new();
            for (line, text) in data.split(|&b| b == b'\n').enumerate() {
                for_each_word(text, |w| want.push((line, w.to_vec())));
            }
            for kernel in Kernel::available() {
                let mut got = Vec::new();
                batches::<true>(kernel, &data, |ps, line| {
                    assert!(!ps.is_empty() && ps.len() <= BATCH);
                    got.extend(ps.iter().map(|p| (line, word_of(p))));
                });
                proptest::prop_assert_eq!(&got, &want);
            }
        }
    }
}
