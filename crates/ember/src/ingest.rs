//! The ingest chunk pipeline (SupMR section III): a streamed input is read
//! in chunks by one ingest thread while the workers map earlier chunks.
//!
//! - **Chunking**: a chunk is filled to about `chunk_size` bytes and then cut
//!   at the last record boundary; the tail is carried into the next chunk, so
//!   a record is never split (a record longer than a chunk makes the chunk
//!   grow until it ends). One large file becomes many chunks (inter-file
//!   chunking); small files are batched into one chunk until it is full
//!   (intra-file chunking), each file a segment of its own, so a record
//!   never spans two files.
//! - **Buffers**: `buffers` chunk buffers circulate between the reader and
//!   the mappers: empty ones go to the reader, full ones to the mappers, and
//!   back. The reader runs ahead by at most `buffers - 1` chunks, so input
//!   memory stays at about `buffers x chunk_size` whatever the input size.
//! - **Thread**: the reader is one thread per [`Runtime`](crate::Runtime),
//!   started on its first streamed run and reused after, so no run creates a
//!   thread.
//! - **Placement** (machines of several NUMA nodes): a buffer is cut, by
//!   address, into one stripe per node, and each stripe's address range is
//!   bound to prefer its node (`mbind`) when the buffer is first used, so
//!   its pages are placed stripe by stripe across the nodes whichever
//!   thread touches them, and stay there as the buffer is reused (a range
//!   with a policy of its own is not moved by the kernel's NUMA
//!   balancing). Every worker maps every chunk, so spreading each chunk
//!   over the nodes gives every node's workers local splits in every chunk
//!   (the map queues each split on the node the kernel says holds it). On
//!   one node, or a given topology, nothing is placed.
//! - **User code** runs on that thread (the input's `Read`, the job's
//!   record splitter) under `catch_unwind`: a panic ends the run with an
//!   error ([`Error::Io`] naming the input for a reader,
//!   [`Error::Panicked`] in the split phase for a splitter) and leaves the
//!   thread to serve the runtime's next runs.

use std::io::Read;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::Instant;

use crate::error::{panic_message, Error, Phase, Result};
use crate::input::{custom_boundary, plan_slice, Stream};
use crate::job::Records;
use crate::pool::{place_pages, Topology};
use crate::unwind;

/// Default bytes per ingest chunk.
pub const DEFAULT_CHUNK_SIZE: usize = 64 << 20;
/// Default number of chunk buffers (double buffering).
pub const DEFAULT_CHUNK_BUFFERS: usize = 2;
/// The largest step by which a chunk of `Records::Custom` records is walked
/// to find its last boundary (the records of the last step are then walked
/// one by one): one call of the job's function per step, and per record
/// only near the chunk's end.
const CUSTOM_STEP: usize = 64 << 10;

/// Where stripes of a chunk buffer end: on a huge page boundary (x86-64)
/// when stripes are large enough, so that a transparent huge page faulted
/// in at the end of one stripe does not hold the start of the next; else
/// on a page boundary.
const HUGE_PAGE: usize = 2 << 20;
const PAGE: usize = 4 << 10;

/// How a chunk buffer's pages are placed on a machine of several NUMA
/// nodes: stripe `k` of a buffer starting at `base` ends at
/// `base + (k + 1) * share` rounded to the nearest `align`ed address, and
/// is placed on the `k`-th node; the last stripe takes the rest. Pages the
/// allocator hands back already placed are moved; where the kernel has no
/// room or refuses, pages stay elsewhere: the map queues splits by where
/// the kernel says they are, not by stripe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stripes {
    /// The kernel's number of each node, in stripe order.
    nodes: Vec<usize>,
    /// The chunk's bytes per node.
    share: usize,
    /// Where stripes end: [`HUGE_PAGE`] if `share` is at least two of
    /// them (a stripe then moves by at most a quarter), else [`PAGE`].
    align: usize,
}

impl Stripes {
    /// The stripes of chunks of `chunk_size` bytes on `topology`, or `None`
    /// where there is nothing to place (one node, or a given topology,
    /// whose nodes the kernel does not know).
    pub(crate) fn new(topology: &Topology, chunk_size: usize) -> Option<Stripes> {
        let nodes = topology.kernel_ids().filter(|ids| ids.len() > 1)?;
        let share = chunk_size / nodes.len();
        let align = if share >= 2 * HUGE_PAGE {
            HUGE_PAGE
        } else {
            PAGE
        };
        Some(Stripes {
            nodes: nodes.to_vec(),
            share,
            align,
        })
    }

    /// The stripes of the buffer `base..base + len`: each one's kernel
    /// node and address range, in order (empty stripes left out).
    fn cut(&self, base: usize, len: usize) -> impl Iterator<Item = (usize, Range<usize>)> + '_ {
        let last = self.nodes.len() - 1;
        let end = move |k: usize| {
            if k == last {
                return base + len;
            }
            let end = base + (k + 1) * self.share + self.align / 2;
            (end - end % self.align).clamp(base, base + len)
        };
        let start = move |k: usize| if k == 0 { base } else { end(k - 1) };
        (0..self.nodes.len())
            .map(move |k| (self.nodes[k], start(k)..end(k)))
            .filter(|(_, r)| !r.is_empty())
    }
}

/// A run of one part's bytes inside a chunk.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Segment {
    /// The input part (file) the bytes come from.
    pub(crate) part: usize,
    /// Offset of the first byte in that part.
    pub(crate) offset: u64,
    /// Range in the chunk's buffer.
    pub(crate) start: usize,
    pub(crate) end: usize,
}

/// One chunk buffer and what it holds.
#[derive(Default)]
pub(crate) struct Chunk {
    /// The bytes; reused from chunk to chunk.
    pub(crate) data: Vec<u8>,
    /// The parts' byte runs in `data`. Empty: the input is exhausted.
    pub(crate) segments: Vec<Segment>,
    /// Seconds the reader spent filling it.
    pub(crate) read_secs: f64,
    /// When the reader started filling it (set by the ingest thread).
    pub(crate) read_start: Option<Instant>,
    /// The address range of `data` whose stripes are placed (several
    /// NUMA nodes only).
    placed: Option<(usize, usize)>,
}

impl Chunk {
    /// Makes room for `size` bytes and places the buffer's stripes on
    /// their nodes, once per buffer: its pages stay there as it is reused
    /// (a buffer that grew is placed again).
    fn make_room(&mut self, size: usize, stripes: Option<&Stripes>) {
        self.data
            .reserve_exact(size.saturating_sub(self.data.len()));
        let Some(stripes) = stripes else { return };
        let room = (self.data.as_ptr() as usize, self.data.capacity());
        if self.placed == Some(room) {
            return;
        }
        self.unplace();
        for (node, r) in stripes.cut(room.0, room.1) {
            place_pages(r.start, r.len(), Some(node));
        }
        self.placed = Some(room);
    }

    /// Gives the placed range back to the default policy, so memory the
    /// allocator reuses for something else is placed as any other.
    fn unplace(&mut self) {
        if let Some((base, len)) = self.placed.take() {
            place_pages(base, len, None);
        }
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        self.unplace();
    }
}

/// A stream to read: its name, the reader, and its length when opened
/// (if known: a file's is, standard input's is not).
pub(crate) type Named = (PathBuf, Stream, Option<u64>);

/// Cuts streams into chunks at record boundaries.
pub(crate) struct ChunkReader {
    streams: Vec<Named>,
    records: Records,
    chunk_size: usize,
    /// Current stream.
    part: usize,
    /// Offset in the current part of the first carried byte.
    offset: u64,
    /// Bytes read past the last boundary, to start the next chunk.
    carry: Vec<u8>,
    /// Where buffers' pages go (several NUMA nodes only).
    stripes: Option<Stripes>,
}

impl ChunkReader {
    pub(crate) fn new(streams: Vec<Named>, records: Records, chunk_size: usize) -> Self {
        ChunkReader {
            streams,
            records,
            chunk_size: chunk_size.max(1),
            part: 0,
            offset: 0,
            carry: Vec::new(),
            stripes: None,
        }
    }

    /// Places the buffers' pages by `stripes` (`None`: where the reader
    /// thread runs, as any allocation).
    pub(crate) fn placed(mut self, stripes: Option<Stripes>) -> Self {
        self.stripes = stripes;
        self
    }

    /// The record format chunks are cut by.
    pub(crate) fn records(&self) -> Records {
        self.records
    }

    /// The bytes a chunk is filled to.
    pub(crate) fn chunk_size(&self) -> usize {
        self.chunk_size
    }

    /// Fills `chunk` with the next chunk; no segments means the end. After
    /// an error (a failed or panicking read, a panicking splitter) the
    /// stream's state is unknown: the reader ends there.
    pub(crate) fn fill(&mut self, chunk: &mut Chunk) -> Result<()> {
        let filled = self.fill_chunk(chunk);
        if filled.is_err() {
            self.part = self.streams.len();
            self.carry.clear();
        }
        filled
    }

    fn fill_chunk(&mut self, chunk: &mut Chunk) -> Result<()> {
        chunk.data.clear();
        chunk.segments.clear();
        chunk.make_room(self.chunk_size, self.stripes.as_ref());
        while self.part < self.streams.len() && chunk.data.len() < self.chunk_size {
            let start = chunk.data.len();
            chunk.data.append(&mut self.carry);
            let offset = self.offset;
            let mut want = self.chunk_size.saturating_sub(chunk.data.len()).max(1);
            let eof = loop {
                let (name, stream, _) = &mut self.streams[self.part];
                let got = read_into(name, stream, &mut chunk.data, want)?;
                if got < want {
                    break true;
                }
                // Full: cut at the last record boundary of this segment.
                let seg = &chunk.data[start..];
                let cut = unwind::catch(Phase::Split, || last_boundary(seg, self.records, offset))?;
                if let Some(cut) = cut.filter(|&c| c > 0) {
                    self.carry.extend_from_slice(&seg[cut..]);
                    chunk.data.truncate(start + cut);
                    break false;
                }
                // No boundary yet (a record longer than a chunk): read on.
                want = self.chunk_size;
            };
            let end = chunk.data.len();
            if end > start {
                chunk.segments.push(Segment {
                    part: self.part,
                    offset,
                    start,
                    end,
                });
            }
            self.offset = offset + (end - start) as u64;
            if !eof {
                break;
            }
            self.check_len()?;
            self.part += 1;
            self.offset = 0;
        }
        Ok(())
    }
}

impl ChunkReader {
    /// At the end of the current stream: an error if it had a known
    /// length and ended elsewhere (the file shrank or grew while read).
    fn check_len(&self) -> Result<()> {
        match &self.streams[self.part] {
            (path, _, Some(was)) if *was != self.offset => Err(Error::InputChanged {
                path: path.clone(),
                was: *was,
                now: self.offset,
            }),
            _ => Ok(()),
        }
    }
}

/// Appends up to `want` bytes of `stream` (the input `name`) to `buf`;
/// returns how many it read. A panic in the reader is an error naming the
/// input, like a failed read; a reader that found its file changed fails
/// with [`Error::InputChanged`].
fn read_into(name: &Path, stream: &mut Stream, buf: &mut Vec<u8>, want: usize) -> Result<usize> {
    // Room for exactly what is asked, so buffers stay near the chunk size
    // (read_to_end would otherwise double them).
    buf.reserve_exact(want);
    match catch_unwind(AssertUnwindSafe(|| {
        stream.take(want as u64).read_to_end(buf)
    })) {
        Ok(read) => read.map_err(|e| Error::read(name, e)),
        Err(payload) => {
            let why = format!("the reader panicked: {}", panic_message(&*payload));
            Err(Error::io(name, std::io::Error::other(why)))
        }
    }
}

/// The last record boundary in `seg` (whose first byte is at `offset` in its
/// part), as an index into `seg`.
fn last_boundary(seg: &[u8], records: Records, offset: u64) -> Option<usize> {
    match records {
        Records::Lines => memchr::memrchr(b'\n', seg).map(|i| i + 1),
        Records::Separator(is_sep) => seg.iter().rposition(|&b| is_sep(b)),
        Records::Fixed(n) => {
            let n = n.max(1) as u64;
            let end = offset + seg.len() as u64;
            Some((end - end % n).saturating_sub(offset) as usize)
        }
        Records::Whole => None,
        Records::Custom(next) => {
            // Forward from the segment's start, the one place a record is
            // known to begin: in steps of up to CUSTOM_STEP bytes, then
            // record by record over the last step.
            let mut step = (seg.len() / 16).clamp(1, CUSTOM_STEP);
            let mut at = 0;
            while at < seg.len() {
                let rest = &seg[at..];
                match custom_boundary(next, rest, step.min(rest.len())) {
                    Some(b) => at += b,
                    None if step > 1 => step = 1,
                    None => break,
                }
            }
            Some(at)
        }
    }
}

/// Splits of about `target` bytes over a chunk's segments, as
/// `(segment, start, end)` with `start..end` indexing the chunk's buffer.
/// A panic in the job's record splitter is an error of the split phase.
pub(crate) fn plan_chunk(
    chunk: &Chunk,
    records: Records,
    target: usize,
) -> Result<Vec<(usize, usize, usize)>> {
    let mut out = Vec::new();
    for (i, seg) in chunk.segments.iter().enumerate() {
        plan_slice(&chunk.data[seg.start..seg.end], records, target, |s, e| {
            out.push((i, seg.start + s, seg.start + e))
        })?;
    }
    Ok(out)
}

type Task = Box<dyn FnOnce() + Send>;

/// The runtime's ingest thread: runs reader loops, one run at a time.
/// Started by the first streamed run, so that a runtime that only maps
/// its inputs never starts it.
pub(crate) struct IngestThread {
    tasks: Mutex<Option<mpsc::Sender<Task>>>,
}

impl IngestThread {
    /// The thread, not started yet.
    pub(crate) fn new() -> Self {
        IngestThread {
            tasks: Mutex::new(None),
        }
    }

    /// Starts the thread.
    fn start() -> Result<mpsc::Sender<Task>> {
        let (tx, rx) = mpsc::channel::<Task>();
        std::thread::Builder::new()
            .name("ember-ingest".into())
            .spawn(move || {
                for task in rx {
                    // A panic that escapes the reader's own catches (in a
                    // reader's `Drop`, say) must not end the thread: every
                    // later streamed run of the runtime needs it. The run
                    // the task served sees its channel close.
                    let _ = catch_unwind(AssertUnwindSafe(task));
                }
            })
            .map_err(|e| Error::Config(format!("cannot start the ingest thread: {e}")))?;
        Ok(tx)
    }

    /// Runs `task` on the thread, starting it if this is the first.
    fn submit(&self, task: Task) -> Result<()> {
        let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        if tasks.is_none() {
            *tasks = Some(Self::start()?);
        }
        tasks
            .as_ref()
            .expect("started above")
            .send(task)
            .map_err(|_| Error::Config("the ingest thread has stopped".into()))
    }

    /// Starts reading `reader`'s chunks into `buffers` circulating buffers.
    /// Full chunks come out of the returned receiver (an empty chunk or an
    /// error ends the stream); emptied buffers go back through the sender.
    pub(crate) fn read(
        &self,
        mut reader: ChunkReader,
        buffers: usize,
    ) -> Result<(mpsc::Sender<Chunk>, mpsc::Receiver<Result<Chunk>>)> {
        let (empty_tx, empty_rx) = mpsc::channel::<Chunk>();
        let (full_tx, full_rx) = mpsc::sync_channel::<Result<Chunk>>(buffers);
        for _ in 0..buffers.max(1) {
            empty_tx.send(Chunk::default()).expect("receiver is alive");
        }
        let task: Task = Box::new(move || {
            // Ends when the input ends, on an error, or when the run drops
            // its side of either channel (it failed or finished).
            while let Ok(mut chunk) = empty_rx.recv() {
                let t = Instant::now();
                chunk.read_start = Some(t);
                let r = reader.fill(&mut chunk);
                chunk.read_secs = t.elapsed().as_secs_f64();
                let last = r.is_err() || chunk.segments.is_empty();
                if full_tx.send(r.map(|()| chunk)).is_err() || last {
                    break;
                }
            }
        });
        self.submit(task)?;
        Ok((empty_tx, full_rx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn chunks_of(
        parts: &[Vec<u8>],
        records: Records,
        size: usize,
    ) -> Vec<Vec<(usize, u64, Vec<u8>)>> {
        let streams = parts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                (
                    PathBuf::from(format!("p{i}")),
                    Box::new(std::io::Cursor::new(p.clone())) as Stream,
                    None,
                )
            })
            .collect();
        let mut r = ChunkReader::new(streams, records, size);
        let mut out = Vec::new();
        loop {
            let mut c = Chunk::default();
            r.fill(&mut c).unwrap();
            if c.segments.is_empty() {
                return out;
            }
            out.push(
                c.segments
                    .iter()
                    .map(|s| (s.part, s.offset, c.data[s.start..s.end].to_vec()))
                    .collect(),
            );
        }
    }

    proptest! {
        /// Chunks give back every byte of every part, in order, at its
        /// offset, cut only at record boundaries.
        #[test]
        fn chunks_cover_and_respect_records(
            parts in proptest::collection::vec("[ab\n]{0,120}", 1..5),
            size in 1usize..40,
        ) {
            let parts: Vec<Vec<u8>> = parts.into_iter().map(String::into_bytes).collect();
            let chunks = chunks_of(&parts, Records::Lines, size);
            let mut rebuilt = vec![Vec::new(); parts.len()];
            for c in &chunks {
                for (part, offset, bytes) in c {
                    prop_assert_eq!(*offset as usize, rebuilt[*part].len());
                    rebuilt[*part].extend_from_slice(bytes);
                    let end = *offset as usize + bytes.len();
                    if end < parts[*part].len() {
                        prop_assert_eq!(parts[*part][end - 1], b'\n');
                    }
                }
            }
            prop_assert_eq!(rebuilt, parts);
        }

        /// A custom splitter that finds line ends cuts chunks where
        /// `Lines` does.
        #[test]
        fn custom_lines_chunk_as_lines(
            parts in proptest::collection::vec("[ab\n]{0,120}", 1..5),
            size in 1usize..40,
        ) {
            let parts: Vec<Vec<u8>> = parts.into_iter().map(String::into_bytes).collect();
            prop_assert_eq!(
                chunks_of(&parts, Records::Custom(crate::input::tests::line_end), size),
                chunks_of(&parts, Records::Lines, size)
            );
        }

        #[test]
        fn fixed_records_stay_whole(len in 0usize..500, n in 1usize..30, size in 1usize..64) {
            let part: Vec<u8> = (0..len).map(|i| i as u8).collect();
            for c in chunks_of(std::slice::from_ref(&part), Records::Fixed(n), size) {
                for (_, offset, bytes) in c {
                    prop_assert_eq!(offset as usize % n, 0);
                    let end = offset as usize + bytes.len();
                    prop_assert!(end == len || end.is_multiple_of(n));
                }
            }
        }
    }

    #[test]
    fn small_files_are_batched_into_one_chunk() {
        let parts: Vec<Vec<u8>> = (0..10)
            .map(|i| format!("file {i}\n").into_bytes())
            .collect();
        let chunks = chunks_of(&parts, Records::Lines, 1 << 20);
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].len(), 10);
    }

    #[test]
    fn a_record_longer_than_a_chunk_grows_the_chunk() {
        let part = [vec![b'x'; 1000], b"\n".to_vec(), b"ab\n".repeat(100)].concat();
        let chunks = chunks_of(std::slice::from_ref(&part), Records::Lines, 10);
        let first = &chunks[0][0].2;
        assert!(first.len() > 1000 && first.len() < 1020, "{}", first.len());
        assert!(first.starts_with(&part[..1001]) && first.ends_with(b"\n"));
        assert!(chunks[1][0].2.len() <= 12);
    }

    #[test]
    fn stripes_cut_buffers_at_aligned_addresses_one_per_node() {
        let on = |ids: Vec<usize>, chunk| {
            let cpus = vec![vec![0]; ids.len()];
            let mut t = Topology::new(cpus).unwrap();
            assert!(Stripes::new(&t, chunk).is_none(), "a given topology");
            t = t.with_kernel_ids(ids);
            Stripes::new(&t, chunk)
        };
        assert_eq!(on(vec![0], 64 << 20), None);
        let h = HUGE_PAGE;
        let s = on(vec![0, 2, 5], 12 * h).unwrap();
        assert_eq!((s.share, s.align), (4 * h, h));
        // A buffer starting 3/4 of a huge page past an alignment: each
        // stripe ends at the nearest alignment to its share's end.
        let base = 7 * h + 3 * h / 4;
        let cut = |len| s.cut(base, len).collect::<Vec<_>>();
        assert_eq!(
            cut(12 * h),
            vec![
                (0, base..12 * h),
                (2, 12 * h..16 * h),
                (5, 16 * h..base + 12 * h)
            ]
        );
        // A short buffer has fewer stripes; a long one, a longer last.
        assert_eq!(cut(h), vec![(0, base..base + h)]);
        assert_eq!(cut(99 * h).last(), Some(&(5, 16 * h..base + 99 * h)));
        // Small shares end on pages.
        let s = on(vec![0, 1], 2 * h).unwrap();
        assert_eq!((s.share, s.align), (h, PAGE));
        assert_eq!(s.cut(base, 2 * h).next(), Some((0, base..base + h)));
    }

    /// A placed reader cuts the very chunks of an unplaced one, with each
    /// buffer's whole room placed.
    #[test]
    fn placed_chunks_hold_the_same_bytes() {
        let stripes = Stripes {
            nodes: vec![0, 0, 0],
            share: HUGE_PAGE,
            align: PAGE,
        };
        let data: Vec<u8> = (0..5 * HUGE_PAGE + 77).map(|i| (i % 97) as u8).collect();
        let reader = |placed| {
            let streams: Vec<Named> = vec![(
                PathBuf::from("x"),
                Box::new(std::io::Cursor::new(data.clone())),
                None,
            )];
            ChunkReader::new(streams, Records::Fixed(7), 3 * HUGE_PAGE).placed(placed)
        };
        let (mut plain, mut placed) = (reader(None), reader(Some(stripes)));
        let (mut a, mut b) = (Chunk::default(), Chunk::default());
        loop {
            plain.fill(&mut a).unwrap();
            placed.fill(&mut b).unwrap();
            assert_eq!((&a.data, &a.segments.len()), (&b.data, &b.segments.len()));
            assert_eq!(a.placed, None);
            let room = (b.data.as_ptr() as usize, b.data.capacity());
            assert_eq!(b.placed, Some(room));
            if a.segments.is_empty() {
                break;
            }
        }
    }

    #[test]
    fn a_failing_reader_is_an_error_naming_it() {
        struct Failing(usize);
        impl Read for Failing {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if self.0 == 0 {
                    return Err(std::io::Error::other("disk on fire"));
                }
                let n = buf.len().min(self.0);
                buf[..n].fill(b'a');
                self.0 -= n;
                Ok(n)
            }
        }
        let streams: Vec<Named> = vec![(PathBuf::from("big.txt"), Box::new(Failing(100)), None)];
        let mut r = ChunkReader::new(streams, Records::Lines, 1 << 20);
        let e = r.fill(&mut Chunk::default()).unwrap_err().to_string();
        assert_eq!(e, "cannot read 'big.txt': disk on fire");
    }
}
