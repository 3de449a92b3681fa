//! Cutting files into splits at line boundaries, for [`super::run`].

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::Options;
use crate::error::{Error, Result};
use crate::job::Records;
use crate::stream::{MapInput, StreamJob};

/// Splits a worker should get, on average, so that the last ones end
/// evenly.
const SPLITS_PER_WORKER: u64 = 4;
/// The default split size's bounds: a process per split must be worth its
/// start.
const MIN_SPLIT: u64 = 1 << 20;
const MAX_SPLIT: u64 = 64 << 20;
/// Bytes read at a time while looking for a split's end.
const PROBE: usize = 64 << 10;

/// Where a split of a file may end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Boundary {
    /// After a newline.
    Line,
    /// At a multiple of this many bytes (fixed-size records).
    Multiple(u64),
    /// Only at the end of the file: a file is one split.
    File,
}

impl Boundary {
    /// The boundary of `job`'s input: its fixed-size records (a job whose
    /// map reads its input whole then reads a block of whole records),
    /// else a whole file for a job whose map reads it whole, else a line.
    pub(super) fn of(job: &dyn StreamJob) -> Boundary {
        match (job.map_input(), job.records()) {
            (_, Records::Whole) => Boundary::File,
            (_, Records::Fixed(size)) => Boundary::Multiple(size.max(1) as u64),
            (MapInput::Whole, _) => Boundary::File,
            _ => Boundary::Line,
        }
    }
}

/// A byte range of a file that starts at a boundary and ends at the next
/// one at or after its target end (or at the end of the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Split {
    pub(super) path: PathBuf,
    pub(super) start: u64,
    pub(super) end: u64,
}

/// `files` cut into splits of about the options' size, each ending at the
/// first boundary at or after its target end: after a newline, at a
/// multiple of a record's size, or, for a job whose map takes its input
/// whole (an image, a block of binary records), at the end of the file;
/// empty files have none.
pub(super) fn cut(files: &[PathBuf], opts: &Options, boundary: Boundary) -> Result<Vec<Split>> {
    let mut sized = Vec::with_capacity(files.len());
    for path in files {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let meta = file.metadata().map_err(|e| Error::io(path, e))?;
        if meta.is_dir() {
            return Err(Error::IsDirectory { path: path.clone() });
        }
        sized.push((path, file, meta.len()));
    }
    let total: u64 = sized
        .iter()
        .map(|(_, _, len)| len.saturating_sub(opts.header))
        .sum();
    let size = match boundary {
        Boundary::File => Some(u64::MAX),
        _ => opts.split_size,
    };
    let size = size.unwrap_or_else(|| {
        (total / (opts.workers as u64 * SPLITS_PER_WORKER)).clamp(MIN_SPLIT, MAX_SPLIT)
    });
    if size == 0 {
        return Err(Error::Config("split size must be at least 1 byte".into()));
    }
    let mut splits = Vec::new();
    for (path, file, len) in sized {
        let mut start = opts.header;
        while start < len {
            let end = match (start.saturating_add(size), boundary) {
                (target, _) if target >= len => len,
                (target, Boundary::Multiple(record)) => {
                    let whole = target - (target - opts.header) % record;
                    whole.max(start + record).min(len)
                }
                (target, _) => line_end(path, &file, target - 1, len)?,
            };
            splits.push(Split {
                path: path.clone(),
                start,
                end,
            });
            start = end;
        }
    }
    Ok(splits)
}

/// Where the line holding byte `from` ends: after its newline, or `len`.
fn line_end(path: &Path, file: &File, mut from: u64, len: u64) -> Result<u64> {
    let mut buf = vec![0; PROBE];
    while from < len {
        let n = file
            .read_at(&mut buf, from)
            .map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
            return Ok(from + i as u64 + 1);
        }
        from += n as u64;
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_end_after_a_newline_and_cover_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::write(&a, b"one\ntwo three\n\nfour\nlast line no newline").unwrap();
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        for size in 1..12 {
            let opts = Options {
                split_size: Some(size),
                ..Options::default()
            };
            let splits = cut(&[a.clone(), empty.clone()], &opts, Boundary::Line).unwrap();
            let text = std::fs::read(&a).unwrap();
            let mut at = 0;
            for s in &splits {
                assert_eq!((&s.path, s.start), (&a, at), "size {size}");
                assert!(s.end > s.start);
                assert!(s.end == text.len() as u64 || text[s.end as usize - 1] == b'\n');
                at = s.end;
            }
            assert_eq!(at, text.len() as u64);
        }
    }

    #[test]
    fn fixed_size_records_are_never_cut() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::write(&a, [b'\n'; 23]).unwrap();
        for size in 1..30 {
            let opts = Options {
                split_size: Some(size),
                ..Options::default()
            };
            let splits = cut(std::slice::from_ref(&a), &opts, Boundary::Multiple(4)).unwrap();
            let mut at = 0;
            for s in &splits {
                assert_eq!(s.start, at, "size {size}");
                assert!(s.end > s.start && (s.end % 4 == 0 || s.end == 23));
                at = s.end;
            }
            assert_eq!(at, 23);
        }
    }

    #[test]
    fn records_count_from_the_end_of_a_header_that_no_split_holds() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::write(&a, [0u8; 24 + 5 * 20]).unwrap();
        let short = dir.path().join("short");
        std::fs::write(&short, [0u8; 10]).unwrap();
        for size in 1..130 {
            let opts = Options {
                split_size: Some(size),
                header: 24,
                ..Options::default()
            };
            let files = [a.clone(), short.clone()];
            let splits = cut(&files, &opts, Boundary::Multiple(20)).unwrap();
            let mut at = 24;
            for s in &splits {
                assert_eq!((&s.path, s.start), (&a, at), "size {size}");
                assert!(s.end > s.start && (s.end - 24) % 20 == 0, "size {size}");
                at = s.end;
            }
            assert_eq!(at, 124);
        }
    }

    #[test]
    fn a_whole_input_job_gets_each_file_as_one_split() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, empty) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("e"),
        );
        std::fs::write(&a, b"BM\n\nbinary\nbytes\n").unwrap();
        std::fs::write(&b, [0u8; 300]).unwrap();
        std::fs::write(&empty, b"").unwrap();
        let opts = Options {
            split_size: Some(4),
            ..Options::default()
        };
        let files = [a.clone(), empty, b.clone()];
        let splits = cut(&files, &opts, Boundary::File).unwrap();
        let whole = |path: &PathBuf, end| Split {
            path: path.clone(),
            start: 0,
            end,
        };
        assert_eq!(splits, vec![whole(&a, 17), whole(&b, 300)]);
    }
}
