//! k-means in the streaming contract, one Lloyd iteration per round (as
//! k-means runs on Hadoop: one job per iteration, the means shipped to
//! every task as a file).
//!
//! - **Points** (the map input): one per line, integer coordinates
//!   separated by commas, spaces or tabs.
//! - **Means** (`--means FILE`, for map and reduce): either one mean per
//!   line in the same form (the first line is cluster 0), or the reduce
//!   output of the previous round, `cluster<TAB>x,y,...` lines in any
//!   order, one per cluster from 0 to k-1.
//! - **Partials**: `cluster<TAB>count:sum,sum,...`, every cluster's count
//!   and coordinate sums; map writes every cluster, empty ones too, so that
//!   reduce sees each cluster and keeps the mean of one that got no point.
//! - **Output**: `cluster<TAB>x,y,...`, the new means, by the definition of
//!   [`crate::kmeans`] (the floor of each coordinate's mean), which the next
//!   round reads as its `--means`. The rounds have converged when a round's
//!   output equals its means file.
//!
//! [`Rows`] (`kmeans-rows`) is the same iteration over binary points, the
//! values of an ember matrix file (rows of little-endian `i32`s, without
//! the file's header), whose output is each non-empty cluster's
//! `cluster<TAB>count:sum,sum,...`: what `ember kmeans --isolate` runs in
//! its worker processes at each iteration, the means from the parent.

use ember::stream::Text;
use ember::{Emit, Job, KeyHint, Malformed, MapResult, Records, Split};

use super::map_lines;

use crate::kmeans::{nearest, split_sums, AddClusters, ClusterSum};

/// One iteration of k-means over points given as text lines.
#[derive(Debug, Clone)]
pub struct Round {
    dims: usize,
    /// `dims` coordinates per cluster, cluster by cluster.
    means: Vec<i32>,
}

impl Round {
    /// The round from the means `text` (a means file, the module's notes
    /// give its two forms).
    pub fn from_means(text: &[u8]) -> Result<Self, String> {
        let lines = text
            .split(|&b| b == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .filter(|l| !l.is_empty());
        let mut rows: Vec<Option<Vec<i32>>> = Vec::new();
        let (mut keyed, mut plain) = (false, false);
        for (n, line) in lines.enumerate() {
            let (cluster, coords) = match line.iter().position(|&b| b == b'\t') {
                Some(tab) => {
                    keyed = true;
                    let c = std::str::from_utf8(&line[..tab])
                        .ok()
                        .and_then(|c| c.parse::<usize>().ok())
                        .filter(|&c| c <= u32::MAX as usize)
                        .ok_or_else(|| format!("mean {}: the cluster is not a number", n + 1))?;
                    (c, &line[tab + 1..])
                }
                None => {
                    plain = true;
                    (n, line)
                }
            };
            let mean = coordinates(coords)
                .map_err(|e| format!("mean {} (cluster {cluster}): {e}", n + 1))?;
            if cluster >= rows.len() {
                rows.resize(cluster + 1, None);
            }
            if rows[cluster].replace(mean).is_some() {
                return Err(format!("cluster {cluster} has two means"));
            }
        }
        if keyed && plain {
            return Err("mixes `cluster<TAB>mean` lines with plain ones".into());
        }
        Self::new(rows)
    }

    /// Checks that every cluster from 0 has a mean, all of one dimension.
    fn new(rows: Vec<Option<Vec<i32>>>) -> Result<Self, String> {
        let dims = match rows.first() {
            Some(Some(first)) => first.len(),
            Some(None) => return Err("cluster 0 has no mean".into()),
            None => return Err("no means".into()),
        };
        let mut means = Vec::with_capacity(rows.len() * dims);
        for (c, row) in rows.into_iter().enumerate() {
            let row = row.ok_or_else(|| format!("cluster {c} has no mean"))?;
            if row.len() != dims {
                return Err(format!(
                    "cluster {c} has {} coordinates, cluster 0 has {dims}",
                    row.len()
                ));
            }
            means.extend(row);
        }
        Ok(Round { dims, means })
    }

    /// From `--means FILE`.
    pub(super) fn from_args(args: &[String]) -> Result<Self, String> {
        match args {
            [flag, path] if flag == "--means" => {
                let text = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
                Self::from_means(&text).map_err(|e| format!("{path}: {e}"))
            }
            _ => Err(format!("expected --means FILE, got '{}'", args.join(" "))),
        }
    }

    /// The number of clusters.
    pub fn clusters(&self) -> usize {
        self.means.len() / self.dims
    }

    /// The mean of cluster `c`.
    pub fn mean(&self, c: usize) -> &[i32] {
        &self.means[c * self.dims..(c + 1) * self.dims]
    }
}

/// The integers of `text`, separated by commas, spaces or tabs.
pub(super) fn coordinates(text: &[u8]) -> Result<Vec<i32>, String> {
    let coords = text
        .split(|&b| matches!(b, b',' | b' ' | b'\t'))
        .filter(|c| !c.is_empty())
        .map(|c| {
            std::str::from_utf8(c)
                .ok()
                .and_then(|c| c.parse::<i32>().ok())
                .ok_or_else(|| {
                    format!(
                        "'{}' is not a 32-bit integer",
                        String::from_utf8_lossy(c).escape_debug()
                    )
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if coords.is_empty() {
        return Err("no coordinates".into());
    }
    Ok(coords)
}

/// `count:sum,sum,...`.
impl Text for ClusterSum {
    fn write_text(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.count.to_string().as_bytes());
        out.push(b':');
        self.sums.write_text(out);
    }
    fn read_text(text: &[u8]) -> Option<Self> {
        let colon = text.iter().position(|&b| b == b':')?;
        Some(ClusterSum {
            count: u64::read_text(&text[..colon])?,
            sums: Vec::read_text(&text[colon + 1..])?,
        })
    }
}

impl Job for Round {
    type Key = u32;
    type Value = ClusterSum;
    type Combiner = AddClusters;
    type Out = Vec<i32>;

    fn records(&self) -> Records {
        Records::Lines
    }

    fn keys(&self) -> KeyHint {
        KeyHint::Dense(self.clusters())
    }

    /// Sums the split's points per cluster and emits every cluster.
    fn map<E: Emit<u32, ClusterSum>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        let mut sums = vec![
            ClusterSum {
                sums: vec![0; self.dims],
                count: 0
            };
            self.clusters()
        ];
        map_lines(split.data, |text| {
            let p = coordinates(text)?;
            if p.len() != self.dims {
                return Err(format!(
                    "{} coordinates, the means have {}",
                    p.len(),
                    self.dims
                ));
            }
            let sum = &mut sums[nearest(&p, &self.means)];
            for (s, x) in sum.sums.iter_mut().zip(&p) {
                *s += i64::from(*x);
            }
            sum.count += 1;
            Ok(())
        })?;
        for (c, sum) in sums.into_iter().enumerate() {
            emit.emit(c as u32, sum);
        }
        Ok(())
    }

    /// The new mean; a cluster that got no point keeps its mean.
    fn reduce(&self, cluster: &u32, sum: ClusterSum) -> Vec<i32> {
        let c = *cluster as usize;
        match sum.count {
            0 if c < self.clusters() => self.mean(c).to_vec(),
            0 => Vec::new(),
            _ => sum.mean(),
        }
    }
}

/// One iteration of k-means over binary points (the module's notes): the
/// cluster sums, which the caller turns into means.
#[derive(Debug, Clone)]
pub struct Rows(Round);

impl Rows {
    /// From `--means FILE`, as [`Round`].
    pub(super) fn from_args(args: &[String]) -> Result<Self, String> {
        Round::from_args(args).map(Rows)
    }
}

impl Job for Rows {
    type Key = u32;
    type Value = ClusterSum;
    type Combiner = AddClusters;
    type Out = ClusterSum;

    /// A point is a row of `dims` 4-byte coordinates.
    fn records(&self) -> Records {
        Records::Fixed(4 * self.0.dims)
    }

    fn keys(&self) -> KeyHint {
        KeyHint::Dense(self.0.clusters())
    }

    /// Sums the split's points per nearest mean; emits the non-empty
    /// clusters.
    fn map<E: Emit<u32, ClusterSum>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        let row = 4 * self.0.dims;
        let whole = split.data.len() - split.data.len() % row;
        if whole < split.data.len() {
            return Err(Malformed::new(
                whole,
                format!(
                    "a partial point of {} bytes (a point is {row})",
                    split.data.len() - whole
                ),
            ));
        }
        for (c, sum) in split_sums(self.0.dims, &self.0.means, split.data) {
            emit.emit(c as u32, sum);
        }
        Ok(())
    }

    fn reduce(&self, _cluster: &u32, sum: ClusterSum) -> ClusterSum {
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn means_read_in_either_form_and_bad_ones_are_named() {
        let plain = Round::from_means(b"1,2\n3 4\r\n\n-5,6\n").unwrap();
        assert_eq!((plain.clusters(), plain.mean(2)), (3, &[-5, 6][..]));
        let keyed = Round::from_means(b"1\t3,4\n0\t1,2\n").unwrap();
        assert_eq!(keyed.means, [1, 2, 3, 4]);
        let error = |text: &[u8]| Round::from_means(text).unwrap_err();
        assert_eq!(error(b""), "no means");
        assert_eq!(error(b"1\t3,4\n"), "cluster 0 has no mean");
        assert_eq!(error(b"0\t1\n0\t2\n"), "cluster 0 has two means");
        assert_eq!(
            error(b"1,2\n3\n"),
            "cluster 1 has 1 coordinates, cluster 0 has 2"
        );
        assert!(error(b"0\t1\n2\n").contains("mixes"));
        assert!(error(b"1,x\n").contains("'x' is not a 32-bit integer"));
        assert!(error(b"a\t1\n").contains("the cluster is not a number"));
    }

    #[test]
    fn cluster_sums_read_back_their_text() {
        let sum = ClusterSum {
            sums: vec![-3, 40],
            count: 7,
        };
        let mut text = Vec::new();
        sum.write_text(&mut text);
        assert_eq!(text, b"7:-3,40");
        assert_eq!(ClusterSum::read_text(&text), Some(sum));
        assert_eq!(ClusterSum::read_text(b"7"), None);
    }
}
