//! The text corpus generator: lines of words drawn from a Zipf-distributed
//! vocabulary, the input shape of word count and inverted index
//! (`../shared/WORKLOADS.md`).
//!
//! Reproducible: the same spec gives the same bytes, whatever the thread
//! count. The output is cut into 1 MiB blocks, each generated from its own
//! random stream seeded by `(seed, block index)`, in parallel.

use std::io::{self, Write};

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::blocks;

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct TextSpec {
    /// Exact output size in bytes.
    pub size: u64,
    /// Distinct words in the vocabulary.
    pub vocab: usize,
    /// Zipf exponent of word frequencies (1.0: the k-th word is k times
    /// rarer than the first).
    pub zipf: f64,
    /// Random seed.
    pub seed: u64,
}

impl Default for TextSpec {
    /// The word count shape of WORKLOADS.md: 256 MiB, 1M words, Zipf 1.0.
    fn default() -> Self {
        TextSpec {
            size: 256 << 20,
            vocab: 1_000_000,
            zipf: 1.0,
            seed: 7,
        }
    }
}

const BLOCK: u64 = 1 << 20;
/// Guide-table buckets for inverse-CDF sampling.
const GUIDE: usize = 1 << 16;

/// A vocabulary and its Zipf sampler.
struct Vocab {
    words: Vec<Vec<u8>>,
    cdf: Vec<f64>,
    guide: Vec<u32>,
}

/// The random stream `stream` of `seed`: streams are independent, so blocks of
/// output can be generated in parallel and still be reproducible.
pub(crate) fn rng_for(seed: u64, stream: u64) -> Xoshiro256PlusPlus {
    let mut r = Xoshiro256PlusPlus::seed_from_u64(seed);
    for _ in 0..stream % 64 {
        r.jump();
    }
    Xoshiro256PlusPlus::seed_from_u64(r.gen::<u64>() ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

impl Vocab {
    fn new(spec: &TextSpec) -> Vocab {
        let mut r = rng_for(spec.seed, u64::MAX);
        let words = (0..spec.vocab.max(1))
            .map(|_| {
                // Lengths 2..=13, mean about 7.5, like English text.
                let len = 2 + r.gen_range(0..5) + r.gen_range(0..5) + r.gen_range(0..4);
                (0..len).map(|_| b'a' + r.gen_range(0..26u8)).collect()
            })
            .collect::<Vec<Vec<u8>>>();
        let mut cdf = Vec::with_capacity(words.len());
        let mut total = 0.0;
        for k in 1..=words.len() {
            total += 1.0 / (k as f64).powf(spec.zipf);
            cdf.push(total);
        }
        for c in &mut cdf {
            *c /= total;
        }
        let mut guide = Vec::with_capacity(GUIDE);
        let mut i = 0;
        for g in 0..GUIDE {
            let u = g as f64 / GUIDE as f64;
            while cdf[i] < u {
                i += 1;
            }
            guide.push(i as u32);
        }
        Vocab { words, cdf, guide }
    }

    fn sample(&self, r: &mut Xoshiro256PlusPlus) -> &[u8] {
        let u: f64 = r.gen();
        let mut i = self.guide[(u * GUIDE as f64) as usize] as usize;
        while self.cdf[i] < u && i + 1 < self.cdf.len() {
            i += 1;
        }
        &self.words[i]
    }

    fn block(&self, seed: u64, index: u64, len: usize) -> Vec<u8> {
        let mut r = rng_for(seed, index);
        let mut out = Vec::with_capacity(len + 256);
        while out.len() < len {
            let n = r.gen_range(8..=16);
            for w in 0..n {
                if w > 0 {
                    out.push(b' ');
                }
                out.extend_from_slice(self.sample(&mut r));
            }
            out.push(b'\n');
        }
        out.truncate(len);
        if let Some(last) = out.last_mut() {
            *last = b'\n';
        }
        out
    }
}

/// Writes the corpus to `out`, calling `progress(bytes_written)` as it goes.
pub fn write_text(
    spec: &TextSpec,
    out: &mut impl Write,
    progress: impl FnMut(u64),
) -> io::Result<()> {
    let vocab = Vocab::new(spec);
    blocks::write_blocks(spec.size, BLOCK, out, progress, |b, len| {
        vocab.block(spec.seed, b, len)
    })
}

/// The corpus in memory (for tests and small inputs).
pub fn text(spec: &TextSpec) -> Vec<u8> {
    let mut v = Vec::with_capacity(spec.size as usize);
    write_text(spec, &mut v, |_| {}).expect("writing to memory cannot fail");
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fnv(data: &[u8]) -> u64 {
        data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        })
    }

    #[test]
    fn same_spec_same_bytes_and_exact_size() {
        let spec = TextSpec {
            size: 3 * BLOCK + 12345,
            vocab: 5000,
            zipf: 1.0,
            seed: 7,
        };
        let a = text(&spec);
        assert_eq!(a.len() as u64, spec.size);
        assert_eq!(a, text(&spec));
        assert!(a
            .iter()
            .all(|&b| b.is_ascii_lowercase() || b == b' ' || b == b'\n'));
        let other = text(&TextSpec { seed: 8, ..spec });
        assert_ne!(a, other);
    }

    /// Pins the generator's output: a change to it changes every benchmark
    /// input, so it must be deliberate (update the checksum with it).
    #[test]
    fn checksum_is_pinned() {
        let spec = TextSpec {
            size: 100_000,
            vocab: 1000,
            zipf: 1.0,
            seed: 7,
        };
        assert_eq!(fnv(&text(&spec)), CHECKSUM_100K_V1000_S7);
    }

    const CHECKSUM_100K_V1000_S7: u64 = 12_027_621_907_810_478_342;

    #[test]
    fn frequencies_follow_zipf() {
        let spec = TextSpec {
            size: 2 << 20,
            vocab: 1000,
            zipf: 1.0,
            seed: 1,
        };
        let vocab = Vocab::new(&spec);
        let counts = crate::wordcount::sequential(&[&text(&spec)]);
        let count = |w: &[u8]| counts.iter().find(|(k, _)| k == w).map_or(0, |c| c.1);
        let (first, tenth) = (count(&vocab.words[0]), count(&vocab.words[9]));
        let ratio = first as f64 / tenth as f64;
        assert!((7.0..13.0).contains(&ratio), "rank1/rank10 = {ratio}");
    }
}
