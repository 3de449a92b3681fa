//! Output lines formatted on every core and written in order.
//!
//! A run hands its output over in order, and formatting it into text on
//! the one thread that writes leaves the other cores idle while it does:
//! for an inverted index, whose text is about as long as its input, that
//! was most of the merge phase. Here the items are cut into batches of
//! about [`BATCH_BYTES`] of text; each batch is formatted into a buffer by
//! one of the formatting threads, and the caller's thread writes the
//! buffers in batch order, so the output is byte for byte what formatting
//! every item in order on one thread writes.
//!
//! An output of one batch is formatted on the caller's thread and starts
//! no thread, so a small input's run stays quick. At most two batches per
//! thread are in flight (queued, being formatted, or formatted and not yet
//! written), so memory stays bounded whatever the output's size; text
//! buffers are reused. A panic in `format` is raised again on the caller's
//! thread.

use std::any::Any;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::panic::{self, AssertUnwindSafe};

use crossbeam_channel::{unbounded, Receiver, Sender};

/// Bytes of text a batch aims at: large enough that handing a batch over
/// costs little beside formatting it, small enough that the batches in
/// flight take little memory.
const BATCH_BYTES: usize = 1 << 20;

/// Batches in flight per formatting thread, at most.
const IN_FLIGHT_PER_THREAD: u64 = 2;

/// How many items ahead of the one being formatted [`Format::prefetch`]
/// is called: formatting a line takes about as long as a cache miss.
const PREFETCH_AHEAD: usize = 4;

/// How an item becomes text. Any `Fn(T, &mut Vec<u8>)` is one; a type of
/// its own can also start loading, a few items ahead, memory the item
/// points to (written long before, out of cache).
pub(crate) trait Format<T>: Sync {
    /// Appends `item`'s text to `text`.
    fn format(&self, item: T, text: &mut Vec<u8>);

    /// Starts loading what formatting `item` will read; called
    /// [`PREFETCH_AHEAD`] items before `item` is formatted. Nothing by
    /// default.
    #[inline(always)]
    fn prefetch(&self, _item: &T) {}
}

impl<T, F: Fn(T, &mut Vec<u8>) + Sync> Format<T> for F {
    #[inline(always)]
    fn format(&self, item: T, text: &mut Vec<u8>) {
        self(item, text)
    }
}

/// Formats every item of `batch` into `text`, in order, leaving `batch`
/// empty.
fn format_all<T>(format: &impl Format<T>, batch: &mut Vec<T>, text: &mut Vec<u8>) {
    let mut items = batch.drain(..);
    while let Some(item) = items.next() {
        if let Some(ahead) = items.as_slice().get(PREFETCH_AHEAD - 1) {
            format.prefetch(ahead);
        }
        format.format(item, text);
    }
}

/// Items handed over in output order (see the module docs).
pub(crate) struct Lines<'a, T, F> {
    out: &'a mut dyn Write,
    format: &'a F,
    batch: Vec<T>,
    /// Estimated bytes of text of `batch`.
    bytes: usize,
    /// Batches handed to the formatting threads.
    sent: u64,
    /// Batches written to `out`.
    written: u64,
    /// Formatted batches waiting for an earlier one, by number.
    waiting: BTreeMap<u64, Vec<u8>>,
    /// Emptied batches, for reuse.
    spare: Vec<Vec<T>>,
    /// The text buffer of the batches formatted on this thread.
    text: Vec<u8>,
    /// Set by a failed write: nothing more is written.
    failed: bool,
    /// None when the text is formatted on the caller's thread.
    formatters: Option<Formatters<T>>,
}

/// A batch formatted (its number, its text, the emptied batch), or the
/// panic that stopped its thread.
type Done<T> = Result<(u64, Vec<u8>, Vec<T>), Box<dyn Any + Send>>;

/// The formatting threads' channels: batches to format, numbered, their
/// text back, and text buffers written, for reuse (buffers new to the
/// process would cost a page fault every few kilobytes).
struct Formatters<T> {
    jobs: Sender<(u64, Vec<T>)>,
    done: Receiver<Done<T>>,
    written: Sender<Vec<u8>>,
    /// Most batches in flight.
    in_flight: u64,
}

/// Calls `produce` with a [`Lines`] that formats each item it is given
/// with `format` and writes the text to `out` in order: on `threads`
/// threads when the text is expected to take more than one batch
/// (`expected` bytes), else on this thread. `produce` must call
/// [`Lines::finish`] after its last item; after an error (its own or a
/// write's) what was not written is dropped.
pub(crate) fn scoped<T, F, R>(
    out: &mut dyn Write,
    threads: usize,
    expected: usize,
    format: F,
    produce: impl FnOnce(&mut Lines<'_, T, F>) -> R,
) -> R
where
    T: Send,
    F: Format<T>,
{
    std::thread::scope(|scope| {
        let formatters = (expected > BATCH_BYTES).then(|| {
            let threads = threads.max(1);
            let (jobs, todo) = unbounded::<(u64, Vec<T>)>();
            let (finished, done) = unbounded();
            let (written, reuse) = unbounded::<Vec<u8>>();
            for _ in 0..threads {
                let (todo, finished, reuse) = (todo.clone(), finished.clone(), reuse.clone());
                let format = &format;
                scope.spawn(move || {
                    for (n, mut batch) in todo {
                        let mut text = reuse
                            .try_recv()
                            .unwrap_or_else(|_| Vec::with_capacity(BATCH_BYTES + BATCH_BYTES / 4));
                        let formatted = panic::catch_unwind(AssertUnwindSafe(|| {
                            format_all(format, &mut batch, &mut text)
                        }));
                        let stop = formatted.is_err();
                        if finished.send(formatted.map(|()| (n, text, batch))).is_err() || stop {
                            break;
                        }
                    }
                });
            }
            Formatters {
                jobs,
                done,
                written,
                in_flight: IN_FLIGHT_PER_THREAD * threads as u64,
            }
        });
        let mut lines = Lines {
            out,
            format: &format,
            batch: Vec::new(),
            bytes: 0,
            sent: 0,
            written: 0,
            waiting: BTreeMap::new(),
            spare: Vec::new(),
            text: Vec::new(),
            failed: false,
            formatters,
        };
        produce(&mut lines)
        // Dropping `lines` closes the queue: the threads finish what is
        // queued and stop, and the scope waits for them.
    })
}

impl<T, F> Lines<'_, T, F>
where
    F: Format<T>,
{
    /// Hands over the next item, whose text takes about `bytes` bytes.
    /// Fails when writing an earlier batch failed.
    pub(crate) fn push(&mut self, item: T, bytes: usize) -> io::Result<()> {
        self.check()?;
        self.batch.push(item);
        self.bytes += bytes;
        if self.bytes >= BATCH_BYTES {
            let next = self.spare.pop().unwrap_or_default();
            let batch = std::mem::replace(&mut self.batch, next);
            self.send(batch)?;
            self.bytes = 0;
        }
        Ok(())
    }

    /// Formats and writes what is left, after the last item.
    pub(crate) fn finish(&mut self) -> io::Result<()> {
        self.check()?;
        let batch = std::mem::take(&mut self.batch);
        if !batch.is_empty() {
            self.send(batch)?;
        }
        if let Some(f) = self.formatters.take() {
            let Formatters {
                jobs,
                done,
                written,
                ..
            } = f;
            // Closing the queue stops the threads once it is empty.
            drop(jobs);
            while self.written < self.sent {
                self.arrived(&written, next(&done))?;
            }
        }
        Ok(())
    }

    /// Fails once a write has failed.
    fn check(&self) -> io::Result<()> {
        match self.failed {
            true => Err(io::Error::other(
                "the output stopped at an earlier write error",
            )),
            false => Ok(()),
        }
    }

    /// Queues `batch` for the formatting threads (see [`Lines::queue`]).
    /// Without threads, formats and writes it here.
    fn send(&mut self, mut batch: Vec<T>) -> io::Result<()> {
        let Some(f) = self.formatters.take() else {
            let mut text = std::mem::take(&mut self.text);
            text.clear();
            format_all(self.format, &mut batch, &mut text);
            let wrote = self.write(&text);
            self.text = text;
            return wrote;
        };
        let sent = self.queue(&f, batch);
        self.formatters = Some(f);
        sent
    }

    /// Queues `batch` for the formatting threads, writing the batches
    /// they have finished; with as many batches in flight as allowed,
    /// first waits for the next one to be written.
    fn queue(&mut self, f: &Formatters<T>, batch: Vec<T>) -> io::Result<()> {
        while self.sent - self.written >= f.in_flight {
            self.arrived(&f.written, next(&f.done))?;
        }
        while let Ok(done) = f.done.try_recv() {
            self.arrived(&f.written, done)?;
        }
        f.jobs
            .send((self.sent, batch))
            .expect("the formatting threads outlive the queue");
        self.sent += 1;
        Ok(())
    }

    /// Keeps a formatted batch, and writes every batch that is next
    /// (handing their buffers back to the threads through `reuse`).
    /// Raises a formatting thread's panic here.
    fn arrived(&mut self, reuse: &Sender<Vec<u8>>, done: Done<T>) -> io::Result<()> {
        let (n, text, batch) = done.unwrap_or_else(|p| panic::resume_unwind(p));
        self.waiting.insert(n, text);
        self.spare.push(batch);
        while let Some(mut text) = self.waiting.remove(&self.written) {
            self.write(&text)?;
            self.written += 1;
            text.clear();
            // The threads may have stopped already (after the last batch).
            let _ = reuse.send(text);
        }
        Ok(())
    }

    /// Writes `text`; after a failure, nothing more.
    fn write(&mut self, text: &[u8]) -> io::Result<()> {
        self.check()?;
        let wrote = self.out.write_all(text);
        self.failed = wrote.is_err();
        wrote
    }
}

/// The next batch a formatting thread finished. Every batch in flight
/// comes back (formatted or as its thread's panic), so this never waits
/// for one that cannot.
fn next<T>(done: &Receiver<Done<T>>) -> Done<T> {
    done.recv().expect("a batch in flight comes back")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `0..n`, one number a line, through [`Lines`], each number
    /// estimated at `bytes` bytes of text, formatted by `format`.
    fn numbers_with(
        n: u64,
        threads: usize,
        expected: usize,
        bytes: usize,
        format: impl Fn(u64, &mut Vec<u8>) + Sync,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        scoped(&mut out, threads, expected, format, |lines| {
            (0..n).try_for_each(|i| lines.push(i, bytes))?;
            lines.finish()
        })
        .unwrap();
        out
    }

    fn line(i: u64, text: &mut Vec<u8>) {
        writeln!(text, "{i}").unwrap()
    }

    fn want(n: u64) -> Vec<u8> {
        (0..n).flat_map(|i| format!("{i}\n").into_bytes()).collect()
    }

    #[test]
    fn writes_every_item_in_order_on_any_number_of_threads() {
        for threads in [1, 2, 3, 8] {
            // Small estimates: one batch; large: a batch every few items.
            for bytes in [1, 7, 1 << 16] {
                // Expected to be small (formatted here) or large (threads).
                for expected in [0, 1 << 30] {
                    let got = numbers_with(200_000, threads, expected, bytes, line);
                    assert_eq!(got, want(200_000), "{threads} {bytes} {expected}");
                }
            }
        }
        assert!(numbers_with(0, 4, 1 << 30, 1 << 20, line).is_empty());
    }

    #[test]
    fn batches_that_finish_out_of_order_are_written_in_order() {
        // The first batch (items 0-15, a batch every 16 items) finishes
        // well after later ones.
        let slow_first = |i: u64, text: &mut Vec<u8>| {
            if i == 0 {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            line(i, text)
        };
        let got = numbers_with(1000, 4, 1 << 30, BATCH_BYTES / 16, slow_first);
        assert_eq!(got, want(1000));
    }

    /// A format that records its calls: `(true, i)` for a prefetch of
    /// item `i`, `(false, i)` for its formatting.
    struct Recorded<'a>(&'a std::sync::Mutex<Vec<(bool, u64)>>);

    impl Format<u64> for Recorded<'_> {
        fn format(&self, i: u64, text: &mut Vec<u8>) {
            self.0.lock().unwrap().push((false, i));
            line(i, text)
        }
        fn prefetch(&self, i: &u64) {
            self.0.lock().unwrap().push((true, *i));
        }
    }

    #[test]
    fn a_format_of_its_own_is_told_of_each_item_a_few_items_ahead() {
        let calls = std::sync::Mutex::default();
        let mut out = Vec::new();
        // One batch, formatted on this thread.
        scoped(&mut out, 1, 0, Recorded(&calls), |lines| {
            (0..50).try_for_each(|i| lines.push(i, 1))?;
            lines.finish()
        })
        .unwrap();
        assert_eq!(out, want(50));
        let calls = calls.into_inner().unwrap();
        let formatted: Vec<u64> = calls.iter().filter(|c| !c.0).map(|c| c.1).collect();
        assert_eq!(formatted, (0..50).collect::<Vec<_>>());
        // Each item past the first few is prefetched once, while the item
        // `PREFETCH_AHEAD` before it is formatted next.
        let ahead = PREFETCH_AHEAD as u64;
        for (at, &(prefetch, i)) in calls.iter().enumerate() {
            if prefetch {
                assert_eq!(calls[at + 1], (false, i - ahead), "{calls:?}");
            }
        }
        let prefetched = calls.iter().filter(|c| c.0).map(|c| c.1);
        assert!(prefetched.eq(ahead..50), "{calls:?}");
    }

    #[test]
    fn a_panic_in_format_is_raised_on_the_callers_thread() {
        let boom = |i: u64, text: &mut Vec<u8>| {
            if i == 500 {
                panic!("cannot format {i}");
            }
            line(i, text)
        };
        for expected in [0, 1 << 30] {
            let raised = panic::catch_unwind(AssertUnwindSafe(|| {
                numbers_with(1000, 2, expected, BATCH_BYTES / 16, boom)
            }));
            let payload = raised.unwrap_err();
            let message = payload.downcast_ref::<String>().unwrap();
            assert!(message.contains("cannot format 500"), "{message}");
        }
    }

    /// A writer that fails after `left` bytes.
    struct Failing {
        left: usize,
    }

    impl Write for Failing {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if buf.len() > self.left {
                return Err(io::Error::other("disk full"));
            }
            self.left -= buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_write_error_stops_the_producer_and_every_thread() {
        for (threads, expected) in [(1, 0), (1, 1 << 30), (2, 1 << 30), (4, 1 << 30)] {
            // Batches of 1 MiB of text (16 bytes an item): the fourth
            // batch's write fails.
            let mut out = Failing { left: 3 << 20 };
            let mut pushed = 0u64;
            let format = |i: u64, text: &mut Vec<u8>| writeln!(text, "{i:>15}").unwrap();
            let err = scoped(&mut out, threads, expected, format, |lines| {
                for i in 0.. {
                    lines.push(i, 16)?;
                    pushed += 1;
                }
                lines.finish()
            })
            .unwrap_err();
            assert_eq!(err.to_string(), "disk full");
            // Batches 0-2 were written; at most the cap's batches were in
            // flight beyond them when batch 3's write failed.
            let cap = IN_FLIGHT_PER_THREAD * threads as u64;
            assert!(pushed < (4 + cap) << 16, "{threads}: {pushed}");
        }
    }
}
