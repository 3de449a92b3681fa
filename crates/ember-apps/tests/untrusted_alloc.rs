//! No allocation sized by untrusted input (issue #22, point 3), measured:
//! a counting global allocator records the largest single allocation while
//! each refused input is read, and every one stays small, where the sizes
//! the inputs claim run to 2^40 bytes and beyond. `suite/untrusted_sizes.rs`
//! checks the errors' words; this binary holds one test, so that no other
//! test's allocations are counted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use ember::{Error, Input, RunOptions, Runtime};
use ember_apps::histogram::{self, BmpSpec};
use ember_apps::matrix::{header, Matrix};
use ember_apps::{pca, sort};

/// The system allocator, recording the largest request.
struct Counting;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only
// the requested size is recorded.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is `System`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        // SAFETY: the caller's contract for `realloc` is `System`'s.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The most any refusal below may allocate at once.
const SMALL: usize = 1 << 20;

/// Runs `f`, which must fail with `InvalidInput`; the largest single
/// allocation it made.
fn largest_while_refused<T>(what: &str, f: impl FnOnce() -> ember::Result<T>) -> usize {
    LARGEST.store(0, Ordering::Relaxed);
    let result = f();
    let largest = LARGEST.load(Ordering::Relaxed);
    match result {
        Err(Error::InvalidInput(_)) => largest,
        Err(e) => panic!("{what}: {e}"),
        Ok(_) => panic!("{what}: an untrusted size was accepted"),
    }
}

#[test]
fn refused_sizes_allocate_nothing_large() {
    // The counter sees a large allocation (so a pass below means something).
    LARGEST.store(0, Ordering::Relaxed);
    let v = std::hint::black_box(vec![0u8; 4 * SMALL]);
    assert!(LARGEST.load(Ordering::Relaxed) >= v.len());
    drop(v);

    let rt = Runtime::builder().threads(2).build().unwrap();
    let opts = RunOptions::default();
    let mut checks: Vec<(&str, usize)> = Vec::new();

    // A BMP header claiming 2^30 x 2^30 pixels (3 * 2^60 bytes).
    let mut bmp = histogram::bmp(&BmpSpec {
        width: 6,
        height: 4,
        seed: 1,
    })
    .unwrap();
    bmp[18..22].copy_from_slice(&(1i32 << 30).to_le_bytes());
    bmp[22..26].copy_from_slice(&(1i32 << 30).to_le_bytes());
    checks.push((
        "BMP, sequential",
        largest_while_refused("BMP", || histogram::sequential(&bmp)),
    ));
    checks.push((
        "BMP, runtime",
        largest_while_refused("BMP", || histogram::run(&rt, &bmp, &opts)),
    ));

    // Matrix headers of 2^32 x 2^32 (the value count overflows u64 bytes)
    // and 2^20 x 2^20 over an empty body.
    let huge = header(1 << 32, 1 << 32);
    checks.push((
        "matrix 2^32 x 2^32",
        largest_while_refused("matrix", || Matrix::parse(&huge, "m.mat")),
    ));
    let big = header(1 << 20, 1 << 20);
    checks.push((
        "matrix 2^20 x 2^20",
        largest_while_refused("matrix", || Matrix::parse(&big, "m.mat")),
    ));
    // A valid header-only 0 x 2^40 matrix: PCA must not size by its width.
    let wide = header(0, 1 << 40);
    let wide = Matrix::parse(&wide, "m.mat").unwrap();
    checks.push((
        "PCA of 0 x 2^40",
        largest_while_refused("PCA", || pca::run(&rt, &wide, &opts)),
    ));

    // A sort input of 2^32 + 1 records (a sparse file of about 430 GB): the
    // record count overflows the u32 record index.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.dat");
    let f = std::fs::File::create(&path).unwrap();
    if f.set_len(((1u64 << 32) + 1) * sort::RECORD_LEN as u64)
        .is_ok()
    {
        drop(f);
        let input = Input::file(&path).unwrap();
        checks.push((
            "sort of 2^32 + 1 records",
            largest_while_refused("sort", || sort::sort_order_input(&rt, &input, &opts)),
        ));
    } else {
        eprintln!("sort skipped: this file system holds no sparse file of 430 GB");
    }

    for (what, largest) in checks {
        println!("{what}: largest allocation {largest} bytes");
        assert!(largest < SMALL, "{what}: allocated {largest} bytes at once");
    }
}
