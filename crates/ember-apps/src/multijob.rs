//! Workloads that run several jobs on one runtime (k-means' iterations,
//! PCA's two jobs) report their stats summed over the jobs.

use ember::Stats;

/// Adds the stats of one more job to `total`: times, input bytes, splits
/// and pair counts add up, per-worker task counts add up worker by worker,
/// and the container names are joined when they differ.
pub fn add_stats(total: &mut Stats, s: &Stats) {
    let first = total.threads == 0;
    total.threads = s.threads;
    total.input_bytes += s.input_bytes;
    total.input_parts = total.input_parts.max(s.input_parts);
    total.splits += s.splits;
    total.partitions = total.partitions.max(s.partitions);
    if first {
        total.container = s.container.clone();
        total.reduce_skipped = s.reduce_skipped;
    } else {
        if !total.container.split('+').any(|c| c == s.container) {
            total.container = format!("{}+{}", total.container, s.container);
        }
        total.reduce_skipped &= s.reduce_skipped;
    }
    total.split_secs += s.split_secs;
    total.map_secs += s.map_secs;
    total.reduce_secs += s.reduce_secs;
    total.merge_secs += s.merge_secs;
    total.total_secs += s.total_secs;
    total.pairs_emitted += s.pairs_emitted;
    total.distinct_keys += s.distinct_keys;
    total.output_pairs += s.output_pairs;
    add_by_worker(&mut total.map_tasks, &s.map_tasks);
    add_by_worker(&mut total.reduce_tasks, &s.reduce_tasks);
}

fn add_by_worker(total: &mut Vec<u64>, s: &[u64]) {
    if total.len() < s.len() {
        total.resize(s.len(), 0);
    }
    for (t, x) in total.iter_mut().zip(s) {
        *t += x;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_jobs() {
        let a = Stats {
            threads: 2,
            splits: 3,
            container: "hash".into(),
            map_secs: 1.0,
            map_tasks: vec![1, 2],
            ..Stats::default()
        };
        let b = Stats {
            container: "append".into(),
            reduce_skipped: true,
            map_tasks: vec![4, 4],
            ..a.clone()
        };
        let mut t = Stats::default();
        add_stats(&mut t, &a);
        add_stats(&mut t, &b);
        add_stats(&mut t, &a);
        assert_eq!(t.splits, 9);
        assert_eq!(t.container, "hash+append");
        assert!(!t.reduce_skipped);
        assert_eq!(t.map_tasks, vec![6, 8]);
        assert_eq!(t.map_secs, 3.0);
    }
}
