//! A panic in the job's record splitter while an in-memory input is cut
//! into splits is an error of the split phase, and the runtime stays usable.

use ember::{Bytes, Emit, Error, Input, Job, Phase, Records, RunOptions, Runtime, Split, Sum};

/// Counts space-separated words; cuts records with the given separator.
struct Words(fn(u8) -> bool);

impl Job for Words {
    type Key = Bytes;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Separator(self.0)
    }

    fn map<E: Emit<Bytes, u64>>(&self, split: Split<'_>, emit: &mut E) {
        for w in split.data.split(|&b| b == b' ').filter(|w| !w.is_empty()) {
            emit.emit(w, 1);
        }
    }

    fn reduce(&self, _key: &Bytes, n: u64) -> u64 {
        n
    }
}

/// A separator that panics on `!`.
fn bang(b: u8) -> bool {
    assert!(b != b'!', "the separator saw '!'");
    b == b' '
}

#[test]
fn a_separator_panic_is_a_split_error() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let mut data = b"ab cd ".repeat(50);
    let opts = RunOptions::default().split_size(16);
    // Planning looks for the first boundary at or after byte 16.
    data[16] = b'!';
    let err = rt
        .run_with(&Words(bang), &Input::bytes(&data), &opts)
        .expect_err("a panicking separator fails the run");
    assert!(
        matches!(
            err,
            Error::Panicked {
                phase: Phase::Split,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "the job's split function panicked: the separator saw '!'"
    );
    // The runtime still works, with the same job on clean input.
    data[16] = b'x';
    let out = rt
        .run_with(&Words(bang), &Input::bytes(&data), &opts)
        .unwrap();
    let total: u64 = out.pairs.iter().map(|p| p.1).sum();
    assert_eq!(total, 100);
}
