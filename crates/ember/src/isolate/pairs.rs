//! A channel's pairs in either form ([`Form`]): where each ends, and its
//! key's text, the order of the channels and of the reduce's input. A
//! line is `key<TAB>value<LF>`; a record is
//! [`crate::stream::Record`]'s framing.

use crate::stream::{Form, Record};

/// The pair at the front of some bytes: its key's text and its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Pair<'a> {
    pub(super) key: &'a [u8],
    pub(super) len: usize,
}

/// The pair at the front of `rest` (not empty), in `form`; `None` for a
/// record cut short. A line's end is past its newline (or the end of
/// `rest`).
pub(super) fn first(form: Form, rest: &[u8]) -> Option<Pair<'_>> {
    match form {
        Form::Text => {
            let len = memchr::memchr(b'\n', rest).map_or(rest.len(), |i| i + 1);
            let key_end = memchr::memchr2(b'\t', b'\n', rest).unwrap_or(rest.len());
            Some(Pair {
                key: &rest[..key_end],
                len,
            })
        }
        Form::Binary => {
            let (record, after) = Record::split_first(rest)?;
            Some(Pair {
                key: record.key,
                len: rest.len() - after.len(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::push_record;

    #[test]
    fn lines_end_past_their_newline_and_key_at_their_tab() {
        let pair = |t: &'static str| first(Form::Text, t.as_bytes()).unwrap();
        assert_eq!(pair("ab\t1\ncd\t2\n"), Pair { key: b"ab", len: 5 });
        assert_eq!(pair("ab\t1"), Pair { key: b"ab", len: 4 });
        assert_eq!(pair("ab\ncd\t2"), Pair { key: b"ab", len: 3 });
    }

    #[test]
    fn records_end_past_their_value() {
        let mut bytes = Vec::new();
        push_record(&mut bytes, &7u32, &vec![1u64; 20]);
        let whole = bytes.len();
        push_record(&mut bytes, &8u32, &1u8);
        let pair = first(Form::Binary, &bytes).unwrap();
        assert_eq!((pair.key, pair.len), (&b"7"[..], whole));
        assert_eq!(first(Form::Binary, &bytes[..whole - 1]), None);
    }
}
