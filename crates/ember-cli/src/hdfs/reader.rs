//! An HDFS file as a `std::io::Read`: ranges of [`READ_AHEAD`] bytes
//! fetched by the async client on a small tokio runtime, the next range in
//! flight while the current one is read.

use std::future::Future;
use std::io::{self, Read};
use std::sync::Arc;

use bytes::Bytes;
use hdfs_native::client::IORuntime;
use hdfs_native::file::FileReader;
use hdfs_native::HdfsError;
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

/// Bytes of one read request to the datanodes; the reader keeps one such
/// request in flight ahead of what it has handed out.
const READ_AHEAD: usize = 8 << 20;

/// The tokio runtime that the clients and readers of one input share: one
/// worker thread runs the client's connections and the reads in flight;
/// a caller blocks on a request's answer. Shut down without waiting when
/// the last reader is dropped.
pub(super) struct Io {
    /// Always `Some` until dropped.
    rt: Option<Runtime>,
}

impl Io {
    /// Starts the runtime.
    pub(super) fn start() -> io::Result<Io> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("ember-hdfs")
            .enable_all()
            .build()?;
        Ok(Io { rt: Some(rt) })
    }

    /// The runtime (until dropped).
    fn rt(&self) -> &Runtime {
        self.rt
            .as_ref()
            .expect("the runtime lives until Io is dropped")
    }

    /// The runtime, for the client's own tasks.
    pub(super) fn handle(&self) -> IORuntime {
        IORuntime::Handle(self.rt().handle().clone())
    }

    /// Runs `f` to its end on the calling thread (never a runtime thread).
    pub(super) fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.rt().block_on(f)
    }
}

impl Drop for Io {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// Reads an HDFS file from its start to its end, one range request ahead.
pub(super) struct RangeReader {
    /// The file, shared with the request in flight.
    file: Arc<FileReader>,
    /// Fetched bytes not yet read.
    ready: Bytes,
    /// The next range, being fetched.
    ahead: Option<JoinHandle<hdfs_native::Result<Bytes>>>,
    /// File offset of the first byte not yet requested.
    requested: usize,
    /// The runtime; declared last, so dropped after the file.
    io: Arc<Io>,
}

impl RangeReader {
    /// A reader of `file` from its start; nothing is fetched before the
    /// first read.
    pub(super) fn new(file: FileReader, io: Arc<Io>) -> Self {
        RangeReader {
            file: Arc::new(file),
            ready: Bytes::new(),
            ahead: None,
            requested: 0,
            io,
        }
    }

    /// Starts fetching the next range, if any is left.
    fn request(&mut self) -> Option<JoinHandle<hdfs_native::Result<Bytes>>> {
        let len = self.file.file_length();
        if self.requested >= len {
            return None;
        }
        let (at, n) = (self.requested, READ_AHEAD.min(len - self.requested));
        self.requested += n;
        let file = Arc::clone(&self.file);
        Some(
            self.io
                .rt()
                .spawn(async move { file.read_range(at, n).await }),
        )
    }

    /// Waits for the range in flight (starting it if none is), then sets
    /// the one after it going. False at the end of the file.
    fn refill(&mut self) -> io::Result<bool> {
        let Some(task) = self.ahead.take().or_else(|| self.request()) else {
            return Ok(false);
        };
        let got = self.io.block_on(task).map_err(io::Error::other)?;
        self.ready = got.map_err(to_io)?;
        self.ahead = self.request();
        Ok(true)
    }
}

impl Read for RangeReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.ready.is_empty() {
            if buf.is_empty() || !self.refill()? {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.ready.len());
        buf[..n].copy_from_slice(&self.ready[..n]);
        self.ready = self.ready.slice(n..);
        Ok(n)
    }
}

impl Drop for RangeReader {
    fn drop(&mut self) {
        if let Some(task) = self.ahead.take() {
            task.abort();
        }
    }
}

/// A read error as `std::io` says it (the OS's own error when there is
/// one), its first line only.
fn to_io(e: HdfsError) -> io::Error {
    match e {
        HdfsError::IOError(e) => e,
        other => {
            let s = other.to_string();
            io::Error::other(s.lines().next().unwrap_or("").to_string())
        }
    }
}
