//! The roofline of a workload bench: the fastest the workload's work can go
//! on this machine, measured in the same run, on the same input and thread
//! count, as rows of the bench's own table ([`Role::Limit`]); every row of
//! work is then reported as a percentage of the limit on its thread count
//! (the limit's time over the row's: 100% is at the limit).
//!
//! Each limit is a small plain function:
//!
//! - [`bandwidth`]: a pass that reads every byte of a fresh memory map of
//!   the input once (page faults included), the ceiling of memory-bound
//!   work (linear regression, string match, and under the others);
//! - [`counter_updates`]: a plain histogram loop with four sub-histograms
//!   per channel, one counter update per byte (the store port), the
//!   ceiling of a histogram;
//! - [`tokenizer`]: every word of the text found, nothing counted, the
//!   ceiling of word count and the inverted index;
//! - [`counting::limit`]: every word counted in a table of its thread's
//!   own with nothing around it (no join, order or output), word count's
//!   per-word work as a plain loop does it;
//! - [`arithmetic`]: the multiply-add rate of a plain vectorised loop on
//!   one core (register-resident, no memory access), times the threads,
//!   the ceiling of k-means, PCA and matrix multiply.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{ensure, Result};
use ember::Input;
use ember_apps::histogram::{Bmp, Counts};

use crate::harness::{Contender, Measured, Role};

pub(crate) mod counting;

/// One contender per thread count (1, then `threads` when more), named
/// `what` and the count, each run by `run(threads)`, as limit rows.
fn limit_rows<'a>(
    what: &str,
    threads: usize,
    run: impl Fn(usize) -> Result<()> + Clone + 'a,
) -> Vec<Contender<'a>> {
    let mut counts = vec![1];
    if threads > 1 {
        counts.push(threads);
    }
    counts
        .into_iter()
        .map(|n| {
            let run = run.clone();
            let name = format!("limit: {what}, {}", threads_name(n));
            Contender::new(name, move || Measured::of(|| run(n).map(|()| None)))
                .role(Role::Limit(n))
        })
        .collect()
}

/// "1 thread" or "N threads".
fn threads_name(n: usize) -> String {
    match n {
        1 => "1 thread".into(),
        n => format!("{n} threads"),
    }
}

/// Runs `f` on `threads` contiguous pieces of `data` (each a multiple of
/// `align` bytes long but the last), one thread each (the calling thread
/// alone for one piece), and returns the results in order.
fn in_pieces<R: Send>(
    data: &[u8],
    threads: usize,
    align: usize,
    f: impl Fn(&[u8]) -> R + Sync,
) -> Vec<R> {
    let piece = data
        .len()
        .div_ceil(threads.max(1))
        .next_multiple_of(align)
        .max(align);
    if threads <= 1 || data.len() <= piece {
        return vec![f(data)];
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = data.chunks(piece).map(|c| s.spawn(|| f(c))).collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a roofline thread panicked"))
            .collect()
    })
}

/// The bandwidth limit of `files`: [`read_all`] of fresh maps of them.
pub(crate) fn bandwidth(files: &[PathBuf], threads: usize) -> Vec<Contender<'_>> {
    limit_rows("memory read", threads, move |n| {
        let input = Input::files(files)?;
        for p in 0..input.parts() {
            black_box(read_all(input.part_bytes(p), n));
        }
        Ok(())
    })
}

/// Sums every 8-byte word of `data` (a tail of under 8 bytes is left out),
/// on `threads` threads: every byte is read once.
pub(crate) fn read_all(data: &[u8], threads: usize) -> u64 {
    let sums = in_pieces(data, threads, 8, |c| {
        c.chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
            .fold(0u64, u64::wrapping_add)
    });
    sums.into_iter().fold(0, u64::wrapping_add)
}

/// The counter-update limit of the BMP `file`: [`sub_histograms`] of a
/// fresh map of it, checked against `want` (the sequential histogram).
pub(crate) fn counter_updates<'a>(
    file: &'a Path,
    threads: usize,
    want: &'a Counts,
) -> Vec<Contender<'a>> {
    limit_rows(
        "counter updates (4 sub-histograms per channel)",
        threads,
        move |n| {
            let input = Input::file(file)?;
            let got = sub_histograms(input.part_bytes(0), n)?;
            ensure!(&got == want, "the counter-update loop miscounted");
            Ok(())
        },
    )
}

/// The histogram of a 24-bit BMP file counted by the plainest fast loop:
/// each thread takes a run of rows and counts each channel's bytes into
/// four sub-histograms in turn (so that equal neighbouring values do not
/// wait on one counter), then the sub-histograms are added up. Keys are
/// those of [`ember_apps::histogram`]: red, green, blue, 256 each.
pub(crate) fn sub_histograms(file: &[u8], threads: usize) -> Result<Counts> {
    let bmp = Bmp::parse(file)?;
    let (stride, row) = (bmp.stride, bmp.row_bytes());
    let pixels = bmp.pixels(file);
    let tables = in_pieces(pixels, threads, stride, |rows| {
        // [stored channel (blue, green, red)][sub-histogram][value]
        let mut t = [[[0u64; 256]; 4]; 3];
        for r in rows.chunks(stride) {
            let r = &r[..row.min(r.len())];
            let mut quads = r.chunks_exact(12);
            for q in &mut quads {
                let q: &[u8; 12] = q.try_into().expect("12 bytes");
                let [b, g, r] = &mut t;
                for p in 0..4 {
                    b[p][q[3 * p] as usize] += 1;
                    g[p][q[3 * p + 1] as usize] += 1;
                    r[p][q[3 * p + 2] as usize] += 1;
                }
            }
            for px in quads.remainder().chunks_exact(3) {
                for (c, &v) in px.iter().enumerate() {
                    t[c][0][v as usize] += 1;
                }
            }
        }
        t
    });
    let mut counts: Counts = [0; 768];
    for t in tables {
        for (stored, subs) in t.iter().enumerate() {
            let channel = 2 - stored;
            for sub in subs {
                for (v, n) in sub.iter().enumerate() {
                    counts[channel * 256 + v] += n;
                }
            }
        }
    }
    Ok(counts)
}

/// The tokenizer limit of the text `files`: [`count_words`] of fresh maps
/// of them, checked against `want` words in all.
pub(crate) fn tokenizer(files: &[PathBuf], threads: usize, want: u64) -> Vec<Contender<'_>> {
    limit_rows("tokenizer alone", threads, move |n| {
        let input = Input::files(files)?;
        let words: u64 = (0..input.parts())
            .map(|p| count_words(input.part_bytes(p), n))
            .sum();
        ensure!(
            words == want,
            "the tokenizer found {words} words, not {want}"
        );
        Ok(())
    })
}

/// True for the bytes words are made of (ASCII letters).
fn letter(b: u8) -> bool {
    (b | 0x20).wrapping_sub(b'a') < 26
}

/// Finds every word of `data` (a maximal run of ASCII letters) on
/// `threads` threads, and returns how many there are; nothing else is
/// done with them. A word is counted where it starts: at a letter after a
/// non-letter (or at the start).
pub(crate) fn count_words(data: &[u8], threads: usize) -> u64 {
    let base = data.as_ptr() as usize;
    let counts = in_pieces(data, threads, 64, |piece| {
        let at = piece.as_ptr() as usize - base;
        let mut prev = at > 0 && letter(data[at - 1]);
        let mut n = 0u64;
        for &b in piece {
            let l = letter(b);
            n += u64::from(l & !prev);
            prev = l;
        }
        n
    });
    counts.into_iter().sum()
}

/// Independent lanes of the [`multiply_adds`] loop: 256 `i32`s, sixteen
/// AVX-512 registers, enough independent chains to hide the multiply's
/// latency.
const LANES: usize = 256;

/// `rounds` steps of `x = x * m + c` (wrapping `i32`) on each of [`LANES`]
/// register-resident lanes: `rounds * LANES` multiply-adds with no memory
/// access, compiled for the CPU's widest vectors as the workloads' kernels
/// are: the core's arithmetic rate. Returns the lanes' wrapping sum.
pub(crate) fn multiply_adds(rounds: u64) -> i32 {
    let (m, c) = black_box((0x9e37_79b9_u32 as i32, 12345));
    ember_apps::vectorized(|| {
        let mut x: [i32; LANES] = std::array::from_fn(|i| i as i32);
        for _ in 0..rounds {
            for v in &mut x {
                *v = v.wrapping_mul(m).wrapping_add(c);
            }
        }
        x.iter().fold(0i32, |s, &v| s.wrapping_add(v))
    })
}

/// How much of a workload's arithmetic [`arithmetic`]'s loop does per run:
/// a sixteenth (the limit is the loop's time scaled up, so that measuring
/// it adds little to the bench).
const ARITHMETIC_SCALE: f64 = 16.0;

/// The arithmetic limit of `macs` multiply-adds: the time [`multiply_adds`]
/// takes for them on one core, over the threads (the rate of one core
/// times the threads).
pub(crate) fn arithmetic<'a>(macs: f64, threads: usize) -> Vec<Contender<'a>> {
    let mut counts = vec![1];
    if threads > 1 {
        counts.push(threads);
    }
    let rounds = (macs / ARITHMETIC_SCALE / LANES as f64).ceil() as u64;
    let scale = macs / (rounds * LANES as u64) as f64;
    counts
        .into_iter()
        .map(|n| {
            let name = format!(
                "limit: i32 multiply-add loop, 1 core's rate x {}",
                threads_name(n).replace(" thread", " core")
            );
            Contender::new(name, move || {
                let mut m = Measured::of(|| {
                    black_box(multiply_adds(rounds));
                    Ok(None)
                })?;
                m.secs *= scale / n as f64;
                Ok(m)
            })
            .role(Role::Limit(n))
        })
        .collect()
}

/// One workload's line of `ember-bench all`'s summary.
#[derive(Clone, Debug)]
pub(crate) struct Line {
    /// The workload (the bench's name).
    pub(crate) workload: String,
    /// Threads of ember's all-threads row.
    pub(crate) threads: usize,
    /// Ember's median seconds on all threads.
    pub(crate) secs: f64,
    /// The binding limit's row name and median seconds, on as many threads.
    pub(crate) limit: Option<(String, f64)>,
    /// Ember's peak RSS on all threads, bytes.
    pub(crate) peak: Option<u64>,
    /// The input's size in bytes.
    pub(crate) input: u64,
    /// The serial fraction from ember's 1- and all-thread medians.
    pub(crate) serial: Option<f64>,
    /// The share of ember's 1-thread run in parts that run on one core.
    pub(crate) serial_parts: Option<f64>,
    /// Anything else (word count: bytes per distinct key).
    pub(crate) note: Option<String>,
}

/// The summary lines of the workloads run so far.
static LINES: Mutex<Vec<Line>> = Mutex::new(Vec::new());

/// Keeps a workload's summary line for [`print_summary`].
pub(crate) fn record(line: Line) {
    LINES.lock().unwrap_or_else(|p| p.into_inner()).push(line);
}

/// Adds `note` to the last recorded line (a bench's own figure).
pub(crate) fn note_last(note: String) {
    let mut lines = LINES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(l) = lines.last_mut() {
        l.note = Some(note);
    }
}

/// Prints the summary of the workloads run so far, as a Markdown table,
/// and forgets them.
pub(crate) fn print_summary() {
    let lines = std::mem::take(&mut *LINES.lock().unwrap_or_else(|p| p.into_inner()));
    println!(
        "\n=== summary: ember on all threads, each against its limit on as many threads, \
         medians\n"
    );
    println!(
        "| workload | ember s | limit | limit s | % of limit | peak RSS | input | \
         serial (Karp-Flatt) | serial parts | Amdahl at 16 / 64 / 128 cores, of the serial \
         parts | note |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mib = |b: u64| format!("{:.0} MiB", b as f64 / (1 << 20) as f64);
    for l in lines {
        let (limit, limit_s, pct) = match &l.limit {
            Some((name, s)) => (
                name.trim_start_matches("limit: ").to_string(),
                format!("{s:.3}"),
                format!("{:.0}%", 100.0 * s / l.secs),
            ),
            None => ("none".into(), "-".into(), "-".into()),
        };
        let share = |s: Option<f64>| s.map_or("-".into(), |s| format!("{:.1}%", 100.0 * s));
        let (serial, parts) = (share(l.serial), share(l.serial_parts));
        let projected = l.serial_parts.map_or("-".into(), |s| {
            [16.0, 64.0, 128.0]
                .map(|p| format!("{:.1}x", amdahl(s, p)))
                .join(" / ")
        });
        println!(
            "| {} ({}) | {:.3} | {limit} | {limit_s} | {pct} | {} | {} | {serial} | {parts} | \
             {projected} | {} |",
            l.workload,
            threads_name(l.threads),
            l.secs,
            l.peak.map_or("-".into(), mib),
            mib(l.input),
            l.note.as_deref().unwrap_or(""),
        );
    }
}

/// The serial fraction of a run that took `one` seconds on one thread and
/// `all` on `threads` (the Karp-Flatt metric: Amdahl's law solved for the
/// serial share; overheads that grow with the threads count as serial).
pub(crate) fn serial_fraction(one: f64, all: f64, threads: usize) -> Option<f64> {
    if threads < 2 || one <= 0.0 {
        return None;
    }
    let p = threads as f64;
    Some(((p * all / one - 1.0) / (p - 1.0)).clamp(0.0, 1.0))
}

/// Amdahl's speed-up on `p` cores of work whose serial share is `s`.
pub(crate) fn amdahl(s: f64, p: f64) -> f64 {
    1.0 / (s + (1.0 - s) / p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Some bytes with words cut at every kind of place.
    fn text(n: usize, seed: u64) -> Vec<u8> {
        let alphabet = b"abcXYZ  ,.\n0\xc3\xa9";
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                alphabet[(x % alphabet.len() as u64) as usize]
            })
            .collect()
    }

    #[test]
    fn the_tokenizer_finds_the_words_a_plain_split_finds() {
        for (n, seed) in [(0, 1), (1, 2), (63, 3), (1000, 4), (100_003, 5)] {
            let data = text(n, seed);
            let want = data
                .split(|b| !b.is_ascii_alphabetic())
                .filter(|w| !w.is_empty())
                .count() as u64;
            for threads in [1, 2, 3, 7] {
                assert_eq!(count_words(&data, threads), want, "{n} {threads}");
            }
        }
    }

    #[test]
    fn the_read_pass_sums_every_word_whatever_the_threads() {
        let data = text(100_000, 9);
        let want = read_all(&data, 1);
        for threads in [2, 3, 8] {
            assert_eq!(read_all(&data, threads), want);
        }
    }

    #[test]
    fn the_counter_update_loop_counts_what_the_sequential_histogram_counts() {
        for (width, height) in [(1, 1), (4, 3), (5, 7), (37, 11), (64, 40)] {
            let spec = ember_apps::histogram::BmpSpec {
                width,
                height,
                seed: u64::from(width * height),
            };
            let mut file = Vec::new();
            ember_apps::histogram::write_bmp(&spec, &mut file, |_| {}).unwrap();
            let want = ember_apps::histogram::sequential(&file).unwrap();
            for threads in [1, 2, 3, 5] {
                assert_eq!(sub_histograms(&file, threads).unwrap(), want);
            }
        }
    }

    #[test]
    fn the_multiply_add_loop_computes_the_plain_recurrence() {
        let (m, c) = (0x9e37_79b9_u32 as i32, 12345);
        for rounds in [0, 1, 7] {
            let want = (0..LANES as i32)
                .map(|mut x| {
                    for _ in 0..rounds {
                        x = x.wrapping_mul(m).wrapping_add(c);
                    }
                    x
                })
                .fold(0i32, i32::wrapping_add);
            assert_eq!(multiply_adds(rounds), want, "{rounds}");
        }
    }

    #[test]
    fn the_serial_fraction_inverts_amdahl() {
        for s in [0.0, 0.05, 0.5, 1.0] {
            let one = 10.0;
            let all = one / amdahl(s, 2.0);
            let got = serial_fraction(one, all, 2).unwrap();
            assert!((got - s).abs() < 1e-9, "{s} {got}");
        }
        assert_eq!(serial_fraction(1.0, 1.0, 1), None);
        assert!((amdahl(0.1, 16.0) - 6.4).abs() < 1e-9);
    }
}
