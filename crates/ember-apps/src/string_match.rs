//! String match: which lines of a keys file (one word per line) are one of
//! a few target words, and where (Phoenix's `string_match`).
//!
//! **Matching**: a line's word is the line without its `\n` (and a `\r`
//! before it). Each word is hashed and looked up among the targets' hashes;
//! a hash hit is confirmed by comparing the bytes, and only a confirmed
//! match is reported (Phoenix++'s version computed the comparison and threw
//! the result away, so the compiler removed it).
//!
//! **Job**: map-only ([`MapOnlyJob`]): `map` appends `(target index, byte
//! offset of the line)` for every match; there is no reduce. The output,
//! sorted stably by target, lists each target's lines in file order.

use std::io::{self, Write};

use ember::{
    Error, Input, MapOnlyJob, MapResult, Records, Result, RunOptions, Runtime, Split, Stats,
};
use rand::{Rng, RngCore};

use crate::blocks;

/// The target words planted by default (those of Phoenix's string match,
/// lower-cased like the generated words).
pub const DEFAULT_TARGETS: [&str; 4] = ["helloworld", "howareyou", "ferrari", "whotheman"];

/// How many times the generator plants each target word (fewer in a file
/// too small to hold them).
pub const PLANTS_PER_WORD: usize = 3;

/// Folds a 128-bit product into 64 bits.
#[inline(always)]
fn fold_mul(a: u64, b: u64) -> u64 {
    let full = u128::from(a) * u128::from(b);
    (full as u64) ^ ((full >> 64) as u64)
}

/// Mixes 16 bytes of a word into the hash state.
#[inline(always)]
fn mix(h: u64, w0: u64, w1: u64) -> u64 {
    const K0: u64 = 0x243f_6a88_85a3_08d3;
    const K1: u64 = 0x1319_8a2e_0370_7344;
    fold_mul(h ^ w0 ^ K0, w1 ^ K1)
}

/// The hash state a word of `len` bytes starts from.
#[inline(always)]
fn seed(len: usize) -> u64 {
    (len as u64).wrapping_mul(0xa409_3822_299f_31d0)
}

/// `MASKS[n]` keeps the low `n` bytes of a little-endian word.
const MASKS: [u64; 9] = {
    let mut m = [0u64; 9];
    let mut n = 1;
    while n < 9 {
        m[n] = u64::MAX >> (64 - 8 * n);
        n += 1;
    }
    m
};

/// The little-endian word at `data[i..i + 8]`.
#[inline(always)]
fn load(data: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(data[i..i + 8].try_into().expect("8 bytes"))
}

/// Hashes a word 16 bytes at a time, the last block zero-padded.
fn hash_word(word: &[u8]) -> u64 {
    let mut h = seed(word.len());
    let mut rest = word;
    while rest.len() > 16 {
        h = mix(h, load(rest, 0), load(rest, 8));
        rest = &rest[16..];
    }
    let mut last = [0u8; 16];
    last[..rest.len()].copy_from_slice(rest);
    mix(h, load(&last, 0), load(&last, 8))
}

/// [`hash_word`] of `data[start..start + len]`: for a word of at most 16
/// bytes with 16 bytes readable from `start` (almost every line), two
/// loads and masks, without branching on the length.
#[inline(always)]
fn hash_at(data: &[u8], start: usize, len: usize) -> u64 {
    if len <= 16 && start + 16 <= data.len() {
        let w0 = load(data, start) & MASKS[len.min(8)];
        let w1 = load(data, start + 8) & MASKS[len.saturating_sub(8)];
        mix(seed(len), w0, w1)
    } else {
        hash_word(&data[start..start + len])
    }
}

/// The positions of the `\n` bytes of a 64-byte block, as bits. Written
/// 16 bytes at a time, the shape the compiler turns into a vector compare
/// and a byte mask (a 64-bit shift per byte does not vectorize well).
#[inline(always)]
fn newlines(block: &[u8]) -> u64 {
    let mut mask = 0;
    for (g, group) in block.chunks_exact(16).enumerate() {
        let mut m = 0u16;
        for (i, &b) in group.iter().enumerate() {
            m |= u16::from(b == b'\n') << i;
        }
        mask |= u64::from(m) << (16 * g);
    }
    mask
}

/// Bits in the filter of target hashes (a one-hash Bloom filter indexed by
/// the hash's top bits: almost every line is rejected by one bit test).
const FILTER_BITS: usize = 1 << 12;

/// The target words, a filter of their hashes, and an open-addressing table
/// of `(hash, target index)`.
#[derive(Debug, Clone)]
pub struct Targets {
    words: Vec<Vec<u8>>,
    filter: Vec<u64>,
    /// `u32::MAX` marks an empty slot.
    table: Vec<(u64, u32)>,
    mask: usize,
}

/// Fails on a word that can never be a line's word.
fn check_word(i: usize, word: &[u8]) -> Result<()> {
    if word.is_empty() {
        return Err(Error::InvalidInput(format!(
            "target word {} is empty",
            i + 1
        )));
    }
    if let Some(p) = word.iter().position(|&b| b == b'\n' || b == b'\r') {
        return Err(Error::InvalidInput(format!(
            "target word {} ({:?}) has a line break at byte {p}: words are matched against whole lines",
            i + 1,
            String::from_utf8_lossy(word)
        )));
    }
    Ok(())
}

impl Targets {
    /// The targets, in order (a word given twice is reported under both of
    /// its indices). Each must be non-empty and without line breaks.
    pub fn new<W: AsRef<[u8]>>(words: &[W]) -> Result<Targets> {
        if words.is_empty() {
            return Err(Error::InvalidInput("no target words given".into()));
        }
        for (i, w) in words.iter().enumerate() {
            check_word(i, w.as_ref())?;
        }
        let slots = (2 * words.len()).next_power_of_two().max(8);
        let mask = slots - 1;
        let mut table = vec![(0, u32::MAX); slots];
        let mut filter = vec![0u64; FILTER_BITS / 64];
        for (i, w) in words.iter().enumerate() {
            let h = hash_word(w.as_ref());
            let bit = Self::filter_bit(h);
            filter[bit / 64] |= 1 << (bit % 64);
            let mut s = h as usize & mask;
            while table[s].1 != u32::MAX {
                s = (s + 1) & mask;
            }
            table[s] = (h, i as u32);
        }
        Ok(Targets {
            words: words.iter().map(|w| w.as_ref().to_vec()).collect(),
            filter,
            table,
            mask,
        })
    }

    /// The target words.
    pub fn words(&self) -> &[Vec<u8>] {
        &self.words
    }

    #[inline(always)]
    fn filter_bit(h: u64) -> usize {
        (h >> (64 - FILTER_BITS.trailing_zeros())) as usize
    }

    /// Calls `found(target index)` for each target equal to `word`, whose
    /// hash is `h`: a filter test, then the table, then the bytes.
    #[inline(always)]
    fn find(&self, h: u64, word: &[u8], mut found: impl FnMut(u32)) {
        let bit = Self::filter_bit(h);
        if self.filter[bit / 64] & (1 << (bit % 64)) == 0 {
            return;
        }
        let mut s = h as usize & self.mask;
        loop {
            let (slot_hash, t) = self.table[s];
            if t == u32::MAX {
                return;
            }
            if slot_hash == h && self.words[t as usize] == word {
                found(t);
            }
            s = (s + 1) & self.mask;
        }
    }

    /// Calls `found(target index, offset)` if `data[start..end]`, a line
    /// starting at offset `base + start`, is a target.
    #[inline(always)]
    fn line(
        &self,
        data: &[u8],
        start: usize,
        end: usize,
        base: u64,
        found: &mut impl FnMut(u32, u64),
    ) {
        let mut len = end - start;
        if len > 0 && data[end - 1] == b'\r' {
            len -= 1;
        }
        let h = hash_at(data, start, len);
        self.find(h, &data[start..start + len], |t| {
            found(t, base + start as u64)
        });
    }

    /// Calls `found(target index, line offset)` for every matching line of
    /// `data`, whose first byte is at offset `base`. Line ends are found 64
    /// bytes at a time as a bit mask.
    pub(crate) fn scan(&self, data: &[u8], base: u64, mut found: impl FnMut(u32, u64)) {
        let mut start = 0;
        let mut at = 0;
        for block in data.chunks_exact(64) {
            let mut ends = newlines(block);
            while ends != 0 {
                let end = at + ends.trailing_zeros() as usize;
                self.line(data, start, end, base, &mut found);
                start = end + 1;
                ends &= ends - 1;
            }
            at += 64;
        }
        for end in memchr::memchr_iter(b'\n', &data[at..]) {
            self.line(data, start, at + end, base, &mut found);
            start = at + end + 1;
        }
        if start < data.len() {
            self.line(data, start, data.len(), base, &mut found);
        }
    }
}

/// For each target (by index), the byte offsets of the lines it matches, in
/// file order.
pub type Matches = Vec<Vec<u64>>;

/// The string match job (map-only).
#[derive(Debug, Clone)]
pub struct StringMatch {
    targets: Targets,
}

impl StringMatch {
    /// The job looking for these targets.
    pub fn new(targets: Targets) -> Self {
        StringMatch { targets }
    }
}

impl MapOnlyJob for StringMatch {
    type Key = u32;
    type Value = u64;

    fn records(&self) -> Records {
        Records::Lines
    }

    fn map(&self, split: Split<'_>, out: &mut Vec<(u32, u64)>) -> MapResult {
        self.targets
            .scan(split.data, split.offset, |t, off| out.push((t, off)));
        Ok(())
    }
}

/// Runs the job over a keys file's bytes: each target's matches and the
/// run's stats.
pub fn run(
    rt: &Runtime,
    data: &[u8],
    targets: &Targets,
    opts: &RunOptions,
) -> Result<(Matches, Stats)> {
    run_input(rt, &Input::bytes(data), targets, opts)
}

/// [`run`] over any [`Input`]: in memory, memory-mapped, or streamed in
/// chunks (the offsets are those of the lines in their file either way).
/// Matches from several files are listed together, file by file.
pub fn run_input(
    rt: &Runtime,
    input: &Input<'_>,
    targets: &Targets,
    opts: &RunOptions,
) -> Result<(Matches, Stats)> {
    let job = StringMatch::new(targets.clone());
    let out = rt.run_map_only(&job, input, opts)?;
    let mut matches = vec![Vec::new(); targets.words.len()];
    for (t, off) in out.pairs {
        matches[t as usize].push(off);
    }
    Ok((matches, out.stats))
}

/// The plain sequential string match, the correctness oracle and benchmark
/// baseline.
pub fn sequential(data: &[u8], targets: &Targets) -> Matches {
    let mut matches = vec![Vec::new(); targets.words.len()];
    targets.scan(data, 0, |t, off| matches[t as usize].push(off));
    matches
}

/// What keys file to generate: random lower-case words of 4 to 12 letters,
/// one per line, with the `plant` words written in at a few reproducible
/// lines ([`PLANTS_PER_WORD`] each).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeysSpec {
    /// Exact file size in bytes.
    pub size: u64,
    /// Random seed: the same spec gives the same bytes.
    pub seed: u64,
    /// Words to plant.
    pub plant: Vec<String>,
}

impl Default for KeysSpec {
    /// The WORKLOADS.md shape: 256 MiB, the default targets planted.
    fn default() -> Self {
        KeysSpec {
            size: 256 << 20,
            seed: 7,
            plant: DEFAULT_TARGETS.iter().map(|w| w.to_string()).collect(),
        }
    }
}

const BLOCK: u64 = 1 << 20;

impl KeysSpec {
    /// Where the plants go: `(block, line in block, word)`, sorted.
    fn plants(&self) -> Vec<(u64, usize, usize)> {
        let blocks = self.size.div_ceil(BLOCK).max(1);
        let mut rng = blocks::rng(self.seed, u64::MAX);
        let mut plants = Vec::new();
        for word in 0..self.plant.len() {
            for _ in 0..PLANTS_PER_WORD {
                let block = rng.gen_range(0..blocks);
                let len = BLOCK.min(self.size.saturating_sub(block * BLOCK));
                // Early enough in the block that the line is still there.
                let line = rng.gen_range(0..(len / 32).max(1)) as usize;
                plants.push((block, line, word));
            }
        }
        plants.sort_unstable();
        plants
    }

    /// Block `index` of the file, `len` bytes.
    fn block(&self, index: u64, len: usize, plants: &[(u64, usize, usize)]) -> Vec<u8> {
        let mut rng = blocks::rng(self.seed, index);
        let first = plants.partition_point(|p| p.0 < index);
        let mut here = plants[first..]
            .iter()
            .take_while(|p| p.0 == index)
            .peekable();
        let mut out = Vec::with_capacity(len + 16);
        let mut line = 0;
        while out.len() < len {
            while let Some(&(_, _, w)) = here.next_if(|p| p.1 == line) {
                let word = self.plant[w].as_bytes();
                if out.len() + word.len() < len {
                    out.extend_from_slice(word);
                    out.push(b'\n');
                }
            }
            let r = rng.next_u64();
            let n = 4 + (r % 9) as usize;
            out.extend((0..n).map(|i| b'a' + ((r >> (8 + 5 * i)) % 26) as u8));
            out.push(b'\n');
            line += 1;
        }
        out.truncate(len);
        if let Some(last) = out.last_mut() {
            *last = b'\n';
        }
        out
    }
}

/// Writes the keys file to `out`, calling `progress(bytes_written)` as it
/// goes.
pub fn write_keys(
    spec: &KeysSpec,
    out: &mut impl Write,
    progress: impl FnMut(u64),
) -> io::Result<()> {
    for (i, w) in spec.plant.iter().enumerate() {
        check_word(i, w.as_bytes())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    }
    let plants = spec.plants();
    blocks::write_blocks(spec.size, BLOCK, out, progress, |index, len| {
        spec.block(index, len, &plants)
    })
}

/// A generated keys file in memory (tests and small inputs).
pub fn keys(spec: &KeysSpec) -> io::Result<Vec<u8>> {
    let mut v = Vec::with_capacity(spec.size as usize);
    write_keys(spec, &mut v, |_| {})?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The obvious search: split into lines, compare each with each target.
    fn naive(data: &[u8], words: &[&str]) -> Matches {
        let mut m = vec![Vec::new(); words.len()];
        let mut off = 0;
        for line in data.split(|&b| b == b'\n') {
            let word = line.strip_suffix(b"\r").unwrap_or(line);
            for (t, w) in words.iter().enumerate() {
                if word == w.as_bytes() {
                    m[t].push(off);
                }
            }
            off += line.len() as u64 + 1;
        }
        m
    }

    #[test]
    fn matches_whole_lines_only() {
        let data = b"abc\nferrari\nferraris\nxferrari\nferrari\r\n\nab\nferrari";
        let words = ["ferrari", "ab", "abc", "zz", "ferrari"];
        let t = Targets::new(&words).unwrap();
        let m = sequential(data, &t);
        assert_eq!(m, naive(data, &words));
        assert_eq!(
            m,
            vec![vec![4, 30, 43], vec![40], vec![0], vec![], vec![4, 30, 43]]
        );
    }

    #[test]
    fn planted_words_are_found_and_generator_is_reproducible() {
        let spec = KeysSpec {
            size: 3 * BLOCK + 777,
            seed: 5,
            plant: vec!["helloworld".into(), "ab".into()],
        };
        let data = keys(&spec).unwrap();
        assert_eq!(data.len() as u64, spec.size);
        assert_eq!(data, keys(&spec).unwrap());
        let words = ["helloworld", "ab", "qqqqqqqqqqqqqqqqqqqq"];
        let m = sequential(&data, &Targets::new(&words).unwrap());
        assert_eq!(m, naive(&data, &words));
        assert_eq!(m[0].len(), PLANTS_PER_WORD);
        assert!(m[1].len() >= PLANTS_PER_WORD);
        assert!(m[2].is_empty());
    }

    #[test]
    fn fast_hash_equals_the_plain_one() {
        let data: Vec<u8> = (0..100u8).map(|i| i.wrapping_mul(37)).collect();
        for start in 0..data.len() {
            for len in 0..=(data.len() - start).min(40) {
                assert_eq!(
                    hash_at(&data, start, len),
                    hash_word(&data[start..start + len]),
                    "{start} {len}"
                );
            }
        }
    }

    #[test]
    fn newline_mask_marks_newlines() {
        let mut block = [b'a'; 64];
        for i in [0, 5, 63] {
            block[i] = b'\n';
        }
        assert_eq!(newlines(&block), 1 | 1 << 5 | 1 << 63);
    }

    #[test]
    fn hash_lookup_survives_collisions_in_the_table() {
        // Many targets in a small table: probing must find every one.
        let words: Vec<String> = (0..100).map(|i| format!("w{i}")).collect();
        let t = Targets::new(&words).unwrap();
        let data: Vec<u8> = words
            .iter()
            .rev()
            .flat_map(|w| format!("{w}\n").into_bytes())
            .collect();
        let m = sequential(&data, &t);
        assert!(m.iter().all(|offs| offs.len() == 1));
    }

    #[test]
    fn checksum_is_pinned() {
        let spec = KeysSpec {
            size: 100_000,
            ..KeysSpec::default()
        };
        assert_eq!(
            blocks::checksum(&keys(&spec).unwrap()),
            11_040_887_101_172_002_011
        );
    }
}
