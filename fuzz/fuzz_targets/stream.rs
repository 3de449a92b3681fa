//! Any bytes as streaming-contract lines: escaping reverses, and combine
//! and reduce either fold the lines or refuse them, never panic; reduce
//! over sorted lines equals combine.
#![no_main]

use ember::stream::{escape, unescape, StreamJob};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut text = Vec::new();
    escape(data, b",", &mut text);
    assert_eq!(unescape(&text).as_deref(), Some(data));

    let registry = ember_apps::stream::registry();
    for name in ["wordcount", "inverted-index"] {
        let job: Box<dyn StreamJob> = registry.job(name, &[]).expect("a built-in job");
        let mut combined = Vec::new();
        if job.combine("fuzz", &mut &data[..], &mut combined).is_ok() {
            let mut reduced = Vec::new();
            job.reduce("combined", &mut &combined[..], &mut reduced)
                .expect("combine's output reduces");
            assert_eq!(reduced, combined, "{name}");
        }
        let _ = job.reduce("fuzz", &mut &data[..], &mut Vec::new());
    }
});
