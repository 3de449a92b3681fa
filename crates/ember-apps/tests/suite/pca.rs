//! PCA: ember equals the sequential implementation and the definition
//! exactly, for any thread count and split size; malformed input is refused
//! clearly.

use crate::grid;
use crate::numeric;

use ember::{ContainerKind, RunOptions, Runtime};
use ember_apps::matrix::Matrix;
use ember_apps::pca::{self, covariance};
use numeric::{each_config, matrix, truncated};

/// The definition, computed plainly: exact sums and dot products in i128.
fn plain_upper(m: &Matrix<'_>) -> Vec<Vec<f64>> {
    let rows: Vec<Vec<i32>> = m.values().chunks(m.cols).map(<[i32]>::to_vec).collect();
    let sum = |r: &[i32]| r.iter().map(|&v| v as i64).sum::<i64>();
    (0..m.rows)
        .map(|i| {
            (i..m.rows)
                .map(|j| {
                    let dot = rows[i]
                        .iter()
                        .zip(&rows[j])
                        .map(|(&a, &b)| a as i128 * b as i128)
                        .sum();
                    covariance(m.cols, dot, sum(&rows[i]), sum(&rows[j]))
                })
                .collect()
        })
        .collect()
}

#[test]
fn ember_equals_sequential_and_the_definition() {
    // (rows, cols, value range): the WORKLOADS.md value range, negative
    // values, the whole i32 range (the i64/i128 path), a single row, none.
    let cases = [
        (61, 97, 0, 1000, 1),
        (40, 1030, -3000, 3000, 2),
        (23, 9, i32::MIN, i32::MAX, 3),
        (1, 5, 0, 10, 4),
        (0, 5, 0, 10, 5),
    ];
    for (rows, cols, lo, hi, seed) in cases {
        let bytes = matrix(rows, cols, lo, hi, seed);
        let m = Matrix::parse(&bytes, "m").unwrap();
        let want = pca::sequential(&m).unwrap();
        assert_eq!(want.upper, plain_upper(&m), "{rows} x {cols}");
        let sums: Vec<i64> = m
            .values()
            .chunks(m.cols)
            .map(|r| r.iter().map(|&v| v as i64).sum())
            .collect();
        assert_eq!(want.sums, sums);
        each_config(m.row_bytes(), |rt, opts, label| {
            let (got, stats) = pca::run(rt, &m, opts).unwrap();
            assert_eq!(got, want, "{rows} x {cols}: {label}");
            assert_eq!(stats.threads, rt.threads());
        });
    }
}

/// Job 1 (row sums, one key per row) runs in the container asked for;
/// job 2 is map-only and has none. Row keys are unique and dense, but the
/// job declares neither (no `KeyHint`): the array and unique containers
/// refuse it.
#[test]
fn every_container_that_holds_row_keys_agrees() {
    for (rows, cols, lo, hi, seed) in [(61, 97, 0, 1000, 11), (23, 9, i32::MIN, i32::MAX, 12)] {
        let bytes = matrix(rows, cols, lo, hi, seed);
        let m = Matrix::parse(&bytes, "m").unwrap();
        let want = pca::sequential(&m).unwrap();
        grid::for_each_container(&grid::ANY_KEY, |rt, opts, label| {
            let (got, stats) = pca::run(rt, &m, opts).unwrap();
            assert_eq!(got, want, "{rows} x {cols}: {label}");
            // The summed stats carry job 1's plan (job 2 is map-only).
            match opts.container {
                Some(ContainerKind::Auto) | None => {}
                Some(c) => assert_eq!(stats.plan.container, c, "{label}"),
            }
        });
    }
    let bytes = matrix(10, 10, 0, 100, 13);
    let m = Matrix::parse(&bytes, "m").unwrap();
    let rt = Runtime::builder().threads(2).build().unwrap();
    for (container, msg) in [
        (
            ContainerKind::Array,
            "the array container needs a job with dense integer keys",
        ),
        (
            ContainerKind::Unique,
            "the unique container needs a job that declares unique keys",
        ),
    ] {
        let opts = RunOptions::default().container(container);
        let e = pca::run(&rt, &m, &opts).unwrap_err();
        assert!(e.to_string().contains(msg), "{container}: {e}");
    }
}

#[test]
fn malformed_input_is_refused_with_a_clear_message() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let err = |bytes: &[u8]| -> String {
        let m = match Matrix::parse(bytes, "pca.mat") {
            Ok(m) => m,
            Err(e) => return e.to_string(),
        };
        let e = pca::run(&rt, &m, &Default::default()).unwrap_err();
        assert_eq!(e.to_string(), pca::sequential(&m).unwrap_err().to_string());
        e.to_string()
    };
    let e = err(&truncated(matrix(10, 10, 0, 100, 1), 4));
    assert!(
        e.contains("pca.mat: the header says 10 x 10 (400 bytes of values) but 396 bytes follow it: 9 rows of 40 bytes plus 36 bytes"),
        "{e}"
    );
    let e = err(&matrix(10, 1, 0, 100, 1));
    assert!(
        e.contains("a 10 x 1 matrix: covariance needs at least 2 columns (observations) per row"),
        "{e}"
    );
    let e = err(&[0u8; 10]);
    assert!(
        e.contains("pca.mat: 10 bytes, too short for the 24-byte matrix header"),
        "{e}"
    );
}
