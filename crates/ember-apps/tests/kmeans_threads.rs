//! k-means runs every iteration on the runtime's threads: no thread is
//! created after the first iteration. Alone in its test binary, so that no
//! other test's threads come and go meanwhile.

use ember::{RunOptions, Runtime};
use ember_apps::kmeans::{self, Params};
use ember_apps::matrix::{self, Matrix, MatrixSpec};

/// This process's threads: (thread id, name), sorted. A thread that ended
/// and a new one of the same name have different ids.
fn threads() -> Vec<(u64, String)> {
    let mut t: Vec<(u64, String)> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .map(|t| {
            let path = t.unwrap().path();
            let id = path.file_name().unwrap().to_str().unwrap().parse().unwrap();
            let name = std::fs::read_to_string(path.join("comm")).unwrap();
            (id, name.trim().to_string())
        })
        .collect();
    t.sort();
    t
}

#[test]
#[cfg(target_os = "linux")]
fn no_thread_is_created_after_the_first_iteration() {
    let bytes = matrix::matrix(&MatrixSpec {
        rows: 4000,
        cols: 3,
        lo: 0,
        hi: 1000,
        seed: 11,
    });
    let m = Matrix::parse(&bytes, "points").unwrap();
    let rt = Runtime::builder().threads(3).build().unwrap();
    let params = Params {
        clusters: 16,
        max_iterations: 1000,
    };
    let mut after_first = Vec::new();
    let (c, _) = kmeans::run(&rt, &m, params, &RunOptions::default(), |p, stats| {
        if p.iteration == 1 {
            after_first = threads();
        } else {
            assert_eq!(
                threads(),
                after_first,
                "threads at iteration {}",
                p.iteration
            );
        }
        // Every iteration's map tasks ran on the runtime's 3 workers.
        assert_eq!(stats.map_tasks.len(), 3);
    })
    .unwrap();
    assert!(c.iterations >= 3, "{} iterations", c.iterations);
    let now = threads();
    assert_eq!(now, after_first, "threads after the last iteration");
    let workers = now
        .iter()
        .filter(|t| t.1.starts_with("ember-worker"))
        .count();
    assert_eq!(workers, 3, "{now:?}");
}
