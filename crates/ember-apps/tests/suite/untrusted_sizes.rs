//! No allocation sized by untrusted input (issue #22, point 3): a header
//! or a length that claims more than the file holds, or sizes whose
//! product overflows, is `Error::InvalidInput` naming what is wrong,
//! returned at once. Every claim here is far beyond this machine's memory
//! (2^40 bytes and up): a test that passes at all allocated none of it;
//! `../untrusted_alloc.rs` measures the largest allocation made.
//!
//! Already covered elsewhere, not repeated: a matrix header of 2^32 x 2^32
//! (overflows u64), of u64::MAX x 2 and of 2^20 x 2^20 over an empty body
//! (`matrix.rs` unit tests); a BMP cut short and a BMP of width 0
//! (`histogram.rs`); a sort input that is not whole records
//! (`sort.rs`).

use ember::{Error, Input, RunOptions, Runtime};
use ember_apps::histogram::{self, BmpSpec};
use ember_apps::matrix::{encode, header, Matrix};
use ember_apps::{kmeans, matrix_multiply, pca, sort};

/// Runs `f`, which must fail with `InvalidInput`; its message.
fn refused<T>(f: impl FnOnce() -> ember::Result<T>) -> String {
    let Err(e) = f() else {
        panic!("an untrusted size was accepted")
    };
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    e.to_string()
}

fn rt() -> Runtime {
    Runtime::builder().threads(2).build().unwrap()
}

/// The histogram's error for `file`, sequential and on ember (the same).
fn bmp_error(file: &[u8]) -> String {
    let seq = refused(|| histogram::sequential(file));
    let par = refused(|| histogram::run(&rt(), file, &RunOptions::default()));
    assert_eq!(seq, par);
    seq
}

/// A valid 6 x 4 image whose header then claims `width x height`.
fn bmp_claiming(width: i32, height: i32) -> Vec<u8> {
    let mut file = histogram::bmp(&BmpSpec {
        width: 6,
        height: 4,
        seed: 1,
    })
    .unwrap();
    file[18..22].copy_from_slice(&width.to_le_bytes());
    file[22..26].copy_from_slice(&height.to_le_bytes());
    file
}

#[test]
fn a_bmp_header_claiming_2_30_by_2_30_pixels_is_refused() {
    let file = bmp_claiming(1 << 30, 1 << 30);
    let e = bmp_error(&file);
    // 2^30 rows of 3 * 2^30 bytes (a multiple of 4: no padding), at 54.
    let need = (1u64 << 30) * (3 << 30) + 54;
    assert_eq!(
        e,
        format!(
            "invalid input: truncated BMP: 1073741824 x 1073741824 pixels at offset 54 need \
             {need} bytes, the file has {}",
            file.len()
        )
    );
}

#[test]
fn the_largest_bmp_header_claim_is_refused_without_overflow() {
    // Width 2^31 - 1, height -2^31 (top-down): the largest the fields
    // hold, about 1.4 * 10^19 bytes.
    let file = bmp_claiming(i32::MAX, i32::MIN);
    let e = bmp_error(&file);
    assert!(
        e.contains("truncated BMP: 2147483647 x 2147483648 pixels at offset 54 need"),
        "{e}"
    );
    assert!(e.ends_with(&format!("the file has {}", file.len())), "{e}");
}

#[test]
fn a_bmp_pixel_offset_past_the_end_is_refused() {
    let mut file = bmp_claiming(6, 4);
    file[10..14].copy_from_slice(&u32::MAX.to_le_bytes());
    let e = bmp_error(&file);
    // Three padded rows of 20 bytes and a last row of 18.
    assert!(
        e.contains("truncated BMP: 6 x 4 pixels at offset 4294967295 need 4294967373 bytes"),
        "{e}"
    );
}

#[test]
fn a_bmp_of_height_0_is_refused() {
    let e = bmp_error(&bmp_claiming(6, 0));
    assert!(e.contains("invalid BMP size 6 x 0 pixels"), "{e}");
}

#[test]
fn a_matrix_row_too_large_to_be_a_size_is_refused_even_with_0_rows() {
    // 0 rows hold 0 bytes whatever the width claims, but every reader cuts
    // the data into rows of 4 * cols bytes, which overflows here.
    for cols in [1 << 62, u64::MAX / 4 + 1, u64::MAX] {
        let file = header(0, cols);
        let e = refused(|| Matrix::parse(&file, "m.mat"));
        assert_eq!(
            e,
            format!(
                "invalid input: m.mat: the header says 0 x {cols}: a row of {cols} columns is \
                 too large to be a file"
            )
        );
    }
}

#[test]
fn header_only_matrices_of_2_40_columns_are_refused_by_every_workload() {
    // 0 x 2^40 is a valid, empty matrix file of 24 bytes; no workload may
    // size anything by its width.
    let file = header(0, 1 << 40);
    let m = Matrix::parse(&file, "m.mat").unwrap();
    let rt = rt();
    let opts = RunOptions::default();

    let params = kmeans::Params::default();
    let e = refused(|| kmeans::sequential(&m, params));
    assert!(e.contains("0 points, fewer than the"), "{e}");
    let e = refused(|| kmeans::run(&rt, &m, params, &opts, |_, _| {}));
    assert!(e.contains("0 points, fewer than the"), "{e}");

    let e = refused(|| pca::sequential(&m));
    assert!(
        e.contains("a 0 x 1099511627776 matrix: at most 4294967295 rows and columns"),
        "{e}"
    );
    let e = refused(|| pca::run(&rt, &m, &opts));
    assert!(e.contains("a 0 x 1099511627776 matrix"), "{e}");

    let b = encode(2, 1, &[1, 2]);
    let b = Matrix::parse(&b, "b.mat").unwrap();
    let e = refused(|| matrix_multiply::sequential(&m, &b));
    assert!(e.contains("A is 0 x 1099511627776 and B is 2 x 1"), "{e}");
    let e = refused(|| matrix_multiply::run(&rt, &m, &b, &opts));
    assert!(e.contains("A is 0 x 1099511627776 and B is 2 x 1"), "{e}");
}

#[test]
fn a_0_row_a_times_a_tall_b_is_an_empty_product() {
    // A claims 2^16 columns and holds nothing: the multiply must not size
    // its buffers by that width times its block of 128 rows.
    let k = 1 << 16;
    let a = header(0, k as u64);
    let a = Matrix::parse(&a, "a.mat").unwrap();
    let b = encode(k, 1, &vec![3; k]);
    let b = Matrix::parse(&b, "b.mat").unwrap();
    let seq = matrix_multiply::sequential(&a, &b).unwrap();
    let (par, _) = matrix_multiply::run(&rt(), &a, &b, &RunOptions::default()).unwrap();
    assert!(seq == par);
}

#[test]
fn a_sort_input_of_more_records_than_an_index_holds_is_refused() {
    // A sparse file of 2^32 + 1 records (about 430 GB, no disk used): a
    // record count past the u32 record index, refused before any key is
    // extracted.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.dat");
    let records = (1u64 << 32) + 1;
    let f = std::fs::File::create(&path).unwrap();
    if f.set_len(records * sort::RECORD_LEN as u64).is_err() {
        eprintln!("skipped: this file system holds no sparse file of 430 GB");
        return;
    }
    drop(f);
    let want = "invalid input: 4294967297 records; at most 4294967296 can be sorted";
    let input = Input::file(&path).unwrap();
    let rt = rt();
    let e = refused(|| sort::sort_order_input(&rt, &input, &RunOptions::default()));
    assert_eq!(e, want);
    let e = refused(|| sort::sort_order(&rt, input.part_bytes(0), &RunOptions::default()));
    assert_eq!(e, want);
    let e = refused(|| sort::check_records(input.part_bytes(0)));
    assert_eq!(e, want);
}
