//! String match in the streaming contract: `word<TAB>lines`, how many lines
//! of the keys file each target word is (a line's offset in its file is
//! not known to a map task of a split, so the streaming form counts).

use ember::{Bytes, Emit, Job, MapResult, Records, Split, Sum};

use crate::string_match::{Targets, DEFAULT_TARGETS};

/// Counts the lines equal to each target word; every target is listed,
/// with 0 if no line is it.
#[derive(Debug, Clone)]
pub struct TargetLines {
    targets: Targets,
}

impl TargetLines {
    /// The job for `targets`.
    pub fn new(targets: Targets) -> Self {
        TargetLines { targets }
    }

    /// The target words of `args`, or the default ones if none.
    pub(super) fn from_args(args: &[String]) -> Result<Self, String> {
        let targets = match args {
            [] => Targets::new(&DEFAULT_TARGETS),
            words => Targets::new(words),
        };
        targets.map(Self::new).map_err(|e| e.to_string())
    }
}

impl Job for TargetLines {
    type Key = Bytes;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Lines
    }

    fn map<E: Emit<Bytes, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        let words = self.targets.words();
        for w in words {
            emit.emit(&w[..], 0);
        }
        self.targets
            .scan(split.data, 0, |t, _| emit.emit(&words[t as usize][..], 1));
        Ok(())
    }

    fn reduce(&self, _word: &Bytes, lines: u64) -> u64 {
        lines
    }
}
