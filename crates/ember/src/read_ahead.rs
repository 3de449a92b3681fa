//! Reading ahead: streams that cost CPU to read (decoders of compressed
//! files) are read on threads of their own, several at once, while the
//! ingest thread takes their bytes in order.
//!
//! - **Blocks**: a stream is read into blocks of [`BLOCK`] bytes, handed
//!   to its reader through a queue of at most [`QUEUED`] blocks; emptied
//!   blocks go back to be filled again. A stream that expands a
//!   thousandfold (a "zip bomb") is read no further ahead than that.
//! - **Order and bound**: streams are taken in order by at most `threads`
//!   threads, and a thread takes the next stream only when fewer than
//!   `threads` taken streams are still unread to their end. So at most
//!   `threads x (QUEUED + 2)` blocks exist at once, and the stream the
//!   ingest thread waits on is always one being read: the ones before it
//!   are read to their end, so a slot is free for it.
//! - **Threads**: started for each run that reads such streams, and ended
//!   when its streams are read or dropped (a failed or finished run drops
//!   its readers: a thread whose block finds no reader stops, and drops
//!   the streams no thread took yet).
//! - **Failures**: a stream's error, or a panic while reading it, comes
//!   back as the error of its reader's next read.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};

use crate::error::{panic_message, Error, Result};

/// A stream to read ahead, or the reader of one.
type Stream = Box<dyn Read + Send>;

/// Bytes per block.
pub(crate) const BLOCK: usize = 1 << 20;
/// Blocks queued per stream, ahead of its reader.
pub(crate) const QUEUED: usize = 2;

/// The most bytes [`read_ahead`] holds in blocks for `streams` streams
/// read on `threads` threads.
pub(crate) fn bound(streams: usize, threads: usize) -> u64 {
    let reading = threads.max(1).min(streams);
    (reading * (QUEUED + 2) * BLOCK) as u64
}

/// What a reading thread hands a stream's reader.
enum Msg {
    /// The next bytes (never empty).
    Block(Vec<u8>),
    /// The stream ended.
    End,
    /// The stream failed, or panicked.
    Failed(io::Error),
}

/// A stream to read ahead: the stream, where its blocks go, and where
/// emptied ones come back.
struct Work {
    stream: Stream,
    blocks: Sender<Msg>,
    emptied: Receiver<Vec<u8>>,
}

/// Readers of `streams`, in order, each read ahead on up to `threads`
/// threads started here (the module doc says how).
///
/// # Errors
///
/// No thread could be started.
pub(crate) fn read_ahead(streams: Vec<Stream>, threads: usize) -> Result<Vec<Stream>> {
    if streams.is_empty() {
        return Ok(streams);
    }
    let threads = threads.clamp(1, streams.len());
    // A slot is a taken stream not yet read to its end by its reader.
    // Unbounded, so that giving one back never waits (a reader dropped
    // before its stream was taken gives one too: the run is over then).
    let (slot_back, slots) = unbounded::<()>();
    for _ in 0..threads {
        slot_back.send(()).expect("the channel holds every slot");
    }
    let mut queue = VecDeque::with_capacity(streams.len());
    let mut readers: Vec<Stream> = Vec::with_capacity(streams.len());
    for stream in streams {
        let (blocks, from) = bounded(QUEUED);
        let (back, emptied) = unbounded();
        queue.push_back(Work {
            stream,
            blocks,
            emptied,
        });
        readers.push(Box::new(Ahead {
            blocks: from,
            emptied: back,
            slot: Some(slot_back.clone()),
            block: Vec::new(),
            at: 0,
            done: false,
        }));
    }
    let queue = Arc::new(Mutex::new(queue));
    for i in 0..threads {
        let (queue, slots) = (Arc::clone(&queue), slots.clone());
        std::thread::Builder::new()
            .name(format!("ember-decode-{i}"))
            .spawn(move || work(&queue, &slots))
            .map_err(|e| Error::Config(format!("cannot start a decoding thread: {e}")))?;
    }
    Ok(readers)
}

/// A reading thread: takes a slot, then the next stream, and reads it
/// all; until no stream is left or a stream's reader is gone.
fn work(queue: &Mutex<VecDeque<Work>>, slots: &Receiver<()>) {
    while slots.recv().is_ok() {
        let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
        let Some(work) = next else { return };
        if !fill(work) {
            // The run let go of its input: drop what no thread took.
            queue.lock().unwrap_or_else(|e| e.into_inner()).clear();
            return;
        }
    }
}

/// Reads `work`'s stream to its end (or first error) into blocks; false
/// if its reader is gone.
fn fill(mut work: Work) -> bool {
    loop {
        let mut block = work
            .emptied
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BLOCK));
        block.clear();
        let stream = &mut work.stream;
        let read = catch_unwind(AssertUnwindSafe(|| {
            stream.take(BLOCK as u64).read_to_end(&mut block)
        }));
        let msg = match read {
            Ok(Ok(0)) => Msg::End,
            Ok(Ok(_)) => Msg::Block(block),
            Ok(Err(e)) => Msg::Failed(e),
            Err(payload) => {
                let why = format!("the decoder panicked: {}", panic_message(&*payload));
                Msg::Failed(io::Error::other(why))
            }
        };
        let last = !matches!(msg, Msg::Block(_));
        if work.blocks.send(msg).is_err() {
            return false;
        }
        if last {
            return true;
        }
    }
}

/// The reader of a stream read ahead.
struct Ahead {
    blocks: Receiver<Msg>,
    /// Where emptied blocks go back.
    emptied: Sender<Vec<u8>>,
    /// Given back when the stream is read to its end (or this is dropped).
    slot: Option<Sender<()>>,
    /// The block being read, from `at`.
    block: Vec<u8>,
    at: usize,
    /// The stream ended or failed.
    done: bool,
}

impl Ahead {
    /// Marks the stream read, freeing its slot for the next one.
    fn finish(&mut self) {
        self.done = true;
        if let Some(slot) = self.slot.take() {
            let _ = slot.send(());
        }
    }
}

impl Read for Ahead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.block.len() {
            if self.done {
                return Ok(0);
            }
            let emptied = std::mem::take(&mut self.block);
            if emptied.capacity() > 0 {
                let _ = self.emptied.send(emptied);
            }
            self.at = 0;
            match self.blocks.recv() {
                Ok(Msg::Block(block)) => self.block = block,
                Ok(Msg::End) => self.finish(),
                Ok(Msg::Failed(e)) => {
                    self.finish();
                    return Err(e);
                }
                Err(_) => {
                    self.finish();
                    return Err(io::Error::other("the decoding thread stopped"));
                }
            }
        }
        let n = buf.len().min(self.block.len() - self.at);
        buf[..n].copy_from_slice(&self.block[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

    /// `n` bytes of `byte`, counting how many were read.
    struct Counting {
        byte: u8,
        left: u64,
        read: Arc<AtomicU64>,
    }

    impl Read for Counting {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.left as usize);
            buf[..n].fill(self.byte);
            self.left -= n as u64;
            self.read.fetch_add(n as u64, Relaxed);
            Ok(n)
        }
    }

    fn counting(byte: u8, left: u64) -> (Stream, Arc<AtomicU64>) {
        let read = Arc::new(AtomicU64::new(0));
        let stream = Counting {
            byte,
            left,
            read: Arc::clone(&read),
        };
        (Box::new(stream), read)
    }

    #[test]
    fn streams_come_back_whole_and_in_order() {
        let streams = (0..7u8)
            .map(|i| counting(b'a' + i, i as u64 * 300_000).0)
            .collect();
        for (i, mut r) in read_ahead(streams, 3).unwrap().into_iter().enumerate() {
            let mut out = Vec::new();
            r.read_to_end(&mut out).unwrap();
            assert_eq!(out.len(), i * 300_000);
            assert!(out.iter().all(|&b| b == b'a' + i as u8));
        }
    }

    /// However large the streams, reading runs at most the queue ahead,
    /// and no further than `threads` streams.
    #[test]
    fn reading_ahead_is_bounded() {
        let huge = 1 << 40;
        let (streams, read): (Vec<_>, Vec<_>) = (0..4).map(|_| counting(b'x', huge)).unzip();
        let mut readers = read_ahead(streams, 2).unwrap();
        let mut buf = vec![0; 1000];
        readers[0].read_exact(&mut buf).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        let bound = bound(1, 1);
        assert_eq!(super::bound(4, 2), 2 * bound);
        assert_eq!(super::bound(0, 2), 0);
        let ahead: Vec<u64> = read.iter().map(|r| r.load(Relaxed)).collect();
        assert!(ahead[0] <= bound && ahead[1] <= bound, "{ahead:?}");
        assert!(ahead[1] > 0, "the second stream is read ahead: {ahead:?}");
        assert_eq!(ahead[2..], [0, 0], "only two streams at once");
        drop(readers);
    }

    #[test]
    fn errors_and_panics_come_back_as_read_errors() {
        struct Failing(bool);
        impl Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                match self.0 {
                    true => panic!("decoder bug"),
                    false => Err(io::Error::other("bad block")),
                }
            }
        }
        let streams: Vec<Stream> = vec![
            Box::new(&b"fine"[..]),
            Box::new(Failing(false)),
            Box::new(Failing(true)),
        ];
        let mut readers = read_ahead(streams, 2).unwrap();
        let mut out = String::new();
        readers[0].read_to_string(&mut out).unwrap();
        assert_eq!(out, "fine");
        let e = readers[1].read(&mut [0; 8]).unwrap_err().to_string();
        assert_eq!(e, "bad block");
        let e = readers[2].read(&mut [0; 8]).unwrap_err().to_string();
        assert_eq!(e, "the decoder panicked: decoder bug");
        assert_eq!(readers[2].read(&mut [0; 8]).unwrap(), 0, "then ended");
    }
}
