//! Word count on ember equals the plain sequential count, for any thread
//! count, split size and input shape.

use ember::stats::ContainerReason;
use ember::{ContainerKind, Input, RunOptions, Runtime};
use ember_apps::text::{text, TextSpec};
use ember_apps::wordcount::{sequential, WordCount};
use proptest::prelude::*;

const THREADS: [usize; 5] = [1, 2, 3, 8, 32];

fn runtimes() -> Vec<Runtime> {
    THREADS
        .iter()
        .map(|&t| Runtime::builder().threads(t).build().unwrap())
        .collect()
}

/// Containers that can hold word count's keys.
const CONTAINERS: [ContainerKind; 5] = [
    ContainerKind::Auto,
    ContainerKind::Hash,
    ContainerKind::HashTree,
    ContainerKind::Append,
    ContainerKind::Intern,
];

fn count(rt: &Runtime, input: &Input<'_>, split: Option<usize>) -> Vec<(Vec<u8>, u64)> {
    count_in(rt, input, split, ContainerKind::Auto)
}

fn count_in(
    rt: &Runtime,
    input: &Input<'_>,
    split: Option<usize>,
    container: ContainerKind,
) -> Vec<(Vec<u8>, u64)> {
    let opts = RunOptions::default().split_size(split).container(container);
    rt.run_with(&WordCount::new(), input, &opts)
        .unwrap()
        .pairs
        .into_iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v))
        .collect()
}

fn check_all(rts: &[Runtime], parts: &[&[u8]], splits: &[Option<usize>]) {
    let want = sequential(parts);
    let tmp = tempfile::tempdir().unwrap();
    let owned: Vec<Input<'_>> = if parts.len() == 1 {
        vec![Input::bytes(parts[0])]
    } else {
        // Several parts: write them to files so the many-files path is used.
        let dir = tmp.path();
        let paths: Vec<_> = parts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let path = dir.join(format!("part{i}.txt"));
                std::fs::write(&path, p).unwrap();
                path
            })
            .collect();
        vec![Input::files(&paths).unwrap()]
    };
    for input in &owned {
        for rt in rts {
            for &s in splits {
                assert_eq!(
                    count(rt, input, s),
                    want,
                    "threads {} split {s:?}",
                    rt.threads()
                );
            }
        }
    }
}

/// Bytes of every kind: letters of both cases, separators, UTF-8, binary.
fn messy_text() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        prop_oneof![
            4 => proptest::sample::select(b"abcAB".to_vec()),
            2 => Just(b' '),
            1 => Just(b'\n'),
            1 => any::<u8>(),
        ],
        0..400,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn equals_sequential_on_random_inputs(data in messy_text(), split in 1usize..64) {
        let rts = runtimes();
        check_all(&rts, &[&data], &[Some(split), None]);
    }

    #[test]
    fn every_container_gives_the_same_counts(data in messy_text(), split in 1usize..64) {
        let want = sequential(&[&data]);
        let input = Input::bytes(&data);
        for rt in &runtimes()[..3] {
            for c in CONTAINERS {
                prop_assert_eq!(&count_in(rt, &input, Some(split), c), &want, "{} {}", rt.threads(), c);
            }
        }
    }

    #[test]
    fn equals_sequential_on_many_files(parts in proptest::collection::vec(messy_text(), 1..5)) {
        let rts = runtimes();
        let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        check_all(&rts[..2], &refs, &[Some(3), None]);
    }
}

#[test]
fn tiny_and_degenerate_inputs() {
    let rts = runtimes();
    let huge_word = vec![b'q'; 10 << 20];
    let cases: Vec<Vec<u8>> = vec![
        vec![],
        b"a".to_vec(),
        b"1234 !! \n\t\xff\xfe".to_vec(),
        huge_word.clone(),
        [b"x ".as_slice(), &huge_word, b" x Q".as_slice()].concat(),
    ];
    for data in &cases {
        check_all(&rts, &[data], &[Some(1), Some(4), None]);
    }
}

#[test]
fn generated_corpus_is_thread_count_independent() {
    let data = text(&TextSpec {
        size: 2 << 20,
        vocab: 50_000,
        zipf: 1.0,
        seed: 3,
    });
    check_all(&runtimes(), &[&data], &[Some(4096), None]);
}

#[test]
fn top_k_is_the_head_of_the_full_order() {
    let data = text(&TextSpec {
        size: 1 << 20,
        vocab: 5_000,
        zipf: 1.0,
        seed: 9,
    });
    let rt = Runtime::builder().threads(3).build().unwrap();
    let input = Input::bytes(&data);
    let full = rt.run(&WordCount::by_count(), &input).unwrap().pairs;
    for k in [1, 10, 100] {
        let top = rt
            .run_with(
                &WordCount::by_count(),
                &input,
                &RunOptions::default().top(k),
            )
            .unwrap();
        assert_eq!(top.pairs[..], full[..k]);
        assert_eq!(top.stats.output_pairs, k as u64);
        assert_eq!(top.stats.distinct_keys, full.len() as u64);
    }
    // Most frequent first, ties by word.
    assert!(full
        .windows(2)
        .all(|w| w[0].1 > w[1].1 || (w[0].1 == w[1].1 && w[0].0 < w[1].0)));
}

#[test]
fn generated_corpus_in_every_container() {
    let data = text(&TextSpec {
        size: 1 << 20,
        vocab: 20_000,
        zipf: 1.0,
        seed: 4,
    });
    let want = sequential(&[&data]);
    let input = Input::bytes(&data);
    for rt in &runtimes()[..3] {
        for c in CONTAINERS {
            for split in [Some(1000), None] {
                assert_eq!(count_in(rt, &input, split, c), want, "{} {c}", rt.threads());
            }
        }
    }
}

#[test]
fn a_forced_container_gets_the_samples_opinion_in_the_stats() {
    // Every word unique: the sample says append; forcing hash says so.
    let data: Vec<u8> = (0..60_000u32)
        .flat_map(|i| {
            let w: Vec<u8> = format!("{i:x}")
                .chars()
                .map(|c| b'a' + c.to_digit(16).unwrap() as u8)
                .collect();
            [w, vec![b' ']].concat()
        })
        .collect();
    let rt = Runtime::builder().threads(2).build().unwrap();
    let opts = RunOptions::default()
        .split_size(4096)
        .container(ContainerKind::Hash);
    let s = rt
        .run_with(&WordCount::new(), &Input::bytes(&data), &opts)
        .unwrap()
        .stats;
    assert!(
        matches!(
            &s.plan.container_reason,
            ContainerReason::Chosen {
                auto: Some((ContainerKind::Append, _))
            }
        ),
        "{}",
        s.plan.container_reason
    );
    assert!(s.to_string().contains("Auto would pick append"), "{s}");
}

#[test]
fn containers_that_cannot_hold_words_are_refused() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    for (c, msg) in [
        (
            ContainerKind::Array,
            "the array container needs a job with dense integer keys",
        ),
        (
            ContainerKind::Unique,
            "the unique container needs a job that declares unique keys",
        ),
    ] {
        let opts = RunOptions::default().container(c);
        let e = rt
            .run_with(&WordCount::new(), &Input::bytes(b"a b"), &opts)
            .err()
            .unwrap();
        assert!(e.to_string().contains(msg), "{e}");
    }
}

/// All the repetition in the first 10% of the input, unique words after:
/// sampling from several places must not be fooled into a container that
/// blows up, and must lose or double no pair.
#[test]
fn skewed_input_is_predicted_sanely_and_counted_once() {
    let mut data = b"the same words again and again ".repeat(3000);
    for i in 0..90_000u32 {
        let w: String = format!("{i:x}")
            .chars()
            .map(|c| (b'a' + c.to_digit(16).unwrap() as u8) as char)
            .collect();
        data.extend_from_slice(w.as_bytes());
        data.push(b' ');
    }
    let want = sequential(&[&data]);
    let rt = Runtime::builder().threads(2).build().unwrap();
    let opts = RunOptions::default().split_size(4096);
    let out = rt
        .run_with(&WordCount::new(), &Input::bytes(&data), &opts)
        .unwrap();
    let got: Vec<(Vec<u8>, u64)> = out
        .pairs
        .into_iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v))
        .collect();
    assert_eq!(got, want);
    let s = &out.stats;
    let predicted = s.predicted_keys_per_worker.expect("large enough to sample");
    // Within 4x of what each worker really held, either way.
    let actual = s.actual_keys_per_worker.max(1);
    assert!(
        predicted <= actual * 4 && actual <= predicted * 4,
        "predicted {predicted}, actual {actual}"
    );
}
