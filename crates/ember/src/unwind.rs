//! Panic capture: user code (`map`, combiners, `reduce`, comparators,
//! splitters, readers) runs under [`catch`], and a panic comes back as
//! [`Error::Panicked`] naming the phase. The runtime's own invariants are
//! not caught: a bug in ember aborts the run loudly instead of turning into
//! an error that looks like the user's.
//!
//! A phase that runs on several workers shares one [`Failure`]: the first
//! error wins, and every worker checks the flag before its next task, so a
//! failed run stops early and the pool is free for the next job.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Mutex;

use crate::error::{Error, Phase, Result};

/// Runs `f`, returning a panic in it as [`Error::Panicked`] for `phase`.
///
/// The closure is asserted unwind-safe: after a panic the run is abandoned
/// and its partial state dropped, never observed.
pub(crate) fn catch<R>(phase: Phase, f: impl FnOnce() -> R) -> Result<R> {
    let mut f = Some(f);
    let mut made = None;
    catch_dyn(phase, &mut || made = f.take().map(|f| f()))?;
    Ok(made.expect("catch runs its closure"))
}

/// [`catch`]'s work, compiled once: `catch_unwind` and its landing pad
/// are otherwise instantiated anew for every closure of every job.
fn catch_dyn(phase: Phase, f: &mut dyn FnMut()) -> Result<()> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| Error::panicked(phase, p))
}

/// A panic payload meaning "stopped because another worker already failed":
/// the failure is recorded, so whoever catches this records nothing.
pub(crate) struct Aborted;

/// Stops the calling worker's user code because the run already failed.
pub(crate) fn abort() -> ! {
    std::panic::resume_unwind(Box::new(Aborted))
}

/// The first failure of a phase, shared by its workers.
pub(crate) struct Failure {
    /// Set once an error is recorded. Relaxed: it only tells workers to stop
    /// early; the error itself is read under the mutex after the phase's
    /// workers have joined.
    set: AtomicBool,
    error: Mutex<Option<Error>>,
}

impl Failure {
    /// No failure yet.
    pub(crate) fn new() -> Self {
        Failure {
            set: AtomicBool::new(false),
            error: Mutex::new(None),
        }
    }

    /// True once any worker has failed.
    pub(crate) fn is_set(&self) -> bool {
        self.set.load(Relaxed)
    }

    /// Records `e` unless an earlier error was recorded.
    pub(crate) fn record(&self, e: Error) {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(e);
        self.set.store(true, Relaxed);
    }

    /// Runs `f` under [`catch`] for `phase`, recording the error it returns
    /// or its panic (unless it is [`Aborted`]); true when `f` succeeded.
    pub(crate) fn run(&self, phase: Phase, f: impl FnOnce() -> Result<()>) -> bool {
        let mut f = Some(f);
        let mut made = Ok(());
        let mut once = || made = f.take().map_or(Ok(()), |f| f());
        self.run_dyn(phase, &mut once) && self.ok(made)
    }

    /// [`Failure::run`]'s panic capture, compiled once: false (with the
    /// panic recorded, unless it is [`Aborted`]) when `f` panicked.
    fn run_dyn(&self, phase: Phase, f: &mut dyn FnMut()) -> bool {
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(()) => true,
            Err(p) if p.is::<Aborted>() => false,
            Err(p) => {
                self.record(Error::panicked(phase, p));
                false
            }
        }
    }

    /// True for `Ok`; records an error and returns false.
    fn ok(&self, made: Result<()>) -> bool {
        match made {
            Ok(()) => true,
            Err(e) => {
                self.record(e);
                false
            }
        }
    }

    /// The recorded error, if any.
    pub(crate) fn into_result(self) -> Result<()> {
        match self.error.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_failure_wins_and_aborts_are_not_recorded() {
        let f = Failure::new();
        assert!(f.run(Phase::Map, || Ok(())));
        assert!(!f.run(Phase::Map, || abort()));
        assert!(!f.is_set());
        assert!(!f.run(Phase::Reduce, || panic!("first")));
        assert!(!f.run(Phase::Map, || panic!("second")));
        let e = f.into_result().unwrap_err().to_string();
        assert!(e.contains("reduce") && e.contains("first"), "{e}");
        let caught = catch(Phase::Merge, || panic!("cmp")).unwrap_err();
        assert!(matches!(
            caught,
            Error::Panicked {
                phase: Phase::Merge,
                ..
            }
        ));
    }
}
