//! The report's charts as inline SVG: a timeline of spans on tracks, a
//! utilization curve and horizontal bars. No script and no fetch: the
//! file shows the same offline.

use std::fmt::Write;

use super::{escape, Span};

/// Chart width in pixels, labels included.
const WIDTH: f64 = 960.0;
/// Room for the track labels at the left.
const LABELS: f64 = 110.0;
/// Height of one track or bar.
const ROW: f64 = 18.0;

/// The colour of a span of this name.
fn colour(name: &str) -> &'static str {
    match name {
        "map" => "#4e79a7",
        "reduce" => "#f28e2b",
        "sample" => "#b07aa1",
        "merge" => "#59a14f",
        "read" => "#9c755f",
        "spill" => "#e15759",
        "split" => "#edc948",
        "run" => "#d3d3d3",
        _ => "#bab0ac",
    }
}

/// A key to the colours of the span kinds.
pub(super) fn legend() -> String {
    let mut s = String::from("<p class=\"legend\">");
    for name in ["split", "sample", "map", "reduce", "merge", "read", "spill"] {
        let _ = write!(
            s,
            r#"<span><svg width="12" height="12"><rect width="12" height="12" fill="{}"/></svg> {name}</span> "#,
            colour(name)
        );
    }
    s.push_str("</p>");
    s
}

/// One row per track, a rectangle per span (its tooltip says what it
/// did), over `[0, end]` microseconds, with a time axis.
pub(super) fn timeline(tracks: &[(String, Vec<&Span>)], end: f64) -> String {
    let height = ROW * tracks.len() as f64 + 24.0;
    let x = |t: f64| LABELS + (WIDTH - LABELS - 10.0) * t / end.max(1.0);
    let mut s = open(height);
    for (row, (name, spans)) in tracks.iter().enumerate() {
        let y = row as f64 * ROW;
        let _ = write!(
            s,
            r#"<text x="4" y="{:.1}" class="label">{}</text>"#,
            y + 13.0,
            escape(name)
        );
        for sp in spans {
            let w = (x(sp.ts + sp.dur) - x(sp.ts)).max(0.5);
            let _ = write!(
                s,
                r#"<rect class="span {}" x="{:.2}" y="{:.1}" width="{w:.2}" height="{:.1}" fill="{}"><title>{}</title></rect>"#,
                escape(&sp.name),
                x(sp.ts),
                y + 2.0,
                ROW - 4.0,
                colour(&sp.name),
                escape(&sp.describe())
            );
        }
    }
    axis(&mut s, ROW * tracks.len() as f64, end, x);
    s.push_str("</svg>");
    s
}

/// Utilization over time: `points` are `(time, share of the workers
/// busy)` over `[0, end]` microseconds, drawn as a filled curve from 0 to
/// 100%.
pub(super) fn utilization(points: &[(f64, f64)], end: f64) -> String {
    let h = 120.0;
    let x = |t: f64| LABELS + (WIDTH - LABELS - 10.0) * t / end.max(1.0);
    let y = |u: f64| h - h * u.clamp(0.0, 1.0);
    let mut s = open(h + 24.0);
    let mut path = format!("M{:.2},{:.2}", x(0.0), y(0.0));
    for &(t, u) in points {
        let _ = write!(path, " L{:.2},{:.2}", x(t), y(u));
    }
    let _ = write!(path, " L{:.2},{:.2} Z", x(end), y(0.0));
    let _ = write!(
        s,
        r##"<text x="4" y="12" class="label">100%</text><text x="4" y="{h}" class="label">0%</text><path class="utilization" d="{path}" fill="#4e79a7" fill-opacity="0.5" stroke="#4e79a7"/>"##
    );
    axis(&mut s, h, end, x);
    s.push_str("</svg>");
    s
}

/// Horizontal bars, one per `(label, value, note)`, scaled to the largest
/// value.
pub(super) fn bars(items: &[(String, f64, String)]) -> String {
    let max = items.iter().map(|i| i.1).fold(0.0, f64::max).max(1e-12);
    let mut s = open(ROW * items.len() as f64 + 4.0);
    for (row, (label, value, note)) in items.iter().enumerate() {
        let y = row as f64 * ROW;
        let w = (WIDTH - LABELS - 260.0) * value / max;
        let _ = write!(
            s,
            r##"<text x="4" y="{:.1}" class="label">{}</text><rect class="bar" x="{LABELS}" y="{:.1}" width="{w:.2}" height="{:.1}" fill="#4e79a7"/><text x="{:.1}" y="{:.1}" class="label">{}</text>"##,
            y + 13.0,
            escape(label),
            y + 2.0,
            ROW - 4.0,
            LABELS + w + 6.0,
            y + 13.0,
            escape(note)
        );
    }
    s.push_str("</svg>");
    s
}

fn open(height: f64) -> String {
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" viewBox="0 0 {WIDTH} {height:.0}">"#
    )
}

/// Ten ticks along the bottom, labelled in milliseconds or seconds.
fn axis(s: &mut String, y: f64, end: f64, x: impl Fn(f64) -> f64) {
    let _ = write!(
        s,
        r##"<line x1="{LABELS}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#888"/>"##,
        x(end)
    );
    for i in 0..=10 {
        let t = end * i as f64 / 10.0;
        let label = match end >= 2e6 {
            true => format!("{:.2} s", t / 1e6),
            false => format!("{:.1} ms", t / 1e3),
        };
        let anchor = match i {
            0 => "start",
            10 => "end",
            _ => "middle",
        };
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="{anchor}" class="tick">{label}</text>"#,
            x(t),
            y + 16.0
        );
    }
}
