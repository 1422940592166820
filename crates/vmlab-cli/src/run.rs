//! `vmlab run`: one workload under one or more schemes.

use crate::args::{parse_schemes, parse_workload, RunArgs};
use crate::progress::RunProgress;
use crate::{table, CliError};
use vmlab_core::engine::{self, RunConfig};
use vmlab_core::stats::RunReport;

pub fn run(args: RunArgs) -> Result<(), CliError> {
    let workload = parse_workload(&args.workload)?;
    let schemes = parse_schemes(&args.paging)?;
    let sim = args.sim.validate()?;
    let mut reports: Vec<RunReport> = Vec::new();
    for paging in schemes {
        let config = RunConfig {
            workload: workload.clone(),
            paging,
            profile: sim.profile.clone(),
            guest_pages: sim.guest_pages,
            host_pages: sim.host_pages,
            fragmentation: sim.fragmentation,
            accesses: sim.accesses,
            warmup: sim.warmup,
            seed: sim.seed,
            pretouch: sim.pretouch,
        };
        let mut progress = RunProgress::new(paging.name());
        let report = engine::run(&config, &mut |p| progress.update(p));
        progress.finish();
        reports.push(report.map_err(|e| match e {
            engine::EngineError::Config(msg) => CliError::Usage(crate::UsageError(msg)),
            other => CliError::Run(format!("{} under {}: {other}", workload.canonical(), paging.name())),
        })?);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "runs": reports })).expect("serializable"));
    } else {
        print!("{}", table::render(&reports));
    }
    Ok(())
}
