//! `vmlab run`: one workload under one or more schemes.

use crate::args::{parse_schemes, parse_workload, RunArgs};
use crate::progress::RunProgress;
use crate::{table, CliError};
use std::ops::ControlFlow;
use vmlab_core::engine::{self, RunConfig};
use vmlab_core::provenance::Provenance;
use vmlab_core::stats::{seeds, RunReport};

pub fn run(args: RunArgs) -> Result<(), CliError> {
    let workload = parse_workload(&args.workload)?;
    let schemes = parse_schemes(&args.paging)?;
    let template = args.sim.run_config(&args.workload)?;
    if schemes.contains(&vmlab_core::scheme::Paging::Native) {
        if let Some(flags) = args.sim.host_only_flags() {
            eprintln!("warning: {flags}: host backing, which native paging has not; the native run ignores it");
        }
    }
    let seeds = args.seed_list()?;
    // Scheme by scheme, every seed of a scheme in a row.
    let configs: Vec<RunConfig> = schemes
        .iter()
        .flat_map(|&paging| {
            let template = &template;
            seeds.iter().map(move |&seed| RunConfig {
                paging,
                seed,
                ..template.clone()
            })
        })
        .collect();
    // Every run is checked before the first one starts.
    crate::run::check_all(&configs)?;
    let mut reports: Vec<RunReport> = Vec::new();
    for config in configs {
        let paging = config.paging;
        let label = if seeds.len() > 1 {
            format!("{} seed {}", paging.name(), config.seed)
        } else {
            paging.name().to_string()
        };
        let mut progress = RunProgress::new(&label);
        let report = engine::run(&config, &mut |p| {
            progress.update(p);
            ControlFlow::Continue(())
        });
        progress.finish();
        reports.push(report.map_err(|e| match e {
            engine::EngineError::Config(msg) | engine::EngineError::Workload(msg) => {
                CliError::Usage(crate::UsageError(msg))
            }
            other => CliError::Run(format!(
                "{} under {}: {other}",
                workload.canonical(),
                paging.name()
            )),
        })?);
    }
    let across = (seeds.len() > 1).then(|| seeds::summarize(&reports));
    if args.json {
        let provenance = Provenance {
            inputs: template.workload.inputs(),
            ..crate::provenance(&template.profile, template.seed)
        };
        let mut out = serde_json::json!({
            "provenance": provenance,
            "runs": reports,
        });
        if let Some(across) = &across {
            out["across_seeds"] = serde_json::to_value(across).expect("serializable");
        }
        println!(
            "{}",
            serde_json::to_string_pretty(&out).expect("serializable")
        );
    } else {
        // The table is the first seed's runs; the summary over every seed follows it.
        let first: Vec<RunReport> = reports
            .iter()
            .filter(|r| r.seed == template.seed)
            .cloned()
            .collect();
        print!("{}", table::render(&first));
        if let Some(across) = &across {
            print!("{}", table::render_seeds(across));
        }
    }
    Ok(())
}

/// Checks every run before the first one starts: a usage error naming the workload and the
/// scheme of the first run that cannot be made.
pub(crate) fn check_all(configs: &[RunConfig]) -> Result<(), crate::UsageError> {
    for config in configs {
        engine::check(config).map_err(|msg| {
            crate::UsageError(format!(
                "{} under {}: {msg}",
                config.workload.canonical(),
                config.paging.name()
            ))
        })?;
    }
    Ok(())
}
