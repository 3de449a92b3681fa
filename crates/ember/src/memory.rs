//! The memory budget of a run, and the ledger that tracks what the workers'
//! containers hold against it.
//!
//! A run has one [`Budget`]: the bytes its intermediate data may take. Each
//! map worker reports its container's bytes into the run's [`Ledger`] after
//! every split; a worker whose container passes its share of the budget
//! spills it to disk (`spill`) and starts again empty. The share is the
//! budget, less the input buffers of a streamed run, divided by the
//! workers: each worker decides from its own number, with no lock and no
//! coordination on the map path.
//!
//! What is tracked is the containers' own arrays (hash tables, append
//! buffers), for combiners that keep their values ([`Combiner::FOLDS`]
//! false) the values they were handed, and the outputs of the key ranges
//! that a spilled run handing its output over has merged and not yet
//! handed over (their entries' arrays). Long keys' heap copies (over
//! `INLINE_KEY_BYTES`), what entries point to on the heap, a collected
//! output and the allocator's slack are not: the default budget keeps a
//! margin for them.
//!
//! [`Combiner::FOLDS`]: crate::Combiner::FOLDS

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The budget never goes below this many bytes per worker, however small the
/// limit: a container smaller than that spills after every split.
const MIN_SHARE: usize = 64 << 10;

/// How much memory a run's intermediate data may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    /// The limit in bytes.
    pub(crate) bytes: u64,
    /// Whether the caller set it. A job that cannot spill fails when it
    /// passes a limit the caller set, and runs on past a default one (as it
    /// would with no budget at all).
    pub(crate) explicit: bool,
}

impl Budget {
    /// The caller's limit, else the machine's default.
    pub(crate) fn new(limit: Option<u64>) -> Budget {
        match limit {
            Some(bytes) => Budget {
                bytes,
                explicit: true,
            },
            None => Budget {
                bytes: default_limit(),
                explicit: false,
            },
        }
    }

    /// One worker's share: the budget less `reserved` bytes (input buffers),
    /// over `workers`, and at least [`MIN_SHARE`].
    pub(crate) fn share(&self, reserved: u64, workers: usize) -> usize {
        let left = self.bytes.saturating_sub(reserved) / workers.max(1) as u64;
        (left as usize).max(MIN_SHARE)
    }
}

/// The default memory limit: three quarters of the memory this process can
/// have, which is the smaller of the memory the kernel reports available
/// (`MemAvailable`) and the cgroup's limit (`memory.max`, or v1's
/// `memory.limit_in_bytes`). The quarter left is the margin for what the
/// ledger does not track: the output, long keys, the allocator's slack.
/// Without `/proc` (not Linux), 4 GiB.
///
/// Read from the system at most once a second per process: a job run many
/// times in a row (k-means, one run per iteration) does not read three
/// files per run.
pub fn default_limit() -> u64 {
    static LAST: Mutex<Option<(Instant, u64)>> = Mutex::new(None);
    recent(&LAST, || {
        let available = available().unwrap_or(4 << 30);
        cgroup_limit().map_or(available, |c| c.min(available)) / 4 * 3
    })
}

/// The memory the kernel reports available (`MemAvailable`), in bytes, if
/// it says; read at most once a second per process, so that opening an
/// input and budgeting its run read `/proc/meminfo` once.
pub(crate) fn available() -> Option<u64> {
    static LAST: Mutex<Option<(Instant, Option<u64>)>> = Mutex::new(None);
    recent(&LAST, meminfo_available)
}

/// The value `last` holds if it was read less than a second ago, else a
/// fresh one from `read`, kept in `last`.
fn recent<T: Copy>(last: &Mutex<Option<(Instant, T)>>, read: impl FnOnce() -> T) -> T {
    let mut last = last.lock().unwrap_or_else(|p| p.into_inner());
    match *last {
        Some((at, value)) if at.elapsed() < Duration::from_secs(1) => value,
        _ => {
            let value = read();
            *last = Some((Instant::now(), value));
            value
        }
    }
}

/// `MemAvailable` from `/proc/meminfo`, in bytes.
fn meminfo_available() -> Option<u64> {
    let text = read_small("/proc/meminfo")?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The text of a small kernel file (`/proc`, `/sys`). Such files report
/// no size, so a plain read to the end asks for it first and then reads
/// in small, growing pieces: one buffer of 16 KiB (grown if filled) takes
/// them in one read and the read that finds the end.
fn read_small(path: impl AsRef<Path>) -> Option<String> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).ok()?;
    let mut text = vec![0; 16 << 10];
    let mut len = 0;
    loop {
        if len == text.len() {
            text.resize(2 * len, 0);
        }
        match file.read(&mut text[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    text.truncate(len);
    String::from_utf8(text).ok()
}

/// The memory limit of this process's cgroup, if it has one.
fn cgroup_limit() -> Option<u64> {
    let own = read_small("/proc/self/cgroup")?;
    own.lines().find_map(|line| {
        // "0::/path" (v2) or "N:memory:/path" (v1).
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let root = Path::new("/sys/fs/cgroup");
        let file = match controllers {
            "" => root.join(path.trim_start_matches('/')).join("memory.max"),
            c if c.split(',').any(|c| c == "memory") => root
                .join("memory")
                .join(path.trim_start_matches('/'))
                .join("memory.limit_in_bytes"),
            _ => return None,
        };
        // "max" (v2) or a huge number (v1) both mean no limit.
        let text = read_small(file)?;
        text.trim().parse::<u64>().ok().filter(|&b| b < 1 << 60)
    })
}

/// What the workers of one run hold: a slot per worker, written by that
/// worker after each split; what a merge cut into key ranges holds of its
/// ranges' outputs; and the largest total seen.
#[derive(Debug)]
pub(crate) struct Ledger {
    held: Vec<AtomicU64>,
    /// The outputs of key ranges merged and not yet handed over.
    merged: AtomicU64,
    peak: AtomicU64,
}

impl Ledger {
    /// A ledger for `workers` workers, all holding nothing.
    pub(crate) fn new(workers: usize) -> Ledger {
        Ledger {
            held: (0..workers).map(|_| AtomicU64::new(0)).collect(),
            merged: AtomicU64::new(0),
            peak: AtomicU64::new(0),
        }
    }

    /// Worker `w` now holds `bytes`; the peak is updated with the total.
    ///
    /// Relaxed: each slot has one writer, and the total a worker reads is a
    /// snapshot for the peak figure only (no decision depends on another
    /// worker's slot); the pool's join orders the final reads.
    pub(crate) fn hold(&self, w: usize, bytes: u64) {
        if let Some(slot) = self.held.get(w) {
            slot.store(bytes, Relaxed);
        }
        self.update_peak();
    }

    /// A key range's output of `bytes` is merged and held until it is
    /// handed over ([`Ledger::hand_over`]).
    pub(crate) fn merged(&self, bytes: u64) {
        self.merged.fetch_add(bytes, Relaxed);
        self.update_peak();
    }

    /// A key range's output of `bytes` ([`Ledger::merged`]) is handed
    /// over and dropped.
    pub(crate) fn hand_over(&self, bytes: u64) {
        self.merged.fetch_sub(bytes, Relaxed);
    }

    /// The peak, updated with what is held now.
    fn update_peak(&self) {
        let held: u64 = self.held.iter().map(|s| s.load(Relaxed)).sum();
        let total = held + self.merged.load(Relaxed);
        self.peak.fetch_max(total, Relaxed);
    }

    /// The largest total the workers held at once.
    pub(crate) fn peak(&self) -> u64 {
        self.peak.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_divides_what_is_left_and_has_a_floor() {
        let b = Budget::new(Some(10 << 20));
        assert!(b.explicit);
        assert_eq!(b.share(2 << 20, 2), 4 << 20);
        assert_eq!(b.share(20 << 20, 2), MIN_SHARE);
        assert_eq!(Budget::new(Some(0)).share(0, 4), MIN_SHARE);
    }

    #[test]
    fn small_kernel_files_and_larger_ones_read_whole() {
        let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        assert_eq!(read_small("/proc/self/cgroup").unwrap(), cgroup);
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        let text: String = (0..5000).map(|i| format!("{i}\n")).collect();
        assert!(text.len() > 16 << 10);
        std::fs::write(&big, &text).unwrap();
        assert_eq!(read_small(&big).unwrap(), text);
        assert_eq!(read_small(dir.path().join("none")), None);
    }

    #[test]
    fn the_default_is_below_the_machines_memory() {
        let b = Budget::new(None);
        assert!(!b.explicit);
        let total = meminfo_available().expect("Linux has /proc/meminfo");
        assert!(b.bytes > 0 && b.bytes < total, "{} of {total}", b.bytes);
    }

    #[test]
    fn the_ledger_keeps_the_largest_total() {
        let l = Ledger::new(2);
        l.hold(0, 10);
        l.hold(1, 5);
        l.hold(0, 1);
        assert_eq!(l.peak(), 15);
        // Ranges' outputs count with what the workers hold.
        l.merged(20);
        l.merged(4);
        assert_eq!(l.peak(), 30);
        l.hand_over(20);
        l.merged(4);
        assert_eq!(l.peak(), 30);
    }
}
