//! Progress on standard error while a job runs: for one run, a bar of the
//! input bytes mapped out of the total, with the rate, the time left and
//! the phase; for a command that runs one job after another (k-means: one
//! per iteration), the job count, the phase and the bytes mapped. Shown
//! from a second into the run (short runs show nothing), on a terminal
//! only (indicatif draws nothing elsewhere), cleared before any result is
//! printed. Generating an input has a bar of its own
//! ([`ember_cli::inputs`]).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use ember::{Progress, RunOptions};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a run goes before its progress is shown.
const SHOW_AFTER: Duration = Duration::from_secs(1);
/// How often the display reads the counter.
const TICK: Duration = Duration::from_millis(100);

/// Runs `f` with `opts` plus a progress counter, showing the run's progress
/// on standard error meanwhile, when it is a terminal (else `f` runs with
/// `opts` as they are). `jobs` names one job of a multi-job command
/// (`"iteration"`, `"job"`).
pub(crate) fn progress_while<T>(
    opts: RunOptions,
    jobs: &'static str,
    f: impl FnOnce(&RunOptions) -> T,
) -> T {
    // indicatif draws nothing elsewhere: no display thread to start.
    if !std::io::stderr().is_terminal() {
        return f(&opts);
    }
    let counter = Progress::new();
    let opts = opts.progress(counter.clone());
    let shown = Shown {
        counter: &counter,
        jobs,
        after: SHOW_AFTER,
        target: ProgressDrawTarget::stderr,
    };
    shown.during(|| f(&opts))
}

/// Tells a display thread to finish, when dropped.
struct Stop<'a>(&'a AtomicBool, &'a std::thread::Thread);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Relaxed);
        self.1.unpark();
    }
}

/// A progress display of one counter.
struct Shown<'c, D> {
    counter: &'c Progress,
    jobs: &'static str,
    /// Drawn once the run has gone this long.
    after: Duration,
    /// Where to draw.
    target: D,
}

impl<D: FnOnce() -> ProgressDrawTarget + Send> Shown<'_, D> {
    /// Runs `f`, drawing the counter on another thread until it returns
    /// or panics.
    fn during<T>(self, f: impl FnOnce() -> T) -> T {
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let shower = s.spawn(|| self.show_until(&done));
            // Stops the display however `f` ends: a panic unwinding
            // through the scope would otherwise wait for it forever.
            let _stop = Stop(&done, shower.thread());
            f()
        })
    }

    fn show_until(self, done: &AtomicBool) {
        // Hidden at first, but counting from the start, so that the rate
        // and the elapsed time are the run's.
        let start = Instant::now();
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        let mut target = Some(self.target);
        let mut style = None;
        while !done.load(Relaxed) {
            std::thread::park_timeout(TICK);
            if start.elapsed() >= self.after {
                if let Some(t) = target.take() {
                    bar.set_draw_target(t());
                }
            }
            update(&bar, self.counter, self.jobs, &mut style);
        }
        bar.finish_and_clear();
    }
}

/// What the display looks like.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Look {
    /// One run of known size: a bar.
    Bar,
    /// Several runs, or an input of unknown size: a spinner and a count.
    Count,
}

/// Draws the counter's state on `bar`, switching its look when needed.
fn update(bar: &ProgressBar, counter: &Progress, jobs: &str, look: &mut Option<Look>) {
    let (runs, total) = (counter.runs(), counter.total());
    let phase = match (counter.phase(), counter.spills()) {
        (None, _) => "start".to_string(),
        (Some(p), 0) => p.name().to_string(),
        (Some(p), n) => format!("{}, {n} spills", p.name()),
    };
    let want = match runs <= 1 && total > 0 {
        true => Look::Bar,
        false => Look::Count,
    };
    if *look != Some(want) {
        bar.set_style(style(want));
        *look = Some(want);
    }
    match want {
        Look::Bar => {
            bar.set_length(total);
            bar.set_message(phase);
        }
        Look::Count => bar.set_message(format!("{jobs} {runs}, {phase}")),
    }
    bar.set_position(counter.bytes());
}

fn style(look: Look) -> ProgressStyle {
    let template = match look {
        Look::Bar => {
            "{spinner} {msg:7} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}, {elapsed} \
             (about {eta} left)"
        }
        Look::Count => "{spinner} {msg}: mapped {bytes} ({bytes_per_sec}), {elapsed}",
    };
    ProgressStyle::with_template(template)
        .expect("valid template")
        .progress_chars("=> ")
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::{Arc, Mutex};

    use ember::{Input, Runtime};
    use ember_apps::wordcount::WordCount;
    use indicatif::TermLike;

    use super::*;

    /// A terminal that keeps every line drawn on it.
    #[derive(Debug, Clone, Default)]
    struct Screen(Arc<Mutex<String>>);

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            120
        }
        fn move_cursor_up(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> io::Result<()> {
            self.write_str(&format!("{s}\n"))
        }
        fn write_str(&self, s: &str) -> io::Result<()> {
            self.0.lock().unwrap().push_str(s);
            Ok(())
        }
        fn clear_line(&self) -> io::Result<()> {
            self.write_str("\n")
        }
        fn flush(&self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Runs word count `jobs` times over `text` under a display drawn on a
    /// [`Screen`] at once; after each run, waits until the display has drawn
    /// that run's last phase (at most 30 s). Returns what was drawn.
    fn drawn(text: &[u8], jobs: usize, unit: &'static str) -> String {
        let screen = Screen::default();
        let counter = Progress::new();
        let opts = RunOptions::default().progress(counter.clone());
        let term = screen.clone();
        let shown = Shown {
            counter: &counter,
            jobs: unit,
            after: Duration::ZERO,
            target: move || ProgressDrawTarget::term_like(Box::new(term)),
        };
        let rt = Runtime::builder().threads(2).build().unwrap();
        let drew = |marker: &str| {
            let start = Instant::now();
            while !screen.0.lock().unwrap().contains(marker) {
                let seen = screen.0.lock().unwrap().clone();
                assert!(
                    start.elapsed() < Duration::from_secs(30),
                    "never drew {marker}: {seen}"
                );
                std::thread::sleep(TICK);
            }
        };
        shown.during(|| {
            for run in 1..=jobs {
                rt.run_with(&WordCount::new(), &Input::bytes(text), &opts)
                    .unwrap();
                // The first run is drawn as a bar, the others as a count.
                match run {
                    1 => drew("merge   [="),
                    _ => drew(&format!("{unit} {run}, merge")),
                }
            }
        });
        let s = screen.0.lock().unwrap().clone();
        s
    }

    #[test]
    fn one_run_draws_a_bar_of_its_bytes_and_phase() {
        let text = b"the quick brown fox ".repeat(100);
        let screen = drawn(&text, 1, "job");
        assert!(screen.contains("merge"), "{screen}");
        assert!(
            screen.contains("[=============================="),
            "{screen}"
        );
        assert!(screen.contains("1.95 KiB/1.95 KiB"), "{screen}");
    }

    #[test]
    fn several_runs_draw_a_count_of_jobs() {
        let text = b"the quick brown fox ".repeat(100);
        let screen = drawn(&text, 3, "iteration");
        assert!(
            screen.contains("iteration 3, merge: mapped 5.86 KiB"),
            "{screen}"
        );
        // The first run drew a bar; from the second on, a count.
        let last = screen.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
        assert!(
            last.contains("iteration 3") && !last.contains('['),
            "{screen}"
        );
    }

    #[test]
    fn a_spilling_run_shows_its_spills() {
        let text = ember_apps::text::text(&ember_apps::text::TextSpec {
            size: 1 << 20,
            vocab: 20_000,
            zipf: 1.0,
            seed: 1,
        });
        let counter = Progress::new();
        let opts = RunOptions::default()
            .progress(counter.clone())
            .memory_limit(64 << 10);
        let rt = Runtime::builder().threads(2).build().unwrap();
        let out = rt.run_with(&WordCount::new(), &Input::bytes(&text), &opts);
        let spills = out.unwrap().stats.memory.spills;
        assert!(spills > 0 && counter.spills() == spills);
        let screen = Screen::default();
        let term = screen.clone();
        let bar =
            ProgressBar::with_draw_target(None, ProgressDrawTarget::term_like(Box::new(term)));
        update(&bar, &counter, "job", &mut None);
        bar.tick();
        let drawn = screen.0.lock().unwrap().clone();
        assert!(
            drawn.contains(&format!("merge, {spills} spills")),
            "{drawn}"
        );
    }
}
