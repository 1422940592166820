//! `vmlab run`: one workload under one or more schemes.

use crate::args::{parse_schemes, parse_workload, RunArgs};
use crate::progress::RunProgress;
use crate::{table, CliError};
use std::ops::ControlFlow;
use vmlab_core::engine::{self, RunConfig};
use vmlab_core::stats::RunReport;

pub fn run(args: RunArgs) -> Result<(), CliError> {
    let workload = parse_workload(&args.workload)?;
    let schemes = parse_schemes(&args.paging)?;
    let template = args.sim.run_config(workload.clone())?;
    if schemes.contains(&vmlab_core::scheme::Paging::Native) {
        if let Some(flags) = args.sim.host_only_flags() {
            eprintln!("warning: {flags}: host backing, which native paging has not; the native run ignores it");
        }
    }
    let configs: Vec<RunConfig> = schemes
        .iter()
        .map(|&paging| RunConfig {
            paging,
            ..template.clone()
        })
        .collect();
    // Every run is checked before the first one starts.
    for config in &configs {
        engine::check(config).map_err(|msg| {
            crate::UsageError(format!(
                "{} under {}: {msg}",
                workload.canonical(),
                config.paging.name()
            ))
        })?;
    }
    let mut reports: Vec<RunReport> = Vec::new();
    for config in configs {
        let paging = config.paging;
        let mut progress = RunProgress::new(paging.name());
        let report = engine::run(&config, &mut |p| {
            progress.update(p);
            ControlFlow::Continue(())
        });
        progress.finish();
        reports.push(report.map_err(|e| match e {
            engine::EngineError::Config(msg) => CliError::Usage(crate::UsageError(msg)),
            other => CliError::Run(format!(
                "{} under {}: {other}",
                workload.canonical(),
                paging.name()
            )),
        })?);
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "provenance": crate::provenance(&template.profile, template.seed),
                "runs": reports,
            }))
            .expect("serializable")
        );
    } else {
        print!("{}", table::render(&reports));
    }
    Ok(())
}
