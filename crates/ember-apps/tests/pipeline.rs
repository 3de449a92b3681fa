//! The workloads give the same output in pipelined and barrier mode (the
//! helpers are the runtime's, shared with its own pipeline tests: add a
//! workload with one `assert_modes_agree` call).

use ember::{Input, Mode};
use ember_apps::text::{text, TextSpec};
use ember_apps::wordcount::{sequential, WordCount};

#[path = "../../ember/tests/support/modes.rs"]
mod modes;
use modes::{assert_modes_agree, options, run_mode};

fn corpus(size: u64, vocab: usize, seed: u64) -> Vec<u8> {
    text(&TextSpec {
        size,
        vocab,
        zipf: 1.0,
        seed,
    })
}

#[test]
fn word_count_is_the_same_in_both_modes() {
    for (size, vocab, seed) in [(0, 10, 1), (1_000, 50, 2), (300_000, 20_000, 3)] {
        let data = corpus(size, vocab, seed);
        let out = assert_modes_agree(
            &WordCount::by_count(),
            &Input::bytes(&data),
            &[None, Some(512)],
        );
        let mut got: Vec<(Vec<u8>, u64)> = out
            .into_iter()
            .map(|(k, n)| (k.as_bytes().to_vec(), n))
            .collect();
        got.sort();
        assert_eq!(got, sequential(&[&data]), "{size} bytes");
    }
}

#[test]
fn word_count_is_pipelined_when_asked_and_auto_keeps_small_inputs_barrier() {
    let data = corpus(100_000, 5_000, 4);
    let rt = ember::Runtime::builder().threads(2).build().unwrap();
    let run = |mode| {
        run_mode(
            &rt,
            &WordCount::new(),
            &Input::bytes(&data),
            &options(mode, Default::default(), None),
        )
        .stats
    };
    assert_eq!(run(Mode::Pipelined).mode, "pipelined");
    // A few thousand keys: the barrier's tables stay in cache.
    let auto = run(Mode::Auto);
    assert_eq!(auto.mode, "barrier", "{}", auto.mode_reason);
    assert!(
        auto.mode_reason.starts_with("auto:"),
        "{}",
        auto.mode_reason
    );
}
