//! Plots of simulation results as self-contained SVG documents (written by hand, no dependency).
//!
//! [`throughput_svg`] draws the throughput-over-time figures of the UDT papers: one line per flow,
//! the aggregate, and the link rate.

use crate::metrics::FlowReport;
use std::fmt::Write as _;

/// Line colours of the flows, cycled (the "Tableau 10" palette).
const PALETTE: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];
/// Colour of the aggregate line.
const AGGREGATE_COLOUR: &str = "#000000";
/// Colour of the dashed link-rate line.
const LINK_COLOUR: &str = "#888888";

/// Plot area and canvas geometry, pixels.
const WIDTH: f64 = 960.0;
const MIN_HEIGHT: f64 = 520.0;
const LEFT: f64 = 75.0;
const RIGHT: f64 = 720.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 460.0;
const LEGEND_X: f64 = 740.0;
const LEGEND_ROW: f64 = 18.0;
/// Approximate number of intervals between axis ticks.
const TICK_TARGET: f64 = 6.0;

/// Renders the throughput of `flows` over time as a self-contained SVG document.
///
/// * `flows`: per-flow reports from [`crate::metrics::analyze`]; `samples_mbps[k]` (Mb/s) is
///   plotted at the middle of sample bucket `k`, `(k + ½) · sample_interval_s` seconds, and only
///   for the buckets overlapping the flow's active interval `[start_s, stop_s)` (the zero tails
///   outside it are not drawn). Non-finite samples are skipped.
/// * `sample_interval_s`: width of a sample bucket, seconds.
/// * `link_rate_mbps`: bottleneck rate, Mb/s, drawn as a dashed horizontal line (omitted if not
///   a positive finite number).
/// * `title`: plot title, escaped for XML.
///
/// The x axis shows time in seconds from 0 to the end of the longest sample series (or the
/// latest `stop_s`), the y axis throughput in Mb/s from 0 to the larger of the link rate and the
/// highest plotted value plus 5 % headroom (so the dashed link-rate line stays visible below
/// the frame), both rounded up to "nice" ticks (1, 2 or 5 × 10ᵏ) with grid lines. Each flow gets one
/// `<polyline>` (colours cycle through a fixed 10-colour palette) and a legend entry
/// `flow N (cc, RTT ms)`; the aggregate (sum of all flows' samples in every bucket of the run)
/// is one more, thicker, black `<polyline>` labelled `aggregate`. So a plot has exactly
/// `flows.len() + 1` polylines, or none when `flows` is empty (then the axes and a "no data"
/// note are drawn). A flow without drawable samples still gets an (empty) polyline and its
/// legend entry. The document starts with `<svg` and ends with `</svg>`; it never contains
/// NaN or infinite coordinates, whatever the input.
pub fn throughput_svg(
    flows: &[FlowReport],
    sample_interval_s: f64,
    link_rate_mbps: f64,
    title: &str,
) -> String {
    let dt = positive(sample_interval_s);
    let link = positive(link_rate_mbps);
    let buckets = flows
        .iter()
        .map(|f| f.samples_mbps.len())
        .max()
        .unwrap_or(0);

    // Aggregate of every bucket of the run.
    let aggregate: Vec<f64> = (0..buckets)
        .map(|k| {
            flows
                .iter()
                .filter_map(|f| f.samples_mbps.get(k).copied())
                .filter(|x| x.is_finite())
                .sum::<f64>()
        })
        .map(|x| if x.is_finite() { x } else { 0.0 })
        .collect();

    // Points (time s, rate Mb/s) of every flow.
    let flow_points: Vec<Vec<(f64, f64)>> = flows
        .iter()
        .map(|f| match dt {
            Some(dt) => (0..f.samples_mbps.len())
                .filter(|&k| {
                    let (a, b) = (k as f64 * dt, (k + 1) as f64 * dt);
                    b > f.start_s && a < f.stop_s
                })
                .filter_map(|k| {
                    let y = f.samples_mbps[k];
                    y.is_finite().then_some(((k as f64 + 0.5) * dt, y))
                })
                .collect(),
            None => Vec::new(),
        })
        .collect();
    let aggregate_points: Vec<(f64, f64)> = match dt {
        Some(dt) => aggregate
            .iter()
            .enumerate()
            .map(|(k, &y)| ((k as f64 + 0.5) * dt, y))
            .collect(),
        None => Vec::new(),
    };

    // Axes.
    let t_end = flows
        .iter()
        .map(|f| f.stop_s)
        .chain(dt.map(|dt| buckets as f64 * dt))
        .filter(|t| t.is_finite())
        .fold(0.0, f64::max);
    let (x_max, x_step) = nice_axis(t_end);
    let peak = flow_points
        .iter()
        .flatten()
        .chain(&aggregate_points)
        .map(|&(_, y)| y)
        .chain(link)
        .fold(0.0, f64::max);
    // 5 % headroom, so that a peak or the link rate never coincides with the frame.
    let (y_max, y_step) = nice_axis((peak * 1.05).min(f64::MAX / 16.0));
    let sx = |t: f64| LEFT + (t / x_max).clamp(0.0, 1.0) * (RIGHT - LEFT);
    let sy = |v: f64| BOTTOM - (v / y_max).clamp(0.0, 1.0) * (BOTTOM - TOP);

    let legend_rows =
        if flows.is_empty() { 0 } else { flows.len() + 1 } + usize::from(link.is_some());
    let height = MIN_HEIGHT.max(TOP + 10.0 + legend_rows as f64 * LEGEND_ROW + 20.0);

    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         viewBox=\"0 0 {WIDTH} {height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{height}\" fill=\"white\"/>\n\
         <text x=\"{:.1}\" y=\"28\" text-anchor=\"middle\" font-size=\"16\">{}</text>\n",
        (LEFT + RIGHT) / 2.0,
        escape_xml(title)
    );

    // Grid lines and tick labels.
    svg.push_str("<g stroke=\"#dddddd\" stroke-width=\"1\">\n");
    for v in ticks(x_max, x_step) {
        let x = sx(v);
        let _ = writeln!(
            svg,
            "<line x1=\"{x:.1}\" y1=\"{TOP}\" x2=\"{x:.1}\" y2=\"{BOTTOM}\"/>"
        );
    }
    for v in ticks(y_max, y_step) {
        let y = sy(v);
        let _ = writeln!(
            svg,
            "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{RIGHT}\" y2=\"{y:.1}\"/>"
        );
    }
    svg.push_str("</g>\n<g text-anchor=\"middle\">\n");
    for v in ticks(x_max, x_step) {
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            sx(v),
            BOTTOM + 18.0,
            tick_label(v, x_step)
        );
    }
    svg.push_str("</g>\n<g text-anchor=\"end\">\n");
    for v in ticks(y_max, y_step) {
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            LEFT - 6.0,
            sy(v) + 4.0,
            tick_label(v, y_step)
        );
    }
    let _ = write!(
        svg,
        "</g>\n\
         <rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">Time (s)</text>\n\
         <text x=\"20\" y=\"{:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 20 {:.1})\">\
         Throughput (Mb/s)</text>\n",
        RIGHT - LEFT,
        BOTTOM - TOP,
        (LEFT + RIGHT) / 2.0,
        BOTTOM + 40.0,
        (TOP + BOTTOM) / 2.0,
        (TOP + BOTTOM) / 2.0,
    );

    if let Some(link) = link {
        let y = sy(link);
        let _ = writeln!(
            svg,
            "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{RIGHT}\" y2=\"{y:.1}\" stroke=\"{LINK_COLOUR}\" \
             stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>"
        );
    }

    let polyline = |svg: &mut String, points: &[(f64, f64)], colour: &str, width: f64| {
        let coords: Vec<String> = points
            .iter()
            .map(|&(t, v)| format!("{:.1},{:.1}", sx(t), sy(v)))
            .collect();
        let _ = writeln!(
            svg,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"{width}\" \
             stroke-linejoin=\"round\" points=\"{}\"/>",
            coords.join(" ")
        );
    };
    let mut legend: Vec<(String, &str, f64, bool)> = Vec::new();
    if flows.is_empty() {
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#888888\">no data</text>",
            (LEFT + RIGHT) / 2.0,
            (TOP + BOTTOM) / 2.0
        );
    } else {
        // The aggregate first, so that the flows are drawn on top of it.
        polyline(&mut svg, &aggregate_points, AGGREGATE_COLOUR, 2.5);
        for (i, (f, points)) in flows.iter().zip(&flow_points).enumerate() {
            let colour = PALETTE[i % PALETTE.len()];
            polyline(&mut svg, points, colour, 1.2);
            let label = format!(
                "flow {} ({}, {} ms)",
                f.id,
                escape_xml(&f.cc),
                format_number(f.rtt_ms)
            );
            legend.push((label, colour, 1.2, false));
        }
        legend.push(("aggregate".into(), AGGREGATE_COLOUR, 2.5, false));
    }
    if let Some(link) = link {
        let label = format!("link rate ({} Mb/s)", format_number(link));
        legend.push((label, LINK_COLOUR, 1.5, true));
    }

    svg.push_str("<g>\n");
    for (row, (label, colour, width, dashed)) in legend.iter().enumerate() {
        let y = TOP + 10.0 + row as f64 * LEGEND_ROW;
        let dash = if *dashed {
            " stroke-dasharray=\"6 4\""
        } else {
            ""
        };
        let _ = writeln!(
            svg,
            "<line x1=\"{LEGEND_X}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{colour}\" \
             stroke-width=\"{width}\"{dash}/>\n<text x=\"{:.1}\" y=\"{:.1}\">{label}</text>",
            LEGEND_X + 24.0,
            LEGEND_X + 30.0,
            y + 4.0
        );
    }
    svg.push_str("</g>\n</svg>");
    svg
}

/// `Some(x)` if `x` is a positive finite number.
fn positive(x: f64) -> Option<f64> {
    (x.is_finite() && x > 0.0).then_some(x)
}

/// Axis maximum and tick step for data from 0 to `max`: the step is 1, 2 or 5 times a power of
/// ten giving about [`TICK_TARGET`] intervals; the maximum is `max` rounded up to a multiple of
/// the step. A non-positive or non-finite `max` gives the axis `[0, 1]`.
fn nice_axis(max: f64) -> (f64, f64) {
    let max = positive(max).unwrap_or(1.0).min(f64::MAX / 16.0);
    let raw = max / TICK_TARGET;
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let factor = if norm < 1.5 {
        1.0
    } else if norm < 3.0 {
        2.0
    } else if norm < 7.0 {
        5.0
    } else {
        10.0
    };
    let step = factor * mag;
    if !(step.is_finite() && step > 0.0) {
        return (max, max);
    }
    let axis = ((max / step) - 1e-9).ceil().max(1.0) * step;
    if axis.is_finite() && axis > 0.0 {
        (axis, step)
    } else {
        (max, max)
    }
}

/// Tick positions `0, step, 2·step, … ≤ max` (at most 100).
fn ticks(max: f64, step: f64) -> Vec<f64> {
    let n = (max / step).round();
    let n = if n.is_finite() {
        n.clamp(0.0, 100.0) as usize
    } else {
        0
    };
    (0..=n).map(|i| i as f64 * step).collect()
}

/// A tick label with as many decimals as the step needs.
fn tick_label(v: f64, step: f64) -> String {
    if !(1e-6..1e9).contains(&step) {
        return format!("{v:e}");
    }
    let decimals = (-step.log10()).ceil().clamp(0.0, 6.0) as usize;
    format!("{v:.decimals$}")
}

/// A number for a label: no decimals when integral, otherwise up to three, trailing zeros
/// removed; `?` for non-finite numbers.
fn format_number(x: f64) -> String {
    if !x.is_finite() {
        return "?".into();
    }
    if x.abs() >= 1e15 || (x != 0.0 && x.abs() < 1e-3) {
        return format!("{x:e}");
    }
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

/// Escapes text for XML content and attribute values; characters not allowed in XML 1.0
/// (control characters other than tab, newline and carriage return) are dropped.
fn escape_xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A minimal well-formedness check: one root `<svg>` element, balanced tags, attribute
    /// values quoted, only the five predefined entities, nothing after the root.
    fn check_well_formed(doc: &str) -> Result<(), String> {
        if !doc.starts_with("<svg") || !doc.ends_with("</svg>") {
            return Err("not an <svg> document".into());
        }
        let mut stack: Vec<&str> = Vec::new();
        let mut rest = doc;
        let mut closed_root = false;
        while let Some(open) = rest.find('<') {
            let text = &rest[..open];
            check_text(text)?;
            if closed_root && !text.trim().is_empty() {
                return Err("content after the root".into());
            }
            let close = rest[open..].find('>').ok_or("unterminated tag")? + open;
            let tag = &rest[open + 1..close];
            if tag.contains('<') {
                return Err(format!("'<' inside tag {tag}"));
            }
            if closed_root {
                return Err("second root element".into());
            }
            if let Some(name) = tag.strip_prefix('/') {
                match stack.pop() {
                    Some(top) if top == name.trim() => {}
                    other => return Err(format!("</{name}> closes {other:?}")),
                }
                closed_root = stack.is_empty();
            } else {
                let self_closing = tag.ends_with('/');
                let body = tag.trim_end_matches('/');
                let name = body.split_whitespace().next().ok_or("empty tag")?;
                if body.matches('"').count() % 2 != 0 {
                    return Err(format!("unbalanced quotes in <{tag}>"));
                }
                check_text(body)?;
                if self_closing {
                    closed_root = stack.is_empty();
                } else {
                    stack.push(name);
                }
            }
            rest = &rest[close + 1..];
        }
        if !stack.is_empty() || !rest.trim().is_empty() {
            return Err(format!("unclosed {stack:?}"));
        }
        Ok(())
    }

    fn check_text(text: &str) -> Result<(), String> {
        for (i, _) in text.match_indices('&') {
            let entity = &text[i..];
            if !["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"]
                .iter()
                .any(|e| entity.starts_with(e))
            {
                return Err(format!("bad entity at {entity:.10}"));
            }
        }
        if text.contains('>') {
            return Err("raw '>'".into());
        }
        Ok(())
    }

    fn polylines(doc: &str) -> Vec<&str> {
        doc.match_indices("<polyline")
            .map(|(i, _)| {
                let tail = &doc[i..];
                let start = tail.find("points=\"").map_or(0, |p| p + 8);
                let end = tail[start..].find('"').map_or(start, |e| start + e);
                &tail[start..end]
            })
            .collect()
    }

    fn report(id: usize, start: f64, stop: f64, samples: Vec<f64>) -> FlowReport {
        FlowReport {
            id,
            cc: "udt".into(),
            rtt_ms: 100.0,
            start_s: start,
            stop_s: stop,
            bytes_delivered: 0,
            avg_mbps: 0.0,
            samples_mbps: samples,
            retransmitted_pkts: 0,
            sent_pkts: 0,
        }
    }

    #[test]
    fn checker_rejects_malformed_documents() {
        assert!(check_well_formed("<svg></svg>").is_ok());
        assert!(check_well_formed("<svg><g></svg>").is_err());
        assert!(check_well_formed("<svg><text>a < b</text></svg>").is_err());
        assert!(check_well_formed("<svg><text>a & b</text></svg>").is_err());
        assert!(check_well_formed("<svg><line x=\"1/></svg>").is_err());
        assert!(check_well_formed("<svg></svg><svg></svg>").is_err());
    }

    #[test]
    fn one_polyline_per_flow_plus_aggregate() {
        let flows = vec![
            report(1, 0.0, 10.0, vec![500.0; 10]),
            report(
                2,
                2.0,
                4.0,
                vec![0.0, 0.0, 300.0, 300.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            ),
            report(
                3,
                5.0,
                10.0,
                vec![0.0, 0.0, 0.0, 0.0, 0.0, 200.0, 200.0, 200.0, 200.0, 200.0],
            ),
        ];
        let svg = throughput_svg(&flows, 1.0, 1000.0, "Three flows");
        check_well_formed(&svg).unwrap();
        let lines = polylines(&svg);
        assert_eq!(lines.len(), flows.len() + 1);
        // Aggregate over the whole run, flows only over their active buckets.
        assert_eq!(lines[0].split(' ').count(), 10);
        assert_eq!(lines[1].split(' ').count(), 10);
        assert_eq!(lines[2].split(' ').count(), 2);
        assert_eq!(lines[3].split(' ').count(), 5);
        // Distinct colours.
        for c in &PALETTE[..3] {
            assert!(svg.contains(&format!(
                "stroke=\"{c}\" stroke-width=\"1.2\" stroke-linejoin"
            )));
        }
        assert!(svg.contains("flow 1 (udt, 100 ms)"));
        assert!(svg.contains(">aggregate<"));
        assert!(svg.contains("stroke-dasharray"));
        assert!(svg.contains(">Three flows<"));
    }

    #[test]
    fn points_are_placed_on_the_axes() {
        // 0..10 s and 0..1200 Mb/s (1000 Mb/s link + headroom): the point of bucket 4
        // (t = 4.5 s, 500 Mb/s) is at 45 % of the width and 5/12 of the height.
        let flows = vec![report(1, 4.0, 5.0, {
            let mut v = vec![0.0; 10];
            v[4] = 500.0;
            v
        })];
        let svg = throughput_svg(&flows, 1.0, 1000.0, "");
        let x = LEFT + 0.45 * (RIGHT - LEFT);
        let y = BOTTOM - 500.0 / 1200.0 * (BOTTOM - TOP);
        assert_eq!(polylines(&svg)[1], format!("{x:.1},{y:.1}"));
        // Ticks: 0, 2, ..., 10 s and 0, 200, ..., 1200 Mb/s.
        assert!(svg.contains(">10</text>") && svg.contains(">1200</text>"));
        assert!(!svg.contains(">12</text>") && !svg.contains(">1400</text>"));
    }

    #[test]
    fn y_axis_extends_above_the_link_rate_for_peaks() {
        let flows = vec![report(1, 0.0, 3.0, vec![100.0, 1500.0, 100.0])];
        let svg = throughput_svg(&flows, 1.0, 1000.0, "peak");
        assert!(svg.contains(">1600</text>") && !svg.contains(">1800</text>"));
        check_well_formed(&svg).unwrap();
    }

    #[test]
    fn title_and_labels_are_escaped() {
        let mut f = report(1, 0.0, 1.0, vec![1.0]);
        f.cc = "<cc&\"x\">".into();
        let svg = throughput_svg(&[f], 1.0, 10.0, "a<b & \"c\" > 'd'\u{1}");
        check_well_formed(&svg).unwrap();
        assert!(svg.contains("a&lt;b &amp; &quot;c&quot; &gt; &apos;d&apos;</text>"));
        assert!(svg.contains("flow 1 (&lt;cc&amp;&quot;x&quot;&gt;, 100 ms)"));
        assert!(!svg.contains("a<b"));
        assert!(!svg.contains('\u{1}'));
    }

    #[test]
    fn empty_input_gives_an_empty_plot() {
        let svg = throughput_svg(&[], 1.0, 1000.0, "empty");
        check_well_formed(&svg).unwrap();
        assert!(polylines(&svg).is_empty());
        assert!(svg.contains("no data"));
        let svg = throughput_svg(&[], f64::NAN, f64::NAN, "");
        check_well_formed(&svg).unwrap();
        assert!(!svg.contains("NaN"));
    }

    #[test]
    fn garbage_numbers_do_not_leak_into_the_document() {
        let flows = vec![
            report(
                1,
                f64::NAN,
                f64::INFINITY,
                vec![f64::NAN, f64::INFINITY, -5.0, 1e308, 1e308],
            ),
            report(2, f64::NEG_INFINITY, 3.0, vec![]),
        ];
        for dt in [0.0, -1.0, f64::NAN, 1e-300, 1e300, 0.5] {
            let svg = throughput_svg(&flows, dt, f64::INFINITY, "x");
            check_well_formed(&svg).unwrap();
            assert_eq!(polylines(&svg).len(), 3);
            assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        }
    }

    #[test]
    fn nice_axes() {
        assert_eq!(nice_axis(700.0), (700.0, 100.0));
        assert_eq!(nice_axis(1000.0), (1000.0, 200.0));
        assert_eq!(nice_axis(940.0), (1000.0, 200.0));
        assert_eq!(nice_axis(0.0), (1.0, 0.2));
        assert_eq!(nice_axis(f64::NAN), (1.0, 0.2));
        let (max, step) = nice_axis(3.7);
        assert!(max >= 3.7 && (max / step - (max / step).round()).abs() < 1e-9);
        assert_eq!(tick_label(0.6000000000000001, 0.2), "0.6");
        assert_eq!(format_number(100.0), "100");
        assert_eq!(format_number(2.50), "2.5");
    }

    proptest! {
        #[test]
        fn any_input_gives_a_well_formed_svg(
            flows in prop::collection::vec(
                (
                    any::<f64>(),
                    any::<f64>(),
                    prop::collection::vec(
                        prop_oneof![3 => 0.0..2000.0f64, 1 => any::<f64>()],
                        0..50,
                    ),
                    ".*",
                ),
                0..5,
            ),
            dt in prop_oneof![3 => 0.01..10.0f64, 1 => any::<f64>()],
            link in any::<f64>(),
            title in ".*",
        ) {
            let reports: Vec<FlowReport> = flows
                .into_iter()
                .enumerate()
                .map(|(i, (a, b, s, cc))| {
                    let mut r = report(i, a, b, s);
                    r.cc = cc;
                    r
                })
                .collect();
            let svg = throughput_svg(&reports, dt, link, &title);
            prop_assert!(check_well_formed(&svg).is_ok(), "{:?}", check_well_formed(&svg));
            let expected = if reports.is_empty() { 0 } else { reports.len() + 1 };
            prop_assert_eq!(polylines(&svg).len(), expected);
            for p in polylines(&svg) {
                prop_assert!(!p.contains("NaN") && !p.contains("inf"));
            }
        }
    }
}
