//! `vmlab list`: what can be run.

use crate::args::ListArgs;
use crate::CliError;
use vmlab_core::cost::profile::BUILTIN;
use vmlab_core::cost::Profile;
use vmlab_core::scheme::Paging;
use vmlab_core::workload::catalog;

pub fn list(args: ListArgs) -> Result<(), CliError> {
    let profiles: Vec<Profile> = BUILTIN
        .iter()
        .map(|(name, _)| Profile::builtin(name).expect("built-in profiles are valid"))
        .collect();
    if args.json {
        let value = serde_json::json!({
            "workloads": catalog().iter().map(|w| serde_json::json!({
                "name": w.name,
                "summary": w.summary,
                "params": w.params.iter().map(|p| serde_json::json!({"key": p.key, "default": p.default, "help": p.help})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "schemes": Paging::ALL.iter().map(|p| serde_json::json!({"name": p.name(), "summary": p.summary()})).collect::<Vec<_>>(),
            "profiles": profiles.iter().map(|p| serde_json::json!({"name": p.machine.name, "description": p.machine.description})).collect::<Vec<_>>(),
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&value).expect("serializable")
        );
        return Ok(());
    }
    println!("Workloads (--workload NAME[:key=value,...]):");
    for w in catalog() {
        println!("  {:<14} {}", w.name, w.summary);
        for p in &w.params {
            println!("      {:<10} default {:<8} {}", p.key, p.default, p.help);
        }
    }
    println!("\nPaging schemes (--paging a,b,...):");
    for p in Paging::ALL {
        println!("  {:<14} {}", p.name(), p.summary());
    }
    println!("\nMachine profiles (--machine NAME, or a path to a .toml file):");
    for p in profiles {
        println!("  {:<14} {}", p.machine.name, p.machine.description);
    }
    Ok(())
}
