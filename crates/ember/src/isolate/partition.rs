//! The reduce workers' key ranges: every map channel is sorted by key
//! text, so a range of keys is one contiguous run of lines in each of
//! them, and the (mapper, partition) pair's channel is that byte range of
//! the mapper's memfd. The ranges are cut where the channels' lines,
//! sampled by bytes, divide into equal shares; a key is never cut.
//!
//! Key ranges rather than key hashes: the reduce outputs then follow each
//! other in key order, so the parent concatenates them (a reduce whose
//! output is not `key<TAB>value` lines, such as sort's records, stays
//! ordered), and a mapper writes one channel, not one per reducer.

use std::ops::Range;

/// Lines sampled from the channels per partition wanted: enough that the
/// ranges' shares of the bytes come out near equal.
const SAMPLES_PER_PARTITION: usize = 16;

/// For `runs`, each sorted by key text, at most `partitions` key ranges
/// in key order, each a byte range of every run (`ranges[p][r]`: run
/// `r`'s lines of range `p`). A range holds every line of its keys; a
/// range with no line is dropped, but there is always one.
pub(super) fn ranges(runs: &[&[u8]], partitions: usize) -> Vec<Vec<Range<usize>>> {
    let bounds = boundaries(runs, partitions);
    let cuts: Vec<Vec<usize>> = runs
        .iter()
        .map(|run| {
            let inner = bounds.iter().map(|key| lower_bound(run, key));
            std::iter::once(0)
                .chain(inner)
                .chain(std::iter::once(run.len()))
                .collect()
        })
        .collect();
    let mut ranges: Vec<Vec<Range<usize>>> = (0..=bounds.len())
        .map(|p| cuts.iter().map(|c| c[p]..c[p + 1]).collect())
        .filter(|parts: &Vec<Range<usize>>| parts.iter().any(|r| !r.is_empty()))
        .collect();
    if ranges.is_empty() {
        ranges.push(runs.iter().map(|_| 0..0).collect());
    }
    ranges
}

/// The first key of each range after the first: keys of lines sampled at
/// even byte steps through every run, weighted by the bytes up to the
/// next sample, cut into `partitions` equal shares of all the bytes.
fn boundaries<'a>(runs: &[&'a [u8]], partitions: usize) -> Vec<&'a [u8]> {
    let total: usize = runs.iter().map(|r| r.len()).sum();
    let probes = partitions * SAMPLES_PER_PARTITION;
    let mut samples = Vec::new();
    for run in runs.iter().filter(|r| !r.is_empty()) {
        let mut at: Vec<usize> = (0..probes)
            .map(|k| line_start(run, k * run.len() / probes))
            .collect();
        at.dedup();
        at.retain(|&a| a < run.len());
        for (i, &a) in at.iter().enumerate() {
            let next = at.get(i + 1).copied().unwrap_or(run.len());
            samples.push((key_at(run, a), next - a));
        }
    }
    samples.sort_unstable();
    let mut bounds = Vec::new();
    let (mut seen, mut share) = (0, 1);
    for (key, weight) in samples {
        while share < partitions && seen >= total * share / partitions {
            bounds.push(key);
            share += 1;
        }
        seen += weight;
    }
    bounds.dedup();
    bounds
}

/// Where the first line at or after byte `at` starts (`run.len()` if none).
fn line_start(run: &[u8], at: usize) -> usize {
    if at == 0 {
        return 0;
    }
    memchr::memchr(b'\n', &run[at - 1..]).map_or(run.len(), |i| at + i)
}

/// Where the line starting at `at` ends (after its newline).
fn line_end(run: &[u8], at: usize) -> usize {
    memchr::memchr(b'\n', &run[at..]).map_or(run.len(), |i| at + i + 1)
}

/// The key text of the line starting at `at` (what the merge orders by).
fn key_at(run: &[u8], at: usize) -> &[u8] {
    let line = &run[at..];
    &line[..memchr::memchr2(b'\t', b'\n', line).unwrap_or(line.len())]
}

/// Where the first line of `run` whose key is not below `key` starts.
fn lower_bound(run: &[u8], key: &[u8]) -> usize {
    // `lo` and `hi` are line starts: the lines before `lo` have keys below
    // `key`, the line at `hi` (if any) does not.
    let (mut lo, mut hi) = (0, run.len());
    while lo < hi {
        let mut mid = line_start(run, lo + (hi - lo) / 2);
        if mid >= hi {
            mid = lo;
        }
        if key_at(run, mid) < key {
            lo = line_end(run, mid);
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isolate::merge;
    use std::io::Read;

    fn merged(runs: Vec<&[u8]>) -> String {
        let mut text = String::new();
        merge::Lines::new(runs).read_to_string(&mut text).unwrap();
        text
    }

    /// Sorted runs of `key<TAB>value` lines with shared and repeated keys.
    fn runs(n: usize, lines: usize) -> Vec<Vec<u8>> {
        let mut x: u64 = 11;
        (0..n)
            .map(|r| {
                let mut keys: Vec<String> = (0..lines * (r + 1) % 97)
                    .map(|_| {
                        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                        format!("k{}", (x >> 40) % 50)
                    })
                    .collect();
                keys.sort();
                keys.iter()
                    .map(|k| format!("{k}\t{r}\n"))
                    .collect::<String>()
                    .into_bytes()
            })
            .collect()
    }

    #[test]
    fn ranges_cover_every_line_in_key_order_and_never_cut_a_key() {
        for n in [1, 2, 5] {
            let owned = runs(n, 40);
            let runs: Vec<&[u8]> = owned.iter().map(|r| &r[..]).collect();
            let all = merged(runs.clone());
            for partitions in [1, 2, 3, 4, 9] {
                let ranges = ranges(&runs, partitions);
                assert!(!ranges.is_empty() && ranges.len() <= partitions);
                let parts: Vec<String> = ranges
                    .iter()
                    .map(|p| merged(runs.iter().zip(p).map(|(r, x)| &r[x.clone()]).collect()))
                    .collect();
                assert_eq!(parts.concat(), all, "{n} runs, {partitions} partitions");
                for pair in parts.windows(2) {
                    let last = pair[0].lines().last().unwrap().split('\t').next();
                    let first = pair[1].lines().next().unwrap().split('\t').next();
                    assert!(last < first, "{last:?} {first:?}");
                }
            }
        }
    }

    #[test]
    fn one_key_or_no_lines_make_one_range() {
        let run: &[u8] = b"sums\t1\nsums\t2\n";
        assert_eq!(ranges(&[run, run], 4), vec![vec![0..14, 0..14]]);
        assert_eq!(ranges(&[b"", b""], 3), vec![vec![0..0, 0..0]]);
        assert_eq!(ranges(&[], 3), vec![Vec::<Range<usize>>::new()]);
    }

    #[test]
    fn lower_bound_finds_the_first_line_not_below() {
        let run: &[u8] = b"a\t1\nb\t1\nb\t2\nd\t1";
        for (key, at) in [("", 0), ("a", 0), ("b", 4), ("c", 12), ("d", 12), ("e", 15)] {
            assert_eq!(lower_bound(run, key.as_bytes()), at, "{key}");
        }
    }
}
