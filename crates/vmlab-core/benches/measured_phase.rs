//! The measured phase of the headline workload (sysbench-mem, 4 GiB, random) end to end, as
//! `vmlab bench` times it: the engine's batch loop, the look-ahead, translation and the
//! memory pipeline, staged (one host thread) and threaded (two). Each iteration is one whole
//! run; only its measured phase is timed (`engine::run_timed`: from the progress report of
//! its first measured access to that of its last), so set-up, the first touch of the
//! buffer, stays out of the figure. Throughput is in simulated accesses.
//!
//! Set-up takes about a second per run, so this file takes a few minutes: run it with
//! `cargo bench -p vmlab-core --bench measured_phase`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use vmlab_core::addr::PageSize;
use vmlab_core::cost::profile::Profile;
use vmlab_core::engine::{self, sampling, Pipeline, RunConfig};
use vmlab_core::scheme::Paging;
use vmlab_core::workload::WorkloadSpec;

/// The measured accesses of one run of `paging` (nested is about three times slower).
fn accesses(paging: Paging) -> u64 {
    match paging {
        Paging::Nested => 300_000,
        _ => 1_000_000,
    }
}

fn config(paging: Paging, pipeline: Pipeline) -> RunConfig {
    RunConfig {
        workload: WorkloadSpec::parse("sysbench-mem:block=4G,mode=rnd")
            .expect("the headline workload parses"),
        paging,
        profile: Profile::builtin("skylake").expect("the built-in skylake profile loads"),
        guest_pages: PageSize::Size4K,
        host_pages: PageSize::Size4K,
        fragmentation: 0.0,
        accesses: accesses(paging),
        warmup: 0,
        tolerance: sampling::DEFAULT_TOLERANCE,
        fixed_warmup: true,
        seed: 1,
        pretouch: false,
        pipeline,
    }
}

/// The host time of one run's measured phase.
fn measured_phase(config: &RunConfig) -> Duration {
    let (report, measured) =
        engine::run_timed(config, &mut |_| std::ops::ControlFlow::Continue(()))
            .unwrap_or_else(|e| panic!("{} run: {e}", config.paging.name()));
    assert_eq!(report.accesses_simulated, config.accesses);
    measured.unwrap_or_else(|| panic!("{} run: no measured phase reported", config.paging.name()))
}

fn sysbench_mem_4g_rnd(c: &mut Criterion) {
    let mut group = c.benchmark_group("measured_phase");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(10);
    for paging in [Paging::Native, Paging::Nested] {
        group.throughput(Throughput::Elements(accesses(paging)));
        for (mode, pipeline) in [
            ("staged", Pipeline::Staged),
            ("threaded", Pipeline::Threaded),
        ] {
            let config = config(paging, pipeline);
            group.bench_function(format!("{}/{mode}", paging.name()), |b| {
                b.iter_custom(|iters| (0..iters).map(|_| measured_phase(&config)).sum())
            });
        }
    }
    group.finish();
}

criterion_group!(benches, sysbench_mem_4g_rnd);
criterion_main!(benches);
