//! k-means: ember equals the sequential implementation exactly, for any
//! thread count and split size; malformed input is refused clearly.

use crate::grid;
use crate::numeric;

use ember::{ContainerKind, Error, RunOptions, Runtime};
use ember_apps::kmeans::{self, Params};
use ember_apps::matrix::Matrix;
use numeric::{each_config, matrix, truncated};

fn params(clusters: usize, max_iterations: usize) -> Params {
    Params {
        clusters,
        max_iterations,
    }
}

#[test]
fn ember_equals_sequential() {
    // (points, dims, clusters, value range): 3 dimensions (the WORKLOADS.md
    // shape), 5 (the kernel's any-dimension path), 2 with coordinates over
    // the whole i32 range (the i128 path), and duplicated small values
    // (ties).
    let cases = [
        (3000, 3, 20, 0, 1000, 1),
        (1500, 5, 7, -50, 50, 2),
        (800, 2, 4, i32::MIN, i32::MAX, 3),
        (1000, 1, 6, 0, 4, 4),
    ];
    for (points, dims, k, lo, hi, seed) in cases {
        let bytes = matrix(points, dims, lo, hi, seed);
        let m = Matrix::parse(&bytes, "points").unwrap();
        let want = kmeans::sequential(&m, params(k, 200)).unwrap();
        assert!(want.iterations >= 2, "{want:?}");
        assert_eq!(want.sizes.iter().sum::<u64>(), points);
        each_config(4 * dims as usize, |rt, opts, label| {
            let mut seen = 0;
            let (got, stats) = kmeans::run(rt, &m, params(k, 200), opts, |p, _| {
                seen += 1;
                assert_eq!(p.iteration, seen);
            })
            .unwrap();
            assert_eq!(got, want, "{points} x {dims}, k {k}: {label}");
            assert_eq!(seen, want.iterations);
            assert_eq!(stats.threads, rt.threads());
        });
    }
}

#[test]
fn every_container_that_holds_cluster_keys_agrees() {
    // Cluster ids are dense (`KeyHint::Dense(k)`): the array container
    // holds them, as do the containers for any key; unique does not
    // (a cluster gets many points).
    let kinds = [grid::ANY_KEY.as_slice(), &[ContainerKind::Array]].concat();
    for (points, dims, k, seed) in [(3000, 3, 20, 11), (1200, 5, 7, 12)] {
        let bytes = matrix(points, dims, 0, 1000, seed);
        let m = Matrix::parse(&bytes, "points").unwrap();
        let want = kmeans::sequential(&m, params(k, 200)).unwrap();
        assert!(want.iterations >= 2, "{want:?}");
        grid::for_each_container(&kinds, |rt, opts, label| {
            let (got, stats) = kmeans::run(rt, &m, params(k, 200), opts, |_, _| {}).unwrap();
            assert_eq!(got, want, "{points} x {dims}, k {k}: {label}");
            // Every iteration used the container asked for (Auto: array).
            let used = match opts.container {
                Some(ContainerKind::Auto) | None => ContainerKind::Array,
                Some(c) => c,
            };
            assert_eq!(stats.plan.container, used, "{label}");
        });
    }
    let bytes = matrix(100, 3, 0, 1000, 13);
    let m = Matrix::parse(&bytes, "points").unwrap();
    let rt = Runtime::builder().threads(2).build().unwrap();
    let opts = RunOptions::default().container(ContainerKind::Unique);
    let e = kmeans::run(&rt, &m, params(4, 10), &opts, |_, _| {}).unwrap_err();
    assert!(
        e.to_string()
            .contains("the unique container needs a job that declares unique keys"),
        "{e}"
    );
}

#[test]
fn stops_at_max_iterations_and_at_convergence() {
    let bytes = matrix(2000, 3, 0, 1000, 9);
    let m = Matrix::parse(&bytes, "points").unwrap();
    let rt = Runtime::builder().threads(2).build().unwrap();
    let capped = kmeans::run(&rt, &m, params(10, 2), &RunOptions::default(), |_, _| {})
        .unwrap()
        .0;
    assert_eq!((capped.iterations, capped.converged), (2, false));
    assert_eq!(capped, kmeans::sequential(&m, params(10, 2)).unwrap());
    let full = kmeans::sequential(&m, params(10, 1000)).unwrap();
    assert!(full.converged);
    // A converged clustering is a fixed point: one more iteration from it
    // changes nothing, and every point is nearest to its own mean.
    let values = m.values();
    let mut sizes = vec![0u64; 10];
    for p in values.chunks_exact(3) {
        let dist = |c: usize| -> i64 {
            (0..3)
                .map(|d| (p[d] as i64 - full.mean(c)[d] as i64).pow(2))
                .sum()
        };
        sizes[(0..10).min_by_key(|&c| (dist(c), c)).unwrap()] += 1;
    }
    assert_eq!(sizes, full.sizes);
}

#[test]
fn malformed_input_is_refused_with_a_clear_message() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let err = |bytes: &[u8], k: usize| -> String {
        let m = match Matrix::parse(bytes, "pts.mat") {
            Ok(m) => m,
            Err(e) => return e.to_string(),
        };
        let e = kmeans::run(&rt, &m, params(k, 10), &RunOptions::default(), |_, _| {}).unwrap_err();
        let s = kmeans::sequential(&m, params(k, 10)).unwrap_err();
        assert_eq!(e.to_string(), s.to_string());
        e.to_string()
    };
    let good = matrix(50, 3, 0, 100, 1);
    // A file length that is not a whole number of points.
    let e = err(&truncated(good.clone(), 5), 3);
    assert!(
        e.contains("pts.mat: the header says 50 x 3 (600 bytes of values) but 595 bytes follow it: 49 rows of 12 bytes plus 7 bytes of a partial row"),
        "{e}"
    );
    // Wrong dimensions: the same values read as 2-dimensional points.
    let mut two_dims = good.clone();
    two_dims[16..24].copy_from_slice(&2u64.to_le_bytes());
    let e = err(&two_dims, 3);
    assert!(
        e.contains("says 50 x 2 (400 bytes of values) but 600 bytes follow"),
        "{e}"
    );
    let e = err(b"x,y,z\n1,2,3\n4,5,6\n7,8,9\n", 3);
    assert!(e.contains("pts.mat: not an ember matrix file"), "{e}");
    let e = err(&good, 51);
    assert!(
        e.contains("invalid input: 50 points, fewer than the 51 clusters"),
        "{e}"
    );
    let m = Matrix::parse(&good, "pts.mat").unwrap();
    let e = kmeans::sequential(&m, params(0, 10)).unwrap_err();
    assert!(matches!(e, Error::Config(_)), "{e}");
    assert!(e.to_string().contains("at least 1 cluster"), "{e}");
}
