//! The text form of keys and values in the streaming contract: [`Text`],
//! and the reversible escaping of byte strings.
//!
//! A line is `key<TAB>value<LF>`, so a key or value may hold neither a tab
//! nor a newline, and engines that read the lines as UTF-8 text (Spark,
//! Python) need valid UTF-8. Byte strings are written as they are, except:
//!
//! | byte(s)                 | written as |
//! |-------------------------|------------|
//! | backslash               | `\\`       |
//! | tab                     | `\t`       |
//! | newline                 | `\n`       |
//! | carriage return         | `\r`       |
//! | a byte not part of valid UTF-8 | `\xHH` (two lower-case hex digits) |
//!
//! [`unescape`] reads `\xHH` for any byte, so a list of byte strings can
//! escape its separator too (a comma as `\x2c`). A key reads only from
//! the text [`escape`] writes for it: one key, one text, so an engine that
//! groups lines by the key's text groups them by key. The text's byte
//! order is not the key's (a backslash sorts before letters): outputs are
//! written in the text's order, the order a shuffle sorts them in.

use crate::key::Bytes;

/// A type with a text form in `key<TAB>value` lines: keys, the partial
/// states `stream map` and `stream combine` write, and the outputs `stream
/// reduce` writes.
///
/// `read_text(write_text(x)) == x`; the text holds no tab and no newline.
///
/// ```
/// use ember::stream::Text;
/// use ember::Bytes;
///
/// let mut line = Vec::new();
/// Bytes::new(b"tab\there").write_text(&mut line);
/// assert_eq!(line, b"tab\\there");
/// assert_eq!(Bytes::read_text(&line), Some(Bytes::new(b"tab\there")));
/// assert_eq!(u64::read_text(b"42"), Some(42));
/// ```
pub trait Text: Sized {
    /// Appends the value's text to `out`.
    fn write_text(&self, out: &mut Vec<u8>);
    /// Reads a value from its whole text; `None` if `text` is not one.
    fn read_text(text: &[u8]) -> Option<Self>;
}

/// Appends `bytes` to `out`, escaped as the module describes, with the
/// bytes of `also` (ASCII separators of a list) written as `\xHH` too.
pub fn escape(bytes: &[u8], also: &[u8], out: &mut Vec<u8>) {
    // Most keys are ASCII words, written as they are: one copy, not a
    // check and a push per byte.
    let plain = |b: &u8| b.is_ascii() && !matches!(b, b'\\' | b'\t' | b'\n' | b'\r');
    if bytes.iter().all(|b| plain(b) && !also.contains(b)) {
        out.extend_from_slice(bytes);
        return;
    }
    let mut rest = bytes;
    while !rest.is_empty() {
        let (valid, bad) = match std::str::from_utf8(rest) {
            Ok(s) => (s.len(), 0),
            Err(e) => (
                e.valid_up_to(),
                e.error_len().unwrap_or(rest.len() - e.valid_up_to()),
            ),
        };
        for &b in &rest[..valid] {
            escape_byte(b, also, out);
        }
        for &b in &rest[valid..valid + bad] {
            hex(b, out);
        }
        rest = &rest[valid + bad..];
    }
}

fn escape_byte(b: u8, also: &[u8], out: &mut Vec<u8>) {
    match b {
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\t' => out.extend_from_slice(b"\\t"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        _ if also.contains(&b) => hex(b, out),
        _ => out.push(b),
    }
}

fn hex(b: u8, out: &mut Vec<u8>) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(&[
        b'\\',
        b'x',
        DIGITS[usize::from(b >> 4)],
        DIGITS[usize::from(b & 15)],
    ]);
}

/// The bytes `text` stands for; `None` if it holds a raw tab or newline, a
/// backslash not followed by `\`, `t`, `n`, `r` or `x` and two hex digits.
pub fn unescape(text: &[u8]) -> Option<Vec<u8>> {
    if memchr::memchr3(b'\\', b'\t', b'\n', text).is_none() {
        return Some(text.to_vec());
    }
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let b = text[i];
        i += 1;
        match b {
            b'\t' | b'\n' => return None,
            b'\\' => {
                let (byte, used) = unescaped(&text[i..])?;
                out.push(byte);
                i += used;
            }
            _ => out.push(b),
        }
    }
    Some(out)
}

/// The byte an escape stands for (the text after its backslash), and how
/// many bytes of text it took.
fn unescaped(after: &[u8]) -> Option<(u8, usize)> {
    match after.first()? {
        b'\\' => Some((b'\\', 1)),
        b't' => Some((b'\t', 1)),
        b'n' => Some((b'\n', 1)),
        b'r' => Some((b'\r', 1)),
        b'x' => {
            let digits = std::str::from_utf8(after.get(1..3)?).ok()?;
            let byte = u8::from_str_radix(digits, 16).ok()?;
            Some((byte, 3))
        }
        _ => None,
    }
}

/// Reads only the text [`escape`] writes (no `\\x41` for `A`, no raw
/// invalid UTF-8), so that a key has one text: lines that a shuffle groups
/// by the key's text are grouped by key.
impl Text for Bytes {
    fn write_text(&self, out: &mut Vec<u8>) {
        escape(self.as_bytes(), b"", out);
    }
    fn read_text(text: &[u8]) -> Option<Self> {
        let bytes = unescape(text)?;
        let mut canonical = Vec::with_capacity(text.len());
        escape(&bytes, b"", &mut canonical);
        (canonical == text).then(|| Bytes::new(&bytes))
    }
}

/// Lists (the state of [`KeepAll`](crate::KeepAll)): the elements' texts
/// joined by commas, each escaped again with its commas as `\x2c` (so a
/// number list reads `1,2,3`). The empty text is one item whose text is
/// empty if the item type reads one, else the empty list.
impl<T: Text> Text for Vec<T> {
    fn write_text(&self, out: &mut Vec<u8>) {
        let mut item = Vec::new();
        for (i, x) in self.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            item.clear();
            x.write_text(&mut item);
            escape(&item, b",", out);
        }
    }
    fn read_text(text: &[u8]) -> Option<Self> {
        if text.is_empty() {
            // One item with empty text (an empty byte string), or none.
            return Some(T::read_text(b"").into_iter().collect());
        }
        text.split(|&b| b == b',')
            .map(|item| T::read_text(&unescape(item)?))
            .collect()
    }
}

/// Numbers: their decimal form (floats: the shortest that reads back to
/// the same value).
macro_rules! text_numbers {
    ($($t:ty),*) => {$(
        impl Text for $t {
            fn write_text(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(self.to_string().as_bytes());
            }
            fn read_text(text: &[u8]) -> Option<Self> {
                std::str::from_utf8(text).ok()?.parse().ok()
            }
        }
    )*};
}

text_numbers!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn escaped(bytes: &[u8], also: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        escape(bytes, also, &mut out);
        out
    }

    #[test]
    fn only_what_breaks_a_line_or_utf8_is_escaped() {
        assert_eq!(escaped(b"plain words", b""), b"plain words");
        assert_eq!(escaped("caf\u{e9}".as_bytes(), b""), "caf\u{e9}".as_bytes());
        assert_eq!(escaped(b"a\tb\nc\rd\\e", b""), b"a\\tb\\nc\\rd\\\\e");
        assert_eq!(escaped(b"\xff\xc3", b""), b"\\xff\\xc3");
        assert_eq!(escaped(b"a,b", b","), b"a\\x2cb");
    }

    #[test]
    fn lists_join_their_items_with_commas() {
        let mut text = Vec::new();
        vec![1u64, 20, 3].write_text(&mut text);
        assert_eq!(text, b"1,20,3");
        assert_eq!(Vec::<u64>::read_text(b"1,20,3"), Some(vec![1, 20, 3]));
        assert_eq!(Vec::<u64>::read_text(b""), Some(vec![]));
        let words = vec![Bytes::new(b"a,b"), Bytes::new(b"c\\d"), Bytes::new(b"")];
        text.clear();
        words.write_text(&mut text);
        assert_eq!(Vec::<Bytes>::read_text(&text), Some(words));
    }

    #[test]
    fn malformed_escapes_are_refused() {
        for bad in [&b"a\\"[..], b"\\q", b"\\x4", b"\\xzz", b"a\tb", b"a\nb"] {
            assert_eq!(unescape(bad), None, "{bad:?}");
        }
        assert_eq!(u64::read_text(b"-1"), None);
        assert_eq!(u64::read_text(b""), None);
    }

    proptest! {
        #[test]
        fn escaping_reverses_and_leaves_no_tab_newline_or_bad_utf8(
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let text = escaped(&bytes, b",");
            prop_assert!(std::str::from_utf8(&text).is_ok());
            prop_assert!(!text.iter().any(|&b| b == b'\t' || b == b'\n' || b == b','));
            prop_assert_eq!(unescape(&text), Some(bytes));
        }

        #[test]
        fn mostly_ascii_text_escapes_only_its_special_bytes(
            bytes in proptest::collection::vec(
                prop::sample::select(b"ab\\\t\n\r,\x01\x7f\xc3\xa9".to_vec()), 0..16),
        ) {
            let text = escaped(&bytes, b",");
            prop_assert!(std::str::from_utf8(&text).is_ok());
            prop_assert!(!text.iter().any(|&b| b == b'\t' || b == b'\n' || b == b','));
            prop_assert_eq!(unescape(&text), Some(bytes.clone()));
            let special = |b: &u8| b"\\\t\n\r,".contains(b) || !b.is_ascii();
            if !bytes.iter().any(special) {
                prop_assert_eq!(text, bytes);
            }
        }

        #[test]
        fn floats_read_back_exactly(x in any::<f64>().prop_filter("not NaN", |x| !x.is_nan())) {
            let mut text = Vec::new();
            x.write_text(&mut text);
            prop_assert_eq!(f64::read_text(&text), Some(x));
        }
    }
}
