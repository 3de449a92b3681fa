//! The guard over memory-mapped input files.
//!
//! A read of a mapped page past the end of a file that was truncated after
//! it was mapped raises SIGBUS, whose default action kills the process
//! with no message. Every input map is registered here (its address range
//! and a "faulted" flag, in a lock-free list of slots), and a process-wide
//! SIGBUS handler, installed with the first map, looks the faulting
//! address up:
//!
//! - **inside an input map**: it maps a private anonymous page of zeros
//!   over the faulting page (`mmap(MAP_FIXED)`, a plain system call),
//!   sets the map's flag and returns; the read goes on and sees zeros.
//!   After a run, the runtime asks every map whether it changed
//!   ([`GuardedMap::changed`]: the flag, and the file's length, mtime
//!   and inode against those at map time) and fails the run with
//!   `Error::InputChanged`, so the zeros never reach an output.
//! - **anywhere else**: the handler that was installed before this one is
//!   called (Rust's standard library installs one that reports stack
//!   overflows and otherwise restores the default action); if there was
//!   none, the default action is restored and the fault, repeated on
//!   return, kills the process as it would have without the guard.
//!
//! The handler is installed with `sigaction` directly rather than through
//! `signal-hook-registry`: the registry calls the previous handler
//! *before* its actions, and the standard library's handler restores the
//! default action on any fault that is not a stack overflow, so the
//! second faulting page of a truncated file would kill the process (tried:
//! the first page read zeros, the second raised "Bus error"). Here ember's
//! check runs first and the previous handler only sees foreign faults.
//!
//! The handler allocates nothing and takes no lock: it walks the slot list
//! with atomic loads (a slot's range is read under a sequence counter, so
//! a slot being reused at that moment is skipped, never half-read).

use std::fs::{File, Metadata};
use std::io;
use std::ops::Range;
use std::path::Path;
use std::ptr;
use std::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::time::SystemTime;

use memmap2::Mmap;

/// A read-only memory map of a whole file, registered with the guard
/// while it lives.
pub(crate) struct GuardedMap {
    map: Mmap,
    claim: Claim,
    /// The file as it was when mapped.
    was: FileState,
}

/// What is compared to tell that a file changed (a mapped one here, a
/// streamed compressed one in `input`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileState {
    /// Length in bytes.
    pub(crate) len: u64,
    modified: Option<SystemTime>,
    id: (u64, u64),
}

impl FileState {
    /// The state `meta` gives.
    pub(crate) fn of(meta: &Metadata) -> Self {
        #[cfg(unix)]
        let id = {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let id = (0, 0);
        FileState {
            len: meta.len(),
            modified: meta.modified().ok(),
            id,
        }
    }
}

impl GuardedMap {
    /// Maps `file` (whose metadata is `meta`; not empty) read-only and
    /// registers the map with the guard, installing the guard's handler
    /// first if this is the process's first map.
    pub(crate) fn new(file: &File, meta: &Metadata) -> io::Result<Self> {
        install()?;
        // SAFETY: the map is read-only and private, and ember never hands
        // out a reference that outlives it. Another process may still
        // truncate or rewrite the file: a read past a new end raises
        // SIGBUS, which the guard's handler (installed above) turns into a
        // page of zeros and a flag, reported by `changed` after the run.
        let map = unsafe { Mmap::map(file) }?;
        let claim = Claim::new(map.as_ptr() as usize, map.len());
        Ok(GuardedMap {
            map,
            claim,
            was: FileState::of(meta),
        })
    }

    /// The mapped bytes (pages cut off the file since read as zeros).
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Lets go of the pages of the `k`-th of `n` page-aligned stripes of
    /// the map (the kernel drops their page-table entries, the page cache
    /// keeps the file), so that unmapping after has little left to do.
    #[cfg(unix)]
    pub(crate) fn release_stripe(&self, k: usize, n: usize) {
        self.release_range(stripe(self.map.len(), k, n));
    }

    /// Lets go of the pages that lie wholly inside byte range `range` of
    /// the map (a page it shares with bytes outside stays: another split
    /// may be reading it); a range to the map's end takes its last page.
    #[cfg(unix)]
    pub(crate) fn release_range(&self, range: Range<usize>) {
        let len = self.map.len();
        let start = range.start.next_multiple_of(PAGE);
        let end = match range.end {
            e if e >= len => len,
            e => e / PAGE * PAGE,
        };
        if start < end {
            // SAFETY: the map is private and read-only, so it holds no
            // page of its own: a dropped page reads back from the file as
            // it was (or as zeros past a new end, as any page of the map).
            // Advice only: a failure changes speed, not results.
            let _ = unsafe {
                self.map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    start,
                    end - start,
                )
            };
        }
    }

    /// Maps the pages of byte range `range` of the map in one call, read
    /// from the disk if they are not cached, rather than one fault at a
    /// time as a reader reaches them. Advice only: a failure (an older
    /// kernel, a read error) leaves the faults, and the guard.
    #[cfg(target_os = "linux")]
    pub(crate) fn populate(&self, range: Range<usize>) {
        let _ = self.map.advise_range(
            memmap2::Advice::PopulateRead,
            range.start,
            range.end - range.start,
        );
    }

    /// Whether a read of the map faulted (a page past the file's end, or
    /// one the disk could not read) and saw zeros.
    pub(crate) fn faulted(&self) -> bool {
        self.claim.slot().faulted.load(Ordering::Relaxed)
    }

    /// Advice to the OS on how the map will be read.
    #[cfg(unix)]
    pub(crate) fn advise(&self, advice: memmap2::Advice) -> io::Result<()> {
        self.map.advise(advice)
    }

    /// If the file at `path` (the path it was mapped from) changed since
    /// it was mapped, its lengths then and now (equal if it was only
    /// rewritten). A read that faulted past its end is a change; so is a
    /// new length or modification time. A path that now names another
    /// file (renamed over, or removed) is not: the map still holds the
    /// file it was made from, which nothing reaches by that path.
    pub(crate) fn changed(&self, path: &Path) -> Option<(u64, u64)> {
        let now = std::fs::metadata(path).ok().map(|m| FileState::of(&m));
        let now = now.filter(|n| n.id == self.was.id);
        let faulted = self.claim.slot().faulted.load(Ordering::Relaxed);
        match now {
            Some(now) if now != self.was => Some((self.was.len, now.len)),
            Some(now) if faulted => Some((self.was.len, now.len)),
            // The file is gone from the path: its length now is unknown,
            // but some of its pages were cut off under a read.
            None if faulted => Some((self.was.len, 0)),
            _ => None,
        }
    }
}

impl Drop for GuardedMap {
    fn drop(&mut self) {
        // Struck off before the map is unmapped (the fields drop after
        // this), so no slot ever names an unmapped range.
        self.claim.release();
    }
}

/// The page size that [`Mapped::release_range`] aligns to (a multiple of
/// the system's on the platforms ember runs on).
const PAGE: usize = 4 << 10;

/// The `k`-th of `n` stripes of `0..len`: about equal, each starting on
/// a page, together all of it.
fn stripe(len: usize, k: usize, n: usize) -> Range<usize> {
    let edge = |i: usize| match i {
        i if i >= n => len,
        i => (len / n * i).next_multiple_of(PAGE).min(len),
    };
    edge(k)..edge(k + 1)
}

/// Slots per block of the registry (one bit each in `Block::taken`).
const SLOTS: usize = 64;

/// One registered map: its address range and whether a read of it
/// faulted. `seq` is odd while the range is being written.
struct Slot {
    seq: AtomicUsize,
    start: AtomicUsize,
    len: AtomicUsize,
    faulted: AtomicBool,
}

/// A block of slots, with a bit per taken slot; blocks are never freed,
/// so the handler can walk them at any time.
struct Block {
    taken: AtomicU64,
    slots: [Slot; SLOTS],
    next: AtomicPtr<Block>,
}

/// The registry: a list of blocks, newest first.
static BLOCKS: AtomicPtr<Block> = AtomicPtr::new(ptr::null_mut());

/// The registry's blocks, newest first.
fn blocks() -> impl Iterator<Item = &'static Block> {
    let first = BLOCKS.load(Ordering::Acquire);
    std::iter::successors(
        // SAFETY: a block in the list was leaked (never freed) and fully
        // built before it was published with a release store.
        unsafe { first.as_ref() },
        // SAFETY: as above, for the next block.
        |b| unsafe { b.next.load(Ordering::Acquire).as_ref() },
    )
}

impl Block {
    /// Takes a free slot of the block, if it has one.
    fn take(&'static self) -> Option<Claim> {
        let mut taken = self.taken.load(Ordering::Relaxed);
        while taken != u64::MAX {
            let i = (!taken).trailing_zeros() as usize;
            let bit = 1 << i;
            match self.taken.compare_exchange_weak(
                taken,
                taken | bit,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(Claim { block: self, i }),
                Err(now) => taken = now,
            }
        }
        None
    }

    /// A new block, its first slot taken, pushed onto the registry.
    fn push() -> Claim {
        let block: &'static Block = Box::leak(Box::new(Block {
            taken: AtomicU64::new(1),
            slots: [const { Slot::new() }; SLOTS],
            next: AtomicPtr::new(ptr::null_mut()),
        }));
        let new = ptr::from_ref(block).cast_mut();
        let mut head = BLOCKS.load(Ordering::Acquire);
        loop {
            block.next.store(head, Ordering::Relaxed);
            match BLOCKS.compare_exchange(head, new, Ordering::Release, Ordering::Acquire) {
                Ok(_) => return Claim { block, i: 0 },
                Err(now) => head = now,
            }
        }
    }
}

/// A taken slot: its block and index.
#[derive(Clone, Copy)]
struct Claim {
    block: &'static Block,
    i: usize,
}

impl Claim {
    /// Takes a free slot (in a new block if every one is taken) and
    /// registers the range in it.
    fn new(start: usize, len: usize) -> Claim {
        let claim = blocks().find_map(Block::take).unwrap_or_else(Block::push);
        claim.slot().faulted.store(false, Ordering::Relaxed);
        claim.slot().set(start, len);
        claim
    }

    fn slot(self) -> &'static Slot {
        &self.block.slots[self.i]
    }

    /// Strikes the range off and frees the slot.
    fn release(self) {
        self.slot().set(0, 0);
        self.block
            .taken
            .fetch_and(!(1 << self.i), Ordering::Release);
    }
}

impl Slot {
    const fn new() -> Self {
        Slot {
            seq: AtomicUsize::new(0),
            start: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
            faulted: AtomicBool::new(false),
        }
    }

    /// Writes the range under the sequence counter.
    fn set(&self, start: usize, len: usize) {
        self.seq.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::Release);
        self.start.store(start, Ordering::Relaxed);
        self.len.store(len, Ordering::Relaxed);
        self.seq.fetch_add(1, Ordering::Release);
    }

    /// True if the slot's range holds `addr` (false while it is being
    /// written: the map that faults is never the one being registered).
    fn holds(&self, addr: usize) -> bool {
        let seq = self.seq.load(Ordering::Acquire);
        let (start, len) = (
            self.start.load(Ordering::Relaxed),
            self.len.load(Ordering::Relaxed),
        );
        fence(Ordering::Acquire);
        seq.is_multiple_of(2)
            && self.seq.load(Ordering::Relaxed) == seq
            && addr.wrapping_sub(start) < len
    }
}

/// The registered map that holds `addr`, if any (called in the handler).
fn find(addr: usize) -> Option<&'static Slot> {
    blocks()
        .flat_map(|b| b.slots.iter())
        .find(|s| s.holds(addr))
}

#[cfg(target_os = "linux")]
use handler::install;

/// Without the handler (not Linux), maps are registered but unguarded.
#[cfg(not(target_os = "linux"))]
fn install() -> io::Result<()> {
    Ok(())
}

#[cfg(target_os = "linux")]
mod handler {
    //! The SIGBUS handler (Linux).

    use std::io;
    use std::mem::MaybeUninit;
    use std::ptr;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::OnceLock;

    use libc::{c_int, c_void, siginfo_t};

    /// The action SIGBUS had before the guard's, called for faults that
    /// are not the guard's.
    static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
    /// The page size.
    static PAGE: AtomicUsize = AtomicUsize::new(4096);

    /// Installs the handler, once per process; an error (of the first
    /// try, kept) if the OS refused it.
    pub(super) fn install() -> io::Result<()> {
        static INSTALLED: OnceLock<Option<i32>> = OnceLock::new();
        match *INSTALLED.get_or_init(try_install) {
            None => Ok(()),
            Some(errno) => Err(io::Error::from_raw_os_error(errno)),
        }
    }

    fn try_install() -> Option<i32> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if page > 0 {
            PAGE.store(page as usize, Ordering::Relaxed);
        }
        let mut old = MaybeUninit::<libc::sigaction>::zeroed();
        // SAFETY: reads the current action into `old`, a valid sigaction.
        if unsafe { libc::sigaction(libc::SIGBUS, ptr::null(), old.as_mut_ptr()) } != 0 {
            return io::Error::last_os_error().raw_os_error();
        }
        // SAFETY: sigaction succeeded, so it wrote `old`.
        let _ = PREVIOUS.set(unsafe { old.assume_init() });
        // SAFETY: a zeroed sigaction is a valid value (empty mask, no
        // flags); the fields are then set.
        let mut new: libc::sigaction = unsafe { MaybeUninit::zeroed().assume_init() };
        new.sa_sigaction = on_sigbus as *const () as usize;
        new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        // SAFETY: `new` is a valid action whose handler only does what is
        // safe in a signal handler (see `on_sigbus`).
        if unsafe { libc::sigaction(libc::SIGBUS, &new, ptr::null_mut()) } != 0 {
            return io::Error::last_os_error().raw_os_error();
        }
        None
    }

    /// The handler: a fault inside a registered map gets a page of zeros;
    /// anything else goes to the previous action.
    extern "C" fn on_sigbus(sig: c_int, info: *mut siginfo_t, ctx: *mut c_void) {
        // SAFETY: with SA_SIGINFO the kernel passes a valid siginfo.
        let (addr, code) = unsafe { ((*info).si_addr() as usize, (*info).si_code) };
        if code == libc::BUS_ADRERR {
            if let Some(slot) = super::find(addr) {
                slot.faulted.store(true, Ordering::Relaxed);
                if zero_page(addr) {
                    return;
                }
            }
        }
        // SAFETY: the arguments are the kernel's, passed on unchanged.
        unsafe { chain(sig, info, ctx, code <= 0) }
    }

    /// Maps a private page of zeros over the page that holds `addr`
    /// (which lies in a live input map); true if it did.
    fn zero_page(addr: usize) -> bool {
        let page = PAGE.load(Ordering::Relaxed);
        let at = (addr & !(page - 1)) as *mut c_void;
        // SAFETY: errno is thread-local; it is read and put back so that
        // the interrupted code does not see the handler's.
        let errno = unsafe { *libc::__errno_location() };
        let flags = libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
        // SAFETY: the page lies inside a read-only file map that ember
        // owns and keeps mapped for as long as it is registered; replacing
        // it changes no memory that Rust code holds mutably. On Linux,
        // mmap is a system call with no locks or allocation, safe in a
        // signal handler.
        let mapped = unsafe { libc::mmap(at, page, libc::PROT_READ, flags, -1, 0) };
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = errno };
        mapped != libc::MAP_FAILED
    }

    /// Passes a signal that is not the guard's to the action SIGBUS had
    /// before: its handler, or its default (the process dies: a fault
    /// repeats on return, a `sent` signal, from `kill` or the like, is
    /// raised again) or ignore.
    ///
    /// # Safety
    ///
    /// The arguments are those the kernel passed to the handler.
    unsafe fn chain(sig: c_int, info: *mut siginfo_t, ctx: *mut c_void, sent: bool) {
        let previous = PREVIOUS.get();
        let handler = previous.map_or(libc::SIG_DFL, |p| p.sa_sigaction);
        if handler == libc::SIG_IGN && sent {
            return;
        }
        if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
            // SAFETY: a zeroed sigaction is SIG_DFL with no flags.
            let dfl: libc::sigaction = unsafe { MaybeUninit::zeroed().assume_init() };
            // SAFETY: sigaction and raise are async-signal-safe; the raised
            // signal is blocked until the handler returns, then kills.
            unsafe {
                libc::sigaction(sig, &dfl, ptr::null_mut());
                if sent {
                    libc::raise(sig);
                }
            }
            return;
        }
        let flags = previous.map_or(0, |p| p.sa_flags);
        if flags & libc::SA_SIGINFO != 0 {
            type Action = extern "C" fn(c_int, *mut siginfo_t, *mut c_void);
            // SAFETY: an SA_SIGINFO handler has this signature.
            let action = unsafe { std::mem::transmute::<usize, Action>(handler) };
            action(sig, info, ctx);
        } else {
            // SAFETY: a plain handler takes the signal number.
            let action = unsafe { std::mem::transmute::<usize, extern "C" fn(c_int)>(handler) };
            action(sig);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_reused_and_found() {
        let a = Claim::new(0x1000_0000, 100);
        let b = Claim::new(0x2000_0000, 100);
        assert!(ptr::eq(find(0x1000_0063).unwrap(), a.slot()));
        assert!(ptr::eq(find(0x2000_0000).unwrap(), b.slot()));
        assert!(find(0x1000_0064).is_none());
        a.release();
        assert!(find(0x1000_0000).is_none());
        let many: Vec<_> = (1..3 * SLOTS).map(|i| Claim::new(i << 20, 1)).collect();
        assert!(ptr::eq(find(5 << 20).unwrap(), many[4].slot()));
        // Every slot is distinct.
        let mut seen: Vec<_> = many.iter().map(|c| c.slot() as *const Slot).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), many.len());
        for s in many {
            s.release();
        }
        b.release();
    }

    #[test]
    fn stripes_start_on_pages_and_cover_the_map() {
        for len in [1, 4095, 4096, 4097, 10 << 20, (10 << 20) + 5] {
            for n in 1..6 {
                let all: Vec<_> = (0..n).map(|k| stripe(len, k, n)).collect();
                assert_eq!(all[0].start, 0);
                assert_eq!(all[n - 1].end, len);
                for w in all.windows(2) {
                    assert_eq!(w[0].end, w[1].start, "{len} in {n}");
                }
                assert!(all.iter().all(|r| r.start % 4096 == 0 || r.start == len));
            }
        }
    }

    /// Released stripes and ranges give their pages back (the map's
    /// resident size in `smaps` drops to nothing, or to the pages a range
    /// shares with bytes outside it) and still read as the file.
    #[cfg(target_os = "linux")]
    #[test]
    fn released_stripes_and_ranges_give_pages_back_and_read_the_same() {
        let data: Vec<u8> = (0..(4 << 20) + 333).map(|i| (i % 251) as u8).collect();
        let mut file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut file, &data).unwrap();
        let map = GuardedMap::new(&file, &file.metadata().unwrap()).unwrap();
        let rss_kb = || {
            let at = format!("{:x}-", map.bytes().as_ptr() as usize);
            let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
            let vma = smaps.split_once(&at).expect("the map is listed").1;
            let line = vma.lines().find(|l| l.starts_with("Rss:")).unwrap();
            line.split_whitespace()
                .nth(1)
                .unwrap()
                .parse::<u64>()
                .unwrap()
        };
        assert_eq!(map.bytes(), &data[..]);
        assert!(rss_kb() >= 4 << 10, "all read, all resident");
        for k in 0..3 {
            map.release_stripe(k, 3);
        }
        assert_eq!(rss_kb(), 0);
        assert_eq!(map.bytes(), &data[..]);
        // A range lets go of the pages wholly inside it (the kernel may
        // drop a whole huge page they are part of), none if there is none.
        let before = rss_kb();
        map.release_range(PAGE / 2..PAGE + PAGE / 2);
        assert_eq!(rss_kb(), before);
        map.release_range(PAGE / 2..10 * PAGE + 5);
        assert!(before - rss_kb() >= 9 * 4, "{before} KiB before");
        // To the map's end, its last (partial) page goes too.
        map.release_range(0..data.len());
        assert_eq!(rss_kb(), 0);
        assert_eq!(map.bytes(), &data[..]);
    }
}
