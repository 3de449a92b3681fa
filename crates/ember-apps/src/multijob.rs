//! Workloads that run several jobs on one runtime (k-means' iterations,
//! PCA's two jobs) report their stats summed over the jobs.

use ember::Stats;

/// Adds the stats of one more job to `total`: times, input bytes, splits
/// and pair counts add up, per-worker task counts and busy times add up
/// worker by worker, the utilization is the mean weighted by map and
/// reduce time, and the plan (container, mode, ingest and their reasons)
/// is the first job's, with the most partitions any job had.
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
        total.plan = s.plan.clone();
    }
    total.sample_secs += s.sample_secs;
    total.sample_kept_bytes += s.sample_kept_bytes;
    add_by_worker(&mut total.map_busy_secs, &s.map_busy_secs);
    add_by_worker(&mut total.reduce_busy_secs, &s.reduce_busy_secs);
    total.threads = s.threads;
    total.input_bytes += s.input_bytes;
    total.input_parts = total.input_parts.max(s.input_parts);
    total.splits += s.splits;
    total.plan.partitions = total.plan.partitions.max(s.plan.partitions);
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
        use ember::stats::{IngestKind, RunMode};
        use ember::ContainerKind;
        let mut a = Stats::default();
        a.threads = 2;
        a.splits = 3;
        a.plan.container = ContainerKind::Hash;
        a.map_secs = 1.0;
        a.map_tasks = vec![1, 2];
        let mut b = a.clone();
        b.plan.container = ContainerKind::Append;
        b.plan.mode = RunMode::MapOnly;
        b.plan.partitions = 8;
        b.map_tasks = vec![4, 4];
        let mut t = Stats::default();
        add_stats(&mut t, &a);
        add_stats(&mut t, &b);
        add_stats(&mut t, &a);
        assert_eq!(t.splits, 9);
        assert_eq!(t.plan.container, ContainerKind::Hash);
        assert!(!t.reduce_skipped());
        assert_eq!(t.plan.partitions, 8);
        assert_eq!(t.map_tasks, vec![6, 8]);
        assert_eq!(t.map_secs, 3.0);

        let busy = |map: f64, u: f64| {
            let mut s = Stats::default();
            s.threads = 2;
            s.map_secs = map;
            s.map_busy_secs = vec![map, map];
            s.utilization = u;
            s.plan.ingest = IngestKind::Mmap;
            s
        };
        let mut t = Stats::default();
        add_stats(&mut t, &busy(1.0, 0.5));
        add_stats(&mut t, &busy(3.0, 1.0));
        assert_eq!(t.map_busy_secs, vec![4.0, 4.0]);
        assert_eq!(t.utilization, 0.875);
        assert_eq!(t.plan.ingest, IngestKind::Mmap);
    }
}
