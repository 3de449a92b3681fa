//! Sort on ember equals the sequential sort and rayon's parallel sort, is
//! stable, gathers on the runtime's workers, and rejects inputs that are
//! not whole records.

use ember::{Error, Input, RunOptions, Runtime};
use ember_apps::sort::{
    check_records, parallel_sort_into, records, sequential, sort_order, sort_order_input, SortSpec,
    KEY_LEN, RECORD_LEN,
};

const THREADS: [usize; 3] = [1, 2, 7];
/// One record per split, a size that is not a multiple of the record,
/// the default.
const SPLITS: [Option<usize>; 3] = [Some(1), Some(250), None];

/// The row number a record carries (bytes 12..44, hex).
fn row(rec: &[u8]) -> u64 {
    u64::from_str_radix(std::str::from_utf8(&rec[12..44]).unwrap(), 16).unwrap()
}

/// Independent check: keys ascending, equal keys in input (row) order, and
/// every input record present once.
fn assert_sorted_stably(input: &[u8], out: &[u8]) {
    assert_eq!(input.len(), out.len());
    let recs: Vec<&[u8]> = out.chunks(RECORD_LEN).collect();
    for w in recs.windows(2) {
        let (a, b) = (&w[0][..KEY_LEN], &w[1][..KEY_LEN]);
        assert!(a < b || (a == b && row(w[0]) < row(w[1])));
    }
    let mut rows: Vec<u64> = recs.iter().map(|r| row(r)).collect();
    rows.sort_unstable();
    assert!(rows.iter().enumerate().all(|(i, &r)| r == i as u64));
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

fn check_all(data: &[u8]) {
    let want = sequential(data).unwrap();
    assert_sorted_stably(data, &want);
    let mut recs = Vec::new();
    for threads in THREADS {
        parallel_sort_into(data, &pool(threads), &mut recs).unwrap();
        assert!(recs.as_flattened() == want);
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for split_size in SPLITS {
            let opts = RunOptions::default().split_size(split_size);
            // Both plans: key ranges (in memory) and the p-way merge of
            // sorted runs (any input).
            let orders = [
                sort_order(&rt, data, &opts).unwrap(),
                sort_order_input(&rt, &Input::bytes(data), &opts).unwrap(),
            ];
            for (plan, order) in ["ranges", "merge"].into_iter().zip(orders) {
                assert_eq!(order.len(), data.len() / RECORD_LEN);
                let mut got = vec![0; data.len()];
                order.gather_into(&rt, data, &mut got);
                assert!(
                    got == want,
                    "{plan}, {threads} threads, split {split_size:?}: ember differs"
                );
                // Written in pieces: the same bytes.
                let mut written = Vec::new();
                order.write(&rt, data, &mut written).unwrap();
                assert!(written == want, "{plan}: written differs");
            }
        }
    }
}

#[test]
fn random_keys() {
    for (n, seed) in [(0, 1), (1, 2), (2_000, 3), (7_001, 4)] {
        check_all(&records(&SortSpec { records: n, seed }));
    }
}

#[test]
fn equal_keys_keep_input_order() {
    let mut data = records(&SortSpec {
        records: 3_000,
        seed: 5,
    });
    // Keys from a set of four, two differing only in the last key byte.
    for (i, rec) in data.chunks_mut(RECORD_LEN).enumerate() {
        let k = (i * 7 % 4) as u8;
        rec[..KEY_LEN].fill(0x41);
        rec[KEY_LEN - 1] = k;
        if k == 3 {
            rec[0] = 0;
        }
    }
    check_all(&data);
}

#[test]
fn partial_records_are_rejected() {
    let mut data = records(&SortSpec {
        records: 10,
        seed: 6,
    });
    data.extend_from_slice(&[1; 50]);
    let rt = Runtime::builder().threads(2).build().unwrap();
    let errors = [
        check_records(&data).unwrap_err(),
        sequential(&data).unwrap_err(),
        parallel_sort_into(&data, &pool(2), &mut Vec::new()).unwrap_err(),
        sort_order(&rt, &data, &RunOptions::default())
            .err()
            .unwrap(),
    ];
    for e in errors {
        assert!(matches!(e, Error::InvalidInput(_)));
        assert_eq!(
            e.to_string(),
            "invalid input: 1050 bytes is not a whole number of 100-byte records: \
             50 bytes left over after record 10"
        );
    }
    let short = sequential(&[0; 99]).unwrap_err().to_string();
    assert!(
        short.contains("99 bytes left over after record 0"),
        "{short}"
    );
}

/// Nanoseconds the calling thread has run on a CPU (Linux's schedstat; up
/// to a scheduler tick stale for a running thread).
fn thread_cpu_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
    stat.split_whitespace().next().unwrap().parse().unwrap()
}

/// Each worker of `rt`, in order: its name and its CPU time so far.
fn workers(rt: &Runtime) -> Vec<(String, u64)> {
    rt.install(|| {
        rayon::broadcast(|_| {
            let name = std::thread::current().name().map(str::to_owned);
            (name.unwrap_or_default(), thread_cpu_ns())
        })
    })
}

/// The gather's copying is done by the runtime's workers: their CPU time
/// grows by the whole gather while the calling thread's hardly moves
/// (copying itself, or on threads of its own, the workers' would not grow).
#[test]
#[cfg(target_os = "linux")]
fn the_gather_runs_on_the_runtimes_workers() {
    const GATHERS: u64 = 5;
    let data = records(&SortSpec {
        records: 200_000,
        seed: 8,
    });
    let want = sequential(&data).unwrap();
    for threads in [1, 2, 3] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let order = sort_order(&rt, &data, &RunOptions::default()).unwrap();
        let mut got = vec![0; data.len()];
        let before = workers(&rt);
        let names: Vec<String> = (0..threads).map(|i| format!("ember-worker-{i}")).collect();
        assert_eq!(
            before.iter().map(|w| w.0.clone()).collect::<Vec<_>>(),
            names
        );
        let mine = thread_cpu_ns();
        for _ in 0..GATHERS {
            order.gather_into(&rt, &data, &mut got);
        }
        let mine = thread_cpu_ns() - mine;
        let theirs: u64 = workers(&rt)
            .iter()
            .zip(&before)
            .map(|(after, before)| after.1 - before.1)
            .sum();
        assert!(got == want, "{threads} threads: the gather differs");
        // At least 2 ns per record copied: a tenth of any real gather's
        // cost, ten times what waking idle workers costs.
        let copied = GATHERS * (data.len() / RECORD_LEN) as u64;
        assert!(
            theirs >= 2 * copied && theirs >= 20 * mine,
            "{threads} threads: workers ran {theirs} ns, the caller {mine} ns"
        );
    }
}
