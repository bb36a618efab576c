//! `--plot FILE.svg`: the latency histogram and qps over time, as a
//! self-contained SVG written by hand (no plotting library).
//!
//! ```text
//!  ┌ latency histogram: log-scale x (10 bins per decade), replies per bin;
//!  │  lines at p50, p99, p99.9
//!  ├ replies per second over time (100 ms buckets)
//!  └ largest latency per 100 ms bucket over time
//! ```

use super::stats::{Stats, BUCKET};
use std::fmt::Write as _;

const W: f64 = 900.0;
const PANEL: f64 = 220.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 20.0;
const PLOT_W: f64 = W - LEFT - RIGHT;

fn fmt_latency(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

fn nice_max(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * p >= v {
            return m * p;
        }
    }
    10.0 * p
}

fn axes(s: &mut String, top: f64, title: &str, ymax: f64, ylabel: &dyn Fn(f64) -> String) {
    let bottom = top + PANEL;
    let _ = writeln!(
        s,
        r##"<text x="{LEFT}" y="{}" font-size="14" font-weight="bold">{title}</text>"##,
        top - 8.0
    );
    let _ = writeln!(
        s,
        r##"<rect x="{LEFT}" y="{top}" width="{}" height="{PANEL}" fill="none" stroke="#888"/>"##,
        W - LEFT - RIGHT
    );
    for k in 0..=4 {
        let y = bottom - PANEL * k as f64 / 4.0;
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" font-size="11" text-anchor="end">{}</text>"##,
            W - RIGHT,
            LEFT - 4.0,
            y + 4.0,
            ylabel(ymax * k as f64 / 4.0)
        );
    }
}

/// The SVG document for `stats`, titled `title`.
pub fn render(stats: &Stats, title: &str) -> String {
    let height = 60.0 + 3.0 * (PANEL + 70.0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" font-family="sans-serif">"##
    );
    let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let _ = writeln!(
        s,
        r##"<text x="{LEFT}" y="24" font-size="16">{} — {} replies, {:.0} qps, {} lost</text>"##,
        escape(title),
        stats.completed,
        stats.qps(),
        stats.lost
    );
    latency_panel(&mut s, stats);
    let per_s = 1.0 / BUCKET.as_secs_f64();
    let qps: Vec<f64> = stats.timeline.iter().map(|c| *c as f64 * per_s).collect();
    let maxlat: Vec<f64> = stats.timeline_max.iter().map(|v| *v as f64 / 1e9).collect();
    let n = stats.timeline.len().max(2);
    let top = |panel: usize| 60.0 + panel as f64 * (PANEL + 70.0);
    let title = "Replies per second (100 ms buckets)";
    timeline_panel(&mut s, top(1), &qps, n, title, &|v| format!("{v:.0}"));
    let title = "Largest latency per 100 ms bucket";
    timeline_panel(&mut s, top(2), &maxlat, n, title, &fmt_latency);
    s.push_str("</svg>\n");
    s
}

/// Panel 1: the latency histogram on a log scale, with p50, p99, p99.9.
fn latency_panel(s: &mut String, stats: &Stats) {
    let top = 60.0;
    let lo_exp = 3.0f64; // 1 µs in ns
    let max_ns = (stats.max.as_nanos() as f64).max(10_000.0);
    let hi_exp = (max_ns.log10() * 10.0).ceil() / 10.0 + 0.1;
    let counts = latency_bins(stats, lo_exp, hi_exp);
    let ymax = nice_max(counts.iter().copied().max().unwrap_or(0) as f64);
    axes(
        s,
        top,
        "Latency histogram (replies per bin, log-scale latency)",
        ymax,
        &|v| format!("{v:.0}"),
    );
    let bw = PLOT_W / counts.len() as f64;
    for (b, c) in counts.iter().enumerate() {
        let h = PANEL * *c as f64 / ymax;
        let _ = writeln!(
            s,
            r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#4a7bd0"/>"##,
            LEFT + b as f64 * bw,
            top + PANEL - h,
            (bw - 1.0).max(0.5),
            h
        );
    }
    let x_of = |ns: f64| LEFT + PLOT_W * ((ns.max(1.0).log10() - lo_exp) / (hi_exp - lo_exp));
    let mut e = lo_exp;
    while e <= hi_exp {
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{}" font-size="11" text-anchor="middle">{}</text>"##,
            x_of(10f64.powf(e)),
            top + PANEL + 14.0,
            fmt_latency(10f64.powf(e) / 1e9)
        );
        e += 1.0;
    }
    for (q, label, color) in [
        (0.5, "p50", "#2a2"),
        (0.99, "p99", "#d80"),
        (0.999, "p99.9", "#c22"),
    ] {
        let v = stats.percentile(q) * 1e9;
        if v > 0.0 {
            let x = x_of(v);
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{}" stroke="{color}" stroke-dasharray="4 3"/><text x="{:.1}" y="{}" font-size="11" fill="{color}">{label} {}</text>"##,
                top + PANEL,
                x + 3.0,
                top + 14.0,
                fmt_latency(v / 1e9)
            );
        }
    }
}

/// Replies per bin, ten bins a decade from 10^`lo_exp` to 10^`hi_exp` ns.
fn latency_bins(stats: &Stats, lo_exp: f64, hi_exp: f64) -> Vec<u64> {
    let bins = ((hi_exp - lo_exp) * 10.0).round().max(1.0) as usize;
    (0..bins)
        .map(|b| {
            let lo = 10f64.powf(lo_exp + b as f64 / 10.0) as u64;
            let hi = 10f64.powf(lo_exp + (b + 1) as f64 / 10.0) as u64;
            if stats.completed == 0 {
                0
            } else {
                stats
                    .histogram
                    .count_between(lo, hi.saturating_sub(1).max(lo))
            }
        })
        .collect()
}

/// A panel of one series over the run's `n` buckets, at `top`.
fn timeline_panel(
    s: &mut String,
    top: f64,
    series: &[f64],
    n: usize,
    title: &str,
    fmt: &dyn Fn(f64) -> String,
) {
    let ymax = nice_max(series.iter().copied().fold(0.0, f64::max));
    axes(s, top, title, ymax, fmt);
    let mut points = String::new();
    for (k, v) in series.iter().enumerate() {
        let x = LEFT + PLOT_W * (k as f64 + 0.5) / n as f64;
        let y = top + PANEL - PANEL * v / ymax;
        let _ = write!(points, "{x:.1},{y:.1} ");
    }
    let _ = writeln!(
        s,
        r##"<polyline points="{points}" fill="none" stroke="#4a7bd0" stroke-width="1.5"/>"##
    );
    let secs = n as f64 * BUCKET.as_secs_f64();
    let ticks = 5;
    for k in 0..=ticks {
        let t = secs * k as f64 / ticks as f64;
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{}" font-size="11" text-anchor="middle">{t:.1} s</text>"##,
            LEFT + PLOT_W * k as f64 / ticks as f64,
            top + PANEL + 14.0
        );
    }
}

fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::time::Instant;

    /// Replies with latencies from 20 µs to 8 ms over 3 s of buckets.
    fn sample() -> Stats {
        let start = Instant::now();
        let mut stats = Stats::new(start);
        let reply = [0u8, 0, 0x80, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        for k in 0..3000u64 {
            let latency = Duration::from_micros(20 + (k * 7919) % 8000);
            stats.completed(&reply, latency, start + Duration::from_millis(k));
        }
        stats.lost = 3;
        stats
    }

    #[test]
    fn the_plot_has_three_panels_and_the_percentiles() {
        let svg = render(&sample(), "a <test> run");
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>\n"));
        assert!(svg.contains("a &lt;test&gt; run — 3000 replies"), "{svg}");
        assert!(svg.contains(", 3 lost</text>"));
        assert_eq!(svg.matches("<polyline ").count(), 2, "two timelines");
        for label in ["p50 ", "p99 ", "p99.9 "] {
            assert!(svg.contains(&format!("\">{label}")), "{label} marked");
        }
        assert!(svg.contains("Latency histogram"));
        assert!(svg.contains("Replies per second"));
        assert!(svg.contains("Largest latency per 100 ms bucket"));
        // 30 buckets of 100 replies each: the timeline's axis reads 3.0 s.
        assert!(svg.contains(">3.0 s</text>"), "{svg}");
        let bars = svg.matches("fill=\"#4a7bd0\"/>").count();
        assert!(bars >= 10, "{bars} histogram bins");
    }
}
