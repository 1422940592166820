//! SVG figures of an experiment: grouped bars (a bar per scheme in each group) or lines (a
//! line per scheme over a size axis in log scale), with a title, axis labels with units and
//! a legend.
//!
//! A small writer of our own rather than a plotting crate: the figures need only rectangles,
//! polylines and text, the output stays byte-for-byte deterministic, and each scheme's marks
//! sit in one `<g class="series" data-series="NAME">` element that tests (and people editing
//! the SVG) can find.

use std::fmt::Write;

/// A figure: a title, a legend of series, and one or more panels stacked vertically.
pub struct Figure {
    /// The heading, centred at the top (and the SVG's `<title>`).
    pub title: String,
    /// A smaller grey line under the heading (may be empty).
    pub subtitle: String,
    /// Series names, in legend order (the schemes), each with its style: an index into the
    /// palette, so that a scheme keeps its colour from figure to figure.
    pub series: Vec<(String, usize)>,
    /// Bars or lines, for every panel.
    pub kind: Kind,
    /// The plot areas, top to bottom.
    pub panels: Vec<Panel>,
}

/// How a figure draws its values.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Grouped bars: a group per category, a bar per series.
    Bars,
    /// A line per series over a size axis.
    Lines,
}

/// One plot area.
pub struct Panel {
    /// A heading over the panel, if any.
    pub title: Option<String>,
    /// What the points along the x axis are.
    pub x: XAxis,
    /// The y axis's label, with its unit.
    pub y_label: String,
    /// Log-scale y axis (the label then says so).
    pub y_log: bool,
    /// `values[series][point]`: a point per category or size; `None` where nothing ran.
    pub values: Vec<Vec<Option<f64>>>,
    /// Text over each bar (`notes[series][point]`), shown when the panel has few bars; where
    /// a bar is missing (`None` value), its note (say, "n/a") is always shown.
    pub notes: Vec<Vec<Option<String>>>,
}

/// The x axis of a panel: its label and one point per category or size.
pub enum XAxis {
    /// Named groups (bars).
    Categories {
        /// The axis's label.
        label: String,
        /// The groups' names, in order.
        names: Vec<String>,
    },
    /// Sizes in bytes, placed on a log2 scale, labelled with their names.
    Sizes {
        /// The axis's label.
        label: String,
        /// Each point's size, in bytes.
        bytes: Vec<u64>,
        /// Each point's tick label (e.g. `4K`).
        names: Vec<String>,
    },
}

const WIDTH: f64 = 1000.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 30.0;
const PANEL_HEIGHT: f64 = 390.0;
const PLOT_TOP: f64 = 30.0;
const PLOT_HEIGHT: f64 = 290.0;
const HEADER: f64 = 100.0;
/// Colour-blind-safe (Okabe-Ito) colours, one per series in order.
const COLORS: [&str; 8] = [
    "#4d4d4d", "#d55e00", "#0072b2", "#009e73", "#e69f00", "#cc79a7", "#56b4e9", "#f0e442",
];
const DASHES: [&str; 8] = ["", "8 4", "2 3", "10 3 2 3", "5 5", "1 2", "6 2", "3 6"];
const MAX_NOTED_BARS: usize = 12;

impl Figure {
    /// The figure as a standalone SVG document (deterministic: the same figure, the same bytes).
    pub fn to_svg(&self) -> String {
        let height = HEADER + PANEL_HEIGHT * self.panels.len() as f64;
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="Helvetica, Arial, sans-serif">"#
        );
        let _ = writeln!(s, r#"<title>{}</title>"#, esc(&self.title));
        let _ = writeln!(
            s,
            r#"<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="white"/>"#
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="30" font-size="20" font-weight="bold" text-anchor="middle">{}</text>"#,
            WIDTH / 2.0,
            esc(&self.title)
        );
        let _ = writeln!(
            s,
            r##"<text x="{}" y="52" font-size="13" fill="#555" text-anchor="middle">{}</text>"##,
            WIDTH / 2.0,
            esc(&self.subtitle)
        );
        self.legend(&mut s, 78.0);
        for (i, panel) in self.panels.iter().enumerate() {
            panel.render(
                &mut s,
                self.kind,
                &self.series,
                HEADER + PANEL_HEIGHT * i as f64,
            );
        }
        s.push_str("</svg>\n");
        s
    }

    fn legend(&self, s: &mut String, y: f64) {
        let widths: Vec<f64> = self
            .series
            .iter()
            .map(|(n, _)| 34.0 + 7.5 * n.len() as f64 + 22.0)
            .collect();
        let total: f64 = widths.iter().sum();
        let mut x = (WIDTH - total) / 2.0;
        s.push_str("<g class=\"legend\">\n");
        for (i, (name, style)) in self.series.iter().enumerate() {
            let color = COLORS[style % COLORS.len()];
            match self.kind {
                Kind::Bars => {
                    let _ = writeln!(
                        s,
                        r#"<rect x="{x:.1}" y="{:.1}" width="24" height="12" fill="{color}"/>"#,
                        y - 10.0
                    );
                }
                Kind::Lines => {
                    let _ = writeln!(
                        s,
                        r#"<line x1="{x:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="2.5"{}/>"#,
                        y - 4.0,
                        x + 24.0,
                        y - 4.0,
                        dash(*style)
                    );
                    marker(s, *style, x + 12.0, y - 4.0, color);
                }
            }
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{y:.1}" font-size="14">{}</text>"#,
                x + 32.0,
                esc(name)
            );
            x += widths[i];
        }
        s.push_str("</g>\n");
    }
}

impl Panel {
    fn render(&self, s: &mut String, kind: Kind, series: &[(String, usize)], top: f64) {
        let (x0, x1) = (LEFT, WIDTH - RIGHT);
        let (y0, y1) = (top + PLOT_TOP, top + PLOT_TOP + PLOT_HEIGHT);
        if let Some(t) = &self.title {
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" font-size="15" font-weight="bold" text-anchor="middle">{}</text>"#,
                (x0 + x1) / 2.0,
                top + 18.0,
                esc(t)
            );
        }
        let values: Vec<f64> = self
            .values
            .iter()
            .flatten()
            .flatten()
            .copied()
            .filter(|v| v.is_finite())
            .collect();
        let scale = YScale::new(&values, self.y_log, kind == Kind::Bars);
        let y_of = |v: f64| y1 - scale.fraction(v) * (y1 - y0);
        // Grid and y ticks.
        s.push_str("<g class=\"y-axis\">\n");
        for t in scale.ticks() {
            let y = y_of(t);
            let _ = writeln!(
                s,
                r##"<line x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#e0e0e0"/>"##
            );
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end">{}</text>"#,
                x0 - 8.0,
                y + 4.0,
                number(t)
            );
        }
        let mid = (y0 + y1) / 2.0;
        let _ = writeln!(
            s,
            r#"<text x="22" y="{mid:.1}" font-size="14" text-anchor="middle" transform="rotate(-90 22 {mid:.1})">{}</text>"#,
            esc(&format!(
                "{}{}",
                self.y_label,
                if self.y_log { ", log scale" } else { "" }
            ))
        );
        s.push_str("</g>\n");
        // X axis.
        let (x_label, names, positions) = match &self.x {
            XAxis::Categories { label, names } => {
                let w = (x1 - x0) / names.len().max(1) as f64;
                (
                    label,
                    names,
                    (0..names.len())
                        .map(|i| x0 + w * (i as f64 + 0.5))
                        .collect::<Vec<f64>>(),
                )
            }
            XAxis::Sizes {
                label,
                bytes,
                names,
            } => {
                let logs: Vec<f64> = bytes.iter().map(|b| (*b.max(&1) as f64).log2()).collect();
                let lo = logs.iter().copied().fold(f64::INFINITY, f64::min) - 0.5;
                let hi = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max) + 0.5;
                let span = (hi - lo).max(1.0);
                (
                    label,
                    names,
                    logs.iter()
                        .map(|l| x0 + (l - lo) / span * (x1 - x0))
                        .collect(),
                )
            }
        };
        s.push_str("<g class=\"x-axis\">\n");
        let _ = writeln!(
            s,
            r#"<line x1="{x0}" y1="{y1:.1}" x2="{x1}" y2="{y1:.1}" stroke="black"/>"#
        );
        let _ = writeln!(
            s,
            r#"<line x1="{x0}" y1="{y0:.1}" x2="{x0}" y2="{y1:.1}" stroke="black"/>"#
        );
        for (name, x) in names.iter().zip(&positions) {
            let _ = writeln!(
                s,
                r#"<line x1="{x:.1}" y1="{y1:.1}" x2="{x:.1}" y2="{:.1}" stroke="black"/>"#,
                y1 + 5.0
            );
            let _ = writeln!(
                s,
                r#"<text x="{x:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"#,
                y1 + 20.0,
                esc(name)
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="14" text-anchor="middle">{}</text>"#,
            (x0 + x1) / 2.0,
            y1 + 44.0,
            esc(x_label)
        );
        s.push_str("</g>\n");
        match kind {
            Kind::Bars => self.bars(
                s,
                series,
                &positions,
                (x1 - x0) / names.len().max(1) as f64,
                &y_of,
                y1,
            ),
            Kind::Lines => self.lines(s, series, &positions, &y_of),
        }
    }

    fn bars(
        &self,
        s: &mut String,
        series: &[(String, usize)],
        centers: &[f64],
        group: f64,
        y_of: &dyn Fn(f64) -> f64,
        base: f64,
    ) {
        let n = series.len().max(1) as f64;
        let bar = group * 0.8 / n;
        let bars = self.values.iter().flatten().filter(|v| v.is_some()).count();
        for (i, (name, style)) in series.iter().enumerate() {
            let color = COLORS[style % COLORS.len()];
            let _ = writeln!(
                s,
                r#"<g class="series" data-series="{}" fill="{color}">"#,
                esc(name)
            );
            for (j, c) in centers.iter().enumerate() {
                let x = c - group * 0.4 + bar * i as f64;
                let note = self.notes.get(i).and_then(|p| p.get(j)).cloned().flatten();
                let Some(v) = self.values.get(i).and_then(|p| p.get(j)).copied().flatten() else {
                    if let Some(note) = note {
                        centered_text(s, x + bar / 2.0, base - 6.0, 11, "#777", &note);
                    }
                    continue;
                };
                let y = y_of(v).min(base);
                let _ = writeln!(
                    s,
                    r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}"><title>{}: {}</title></rect>"#,
                    (bar - 1.0).max(1.0),
                    base - y,
                    esc(name),
                    number(v)
                );
                if bars <= MAX_NOTED_BARS {
                    if let Some(note) = note {
                        centered_text(s, x + bar / 2.0, y - 5.0, 12, "#222", &note);
                    }
                }
            }
            s.push_str("</g>\n");
        }
    }

    fn lines(
        &self,
        s: &mut String,
        series: &[(String, usize)],
        xs: &[f64],
        y_of: &dyn Fn(f64) -> f64,
    ) {
        for (i, (name, style)) in series.iter().enumerate() {
            let color = COLORS[style % COLORS.len()];
            let _ = writeln!(s, r#"<g class="series" data-series="{}">"#, esc(name));
            let points: Vec<(f64, f64, f64)> = xs
                .iter()
                .enumerate()
                .filter_map(|(j, x)| {
                    self.values
                        .get(i)
                        .and_then(|p| p.get(j))
                        .copied()
                        .flatten()
                        .map(|v| (*x, y_of(v), v))
                })
                .collect();
            let path: Vec<String> = points
                .iter()
                .map(|(x, y, _)| format!("{x:.1},{y:.1}"))
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2.5"{}/>"#,
                path.join(" "),
                dash(*style)
            );
            for (x, y, v) in &points {
                let _ = write!(s, "<g><title>{}: {}</title>", esc(name), number(*v));
                marker(s, *style, *x, *y, color);
                s.push_str("</g>\n");
            }
            s.push_str("</g>\n");
        }
    }
}

/// A y axis from 0 (linear) or from the decade below the smallest value (log).
struct YScale {
    lo: f64,
    hi: f64,
    log: bool,
    step: f64,
}

impl YScale {
    fn new(values: &[f64], log: bool, headroom: bool) -> YScale {
        let max = values.iter().copied().fold(0.0f64, f64::max);
        if log {
            let min = values
                .iter()
                .copied()
                .filter(|v| *v > 0.0)
                .fold(f64::INFINITY, f64::min);
            let (min, max) = if min.is_finite() {
                (min, max)
            } else {
                (1.0, 10.0)
            };
            let lo = 10f64.powf(min.log10().floor());
            let hi = 10f64.powf(max.log10().ceil()).max(lo * 10.0);
            return YScale {
                lo,
                hi,
                log,
                step: 0.0,
            };
        }
        let max = if max > 0.0 {
            max * if headroom { 1.12 } else { 1.02 }
        } else {
            1.0
        };
        let raw = max / 5.0;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 2.5, 5.0, 10.0]
            .iter()
            .map(|m| m * mag)
            .find(|s| *s >= raw)
            .unwrap_or(10.0 * mag);
        YScale {
            lo: 0.0,
            hi: (max / step).ceil() * step,
            log,
            step,
        }
    }

    fn fraction(&self, v: f64) -> f64 {
        let f = if self.log {
            (v.max(self.lo).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        f.clamp(0.0, 1.0)
    }

    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let decades = (self.hi.log10() - self.lo.log10()).round() as i32;
            let mults: &[f64] = if decades <= 2 {
                &[1.0, 2.0, 5.0]
            } else {
                &[1.0]
            };
            let mut out = Vec::new();
            let mut d = self.lo;
            while d <= self.hi * 1.0001 {
                for m in mults {
                    if d * m <= self.hi * 1.0001 {
                        out.push(d * m);
                    }
                }
                d *= 10.0;
            }
            return out;
        }
        let n = ((self.hi - self.lo) / self.step).round() as usize;
        (0..=n).map(|i| self.lo + self.step * i as f64).collect()
    }
}

fn marker(s: &mut String, series: usize, x: f64, y: f64, color: &str) {
    let _ = match series % 3 {
        0 => write!(
            s,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="4" fill="{color}"/>"#
        ),
        1 => write!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="8" height="8" fill="{color}"/>"#,
            x - 4.0,
            y - 4.0
        ),
        _ => write!(
            s,
            r#"<path d="M{x:.1},{:.1} l5,9 h-10 z" fill="{color}"/>"#,
            y - 5.5
        ),
    };
}

fn dash(series: usize) -> String {
    match DASHES[series % DASHES.len()] {
        "" => String::new(),
        d => format!(r#" stroke-dasharray="{d}""#),
    }
}

/// A tick or value label: no more digits than it needs.
pub fn number(v: f64) -> String {
    let text = format!("{v:.*}", decimals_for(v.abs()));
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// Decimals that keep about three significant digits of a magnitude `a`.
fn decimals_for(a: f64) -> usize {
    if a >= 100.0 || a == 0.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 0.1 {
        2
    } else {
        3
    }
}

/// One precision for a whole figure's labels, so values side by side read alike: the
/// decimals [`number`] would give the smallest non-zero magnitude (0 when there is none).
pub fn figure_decimals(values: &[f64]) -> usize {
    values
        .iter()
        .map(|v| v.abs())
        .filter(|&a| a > 0.0 && a.is_finite())
        .min_by(f64::total_cmp)
        .map_or(0, decimals_for)
}

/// `v` with exactly `decimals` decimals, zeros kept (see [`figure_decimals`]).
pub fn fixed(v: f64, decimals: usize) -> String {
    format!("{v:.decimals$}")
}

/// A label centred on `x` with its baseline at `y` (a bar's value, or why a bar is missing).
fn centered_text(s: &mut String, x: f64, y: f64, size: u32, fill: &str, text: &str) {
    let _ = writeln!(
        s,
        r##"<text x="{x:.1}" y="{y:.1}" font-size="{size}" fill="{fill}" text-anchor="middle">{}</text>"##,
        esc(text)
    );
}

fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short() {
        assert_eq!(number(0.0), "0");
        assert_eq!(number(2.5), "2.5");
        assert_eq!(number(14.954), "15");
        assert_eq!(number(0.05), "0.05");
        assert_eq!(number(8655.6), "8656");
    }

    #[test]
    fn a_figure_labels_every_value_with_one_precision() {
        let values = [39.07, 14.954, 0.0, 120.0];
        let d = figure_decimals(&values);
        assert_eq!(d, 1);
        let labels: Vec<String> = values.iter().map(|&v| fixed(v, d)).collect();
        assert_eq!(labels, ["39.1", "15.0", "0.0", "120.0"]);
        assert_eq!(figure_decimals(&[8655.6, 0.05]), 3);
        assert_eq!(figure_decimals(&[0.0]), 0);
        assert_eq!(figure_decimals(&[]), 0);
    }

    #[test]
    fn linear_ticks_are_round_and_cover_the_data() {
        let s = YScale::new(&[39.07, 14.95], false, true);
        let ticks = s.ticks();
        assert_eq!(ticks[0], 0.0);
        assert!(*ticks.last().unwrap() >= 39.07 * 1.12);
        assert!(ticks.len() <= 8);
    }

    #[test]
    fn log_ticks_are_decades() {
        let s = YScale::new(&[136.0, 35000.0], true, false);
        assert_eq!(s.ticks(), vec![100.0, 1000.0, 10000.0, 100000.0]);
    }

    #[test]
    fn text_is_escaped() {
        let f = Figure {
            title: "a < b & c".into(),
            subtitle: String::new(),
            series: vec![("x\"y".into(), 0)],
            kind: Kind::Bars,
            panels: vec![Panel {
                title: None,
                x: XAxis::Categories {
                    label: "g".into(),
                    names: vec!["<1>".into()],
                },
                y_label: "s".into(),
                y_log: false,
                values: vec![vec![Some(1.0)]],
                notes: vec![vec![None]],
            }],
        };
        let svg = f.to_svg();
        assert!(
            svg.contains("a &lt; b &amp; c")
                && svg.contains("x&quot;y")
                && svg.contains("&lt;1&gt;")
        );
    }
}
