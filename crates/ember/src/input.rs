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
//!
//! Files and [`Input::reader_decompressed`] tell compressed bytes by their
//! first bytes (see `compress`); a compressed part is streamed through its
//! decoder, read ahead on threads of its own (see `read_ahead`); a large
//! zstd or bzip2 file in pieces that decode on several threads at once
//! (see `compress`).

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::compress::{Compression, Pieces};
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
    /// Read in chunks by one run, which takes the reader (of its pieces'
    /// bytes in turn).
    Streamed {
        reader: Mutex<Option<Pieces>>,
        /// The bytes the reader gives, if known.
        len: Option<u64>,
        /// The format the reader decodes (its bytes are then read ahead).
        format: Compression,
    },
}

impl Part<'_> {
    fn bytes(&self) -> &[u8] {
        match &self.data {
            Data::Borrowed(b) => b,
            Data::Owned(v) => v,
            Data::Mapped(m) => m.bytes(),
            Data::Streamed { .. } => &[],
        }
    }

    fn len(&self) -> u64 {
        match &self.data {
            Data::Streamed { len, .. } => len.unwrap_or(0),
            _ => self.bytes().len() as u64,
        }
    }
}

/// How [`Input::open`] reads files (compressed ones are always streamed,
/// and with them every file of the input: a run reads its parts all
/// mapped or all streamed).
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
            .map(|(name, reader, len)| Part::streamed(name.into(), Box::new(reader), len))
            .collect();
        Input { parts }
    }

    /// Input from a reader whose bytes may be compressed (standard input,
    /// typically): its first bytes are read here, and if they are those of
    /// a format ember decodes (gzip, zstd, bzip2, xz) the run
    /// reads the decoded bytes, else the bytes as they are, as
    /// [`reader`](Input::reader) does. Files are told the same way by
    /// [`open`](Input::open) and [`files`](Input::files); `reader` and
    /// [`readers`](Input::readers) never decode.
    ///
    /// ```
    /// use std::io::{Cursor, Write};
    /// use ember::Input;
    ///
    /// let mut gz = flate2::write::GzEncoder::new(Vec::new(), Default::default());
    /// gz.write_all(b"one two\n")?;
    /// let input = Input::reader_decompressed("<stdin>", Cursor::new(gz.finish()?))?;
    /// assert!(input.is_streamed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Io`] naming the input if reading its first bytes fails.
    pub fn reader_decompressed(
        name: impl Into<PathBuf>,
        reader: impl Read + Send + 'static,
    ) -> Result<Input<'static>> {
        Input::readers_decompressed([(name, reader, None)])
    }

    /// Input from several readers, as [`readers`](Input::readers) reads
    /// them, each decoded if its first bytes say it is compressed, as
    /// [`reader_decompressed`](Input::reader_decompressed) decodes one (the
    /// files of a remote file system, say). The length given with a
    /// compressed reader is not checked: its decoded length is not known.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] naming an input if reading its first bytes fails.
    pub fn readers_decompressed<N, R>(
        readers: impl IntoIterator<Item = (N, R, Option<u64>)>,
    ) -> Result<Input<'static>>
    where
        N: Into<PathBuf>,
        R: Read + Send + 'static,
    {
        let parts = readers
            .into_iter()
            .map(|(name, mut reader, len)| {
                let name = name.into();
                let mut head = Vec::with_capacity(Compression::MAGIC_LEN);
                (&mut reader)
                    .take(Compression::MAGIC_LEN as u64)
                    .read_to_end(&mut head)
                    .map_err(|e| Error::io(&name, e))?;
                let format = Compression::detect(&head);
                let whole = io::Cursor::new(head).chain(reader);
                match format {
                    Compression::None => Ok(Part::streamed(name, Box::new(whole), len)),
                    _ => Part::decoded(name, format, whole),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Input { parts })
    }

    /// Input from files, read as `how` says. Every file is opened (and
    /// checked to be a readable file) before this returns. A file whose
    /// first bytes are those of a compressed format (gzip, zstd, bzip2 or
    /// xz; told by its bytes, not its name) is decoded as it is streamed,
    /// and then every file of the input is streamed.
    pub fn open<P: AsRef<Path>>(
        paths: impl IntoIterator<Item = P>,
        how: Ingest,
    ) -> Result<Input<'static>> {
        let files = paths
            .into_iter()
            .map(|p| Opened::open(p.as_ref()))
            .collect::<Result<Vec<_>>>()?;
        let compressed = files.iter().any(|f| f.format != Compression::None);
        let stream = compressed
            || match how {
                Ingest::Mmap => false,
                Ingest::Chunked => true,
                Ingest::Auto => {
                    let total: u64 = files.iter().map(|f| f.meta.len()).sum();
                    crate::memory::available().is_some_and(|avail| total > avail / 2)
                }
            };
        let parts = files
            .into_iter()
            .map(|f| f.into_part(stream))
            .collect::<Result<Vec<_>>>()?;
        Ok(Input { parts })
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
            .any(|p| matches!(p.data, Data::Streamed { .. }))
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
    /// lengths when opened (if known); the pieces of compressed parts are
    /// decoded ahead on up to `decoders` threads at once (see
    /// `read_ahead`), in order, and joined again part by part.
    pub(crate) fn take_streams(
        &self,
        decoders: usize,
    ) -> Result<Vec<(PathBuf, Stream, Option<u64>)>> {
        let mut parts = Vec::with_capacity(self.parts.len());
        let mut decoded = Vec::new();
        for p in &self.parts {
            let Data::Streamed {
                reader,
                len,
                format,
            } = &p.data
            else {
                return Err(Error::Config(
                    "cannot mix streamed and in-memory parts".into(),
                ));
            };
            let Some(pieces) = reader.lock().unwrap_or_else(|e| e.into_inner()).take() else {
                return Err(Error::Config(format!(
                    "'{}' was already read by an earlier run (a streamed input is read once)",
                    p.name.display()
                )));
            };
            let (mut streams, joiner) = pieces.into_streams();
            let count = streams.len();
            if *format != Compression::None {
                decoded.append(&mut streams);
            }
            parts.push((p.name.clone(), *len, streams, count, joiner));
        }
        let mut ahead = crate::read_ahead::read_ahead(decoded, decoders)?.into_iter();
        Ok(parts
            .into_iter()
            .map(|(name, len, mut streams, count, joiner)| {
                if streams.is_empty() {
                    streams = ahead.by_ref().take(count).collect();
                }
                (name, joiner.join(streams), len)
            })
            .collect())
    }

    /// The most bytes [`take_streams`](Input::take_streams) reads ahead
    /// of the run, given as many `decoders`.
    pub(crate) fn read_ahead_bytes(&self, decoders: usize) -> u64 {
        let pieces = |p: &Part| match &p.data {
            Data::Streamed { reader, format, .. } if *format != Compression::None => {
                let pieces = reader.lock().unwrap_or_else(|e| e.into_inner());
                pieces.as_ref().map_or(0, Pieces::len)
            }
            _ => 0,
        };
        crate::read_ahead::bound(self.parts.iter().map(pieces).sum(), decoders)
    }

    /// Input from one file, memory-mapped, or streamed through its
    /// decoder if it is compressed (see [`open`](Input::open)).
    pub fn file(path: impl AsRef<Path>) -> Result<Input<'static>> {
        Input::files([path])
    }

    /// Input from several files, each memory-mapped (all streamed if one
    /// is compressed, see [`open`](Input::open)); a record never spans two
    /// files, and `Split::part` says which file a split comes from.
    pub fn files<P: AsRef<Path>>(paths: impl IntoIterator<Item = P>) -> Result<Input<'static>> {
        Input::open(paths, Ingest::Mmap)
    }

    /// Input from files a job reads whole, as
    /// [`part_bytes`](Input::part_bytes): images, matrices, records sorted
    /// in place. Plain files are memory-mapped; a compressed file (told as
    /// [`open`](Input::open) tells it) is decoded into memory, so that
    /// `photo.bmp.gz` reads as `photo.bmp` does.
    ///
    /// # Errors
    ///
    /// A file that cannot be opened or decoded ([`Error::Io`] naming it),
    /// or whose decoded bytes would take more than half the memory the
    /// kernel reports available ([`Error::InvalidInput`]).
    pub fn in_memory<P: AsRef<Path>>(paths: impl IntoIterator<Item = P>) -> Result<Input<'static>> {
        let parts = paths
            .into_iter()
            .map(|p| {
                let file = Opened::open(p.as_ref())?;
                match file.format {
                    Compression::None => file.into_part(false),
                    _ => file.decode_whole(),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Input { parts })
    }

    /// Total bytes over all parts (for a streamed part of unknown size,
    /// only what is known: 0 for standard input or a compressed file).
    pub fn len(&self) -> usize {
        self.parts.iter().map(|p| p.len() as usize).sum()
    }

    /// Input bytes over all parts, if every part's length is known (a
    /// stream may not say).
    pub(crate) fn known_len(&self) -> Option<u64> {
        let unknown = |p: &Part| matches!(p.data, Data::Streamed { len: None, .. });
        match self.parts.iter().any(unknown) {
            true => None,
            false => Some(self.len() as u64),
        }
    }

    /// True when there are no bytes at all (a part whose length is not
    /// known, such as standard input or a compressed file, may have some).
    pub fn is_empty(&self) -> bool {
        self.known_len() == Some(0)
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

impl Part<'static> {
    /// A part read from `reader` as it is.
    fn streamed(name: PathBuf, reader: Stream, len: Option<u64>) -> Self {
        Part {
            name,
            data: Data::Streamed {
                reader: Mutex::new(Some(Pieces::one(reader))),
                len,
                format: Compression::None,
            },
        }
    }

    /// A part read from `source` decoded from `format`.
    fn decoded(
        name: PathBuf,
        format: Compression,
        source: impl Read + Send + 'static,
    ) -> Result<Self> {
        let reader = format.decoder(source, 0).map_err(|e| Error::io(&name, e))?;
        Ok(Part::pieces(name, format, Pieces::one(reader)))
    }

    /// A part read from the decoders of its pieces.
    fn pieces(name: PathBuf, format: Compression, pieces: Pieces) -> Self {
        Part {
            name,
            data: Data::Streamed {
                reader: Mutex::new(Some(pieces)),
                len: None,
                format,
            },
        }
    }
}

/// A file opened for input, and the format its first bytes say.
struct Opened {
    path: PathBuf,
    file: File,
    meta: Metadata,
    format: Compression,
}

impl Opened {
    /// Opens a file for reading (a directory is an error) and reads its
    /// first bytes.
    fn open(path: &Path) -> Result<Opened> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let meta = file.metadata().map_err(|e| Error::io(path, e))?;
        if meta.is_dir() {
            return Err(Error::IsDirectory {
                path: path.to_path_buf(),
            });
        }
        let mut head = [0; Compression::MAGIC_LEN];
        let n = read_head(&file, &mut head).map_err(|e| Error::io(path, e))?;
        Ok(Opened {
            path: path.to_path_buf(),
            file,
            meta,
            format: Compression::detect(&head[..n]),
        })
    }

    /// The file as a part: decoded if it is compressed, else streamed if
    /// `stream`, else mapped.
    fn into_part(self, stream: bool) -> Result<Part<'static>> {
        let Opened {
            path,
            file,
            meta,
            format,
        } = self;
        if format != Compression::None {
            let pieces = Pieces::of_file(format, file, &meta).map_err(|e| Error::read(&path, e))?;
            return Ok(Part::pieces(path, format, pieces));
        }
        if stream {
            return Ok(Part::streamed(path, Box::new(file), Some(meta.len())));
        }
        let data = if meta.len() == 0 {
            // An empty file cannot be mapped; it is a valid, empty part.
            Data::Owned(Vec::new())
        } else {
            // A file cut short while mapped reads as zeros past its new end
            // instead of killing the process, and the run fails (see `guard`).
            let map = GuardedMap::new(&file, &meta).map_err(|e| Error::io(&path, e))?;
            #[cfg(unix)]
            {
                // Advice only: a failure changes speed, not results.
                let _ = map.advise(memmap2::Advice::Sequential);
            }
            Data::Mapped(map)
        };
        Ok(Part { name: path, data })
    }

    /// The compressed file decoded into memory, as one part; no more than
    /// half the memory available.
    fn decode_whole(self) -> Result<Part<'static>> {
        let limit = crate::memory::available().map_or(u64::MAX, |avail| avail / 2);
        let (streams, joiner) = Pieces::of_file(self.format, self.file, &self.meta)
            .map_err(|e| Error::read(&self.path, e))?
            .into_streams();
        let mut data = Vec::new();
        joiner
            .join(streams)
            .take(limit.saturating_add(1))
            .read_to_end(&mut data)
            .map_err(|e| Error::read(&self.path, e))?;
        if data.len() as u64 > limit {
            return Err(Error::InvalidInput(format!(
                "'{}' decodes to more than {limit} bytes, half the memory available; \
                 decompress it to a file first",
                self.path.display()
            )));
        }
        Ok(Part {
            name: self.path,
            data: Data::Owned(data),
        })
    }
}

/// Reads the first bytes of `file` into `head` (with positioned reads,
/// leaving its offset at the start); returns how many (fewer only if the
/// file is shorter).
fn read_head(file: &File, head: &mut [u8]) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut n = 0;
    while n < head.len() {
        match file.read_at(&mut head[n..], n as u64) {
            Ok(0) => break,
            Ok(got) => n += got,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

impl std::fmt::Debug for Input<'_> {
    /// The parts' names and sizes (a streamed part's size may be unknown).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut list = f.debug_list();
        for p in &self.parts {
            let kind = match &p.data {
                Data::Borrowed(_) | Data::Owned(_) => "memory",
                Data::Mapped(_) => "mmap",
                Data::Streamed { format, .. } => match format {
                    Compression::None => "stream",
                    format => format.name(),
                },
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
