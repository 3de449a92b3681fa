//! Output lines formatted on every core and written in order.
//!
//! A run hands its output over in order, and formatting it into text on
//! the one thread that writes leaves the other cores idle: the inverted
//! index of the 256 MiB corpus is 239 MB of text, and formatting it took
//! most of that run's merge phase. Here the items are cut into batches of
//! about [`BATCH_BYTES`] of text; each batch is formatted into a buffer by
//! one of the formatting threads, and the caller's thread writes the
//! buffers in batch order, so the output is byte for byte what formatting
//! every item in order on one thread writes.
//!
//! An output of one batch is formatted on the caller's thread and starts
//! no thread, so a small input's run stays quick. At most a few batches
//! per thread are in flight, so memory stays bounded whatever the
//! output's size.

use std::collections::BTreeMap;
use std::io::{self, Write};

use crossbeam_channel::{bounded, unbounded, Receiver, Sender, TrySendError};

/// Bytes of text a batch aims at: large enough that handing a batch over
/// costs little beside formatting it, small enough that the batches in
/// flight take little memory.
const BATCH_BYTES: usize = 1 << 20;

/// Items handed over in output order (see the module docs).
pub(crate) struct Lines<'a, T, F> {
    out: &'a mut dyn Write,
    format: &'a F,
    batch: Vec<T>,
    /// Estimated bytes of text of `batch`.
    bytes: usize,
    /// Batches handed to the formatting threads, and batches written.
    sent: u64,
    written: u64,
    /// Formatted batches waiting for an earlier one, by number.
    waiting: BTreeMap<u64, Vec<u8>>,
    /// Emptied batches, for reuse.
    spare: Vec<Vec<T>>,
    /// None when the text is formatted on the caller's thread.
    formatters: Option<Formatters<T>>,
}

/// A batch formatted: its number, its text, and the emptied batch.
type Done<T> = (u64, Vec<u8>, Vec<T>);

/// The formatting threads' channels: batches to format, numbered, their
/// text back, and text buffers written, for reuse (buffers new to the
/// process would cost a page fault every few kilobytes).
struct Formatters<T> {
    jobs: Sender<(u64, Vec<T>)>,
    done: Receiver<Done<T>>,
    written: Sender<Vec<u8>>,
}

/// Calls `produce` with a [`Lines`] that formats each item it is given
/// with `format` and writes the text to `out` in order: on `threads`
/// threads when the text is expected to take more than one batch
/// (`expected` bytes), else on this thread. `produce` must call
/// [`Lines::finish`] after its last item; after an error (its own or a
/// write's) what was not written is dropped.
pub(crate) fn scoped<T, F, R>(
    out: &mut dyn Write,
    (threads, expected): (usize, usize),
    format: F,
    produce: impl FnOnce(&mut Lines<'_, T, F>) -> R,
) -> R
where
    T: Send,
    F: Fn(T, &mut Vec<u8>) + Sync,
{
    std::thread::scope(|scope| {
        let formatters = (expected > BATCH_BYTES).then(|| {
            let (jobs, todo) = bounded::<(u64, Vec<T>)>(threads.max(1));
            let (finished, done) = unbounded();
            let (written, reuse) = unbounded::<Vec<u8>>();
            for _ in 0..threads.max(1) {
                let (todo, finished, reuse) = (todo.clone(), finished.clone(), reuse.clone());
                let format = &format;
                scope.spawn(move || {
                    for (n, mut batch) in todo {
                        let mut text = reuse
                            .try_recv()
                            .unwrap_or_else(|_| Vec::with_capacity(BATCH_BYTES + BATCH_BYTES / 4));
                        batch.drain(..).for_each(|item| format(item, &mut text));
                        if finished.send((n, text, batch)).is_err() {
                            break;
                        }
                    }
                });
            }
            Formatters {
                jobs,
                done,
                written,
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
            formatters,
        };
        produce(&mut lines)
        // Dropping `lines` closes the queue: the threads finish what is
        // queued and stop, and the scope waits for them.
    })
}

impl<T, F> Lines<'_, T, F>
where
    F: Fn(T, &mut Vec<u8>),
{
    /// Hands over the next item, whose text takes about `bytes` bytes.
    /// Fails when writing an earlier batch failed.
    pub(crate) fn push(&mut self, item: T, bytes: usize) -> io::Result<()> {
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
        let batch = std::mem::take(&mut self.batch);
        if !batch.is_empty() {
            self.send(batch)?;
        }
        if let Some(mut f) = self.formatters.take() {
            // Closing the queue stops the threads once it is empty.
            f.jobs = bounded(0).0;
            while self.written < self.sent {
                let done = f.done.recv().expect("a formatting thread failed");
                self.arrived(&f, done)?;
            }
        }
        Ok(())
    }

    /// Queues `batch` for the formatting threads, writing finished
    /// batches meanwhile; when the queue is full, waits for a thread to
    /// finish one. Without threads, formats and writes it here.
    fn send(&mut self, batch: Vec<T>) -> io::Result<()> {
        let Some(f) = self.formatters.take() else {
            let mut text = Vec::with_capacity(self.bytes);
            batch
                .into_iter()
                .for_each(|item| (self.format)(item, &mut text));
            return self.out.write_all(&text);
        };
        let sent = self.queue(&f, batch);
        self.formatters = Some(f);
        sent
    }

    fn queue(&mut self, f: &Formatters<T>, batch: Vec<T>) -> io::Result<()> {
        let mut job = (self.sent, batch);
        loop {
            while let Ok(done) = f.done.try_recv() {
                self.arrived(f, done)?;
            }
            match f.jobs.try_send(job) {
                Ok(()) => break,
                Err(TrySendError::Full(back)) => {
                    job = back;
                    let done = f.done.recv().expect("a formatting thread failed");
                    self.arrived(f, done)?;
                }
                Err(TrySendError::Disconnected(_)) => panic!("a formatting thread failed"),
            }
        }
        self.sent += 1;
        Ok(())
    }

    /// Keeps a formatted batch, and writes every batch that is next.
    fn arrived(&mut self, f: &Formatters<T>, (n, text, batch): Done<T>) -> io::Result<()> {
        self.waiting.insert(n, text);
        self.spare.push(batch);
        while let Some(mut text) = self.waiting.remove(&self.written) {
            self.out.write_all(&text)?;
            self.written += 1;
            text.clear();
            // The threads stop only after this one's last batch.
            let _ = f.written.send(text);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `0..n`, one number a line, through [`Lines`].
    fn numbers(n: u64, (threads, expected): (usize, usize), bytes: usize) -> Vec<u8> {
        let mut out = Vec::new();
        scoped(
            &mut out,
            (threads, expected),
            |i: u64, text: &mut Vec<u8>| writeln!(text, "{i}").unwrap(),
            |lines| {
                (0..n).try_for_each(|i| lines.push(i, bytes))?;
                lines.finish()
            },
        )
        .unwrap();
        out
    }

    #[test]
    fn writes_every_item_in_order_on_any_number_of_threads() {
        let want: Vec<u8> = (0..200_000u64)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        for threads in [1, 2, 3, 8] {
            // Small estimates: one batch; large: a batch every few items.
            for bytes in [1, 7, 1 << 16] {
                // Expected to be small (formatted here) or large (threads).
                for expected in [0, 1 << 30] {
                    let got = numbers(200_000, (threads, expected), bytes);
                    assert_eq!(got, want, "{threads} {bytes} {expected}");
                }
            }
        }
        assert!(numbers(0, (4, 1 << 30), 1 << 20).is_empty());
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
            let mut out = Failing { left: 3 << 20 };
            let mut pushed = 0u64;
            let err = scoped(
                &mut out,
                (threads, expected),
                |i: u64, text: &mut Vec<u8>| writeln!(text, "{i:>15}").unwrap(),
                |lines| {
                    for i in 0.. {
                        lines.push(i, 16)?;
                        pushed += 1;
                    }
                    lines.finish()
                },
            )
            .unwrap_err();
            assert_eq!(err.to_string(), "disk full");
            // The error surfaced within a few batches of the failed write.
            assert!(
                pushed < (3 + 4 * threads as u64) << 16,
                "{threads}: {pushed}"
            );
        }
    }
}
