//! The workloads give the same output in pipelined and barrier mode (the
//! helpers are the runtime's, shared with its own pipeline tests: add a
//! workload with one `assert_runs_agree` or `assert_modes_agree` call), and
//! the one that cannot be pipelined says so and runs with the barrier.

use ember::stats::{ModeReason, RunMode};
use ember::tune::Mode;
use ember::Input;
use ember_apps::histogram::{self, BmpSpec};
use ember_apps::inverted_index::{self, Docs};
use ember_apps::kmeans::{self, Params};
use ember_apps::linear_regression::{self, PointsSpec};
use ember_apps::matrix::{self, Matrix, MatrixSpec};
use ember_apps::sort;
use ember_apps::text::{text, TextSpec};
use ember_apps::wordcount::{sequential, WordCount};

use crate::modes;
use modes::{assert_falls_back, assert_modes_agree, assert_runs_agree, options, run_mode};

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
fn histogram_is_the_same_in_both_modes() {
    // 61 pixels a row: rows padded to a multiple of 4 bytes.
    for (width, height, seed) in [(61, 40, 1), (256, 300, 2)] {
        let file = histogram::bmp(&BmpSpec {
            width,
            height,
            seed,
        })
        .unwrap();
        let counts = assert_runs_agree(&[None, Some(1)], |rt, opts| {
            histogram::run(rt, &file, opts).unwrap()
        });
        assert_eq!(counts, histogram::sequential(&file).unwrap());
    }
}

#[test]
fn linear_regression_is_the_same_in_both_modes() {
    for (size, seed) in [(2, 1), (100_002, 2)] {
        let data = linear_regression::points(&PointsSpec { size, seed }).unwrap();
        let sums = assert_runs_agree(&[None, Some(2)], |rt, opts| {
            linear_regression::run(rt, &data, opts).unwrap()
        });
        assert_eq!(sums, linear_regression::sequential(&data).unwrap());
    }
}

#[test]
fn kmeans_is_the_same_in_both_modes() {
    let bytes = matrix::matrix(&MatrixSpec {
        rows: 2_000,
        cols: 3,
        lo: 0,
        hi: 1000,
        seed: 5,
    });
    let points = Matrix::parse(&bytes, "points").unwrap();
    let params = Params {
        clusters: 12,
        max_iterations: 50,
    };
    let clustering = assert_runs_agree(&[None, Some(12 * 40)], |rt, opts| {
        // The stats of the last iteration's job (the total carries no mode).
        let mut last = None;
        let (c, _) = kmeans::run(rt, &points, params, opts, |_, s| last = Some(s.clone())).unwrap();
        (c, last.expect("at least one iteration"))
    });
    assert_eq!(clustering, kmeans::sequential(&points, params).unwrap());
}

#[test]
fn inverted_index_is_the_same_in_both_modes() {
    // Files mode: the corpus cut into 7 documents (files).
    let dir = std::env::temp_dir().join(format!("ember-pipeline-docs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let data = corpus(20_000, 500, 8);
    let files: Vec<_> = data
        .chunks(data.len().div_ceil(7))
        .enumerate()
        .map(|(i, doc)| {
            let f = dir.join(format!("doc{i}"));
            std::fs::write(&f, doc).unwrap();
            f
        })
        .collect();
    let cases = [
        (Input::files(&files).unwrap(), Docs::Files),
        (Input::bytes(&data), Docs::Lines),
        (Input::bytes(b"one two\ntwo three three\n"), Docs::Lines),
    ];
    for (input, docs) in &cases {
        let index = assert_runs_agree(&[None, Some(700)], |rt, opts| {
            let built = inverted_index::build(rt, input, *docs, opts).unwrap();
            (built.index, built.stats)
        });
        let parts: Vec<&[u8]> = (0..input.parts()).map(|p| input.part_bytes(p)).collect();
        assert_eq!(index, inverted_index::sequential(&parts, *docs).unwrap());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sort_falls_back_to_the_barrier_when_pipelined_is_asked() {
    // Its reduce sorts a key range: not a combiner's state.
    let data = sort::records(&sort::SortSpec {
        records: 5_000,
        seed: 9,
    });
    assert_falls_back(|rt, opts| {
        let order = sort::sort_order(rt, &data, opts).unwrap();
        (order.keys().collect::<Vec<_>>(), order.stats)
    });
}

#[test]
fn word_count_is_pipelined_when_asked_and_auto_keeps_the_barrier() {
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
    assert_eq!(run(Mode::Pipelined).plan.mode, RunMode::Pipelined);
    let auto = run(Mode::Auto).plan;
    assert_eq!(
        (auto.mode, auto.mode_reason),
        (RunMode::Barrier, ModeReason::Auto)
    );
}
