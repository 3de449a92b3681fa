//! The one way `ember-bench` times contenders and prints their table.
//!
//! A [`Contender`] is a name and a closure that runs it once and says what
//! the run [`Measured`]. [`measure`] runs all of a bench's contenders
//! interleaved round-robin (so noise on a shared machine hits all alike)
//! and keeps each one's runs as a [`Row`]; [`print_table`] prints the rows
//! with their medians, best runs and speedups over the first row.

use std::time::Instant;

use anyhow::Result;
use ember::Stats;

use crate::machine::cpu_secs;
use crate::rss::{self, Peak};

/// The median of some (at least one) timings: the middle one, or the mean
/// of the middle two.
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One contender's runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Timing {
    /// The median run's seconds.
    pub(crate) median: f64,
    /// The fastest run's seconds. Noise on a shared machine (another
    /// tenant on a vCPU's core, page reclaim) only ever adds time, so the
    /// fastest run is the closest to what the code does on a quiet machine;
    /// the median says what a user sees on this one.
    pub(crate) best: f64,
    /// How many runs.
    pub(crate) runs: usize,
}

impl Timing {
    /// The median and best of some (at least one) runs' seconds.
    pub(crate) fn of(v: Vec<f64>) -> Timing {
        Timing {
            best: v.iter().copied().fold(f64::INFINITY, f64::min),
            runs: v.len(),
            median: median(v),
        }
    }
}

/// What one run of a contender measured.
#[derive(Clone, Debug, Default)]
pub(crate) struct Measured {
    /// Wall seconds of the run: what the table reports.
    pub(crate) secs: f64,
    /// CPU seconds the process used meanwhile, user and system.
    pub(crate) cpu: f64,
    /// The stats of the run's ember job, if it ran one.
    pub(crate) stats: Option<Stats>,
    /// A line to print under the stats (a step after or before the job).
    pub(crate) note: Option<String>,
    /// The run's resident memory (see [`rss`]), if known.
    pub(crate) memory: Option<Peak>,
}

impl Measured {
    /// Runs `run` once, timing it on the wall clock and in CPU time and
    /// taking its peak RSS ([`rss`]); `run` returns the stats of its ember
    /// job, if it ran one.
    pub(crate) fn of(run: impl FnOnce() -> Result<Option<Stats>>) -> Result<Measured> {
        let base = rss::start();
        let cpu = cpu_secs();
        let t = Instant::now();
        let stats = run()?;
        let secs = t.elapsed().as_secs_f64();
        Ok(Measured {
            secs,
            cpu: cpu_secs() - cpu,
            stats,
            note: None,
            memory: rss::finish(base),
        })
    }
}

/// What a row of a bench's table is on the roofline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Role {
    /// The workload's work on this many threads, reported as a share of
    /// the limits on as many.
    Work(usize),
    /// A limit of the work on this many threads.
    Limit(usize),
    /// Neither (a bench that is not a workload's).
    #[default]
    Other,
}

/// The closure that runs a contender once.
type RunOnce<'a> = dyn FnMut() -> Result<Measured> + 'a;

/// One way of doing a bench's work: a row of its table.
pub(crate) struct Contender<'a> {
    /// The row's name.
    pub(crate) name: String,
    /// Runs the contender once (checking its result, if it is to be
    /// checked) and says what the run measured.
    run: Box<RunOnce<'a>>,
    /// What the row is on the roofline.
    role: Role,
}

impl<'a> Contender<'a> {
    /// A contender named `name` that `run` runs once.
    pub(crate) fn new(
        name: impl Into<String>,
        run: impl FnMut() -> Result<Measured> + 'a,
    ) -> Contender<'a> {
        Contender {
            name: name.into(),
            run: Box::new(run),
            role: Role::Other,
        }
    }

    /// The contender, with its `role` on the roofline.
    pub(crate) fn role(self, role: Role) -> Contender<'a> {
        Contender { role, ..self }
    }

    /// Its role on the roofline.
    pub(crate) fn role_of(&self) -> Role {
        self.role
    }
}

/// A contender's measured runs.
pub(crate) struct Row {
    /// The contender's name.
    pub(crate) name: String,
    /// The median and best of `runs`.
    pub(crate) timing: Timing,
    /// Every timed run, in order (not the warm-up).
    pub(crate) runs: Vec<Measured>,
    /// What the row is on the roofline.
    pub(crate) role: Role,
}

impl Row {
    /// The last run.
    pub(crate) fn last(&self) -> &Measured {
        self.runs.last().expect("at least one round")
    }

    /// The highest peak RSS of its runs, if known.
    pub(crate) fn peak(&self) -> Option<Peak> {
        self.runs
            .iter()
            .filter_map(|m| m.memory)
            .max_by_key(|p| p.peak)
    }

    /// The run whose time is closest to the median.
    pub(crate) fn median_run(&self) -> &Measured {
        let off = |m: &&Measured| (m.secs - self.timing.median).abs();
        self.runs
            .iter()
            .min_by(|a, b| off(a).total_cmp(&off(b)))
            .expect("at least one round")
    }

    /// Prints the stats of the last run (if it ran an ember job) and its
    /// note, under a line naming the contender and `about` (what the stats
    /// cover, e.g. ", summed over its 2 jobs").
    pub(crate) fn print_phases(&self, about: &str) {
        let last = self.last();
        if let Some(s) = &last.stats {
            println!("\n{}, phases of the last run{about}:\n{s}", self.name);
        }
        if let Some(note) = &last.note {
            println!("{note}");
        }
    }
}

/// Rounds [`measure`] runs when not told: at least `MIN_ROUNDS`, then
/// more until the runs add up to `AUTO_SECS`, at most `MAX_ROUNDS`. A short
/// bench (a run of a tenth of a second) thus gets enough runs that a
/// second or two of noise cannot move its median.
const MIN_ROUNDS: usize = 3;
const MAX_ROUNDS: usize = 20;
const AUTO_SECS: f64 = 5.0;

/// Runs every contender once untimed (the first run of a runtime or a
/// buffer pays for fresh memory and cold caches, which can make it half
/// again as slow as the later ones), then round-robin, `runs` rounds
/// (`None`: as many as [`AUTO_SECS`] asks, see there), and returns each
/// one's [`Row`], in the contenders' order.
pub(crate) fn measure(runs: Option<usize>, contenders: Vec<Contender<'_>>) -> Result<Vec<Row>> {
    let mut contenders = contenders;
    for c in &mut contenders {
        (c.run)()?;
    }
    let mut measured: Vec<Vec<Measured>> = contenders.iter().map(|_| Vec::new()).collect();
    let mut total = 0.0;
    for round in 1.. {
        for (c, m) in contenders.iter_mut().zip(&mut measured) {
            let run = (c.run)()?;
            total += run.secs;
            m.push(run);
        }
        let done = match runs {
            Some(n) => round >= n,
            None => round >= MAX_ROUNDS || (round >= MIN_ROUNDS && total >= AUTO_SECS),
        };
        if done {
            break;
        }
    }
    Ok(contenders
        .into_iter()
        .zip(measured)
        .map(|(c, runs)| Row {
            name: c.name,
            timing: Timing::of(runs.iter().map(|m| m.secs).collect()),
            runs,
            role: c.role,
        })
        .collect())
}

/// Prints a bench's table: `title` and the number of runs, then a line per
/// row with its median and best seconds, its rate (`amount` of work per
/// run in `unit`s, per median second), its speedups over the first row
/// (the baseline), of the medians and of the best runs, its share of the
/// binding limit on its thread count ([`binding_limit`]; 100% is at the
/// limit) and its peak RSS.
pub(crate) fn print_table(title: &str, amount: f64, unit: &str, rows: &[Row]) {
    let runs = rows.first().map_or(0, |r| r.timing.runs);
    println!("{title}, {runs} runs each");
    if let Some(base) = rows.iter().find_map(Row::peak) {
        println!(
            "(peak RSS: the highest of a row's runs, of this process, which holds {:.0} MiB \
             between runs; a child process's own)",
            mib(base.base)
        );
    }
    let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(0).max(30);
    let rate = format!("{unit}/s");
    println!(
        "{:<width$} {:>9} {:>9} {:>12} {:>9} {:>9} {:>7} {:>9}",
        "contender", "median s", "best s", rate, "speedup", "best", "limit", "peak MiB"
    );
    let Some(base) = rows.first().map(|r| r.timing) else {
        return;
    };
    for row in rows {
        let t = row.timing;
        let share = match binding_limit(rows, row.role) {
            Some(limit) => format!("{:.0}%", 100.0 * limit.timing.median / t.median),
            None => "-".into(),
        };
        let peak = row
            .peak()
            .map_or("-".into(), |p| format!("{:.0}", mib(p.peak)));
        println!(
            "{:<width$} {:>9.3} {:>9.3} {:>12.1} {:>8.2}x {:>8.2}x {share:>7} {peak:>9}",
            row.name,
            t.median,
            t.best,
            amount / t.median,
            base.median / t.median,
            base.best / t.best
        );
    }
}

/// Mebibytes of `bytes`.
pub(crate) fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

/// The limit a row of work is held to: of the limit rows on its thread
/// count, the slowest (the one that binds). None for a limit or another
/// row, or when no limit was measured on its thread count.
pub(crate) fn binding_limit(rows: &[Row], role: Role) -> Option<&Row> {
    let Role::Work(threads) = role else {
        return None;
    };
    rows.iter()
        .filter(|r| r.role == Role::Limit(threads))
        .max_by(|a, b| a.timing.median.total_cmp(&b.timing.median))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timing_is_the_median_and_the_fastest_run() {
        assert_eq!(median(vec![0.4, 0.1, 0.2, 0.3]), 0.25);
        let t = Timing::of(vec![0.3, 0.1, 0.5, 0.2, 0.9]);
        assert_eq!(
            t,
            Timing {
                median: 0.3,
                best: 0.1,
                runs: 5
            }
        );
    }

    /// Measures two contenders that say they took `secs` each, and returns
    /// how many rounds ran and the order they ran in.
    fn rounds(runs: Option<usize>, secs: f64) -> (usize, Vec<u8>) {
        let order = std::cell::RefCell::new(Vec::new());
        let contender = |name: u8| {
            let order = &order;
            Contender::new(char::from(name), move || {
                order.borrow_mut().push(name);
                Ok(Measured {
                    secs,
                    ..Measured::default()
                })
            })
        };
        let rows = measure(runs, vec![contender(b'a'), contender(b'b')]).unwrap();
        assert_eq!(rows[0].timing.runs, rows[1].timing.runs);
        assert_eq!(rows[0].runs.len(), rows[0].timing.runs);
        assert_eq!((rows[0].name.as_str(), rows[1].name.as_str()), ("a", "b"));
        (rows[0].timing.runs, order.into_inner())
    }

    #[test]
    fn contenders_run_round_robin_as_many_rounds_as_asked() {
        let (n, order) = rounds(Some(4), 10.0);
        assert_eq!(n, 4);
        // The untimed warm-up round, then the four.
        assert_eq!(order, b"ababababab");
    }

    #[test]
    fn unasked_rounds_fill_the_time_budget_within_bounds() {
        // Long runs: the minimum; short ones: the maximum; in between,
        // until the runs add up to the budget.
        assert_eq!(rounds(None, 10.0).0, MIN_ROUNDS);
        assert_eq!(rounds(None, 0.001).0, MAX_ROUNDS);
        let secs = AUTO_SECS / 2.0 / 8.0;
        assert_eq!(rounds(None, secs).0, 8);
    }

    #[test]
    fn the_median_run_is_the_one_closest_to_the_median_time() {
        let run = |secs| Measured {
            secs,
            ..Measured::default()
        };
        let runs = vec![run(0.5), run(0.1), run(0.31), run(0.2), run(0.9)];
        let row = Row {
            name: "x".into(),
            timing: Timing::of(runs.iter().map(|m| m.secs).collect()),
            runs,
            role: Role::Other,
        };
        assert_eq!(row.median_run().secs, 0.31);
        assert_eq!(row.last().secs, 0.9);
    }

    #[test]
    fn a_row_of_work_is_held_to_the_slowest_limit_on_its_thread_count() {
        let row = |name: &str, secs: f64, role| Row {
            name: name.into(),
            timing: Timing::of(vec![secs]),
            runs: Vec::new(),
            role,
        };
        let rows = vec![
            row("seq", 4.0, Role::Work(1)),
            row("ember 2", 2.0, Role::Work(2)),
            row("read 1", 1.0, Role::Limit(1)),
            row("count 1", 3.0, Role::Limit(1)),
            row("read 2", 0.5, Role::Limit(2)),
            row("other", 9.0, Role::Other),
        ];
        let limit = |i: usize| binding_limit(&rows, rows[i].role).map(|r| r.name.as_str());
        assert_eq!(limit(0), Some("count 1"));
        assert_eq!(limit(1), Some("read 2"));
        assert_eq!(limit(2), None);
        assert_eq!(limit(5), None);
        assert_eq!(binding_limit(&rows, Role::Work(8)).map(|r| &r.name), None);
    }
}
