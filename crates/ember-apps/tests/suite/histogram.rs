//! Histogram on ember equals the sequential histogram; malformed BMPs give
//! clear errors.

use crate::grid;

use ember::{Error, Runtime};
use ember_apps::histogram::{self, Bmp, BmpSpec, KEYS};

fn image(width: u32, height: u32, seed: u64) -> Vec<u8> {
    histogram::bmp(&BmpSpec {
        width,
        height,
        seed,
    })
    .unwrap()
}

#[test]
fn ember_equals_sequential() {
    // Widths with and without row padding (3 * width not a multiple of 4).
    for (w, h, seed) in [(1, 1, 1), (5, 7, 2), (64, 33, 3), (333, 50, 4), (4, 200, 5)] {
        let file = image(w, h, seed);
        let want = histogram::sequential(&file).unwrap();
        for c in 0..3 {
            let total: u64 = want[c * 256..(c + 1) * 256].iter().sum();
            assert_eq!(total, u64::from(w * h), "{w} x {h}");
        }
        grid::for_each_setting(|rt, opts, label| {
            let (got, stats) = histogram::run(rt, &file, opts).unwrap();
            assert_eq!(got[..], want[..], "{w} x {h}, {label}");
            assert!(stats.pairs_emitted <= KEYS as u64 * stats.splits as u64);
        });
    }
}

#[test]
fn every_container_that_holds_its_keys_agrees() {
    let file = image(333, 50, 9);
    let want = histogram::sequential(&file).unwrap();
    let kinds = [grid::ANY_KEY.as_slice(), &[ember::ContainerKind::Array]].concat();
    grid::for_each_container(&kinds, |rt, opts, label| {
        let (got, stats) = histogram::run(rt, &file, opts).unwrap();
        assert_eq!(got[..], want[..], "{label}");
        if opts.container == Some(ember::ContainerKind::Auto) {
            assert_eq!(
                stats.plan.container,
                ember::ContainerKind::Array,
                "declared dense keys: {label}"
            );
        }
    });
}

#[test]
fn top_down_images_count_the_same() {
    let mut file = image(7, 9, 8);
    let want = histogram::sequential(&file).unwrap();
    file[22..26].copy_from_slice(&(-9i32).to_le_bytes());
    assert!(Bmp::parse(&file).unwrap().top_down);
    let rt = Runtime::builder().threads(2).build().unwrap();
    assert_eq!(
        histogram::run(&rt, &file, &Default::default()).unwrap().0[..],
        want[..]
    );
}

#[test]
fn missing_padding_of_the_last_row_is_accepted() {
    // 5 pixels = 15 bytes a row, stored in 16: drop the last row's pad byte.
    let mut file = image(5, 3, 9);
    let want = histogram::sequential(&file).unwrap();
    file.pop();
    assert_eq!(histogram::sequential(&file).unwrap()[..], want[..]);
}

fn error_of(file: &[u8]) -> String {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let seq = histogram::sequential(file).unwrap_err();
    let par = histogram::run(&rt, file, &Default::default()).unwrap_err();
    assert!(matches!(seq, Error::InvalidInput(_)), "{seq}");
    assert_eq!(seq.to_string(), par.to_string());
    seq.to_string()
}

#[test]
fn malformed_files_are_rejected_with_a_clear_message() {
    let good = image(6, 4, 1);

    let e = error_of(b"GIF89a not a bitmap at all, but long enough to hold headers......");
    assert!(e.contains("not a BMP file"), "{e}");
    assert!(error_of(b"").contains("not a BMP file"));

    let e = error_of(&good[..30]);
    assert!(e.contains("truncated BMP: 30 bytes"), "{e}");

    let e = error_of(&good[..good.len() - 5]);
    assert!(e.contains("truncated BMP: 6 x 4 pixels"), "{e}");
    assert!(
        e.contains(&format!("the file has {}", good.len() - 5)),
        "{e}"
    );

    let mut bits32 = good.clone();
    bits32[28] = 32;
    let e = error_of(&bits32);
    assert!(e.contains("unsupported BMP bit depth 32"), "{e}");

    let mut rle = good.clone();
    rle[30] = 1;
    let e = error_of(&rle);
    assert!(e.contains("unsupported BMP compression 1"), "{e}");

    let mut core_header = good.clone();
    core_header[14] = 12;
    let e = error_of(&core_header);
    assert!(e.contains("info header of 12 bytes"), "{e}");

    let mut no_width = good.clone();
    no_width[18..22].copy_from_slice(&0i32.to_le_bytes());
    let e = error_of(&no_width);
    assert!(e.contains("invalid BMP size 0 x 4"), "{e}");

    let mut bad_offset = good;
    bad_offset[10] = 20;
    let e = error_of(&bad_offset);
    assert!(e.contains("pixel data offset 20"), "{e}");
}
