//! The byte form of spilled keys and combiner states: [`Encode`], and its
//! implementations for the key and state types ember ships.
//!
//! Integers are little-endian at their full width; lengths (of byte
//! strings, strings and vectors) are LEB128 varints, so a short word costs
//! its bytes and one more.

use crate::key::Bytes;

/// A type that can be written to a spill file and read back: keys and
/// combiner states of jobs that spill (see [`Codec`](super::Codec)).
///
/// `decode` reads one value from the front of `input` and advances it past
/// what it read; it returns `None` when `input` does not start with a whole
/// value (a spill file that was damaged). `decode(encode(x)) == x`.
///
/// ```
/// use ember::spill::Encode;
///
/// #[derive(Debug, PartialEq)]
/// struct Point { x: i32, y: i32 }
///
/// impl Encode for Point {
///     fn encode(&self, out: &mut Vec<u8>) {
///         self.x.encode(out);
///         self.y.encode(out);
///     }
///     fn decode(input: &mut &[u8]) -> Option<Self> {
///         Some(Point { x: i32::decode(input)?, y: i32::decode(input)? })
///     }
/// }
///
/// let mut buf = Vec::new();
/// Point { x: -1, y: 7 }.encode(&mut buf);
/// assert_eq!(Point::decode(&mut &buf[..]), Some(Point { x: -1, y: 7 }));
/// ```
pub trait Encode: Sized {
    /// Appends the value's bytes to `out`.
    fn encode(&self, out: &mut Vec<u8>);
    /// Reads a value from the front of `input`, advancing it.
    fn decode(input: &mut &[u8]) -> Option<Self>;
}

/// Appends `n` as a LEB128 varint.
pub fn encode_len(n: usize, out: &mut Vec<u8>) {
    let mut n = n as u64;
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Reads a LEB128 varint written by [`encode_len`].
pub fn decode_len(input: &mut &[u8]) -> Option<usize> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = input.split_first()?;
        *input = rest;
        n |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return usize::try_from(n).ok();
        }
    }
    None
}

/// Takes `n` bytes from the front of `input`.
fn take<'a>(input: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if input.len() < n {
        return None;
    }
    let (head, rest) = input.split_at(n);
    *input = rest;
    Some(head)
}

/// Integers and floats: their little-endian bytes.
macro_rules! encode_numbers {
    ($($t:ty),*) => {$(
        impl Encode for $t {
            #[inline]
            fn encode(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn decode(input: &mut &[u8]) -> Option<Self> {
                let bytes = take(input, std::mem::size_of::<$t>())?;
                Some(<$t>::from_le_bytes(bytes.try_into().ok()?))
            }
        }
    )*};
}

encode_numbers!(u8, u16, u32, u64, u128, i8, i16, i32, i64, i128, f32, f64);

impl Encode for usize {
    fn encode(&self, out: &mut Vec<u8>) {
        (*self as u64).encode(out);
    }
    fn decode(input: &mut &[u8]) -> Option<Self> {
        usize::try_from(u64::decode(input)?).ok()
    }
}

impl Encode for isize {
    fn encode(&self, out: &mut Vec<u8>) {
        (*self as i64).encode(out);
    }
    fn decode(input: &mut &[u8]) -> Option<Self> {
        isize::try_from(i64::decode(input)?).ok()
    }
}

impl Encode for bool {
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }
    fn decode(input: &mut &[u8]) -> Option<Self> {
        match u8::decode(input)? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
}

impl Encode for char {
    fn encode(&self, out: &mut Vec<u8>) {
        u32::from(*self).encode(out);
    }
    fn decode(input: &mut &[u8]) -> Option<Self> {
        char::from_u32(u32::decode(input)?)
    }
}

impl Encode for () {
    fn encode(&self, _out: &mut Vec<u8>) {}
    fn decode(_input: &mut &[u8]) -> Option<Self> {
        Some(())
    }
}

impl Encode for Bytes {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) {
        encode_len(self.as_bytes().len(), out);
        out.extend_from_slice(self.as_bytes());
    }
    #[inline]
    fn decode(input: &mut &[u8]) -> Option<Self> {
        let n = decode_len(input)?;
        Some(Bytes::new(take(input, n)?))
    }
}

impl Encode for String {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_len(self.len(), out);
        out.extend_from_slice(self.as_bytes());
    }
    fn decode(input: &mut &[u8]) -> Option<Self> {
        let n = decode_len(input)?;
        String::from_utf8(take(input, n)?.to_vec()).ok()
    }
}

impl<const N: usize> Encode for [u8; N] {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }
    fn decode(input: &mut &[u8]) -> Option<Self> {
        take(input, N)?.try_into().ok()
    }
}

impl<T: Encode> Encode for Vec<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_len(self.len(), out);
        for v in self {
            v.encode(out);
        }
    }
    fn decode(input: &mut &[u8]) -> Option<Self> {
        let n = decode_len(input)?;
        // Every value takes at least a byte on disk, except zero-sized
        // ones: a damaged length cannot make this allocate more than the
        // bytes left.
        let mut v = Vec::with_capacity(n.min(input.len()));
        for _ in 0..n {
            v.push(T::decode(input)?);
        }
        Some(v)
    }
}

impl<A: Encode, B: Encode> Encode for (A, B) {
    fn encode(&self, out: &mut Vec<u8>) {
        self.0.encode(out);
        self.1.encode(out);
    }
    fn decode(input: &mut &[u8]) -> Option<Self> {
        Some((A::decode(input)?, B::decode(input)?))
    }
}

impl<A: Encode, B: Encode, C: Encode> Encode for (A, B, C) {
    fn encode(&self, out: &mut Vec<u8>) {
        self.0.encode(out);
        self.1.encode(out);
        self.2.encode(out);
    }
    fn decode(input: &mut &[u8]) -> Option<Self> {
        Some((A::decode(input)?, B::decode(input)?, C::decode(input)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip<T: Encode + PartialEq + std::fmt::Debug>(x: T) {
        let mut buf = Vec::new();
        x.encode(&mut buf);
        let mut rest = &buf[..];
        assert_eq!(T::decode(&mut rest).as_ref(), Some(&x));
        assert!(rest.is_empty(), "{x:?} left {} bytes", rest.len());
        // Every strict prefix is refused, never misread.
        for cut in 0..buf.len() {
            assert!(T::decode(&mut &buf[..cut]).is_none(), "{x:?} cut at {cut}");
        }
    }

    proptest! {
        #[test]
        fn values_read_back_as_written(
            n in any::<u64>(),
            i in any::<i32>(),
            s in proptest::collection::vec(any::<u8>(), 0..300),
            words in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..20), 0..10),
            text in ".{0,40}",
        ) {
            round_trip(n);
            round_trip(i);
            round_trip(Bytes::new(&s));
            round_trip(s.clone());
            round_trip(text);
            round_trip((n, Bytes::new(&s)));
            round_trip((i, n, words.iter().map(|w| Bytes::new(w)).collect::<Vec<_>>()));
            round_trip(n as usize);
        }
    }

    #[test]
    fn lengths_are_varints() {
        for n in [0, 1, 127, 128, 300, 1 << 20, usize::MAX] {
            let mut buf = Vec::new();
            encode_len(n, &mut buf);
            assert_eq!(
                buf.len(),
                (64 - (n as u64).leading_zeros() as usize)
                    .div_ceil(7)
                    .max(1)
            );
            assert_eq!(decode_len(&mut &buf[..]), Some(n));
        }
    }

    #[test]
    fn a_damaged_length_does_not_allocate_it() {
        let mut buf = Vec::new();
        encode_len(usize::MAX >> 1, &mut buf);
        buf.push(1);
        assert_eq!(Vec::<u64>::decode(&mut &buf[..]), None);
    }
}
