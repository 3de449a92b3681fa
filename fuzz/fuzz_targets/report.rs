//! The stats and trace files `ember report` reads: any bytes are added and
//! rendered or refused with an error that names the file, never a panic;
//! the stats a run writes (`--stats-json`) are read back as written.
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use ember::{Input, RunOptions};
use ember_apps::wordcount::WordCount;
use ember_cli::report::Run;
use libfuzzer_sys::fuzz_target;

/// The stats JSON of a small word count, made once per process.
fn real_stats() -> &'static [u8] {
    static STATS: OnceLock<Vec<u8>> = OnceLock::new();
    STATS.get_or_init(|| {
        let rt = ember::Runtime::builder()
            .threads(2)
            .build()
            .expect("a runtime");
        let opts = RunOptions::default().split_size(8);
        let out = rt
            .run_with(&WordCount::new(), &Input::bytes(b"a b a\nc b\n"), &opts)
            .expect("word count");
        serde_json::to_vec_pretty(&out.stats).expect("stats as JSON")
    })
}

fuzz_target!(|data: &[u8]| {
    let mut run = Run::default();
    match run.add(Path::new("fuzz.json"), data) {
        Ok(()) => {
            let _ = run.html();
        }
        Err(e) => assert!(format!("{e:#}").starts_with("'fuzz.json'"), "{e:#}"),
    }
    // The fuzzed bytes as a trace next to a real run's stats.
    let mut run = Run::default();
    run.add(Path::new("stats.json"), real_stats())
        .expect("real stats");
    let written: serde_json::Value = serde_json::from_slice(real_stats()).expect("JSON");
    assert_eq!(run.stats(), Some(&written));
    if run.add(Path::new("fuzz.json"), data).is_ok() {
        let _ = run.html();
    }
});
