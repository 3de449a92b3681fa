//! Linear regression on ember equals the sequential sums and fit; an odd
//! file length is an error.

use crate::grid;

use ember::{Error, Runtime};
use ember_apps::linear_regression::{self, PointsSpec};

#[test]
fn ember_equals_sequential() {
    for (size, seed) in [(0, 1), (2, 2), (1000, 3), (100_002, 4), (300_000, 5)] {
        let data = linear_regression::points(&PointsSpec { size, seed }).unwrap();
        let want = linear_regression::sequential(&data).unwrap();
        assert_eq!(want.n, size / 2);
        grid::for_each_setting(|rt, opts, label| {
            let (got, _) = linear_regression::run(rt, &data, opts).unwrap();
            assert_eq!(got, want, "{size} bytes, {label}");
            // The fit is a function of the exact sums: equal, not close.
            assert_eq!(got.fit(), want.fit());
        });
    }
}

#[test]
fn every_container_that_holds_its_keys_agrees() {
    let data = linear_regression::points(&PointsSpec {
        size: 100_002,
        seed: 8,
    })
    .unwrap();
    let want = linear_regression::sequential(&data).unwrap();
    let kinds = [grid::ANY_KEY.as_slice(), &[ember::ContainerKind::Array]].concat();
    grid::for_each_container(&kinds, |rt, opts, label| {
        let (got, _) = linear_regression::run(rt, &data, opts).unwrap();
        assert_eq!(got, want, "{label}");
    });
}

#[test]
fn negative_values_are_signed() {
    // (-128, 127), (127, -128), (-1, -1): signed chars, as in Phoenix.
    let data = [0x80, 0x7f, 0x7f, 0x80, 0xff, 0xff];
    let rt = Runtime::builder().threads(2).build().unwrap();
    let opts = ember::RunOptions::default().split_size(2);
    let (sums, _) = linear_regression::run(&rt, &data, &opts).unwrap();
    let sq = 128 * 128 + 127 * 127 + 1;
    assert_eq!(sums.s, [-2, -2, sq, sq, 2 * -128 * 127 + 1]);
}

#[test]
fn odd_length_is_rejected_with_a_clear_message() {
    let data = vec![1u8; 1001];
    let rt = Runtime::builder().threads(2).build().unwrap();
    for e in [
        linear_regression::sequential(&data).unwrap_err(),
        linear_regression::run(&rt, &data, &Default::default()).unwrap_err(),
    ] {
        assert!(matches!(e, Error::InvalidInput(_)), "{e}");
        let msg = e.to_string();
        assert!(msg.contains("1001 bytes, an odd length"), "{msg}");
        assert!(msg.contains("byte 1000 has no y"), "{msg}");
    }
}
