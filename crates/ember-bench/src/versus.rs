//! The shape of a workload bench: its baseline (the first row, which the
//! speedups are against), ember on one thread and on all threads, then any
//! other rows (another implementation, or the workload's limits, from
//! [`roofline`]); after the table, the bar line
//! ([`Versus::print_speedup`]), the roofline and scaling lines
//! ([`Versus::print_roofline`]) and the phases of ember's last run.

use std::ffi::OsStr;
use std::path::Path;
use std::rc::Rc;

use anyhow::{ensure, Result};
use ember::{Runtime, Stats};

use crate::harness::{binding_limit, measure, mib, print_table, Contender, Measured, Role, Row};
use crate::machine::all_threads;
use crate::roofline;
use crate::rss;
use crate::BenchArgs;

/// The rows of a workload bench, as [`versus`] measured them.
pub(crate) struct Versus {
    /// Threads of the "all threads" row.
    pub(crate) threads: usize,
    /// The baseline, ember on one thread, ember on all threads, then the
    /// other rows.
    pub(crate) rows: Vec<Row>,
    /// Ember's peak RSS on all threads as its own process, if measured
    /// ([`Versus::measure_command`]): then the peak the summary reports.
    pub(crate) command: Option<CommandPeak>,
}

/// One run of the workload's `ember` command as a child process.
pub(crate) struct CommandPeak {
    /// The command line, `ember` and its arguments.
    pub(crate) line: String,
    /// Its peak RSS, bytes.
    pub(crate) peak: u64,
}

/// The name of ember's row on `threads` threads.
pub(crate) fn ember_name(threads: usize) -> String {
    match threads {
        1 => "ember, 1 thread".into(),
        n => format!("ember, {n} threads"),
    }
}

/// Measures `baseline`, ember on one thread and on all threads (`run`
/// given a runtime of that many workers), then `more`, as
/// [`measure`] does.
pub(crate) fn versus<'a>(
    bench: BenchArgs,
    baseline: Contender<'a>,
    run: impl Fn(&Runtime) -> Result<Measured> + 'a,
    more: Vec<Contender<'a>>,
) -> Result<Versus> {
    let threads = all_threads(bench.threads);
    let run = Rc::new(run);
    // A baseline is sequential unless it says otherwise.
    let baseline = match baseline.role_of() {
        Role::Other => baseline.role(Role::Work(1)),
        _ => baseline,
    };
    let mut contenders = vec![baseline];
    for n in [1, threads] {
        let rt = Runtime::builder().threads(n).build()?;
        let run = Rc::clone(&run);
        contenders.push(Contender::new(ember_name(n), move || run(&rt)).role(Role::Work(n)));
    }
    contenders.extend(more);
    Ok(Versus {
        threads,
        rows: measure(bench.runs, contenders)?,
        command: None,
    })
}

/// Runs `run` once, timed (see [`Measured::of`]), then checks its result
/// against `want`, the sequential program's; `who` names the contender in
/// the error.
pub(crate) fn checked<T: PartialEq>(
    want: &T,
    who: &str,
    run: impl FnOnce() -> Result<(T, Option<Stats>)>,
) -> Result<Measured> {
    let mut got = None;
    let measured = Measured::of(|| {
        let (result, stats) = run()?;
        got = Some(result);
        Ok(stats)
    })?;
    ensure!(
        got.as_ref() == Some(want),
        "{who}: the result differs from the sequential program's"
    );
    Ok(measured)
}

/// [`versus`] with the sequential program as the baseline: `want` is its
/// first (untimed) result, which every run of `sequential` and of `ember`
/// must give again.
pub(crate) fn against_sequential<'a, T: PartialEq>(
    bench: BenchArgs,
    want: &'a T,
    sequential: impl Fn() -> Result<T> + 'a,
    ember: impl Fn(&Runtime) -> Result<(T, Stats)> + 'a,
    more: Vec<Contender<'a>>,
) -> Result<Versus> {
    let baseline = Contender::new("sequential", move || {
        checked(want, "sequential", || Ok((sequential()?, None)))
    });
    let ember = move |rt: &Runtime| {
        checked(want, &ember_name(rt.threads()), || {
            let (result, stats) = ember(rt)?;
            Ok((result, Some(stats)))
        })
    };
    versus(bench, baseline, ember, more)
}

impl Versus {
    /// Ember's row on one thread.
    pub(crate) fn ember_one(&self) -> &Row {
        &self.rows[1]
    }

    /// Ember's row on all threads.
    pub(crate) fn ember_all(&self) -> &Row {
        &self.rows[2]
    }

    /// Runs the workload's own command, `ember` with `args` (which write
    /// its output to standard output, dropped) and `--threads` of the
    /// all-threads row, once as a child process, and keeps its peak RSS as
    /// ember's. For a bench whose process holds what a user's run does
    /// not (the sequential oracle, a reused output buffer, the other
    /// contenders' memory), the in-process row's peak counts all of it.
    pub(crate) fn measure_command(&mut self, args: &[&OsStr]) -> Result<()> {
        let threads = self.threads.to_string();
        let mut all = args.to_vec();
        all.extend([OsStr::new("--threads"), OsStr::new(&threads)]);
        let run = rss::run_ember(&all)?;
        let words: Vec<_> = all.iter().map(|a| a.to_string_lossy()).collect();
        self.command = rss::peak_of(&run.usage).map(|peak| CommandPeak {
            line: format!("ember {}", words.join(" ")),
            peak,
        });
        Ok(())
    }

    /// Prints the table (see [`print_table`]).
    pub(crate) fn print(&self, title: &str, amount: f64, unit: &str) {
        print_table(title, amount, unit, &self.rows);
    }

    /// Prints the bar line: how many times the baseline's time ember's
    /// all-threads time is, of the medians and of the best runs; `baseline`
    /// names it.
    pub(crate) fn print_speedup(&self, baseline: &str) {
        let (base, ember) = (self.rows[0].timing, self.ember_all().timing);
        println!(
            "\nember on {} threads: {:.2}x the {baseline} (medians), {:.2}x (best runs)",
            self.threads,
            base.median / ember.median,
            base.best / ember.best
        );
    }

    /// Prints the roofline lines (ember's share of its limit on one and on
    /// all threads) and the scaling lines (the serial fraction from ember's
    /// 1- and all-thread medians, the serial seconds per phase, Amdahl's
    /// speed-up on more cores), and keeps the workload's summary line for
    /// `ember-bench all`; `input` is the input's size in bytes.
    pub(crate) fn print_roofline(&self, workload: &str, input: u64) {
        println!();
        for row in [self.ember_one(), self.ember_all()] {
            if let Some(limit) = binding_limit(&self.rows, row.role) {
                println!(
                    "{}: {:.0}% of its limit ({}: {:.3} s; medians)",
                    row.name,
                    100.0 * limit.timing.median / row.timing.median,
                    limit.name.trim_start_matches("limit: "),
                    limit.timing.median
                );
            }
        }
        let (one, all) = (self.ember_one(), self.ember_all());
        let serial = roofline::serial_fraction(one.timing.median, all.timing.median, self.threads);
        let at = |s: f64| [16.0, 64.0, 128.0].map(|p| format!("{:.1}x", roofline::amdahl(s, p)));
        if let Some(s) = serial {
            println!(
                "serial fraction {:.1}% from the 1- and {}-thread medians (Karp-Flatt; only as \
                 good as the capacity line below); Amdahl at 16 / 64 / 128 cores: {}",
                100.0 * s,
                self.threads,
                at(s).join(" / ")
            );
            self.print_serial_phases();
        }
        let parts = serial_parts(one.median_run());
        if let Some(s) = parts {
            println!(
                "serial parts {:.1}% of the 1-thread run (time outside the sample, map, reduce \
                 and merge, which run on every worker); Amdahl at 16 / 64 / 128 cores: {}",
                100.0 * s,
                at(s).join(" / ")
            );
        }
        let peak = all.peak().map(|p| p.peak);
        let ratio = |p: u64| p as f64 / input.max(1) as f64;
        if let Some(p) = peak {
            println!(
                "peak RSS of {} (in this process): {:.0} MiB, {:.2}x the input's {:.0} MiB",
                all.name,
                mib(p),
                ratio(p),
                mib(input)
            );
        }
        if let Some(c) = &self.command {
            println!(
                "peak RSS of `{}` (a child process): {:.0} MiB, {:.2}x the input's {:.0} MiB",
                c.line,
                mib(c.peak),
                ratio(c.peak),
                mib(input)
            );
        }
        let peak = self.command.as_ref().map(|c| c.peak).or(peak);
        let limit = binding_limit(&self.rows, all.role);
        roofline::record(roofline::Line {
            workload: workload.into(),
            threads: self.threads,
            secs: all.timing.median,
            limit: limit.map(|l| (l.name.clone(), l.timing.median)),
            peak,
            input,
            serial,
            serial_parts: parts,
            note: None,
        });
    }

    /// Prints each phase's serial seconds: what of the phase would remain
    /// on any number of threads, if it is a serial part plus a part that
    /// divides over the threads, solved from its 1- and all-thread times
    /// (the runs nearest the medians); "outside" is the time around the
    /// runtime's runs (input mapping, a gather).
    fn print_serial_phases(&self) {
        let (one, all) = (self.ember_one().median_run(), self.ember_all().median_run());
        let (Some(s1), Some(sn)) = (&one.stats, &all.stats) else {
            return;
        };
        let p = self.threads as f64;
        let serial = |a: f64, b: f64| ((p * b - a) / (p - 1.0)).max(0.0);
        let phases = [
            ("split", s1.split_secs, sn.split_secs),
            ("sample", s1.sample_secs, sn.sample_secs),
            ("map", s1.map_secs, sn.map_secs),
            ("reduce", s1.reduce_secs, sn.reduce_secs),
            ("merge", s1.merge_secs, sn.merge_secs),
            (
                "outside",
                one.secs - s1.total_secs,
                all.secs - sn.total_secs,
            ),
        ];
        let parts: Vec<String> = phases
            .iter()
            .map(|(name, a, b)| format!("{name} {:.3} s ({a:.3} -> {b:.3})", serial(*a, *b)))
            .collect();
        println!(
            "serial seconds by phase (1 -> {} threads): {}",
            self.threads,
            parts.join(", ")
        );
    }
}

/// The share of a run's time spent in the parts that run on one core:
/// outside the phases that use every worker (the sample, map, reduce and
/// merge), that is splitting, planning, and what the bench does around
/// the runtime's runs (mapping the input, a gather). None without stats.
fn serial_parts(run: &Measured) -> Option<f64> {
    let s = run.stats.as_ref()?;
    let parallel = s.sample_secs + s.map_secs + s.reduce_secs + s.merge_secs;
    Some(((run.secs - parallel) / run.secs).clamp(0.0, 1.0))
}

/// Reads the files once, so that every contender reads them from the page
/// cache; returns how many bytes they hold.
pub(crate) fn warm(files: &[impl AsRef<Path>]) -> Result<u64> {
    let mut bytes = 0;
    for f in files {
        bytes += std::fs::read(f)?.len() as u64;
    }
    Ok(bytes)
}
