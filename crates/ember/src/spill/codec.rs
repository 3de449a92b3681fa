//! How a job's keys and states are written to a spill file: the codec,
//! and the compression of its runs.

use super::Encode;

/// How a job's keys `K` and combiner states `S` are written to a spill file
/// and read back. Made from the types' [`Encode`] implementations:
///
/// ```
/// use ember::spill::Codec;
/// use ember::Bytes;
///
/// let codec: Codec<Bytes, u64> = Codec::new();
/// # let _ = codec;
/// ```
pub struct Codec<K, S> {
    pub(super) encode: fn(&K, &S, &mut Vec<u8>),
    pub(super) decode: fn(&mut &[u8]) -> Option<(K, S)>,
    pub(super) prefix: Option<fn(&K) -> u64>,
    pub(super) compression: Compression,
}

/// How a spill file's runs are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// The records as encoded.
    #[default]
    None,
    /// Blocks of records of up to [`BLOCK`] bytes, each compressed with
    /// LZ4 (`lz4_flex`): fewer bytes to write and read back, for some CPU
    /// time on both sides. Pays where the records repeat bytes and the
    /// disk, not the CPU, is the limit.
    Lz4,
}

/// Bytes of records per compressed block of a run ([`Compression::Lz4`]):
/// LZ4's window.
pub const BLOCK: usize = 64 << 10;

/// Bytes of a compressed block's header: its compressed and its
/// uncompressed length, each a little-endian `u32`.
pub(super) const BLOCK_HEADER: usize = 8;

impl<K: Encode, S: Encode> Codec<K, S> {
    /// The codec of the types' [`Encode`] implementations.
    pub fn new() -> Self {
        Codec {
            encode: |k, s, out| {
                k.encode(out);
                s.encode(out);
            },
            decode: |input| Some((K::decode(input)?, S::decode(input)?)),
            prefix: None,
            compression: Compression::None,
        }
    }
}

impl<K, S> Codec<K, S> {
    /// The codec, sorting a spill by `prefix` of each key first: a word
    /// whose order agrees with the keys' (`a < b` implies `prefix(a) <=
    /// prefix(b)`), such as a key's first eight bytes. A spill is then
    /// sorted as (prefix, index) pairs, keys compared only where prefixes
    /// tie, and its entries are written in that order: entries larger
    /// than a few words are not moved by the sort.
    ///
    /// ```
    /// use ember::spill::Codec;
    ///
    /// let codec: Codec<u128, [u8; 90]> = Codec::new().prefix(|k| (k >> 64) as u64);
    /// # let _ = codec;
    /// ```
    pub fn prefix(self, prefix: fn(&K) -> u64) -> Self {
        Codec {
            prefix: Some(prefix),
            ..self
        }
    }

    /// The codec, its runs stored as `compression` says.
    pub fn compression(self, compression: Compression) -> Self {
        Codec {
            compression,
            ..self
        }
    }
}

impl<K: Encode, S: Encode> Default for Codec<K, S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K, S> Clone for Codec<K, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K, S> Copy for Codec<K, S> {}

impl<K, S> std::fmt::Debug for Codec<K, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Codec")
    }
}
