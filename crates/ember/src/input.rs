//! Input: byte slices, files (memory-mapped or streamed) and readers, and
//! their cutting into splits at record boundaries.
//!
//! Two ways in:
//!
//! - **in memory** (byte slices, owned buffers, memory-mapped files): the
//!   whole input is addressable; splits are planned over it up front.
//! - **streamed** (readers such as standard input, files read with plain
//!   `read` calls): the input is read in ingest chunks while earlier chunks
//!   are mapped (see `ingest`), through a bounded number of buffers, so it
//!   may be larger than memory.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, Phase, Result};
use crate::guard::GuardedMap;
use crate::job::Records;
use crate::unwind;

/// Default target split size when neither the runtime nor the run sets one.
pub const DEFAULT_SPLIT_SIZE: usize = 1 << 20;

/// The input of a run: one or more parts (files or byte slices), each cut
/// into splits independently.
pub struct Input<'a> {
    parts: Vec<Part<'a>>,
}

struct Part<'a> {
    name: PathBuf,
    data: Data<'a>,
}

/// A reader that can be taken once.
pub(crate) type Stream = Box<dyn Read + Send>;

enum Data<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
    Mapped(GuardedMap),
    /// Read in chunks by one run, which takes the reader; the size, if known.
    Streamed(Mutex<Option<Stream>>, Option<u64>),
}

impl Part<'_> {
    fn bytes(&self) -> &[u8] {
        match &self.data {
            Data::Borrowed(b) => b,
            Data::Owned(v) => v,
            Data::Mapped(m) => m.bytes(),
            Data::Streamed(..) => &[],
        }
    }

    fn len(&self) -> u64 {
        match &self.data {
            Data::Streamed(_, len) => len.unwrap_or(0),
            _ => self.bytes().len() as u64,
        }
    }
}

/// How [`Input::open`] reads files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ingest {
    /// Memory-map when the files fit comfortably in memory (at most half of
    /// what the OS reports available), stream them otherwise.
    #[default]
    Auto,
    /// Memory-map every file.
    Mmap,
    /// Read every file in chunks with plain reads (bounded memory).
    Chunked,
}

impl<'a> Input<'a> {
    /// Input from a byte slice in memory.
    pub fn bytes(data: &'a [u8]) -> Self {
        Input {
            parts: vec![Part {
                name: PathBuf::from("<memory>"),
                data: Data::Borrowed(data),
            }],
        }
    }

    /// Input from an owned buffer (for example standard input read whole).
    pub fn owned(name: impl Into<PathBuf>, data: Vec<u8>) -> Self {
        Input {
            parts: vec![Part {
                name: name.into(),
                data: Data::Owned(data),
            }],
        }
    }

    /// Input from a reader (for example standard input), read in chunks
    /// while earlier chunks are mapped. A run takes the reader: running the
    /// same input twice is an error.
    pub fn reader(name: impl Into<PathBuf>, reader: impl Read + Send + 'static) -> Input<'static> {
        Input::readers([(name, reader, None)])
    }

    /// Input from several readers, one part each, in order (the files of
    /// a remote file system, say: one reader per file), read in chunks
    /// while earlier chunks are mapped, as [`reader`](Input::reader)
    /// reads one. Each comes with its name and, if known, its length in
    /// bytes: progress then knows the total, and a part that ends at
    /// another length fails the run with [`Error::InputChanged`]. A record
    /// never spans two parts, and `Split::part` says which one a split
    /// comes from. A run takes the readers: running the same input twice
    /// is an error. Readers of different types can be boxed
    /// (`Box<dyn Read + Send>`).
    ///
    /// ```
    /// use std::io::Cursor;
    /// use ember::Input;
    ///
    /// let input = Input::readers([
    ///     ("a.txt", Cursor::new(b"one two\n".to_vec()), Some(8)),
    ///     ("b.txt", Cursor::new(b"three\n".to_vec()), None),
    /// ]);
    /// assert_eq!(input.parts(), 2);
    /// assert!(input.is_streamed());
    /// ```
    pub fn readers<N, R>(readers: impl IntoIterator<Item = (N, R, Option<u64>)>) -> Input<'static>
    where
        N: Into<PathBuf>,
        R: Read + Send + 'static,
    {
        let parts = readers
            .into_iter()
            .map(|(name, reader, len)| {
                let reader: Stream = Box::new(reader);
                Part {
                    name: name.into(),
                    data: Data::Streamed(Mutex::new(Some(reader)), len),
                }
            })
            .collect();
        Input { parts }
    }

    /// Input from files, read as `how` says. Every file is opened (and
    /// checked to be a readable file) before this returns.
    pub fn open<P: AsRef<Path>>(
        paths: impl IntoIterator<Item = P>,
        how: Ingest,
    ) -> Result<Input<'static>> {
        let paths: Vec<PathBuf> = paths
            .into_iter()
            .map(|p| p.as_ref().to_path_buf())
            .collect();
        let stream = match how {
            Ingest::Mmap => false,
            Ingest::Chunked => true,
            Ingest::Auto => {
                let mut total = 0;
                for p in &paths {
                    total += std::fs::metadata(p).map_err(|e| Error::io(p, e))?.len();
                }
                crate::memory::available().is_some_and(|avail| total > avail / 2)
            }
        };
        if !stream {
            return Input::files(&paths);
        }
        let files = paths
            .iter()
            .map(|p| {
                let file = open_file(p)?;
                let len = file.metadata().map_err(|e| Error::io(p, e))?.len();
                Ok((p.clone(), file, Some(len)))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Input::readers(files))
    }

    /// True when some part is a memory-mapped file.
    pub fn is_mapped(&self) -> bool {
        self.parts.iter().any(|p| matches!(p.data, Data::Mapped(_)))
    }

    /// Lets go of the pages of the `k`-th of `n` stripes of every mapped
    /// file (see [`Runtime::release`](crate::Runtime::release)).
    #[cfg(unix)]
    pub(crate) fn release_stripe(&self, k: usize, n: usize) {
        for p in &self.parts {
            if let Data::Mapped(m) = &p.data {
                m.release_stripe(k, n);
            }
        }
    }

    /// Lets go of the pages wholly inside bytes `range` of part `part`, if
    /// it is a mapped file (see [`RunOptions::release_mapped`](crate::RunOptions::release_mapped)).
    #[cfg(unix)]
    pub(crate) fn release_range(&self, part: usize, range: std::ops::Range<usize>) {
        if let Data::Mapped(m) = &self.parts[part].data {
            m.release_range(range);
        }
    }

    /// Maps in the pages of bytes `range` of part `part` in one call, if it
    /// is a mapped file (see [`GuardedMap::populate`]).
    #[cfg(target_os = "linux")]
    pub(crate) fn populate_range(&self, part: usize, range: std::ops::Range<usize>) {
        if let Data::Mapped(m) = &self.parts[part].data {
            m.populate(range);
        }
    }

    /// True when the input is read in chunks rather than held in memory.
    pub fn is_streamed(&self) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p.data, Data::Streamed(..)))
    }

    /// Checks that no memory-mapped file of the input changed since it
    /// was mapped: no read of it faulted past a new end, and its length and
    /// modification time are those it had. Runs check their input when
    /// they end; code that reads [`part_bytes`](Input::part_bytes) of a
    /// mapped file itself can call this after, to know the bytes it read
    /// were the file's (a page cut off a file reads as zeros).
    ///
    /// # Errors
    ///
    /// [`Error::InputChanged`] naming the first file that changed.
    pub fn check_unchanged(&self) -> Result<()> {
        for p in &self.parts {
            if let Data::Mapped(m) = &p.data {
                if let Some((was, now)) = m.changed(&p.name) {
                    return Err(Error::InputChanged {
                        path: p.name.clone(),
                        was,
                        now,
                    });
                }
            }
        }
        Ok(())
    }

    /// Takes the readers of a streamed input, with their names and their
    /// lengths when opened (if known).
    pub(crate) fn take_streams(&self) -> Result<Vec<(PathBuf, Stream, Option<u64>)>> {
        self.parts
            .iter()
            .map(|p| match &p.data {
                Data::Streamed(r, len) => r
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take()
                    .map(|r| (p.name.clone(), r, *len))
                    .ok_or_else(|| {
                        Error::Config(format!(
                            "'{}' was already read by an earlier run (a streamed input is read once)",
                            p.name.display()
                        ))
                    }),
                _ => Err(Error::Config("cannot mix streamed and in-memory parts".into())),
            })
            .collect()
    }

    /// Input from one file, memory-mapped.
    pub fn file(path: impl AsRef<Path>) -> Result<Input<'static>> {
        Input::files([path])
    }

    /// Input from several files, each memory-mapped; a record never spans
    /// two files, and `Split::part` says which file a split comes from.
    pub fn files<P: AsRef<Path>>(paths: impl IntoIterator<Item = P>) -> Result<Input<'static>> {
        let parts = paths
            .into_iter()
            .map(|p| map_file(p.as_ref()))
            .collect::<Result<Vec<_>>>()?;
        Ok(Input { parts })
    }

    /// Total bytes over all parts (for a streamed reader of unknown size,
    /// only what is known: 0 for standard input).
    pub fn len(&self) -> usize {
        self.parts.iter().map(|p| p.len() as usize).sum()
    }

    /// Input bytes over all parts, if every part's length is known (a
    /// stream may not say).
    pub(crate) fn known_len(&self) -> Option<u64> {
        let unknown = |p: &Part| matches!(p.data, Data::Streamed(_, None));
        match self.parts.iter().any(unknown) {
            true => None,
            false => Some(self.len() as u64),
        }
    }

    /// True when there are no bytes at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of parts (files).
    pub fn parts(&self) -> usize {
        self.parts.len()
    }

    /// The name (path) of part `i`.
    pub fn part_name(&self, i: usize) -> &Path {
        &self.parts[i].name
    }

    /// The bytes of part `i` (empty for a streamed part).
    pub fn part_bytes(&self, i: usize) -> &[u8] {
        self.parts[i].bytes()
    }
}

/// Opens a file for reading; a directory is an error.
fn open_file(path: &Path) -> Result<File> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if meta.is_dir() {
        return Err(Error::IsDirectory {
            path: path.to_path_buf(),
        });
    }
    Ok(file)
}

fn map_file(path: &Path) -> Result<Part<'static>> {
    let file = open_file(path)?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    let data = if meta.len() == 0 {
        // An empty file cannot be mapped; it is a valid, empty part.
        Data::Owned(Vec::new())
    } else {
        // A file cut short while mapped reads as zeros past its new end
        // instead of killing the process, and the run fails (see `guard`).
        let map = GuardedMap::new(&file, &meta).map_err(|e| Error::io(path, e))?;
        #[cfg(unix)]
        {
            // Advice only: a failure changes speed, not results.
            let _ = map.advise(memmap2::Advice::Sequential);
        }
        Data::Mapped(map)
    };
    Ok(Part {
        name: path.to_path_buf(),
        data,
    })
}

impl std::fmt::Debug for Input<'_> {
    /// The parts' names and sizes (a streamed part's size may be unknown).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut list = f.debug_list();
        for p in &self.parts {
            let kind = match &p.data {
                Data::Borrowed(_) | Data::Owned(_) => "memory",
                Data::Mapped(_) => "mmap",
                Data::Streamed(..) => "stream",
            };
            list.entry(&(&p.name, kind, p.bytes().len()));
        }
        list.finish()
    }
}

/// One split: a byte range of one part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SplitRange {
    pub(crate) part: usize,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

/// The last `TAIL_SPLITS_PER_WORKER x workers` splits are cut again into
/// [`TAIL_PIECES`] pieces each (guided self-scheduling: tasks shrink as
/// the map phase nears its end). The map phase ends when its last task
/// does, so a worker that picks up a slow split last holds every other
/// worker idle for up to a whole split; with small final tasks the others
/// keep taking pieces while it finishes, and the wait is at most a piece.
/// `ember-bench pipeline --cases skewed` measures it (an input whose last
/// splits cost most to map; docs/measurements.md).
const TAIL_SPLITS_PER_WORKER: usize = 4;
/// See [`TAIL_SPLITS_PER_WORKER`].
const TAIL_PIECES: usize = 4;
/// Tail splits are not cut into pieces smaller than this: below it, the
/// cost of a task (a scheduling step, a `map` call) is no longer small
/// beside its work.
const TAIL_MIN_PIECE: usize = 64 << 10;

/// Cuts every part into splits of about `target` bytes, each ending on a
/// record boundary, the last few (for `workers` workers) cut smaller, but
/// not below [`TAIL_MIN_PIECE`] (see
/// [`TAIL_SPLITS_PER_WORKER`]). Linear in the number of splits plus the
/// bytes scanned to find boundaries (a boundary search never rescans
/// bytes). A panic in the job's record splitter is an error of
/// [`Phase::Split`].
pub(crate) fn plan_splits(
    input: &Input<'_>,
    records: Records,
    target: usize,
    workers: usize,
) -> Result<Vec<SplitRange>> {
    plan_splits_with(input, records, target, workers, TAIL_MIN_PIECE)
}

/// [`plan_splits`] with the smallest tail piece given.
fn plan_splits_with(
    input: &Input<'_>,
    records: Records,
    target: usize,
    workers: usize,
    min_piece: usize,
) -> Result<Vec<SplitRange>> {
    let mut out = Vec::with_capacity(input.len() / target.max(1) + input.parts());
    for (part, p) in input.parts.iter().enumerate() {
        plan_slice(p.bytes(), records, target, |start, end| {
            out.push(SplitRange { part, start, end })
        })?;
    }
    let piece = (target / TAIL_PIECES).max(min_piece.max(1));
    let tail = TAIL_SPLITS_PER_WORKER * workers;
    if piece >= target || out.len() <= tail {
        return Ok(out);
    }
    for s in out.split_off(out.len() - tail) {
        let bytes = &input.part_bytes(s.part)[s.start..s.end];
        plan_slice(bytes, records, piece, |a, b| {
            out.push(SplitRange {
                part: s.part,
                start: s.start + a,
                end: s.start + b,
            })
        })?;
    }
    Ok(out)
}

/// Cuts one slice, which starts at a record boundary, into pieces of about
/// `target` bytes at record boundaries, calling `piece(start, end)` for
/// each, in order. A panic in the job's record splitter is an error of
/// [`Phase::Split`].
pub(crate) fn plan_slice(
    data: &[u8],
    records: Records,
    target: usize,
    mut piece: impl FnMut(usize, usize),
) -> Result<()> {
    let target = target.max(1);
    unwind::catch(Phase::Split, || {
        let mut start = 0;
        while start < data.len() {
            let end = start + next_boundary(&data[start..], records, target);
            piece(start, end);
            start = end;
        }
    })
}

/// The first record boundary at or after `min` in `data`, which starts at
/// a record boundary; the end of `data` if there is none (the rest is the
/// part's last record).
fn next_boundary(data: &[u8], records: Records, min: usize) -> usize {
    if min >= data.len() {
        return data.len();
    }
    match records {
        Records::Lines => memchr::memchr(b'\n', &data[min - 1..]).map_or(data.len(), |i| min + i),
        Records::Separator(is_sep) => data[min..]
            .iter()
            .position(|&b| is_sep(b))
            .map_or(data.len(), |i| min + i),
        Records::Fixed(size) => {
            let size = size.max(1);
            (min.div_ceil(size) * size).min(data.len())
        }
        Records::Whole => data.len(),
        Records::Custom(next) => custom_boundary(next, data, min).unwrap_or(data.len()),
    }
}

/// Calls a job's `Records::Custom` function, checking its answer against
/// the contract (a boundary in `min..=data.len()`); a violation panics, to
/// be caught as the job's error like any panic of its splitter.
#[inline]
pub(crate) fn custom_boundary(
    next: fn(&[u8], usize) -> Option<usize>,
    data: &[u8],
    min: usize,
) -> Option<usize> {
    let b = next(data, min)?;
    assert!(
        (min..=data.len()).contains(&b),
        "Records::Custom returned the boundary {b}, outside {min}..={} \
         (the first record boundary at or after {min} of {} bytes)",
        data.len(),
        data.len()
    );
    Some(b)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Plans splits (the tail cut into pieces of any size) and checks
    /// that they tile each part exactly, in order.
    fn cover(input: &Input<'_>, records: Records, target: usize) -> Vec<SplitRange> {
        let splits = plan_splits_with(input, records, target, 2, 1).unwrap();
        // The splits tile each part exactly, in order.
        let mut at = vec![0usize; input.parts()];
        for s in &splits {
            assert_eq!(s.start, at[s.part]);
            assert!(s.end > s.start);
            at[s.part] = s.end;
        }
        for (i, end) in at.iter().enumerate() {
            assert_eq!(*end, input.part_bytes(i).len());
        }
        splits
    }

    proptest! {
        #[test]
        fn lines_never_straddle(text in "[ab\n]{0,200}", target in 1usize..50) {
            let input = Input::bytes(text.as_bytes());
            for s in cover(&input, Records::Lines, target) {
                if s.end < text.len() {
                    prop_assert_eq!(text.as_bytes()[s.end - 1], b'\n');
                }
            }
        }

        #[test]
        fn separators_never_cut_a_word(text in "[ab .]{0,200}", target in 1usize..50) {
            let input = Input::bytes(text.as_bytes());
            for s in cover(&input, Records::Separator(|b| !b.is_ascii_alphabetic()), target) {
                if s.end < text.len() {
                    prop_assert!(!text.as_bytes()[s.end].is_ascii_alphabetic());
                }
            }
        }

        /// A custom splitter that finds line ends plans exactly the splits
        /// `Lines` does.
        #[test]
        fn custom_lines_plan_as_lines(text in "[ab\n]{0,200}", target in 1usize..50) {
            let input = Input::bytes(text.as_bytes());
            prop_assert_eq!(
                cover(&input, Records::Custom(line_end), target),
                cover(&input, Records::Lines, target)
            );
        }

        #[test]
        fn fixed_records_stay_whole(len in 0usize..300, size in 1usize..20, target in 1usize..64) {
            let data = vec![0u8; len];
            let input = Input::bytes(&data);
            for s in cover(&input, Records::Fixed(size), target) {
                prop_assert!(s.start % size == 0);
            }
        }
    }

    /// `Records::Custom` for newline-terminated lines.
    pub(crate) fn line_end(data: &[u8], min: usize) -> Option<usize> {
        memchr::memchr(b'\n', &data[min - 1..]).map(|i| min + i)
    }

    #[test]
    fn a_panicking_splitter_is_a_split_error() {
        let input = Input::bytes(b"ab\ncd\n");
        let err = plan_splits(&input, Records::Custom(|_, _| panic!("no")), 1, 1).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Panicked {
                    phase: Phase::Split,
                    ..
                }
            ),
            "{err}"
        );
        let err = plan_splits(&input, Records::Custom(|d, _| Some(d.len() + 1)), 1, 1).unwrap_err();
        assert!(err.to_string().contains("outside 1..=6"), "{err}");
    }

    #[test]
    fn the_last_splits_are_cut_smaller() {
        let data = vec![b'x'; 1 << 20];
        let input = Input::bytes(&data);
        let splits = plan_splits(&input, Records::Fixed(1), 128 << 10, 1).unwrap();
        let sizes: Vec<usize> = splits.iter().map(|s| s.end - s.start).collect();
        // 8 splits of 128 KiB: the last 4 are cut into 4 pieces of 32 KiB,
        // were it not for the 64 KiB floor: into 2 of 64 KiB each.
        assert_eq!(sizes[..4], [128 << 10; 4]);
        assert_eq!(sizes[4..], [64 << 10; 8]);
        // Too few splits to have a tail: left whole.
        assert_eq!(
            plan_splits(&input, Records::Fixed(1), 256 << 10, 1)
                .unwrap()
                .len(),
            4
        );
    }

    #[test]
    fn whole_parts_are_single_splits() {
        let input = Input::bytes(b"abc\ndef\n");
        assert_eq!(cover(&input, Records::Whole, 1).len(), 1);
    }

    #[test]
    fn missing_file_names_the_path() {
        let err = Input::file("/no/such/ember-file")
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("/no/such/ember-file"), "{err}");
        assert!(err.contains("No such file"), "{err}");
    }
}
