//! `ember-bench containers`: Metis' data-structure study (its section 5.4)
//! with inverted index: every container (the hash container both per
//! worker and partitioned) and `Auto` on four inputs of the shapes Metis
//! used, all in one run.

use anyhow::Result;
use clap::Args as ClapArgs;
use ember::tune::{parse_size, Aggregation};
use ember::{ContainerKind, Input, RunOptions, Runtime};
use ember_apps::inverted_index::{build, Docs};
use ember_apps::text::{text, TextSpec};

use crate::harness::{measure, Contender, Measured};
use crate::machine::all_threads;
use crate::BenchArgs;

/// `ember-bench containers`.
#[derive(ClapArgs)]
#[command(mut_arg("threads", |a| a.help("Worker threads (default: all CPUs)")))]
pub(crate) struct Args {
    /// Size of each generated input.
    #[arg(long, value_parser = parse_size, default_value = "32MiB")]
    size: u64,
    #[command(flatten)]
    bench: BenchArgs,
}

/// The containers that can hold inverted index's keys, with the hash
/// container's two aggregations, then `Auto`: (column, container,
/// aggregation).
const KINDS: [(&str, ContainerKind, Aggregation); 6] = [
    ("hash", ContainerKind::Hash, Aggregation::PerWorker),
    ("partitioned", ContainerKind::Hash, Aggregation::Partitioned),
    ("hash_tree", ContainerKind::HashTree, Aggregation::Auto),
    ("append", ContainerKind::Append, Aggregation::Auto),
    ("intern", ContainerKind::Intern, Aggregation::Auto),
    ("auto", ContainerKind::Auto, Aggregation::Auto),
];

fn corpus(size: u64, vocab: usize, zipf: f64, seed: u64) -> Vec<u8> {
    text(&TextSpec {
        size,
        vocab,
        zipf,
        seed,
    })
}

/// The four inputs: (name, bytes). Words average ~8 bytes, so `size / 8`
/// words; "few dups" draws uniformly from a vocabulary that large.
fn inputs(size: u64) -> Vec<(&'static str, Vec<u8>)> {
    let words = (size / 8) as usize;
    let half = size / 2;
    vec![
        ("few keys, many dups", corpus(size, 1_000, 1.0, 1)),
        ("many keys, few dups", corpus(size, words, 0.0, 2)),
        ("many keys, many dups", corpus(size, 1_000_000, 1.0, 3)),
        (
            "unpredictable (few keys, then many)",
            [
                corpus(half, 1_000, 1.0, 4),
                corpus(size - half, words, 0.0, 5),
            ]
            .concat(),
        ),
    ]
}

/// Runs `ember-bench containers`.
pub(crate) fn run(a: Args) -> Result<()> {
    let rt = Runtime::builder()
        .threads(all_threads(a.bench.threads))
        .build()?;
    println!(
        "containers: inverted index (documents = lines), {:.1} MB inputs, {} threads, medians",
        a.size as f64 / 1e6,
        rt.threads(),
    );
    print!("{:<38}", "input");
    for (name, ..) in KINDS {
        print!(" {name:>11}");
    }
    println!("  auto chose, predicted/actual keys per worker, auto vs best");
    for (name, data) in inputs(a.size) {
        let input = Input::bytes(&data);
        let contenders = KINDS
            .iter()
            .map(|&(column, kind, aggregation)| {
                let (rt, input) = (&rt, &input);
                let opts = RunOptions::default()
                    .container(kind)
                    .aggregation(aggregation);
                Contender::new(column, move || {
                    Measured::of(|| Ok(Some(build(rt, input, Docs::Lines, &opts)?.stats)))
                })
            })
            .collect();
        let rows = measure(a.bench.runs, contenders)?;
        let (forced, auto) = rows.split_at(KINDS.len() - 1);
        let auto = &auto[0];
        let best = forced
            .iter()
            .map(|r| r.timing.median)
            .fold(f64::INFINITY, f64::min);
        print!("{name:<38}");
        for r in &rows {
            print!(" {:>10.3}s", r.timing.median);
        }
        let s = auto.last().stats.as_ref().expect("an ember run");
        println!(
            "  {} {} ({}/{}), {:.2}x",
            s.plan.container,
            s.plan.aggregation,
            s.predicted_keys_per_worker
                .map_or("-".into(), |p| p.to_string()),
            s.actual_keys_per_worker,
            auto.timing.median / best
        );
    }
    Ok(())
}
