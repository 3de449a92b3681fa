//! Any bytes as text: word count and the inverted index (files cut at a
//! fuzzed place, and lines) equal their sequential oracles.
#![no_main]

use ember::Input;
use ember_apps::inverted_index::{self, Docs};
use ember_apps::wordcount::{self, WordCount};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((rt, opts, text)) = ember_fuzz::setup(data) else {
        return;
    };
    let cut = text
        .first()
        .map_or(0, |&b| usize::from(b) % (text.len() + 1));
    let parts = [&text[..cut], &text[cut..]];

    let out = rt
        .run_with(&WordCount::new(), &Input::bytes(text), &opts)
        .expect("word count");
    let counts: Vec<(Vec<u8>, u64)> = out
        .pairs
        .into_iter()
        .map(|(w, n)| (w.as_bytes().to_vec(), n))
        .collect();
    assert_eq!(counts, wordcount::sequential(&[text]));

    let dir = tempfile::tempdir().expect("a temporary directory");
    let paths = parts.iter().enumerate().map(|(i, part)| {
        let path = dir.path().join(format!("{i}"));
        std::fs::write(&path, part).expect("a temporary file");
        path
    });
    let input = Input::files(paths.collect::<Vec<_>>()).expect("the parts");
    for docs in [Docs::Files, Docs::Lines] {
        let built = inverted_index::build(rt, &input, docs, &opts).expect("inverted index");
        assert_eq!(
            built.index,
            inverted_index::sequential(&parts, docs).expect("oracle")
        );
    }
});
