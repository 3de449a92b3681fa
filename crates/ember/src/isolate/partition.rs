//! The reduce workers' key ranges: every map channel is sorted by key
//! text, so a range of keys is one contiguous run of pairs in each of
//! them, and the (mapper, partition) pair's channel is that byte range of
//! the mapper's memfd. The ranges are cut where the channels' pairs,
//! sampled by bytes, divide into equal shares; a key is never cut.
//!
//! Key ranges rather than key hashes: the reduce outputs then follow each
//! other in key order, so the parent concatenates them (a reduce whose
//! output is not `key<TAB>value` lines, such as sort's records, stays
//! ordered), and a mapper writes one channel, not one per reducer.
//!
//! A channel's pairs are lines or records ([`Form`]). A line starts after
//! a newline, found from any byte; a record cannot be, so a channel of
//! records is walked once and some of its starts kept ([`Index`]): the
//! samples and the searches start there.

use std::ops::Range;

use super::pairs;
use crate::error::{Error, Result};
use crate::stream::Form;

/// Pairs sampled from the channels per partition wanted: enough that the
/// ranges' shares of the bytes come out near equal.
const SAMPLES_PER_PARTITION: usize = 16;

/// Records between two kept starts of a channel's [`Index`].
const STEP: usize = 64;

/// For `runs`, each sorted by key text, at most `partitions` key ranges
/// in key order, each a byte range of every run (`ranges[p][r]`: run
/// `r`'s pairs of range `p`). A range holds every pair of its keys; a
/// range with no pair is dropped, but there is always one. A run whose
/// last record is cut short is an error.
pub(super) fn ranges(
    runs: &[&[u8]],
    form: Form,
    partitions: usize,
) -> Result<Vec<Vec<Range<usize>>>> {
    let probes = partitions * SAMPLES_PER_PARTITION;
    let indexes = runs
        .iter()
        .enumerate()
        .map(|(n, run)| Index::new(run, form, probes).ok_or_else(|| cut_short(n)))
        .collect::<Result<Vec<_>>>()?;
    let bounds = boundaries(&indexes, probes, partitions);
    let cuts: Vec<Vec<usize>> = indexes
        .iter()
        .map(|index| {
            let inner = bounds.iter().map(|key| index.lower_bound(key));
            std::iter::once(0)
                .chain(inner)
                .chain(std::iter::once(index.run.len()))
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
    Ok(ranges)
}

fn cut_short(channel: usize) -> Error {
    Error::InvalidInput(format!(
        "map channel {channel}: its last record is cut short"
    ))
}

/// The first key of each range after the first: keys of pairs sampled at
/// `probes` even byte steps through every run, weighted by the bytes up
/// to the next sample, cut into `partitions` equal shares of all the
/// bytes.
fn boundaries<'a>(indexes: &[Index<'a>], probes: usize, partitions: usize) -> Vec<&'a [u8]> {
    let total: usize = indexes.iter().map(|i| i.run.len()).sum();
    let mut samples = Vec::new();
    for index in indexes.iter().filter(|i| !i.run.is_empty()) {
        let len = index.run.len();
        let mut at: Vec<usize> = (0..probes)
            .map(|k| index.start_at(mark(k, len, probes)))
            .collect();
        at.dedup();
        at.retain(|&a| a < len);
        for (i, &a) in at.iter().enumerate() {
            let next = at.get(i + 1).copied().unwrap_or(len);
            samples.push((index.key_at(a), next - a));
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

/// The `k`-th of `probes` even byte steps through `len` bytes.
fn mark(k: usize, len: usize, probes: usize) -> usize {
    k * len / probes
}

/// A run, and where its pairs start: lines are found from any byte;
/// records from the starts kept when the run was walked, of every
/// [`STEP`]-th record and of the first at or after each byte step
/// ([`mark`]).
struct Index<'a> {
    run: &'a [u8],
    form: Form,
    /// The records' starts kept, in order (`None` for lines).
    starts: Option<Vec<usize>>,
}

impl<'a> Index<'a> {
    /// The index of `run` with `probes` byte steps; `None` if its last
    /// record is cut short. Records are walked one by one; lines are not
    /// read here (sort's channels hold all its input).
    fn new(run: &'a [u8], form: Form, probes: usize) -> Option<Index<'a>> {
        if form == Form::Text {
            return Some(Index {
                run,
                form,
                starts: None,
            });
        }
        let (mut at, mut n, mut k, mut starts) = (0, 0, 0, Vec::new());
        while at < run.len() {
            let on_step = k < probes && at >= mark(k, run.len(), probes);
            if n % STEP == 0 || on_step {
                starts.push(at);
            }
            while k < probes && mark(k, run.len(), probes) <= at {
                k += 1;
            }
            at += pairs::first(form, &run[at..])?.len;
            n += 1;
        }
        let starts = Some(starts);
        Some(Index { run, form, starts })
    }

    /// The pair starting at `at` (a pair's start, before the run's end).
    fn pair_at(&self, at: usize) -> pairs::Pair<'a> {
        pairs::first(self.form, &self.run[at..]).expect("a start of a walked run")
    }

    /// The key's text of the pair starting at `at`.
    fn key_at(&self, at: usize) -> &'a [u8] {
        self.pair_at(at).key
    }

    /// The first pair start at or after byte `at` (the run's end if none):
    /// of records, the first kept one, which at a byte step is the first.
    fn start_at(&self, at: usize) -> usize {
        let Some(starts) = &self.starts else {
            return line_start(self.run, at);
        };
        let i = starts.partition_point(|&s| s < at);
        starts.get(i).copied().unwrap_or(self.run.len())
    }

    /// Where the first pair whose key is not below `key` starts: lines
    /// bisected by bytes, records walked from the last kept start below.
    fn lower_bound(&self, key: &[u8]) -> usize {
        let Some(starts) = &self.starts else {
            return self.bisect_lines(key);
        };
        let i = starts.partition_point(|&s| self.key_at(s) < key);
        let mut at = match i {
            0 => 0,
            i => starts[i - 1],
        };
        while at < self.run.len() {
            let pair = self.pair_at(at);
            if pair.key >= key {
                break;
            }
            at += pair.len;
        }
        at
    }

    /// [`Index::lower_bound`] of lines.
    fn bisect_lines(&self, key: &[u8]) -> usize {
        // `lo` and `hi` are line starts: the lines before `lo` have keys
        // below `key`, the line at `hi` (if any) does not.
        let (mut lo, mut hi) = (0, self.run.len());
        while lo < hi {
            let mut mid = line_start(self.run, lo + (hi - lo) / 2);
            if mid >= hi {
                mid = lo;
            }
            let pair = self.pair_at(mid);
            if pair.key < key {
                lo = mid + pair.len;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// Where the first line at or after byte `at` starts (`run.len()` if none).
fn line_start(run: &[u8], at: usize) -> usize {
    if at == 0 {
        return 0;
    }
    memchr::memchr(b'\n', &run[at - 1..]).map_or(run.len(), |i| at + i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isolate::merge;
    use crate::stream::push_record;
    use std::io::Read;

    fn merged(runs: Vec<&[u8]>) -> String {
        let mut text = String::new();
        merge::Merged::new(Form::Text, runs)
            .lines()
            .read_to_string(&mut text)
            .unwrap();
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
                let ranges = ranges(&runs, Form::Text, partitions).unwrap();
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
        let ranges = |runs: &[&[u8]], p| ranges(runs, Form::Text, p).unwrap();
        assert_eq!(ranges(&[run, run], 4), vec![vec![0..14, 0..14]]);
        assert_eq!(ranges(&[b"", b""], 3), vec![vec![0..0, 0..0]]);
        assert_eq!(ranges(&[], 3), vec![Vec::<Range<usize>>::new()]);
    }

    #[test]
    fn lower_bound_finds_the_first_pair_not_below() {
        let run: &[u8] = b"a\t1\nb\t1\nb\t2\nd\t1";
        let index = Index::new(run, Form::Text, 1).unwrap();
        for (key, at) in [("", 0), ("a", 0), ("b", 4), ("c", 12), ("d", 12), ("e", 15)] {
            assert_eq!(index.lower_bound(key.as_bytes()), at, "{key}");
        }
    }

    #[test]
    fn record_ranges_cover_every_record_and_never_cut_a_key() {
        // Runs of records with shared and repeated keys.
        let binary: Vec<Vec<u8>> = runs(3, 1000)
            .iter()
            .map(|run| {
                let mut records = Vec::new();
                for line in run.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                    let tab = line.iter().position(|&b| b == b'\t').unwrap();
                    let key = crate::key::Bytes::from(&line[..tab]);
                    push_record(&mut records, &key, &line[tab + 1..].to_vec());
                }
                records
            })
            .collect();
        let runs: Vec<&[u8]> = binary.iter().map(|r| &r[..]).collect();
        let keys = |bytes: &[u8]| -> Vec<Vec<u8>> {
            let records = crate::stream::records("run", bytes);
            records.map(|r| r.unwrap().key.to_vec()).collect()
        };
        for p in [1, 2, 3, 5] {
            let ranges = ranges(&runs, Form::Binary, p).unwrap();
            assert!(!ranges.is_empty() && ranges.len() <= p);
            let mut last: Option<Vec<u8>> = None;
            for (r, run) in runs.iter().enumerate() {
                let parts: Vec<&Range<usize>> = ranges.iter().map(|x| &x[r]).collect();
                let covered: usize = parts.iter().map(|x| x.len()).sum();
                assert_eq!(covered, run.len(), "{p} ranges, run {r}");
            }
            for parts in &ranges {
                let mut range_keys: Vec<Vec<u8>> = runs
                    .iter()
                    .zip(parts)
                    .flat_map(|(run, x)| keys(&run[x.clone()]))
                    .collect();
                range_keys.sort();
                assert!(last < range_keys.first().cloned(), "{p}: ranges overlap");
                last = range_keys.last().cloned();
            }
        }
        let mut cut = binary[0].clone();
        cut.pop();
        let err = ranges(&[&binary[1], &cut], Form::Binary, 2).unwrap_err();
        assert!(err.to_string().contains("map channel 1"), "{err}");
    }
}
