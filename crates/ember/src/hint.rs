//! Hints to the CPU: no effect on what the program computes, only on when
//! memory arrives.

/// Asks the CPU to bring the cache line at `p` in ahead of a read: for
/// map functions and gathers that read memory at random, a few items
/// ahead of the one they work on. A hint only: it never faults,
/// whatever `p` is.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint with no architectural effect: it
    // never faults, even on an invalid address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
