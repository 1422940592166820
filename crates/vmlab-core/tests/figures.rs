//! The SVG figures' text fits inside them: every title, subtitle, legend entry, axis label
//! and tick label of every built-in experiment's figure (quick and full) and of the e500
//! figure, its width estimated from its character count and font size at a conservative
//! width per character, lies inside the figure. And series keep their colour by name.

use std::collections::BTreeMap;
use vmlab_core::lab::e500::{LabtReport, LabtRow};
use vmlab_core::lab::plot::{self, Figure, Kind, Panel, XAxis};
use vmlab_core::lab::report::{self, Row};
use vmlab_core::lab::Experiment;
use vmlab_core::provenance::Provenance;

/// Per character, in ems: wider than Helvetica's and Arial's lowercase letters and digits
/// (at most 0.556 em), so a text that fits by this estimate fits when drawn. Bold: 10% more.
const EM_PER_CHAR: f64 = 0.6;

/// Every `<text>` of `svg` that does not fit inside the figure, described.
fn overflowing_text(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("the SVG is well-formed XML");
    let root = doc.root_element();
    let num = |n: roxmltree::Node, a: &str| -> f64 {
        n.attribute(a)
            .unwrap_or_else(|| panic!("{a} missing on {n:?}"))
            .parse()
            .expect("a number")
    };
    let (width, height) = (num(root, "width"), num(root, "height"));
    let mut bad = Vec::new();
    for t in doc.descendants().filter(|n| n.has_tag_name("text")) {
        let text: String = t.children().filter_map(|n| n.text()).collect();
        let size = num(t, "font-size");
        let bold = t.attribute("font-weight") == Some("bold");
        let w = text.chars().count() as f64 * size * EM_PER_CHAR * if bold { 1.1 } else { 1.0 };
        let (x, y) = (num(t, "x"), num(t, "y"));
        // Extent along the text's direction from its anchor.
        let along = |p: f64| match t.attribute("text-anchor") {
            Some("middle") => (p - w / 2.0, p + w / 2.0),
            Some("end") => (p - w, p),
            _ => (p, p + w),
        };
        // The y axis's label is turned a quarter (rotate(-90 x y)): it runs up the figure,
        // centred on y.
        let rotated = t
            .attribute("transform")
            .is_some_and(|a| a.starts_with("rotate(-90"));
        let ((x0, x1), (y0, y1)) = if rotated {
            ((x - size, x), along(y))
        } else {
            (along(x), (y - size, y))
        };
        if x0 < 0.0 || x1 > width || y0 < 0.0 || y1 > height {
            bad.push(format!(
                "{text:?} ({size} px) spans x {x0:.0}..{x1:.0}, y {y0:.0}..{y1:.0} of {width} x {height}"
            ));
        }
    }
    bad
}

fn assert_fits(what: &str, svg: &str) {
    let bad = overflowing_text(svg);
    assert!(
        bad.is_empty(),
        "{what}: text outside the figure:\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_experiment_figure_keeps_its_text_inside() {
    let mut checked = 0;
    for exp in Experiment::builtins().expect("the built-in experiments load") {
        for quick in [false, true] {
            // apps replays recordings that may not be on this machine: its plan reads them.
            let Ok(plan) = exp.plan(quick) else {
                assert_eq!(exp.name, "apps", "{} does not plan", exp.name);
                continue;
            };
            // No run's results: the figure's text (title, subtitle, legend, axes, groups)
            // does not depend on them, besides the value labels over bars.
            let rows: Vec<Row> = plan
                .jobs
                .iter()
                .map(|job| Row {
                    job: job.clone(),
                    report: None,
                    native_seconds: None,
                })
                .collect();
            let svg = report::figure(&exp, &plan, &rows).to_svg();
            assert_fits(&format!("{} (quick: {quick})", exp.name), &svg);
            checked += 1;
        }
    }
    assert!(checked >= 12, "only {checked} figures checked");
}

/// The subtitle `vmlab reproduce tlb --quick` wrote on one line, 191 characters, clipped at
/// both ends of the 1000-px figure: now it wraps.
#[test]
fn a_long_subtitle_wraps_onto_several_lines() {
    let subtitle = "vmlab reproduce tlb --quick: machine skylake, 2000000 measured accesses per run in 10 windows, after a warm-up to steady state (tolerance 0.2%, --quick's looser one, at most 20000000 accesses)";
    let figure = |subtitle: &str| Figure {
        title: "TLB reach: pointer chasing over a growing region".into(),
        subtitle: subtitle.into(),
        series: ["native", "nested", "shadow", "pv", "tpt", "tpt-prototype"]
            .map(String::from)
            .to_vec(),
        kind: Kind::Lines,
        panels: vec![Panel {
            title: None,
            x: XAxis::Sizes {
                label: "region size (bytes, log scale)".into(),
                bytes: vec![4096, 1 << 30],
                names: vec!["4K".into(), "1G".into()],
            },
            y_label: "ns per access".into(),
            y_log: true,
            values: vec![vec![Some(1.0), Some(100.0)]; 6],
            notes: vec![vec![None, None]; 6],
        }],
    };
    let short = figure("").to_svg();
    let long = figure(subtitle).to_svg();
    assert_fits("tlb --quick", &long);
    let doc = roxmltree::Document::parse(&long).unwrap();
    let lines: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text") && n.attribute("font-size") == Some("13"))
        .filter_map(|n| n.text())
        .collect();
    assert!(lines.len() >= 2, "one subtitle line: {lines:?}");
    assert_eq!(lines.join(" "), subtitle, "wrapping loses no word");
    // The heading grows by the extra lines, so the plot keeps its height.
    let height = |svg: &str| -> f64 {
        let doc = roxmltree::Document::parse(svg).unwrap();
        doc.root_element()
            .attribute("height")
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(height(&long) > height(&short));
}

/// A title, a legend of many long names and long axis labels still fit: the title wraps
/// and the legend takes several rows.
#[test]
fn long_titles_and_legends_fit() {
    let names: Vec<String> = (0..9)
        .map(|i| format!("a-rather-long-scheme-name-{i}"))
        .collect();
    let f = Figure {
        title: "A title long enough to need two lines at twenty pixels in bold, which is more than the figure holds".into(),
        subtitle: "x".repeat(300),
        series: names.clone(),
        kind: Kind::Bars,
        panels: vec![Panel {
            title: Some("a panel".into()),
            x: XAxis::Categories {
                label: "operation".into(),
                names: vec!["fork-exit".into(), "page-fault".into()],
            },
            y_label: "microseconds per operation".into(),
            y_log: false,
            values: vec![vec![Some(1.0), Some(2.0)]; 9],
            notes: vec![vec![Some("1.0".into()), Some("2.0".into())]; 9],
        }],
    };
    let svg = f.to_svg();
    assert_fits("long legend", &svg);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let legend = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("legend"))
        .unwrap();
    let rows: std::collections::BTreeSet<&str> = legend
        .children()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.attribute("y").unwrap())
        .collect();
    assert!(rows.len() >= 2, "one legend row for nine long names");
}

/// The e500 figure: every model of the registry, two log-scale panels.
#[test]
fn the_e500_figure_keeps_its_text_inside() {
    let configs: Vec<String> = vmlab_core::hv::e500::registry::MODELS
        .iter()
        .map(|m| m.name.to_string())
        .collect();
    let benches = [
        "boot",
        "null_syscall",
        "stat",
        "open_close",
        "sig_install",
        "sig_handle",
        "fork_exit",
        "fork_exec",
        "ctx_2p_0k",
        "ctx_16p_64k",
        "pagefault",
        "mmap",
    ];
    let rows = benches
        .iter()
        .flat_map(|b| {
            configs.iter().map(move |c| LabtRow {
                benchmark: b.to_string(),
                config: c.clone(),
                ops: 1000,
                instructions: 1_000_000,
                seconds: 0.001,
                ms_per_op: 0.001,
                slowdown: 12.5,
                added_cycles: 1000.0,
                exits: 5000,
                exits_per_op: 5.0,
                exits_by_reason: BTreeMap::new(),
                work: BTreeMap::new(),
                added_insns: 0,
                tracing_faults: 0,
                splits: 0,
                merges: 0,
                extra: BTreeMap::new(),
                exit_pcs: 10,
            })
        })
        .collect();
    let r = LabtReport {
        experiment: "labt".into(),
        provenance: Provenance {
            vmlab_version: "0".into(),
            git_commit: "unknown".into(),
            command: "vmlab reproduce labt".into(),
            machine: "e500".into(),
            machine_fingerprint: "0".into(),
            seed: 0,
            inputs: Vec::new(),
            overrides: Default::default(),
            profile: serde_json::Value::Null,
        },
        trace: "t".into(),
        trace_meta: String::new(),
        frequency_mhz: 1000.0,
        cpi: 1.25,
        configs,
        rows,
        pc_distribution: Vec::new(),
        replay_check: None,
    };
    assert_fits("labt", &r.figure().to_svg());
}

/// Colours are keyed by name: the schemes keep the colours they had (their place in the
/// list of schemes, before agile), a new name does not take one of theirs, and agile has
/// its own.
#[test]
fn series_colours_are_keyed_by_name() {
    let fixed = [
        ("native", "#4d4d4d"),
        ("nested", "#d55e00"),
        ("shadow", "#0072b2"),
        ("pv", "#009e73"),
        ("tpt", "#e69f00"),
        ("tpt-prototype", "#cc79a7"),
        // The e500 models, as the labt figure coloured them.
        ("kvm", "#d55e00"),
        ("kvm-huge", "#0072b2"),
        ("pv-huge", "#e69f00"),
        ("labt", "#cc79a7"),
        ("labt-resize", "#56b4e9"),
        ("labt-avoid", "#f0e442"),
    ];
    for (name, color) in fixed {
        assert_eq!(plot::style(name).color, color, "{name}");
    }
    let x86: Vec<&str> = fixed[..6].iter().map(|(_, c)| *c).collect();
    let agile = plot::style("agile").color;
    assert!(!x86.contains(&agile), "agile shares a scheme's colour");
    for name in ["agile-v2", "ept-huge", "hybrid", "x", ""] {
        let s = plot::style(name);
        assert_eq!(s, plot::style(name), "{name}: not deterministic");
        assert!(
            !x86.contains(&s.color) && s.color != agile,
            "{name} takes a scheme's colour {}",
            s.color
        );
    }
    // A figure draws each series in its name's colour, wherever it sits in the legend.
    let svg = |series: &[&str]| {
        Figure {
            title: "t".into(),
            subtitle: String::new(),
            series: series.iter().map(|s| s.to_string()).collect(),
            kind: Kind::Bars,
            panels: vec![Panel {
                title: None,
                x: XAxis::Categories {
                    label: "g".into(),
                    names: vec!["a".into()],
                },
                y_label: "s".into(),
                y_log: false,
                values: vec![vec![Some(1.0)]; series.len()],
                notes: vec![vec![None]; series.len()],
            }],
        }
        .to_svg()
    };
    let fill_of = |svg: &str, name: &str| -> String {
        let doc = roxmltree::Document::parse(svg).unwrap();
        doc.descendants()
            .find(|n| n.attribute("data-series") == Some(name))
            .and_then(|n| n.attribute("fill"))
            .unwrap_or_else(|| panic!("no series {name}"))
            .to_string()
    };
    let before = svg(&["native", "nested", "tpt"]);
    let after = svg(&["native", "agile", "nested", "shadow", "tpt"]);
    for name in ["native", "nested", "tpt"] {
        assert_eq!(fill_of(&before, name), fill_of(&after, name), "{name}");
    }
}
