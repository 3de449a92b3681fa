//! Linear regression in the streaming contract: points as text lines, one
//! line of sums per map process, the fit from reduce.
//!
//! - **Points** (the map input): one per line, two integers `x y`
//!   separated by spaces, commas or tabs (as k-means points), each from
//!   -32768 to 32767, so that the 64-bit sums hold at least 2^33 points
//!   whatever their values. Blank lines are skipped; any other line is an
//!   error that quotes it.
//! - **Partial**: `sums<TAB>n,sx,sy,sxx,syy,sxy`, the point count and the
//!   five sums of [`crate::linear_regression`]; one line per map process.
//! - **Output** (reduce): `key<TAB>value` lines, `N`, `SX`, `SY`, `SXX`,
//!   `SYY`, `SXY` (the names `ember linear-regression` prints), then `a`,
//!   `b` and `R^2` of the fit `y = a + b x` (floats in the shortest form
//!   that reads back to the same value), or `fit<TAB>none: ...` when the
//!   fit is undefined.

use std::io::{BufRead, Write};

use ember::stream::{read_lines, Folding, KeyOrder, StreamJob, Text};
use ember::{
    Bytes, Emit, Error, Input, Job, MapResult, Records, Result, RunOptions, Runtime, Split, Stats,
    Sum,
};

use super::kmeans::coordinates;
use super::map_lines;
use crate::linear_regression::{Sums, SUM_NAMES};

/// The key of the partial line.
pub const SUMS_KEY: &str = "sums";

/// Text points summed: the job of [`Regression`]'s map and combine.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextPoints;

/// The point of a line: two 16-bit integers.
fn point(text: &[u8]) -> std::result::Result<(i64, i64), String> {
    let quoted = || String::from_utf8_lossy(text).escape_debug().to_string();
    let coords = coordinates(text).map_err(|e| format!("point '{}': {e}", quoted()))?;
    let [x, y] = coords[..] else {
        return Err(format!(
            "point '{}': {} numbers, a point is two (x y)",
            quoted(),
            coords.len()
        ));
    };
    for v in [x, y] {
        if i16::try_from(v).is_err() {
            return Err(format!(
                "point '{}': {v} is outside -32768..=32767",
                quoted()
            ));
        }
    }
    Ok((x.into(), y.into()))
}

/// `n,sx,sy,sxx,syy,sxy`.
impl Text for Sums {
    fn write_text(&self, out: &mut Vec<u8>) {
        self.n.write_text(out);
        for s in self.s {
            out.push(b',');
            s.write_text(out);
        }
    }
    fn read_text(text: &[u8]) -> Option<Self> {
        let mut fields = text.split(|&b| b == b',');
        let mut sums = Sums {
            n: u64::read_text(fields.next()?)?,
            s: [0; 5],
        };
        for s in &mut sums.s {
            *s = i64::read_text(fields.next()?)?;
        }
        fields.next().is_none().then_some(sums)
    }
}

impl Job for TextPoints {
    type Key = Bytes;
    type Value = Sums;
    type Combiner = Sum;
    type Out = Sums;

    fn records(&self) -> Records {
        Records::Lines
    }

    /// Sums the split's points; one pair per split.
    fn map<E: Emit<Bytes, Sums>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        let mut sums = Sums::default();
        map_lines(split.data, |text| {
            let (x, y) = point(text)?;
            sums.add_point(x, y);
            Ok(())
        })?;
        emit.emit(SUMS_KEY.as_bytes(), sums);
        Ok(())
    }

    fn reduce(&self, _key: &Bytes, sums: Sums) -> Sums {
        sums
    }

    /// Sums fold in any order.
    fn pipelinable(&self) -> bool {
        true
    }
}

/// The one key reduce reads: [`SUMS_KEY`], and no other.
struct SumsKey;

impl Text for SumsKey {
    fn write_text(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(SUMS_KEY.as_bytes());
    }
    fn read_text(text: &[u8]) -> Option<Self> {
        (text == SUMS_KEY.as_bytes()).then_some(SumsKey)
    }
}

/// Linear regression over text points: map and combine are
/// [`TextPoints`]' ([`Folding`]), reduce adds the sums and writes the fit.
#[derive(Debug, Clone, Copy, Default)]
pub struct Regression;

impl StreamJob for Regression {
    fn map(
        &self,
        runtime: &Runtime,
        input: &Input<'_>,
        opts: &RunOptions,
        out: &mut dyn Write,
    ) -> Result<Stats> {
        Folding(TextPoints).map(runtime, input, opts, out)
    }

    fn combine(&self, name: &str, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<()> {
        Folding(TextPoints).combine(name, input, out)
    }

    /// Nothing for no lines (an empty partition of several reducers').
    fn reduce(&self, name: &str, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<()> {
        let mut total: Option<Sums> = None;
        read_lines(name, input, KeyOrder::Sorted, |SumsKey, sums: Sums, _| {
            *total.get_or_insert_with(Sums::default) += sums;
            Ok(())
        })?;
        match total {
            Some(sums) => out
                .write_all(&fit_lines(&sums))
                .map_err(|e| Error::io("<output>", e)),
            None => Ok(()),
        }
    }
}

/// The reduce output for `sums` (see the module's notes).
pub fn fit_lines(sums: &Sums) -> Vec<u8> {
    let mut text = Vec::new();
    let mut line = |key: &str, value: &dyn Fn(&mut Vec<u8>)| {
        text.extend_from_slice(key.as_bytes());
        text.push(b'\t');
        value(&mut text);
        text.push(b'\n');
    };
    line("N", &|t| sums.n.write_text(t));
    for (name, s) in SUM_NAMES.iter().zip(sums.s) {
        line(name, &|t| s.write_text(t));
    }
    match sums.fit() {
        Some(fit) => {
            line("a", &|t| fit.a.write_text(t));
            line("b", &|t| fit.b.write_text(t));
            line("R^2", &|t| fit.r2.write_text(t));
        }
        None if sums.n == 0 => line("fit", &|t| t.extend_from_slice(b"none: no points")),
        None => line("fit", &|t| {
            t.extend_from_slice(b"none: every x is the same")
        }),
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_two_16_bit_integers_and_bad_lines_are_quoted() {
        assert_eq!(point(b"3 -4"), Ok((3, -4)));
        assert_eq!(point(b"3,4"), Ok((3, 4)));
        assert_eq!(point(b"-32768\t32767"), Ok((-32768, 32767)));
        let error = |text: &[u8]| point(text).unwrap_err();
        assert_eq!(
            error(b"1 2 3"),
            "point '1 2 3': 3 numbers, a point is two (x y)"
        );
        assert!(error(b"1 x").contains("'x' is not a 32-bit integer"));
        assert_eq!(
            error(b"1 40000"),
            "point '1 40000': 40000 is outside -32768..=32767"
        );
    }

    #[test]
    fn sums_read_back_their_text_and_nothing_else() {
        let sums = Sums {
            n: 3,
            s: [1, -2, 30, 4, -5],
        };
        let mut text = Vec::new();
        sums.write_text(&mut text);
        assert_eq!(text, b"3,1,-2,30,4,-5");
        assert_eq!(Sums::read_text(&text), Some(sums));
        assert_eq!(Sums::read_text(b"3,1,-2,30,4"), None);
        assert_eq!(Sums::read_text(b"3,1,-2,30,4,-5,6"), None);
    }

    #[test]
    fn the_fit_is_written_as_key_value_lines() {
        let mut sums = Sums::default();
        for x in 0..10 {
            sums.add_point(x, 3 + 2 * x);
        }
        let text = String::from_utf8(fit_lines(&sums)).unwrap();
        assert_eq!(
            text,
            "N\t10\nSX\t45\nSY\t120\nSXX\t285\nSYY\t1770\nSXY\t705\na\t3\nb\t2\nR^2\t1\n"
        );
        let mut flat = Sums::default();
        flat.add_point(5, 1);
        flat.add_point(5, 2);
        let text = String::from_utf8(fit_lines(&flat)).unwrap();
        assert!(text.ends_with("fit\tnone: every x is the same\n"), "{text}");
    }
}
