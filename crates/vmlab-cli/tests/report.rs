//! Integration tests of `vmlab report DIR` and `vmlab reproduce --html`: a small experiment
//! of our own runs once through the real binary (its title full of characters HTML must
//! escape; two guest and two host page sizes, so that some combinations are not run), and its
//! page is checked for content, for fetching nothing, and, in headless Chromium, for
//! rendering (a screenshot that is not blank and shows the schemes' colours) with nothing
//! clipped (a script run in the page checks every element's box against its container's).
//!
//! Without Chromium (`apt-get install chromium`) the browser tests say so and pass, except
//! in CI (`CI` set), where they fail: `.ci/run` installs it.

mod common;

use common::{expect_usage_error, vmlab, vmlab_ok};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const SCHEMES: [&str; 6] = ["native", "nested", "shadow", "pv", "tpt", "tpt-prototype"];
const TITLE: &str = r#"a <small> & "quoted" experiment"#;

fn tmp(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("report")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The results directory (`DIR/mine/mine.{csv,json,svg,html}`) of one `vmlab reproduce
/// mine.toml --quick --html`, made once for every test.
fn results() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tmp("results");
        let toml = dir.join("mine.toml");
        std::fs::write(
            &toml,
            format!(
                r#"name = "mine"
title = {TITLE:?}
summary = "tlb-bench 16M under every scheme, guest 4k/2m on host 4k/2m"
duration = "~2 s"
schemes = {SCHEMES:?}
guest_pages = ["4k", "2m"]
host_pages = ["4k", "2m"]
[[workloads]]
spec = "tlb-bench:size=16M,accesses=20000"
[sample]
accesses = 20000
warmup = 1000
[quick]
accesses = 10000
warmup = 1000
[report]
tables = ["seconds", "slowdown"]
plot = {{ kind = "bars", metric = "seconds" }}
"#
            ),
        )
        .unwrap();
        let results = dir.join("results");
        let out = results.join("mine");
        let stdout = vmlab_ok(&[
            "reproduce",
            toml.to_str().unwrap(),
            "--quick",
            "--html",
            "--out",
            out.to_str().unwrap(),
            "-j",
            "2",
        ]);
        assert!(
            stdout.contains(&format!("wrote {}", out.join("mine.html").display())),
            "{stdout}"
        );
        results
    })
}

fn page() -> String {
    read(&results().join("mine/mine.html"))
}

#[test]
fn the_page_holds_the_tables_the_figure_the_runs_and_the_provenance() {
    let html = page();
    let json: Value = serde_json::from_str(&read(&results().join("mine/mine.json"))).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    // The title, escaped, as the heading.
    assert!(
        html.contains("<h1>a &lt;small&gt; &amp; &quot;quoted&quot; experiment</h1>"),
        "{html}"
    );
    assert!(!html.contains(TITLE));
    // The figure, inline, exactly as written to mine.svg.
    let svg = read(&results().join("mine/mine.svg"));
    assert!(html.contains(svg.trim_end()), "the SVG is not inline");
    // A column per scheme in the metric tables.
    for s in SCHEMES {
        assert!(html.contains(&format!("<th>{s}</th>")), "{s}");
    }
    for heading in ["<h3>time (s)</h3>", "<h3>slowdown over native (x)</h3>"] {
        assert!(html.contains(heading), "{heading}");
    }
    // Guest 2M pages on 4K host pages: pv and the TPT schemes do not run there.
    let skipped = json["skipped"].as_array().unwrap();
    assert!(!skipped.is_empty());
    assert!(html.contains(">n/a<") && html.contains("<h3>Not run</h3>"));
    // A line per run in the runs table and in the run specifications.
    let runs = json["runs"].as_array().unwrap();
    let section = |from: &str| {
        let s = &html[html.find(from).unwrap()..];
        s[..s.find("</table>").unwrap()].to_string()
    };
    for table in [
        section("<h2 id=\"runs\">"),
        section("<h3>Run specifications"),
    ] {
        assert_eq!(table.matches("<tr>").count(), runs.len() + 1, "{table}");
    }
    // Each run's time as the JSON has it, to the table's 3 decimals at least.
    for r in runs {
        let seconds = r["seconds"].as_f64().unwrap();
        let text = format!("{seconds:.3}");
        assert!(
            html.contains(&text[..text.len() - 1]),
            "{seconds} not in the page"
        );
    }
    // The provenance.
    let command = json["provenance"]["command"].as_str().unwrap();
    assert!(command.contains("--html"));
    for field in ["git_commit", "machine_fingerprint", "vmlab_version"] {
        let v = json["provenance"][field].as_str().unwrap();
        assert!(html.contains(v), "{field} {v}");
    }
}

#[test]
fn the_page_fetches_nothing() {
    let html = page();
    // The SVG namespace is a name, not an address the browser loads.
    let without_ns = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for remote in [
        "http:", "https:", "//", "<link", "<script", "<img", "<iframe", "@import", "url(", "src=",
    ] {
        assert!(!without_ns.contains(remote), "the page has {remote}");
    }
}

#[test]
fn report_renders_a_results_tree_as_reproduce_html_does() {
    // A copy of the results without the page, and a JSON that is not a report.
    let dir = tmp("tree");
    let exp = dir.join("mine");
    std::fs::create_dir_all(&exp).unwrap();
    for f in ["mine.json", "mine.svg", "mine.csv"] {
        std::fs::copy(results().join("mine").join(f), exp.join(f)).unwrap();
    }
    std::fs::write(dir.join("notes.json"), "{\"x\": 1}\n").unwrap();
    let out = vmlab(&["report", dir.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(
        out.stdout,
        format!("wrote {}\n", exp.join("mine.html").display())
    );
    assert!(
        out.stderr.starts_with("note: skipped ")
            && out.stderr.contains("notes.json")
            && out.stderr.lines().count() == 1,
        "{}",
        out.stderr
    );
    // The same page `reproduce --html` wrote, byte for byte: it renders from the JSON.
    assert_eq!(read(&exp.join("mine.html")), page());

    // The experiment's own directory works too; without the figure, the page says so.
    std::fs::remove_file(exp.join("mine.svg")).unwrap();
    let stdout = vmlab_ok(&["report", exp.to_str().unwrap()]);
    assert_eq!(
        stdout,
        format!("wrote {}\n", exp.join("mine.html").display())
    );
    let html = read(&exp.join("mine.html"));
    assert!(html.contains("No figure: mine.svg was not found") && !html.contains("<svg"));
}

#[test]
fn bad_directories_are_one_line_errors() {
    let dir = tmp("bad");
    expect_usage_error(
        &["report", "/nonexistent/results"],
        &["cannot read results directory /nonexistent/results"],
    );
    let file = dir.join("file.json");
    std::fs::write(&file, "{}").unwrap();
    expect_usage_error(&["report", file.to_str().unwrap()], &["is not a directory"]);
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    expect_usage_error(
        &["report", empty.to_str().unwrap()],
        &["no experiment results in", "vmlab reproduce"],
    );
    // Only JSON that is not a report: the error names it.
    expect_usage_error(
        &["report", dir.to_str().unwrap()],
        &[
            "no experiment results in",
            "file.json",
            "not an experiment report",
        ],
    );
    expect_usage_error(&["reproduce", "labt", "--html"], &["--html"]);
    expect_usage_error(&["reproduce", "guest", "--html"], &["--html"]);
    assert_eq!(vmlab(&["report"]).code, Some(2));
}

#[test]
fn help_teaches_the_command() {
    let help = vmlab_ok(&["report", "--help"]);
    for s in [
        "DIR",
        "NAME.json",
        "NAME.html",
        "vmlab report results",
        "no network",
    ] {
        assert!(help.contains(s), "{s} not in:\n{help}");
    }
    assert!(vmlab_ok(&["reproduce", "--help"]).contains("--html"));
}

// Headless Chromium.

/// The browser's command, or `None` (after saying why) when the tests should pass without
/// it: only outside CI.
fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|path| {
                std::env::split_paths(&path)
                    .map(|d| d.join(name))
                    .find(|p| p.is_file())
            })
        });
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but chromium is not installed (apt-get install chromium; .ci/run does)"
        );
        eprintln!("SKIPPED: chromium is not installed (apt-get install chromium); the page was not rendered");
    }
    found
}

/// Runs Chromium headless on `page` (a file) with `args`; its stdout.
fn headless(browser: &Path, page: &Path, args: &[&str]) -> String {
    let profile = page.with_extension("chromium-profile");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--window-size=1280,1600",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).map(|_| s)
    });
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "chromium {args:?} failed: {status}");
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium {args:?} took more than 3 minutes");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().unwrap().expect("chromium's output is UTF-8")
}

/// A script that checks, once the page is laid out, that the page does not scroll sideways
/// and that every element with a box lies inside its parent's box (SVG text inside the
/// figure, table cells inside their tables, ...), 1 px of slack; it writes `ok N` (N
/// elements checked) or the offenders, one a line, into `<pre id="layout-check">`.
const LAYOUT_CHECK: &str = r#"<script>
(function () {
  const bad = [];
  let n = 0;
  const root = document.documentElement;
  if (root.scrollWidth > root.clientWidth + 1) {
    bad.push('the page scrolls sideways: ' + root.scrollWidth + ' > ' + root.clientWidth);
  }
  const name = e => e.tagName.toLowerCase() + ' "' + (e.textContent || '').trim().slice(0, 50) + '"';
  const box = r => '[' + [r.left, r.top, r.right, r.bottom].map(Math.round).join(',') + ']';
  for (const e of document.body.querySelectorAll('*')) {
    if (['script', 'title', 'style'].includes(e.tagName.toLowerCase())) continue;
    const r = e.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    n++;
    const p = e.parentElement;
    const q = p.getBoundingClientRect();
    if (r.left < q.left - 1 || r.right > q.right + 1 || r.top < q.top - 1 || r.bottom > q.bottom + 1) {
      bad.push(name(e) + ' ' + box(r) + ' outside ' + name(p).slice(0, 30) + ' ' + box(q));
    }
  }
  const out = document.createElement('pre');
  out.id = 'layout-check';
  out.textContent = bad.length ? bad.join('\n') : 'ok ' + n;
  document.body.appendChild(out);
})();
</script>"#;

/// The layout check's verdict on `html`, rendered in `browser`.
fn layout_check(browser: &Path, html: &str, name: &str) -> String {
    let dir = tmp(name);
    let path = dir.join("page.html");
    std::fs::write(
        &path,
        html.replace("</body>", &format!("{LAYOUT_CHECK}</body>")),
    )
    .unwrap();
    let dom = headless(
        browser,
        &path,
        &["--virtual-time-budget=5000", "--dump-dom"],
    );
    let start = dom
        .find("<pre id=\"layout-check\">")
        .unwrap_or_else(|| panic!("no verdict in the dumped DOM:\n{dom}"));
    let verdict = &dom[start + "<pre id=\"layout-check\">".len()..];
    verdict[..verdict.find("</pre>").unwrap()].to_string()
}

#[test]
fn the_page_renders_in_chromium_with_nothing_clipped() {
    let Some(browser) = chromium() else { return };
    let verdict = layout_check(&browser, &page(), "layout");
    let n: usize = verdict
        .strip_prefix("ok ")
        .unwrap_or_else(|| panic!("clipped or overflowing:\n{verdict}"))
        .parse()
        .unwrap();
    assert!(n > 200, "only {n} elements checked");
}

#[test]
fn the_layout_check_catches_clipping() {
    let Some(browser) = chromium() else { return };
    // A one-line subtitle wider than its figure (as the figures' were), and text cut off
    // by a narrow box.
    let html = "<!DOCTYPE html><html><body>\
        <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"300\" height=\"60\" viewBox=\"0 0 300 60\">\
        <text x=\"150\" y=\"30\" font-size=\"13\" text-anchor=\"middle\">a subtitle far too long for the figure it sits in, on one line, as the figures of tlb and tpt had it</text></svg>\
        <div style=\"width:80px;overflow:hidden\"><span style=\"white-space:nowrap\">a line too long for its box</span></div>\
        </body></html>";
    let verdict = layout_check(&browser, html, "negative");
    assert!(
        verdict.contains("text \"a subtitle far too long")
            && verdict.contains("span \"a line too long"),
        "{verdict}"
    );
}

#[test]
fn the_page_screenshot_shows_the_figure() {
    let Some(browser) = chromium() else { return };
    let dir = tmp("screenshot");
    let page_path = dir.join("mine.html");
    std::fs::write(&page_path, page()).unwrap();
    let png_path = dir.join("mine.png");
    headless(
        &browser,
        &page_path,
        &[&format!("--screenshot={}", png_path.display())],
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&png_path).expect("chromium wrote the screenshot"),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (1280, 1600));
    let channels = info.color_type.samples();
    assert!(channels >= 3 && info.bit_depth == png::BitDepth::Eight);
    let pixels: Vec<[u8; 3]> = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    let ink = pixels.iter().filter(|p| **p != [255, 255, 255]).count();
    assert!(
        ink * 50 > pixels.len(),
        "the screenshot is nearly blank: {ink} of {} pixels not white",
        pixels.len()
    );
    // The figure's bars: every scheme's colour (plot::style) covers a patch of the page.
    for (scheme, hex) in [
        ("native", "4d4d4d"),
        ("nested", "d55e00"),
        ("shadow", "0072b2"),
        ("pv", "009e73"),
        ("tpt", "e69f00"),
        ("tpt-prototype", "cc79a7"),
    ] {
        let c: Vec<u8> = (0..3)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        let near = pixels
            .iter()
            .filter(|p| (0..3).all(|i| p[i].abs_diff(c[i]) <= 8))
            .count();
        assert!(
            near > 200,
            "{scheme}'s colour #{hex} is on {near} pixels only"
        );
    }
}
