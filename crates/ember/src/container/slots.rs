//! A fixed-length slot array aligned to the cache line (to 2 MiB when it is
//! large), for the open-addressing [`Table`](super::table::Table).
//!
//! A `Vec`'s buffer is only as aligned as its element: a `Vec` of 32-byte
//! slots from the system allocator starts 16 bytes into a cache line, so
//! every other slot straddles two lines. A lookup then prefetches one line
//! and waits for the other (a word count's key compare stalled on the
//! second half of its slot). Aligned to the line, a 32-byte slot is always
//! in one line. A large array is aligned to 2 MiB so that transparent huge
//! pages can back all of it, not just its inside.

use std::alloc::{self, Layout};
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// The cache line.
const LINE: usize = 64;
/// A transparent huge page.
const HUGE_PAGE: usize = 2 << 20;
/// Arrays of at least this many bytes are huge-page aligned and advised to
/// use huge pages.
const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;

/// `len` values of `T`, each starting as `T::default()`, in one aligned
/// allocation.
pub(crate) struct Slots<T> {
    ptr: NonNull<T>,
    len: usize,
}

// SAFETY: `Slots<T>` owns its values as a `Vec<T>` does; the pointer is
// never shared outside the borrows `Deref` hands out.
unsafe impl<T: Send> Send for Slots<T> {}
// SAFETY: as for `Send`: shared access only reads through `&[T]`.
unsafe impl<T: Sync> Sync for Slots<T> {}

impl<T: Default> Slots<T> {
    /// `len` default values.
    pub(crate) fn new(len: usize) -> Self {
        let ptr = match Self::layout(len) {
            None => NonNull::dangling(),
            Some(layout) => {
                // SAFETY: `layout` has a non-zero size (`layout` returns
                // None for zero bytes).
                let raw = unsafe { alloc::alloc(layout) } as *mut T;
                let Some(ptr) = NonNull::new(raw) else {
                    alloc::handle_alloc_error(layout)
                };
                advise_huge_pages(raw as *mut u8, layout.size());
                ptr
            }
        };
        for i in 0..len {
            // SAFETY: `i < len`, inside the allocation of `len` values (or
            // a zero-sized value at a dangling, aligned pointer); `write`
            // does not drop the uninitialized value it replaces.
            unsafe { ptr.as_ptr().add(i).write(T::default()) };
        }
        Slots { ptr, len }
    }
}

impl<T> Slots<T> {
    /// The allocation's layout, or None when it holds no bytes.
    fn layout(len: usize) -> Option<Layout> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .expect("a slot array's size fits in memory");
        if bytes == 0 {
            return None;
        }
        let line = if bytes >= HUGE_PAGE_MIN_BYTES {
            HUGE_PAGE
        } else {
            LINE
        };
        let align = line.max(std::mem::align_of::<T>());
        Some(Layout::from_size_align(bytes, align).expect("a slot array's layout"))
    }
}

impl<T> Deref for Slots<T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` holds `len` initialized values (or is dangling and
        // well aligned with nothing to read, for zero bytes).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> DerefMut for Slots<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> Slots<T> {
    /// Drops the values from slot `at` on, then frees the array, also when
    /// a value's drop panics.
    ///
    /// # Safety
    /// `at <= len`; the values before `at` have been moved out (or
    /// dropped) already; the array is not used or freed again afterwards.
    unsafe fn drop_from(&mut self, at: usize) {
        /// Frees the array when it goes out of scope, unwinding or not.
        struct Free<'a, T>(&'a mut Slots<T>);
        impl<T> Drop for Free<'_, T> {
            fn drop(&mut self) {
                if let Some(layout) = Slots::<T>::layout(self.0.len) {
                    // SAFETY: allocated in `new` with this same layout, and
                    // freed once: `drop_from`'s caller frees it no other way.
                    unsafe { alloc::dealloc(self.0.ptr.as_ptr() as *mut u8, layout) };
                }
            }
        }
        let free = Free(self);
        // SAFETY: `at <= len`, so the range lies in the allocation (or is
        // empty); its values are initialized and dropped once, here.
        unsafe {
            let start = free.0.ptr.as_ptr().add(at);
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(start, free.0.len - at));
        }
    }
}

impl<T> Drop for Slots<T> {
    fn drop(&mut self) {
        // SAFETY: every value is still in place; `self` is being dropped.
        unsafe { self.drop_from(0) }
    }
}

impl<T> IntoIterator for Slots<T> {
    type Item = T;
    type IntoIter = IntoIter<T>;
    fn into_iter(self) -> IntoIter<T> {
        IntoIter {
            slots: ManuallyDrop::new(self),
            at: 0,
        }
    }
}

/// The values of a slot array, moved out in order. Each slot is read once
/// and nothing is written back: taking the values out of a large table
/// (`Option::take` on every slot) wrote all of it again, and then dropping
/// the emptied array read all of it once more.
pub(crate) struct IntoIter<T> {
    slots: ManuallyDrop<Slots<T>>,
    /// Slots before `at` have been moved out.
    at: usize,
}

impl<T> Iterator for IntoIter<T> {
    type Item = T;
    #[inline]
    fn next(&mut self) -> Option<T> {
        let slot = self.slots.get(self.at)?;
        self.at += 1;
        // SAFETY: slot `at - 1` holds a value not yet moved out (`at` only
        // passes a slot once), and after this read it counts as moved out.
        Some(unsafe { std::ptr::read(slot) })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.slots.len() - self.at;
        (n, Some(n))
    }
}

impl<T> Drop for IntoIter<T> {
    fn drop(&mut self) {
        // SAFETY: `at <= len`; the values before `at` were moved out by
        // `next`; `slots` is a `ManuallyDrop`, never dropped again.
        unsafe { self.slots.drop_from(self.at) }
    }
}

/// Asks the kernel to back a large allocation with transparent huge pages
/// (on Linux with THP in `madvise` mode, the default on many distributions).
fn advise_huge_pages(start: *mut u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    {
        if bytes < HUGE_PAGE_MIN_BYTES {
            return;
        }
        // SAFETY: the range is our own fresh allocation, page aligned
        // (huge-page aligned, see `Slots::layout`); MADV_HUGEPAGE changes
        // how the kernel backs the pages, never their contents or validity.
        // Failure is harmless.
        unsafe {
            libc::madvise(start as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_aligned_initialized_and_dropped() {
        type Slot = Option<(String, [u64; 2])>;
        let size = std::mem::size_of::<Slot>();
        for len in [0, 1, 3, 1000, HUGE_PAGE_MIN_BYTES / size + 1] {
            let mut s = Slots::<Slot>::new(len);
            assert_eq!(s.len(), len);
            if len > 0 {
                let align = if len * size >= HUGE_PAGE_MIN_BYTES {
                    HUGE_PAGE
                } else {
                    LINE
                };
                assert_eq!(s.as_ptr() as usize % align, 0, "{len}");
            }
            assert!(s.iter().all(Option::is_none));
            if let Some(last) = s.last_mut() {
                *last = Some(("kept until drop".to_string(), [1, 2]));
            }
            assert_eq!(s.iter().flatten().count(), usize::from(len > 0));
        }
    }

    /// Counts its drops.
    struct Counted<'a>(&'a std::cell::Cell<usize>, usize);
    impl Drop for Counted<'_> {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }

    #[test]
    fn values_move_out_in_order_and_the_rest_drop_once() {
        let drops = std::cell::Cell::new(0);
        let mut s = Slots::<Option<Counted<'_>>>::new(100);
        for (i, slot) in s.iter_mut().enumerate().filter(|(i, _)| i % 3 == 0) {
            *slot = Some(Counted(&drops, i));
        }
        let mut values = s.into_iter();
        let first: Vec<usize> = values.by_ref().take(10).flatten().map(|c| c.1).collect();
        assert_eq!(first, [0, 3, 6, 9]);
        assert_eq!(values.size_hint(), (90, Some(90)));
        // The four moved out are dropped by now; the 30 left drop with the
        // iterator, each once.
        assert_eq!(drops.get(), 4);
        drop(values);
        assert_eq!(drops.get(), 34);
        // Empty arrays, moved out whole or not at all.
        assert_eq!(Slots::<Option<Counted<'_>>>::new(0).into_iter().count(), 0);
        drop(Slots::<Option<Counted<'_>>>::new(0).into_iter());
        assert_eq!(drops.get(), 34);
    }
}
