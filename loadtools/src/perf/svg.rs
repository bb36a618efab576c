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
    let plot_w = W - LEFT - RIGHT;

    // 1. Latency histogram on a log scale.
    let top = 60.0;
    let lo_exp = 3.0f64; // 1 µs in ns
    let max_ns = (stats.max.as_nanos() as f64).max(10_000.0);
    let hi_exp = (max_ns.log10() * 10.0).ceil() / 10.0 + 0.1;
    let bins = ((hi_exp - lo_exp) * 10.0).round().max(1.0) as usize;
    let mut counts = Vec::with_capacity(bins);
    for b in 0..bins {
        let lo = 10f64.powf(lo_exp + b as f64 / 10.0) as u64;
        let hi = 10f64.powf(lo_exp + (b + 1) as f64 / 10.0) as u64;
        let c = if stats.completed == 0 {
            0
        } else {
            stats
                .histogram
                .count_between(lo, hi.saturating_sub(1).max(lo))
        };
        counts.push(c);
    }
    let ymax = nice_max(counts.iter().copied().max().unwrap_or(0) as f64);
    axes(
        &mut s,
        top,
        "Latency histogram (replies per bin, log-scale latency)",
        ymax,
        &|v| format!("{v:.0}"),
    );
    let bw = plot_w / bins as f64;
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
    let x_of = |ns: f64| LEFT + plot_w * ((ns.max(1.0).log10() - lo_exp) / (hi_exp - lo_exp));
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

    // 2. qps over time, 3. max latency over time.
    let per_s = 1.0 / BUCKET.as_secs_f64();
    let n = stats.timeline.len().max(2);
    let secs = n as f64 / per_s;
    let qps: Vec<f64> = stats.timeline.iter().map(|c| *c as f64 * per_s).collect();
    let maxlat: Vec<f64> = stats.timeline_max.iter().map(|v| *v as f64 / 1e9).collect();
    for (i, (series, title, fmt)) in [
        (
            &qps,
            "Replies per second (100 ms buckets)",
            &(|v: f64| format!("{v:.0}")) as &dyn Fn(f64) -> String,
        ),
        (
            &maxlat,
            "Largest latency per 100 ms bucket",
            &(|v: f64| fmt_latency(v)) as &dyn Fn(f64) -> String,
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let top = 60.0 + (i + 1) as f64 * (PANEL + 70.0);
        let ymax = nice_max(series.iter().copied().fold(0.0, f64::max));
        axes(&mut s, top, title, ymax, fmt);
        let mut points = String::new();
        for (k, v) in series.iter().enumerate() {
            let x = LEFT + plot_w * (k as f64 + 0.5) / n as f64;
            let y = top + PANEL - PANEL * v / ymax;
            let _ = write!(points, "{x:.1},{y:.1} ");
        }
        let _ = writeln!(
            s,
            r##"<polyline points="{points}" fill="none" stroke="#4a7bd0" stroke-width="1.5"/>"##
        );
        let ticks = 5;
        for k in 0..=ticks {
            let t = secs * k as f64 / ticks as f64;
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{}" font-size="11" text-anchor="middle">{t:.1} s</text>"##,
                LEFT + plot_w * k as f64 / ticks as f64,
                top + PANEL + 14.0
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
