//! The golden test: fixed configurations whose `vmlab run --json` output must match the files
//! in `tests/golden/` byte for byte. Any change that moves a simulated number must update the
//! affected files in the same commit (and say why): rerun with `VMLAB_UPDATE_GOLDEN=1` to
//! rewrite them, then review the diff.
//!
//! The configurations cover every scheme, guest 2M pages, host 2M and 1G backing,
//! fragmentation, pretouch, every workload (fork-bench, every lmbench op, host-remap, the TPT
//! isolation probe) and a non-default seed, at sizes small enough to run in seconds.

mod common;

use common::vmlab_ok;
use std::path::PathBuf;

const ALL: &str = "native,nested,shadow,pv,tpt,tpt-prototype";

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
];

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.json"))
}

#[test]
fn every_golden_configuration_reproduces_its_committed_json() {
    let update = std::env::var_os("VMLAB_UPDATE_GOLDEN").is_some();
    let mut mismatched = Vec::new();
    for (name, args) in CONFIGS {
        let mut full = vec!["run", "--json"];
        full.extend_from_slice(args);
        let got = vmlab_ok(&full);
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
    for scheme in ALL.split(',') {
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
