//! `vmlab bench`: the simulator's own throughput, in simulated accesses per second of host
//! time, for the measured phase of a workload (set-up excluded), one scheme after another.

use crate::args::{load_profile, parse_workload, BenchArgs};
use crate::CliError;
use std::time::Instant;
use vmlab_core::addr::PageSize;
use vmlab_core::engine::{self, Phase, RunConfig};
use vmlab_core::scheme::Paging;

pub fn bench(args: BenchArgs) -> Result<(), CliError> {
    let workload = parse_workload(&args.workload)?;
    let profile = load_profile(&args.machine)?;
    let mut rows = Vec::new();
    for paging in Paging::ALL {
        let config = RunConfig {
            workload: workload.clone(),
            paging,
            profile: profile.clone(),
            guest_pages: PageSize::Size4K,
            host_pages: PageSize::Size4K,
            fragmentation: 0.0,
            accesses: args.accesses,
            warmup: 0,
            seed: 1,
            pretouch: false,
        };
        let (mut started, mut ended) = (None, None);
        let report = engine::run(&config, &mut |p| {
            if p.phase == Phase::Measure {
                if p.done == 0 {
                    started = Some(Instant::now());
                }
                if p.done == p.total {
                    ended = Some(Instant::now());
                }
            }
        })
        .map_err(|e| match e {
            engine::EngineError::Config(msg) => CliError::Usage(crate::UsageError(msg)),
            other => CliError::Run(other.to_string()),
        })?;
        let seconds = match (started, ended) {
            (Some(s), Some(e)) => (e - s).as_secs_f64(),
            _ => return Err(CliError::Run("the run reported no measured phase".into())),
        };
        let rate = report.accesses_simulated as f64 / seconds.max(1e-9);
        rows.push(serde_json::json!({
            "paging": paging.name(),
            "workload": report.workload,
            "accesses": report.accesses_simulated,
            "host_seconds": seconds,
            "accesses_per_second": rate,
        }));
    }
    // Print only once every scheme ran, so an error never leaves a partial report.
    if args.json {
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "bench": rows })).expect("serializable"));
    } else {
        for row in &rows {
            println!(
                "{:<13} {:>8.2} M simulated accesses/s ({} accesses in {:.2} s)",
                row["paging"].as_str().unwrap_or("?"),
                row["accesses_per_second"].as_f64().unwrap_or(0.0) / 1e6,
                row["accesses"],
                row["host_seconds"].as_f64().unwrap_or(0.0)
            );
        }
    }
    Ok(())
}
