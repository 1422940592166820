//! The golden test: fixed configurations whose `vmlab run --json` output must match the files
//! in `tests/golden/` byte for byte. Any change that moves a simulated number must update the
//! affected files in the same commit (and say why): rerun with `VMLAB_UPDATE_GOLDEN=1` to
//! rewrite them, then review the diff.
//!
//! The configurations cover every scheme, guest 2M pages, host 2M and 1G backing,
//! fragmentation, pretouch, every workload (fork-bench, every lmbench op, host-remap, the TPT
//! isolation probe) and a non-default seed, at sizes small enough to run in seconds.
//!
//! Each report's provenance is checked (version, commit, command, profile and its hash,
//! seed) and compared too, but for the fields that vary with the build and the machine
//! (`git_commit`, `command`), which the files hold as "(varies)". The effective profile
//! (`provenance.profile`) is checked to be the built-in skylake profile, every key, and the
//! files hold it as one line: a new profile key is not a change of any result.

mod common;

use common::vmlab;
use std::path::PathBuf;

const ALL: &str = "native,nested,shadow,pv,tpt,tpt-prototype";
const AGILE: &str = "nested,shadow,agile";

/// (file name, `vmlab run` arguments after `--json`).
const CONFIGS: &[(&str, &[&str])] = &[
    (
        "sysbench-rnd",
        &[
            "-w",
            "sysbench-mem:block=64M,mode=rnd",
            "-p",
            ALL,
            "-n",
            "200000",
            "--warmup",
            "50000",
        ],
    ),
    (
        "sysbench-seq-read",
        &[
            "-w",
            "sysbench-mem:block=16M,mode=seq,oper=read",
            "-p",
            ALL,
            "-n",
            "100000",
            "--warmup",
            "10000",
        ],
    ),
    (
        "guest2m-host2m",
        &[
            "-w",
            "sysbench-mem:block=64M,mode=rnd",
            "-p",
            ALL,
            "--guest-pages",
            "2m",
            "--host-pages",
            "2m",
            "-n",
            "100000",
            "--warmup",
            "20000",
        ],
    ),
    (
        "host1g",
        &[
            "-w",
            "sysbench-mem:block=64M,mode=rnd",
            "-p",
            "nested,shadow,tpt",
            "--host-pages",
            "1g",
            "-n",
            "100000",
            "--warmup",
            "20000",
        ],
    ),
    (
        "host2m-fragmented",
        &[
            "-w",
            "gups:table=64M",
            "-p",
            "nested,tpt",
            "--host-pages",
            "2m",
            "--fragmentation",
            "0.5",
            "-n",
            "100000",
            "--warmup",
            "20000",
            "--seed",
            "7",
        ],
    ),
    (
        "tlb-bench",
        &["-w", "tlb-bench:size=8M,accesses=100000", "-p", ALL],
    ),
    (
        "pretouch",
        &[
            "-w",
            "sysbench-mem:block=16M,mode=rnd",
            "-p",
            "nested,tpt",
            "--pretouch",
            "-n",
            "50000",
            "--warmup",
            "10000",
        ],
    ),
    (
        "fork-bench",
        &["-w", "fork-bench:rss=8M,forks=5", "-p", ALL],
    ),
    (
        "lmbench-fork-exit",
        &["-w", "lmbench:op=fork-exit,iters=5", "-p", ALL],
    ),
    (
        "lmbench-fork-exec",
        &["-w", "lmbench:op=fork-exec,iters=5", "-p", ALL],
    ),
    (
        "lmbench-page-fault",
        &["-w", "lmbench:op=page-fault,size=1M,iters=3", "-p", ALL],
    ),
    (
        "lmbench-mmap",
        &["-w", "lmbench:op=mmap,iters=5", "-p", ALL],
    ),
    (
        "lmbench-ctxsw",
        &["-w", "lmbench:op=ctxsw,procs=4,ws=16K,iters=20", "-p", ALL],
    ),
    (
        "host-remap",
        &[
            "-w",
            "host-remap:size=16M,accesses=100000,every=1000",
            "-p",
            "nested,tpt",
        ],
    ),
    (
        "tpt-isolation-probe",
        &["-w", "tpt-isolation-probe:pages=64,probes=64", "-p", "tpt"],
    ),
    (
        "tpt-task-none",
        &[
            "-w",
            "sysbench-mem:block=16M,mode=rnd,tpt_task=none",
            "-p",
            "tpt,tpt-prototype",
            "-n",
            "50000",
            "--warmup",
            "10000",
        ],
    ),
    // Agile paging beside the two schemes it combines, in files of its own (added with it).
    (
        "agile-sysbench-rnd",
        &[
            "-w",
            "sysbench-mem:block=64M,mode=rnd",
            "-p",
            AGILE,
            "-n",
            "200000",
            "--warmup",
            "50000",
        ],
    ),
    (
        "agile-fork-bench",
        &["-w", "fork-bench:rss=8M,forks=5", "-p", AGILE],
    ),
    (
        "agile-lmbench-mmap",
        &["-w", "lmbench:op=mmap,iters=5", "-p", AGILE],
    ),
    (
        "agile-lmbench-page-fault",
        &["-w", "lmbench:op=page-fault,size=1M,iters=3", "-p", AGILE],
    ),
    (
        "agile-tlb-bench",
        &["-w", "tlb-bench:size=8M,accesses=100000", "-p", AGILE],
    ),
];

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.json"))
}

/// Runs `vmlab` and expects success; stderr may hold only warnings (a flag native ignores).
fn vmlab_run(args: &[&str]) -> String {
    let out = vmlab(args);
    assert_eq!(out.code, Some(0), "vmlab {args:?} failed: {}", out.stderr);
    assert!(
        out.stderr.lines().all(|l| l.starts_with("warning: ")),
        "vmlab {args:?} wrote to stderr:\n{}",
        out.stderr
    );
    out.stdout
}

/// The fields of a report's provenance (at the top level: indented by 4) that vary from build to build and from machine to
/// machine, for the same simulated results.
const VARYING: [&str; 2] = ["git_commit", "command"];

/// `output` of `vmlab ARGS` with the varying fields of its provenance replaced by a
/// placeholder, after checking that the provenance is there and right: this build's
/// version and commit, the command that ran, the profile's name and hash, and the seed.
fn comparable(output: &str, args: &[&str]) -> String {
    let json: serde_json::Value = serde_json::from_str(output).expect("--json prints JSON");
    let p = &json["provenance"];
    assert!(p.is_object(), "the report has a provenance");
    assert_eq!(p["vmlab_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(p["git_commit"], vmlab_core::provenance::GIT_COMMIT);
    let command = p["command"].as_str().expect("command").to_string();
    assert!(
        command.ends_with(&format!(" {}", vmlab_core::provenance::shell_command(args))),
        "{command}"
    );
    let profile = vmlab_core::cost::Profile::builtin("skylake").expect("built-in");
    assert_eq!(p["machine"], "skylake");
    assert_eq!(p["machine_fingerprint"], profile.fingerprint_hex());
    let seed = args
        .windows(2)
        .find(|w| w[0] == "--seed")
        .map_or(1, |w| w[1].parse().expect("a number"));
    assert_eq!(p["seed"], seed);
    assert_eq!(
        p["profile"],
        serde_json::to_value(&profile).expect("serializable"),
        "the effective profile is skylake's"
    );
    assert_eq!(p["overrides"], serde_json::json!({}));
    // Edit the text rather than re-serialize the JSON, whose floats would not round-trip.
    let mut in_profile = false;
    output
        .lines()
        .filter_map(|line| {
            if in_profile {
                in_profile = !line.starts_with("    }");
                return None;
            }
            if line == "    \"profile\": {" {
                in_profile = true;
                return Some("    \"profile\": \"(skylake, checked)\",");
            }
            Some(line)
        })
        .map(|line| {
            match VARYING
                .iter()
                .find(|k| line.starts_with(&format!("    \"{k}\": ")))
            {
                Some(key) => format!(
                    "    \"{key}\": \"(varies)\"{}",
                    if line.ends_with(',') { "," } else { "" }
                ),
                None => line.to_string(),
            }
        })
        .map(|line| line + "\n")
        .collect()
}

#[test]
fn every_golden_configuration_reproduces_its_committed_json() {
    let update = std::env::var_os("VMLAB_UPDATE_GOLDEN").is_some();
    let mut mismatched = Vec::new();
    for (name, args) in CONFIGS {
        let mut full = vec!["run", "--json"];
        full.extend_from_slice(args);
        let got = comparable(&vmlab_run(&full), &full);
        let path = golden_path(name);
        if update {
            std::fs::write(&path, &got).expect("golden file written");
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (run with VMLAB_UPDATE_GOLDEN=1 to create it)",
                path.display()
            )
        });
        if got != want {
            let line = got
                .lines()
                .zip(want.lines())
                .position(|(g, w)| g != w)
                .map_or(0, |i| i + 1);
            mismatched.push(format!(
                "{name} (first difference at line {line}; vmlab {})",
                full.join(" ")
            ));
        }
    }
    assert!(mismatched.is_empty(), "simulated results moved; update tests/golden/ in the same commit if that is intended:\n  {}", mismatched.join("\n  "));
}

#[test]
fn golden_configurations_cover_every_scheme_and_are_at_least_fifteen() {
    assert!(CONFIGS.len() >= 15);
    for scheme in vmlab_core::scheme::Paging::ALL.map(|p| p.name()) {
        let covered = CONFIGS
            .iter()
            .filter(|(_, a)| {
                a.windows(2)
                    .any(|w| w[0] == "-p" && w[1].split(',').any(|s| s == scheme))
            })
            .count();
        assert!(
            covered >= 5,
            "{scheme} appears in only {covered} golden configurations"
        );
    }
}
