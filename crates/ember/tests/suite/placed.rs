//! A job whose keys say where each word was read: shared by the tests of
//! inputs read in parts (several readers, compressed files).

use ember::{Bytes, Emit, Job, MapResult, Records, Split, Sum};

/// Counts each word with the part it is in and its offset there: any
/// split cut, part number or offset that differs, or any byte decoded
/// wrong or out of order, shows as a different key.
pub(crate) struct Placed;

impl Job for Placed {
    type Key = Bytes;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Separator(|b| b == b' ' || b == b'\n')
    }
    fn map<E: Emit<Bytes, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        let mut at = 0;
        for w in split.data.split(|&b| b == b' ' || b == b'\n') {
            if !w.is_empty() {
                let offset = split.offset + at as u64;
                let key = format!("{}:{offset}:{}", split.part, String::from_utf8_lossy(w));
                emit.emit(key.as_bytes(), 1);
            }
            at += w.len() + 1;
        }
        Ok(())
    }
    fn reduce(&self, _key: &Bytes, n: u64) -> u64 {
        n
    }
}
