//! `vmlab reproduce guest`: the benchmark suite of `experiments/guest.toml`, natively and under
//! every mechanism, pinned to one CPU and unpinned, then a real build; a table, CSV, JSON and an
//! SVG figure.

use crate::{GuestError, Mechanism};
use serde::Deserialize;
use serde_json::json;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The experiment file, built in.
pub const EXPERIMENT: &str = include_str!("../../../experiments/guest.toml");

/// Options of `vmlab reproduce guest`.
pub struct Options {
    /// Fewer iterations (a tenth), repeats and builds (experiments/guest.toml's quick_*).
    pub quick: bool,
    /// Directory for guest.csv, guest.json and guest.svg.
    pub out: PathBuf,
    /// The vmlab binary (runs `vmlab guest`); `vmlab-guest-bench` must be beside it.
    pub vmlab: PathBuf,
    /// The command line, recorded in the JSON.
    pub command_line: String,
}

/// What [`reproduce`] produced.
pub struct Report {
    /// The tables, and the files written.
    pub text: String,
    /// The JSON document (also written to guest.json).
    pub json: String,
}

#[derive(Deserialize)]
struct Experiment {
    name: String,
    title: String,
    /// How long a run takes, as the file says.
    duration: String,
    mechanisms: Vec<String>,
    cpu: usize,
    repeats: usize,
    quick_repeats: usize,
    /// Builds per column with `--quick` (`repeats` otherwise): the build is most of a quick
    /// run's time.
    quick_build_repeats: usize,
    build: BuildSpec,
    ops: Vec<Op>,
}

#[derive(Deserialize, Clone, Copy)]
struct BuildSpec {
    files: usize,
    lines: usize,
}

#[derive(Deserialize, Clone)]
struct Op {
    op: String,
    label: String,
    iterations: u64,
    #[serde(default)]
    bandwidth: bool,
}

/// The measured runs of one operation in one column.
#[derive(Clone, Default)]
struct Runs(Vec<f64>);

impl Runs {
    fn sorted(&self) -> Vec<f64> {
        let mut v = self.0.clone();
        v.sort_by(f64::total_cmp);
        v
    }
    fn median(&self) -> f64 {
        let v = self.sorted();
        match v.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        }
    }
    fn min(&self) -> f64 {
        self.sorted().first().copied().unwrap_or(f64::NAN)
    }
    fn max(&self) -> f64 {
        self.sorted().last().copied().unwrap_or(f64::NAN)
    }
}

/// A column: native, or a mechanism.
fn columns(exp: &Experiment) -> Result<Vec<Option<Mechanism>>, GuestError> {
    let mut cols = vec![None];
    for m in &exp.mechanisms {
        cols.push(Some(Mechanism::parse(m)?));
    }
    Ok(cols)
}

fn col_name(c: Option<Mechanism>) -> &'static str {
    c.map_or("native", Mechanism::name)
}

/// The command running `argv` in column `col`, pinned to `cpu` if given.
fn command(vmlab: &Path, col: Option<Mechanism>, cpu: Option<usize>, count: bool, argv: &[String]) -> Command {
    match col {
        None => {
            let mut cmd = Command::new(&argv[0]);
            cmd.args(&argv[1..]);
            #[cfg(target_os = "linux")]
            if let Some(cpu) = cpu {
                use std::os::unix::process::CommandExt;
                // SAFETY: the closure only calls sched_setaffinity (async-signal-safe) on a
                // local set, between fork and exec.
                unsafe {
                    cmd.pre_exec(move || {
                        let mut set: libc::cpu_set_t = std::mem::zeroed();
                        libc::CPU_SET(cpu, &mut set);
                        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                        Ok(())
                    });
                }
            }
            cmd
        }
        Some(m) => {
            let mut cmd = Command::new(vmlab);
            cmd.args(["guest", "--mechanism", m.name()]);
            if let Some(cpu) = cpu {
                cmd.args(["--cpu", &cpu.to_string()]);
            }
            if count {
                cmd.arg("--count");
            }
            cmd.arg("--").args(argv);
            cmd
        }
    }
}

/// Runs one measurement: the number the benchmark program prints.
fn measure(
    vmlab: &Path,
    bench: &Path,
    col: Option<Mechanism>,
    cpu: Option<usize>,
    op: &Op,
    n: u64,
) -> Result<f64, GuestError> {
    let argv = vec![bench.display().to_string(), op.op.clone(), n.to_string()];
    let out = command(vmlab, col, cpu, false, &argv)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| GuestError::Host(format!("cannot run {}: {e}", argv[0])))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().parse().map_err(|_| {
        GuestError::Host(format!(
            "{} under {}: no result (status {:?}, output {text:?})",
            op.op,
            col_name(col),
            out.status.code()
        ))
    })
}

/// How much a run of the suite does.
#[derive(Clone, Copy, Debug)]
struct Plan {
    /// Runs of each operation in each column, pinned and unpinned each.
    repeats: usize,
    /// Builds in each column.
    build_repeats: usize,
    /// Iterations are divided by this.
    scale: u64,
    /// Benchmark program runs in all (every operation, column, repeat and pinning).
    runs: usize,
    /// Builds in all.
    builds: usize,
}

impl Plan {
    fn new(exp: &Experiment, quick: bool) -> Plan {
        let repeats = if quick { exp.quick_repeats } else { exp.repeats };
        let build_repeats = if quick { exp.quick_build_repeats } else { exp.repeats };
        let columns = 1 + exp.mechanisms.len();
        Plan {
            repeats,
            build_repeats,
            scale: if quick { 10 } else { 1 },
            runs: 2 * repeats * exp.ops.len() * columns,
            builds: build_repeats * columns,
        }
    }

    /// The seconds the plan takes when a benchmark run takes `run` seconds and a build
    /// `build` seconds.
    #[cfg(test)]
    fn seconds(&self, run: f64, build: f64) -> f64 {
        self.runs as f64 * run + self.builds as f64 * build
    }
}

/// Progress on stderr: a line per step, each with the time since the start; on a terminal
/// also a count of the runs, rewritten in place.
struct Progress {
    start: Instant,
    terminal: bool,
    counting: bool,
}

impl Progress {
    fn new() -> Progress {
        Progress {
            start: Instant::now(),
            terminal: std::io::IsTerminal::is_terminal(&std::io::stderr()),
            counting: false,
        }
    }

    fn line(&mut self, what: &str) {
        let clear = if std::mem::take(&mut self.counting) { "\r\x1b[K" } else { "" };
        eprintln!("{clear}guest: [{:.0} s] {what}", self.start.elapsed().as_secs_f64());
    }

    fn count(&mut self, what: &str) {
        if self.terminal {
            eprint!("\r\x1b[Kguest: [{:.0} s] {what}", self.start.elapsed().as_secs_f64());
            self.counting = true;
        }
    }
}

/// The host facts the JSON records.
fn host() -> serde_json::Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |k: &str| {
        cpuinfo
            .lines()
            .find(|l| l.split(':').next().map(str::trim) == Some(k))
            .and_then(|l| l.split(':').nth(1))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string();
    let virt =
        if field("flags").split_whitespace().any(|f| f == "hypervisor") { "virtual machine" } else { "bare metal" };
    json!({
        "kernel": kernel,
        "cpu_model": field("model name"),
        "cpu_family": field("cpu family"),
        "cpu_model_number": field("model"),
        "cpus": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "platform": virt,
    })
}

/// A C source tree for the build benchmark, in a fresh directory.
fn make_tree(spec: BuildSpec) -> Result<PathBuf, GuestError> {
    let dir = std::env::temp_dir().join(format!("vmlab-guest-build-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| GuestError::Host(format!("{}: {e}", dir.display())))?;
    let mut objs = Vec::new();
    let mut main = String::from("#include <stdio.h>\n");
    let mut calls = String::new();
    for f in 0..spec.files {
        let mut src = String::from("#include <stdlib.h>\n#include <string.h>\n");
        for l in 0..spec.lines {
            let _ =
                writeln!(src, "int f{f}_{l}(int x) {{ int a[8]; memset(a, x, sizeof a); return a[x & 7] * {l} + x; }}");
        }
        let _ = writeln!(
            src,
            "int file{f}(int x) {{ int s = 0; for (int i = 0; i < {}; i++) s += f{f}_0(x + i); return s; }}",
            spec.lines
        );
        std::fs::write(dir.join(format!("f{f}.c")), src).map_err(|e| GuestError::Host(e.to_string()))?;
        objs.push(format!("f{f}.o"));
        let _ = writeln!(main, "int file{f}(int);");
        let _ = writeln!(calls, "  s += file{f}(argc);");
    }
    let _ = writeln!(
        main,
        "int main(int argc, char **argv) {{\n  (void)argv; int s = 0;\n{calls}  printf(\"%d\\n\", s);\n  return 0;\n}}"
    );
    std::fs::write(dir.join("main.c"), main).map_err(|e| GuestError::Host(e.to_string()))?;
    let makefile = format!(
        "OBJS = main.o {}\nprog: $(OBJS)\n\tcc -o prog $(OBJS)\n%.o: %.c\n\tcc -O1 -c $< -o $@\nclean:\n\trm -f prog *.o\n",
        objs.join(" ")
    );
    std::fs::write(dir.join("Makefile"), makefile).map_err(|e| GuestError::Host(e.to_string()))?;
    Ok(dir)
}

/// Seconds of one clean build, and the trapped calls (from `--count`) under a mechanism.
fn build_once(
    vmlab: &Path,
    dir: &Path,
    col: Option<Mechanism>,
    cpu: Option<usize>,
) -> Result<(f64, Option<u64>), GuestError> {
    let _ = Command::new("make").arg("-s").arg("clean").current_dir(dir).output();
    let argv = vec!["make".to_string(), "-s".into(), "-j1".into(), "prog".into()];
    let t = Instant::now();
    let out = command(vmlab, col, cpu, true, &argv)
        .current_dir(dir)
        .output()
        .map_err(|e| GuestError::Host(format!("cannot run make: {e}")))?;
    let secs = t.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(GuestError::Host(format!(
            "the build failed under {}: {}",
            col_name(col),
            String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")
        )));
    }
    let count = String::from_utf8_lossy(&out.stderr)
        .lines()
        .find_map(|l| l.strip_prefix("vmlab guest: "))
        .and_then(|l| l.split_whitespace().next()?.parse().ok());
    Ok((secs, count))
}

fn fmt(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Runs the suite: every operation in every column, pinned then unpinned, then the build.
pub fn reproduce(o: &Options) -> Result<Report, GuestError> {
    let exp: Experiment =
        toml::from_str(EXPERIMENT).map_err(|e| GuestError::Host(format!("experiments/guest.toml: {e}")))?;
    let cols = columns(&exp)?;
    for m in cols.iter().flatten() {
        m.check_host()?;
    }
    let dir = o.vmlab.parent().unwrap_or(Path::new("."));
    let bench = dir.join("vmlab-guest-bench");
    if !bench.is_file() {
        return Err(GuestError::Usage(format!(
            "the benchmark program {} is missing: build the workspace (cargo build --release)",
            bench.display()
        )));
    }
    let plan = Plan::new(&exp, o.quick);
    let Plan { repeats, build_repeats, scale, .. } = plan;
    let pinnings = [Some(exp.cpu), None];
    // results[pinning][op][col]
    let mut results = vec![vec![vec![Runs::default(); cols.len()]; exp.ops.len()]; pinnings.len()];
    let total = plan.runs;
    let mut done = 0;
    let mut progress = Progress::new();
    progress.line(&format!(
        "{} runs ({} operations x {} columns x {repeats} repeats, pinned to CPU {} then unpinned), then {} builds; \
         experiments/guest.toml: {}",
        total,
        exp.ops.len(),
        cols.len(),
        exp.cpu,
        plan.builds,
        exp.duration
    ));
    for (pi, &cpu) in pinnings.iter().enumerate() {
        let pin = cpu.map_or("unpinned".to_string(), |c| format!("pinned to CPU {c}"));
        for r in 0..repeats {
            for (oi, op) in exp.ops.iter().enumerate() {
                let n = (op.iterations / scale).max(if op.bandwidth { 2 } else { 5 });
                for (ci, &col) in cols.iter().enumerate() {
                    let v = measure(&o.vmlab, &bench, col, cpu, op, n)?;
                    results[pi][oi][ci].0.push(v);
                    done += 1;
                    progress.count(&format!("{done}/{total} runs ({pin}, repeat {}/{repeats}, {})", r + 1, op.op));
                }
            }
            progress.line(&format!("{pin}, repeat {}/{repeats}: {done}/{total} runs", r + 1));
        }
    }
    // The build.
    let mut build = None;
    if Command::new("make").arg("--version").output().is_ok() && Command::new("cc").arg("--version").output().is_ok() {
        let tree = make_tree(exp.build)?;
        let mut secs = vec![Runs::default(); cols.len()];
        let mut counts: Vec<Option<u64>> = vec![None; cols.len()];
        for r in 0..build_repeats {
            for (ci, &col) in cols.iter().enumerate() {
                let (s, c) = build_once(&o.vmlab, &tree, col, Some(exp.cpu))?;
                secs[ci].0.push(s);
                counts[ci] = c.or(counts[ci]);
                progress.line(&format!("build {}/{build_repeats} under {}: {s:.1} s", r + 1, col_name(col)));
            }
        }
        let _ = std::fs::remove_dir_all(&tree);
        build = Some((secs, counts));
    }

    progress.line("done");

    // Reports.
    let names: Vec<&str> = cols.iter().map(|&c| col_name(c)).collect();
    let mut text = format!("{}\n", exp.title);
    let mut csv = String::from("pinning,op,label,unit,column,median,min,max,slowdown\n");
    let mut jops = Vec::new();
    for (pi, &cpu) in pinnings.iter().enumerate() {
        let pin = cpu.map_or("unpinned".to_string(), |c| format!("pinned to CPU {c}"));
        let _ = writeln!(
            text,
            "\n{pin}: us per operation (MB/s for bandwidths), median [min-max] and slowdown over native"
        );
        let _ = write!(text, "{:<34}", "operation");
        for n in &names {
            let _ = write!(text, " {n:>24}");
        }
        text.push('\n');
        for (oi, op) in exp.ops.iter().enumerate() {
            let native = results[pi][oi][0].median();
            let _ = write!(text, "{:<34}", op.label);
            let mut jcols = serde_json::Map::new();
            for (ci, r) in results[pi][oi].iter().enumerate() {
                let med = r.median();
                // Slowdown: time ratio; for bandwidths, native over guest.
                let slow = if op.bandwidth { native / med } else { med / native };
                let cell = if ci == 0 {
                    format!("{} [{}-{}]", fmt(med), fmt(r.min()), fmt(r.max()))
                } else {
                    format!("{} [{}-{}] x{:.1}", fmt(med), fmt(r.min()), fmt(r.max()), slow)
                };
                let _ = write!(text, " {cell:>24}");
                let unit = if op.bandwidth { "MB/s" } else { "us" };
                let pinning = cpu.map_or("unpinned".to_string(), |c| format!("cpu{c}"));
                let _ = writeln!(
                    csv,
                    "{pinning},{},\"{}\",{unit},{},{med},{},{},{slow}",
                    op.op,
                    op.label,
                    names[ci],
                    r.min(),
                    r.max()
                );
                jcols.insert(
                    names[ci].to_string(),
                    json!({"median": med, "min": r.min(), "max": r.max(), "runs": r.0, "slowdown": slow}),
                );
            }
            text.push('\n');
            jops.push(json!({
                "pinned_cpu": cpu, "op": op.op, "label": op.label,
                "unit": if op.bandwidth { "MB/s" } else { "us" },
                "iterations": (op.iterations / scale).max(if op.bandwidth { 2 } else { 5 }),
                "results": jcols,
            }));
        }
    }
    let mut jbuild = serde_json::Value::Null;
    if let Some((secs, counts)) = &build {
        let calls = counts.get(1).copied().flatten();
        let _ = writeln!(
            text,
            "\nbuild: {} C files x {} functions, make -j1, pinned to CPU {}: seconds, median [min-max]; guest system calls trapped",
            exp.build.files + 1,
            exp.build.lines,
            exp.cpu
        );
        let native = secs[0].median();
        let mut jb = serde_json::Map::new();
        for (ci, r) in secs.iter().enumerate() {
            let trapped = counts[ci].map_or("-".to_string(), |c| c.to_string());
            let _ = writeln!(
                text,
                "  {:<16} {:>8} [{}-{}] x{:.2}  trapped {trapped}",
                names[ci],
                fmt(r.median()),
                fmt(r.min()),
                fmt(r.max()),
                r.median() / native
            );
            let _ = writeln!(
                csv,
                "cpu{},build,\"C build\",s,{},{},{},{},{}",
                exp.cpu,
                names[ci],
                r.median(),
                r.min(),
                r.max(),
                r.median() / native
            );
            jb.insert(
                names[ci].into(),
                json!({"median": r.median(), "min": r.min(), "max": r.max(), "runs": r.0, "trapped_calls": counts[ci]}),
            );
        }
        if let Some(c) = calls {
            let _ = writeln!(text, "  (the build makes {c} system calls: every one stops under ptrace)");
        }
        jbuild = json!({"files": exp.build.files + 1, "functions_per_file": exp.build.lines, "pinned_cpu": exp.cpu,
            "system_calls": calls, "seconds": jb});
    } else {
        text.push_str("\nbuild: skipped (no make or cc on this host)\n");
    }
    let doc = json!({
        "experiment": exp.name,
        "title": exp.title,
        "command_line": o.command_line,
        "vmlab_version": env!("CARGO_PKG_VERSION"),
        "quick": o.quick,
        "repeats": repeats,
        "build_repeats": build_repeats,
        "host": host(),
        "pinning": {"pinned_cpu": exp.cpu, "also_unpinned": true},
        "columns": names,
        "ops": jops,
        "build": jbuild,
    });
    let json_text = serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n";
    let svg = figure(&exp, &names, &results[0]);
    std::fs::create_dir_all(&o.out).map_err(|e| GuestError::Host(format!("cannot create {}: {e}", o.out.display())))?;
    for (ext, body) in [("csv", &csv), ("json", &json_text), ("svg", &svg)] {
        let path = o.out.join(format!("{}.{ext}", exp.name));
        std::fs::write(&path, body).map_err(|e| GuestError::Host(format!("cannot write {}: {e}", path.display())))?;
        let _ = writeln!(text, "wrote {}", path.display());
    }
    Ok(Report { text, json: json_text })
}

/// Grouped bars of the pinned slowdown over native (log scale), one group per operation.
fn figure(exp: &Experiment, names: &[&str], pinned: &[Vec<Runs>]) -> String {
    let colors = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3"];
    let (w, h, left, top, bottom) = (1100.0, 460.0, 60.0, 40.0, 150.0);
    let plot_h = h - top - bottom;
    let group = (w - left - 20.0) / exp.ops.len() as f64;
    let bar = group * 0.8 / (names.len() - 1).max(1) as f64;
    let max_log = 4.0; // 10^4 x
    let y = |s: f64| top + plot_h * (1.0 - (s.max(1.0).log10() / max_log).min(1.0));
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"11\">\n\
         <text x=\"{left}\" y=\"20\" font-size=\"14\">{} (slowdown over native, pinned, log scale)</text>\n",
        exp.title
    );
    for k in 0..=4 {
        let yy = y(10f64.powi(k));
        let _ = writeln!(svg, "<line x1=\"{left}\" y1=\"{yy}\" x2=\"{}\" y2=\"{yy}\" stroke=\"#ddd\"/>", w - 20.0);
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}x</text>",
            left - 5.0,
            yy + 4.0,
            10u64.pow(k as u32)
        );
    }
    for (oi, op) in exp.ops.iter().enumerate() {
        let x0 = left + group * oi as f64 + group * 0.1;
        let native = pinned[oi][0].median();
        for ci in 1..names.len() {
            let med = pinned[oi][ci].median();
            let slow = if op.bandwidth { native / med } else { med / native };
            let x = x0 + bar * (ci - 1) as f64;
            let yy = y(slow);
            let _ = writeln!(
                svg,
                "<rect x=\"{x:.1}\" y=\"{yy:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{} {}: x{slow:.2}</title></rect>",
                bar * 0.95,
                top + plot_h - yy,
                colors[ci % colors.len()],
                op.op,
                names[ci]
            );
        }
        let lx = x0 + group * 0.4;
        let ly = top + plot_h + 10.0;
        let _ = writeln!(svg, "<text transform=\"translate({lx:.1},{ly:.1}) rotate(45)\">{}</text>", op.label);
    }
    for (ci, n) in names.iter().enumerate().skip(1) {
        let x = left + 130.0 * (ci - 1) as f64;
        let _ = writeln!(
            svg,
            "<rect x=\"{x}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{n}</text>",
            h - 20.0,
            colors[ci % colors.len()],
            x + 14.0,
            h - 11.0
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_experiment_file_parses_and_names_every_mechanism() {
        let exp: Experiment = toml::from_str(EXPERIMENT).unwrap();
        let cols = columns(&exp).unwrap();
        assert_eq!(cols.len(), 1 + Mechanism::ALL.len());
        assert!(exp.ops.iter().any(|o| o.op == "null"));
    }

    /// experiments/guest.toml's duration holds for the costs measured on an AMD EPYC (family
    /// 25, model 17) under KVM, 2 vCPUs, with another job keeping 1.8 of them busy: a
    /// benchmark run took 31 ms on average under --quick and 123 ms in the full run, a build
    /// 2.7 to 4.1 s (the full run took 248 s, --quick 36 s). --quick used to build three
    /// times per column: 21 builds, 88 of its 109 s.
    #[test]
    fn the_quick_run_takes_under_a_minute_and_the_full_one_about_four() {
        let exp: Experiment = toml::from_str(EXPERIMENT).unwrap();
        let build = 4.1;
        let quick = Plan::new(&exp, true).seconds(0.031, build);
        let full = Plan::new(&exp, false).seconds(0.123, build);
        assert!(quick <= 60.0, "--quick would take {quick:.0} s");
        assert!((180.0..=300.0).contains(&full), "the full run would take {full:.0} s");
        assert!(exp.duration.contains("full ~4 min, --quick under 1 min"), "{}", exp.duration);
    }

    #[test]
    fn medians_and_spreads() {
        let r = Runs(vec![3.0, 1.0, 2.0, 10.0]);
        assert_eq!(r.median(), 2.5);
        assert_eq!((r.min(), r.max()), (1.0, 10.0));
    }
}
