//! An experiment's report as one self-contained HTML page, for people to read: the heading,
//! the figure (its SVG inline), a table per metric (a row per workload and page sizes, a
//! column per scheme), every run's main numbers and specification, the combinations not
//! run, the method and the provenance.
//!
//! It renders from the serializable [`ExperimentReport`] (what `NAME.json` holds) and the
//! figure's SVG text, so a results directory can be rendered long after the runs. The page
//! fetches nothing: the style sheet is inline, there is no script, no web font and no link
//! to anything but the page itself, so it opens offline and from an archive. Every piece of
//! text is escaped; the figure is embedded only if it looks like what
//! [`plot`](crate::lab::plot) writes (an `<svg>` element without scripts or event handlers).
//! The output is deterministic: the same report and figure, the same bytes.

use crate::lab::report::ExperimentReport;
use crate::lab::Metric;
use crate::stats::RunReport;
use std::fmt::Write;

/// The page's style sheet: a readable column, tables that wrap their text rather than
/// overflow, and a figure scaled to the column.
const STYLE: &str = "\
*{box-sizing:border-box}
body{font-family:Helvetica,Arial,sans-serif;color:#222;background:#fff;margin:0 auto;padding:16px 24px 40px;max-width:1100px;line-height:1.4;font-size:15px}
h1{font-size:24px;margin:8px 0 4px}
h2{font-size:19px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
p.lead{color:#555;margin:0 0 12px}
figure{margin:12px 0}
figure svg{display:block;max-width:100%;height:auto;border:1px solid #eee}
figcaption{color:#555;font-size:13px;margin-top:4px}
table{border-collapse:collapse;width:100%;font-size:13px;margin:4px 0 8px}
th,td{border:1px solid #ddd;padding:3px 6px;vertical-align:top;overflow-wrap:break-word}
th{background:#f4f4f4;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr:nth-child(even) td{background:#fafafa}
dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:3px 14px;margin:6px 0}
dt{font-weight:bold}
dd{margin:0;overflow-wrap:anywhere}
code{font-family:Menlo,Consolas,monospace;font-size:13px;overflow-wrap:anywhere}
td code{font-size:12px}
.note{color:#555;font-size:13px}
";

/// The metrics with a table of their own, when some run has a value for them.
const METRICS: [Metric; 7] = [
    Metric::Seconds,
    Metric::Slowdown,
    Metric::NsPerAccess,
    Metric::UsPerFork,
    Metric::UsPerIter,
    Metric::TlbMissesPerKiloAccess,
    Metric::VmExits,
];

/// The page for `report`, with `figure` (the SVG that `vmlab reproduce` wrote beside the
/// JSON) inline when given.
pub fn render(report: &ExperimentReport, figure: Option<&str>) -> String {
    let mut h = String::new();
    let name = &report.experiment;
    let quick = if report.quick { " --quick" } else { "" };
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"vmlab {}\">\n<title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n",
        esc(&report.provenance.vmlab_version),
        esc(&format!("{name}: {}", report.title))
    );
    let _ = writeln!(h, "<h1>{}</h1>", esc(&report.title));
    let _ = writeln!(
        h,
        "<p class=\"lead\">Experiment <code>{}</code>{}: {} run(s) of {} scheme(s) on machine <code>{}</code>, seed {}.</p>",
        esc(name),
        if report.quick { " (quick)" } else { "" },
        report.runs.len(),
        report.schemes.len(),
        esc(&report.machine),
        report.seed
    );

    // The figure.
    match figure.map(inline_svg) {
        Some(Some(svg)) => {
            let _ = writeln!(
                h,
                "<figure>\n{svg}\n<figcaption>The figure of <code>vmlab reproduce {}{quick}</code> ({}.svg).</figcaption>\n</figure>",
                esc(name),
                esc(name)
            );
        }
        Some(None) => {
            let _ = writeln!(
                h,
                "<p class=\"note\">{}.svg is not embedded: it is not a figure vmlab writes (an &lt;svg&gt; element without scripts).</p>",
                esc(name)
            );
        }
        None => {
            let _ = writeln!(
                h,
                "<p class=\"note\">No figure: {}.svg was not found beside the report.</p>",
                esc(name)
            );
        }
    }

    // A table per metric.
    let groups = groups(&report.runs);
    h.push_str("<h2 id=\"results\">Results</h2>\n");
    for metric in METRICS {
        let cells: Vec<Vec<Option<String>>> = groups
            .iter()
            .map(|g| {
                report
                    .schemes
                    .iter()
                    .map(|s| {
                        let r = g.run(s)?;
                        let v = metric.value(r, g.native_seconds())?;
                        Some(metric.format_ci(v, metric.ci(r)))
                    })
                    .collect()
            })
            .collect();
        if cells.iter().flatten().all(Option::is_none) {
            continue;
        }
        let _ = writeln!(h, "<h3>{}</h3>", esc(metric.label()));
        h.push_str("<table>\n<thead><tr><th>workload</th><th>pages (guest / host)</th>");
        for s in &report.schemes {
            let _ = write!(h, "<th>{}</th>", esc(s));
        }
        h.push_str("</tr></thead>\n<tbody>\n");
        for (g, row) in groups.iter().zip(&cells) {
            let _ = write!(
                h,
                "<tr><td><code>{}</code></td><td>{} / {}</td>",
                esc(&g.workload),
                esc(&g.guest_pages),
                esc(g.host_pages.as_deref().unwrap_or("-"))
            );
            for (s, cell) in report.schemes.iter().zip(row) {
                let text = match cell {
                    Some(c) => esc(c),
                    None if is_skipped(report, g, s) => "n/a".to_string(),
                    None => "-".to_string(),
                };
                let _ = write!(h, "<td class=\"num\">{text}</td>");
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</tbody>\n</table>\n");
    }
    h.push_str(
        "<p class=\"note\">±: the half-width of a 95% Student-t interval over the run's measured windows. \
         Slowdown: time over native's for the same workload and guest pages. \
         n/a: not run (see below); -: does not apply.</p>\n",
    );
    if !report.skipped.is_empty() {
        h.push_str("<h3>Not run</h3>\n<table>\n<thead><tr><th>workload</th><th>scheme</th><th>pages (guest / host)</th><th>why</th></tr></thead>\n<tbody>\n");
        for s in &report.skipped {
            let _ = writeln!(
                h,
                "<tr><td><code>{}</code></td><td>{}</td><td>{} / {}</td><td>{}</td></tr>",
                esc(&s.workload),
                esc(&s.paging),
                esc(&s.guest_pages),
                esc(&s.host_pages),
                esc(&s.reason)
            );
        }
        h.push_str("</tbody>\n</table>\n");
    }

    // Every run.
    h.push_str("<h2 id=\"runs\">Runs</h2>\n<table>\n<thead><tr><th>#</th><th>scheme</th><th>workload</th><th>pages (guest / host)</th><th>time (s)</th><th>ns / access</th><th>TLB misses / 1000</th><th>refs / walk</th><th>VM exits</th><th>page faults</th><th>bound</th><th>warm-up</th></tr></thead>\n<tbody>\n");
    for (i, r) in report.runs.iter().enumerate() {
        let opt = |m: Metric| {
            m.value(r, None)
                .map_or("-".to_string(), |v| esc(&m.format_ci(v, m.ci(r))))
        };
        let _ = writeln!(
            h,
            "<tr><td class=\"num\">{}</td><td>{}</td><td><code>{}</code></td><td>{} / {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{} ({})</td></tr>",
            i + 1,
            esc(&r.paging),
            esc(&r.workload),
            esc(&r.guest_pages),
            esc(&r.host_pages),
            opt(Metric::Seconds),
            opt(Metric::NsPerAccess),
            opt(Metric::TlbMissesPerKiloAccess),
            opt(Metric::WalkRefsPerWalk),
            r.vm_exits,
            r.page_faults,
            esc(&r.cycles_breakdown.bound),
            r.accesses_warmup,
            esc(&r.sample.warmup_end)
        );
    }
    h.push_str("</tbody>\n</table>\n<p class=\"note\">warm-up: accesses run before measuring, and why the warm-up stopped. \
        Every counter of every run is in the JSON report.</p>\n");
    h.push_str("<h3>Run specifications</h3>\n<table>\n<thead><tr><th>#</th><th>scheme</th><th>workload</th><th>machine</th><th>pages (guest / host)</th><th>seed</th><th>pretouch</th><th>measured accesses (of the workload's)</th></tr></thead>\n<tbody>\n");
    for (i, r) in report.runs.iter().enumerate() {
        let _ = writeln!(
            h,
            "<tr><td class=\"num\">{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{} / {}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{} ({})</td></tr>",
            i + 1,
            esc(&r.paging),
            esc(&r.workload),
            esc(&r.machine),
            esc(&r.guest_pages),
            esc(&r.host_pages),
            r.seed,
            if r.pretouch { "yes" } else { "no" },
            r.accesses_simulated,
            r.accesses_total,
        );
    }
    h.push_str("</tbody>\n</table>\n");
    // How each run sampled, once per distinct method.
    let mut methods: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, r) in report.runs.iter().enumerate() {
        match methods.iter_mut().find(|(m, _)| *m == r.sample_method) {
            Some((_, runs)) => runs.push(i + 1),
            None => methods.push((&r.sample_method, vec![i + 1])),
        }
    }
    for (method, runs) in &methods {
        let which = if runs.len() == report.runs.len() {
            "every run".to_string()
        } else {
            let n: Vec<String> = runs.iter().map(|i| format!("#{i}")).collect();
            format!("runs {}", n.join(", "))
        };
        let _ = writeln!(
            h,
            "<p class=\"note\">Sample of {which}: {}.</p>",
            esc(method)
        );
    }

    // How it was run.
    h.push_str("<h2 id=\"method\">Method</h2>\n<dl>\n");
    let accesses = if report.accesses == 0 {
        "all (the whole workload, from cold)".to_string()
    } else {
        report.accesses.to_string()
    };
    for (k, v) in [
        ("experiment", format!("<code>{}</code>", esc(name))),
        (
            "variant",
            if report.quick { "quick" } else { "full" }.to_string(),
        ),
        ("machine", format!("<code>{}</code>", esc(&report.machine))),
        ("seed", report.seed.to_string()),
        ("measured accesses per run", accesses),
        ("warm-up cap", report.warmup.to_string()),
        ("tolerance", format!("{}%", report.tolerance * 100.0)),
        ("sample", esc(&report.sample_method)),
        ("warm-up used", esc(&report.warmup_used)),
        (
            "schemes",
            report
                .schemes
                .iter()
                .map(|s| esc(s))
                .collect::<Vec<_>>()
                .join(", "),
        ),
    ] {
        let _ = writeln!(h, "<dt>{k}</dt><dd>{v}</dd>");
    }
    h.push_str("</dl>\n");
    let p = &report.provenance;
    h.push_str("<h2 id=\"provenance\">Provenance</h2>\n<dl>\n");
    for (k, v) in [
        ("command", format!("<code>{}</code>", esc(&p.command))),
        ("vmlab", esc(&p.vmlab_version)),
        ("git commit", format!("<code>{}</code>", esc(&p.git_commit))),
        (
            "machine profile",
            format!(
                "<code>{}</code>, fingerprint <code>{}</code>",
                esc(&p.machine),
                esc(&p.machine_fingerprint)
            ),
        ),
        ("seed", p.seed.to_string()),
        (
            "profile overrides",
            if p.overrides.is_empty() {
                "none".to_string()
            } else {
                p.overrides
                    .iter()
                    .map(|(k, v)| format!("<code>{}={}</code>", esc(k), esc(v)))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        ),
        (
            "sweep",
            if report.sweep.is_empty() {
                "none".to_string()
            } else {
                report
                    .sweep
                    .iter()
                    .map(|(k, v)| format!("<code>{}</code> over {}", esc(k), esc(&v.join(", "))))
                    .collect::<Vec<_>>()
                    .join("; ")
            },
        ),
    ] {
        let _ = writeln!(h, "<dt>{k}</dt><dd>{v}</dd>");
    }
    h.push_str("</dl>\n");
    if !p.inputs.is_empty() {
        h.push_str("<h3>Inputs</h3>\n<table>\n<thead><tr><th>file</th><th>bytes</th><th>fingerprint</th><th>header</th></tr></thead>\n<tbody>\n");
        for input in &p.inputs {
            let _ = writeln!(
                h,
                "<tr><td><code>{}</code></td><td class=\"num\">{}</td><td><code>{}</code></td><td><code>{}</code></td></tr>",
                esc(&input.path),
                input.bytes,
                esc(&input.fingerprint),
                esc(&input.header.to_string())
            );
        }
        h.push_str("</tbody>\n</table>\n");
    }
    let _ = writeln!(
        h,
        "<p class=\"note\">Rendered from {}.json by <code>vmlab report</code>; {}.json has every counter of every run, {}.csv a row per run.</p>\n</body>\n</html>",
        esc(name),
        esc(name),
        esc(name)
    );
    h
}

/// A row of the metric tables: a workload and page sizes, with each scheme's run.
struct Group<'a> {
    workload: String,
    guest_pages: String,
    /// `None` for a group of native runs alone.
    host_pages: Option<String>,
    runs: Vec<&'a RunReport>,
    /// Native's run of the same workload and guest pages (native has no host pages, and
    /// one run stands for every host page size).
    native: Option<&'a RunReport>,
}

impl<'a> Group<'a> {
    fn run(&self, scheme: &str) -> Option<&'a RunReport> {
        if scheme == "native" {
            return self.native;
        }
        self.runs.iter().copied().find(|r| r.paging == scheme)
    }

    fn native_seconds(&self) -> Option<f64> {
        self.native.map(|r| r.seconds)
    }
}

/// The runs by workload, guest pages and host pages, in the order they first appear.
fn groups(runs: &[RunReport]) -> Vec<Group<'_>> {
    let host = |r: &RunReport| (r.host_pages != "-").then(|| r.host_pages.clone());
    let mut out: Vec<Group> = Vec::new();
    for r in runs {
        let key = (&r.workload, &r.guest_pages, host(r));
        match out.iter_mut().find(|g| {
            (&g.workload, &g.guest_pages, g.host_pages.clone()) == (key.0, key.1, key.2.clone())
        }) {
            Some(g) => g.runs.push(r),
            None => out.push(Group {
                workload: r.workload.clone(),
                guest_pages: r.guest_pages.clone(),
                host_pages: key.2,
                runs: vec![r],
                native: None,
            }),
        }
    }
    // Native's run joins every group of its workload and guest pages; its own group stays
    // only when no other scheme ran there.
    let natives: Vec<&RunReport> = runs.iter().filter(|r| r.paging == "native").collect();
    for g in &mut out {
        g.native = natives
            .iter()
            .copied()
            .find(|n| n.workload == g.workload && n.guest_pages == g.guest_pages);
    }
    let virtualized: Vec<(String, String)> = out
        .iter()
        .filter(|g| g.host_pages.is_some())
        .map(|g| (g.workload.clone(), g.guest_pages.clone()))
        .collect();
    out.retain(|g| {
        g.host_pages.is_some()
            || !virtualized.contains(&(g.workload.clone(), g.guest_pages.clone()))
    });
    out
}

/// Whether the report lists `scheme` in `group` as not run.
fn is_skipped(report: &ExperimentReport, group: &Group, scheme: &str) -> bool {
    report.skipped.iter().any(|s| {
        s.workload == group.workload
            && s.paging == scheme
            && s.guest_pages == group.guest_pages
            && Some(&s.host_pages) == group.host_pages.as_ref()
    })
}

/// `svg` from its `<svg` on, if it is an SVG document without scripts, foreign content or
/// event handlers (what [`plot`](crate::lab::plot) writes); `None` otherwise.
fn inline_svg(svg: &str) -> Option<&str> {
    let start = svg.find("<svg")?;
    // Only an XML declaration, a doctype or comments may come before the element.
    let before = svg[..start].trim();
    if !before.is_empty() && !before.starts_with("<?xml") && !before.starts_with("<!--") {
        return None;
    }
    let body = svg[start..].trim_end();
    let lower = body.to_ascii_lowercase();
    // An attribute named on... (onload=, onclick=) in any tag.
    let handler = lower.split('<').skip(1).any(|tag| {
        let tag = tag.split('>').next().unwrap_or("");
        tag.match_indices(|c: char| c.is_ascii_whitespace())
            .any(|(i, _)| {
                let rest = &tag[i + 1..];
                let name = rest.bytes().take_while(u8::is_ascii_alphanumeric).count();
                rest.starts_with("on") && rest[name..].trim_start().starts_with('=')
            })
    });
    let unsafe_content = [
        "<script",
        "<foreignobject",
        "javascript:",
        "<iframe",
        "href=",
    ]
    .iter()
    .any(|bad| lower.contains(bad));
    (body.ends_with("</svg>") && !handler && !unsafe_content).then_some(body)
}

/// `text` with the characters that mean something in HTML replaced by their references.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::report::SkippedRun;
    use crate::provenance::Provenance;

    fn run(paging: &str, host: &str, seconds: f64) -> RunReport {
        RunReport {
            workload: "tlb-bench:size=64M".into(),
            paging: paging.into(),
            machine: "skylake".into(),
            guest_pages: "4k".into(),
            host_pages: host.into(),
            seconds,
            accesses_simulated: 1000,
            ns_per_access: seconds,
            ..RunReport::default()
        }
    }

    fn report(title: &str) -> ExperimentReport {
        ExperimentReport {
            experiment: "demo".into(),
            title: title.into(),
            provenance: Provenance {
                vmlab_version: "0.1.0".into(),
                git_commit: "abc".into(),
                command: "vmlab reproduce demo --quick".into(),
                machine: "skylake".into(),
                machine_fingerprint: "f00".into(),
                seed: 1,
                inputs: Vec::new(),
                overrides: Default::default(),
                profile: serde_json::Value::Null,
            },
            quick: true,
            machine: "skylake".into(),
            seed: 1,
            accesses: 1000,
            warmup: 0,
            tolerance: 0.002,
            sample_method: "a sample".into(),
            warmup_used: String::new(),
            schemes: vec!["native".into(), "nested".into(), "tpt".into()],
            skipped: vec![SkippedRun {
                workload: "tlb-bench:size=64M".into(),
                paging: "tpt".into(),
                guest_pages: "4k".into(),
                host_pages: "2m".into(),
                reason: "guest pages <= host pages".into(),
            }],
            runs: vec![
                run("native", "-", 1.0),
                run("nested", "4k", 2.0),
                run("tpt", "4k", 1.5),
                run("native", "-", 1.0),
                run("nested", "2m", 1.25),
            ],
            overrides: Default::default(),
            sweep: Default::default(),
            specs: Vec::new(),
        }
    }

    #[test]
    fn text_is_escaped() {
        let html = render(&report("<script>alert('x')</script> & \"q\""), None);
        assert!(!html.contains("<script"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;")
        );
    }

    #[test]
    fn native_joins_each_host_page_size_and_skips_show() {
        let r = report("t");
        let groups = groups(&r.runs);
        let hosts: Vec<Option<&str>> = groups.iter().map(|g| g.host_pages.as_deref()).collect();
        assert_eq!(hosts, [Some("4k"), Some("2m")]);
        assert!(groups.iter().all(|g| g.native_seconds() == Some(1.0)));
        let html = render(&r, None);
        // The slowdown table: nested 2.00 and 1.25 over native, tpt 1.50 and not run.
        let slowdown = &html[html.find("slowdown over native").unwrap()..];
        let table = &slowdown[..slowdown.find("</table>").unwrap()];
        for cell in ["2.00", "1.50", "1.25", "n/a"] {
            assert!(table.contains(&format!(">{cell}<")), "{cell} in {table}");
        }
    }

    #[test]
    fn only_plain_svg_is_embedded() {
        let svg = "<svg xmlns=\"http://www.w3.org/2000/svg\"><text>a</text></svg>\n";
        assert_eq!(inline_svg(svg), Some(svg.trim_end()));
        assert!(render(&report("t"), Some(svg)).contains("<text>a</text>"));
        for bad in [
            "<svg><script>alert(1)</script></svg>",
            "<svg onload=\"alert(1)\"></svg>",
            "<svg><a href=\"https://example.com\">x</a></svg>",
            "<html><svg></svg></html>",
            "not svg",
        ] {
            assert_eq!(inline_svg(bad), None, "{bad}");
            assert!(!render(&report("t"), Some(bad)).contains(bad));
        }
    }

    #[test]
    fn nothing_is_fetched() {
        let html = render(&report("t"), None);
        for remote in [
            "http:", "https:", "<link", "<script", "@import", "url(", "src=",
        ] {
            assert!(!html.contains(remote), "{remote}");
        }
    }
}
