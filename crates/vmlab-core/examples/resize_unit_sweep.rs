//! LABT's adaptive-resizing split unit, swept over the committed e500 guest trace: tracing
//! faults, host TLB misses, splits, merges and added cycles per unit, with and without
//! read-fault avoidance, beside every registered model. Prints the tables docs/mechanisms.md
//! section 8 quotes:
//!
//! ```sh
//! cargo run --release -p vmlab-core --example resize_unit_sweep
//! ```

use std::path::PathBuf;
use vmlab_core::cost::e500::E500Costs;
use vmlab_core::hv::e500::labt::{Labt, LabtConfig, Variant};
use vmlab_core::hv::e500::registry;
use vmlab_core::hv::e500::replay::replay;
use vmlab_core::hv::e500::{E500Exit, HvModel};
use vmlab_core::trace::e500::open;

fn main() {
    let trace = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../guests/e500/traces/e500-linux-6.1.trace.zst");
    let costs = E500Costs::builtin();
    let host = costs
        .host()
        .expect("the built-in profile has the host's sizes");
    let units: [u64; 6] = [4 << 10, 16 << 10, 64 << 10, 128 << 10, 256 << 10, 1 << 20];
    let names = ["4K", "16K", "64K", "128K", "256K", "1M"];
    let mut models: Vec<Box<dyn HvModel>> =
        registry::MODELS.iter().map(|m| (m.build)(&host)).collect();
    for (i, &unit) in units.iter().enumerate() {
        for avoid in [false, true] {
            let base = if avoid { Variant::All } else { Variant::Resize };
            let cfg = LabtConfig {
                resize_unit: Some(unit),
                ..base.config()
            };
            let name: &'static str =
                Box::leak(format!("{}-{}", base.name(), names[i]).into_boxed_str());
            models.push(Box::new(Labt::with_config(&host, name, cfg)));
        }
    }
    let trace = open(&trace).unwrap_or_else(|e| {
        eprintln!("error: cannot open the committed e500 trace: {e}");
        std::process::exit(2)
    });
    let r = replay(trace, &mut models, |_, _, _| {}).expect("the committed trace replays");
    println!(
        "whole run: {} recorded instructions, {:.3} s bare",
        r.insns.0 + r.insns.1,
        costs.seconds_of(r.insns.0 + r.insns.1, &Default::default())
    );
    println!("| config | added time | exits | tracing faults | host TLB misses |");
    println!("|---|---:|---:|---:|---:|");
    for (i, n) in r
        .model_names
        .iter()
        .enumerate()
        .take(registry::MODELS.len())
    {
        let c = &r.total[i];
        println!(
            "| {n} | {:.3} s | {} | {} | {} |",
            costs.seconds(costs.added_cycles(c)),
            c.exits.total(),
            c.tracing_faults,
            c.exits.get(E500Exit::HostTlbMiss)
        );
    }
    println!(
        "| configuration | tracing faults | host TLB misses | splits | merges | added cycles |"
    );
    println!("|---|---|---|---|---|---|");
    for (i, n) in r.model_names.iter().enumerate() {
        let c = &r.total[i];
        println!(
            "| {n} | {} | {} | {} | {} | {} |",
            c.tracing_faults,
            c.exits.get(E500Exit::HostTlbMiss),
            c.splits,
            c.merges,
            costs.added_cycles(c)
        );
    }
    for (i, n) in r.model_names.iter().enumerate() {
        let c = &r.total[i];
        println!("{n}: {:?}", c.exits.nonzero().collect::<Vec<_>>());
        println!("{n}: {:?}", c.extra);
    }
}
