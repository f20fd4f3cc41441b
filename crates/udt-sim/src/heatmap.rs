//! Heat maps of a sweep's results as self-contained SVG: one panel per (path, loss, flows)
//! row and (queue, algorithm) column, each panel a rate × RTT grid whose cells are coloured
//! by the metric and labelled with its value, so that algorithms sit side by side on the same
//! cells.

use std::fmt::Write as _;

use crate::sweep::{CellResult, SweepSpec};

/// What a heat map shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Utilization (0–1; worst phase for staggered sweeps).
    Utilization,
    /// Bottleneck loss rate (log scale).
    LossRate,
    /// Jain's fairness index.
    Jain,
    /// Smallest / largest throughput (RTT fairness).
    ThroughputRatio,
    /// TCP friendliness index T.
    Friendliness,
}

impl Metric {
    /// File-name friendly name.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Utilization => "utilization",
            Metric::LossRate => "loss_rate",
            Metric::Jain => "jain",
            Metric::ThroughputRatio => "throughput_ratio",
            Metric::Friendliness => "friendliness",
        }
    }

    fn value(self, r: &CellResult) -> Option<f64> {
        match self {
            Metric::Utilization => Some(r.utilization),
            Metric::LossRate => Some(r.loss_rate),
            Metric::Jain => r.jain,
            Metric::ThroughputRatio => r.throughput_ratio,
            Metric::Friendliness => r.friendliness,
        }
    }

    /// Goodness in [0, 1] (1 = green), for the colour.
    fn goodness(self, v: f64) -> f64 {
        let g = match self {
            Metric::Utilization => (v - 0.5) / 0.45,
            Metric::LossRate => {
                // 1e-5 or less is good, 1e-1 is bad.
                let l = v.max(1e-6).log10();
                (-1.0 - l) / 4.0
            }
            Metric::Jain | Metric::ThroughputRatio => (v - 0.5) / 0.5,
            Metric::Friendliness => 1.0 - (v - 1.0).abs(),
        };
        if g.is_finite() {
            g.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    fn label(self, v: f64) -> String {
        match self {
            Metric::LossRate if v == 0.0 => "0".to_owned(),
            Metric::LossRate => format!("{v:.0e}"),
            _ => format!("{v:.2}"),
        }
    }
}

/// Red (0) through yellow to green (1).
fn colour(g: f64) -> String {
    let (r, gr) = if g < 0.5 {
        (230.0, 60.0 + 340.0 * g)
    } else {
        (230.0 - 380.0 * (g - 0.5), 230.0)
    };
    format!(
        "rgb({:.0},{:.0},90)",
        r.clamp(0.0, 255.0),
        gr.clamp(0.0, 255.0)
    )
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn dedup(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v.dedup();
    v
}

/// Renders `metric` of `results` (from [`SweepSpec::run`]) as an SVG document.
pub fn heatmap_svg(spec: &SweepSpec, results: &[CellResult], metric: Metric) -> String {
    const CELL_W: f64 = 46.0;
    const CELL_H: f64 = 20.0;
    const PANEL_GAP: f64 = 30.0;
    const LABEL_W: f64 = 56.0;
    const HEAD_H: f64 = 34.0;
    let rates = dedup(results.iter().map(|r| r.cell.rate_mbps).collect());
    let rtts = dedup(results.iter().map(|r| r.cell.rtt_ms).collect());
    let queues = dedup(results.iter().map(|r| r.cell.queue_bdp).collect());
    let losses = dedup(results.iter().map(|r| r.cell.loss).collect());
    let flows = dedup(results.iter().map(|r| f64::from(r.cell.flows)).collect());
    let paths: Vec<&str> = spec.paths.iter().map(|p| p.name.as_str()).collect();
    let mut rows: Vec<(&str, f64, f64)> = Vec::new();
    for &p in &paths {
        for &l in &losses {
            for &f in &flows {
                rows.push((p, l, f));
            }
        }
    }
    let cols: Vec<(f64, &str)> = queues
        .iter()
        .flat_map(|&q| spec.ccs.iter().map(move |c| (q, c.as_str())))
        .collect();
    let panel_w = LABEL_W + CELL_W * rates.len() as f64;
    let panel_h = HEAD_H + CELL_H * (rtts.len() as f64 + 1.0);
    let width = 20.0 + (panel_w + PANEL_GAP) * cols.len() as f64;
    let height = 60.0 + (panel_h + PANEL_GAP) * rows.len() as f64;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(
        s,
        r#"<rect width="100%" height="100%" fill="white"/><text x="10" y="22" font-size="16">{} — {} (x: rate Mb/s, y: RTT ms)</text>"#,
        esc(&spec.name),
        metric.name()
    );
    for (ri, &(path, loss, nflows)) in rows.iter().enumerate() {
        for (ci, &(queue, cc)) in cols.iter().enumerate() {
            let x0 = 10.0 + ci as f64 * (panel_w + PANEL_GAP);
            let y0 = 40.0 + ri as f64 * (panel_h + PANEL_GAP);
            let mut head = format!("{cc} · queue {queue} BDP · {path} · loss {loss}");
            if nflows > 1.0 {
                let _ = write!(head, " · {nflows} flows");
            }
            let _ = writeln!(
                s,
                r#"<text x="{x0:.0}" y="{:.0}" font-weight="bold">{}</text>"#,
                y0 + 14.0,
                esc(&head)
            );
            for (xi, &rate) in rates.iter().enumerate() {
                let _ = writeln!(
                    s,
                    r#"<text x="{:.0}" y="{:.0}" text-anchor="middle">{rate}</text>"#,
                    x0 + LABEL_W + (xi as f64 + 0.5) * CELL_W,
                    y0 + HEAD_H - 4.0
                );
            }
            for (yi, &rtt) in rtts.iter().enumerate() {
                let y = y0 + HEAD_H + yi as f64 * CELL_H;
                let _ = writeln!(
                    s,
                    r#"<text x="{:.0}" y="{:.0}" text-anchor="end">{rtt}</text>"#,
                    x0 + LABEL_W - 6.0,
                    y + CELL_H * 0.7
                );
                for (xi, &rate) in rates.iter().enumerate() {
                    let x = x0 + LABEL_W + xi as f64 * CELL_W;
                    let r = results.iter().find(|r| {
                        r.cell.cc == cc
                            && r.cell.path == path
                            && r.cell.loss == loss
                            && f64::from(r.cell.flows) == nflows
                            && r.cell.queue_bdp == queue
                            && r.cell.rtt_ms == rtt
                            && r.cell.rate_mbps == rate
                    });
                    let (fill, text) = match r.and_then(|r| metric.value(r)) {
                        Some(v) => (colour(metric.goodness(v)), metric.label(v)),
                        None => ("#eeeeee".to_owned(), String::new()),
                    };
                    let _ = writeln!(
                        s,
                        r#"<rect x="{x:.0}" y="{y:.0}" width="{:.0}" height="{:.0}" fill="{fill}" stroke="white"/><text x="{:.0}" y="{:.0}" text-anchor="middle">{}</text>"#,
                        CELL_W,
                        CELL_H,
                        x + CELL_W / 2.0,
                        y + CELL_H * 0.7,
                        esc(&text)
                    );
                }
            }
        }
    }
    s.push_str("</svg>\n");
    s
}
