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
    /// Series names, in legend order (the schemes). Each is drawn in its name's [`style`],
    /// so that a scheme keeps its colour from figure to figure.
    pub series: Vec<String>,
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
/// The margin the heading's lines (title, subtitle, legend) keep from each side.
const HEADER_MARGIN: f64 = 20.0;
/// A conservative width of one character, in ems, for laying out text we cannot measure:
/// Helvetica's and Arial's widest lowercase letters and digits are 0.56 em and their average
/// is about 0.5 em; bold text is allowed [`BOLD`] times as much.
pub const CHAR_EM: f64 = 0.6;
/// How much wider bold text is taken to be than regular.
pub const BOLD: f64 = 1.1;
const MAX_NOTED_BARS: usize = 12;

/// How a series is drawn: its colour, and in line figures its dash pattern and marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    /// The fill or stroke colour, `#rrggbb`.
    pub color: &'static str,
    /// The line's `stroke-dasharray` (empty: solid).
    pub dash: &'static str,
    /// The mark at each point of a line.
    pub marker: Marker,
}

/// The mark at each point of a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    /// A filled circle.
    Circle,
    /// A filled square.
    Square,
    /// A filled triangle, point up.
    Triangle,
}

const fn st(color: &'static str, dash: &'static str, marker: Marker) -> Style {
    Style {
        color,
        dash,
        marker,
    }
}

/// The fixed styles, by series name: the x86 paging schemes and the e500 hypervisor models
/// (colour-blind-safe Okabe-Ito colours), so that adding a scheme recolours no figure. The
/// colours are those the schemes had when a series' colour was its place in the list of
/// schemes. A name may appear in one architecture's figures only, so the two sets share
/// colours (x86 and e500 `pv` are one entry).
const FIXED: [(&str, Style); 14] = [
    ("native", st("#4d4d4d", "", Marker::Circle)),
    ("nested", st("#d55e00", "8 4", Marker::Square)),
    ("shadow", st("#0072b2", "2 3", Marker::Triangle)),
    ("pv", st("#009e73", "10 3 2 3", Marker::Circle)),
    ("tpt", st("#e69f00", "5 5", Marker::Square)),
    ("tpt-prototype", st("#cc79a7", "1 2", Marker::Triangle)),
    // Reserved for agile paging (docs/design.md's walkthrough), not in the palette below.
    ("agile", st("#882255", "6 2", Marker::Circle)),
    // e500 models (bare is the baseline the figure divides by).
    ("bare", st("#4d4d4d", "", Marker::Circle)),
    ("kvm", st("#d55e00", "8 4", Marker::Square)),
    ("kvm-huge", st("#0072b2", "2 3", Marker::Triangle)),
    ("pv-huge", st("#e69f00", "5 5", Marker::Square)),
    ("labt", st("#cc79a7", "1 2", Marker::Triangle)),
    ("labt-resize", st("#56b4e9", "6 2", Marker::Circle)),
    ("labt-avoid", st("#f0e442", "3 6", Marker::Square)),
];

/// Colours for names not in [`FIXED`] (Paul Tol's, none of the fixed ones), and the dash
/// patterns they cycle through.
const SPARE_COLORS: [&str; 8] = [
    "#332288", "#117733", "#44aa99", "#999933", "#aa4499", "#661100", "#6699cc", "#888888",
];
const SPARE_DASHES: [&str; 4] = ["4 2", "8 2 2 2", "2 5", "12 4"];

/// The style of the series `name`: its fixed one (the x86 schemes, agile and the e500 models),
/// or one picked by a hash of the name from spare colours, the same in every figure and
/// every run of vmlab.
pub fn style(name: &str) -> Style {
    if let Some((_, s)) = FIXED.iter().find(|(n, _)| *n == name) {
        return *s;
    }
    // FNV-1a: stable across platforms and releases, unlike std's hasher.
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    let marker = [Marker::Circle, Marker::Square, Marker::Triangle][(h / 32 % 3) as usize];
    st(
        SPARE_COLORS[(h % 8) as usize],
        SPARE_DASHES[(h / 8 % 4) as usize],
        marker,
    )
}

/// The estimated width in pixels of `text` at `size` px ([`CHAR_EM`] per character).
pub fn text_width(text: &str, size: f64, bold: bool) -> f64 {
    text.chars().count() as f64 * size * CHAR_EM * if bold { BOLD } else { 1.0 }
}

/// `text` broken at spaces into lines of at most `width` px at `size` px (a word longer than
/// a line is cut).
pub fn wrap(text: &str, width: f64, size: f64, bold: bool) -> Vec<String> {
    let per_char = size * CHAR_EM * if bold { BOLD } else { 1.0 };
    let max = ((width / per_char).floor() as usize).max(1);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let mut word: Vec<char> = word.chars().collect();
        let len = line.chars().count();
        if len > 0 && len + 1 + word.len() <= max {
            line.push(' ');
            line.extend(&word);
            continue;
        }
        if len > 0 {
            lines.push(std::mem::take(&mut line));
        }
        while word.len() > max {
            lines.push(word.drain(..max).collect());
        }
        line = word.into_iter().collect();
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

impl Figure {
    /// The figure as a standalone SVG document (deterministic: the same figure, the same bytes).
    ///
    /// The heading is laid out from estimated text widths ([`text_width`]): a title or
    /// subtitle too wide for one line wraps onto several, and the legend onto several rows.
    pub fn to_svg(&self) -> String {
        let line_width = WIDTH - 2.0 * HEADER_MARGIN;
        let title = wrap(&self.title, line_width, 20.0, true);
        let subtitle = if self.subtitle.is_empty() {
            Vec::new()
        } else {
            wrap(&self.subtitle, line_width, 13.0, false)
        };
        let rows = self.legend_rows(line_width);
        // Baselines: the title's lines 24 px apart from y = 30, the subtitle's 16 px apart
        // 22 px under it, the legend's rows 22 px apart 26 px under that; the panels start
        // 22 px under the legend. One line of each gives the old fixed 100-px heading.
        let mut y = 30.0;
        let title_ys: Vec<f64> = title.iter().map(|_| take(&mut y, 24.0)).collect();
        y += 22.0 - 24.0;
        let sub_ys: Vec<f64> = subtitle.iter().map(|_| take(&mut y, 16.0)).collect();
        y += if subtitle.is_empty() {
            22.0
        } else {
            26.0 - 16.0
        };
        let legend_ys: Vec<f64> = rows.iter().map(|_| take(&mut y, 22.0)).collect();
        let header = y - 22.0 + if rows.is_empty() { 0.0 } else { 22.0 };
        let height = header + PANEL_HEIGHT * self.panels.len() as f64;
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
        for (line, y) in title.iter().zip(&title_ys) {
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{y}" font-size="20" font-weight="bold" text-anchor="middle">{}</text>"#,
                WIDTH / 2.0,
                esc(line)
            );
        }
        for (line, y) in subtitle.iter().zip(&sub_ys) {
            let _ = writeln!(
                s,
                r##"<text x="{}" y="{y}" font-size="13" fill="#555" text-anchor="middle">{}</text>"##,
                WIDTH / 2.0,
                esc(line)
            );
        }
        s.push_str("<g class=\"legend\">\n");
        for (row, y) in rows.iter().zip(&legend_ys) {
            self.legend(&mut s, row, *y);
        }
        s.push_str("</g>\n");
        for (i, panel) in self.panels.iter().enumerate() {
            panel.render(
                &mut s,
                self.kind,
                &self.series,
                header + PANEL_HEIGHT * i as f64,
            );
        }
        s.push_str("</svg>\n");
        s
    }

    /// The legend's entries (indices into `series`) in rows no wider than `width`.
    fn legend_rows(&self, width: f64) -> Vec<Vec<usize>> {
        let mut rows: Vec<Vec<usize>> = Vec::new();
        let mut used = 0.0;
        for (i, name) in self.series.iter().enumerate() {
            let w = legend_width(name);
            match rows.last_mut() {
                Some(row) if used + w <= width => row.push(i),
                _ => {
                    rows.push(vec![i]);
                    used = 0.0;
                }
            }
            used += w;
        }
        rows
    }

    /// One row of the legend, centred, its text's baseline at `y`.
    fn legend(&self, s: &mut String, row: &[usize], y: f64) {
        // The last entry's trailing gap is not drawn.
        let total: f64 = row
            .iter()
            .map(|&i| legend_width(&self.series[i]))
            .sum::<f64>()
            - LEGEND_GAP;
        let mut x = (WIDTH - total) / 2.0;
        for &i in row {
            let name = &self.series[i];
            let style = style(name);
            let color = style.color;
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
                        dash(style)
                    );
                    marker(s, style, x + 12.0, y - 4.0);
                }
            }
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{y:.1}" font-size="14">{}</text>"#,
                x + 32.0,
                esc(name)
            );
            x += legend_width(name);
        }
    }
}

/// The space between legend entries.
const LEGEND_GAP: f64 = 22.0;

/// A legend entry's width: the swatch, a gap, the name at 14 px, and the gap to the next.
fn legend_width(name: &str) -> f64 {
    32.0 + text_width(name, 14.0, false) + LEGEND_GAP
}

/// `*y`, then advances it by `step`.
fn take(y: &mut f64, step: f64) -> f64 {
    let v = *y;
    *y += step;
    v
}

impl Panel {
    fn render(&self, s: &mut String, kind: Kind, series: &[String], top: f64) {
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
        series: &[String],
        centers: &[f64],
        group: f64,
        y_of: &dyn Fn(f64) -> f64,
        base: f64,
    ) {
        let n = series.len().max(1) as f64;
        let bar = group * 0.8 / n;
        let bars = self.values.iter().flatten().filter(|v| v.is_some()).count();
        for (i, name) in series.iter().enumerate() {
            let style = style(name);
            let color = style.color;
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

    fn lines(&self, s: &mut String, series: &[String], xs: &[f64], y_of: &dyn Fn(f64) -> f64) {
        for (i, name) in series.iter().enumerate() {
            let style = style(name);
            let color = style.color;
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
                dash(style)
            );
            for (x, y, v) in &points {
                let _ = write!(s, "<g><title>{}: {}</title>", esc(name), number(*v));
                marker(s, style, *x, *y);
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

fn marker(s: &mut String, style: Style, x: f64, y: f64) {
    let color = style.color;
    let _ = match style.marker {
        Marker::Circle => write!(
            s,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="4" fill="{color}"/>"#
        ),
        Marker::Square => write!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="8" height="8" fill="{color}"/>"#,
            x - 4.0,
            y - 4.0
        ),
        Marker::Triangle => write!(
            s,
            r#"<path d="M{x:.1},{:.1} l5,9 h-10 z" fill="{color}"/>"#,
            y - 5.5
        ),
    };
}

fn dash(style: Style) -> String {
    match style.dash {
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
            series: vec!["x\"y".into()],
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
