//! Workloads that run several jobs on one runtime (k-means' iterations,
//! PCA's two jobs) report their stats summed over the jobs.

use ember::Stats;

/// Adds the stats of one more job to `total`: times, input bytes, splits
/// and pair counts add up, per-worker task counts and busy times add up
/// worker by worker, the utilization is the mean weighted by map and
/// reduce time, and the container names are joined when they differ (the
/// ingest, container reason and mode are the first job's).
pub fn add_stats(total: &mut Stats, s: &Stats) {
    let first = total.threads == 0;
    let (was, adds) = (
        total.map_secs + total.reduce_secs,
        s.map_secs + s.reduce_secs,
    );
    if was + adds > 0.0 {
        total.utilization = (total.utilization * was + s.utilization * adds) / (was + adds);
    }
    if first {
        total.ingest = s.ingest.clone();
        total.container_reason = s.container_reason.clone();
        total.mode = s.mode.clone();
        total.mode_reason = s.mode_reason.clone();
    }
    total.sample_secs += s.sample_secs;
    add_by_worker(&mut total.map_busy_secs, &s.map_busy_secs);
    add_by_worker(&mut total.reduce_busy_secs, &s.reduce_busy_secs);
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

fn add_by_worker<T: Copy + Default + std::ops::AddAssign>(total: &mut Vec<T>, s: &[T]) {
    if total.len() < s.len() {
        total.resize(s.len(), T::default());
    }
    for (t, x) in total.iter_mut().zip(s) {
        *t += *x;
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

        let busy = |map: f64, u: f64| Stats {
            threads: 2,
            map_secs: map,
            map_busy_secs: vec![map, map],
            utilization: u,
            ingest: "mmap".into(),
            ..Stats::default()
        };
        let mut t = Stats::default();
        add_stats(&mut t, &busy(1.0, 0.5));
        add_stats(&mut t, &busy(3.0, 1.0));
        assert_eq!(t.map_busy_secs, vec![4.0, 4.0]);
        assert_eq!(t.utilization, 0.875);
        assert_eq!(t.ingest, "mmap");
    }
}
