//! String match in the streaming contract: `word<TAB>lines`, how many lines
//! of the keys file each target word is; and, with the lines' offsets,
//! `word<TAB>lines:offset,offset,...` with the first `--show N` of them
//! (`string-match-offsets`), a map task adding its split's start in the
//! file (Hadoop Streaming's `mapreduce_map_input_start`) to the offsets
//! it finds.

use ember::stream::Text;
use ember::{Bytes, Combiner, Emit, Job, MapResult, Records, Split, Sum};

use super::HADOOP_INPUT_START;
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

/// A target's matching lines: how many, and the byte offsets of the first
/// of them in their file, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Lines that are the target.
    pub lines: u64,
    /// The offsets of the first lines (at most the job's `--show`).
    pub first: Vec<u64>,
}

/// `lines:offset,offset,...`.
impl Text for Found {
    fn write_text(&self, out: &mut Vec<u8>) {
        self.lines.write_text(out);
        out.push(b':');
        self.first.write_text(out);
    }
    fn read_text(text: &[u8]) -> Option<Self> {
        let colon = text.iter().position(|&b| b == b':')?;
        Some(Found {
            lines: u64::read_text(&text[..colon])?,
            first: Vec::read_text(&text[colon + 1..])?,
        })
    }
}

/// Adds the line counts and keeps the `show` smallest offsets.
#[derive(Debug, Clone, Copy, Default)]
pub struct FirstOffsets {
    show: usize,
}

impl Combiner<Found> for FirstOffsets {
    type State = Found;
    type Reduced<'a> = Found;
    fn init(&self, v: Found) -> Found {
        v
    }
    fn add(&self, state: &mut Found, v: Found) {
        self.merge(state, v);
    }
    fn merge(&self, state: &mut Found, other: Found) {
        state.lines += other.lines;
        state.first.extend(other.first);
        state.first.sort_unstable();
        state.first.truncate(self.show);
    }
    fn finish<O>(&self, state: Found, reduce: impl FnOnce(Found) -> O) -> O {
        reduce(state)
    }
}

/// Counts the lines equal to each target word and keeps the offsets of
/// the first `show`; every target is listed.
#[derive(Debug, Clone)]
pub struct TargetOffsets {
    targets: Targets,
    show: usize,
}

impl TargetOffsets {
    /// From `--show N [WORD...]` (the default words if none).
    pub(super) fn from_args(args: &[String]) -> Result<Self, String> {
        let (show, words) = match args {
            [flag, n, words @ ..] if flag == "--show" => (n, words),
            _ => {
                return Err(format!(
                    "expected --show N [WORD...], got '{}'",
                    args.join(" ")
                ))
            }
        };
        let show = show
            .parse()
            .map_err(|_| format!("--show: '{show}' is not a count"))?;
        let targets = TargetLines::from_args(words)?.targets;
        Ok(TargetOffsets { targets, show })
    }
}

impl Job for TargetOffsets {
    type Key = Bytes;
    type Value = Found;
    type Combiner = FirstOffsets;
    type Out = Found;

    fn records(&self) -> Records {
        Records::Lines
    }

    fn combiner(&self) -> FirstOffsets {
        FirstOffsets { show: self.show }
    }

    /// Offsets are in the file: the split's own plus its start in the file,
    /// which a map task of a split has in its environment.
    fn map<E: Emit<Bytes, Found>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        let start = std::env::var(HADOOP_INPUT_START).ok();
        let base = start.and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
        let words = self.targets.words();
        for w in words {
            emit.emit(
                &w[..],
                Found {
                    lines: 0,
                    first: Vec::new(),
                },
            );
        }
        let show = self.show > 0;
        self.targets.scan(split.data, base + split.offset, |t, at| {
            let first = if show { vec![at] } else { Vec::new() };
            emit.emit(&words[t as usize][..], Found { lines: 1, first });
        });
        Ok(())
    }

    fn reduce(&self, _word: &Bytes, found: Found) -> Found {
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn found_lines_read_back_their_text_and_keep_the_first_offsets() {
        let found = Found {
            lines: 3,
            first: vec![0, 17],
        };
        let mut text = Vec::new();
        found.write_text(&mut text);
        assert_eq!(text, b"3:0,17");
        assert_eq!(Found::read_text(&text), Some(found.clone()));
        let none = Found {
            lines: 0,
            first: Vec::new(),
        };
        assert_eq!(Found::read_text(b"0:"), Some(none));
        let mut state = found;
        FirstOffsets { show: 2 }.merge(
            &mut state,
            Found {
                lines: 2,
                first: vec![5, 40],
            },
        );
        assert_eq!((state.lines, state.first), (5, vec![0, 5]));
    }
}
