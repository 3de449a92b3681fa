//! Cutting the input files into splits at line boundaries.

use std::ops::Range;

use ember::Input;

/// Bytes `range` of input file `part`: whole lines, within one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Split {
    pub(super) part: usize,
    pub(super) range: Range<usize>,
}

/// The split size when none is given: about four splits per mapper (so
/// that a slow split does not hold the others up), at least 1 MiB (a
/// process start per split) and at most 64 MiB.
pub(super) fn default_size(total: usize, mappers: usize) -> usize {
    (total / (4 * mappers.max(1))).clamp(1 << 20, 64 << 20)
}

/// The splits of every file of `input`, in file order: each about `size`
/// bytes, ending just after a newline (or at the end of its file), so that
/// a line never spans two splits. An empty file is one empty split, as
/// Hadoop makes it.
pub(super) fn plan(input: &Input<'_>, size: usize) -> Vec<Split> {
    let mut splits = Vec::new();
    for part in 0..input.parts() {
        let data = input.part_bytes(part);
        if data.is_empty() {
            splits.push(Split { part, range: 0..0 });
        }
        splits.extend(cut(data, size).map(|range| Split { part, range }));
    }
    splits
}

/// `data` cut into ranges of at least `size` bytes (the last may be
/// shorter), each ending just after the first newline at or past its
/// `size`th byte.
fn cut(data: &[u8], size: usize) -> impl Iterator<Item = Range<usize>> + '_ {
    let size = size.max(1);
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= data.len() {
            return None;
        }
        let from = (start + size - 1).min(data.len() - 1);
        let end = memchr::memchr(b'\n', &data[from..]).map_or(data.len(), |i| from + i + 1);
        let range = start..end;
        start = end;
        Some(range)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_end_after_a_newline_and_cover_the_file() {
        let data = b"aaaa\nbb\n\ncccccc\nd";
        for size in 1..=data.len() + 1 {
            let ranges: Vec<_> = cut(data, size).collect();
            assert_eq!(ranges.first().unwrap().start, 0);
            assert_eq!(ranges.last().unwrap().end, data.len());
            for w in ranges.windows(2) {
                assert_eq!(w[0].end, w[1].start);
                assert_eq!(data[w[0].end - 1], b'\n', "size {size}");
                assert!(w[0].len() >= size);
            }
        }
        let ranges: Vec<_> = cut(data, 5).collect();
        assert_eq!(ranges, vec![0..5, 5..16, 16..17]);
        assert_eq!(cut(b"", 4).count(), 0);
    }

    #[test]
    fn every_file_has_its_own_splits_and_an_empty_file_one() {
        let input = Input::files::<&str>([]).unwrap();
        assert!(plan(&input, 10).is_empty());
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let e = dir.path().join("e");
        std::fs::write(&a, "x\ny\n").unwrap();
        std::fs::write(&e, "").unwrap();
        let input = Input::files([&a, &e, &a]).unwrap();
        let parts: Vec<_> = plan(&input, 1)
            .iter()
            .map(|s| (s.part, s.range.clone()))
            .collect();
        assert_eq!(
            parts,
            vec![(0, 0..2), (0, 2..4), (1, 0..0), (2, 0..2), (2, 2..4)]
        );
    }
}
