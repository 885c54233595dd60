//! `--plot`: throughput over time and the latency CDF of each server, as an SVG
//! drawn by hand (two panels of polylines with axes and a legend), so the benchmark
//! needs no plotting library or system fonts.

use std::fmt::Write;

use crate::resp_bench::ServerResult;

const W: f64 = 900.0;
const H: f64 = 360.0;
const MARGIN: f64 = 60.0;
const COLOURS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];

/// One panel: `series` of (x, y) points scaled into a box at vertical offset `top`.
fn panel(
    svg: &mut String,
    top: f64,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
    log_x: bool,
) {
    let fx = |x: f64| if log_x { x.max(1.0).log10() } else { x };
    let points = series.iter().flat_map(|(_, p)| p.iter());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
    for &(x, y) in points {
        x0 = x0.min(fx(x));
        x1 = x1.max(fx(x));
        y1 = y1.max(y);
    }
    if x0 >= x1 {
        x1 = x0 + 1.0;
    }
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.05 };
    let (left, right, bottom) = (MARGIN, W - 20.0, top + H - 40.0);
    let px = |x: f64| left + (fx(x) - x0) / (x1 - x0) * (right - left);
    let py = |y: f64| bottom - y / y1 * (bottom - top - 30.0);
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" font-size="15" text-anchor="middle">{title}</text>"#,
        W / 2.0,
        top + 18.0
    );
    let _ = writeln!(
        svg,
        r#"<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="black"/><line x1="{left}" y1="{bottom}" x2="{left}" y2="{}" stroke="black"/>"#,
        top + 30.0
    );
    for i in 0..=4 {
        let fy = y1 * i as f64 / 4.0;
        let fxv = x0 + (x1 - x0) * i as f64 / 4.0;
        let xv = if log_x { 10f64.powf(fxv) } else { fxv };
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" font-size="11" text-anchor="end">{}</text>"#,
            left - 4.0,
            py(fy) + 4.0,
            short(fy)
        );
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" font-size="11" text-anchor="middle">{}</text>"#,
            left + (right - left) * i as f64 / 4.0,
            bottom + 14.0,
            short(xv)
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" font-size="12" text-anchor="middle">{x_label}</text>"#,
        (left + right) / 2.0,
        bottom + 30.0
    );
    let _ = writeln!(
        svg,
        r#"<text x="14" y="{}" font-size="12" transform="rotate(-90 14 {})" text-anchor="middle">{y_label}</text>"#,
        (top + bottom) / 2.0,
        (top + bottom) / 2.0
    );
    for (i, (name, pts)) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let path: Vec<String> = pts
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = writeln!(
            svg,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{}"/>"#,
            path.join(" ")
        );
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" font-size="12" fill="{colour}">{name}</text>"#,
            right - 200.0,
            top + 40.0 + 16.0 * i as f64
        );
    }
}

fn short(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 1.0 || v == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

pub fn svg(results: &[ServerResult]) -> String {
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{}" font-family="sans-serif">"#,
        2.0 * H
    );
    svg.push('\n');
    let throughput: Vec<(String, Vec<(f64, f64)>)> = results
        .iter()
        .map(|r| {
            (
                r.addr.clone(),
                r.timeline_ops_per_sec
                    .iter()
                    .enumerate()
                    .map(|(i, v)| ((i + 1) as f64 * 0.1, *v))
                    .collect(),
            )
        })
        .collect();
    panel(
        &mut svg,
        0.0,
        "Throughput (median round)",
        "seconds",
        "ops/s",
        &throughput,
        false,
    );
    let cdf: Vec<(String, Vec<(f64, f64)>)> = results
        .iter()
        .map(|r| (r.addr.clone(), r.latency_cdf.clone()))
        .collect();
    panel(
        &mut svg,
        H,
        "Latency CDF (median round)",
        "latency µs (log)",
        "fraction of requests",
        &cdf,
        true,
    );
    svg.push_str("</svg>\n");
    svg
}
