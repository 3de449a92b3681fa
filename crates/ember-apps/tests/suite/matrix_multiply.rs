//! Matrix multiply: ember equals the sequential implementation and the
//! definition exactly (wrapping i32), for any thread count and split size;
//! mismatched or malformed input is refused clearly; the inputs are never
//! written.

use crate::numeric;

use ember::Runtime;
use ember_apps::matrix::Matrix;
use ember_apps::matrix_multiply;
use numeric::{each_config, matrix, truncated};

/// The definition, computed plainly with wrapping i32 arithmetic.
fn plain(a: &Matrix<'_>, b: &Matrix<'_>) -> Vec<i32> {
    let (av, bv) = (a.values(), b.values());
    let mut c = vec![0i32; a.rows * b.cols];
    for i in 0..a.rows {
        for j in 0..b.cols {
            c[i * b.cols + j] = (0..a.cols).fold(0i32, |s, r| {
                s.wrapping_add(av[i * a.cols + r].wrapping_mul(bv[r * b.cols + j]))
            });
        }
    }
    c
}

#[test]
fn ember_equals_sequential_and_the_definition() {
    // (m, k, p, value range): square like WORKLOADS.md, shapes off the
    // kernel's block sizes, values that wrap, an empty A.
    let cases = [
        (64, 64, 64, 0, 1000),
        (37, 300, 70, -1000, 1000),
        (9, 5, 130, i32::MIN, i32::MAX),
        (1, 1, 1, 0, 10),
        (0, 3, 4, 0, 10),
    ];
    for (i, (m, k, p, lo, hi)) in cases.into_iter().enumerate() {
        let (ab, bb) = (
            matrix(m, k, lo, hi, 2 * i as u64),
            matrix(k, p, lo, hi, 2 * i as u64 + 1),
        );
        let before = (ab.clone(), bb.clone());
        let (a, b) = (
            Matrix::parse(&ab, "a").unwrap(),
            Matrix::parse(&bb, "b").unwrap(),
        );
        let want = matrix_multiply::sequential(&a, &b).unwrap();
        assert_eq!(want.values(), plain(&a, &b), "{m} x {k} x {p}");
        assert_eq!((want.rows, want.cols), (m as usize, p as usize));
        each_config(a.row_bytes(), |rt, opts, label| {
            let (got, stats) = matrix_multiply::run(rt, &a, &b, opts).unwrap();
            assert_eq!(got, want, "{m} x {k} x {p}: {label}");
            assert!(stats.reduce_skipped());
        });
        assert_eq!((ab, bb), before, "the inputs are only read");
    }
}

#[test]
fn mismatched_or_malformed_input_is_refused_with_a_clear_message() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let err = |ab: &[u8], bb: &[u8]| -> String {
        let (a, b) = match (Matrix::parse(ab, "a.mat"), Matrix::parse(bb, "b.mat")) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => return e.to_string(),
        };
        let e = matrix_multiply::run(&rt, &a, &b, &Default::default()).unwrap_err();
        let s = matrix_multiply::sequential(&a, &b).unwrap_err();
        assert_eq!(e.to_string(), s.to_string());
        e.to_string()
    };
    let e = err(&matrix(4, 4, 0, 9, 1), &matrix(5, 5, 0, 9, 2));
    assert!(
        e.contains("A is 4 x 4 and B is 5 x 5: A needs as many columns as B has rows"),
        "{e}"
    );
    let e = err(&matrix(4, 4, 0, 9, 1), &truncated(matrix(4, 4, 0, 9, 2), 3));
    assert!(
        e.contains("b.mat: the header says 4 x 4 (64 bytes of values) but 61 bytes follow it"),
        "{e}"
    );
}
