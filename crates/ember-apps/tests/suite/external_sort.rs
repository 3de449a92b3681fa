//! The external sort (records larger than the memory budget, sorted
//! through runs on disk and merged straight into the output) writes the
//! bytes of the sequential sort and of the in-memory sort, for any thread
//! count, split size and budget, for mapped and streamed inputs; its spill
//! files are gone after a success and after a failed write.

use std::io::Write;
use std::path::Path;

use ember::{Error, Input, RunOptions, Runtime};
use ember_apps::sort::{
    external_sort, records, sequential, sort_order, SortPlan, SortSpec, KEY_LEN, RECORD_LEN,
};
use proptest::prelude::*;

const THREADS: [usize; 3] = [1, 2, 7];
/// A size that is not a multiple of the record, a few records, the
/// default (fitted to the budget).
const SPLITS: [Option<usize>; 3] = [Some(250), Some(64 << 10), None];
const MIB: u64 = 1 << 20;

fn left_in(dir: &Path) -> Vec<String> {
    let entries = std::fs::read_dir(dir).unwrap();
    entries
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Sorts `input` externally, into memory.
fn sort_to_vec(rt: &Runtime, input: &Input<'_>, opts: &RunOptions) -> (Vec<u8>, ember::Stats) {
    let mut out = Vec::new();
    let stats = external_sort(rt, input, opts, &mut out).unwrap();
    (out, stats)
}

#[test]
fn a_tiny_budget_gives_the_bytes_of_the_plain_sorts() {
    let data = records(&SortSpec {
        records: 40_000,
        seed: 21,
    });
    let want = sequential(&data).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for threads in THREADS {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        // The in-memory plan on the same runtime: the same bytes.
        let order = sort_order(&rt, &data, &RunOptions::default()).unwrap();
        let mut in_memory = Vec::new();
        order.write(&rt, &data, &mut in_memory).unwrap();
        assert!(in_memory == want, "{threads} threads: in memory differs");
        for split in SPLITS {
            let opts = RunOptions::default()
                .memory_limit(MIB)
                .split_size(split)
                .spill_dir(dir.path().to_path_buf());
            let (got, stats) = sort_to_vec(&rt, &Input::bytes(&data), &opts);
            let what = format!("{threads} threads, split {split:?}");
            assert!(stats.memory.spills > 0, "{what}: no spill");
            assert_eq!(stats.output_pairs, 40_000, "{what}");
            assert!(got == want, "{what}: output differs");
            assert!(left_in(dir.path()).is_empty(), "{what}: spill files left");
        }
    }
}

#[test]
fn equal_keys_keep_input_order_across_runs() {
    let mut data = records(&SortSpec {
        records: 20_000,
        seed: 22,
    });
    for (i, rec) in data.chunks_mut(RECORD_LEN).enumerate() {
        rec[..KEY_LEN].fill(0x41);
        rec[KEY_LEN - 1] = (i * 7 % 3) as u8;
    }
    let want = sequential(&data).unwrap();
    let rt = Runtime::builder().threads(2).build().unwrap();
    let opts = RunOptions::default().memory_limit(256 << 10);
    let (got, stats) = sort_to_vec(&rt, &Input::bytes(&data), &opts);
    assert!(stats.memory.spills > 0);
    assert!(got == want);
}

/// A runtime on the calling thread merges the key ranges there, one after
/// another: the same bytes.
#[test]
fn a_runtime_on_the_calling_thread_sorts_externally_too() {
    let data = records(&SortSpec {
        records: 20_000,
        seed: 25,
    });
    let rt = Runtime::builder().on_caller().build().unwrap();
    let opts = RunOptions::default().memory_limit(256 << 10);
    let (got, stats) = sort_to_vec(&rt, &Input::bytes(&data), &opts);
    assert!(stats.memory.spills > 0);
    assert!(got == sequential(&data).unwrap());
}

#[test]
fn a_streamed_input_and_a_budget_that_fits_give_the_same_bytes() {
    let data = records(&SortSpec {
        records: 30_000,
        seed: 23,
    });
    let want = sequential(&data).unwrap();
    let rt = Runtime::builder().threads(2).build().unwrap();
    let streamed = Input::reader("records", std::io::Cursor::new(data.clone()));
    let opts = RunOptions::default()
        .memory_limit(MIB)
        .chunk_size(256 << 10);
    let (got, stats) = sort_to_vec(&rt, &streamed, &opts);
    assert!(stats.memory.spills > 0, "streamed: no spill");
    assert!(got == want, "streamed: output differs");
    // A budget the records fit in: nothing spilled, the same bytes.
    let opts = RunOptions::default().memory_limit(1 << 30);
    let (got, stats) = sort_to_vec(&rt, &Input::bytes(&data), &opts);
    assert_eq!(stats.memory.spills, 0);
    assert!(got == want, "unspilled: output differs");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10))]
    #[test]
    fn any_budget_and_split_size_gives_the_sequential_bytes(
        n in 0u64..12_000,
        limit in 0u64..(2 << 20),
        split in prop_oneof![Just(None), (1usize..100_000).prop_map(Some)],
        threads in 1usize..5,
        seed in 0u64..1000,
    ) {
        let data = records(&SortSpec { records: n, seed });
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let opts = RunOptions::default().memory_limit(limit).split_size(split);
        let (got, _) = sort_to_vec(&rt, &Input::bytes(&data), &opts);
        prop_assert!(got == sequential(&data).unwrap());
    }
}

/// A writer that fails once it has taken `room` bytes (a full disk).
struct Full {
    room: usize,
}

impl Write for Full {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.len() > self.room {
            // ENOSPC on Linux.
            return Err(std::io::Error::from_raw_os_error(28));
        }
        self.room -= buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failed_write_is_an_output_error_and_removes_the_spill_files() {
    let data = records(&SortSpec {
        records: 20_000,
        seed: 24,
    });
    let dir = tempfile::tempdir().unwrap();
    let rt = Runtime::builder().threads(2).build().unwrap();
    let opts = RunOptions::default()
        .memory_limit(256 << 10)
        .spill_dir(dir.path().to_path_buf());
    let mut full = Full { room: 50_000 };
    let err = external_sort(&rt, &Input::bytes(&data), &opts, &mut full).unwrap_err();
    assert!(matches!(err, Error::Output(_)), "{err}");
    assert!(err.to_string().contains("No space left"), "{err}");
    assert!(left_in(dir.path()).is_empty(), "spill files left");
    // A partial record is refused before anything is written.
    let mut out = Vec::new();
    let cut = Input::bytes(&data[..data.len() - 1]);
    let err = external_sort(&rt, &cut, &opts, &mut out).unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    assert!(out.is_empty());
}

#[test]
fn the_plan_is_external_past_the_budget() {
    assert_eq!(SortPlan::for_input(2 * MIB, Some(MIB)), SortPlan::External);
    assert_eq!(SortPlan::for_input(MIB, Some(MIB)), SortPlan::InMemory);
    assert_eq!(SortPlan::for_input(0, None), SortPlan::InMemory);
    assert_eq!(SortPlan::for_input(u64::MAX, None), SortPlan::External);
}
