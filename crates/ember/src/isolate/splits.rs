//! Cutting files into splits at line boundaries, for [`super::run`].

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::Options;
use crate::error::{Error, Result};
use crate::job::Records;
use crate::stream::{MapInput, StreamJob};

/// How a job's input is cut by default: how many splits a worker gets,
/// on average, and how large one may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Share {
    pub(super) per_worker: u64,
    pub(super) max: u64,
}

impl Share {
    /// A split a worker, of up to 256 MiB, for a streamed map with a
    /// reduce: a task's table starts empty and every split writes its
    /// partial aggregate of each distinct key it holds, which the reduce
    /// reads back (measured on word count and the inverted index, two
    /// splits a worker cost more than the evener end saved). Two a worker,
    /// of up to 64 MiB, for the rest: a map that holds its split in memory
    /// (a sort), or a map-only job, whose splits write their own rows and
    /// nothing twice, and whose rows may cost unevenly (PCA's covariance
    /// row `i` is `n - i` products: one split a worker made PCA 1.09x
    /// slower).
    pub(super) fn of(job: &dyn StreamJob) -> Share {
        match (job.map_input(), job.map_only()) {
            (MapInput::Streamed, false) => Share {
                per_worker: 1,
                max: 256 << 20,
            },
            _ => Share {
                per_worker: 2,
                max: 64 << 20,
            },
        }
    }
}

/// The smallest default split: a task must be worth its channel.
const MIN_SPLIT: u64 = 1 << 20;
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
    /// The index of its first line over all the files, if the job numbers
    /// lines ([`number_lines`]).
    pub(super) first_line: Option<u64>,
}

/// `files` cut into splits of about the options' size (by default, as
/// `share` says), each ending at the first boundary at or after its
/// target end: after a newline, at a multiple of a record's size, or, for
/// a job whose map takes its input whole (an image, a block of binary
/// records), at the end of the file; empty files have none.
pub(super) fn cut(
    files: &[PathBuf],
    opts: &Options,
    boundary: Boundary,
    share: Share,
) -> Result<Vec<Split>> {
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
        (total / (opts.workers as u64 * share.per_worker).max(1)).clamp(MIN_SPLIT, share.max)
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
                first_line: None,
            });
            start = end;
        }
    }
    Ok(splits)
}

/// Numbers the lines of the files that `splits` (all of their splits, in
/// order, each file's first at `header`) cut: sets each split's
/// `first_line` to the index of its first line over all the files, and
/// returns the lines of all the files (a last line without a newline
/// counts; an empty file has none). One pass of newline counting over
/// the input, in the page cache's pages (memory-mapped).
pub(super) fn number_lines(splits: &mut [Split], header: u64) -> Result<u64> {
    let mut before = 0; // lines of the files before this one
    let mut file: Option<Counter> = None;
    for split in splits.iter_mut() {
        if split.start == header {
            before += file.take().map_or(Ok(0), Counter::lines)?;
            file = Some(Counter::open(&split.path, header)?);
        }
        let Some(counter) = &mut file else {
            return Err(Error::Config("splits out of file order".into()));
        };
        split.first_line = Some(before + counter.newlines_before(split.start)?);
    }
    Ok(before + file.map_or(Ok(0), Counter::lines)?)
}

/// Bytes read at a time while counting a file's lines.
const COUNT_CHUNK: u64 = 1 << 20;

/// A file's newlines past its header, counted as far as asked, by reads
/// of up to [`COUNT_CHUNK`] bytes (a memory map of the whole file costs a
/// page fault per few pages, several times the reads on a VM).
struct Counter<'a> {
    path: &'a Path,
    file: File,
    len: u64,
    /// Bytes counted, from the file's start (the header is skipped).
    counted: u64,
    newlines: u64,
    /// The last byte counted.
    last: Option<u8>,
    buf: Vec<u8>,
}

impl<'a> Counter<'a> {
    fn open(path: &'a Path, header: u64) -> Result<Counter<'a>> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let counted = header.min(len);
        Ok(Counter {
            path,
            file,
            len,
            counted,
            newlines: 0,
            last: None,
            buf: vec![0; (len - counted).min(COUNT_CHUNK) as usize],
        })
    }

    /// The newlines before byte `at` (past the header).
    fn newlines_before(&mut self, at: u64) -> Result<u64> {
        let at = at.min(self.len);
        while self.counted < at {
            let want = (at - self.counted).min(self.buf.len() as u64) as usize;
            let got = self
                .file
                .read_at(&mut self.buf[..want], self.counted)
                .map_err(|e| Error::io(self.path, e))?;
            if got == 0 {
                break; // the file shrank: the workers will say so
            }
            self.newlines += count_newlines(&self.buf[..got]);
            self.last = Some(self.buf[got - 1]);
            self.counted += got as u64;
        }
        Ok(self.newlines)
    }

    /// The file's lines past its header: its newlines, and a last line
    /// without one.
    fn lines(mut self) -> Result<u64> {
        let newlines = self.newlines_before(self.len)?;
        Ok(newlines + u64::from(self.last.is_some_and(|b| b != b'\n')))
    }
}

fn count_newlines(data: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', data).count() as u64
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

    const SHARE: Share = Share {
        per_worker: 1,
        max: 64 << 20,
    };

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
            let splits = cut(&[a.clone(), empty.clone()], &opts, Boundary::Line, SHARE).unwrap();
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
    fn the_default_size_gives_each_worker_its_share_of_splits() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        // 8 MiB of 1 KiB lines.
        let line = [vec![b'x'; 1023], vec![b'\n']].concat();
        std::fs::write(&a, line.repeat(8 << 10)).unwrap();
        for (workers, per_worker, want) in [(2, 1, 2), (2, 2, 4), (4, 1, 4), (16, 1, 8)] {
            let opts = Options {
                workers,
                ..Options::default()
            };
            let share = Share {
                per_worker,
                max: 64 << 20,
            };
            let splits = cut(std::slice::from_ref(&a), &opts, Boundary::Line, share);
            // No split below 1 MiB: 16 workers share 8.
            assert_eq!(splits.unwrap().len(), want, "{workers} x {per_worker}");
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
            let splits = cut(
                std::slice::from_ref(&a),
                &opts,
                Boundary::Multiple(4),
                SHARE,
            )
            .unwrap();
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
            let splits = cut(&files, &opts, Boundary::Multiple(20), SHARE).unwrap();
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
        let splits = cut(&files, &opts, Boundary::File, SHARE).unwrap();
        let whole = |path: &PathBuf, end| Split {
            path: path.clone(),
            start: 0,
            end,
            first_line: None,
        };
        assert_eq!(splits, vec![whole(&a, 17), whole(&b, 300)]);
    }

    #[test]
    fn lines_are_numbered_across_files_from_each_split_start() {
        let dir = tempfile::tempdir().unwrap();
        let texts: [&[u8]; 4] = [
            b"one\ntwo three\n\nfour\nlast line no newline",
            b"",
            b"x\ny\n",
            b"z",
        ];
        let files: Vec<PathBuf> = (0..texts.len())
            .map(|i| dir.path().join(i.to_string()))
            .collect();
        for (f, t) in files.iter().zip(texts) {
            std::fs::write(f, t).unwrap();
        }
        let newlines = |t: &[u8]| t.iter().filter(|&&b| b == b'\n').count() as u64;
        for size in 1..12 {
            let opts = Options {
                split_size: Some(size),
                ..Options::default()
            };
            let mut splits = cut(&files, &opts, Boundary::Line, SHARE).unwrap();
            assert_eq!(number_lines(&mut splits, 0).unwrap(), 8, "size {size}");
            for s in &splits {
                let i = files.iter().position(|f| *f == s.path).unwrap();
                let before = [0, 5, 5, 7][i];
                let want = before + newlines(&texts[i][..s.start as usize]);
                assert_eq!(s.first_line, Some(want), "size {size}, {s:?}");
            }
        }
    }
}
