//! Command-line arguments (clap), and their conversion into validated core types.

use crate::UsageError;
use clap::{Args, Parser, Subcommand};
use vmlab_core::addr::PageSize;
use vmlab_core::cost::{Profile, DEFAULT_PROFILE};
use vmlab_core::engine::sampling;
use vmlab_core::lab;

#[derive(Parser)]
#[command(
    name = "vmlab",
    version,
    about = "A laboratory for the cost of virtualization: simulate address translation under native and nested paging",
    long_about = "vmlab runs a workload on a simulated x86-64 machine (TLBs, paging-structure caches, a page walker \
that reads real page tables, and a cache hierarchy) under several memory-virtualization schemes, and reports \
exactly what the hardware and hypervisor did (TLB misses, walk references, VM exits, page faults) and what \
that costs in cycles and seconds under a machine profile.\n\n\
Example: vmlab run --workload sysbench-mem:block=4G,mode=rnd --paging native,nested\n\
Add --json to any command for a machine-readable report."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run one workload under one or more paging schemes and compare them.
    #[command(after_help = "Examples:\n  \
        vmlab run -w sysbench-mem:block=4G,mode=rnd            native vs nested on the TPT headline workload\n  \
        vmlab run -w tlb-bench:size=256M --host-pages 2m        TLB reach with 2 MiB host backing\n  \
        vmlab run -w gups:table=1G --guest-pages 2m --json      machine-readable, THP in the guest\n  \
        vmlab run -w gups:table=1G --set latency.dram_ns=60     the same machine with faster DRAM\n  \
        vmlab run -w tlb-bench:size=64M --seeds 5 --out res     five seeds; res/run.csv, run.json, run.svg\n  \
        vmlab rerun res/run.json                                 the same runs again: identical numbers?\n\n\
        Event counts cover the simulated sample and are exact; cycles and seconds come from the machine\n\
        profile's cost model and are extrapolated to the whole workload, so --set on a cost or latency\n\
        moves times and not counts. `vmlab list` shows every workload parameter, `vmlab profile show`\n\
        every profile key --set takes; docs/model.md explains the model.")]
    Run(RunArgs),
    /// List workloads (with their parameters), paging schemes and machine profiles.
    List(ListArgs),
    /// Measure the simulator's own speed: simulated accesses per second of host time.
    #[command(after_help = "Examples:\n  \
        vmlab bench -p native,nested -n 5000000 -r 5     best of 5, threaded (the default on 2+ CPUs)\n  \
        vmlab bench -p nested -t 1 --json                the single-thread pipeline, machine-readable\n\n\
        The report names the host's CPU (family and model, as lscpu shows them) and the memory\n\
        pipeline's threads: speed depends on both, so compare figures from one CPU, measured side\n\
        by side. With two threads each figure also gives the round trip of a cache line between\n\
        two threads, probed before its run: on a VM it shows whether the host runs the two vCPUs\n\
        on cores that share a cache (tens of ns) or not (hundreds), which can move the threaded\n\
        pipeline's speed. Simulated results never depend on any of these.")]
    Bench(BenchArgs),
    /// Run a built-in experiment (experiments/*.toml): a table on stdout, CSV, JSON and an SVG figure in a directory.
    #[command(after_help = "Examples:\n  \
        vmlab reproduce --list                     the experiments, one line each, with how long they take\n  \
        vmlab reproduce tpt                        the headline: sysbench-mem 4G rnd under every scheme\n  \
        vmlab reproduce pagetable --quick          fork latency over resident sizes, fewer forks\n  \
        vmlab reproduce tlb --out /tmp/tlb         write tlb.csv, tlb.json and tlb.svg to /tmp/tlb\n  \
        vmlab reproduce tpt --quick --json         the runs as JSON, the shape of `vmlab run --json`\n  \
        vmlab reproduce tpt --quick --html         also tpt.html: tables, figure and provenance in one page\n  \
        vmlab reproduce my-experiment.toml         an experiment file of your own (see experiments/)\n  \
        vmlab reproduce tpt --set exits.ept_violation=5000    every run with a dearer EPT violation\n  \
        vmlab reproduce tlb --quick --list-runs    its distinct runs, numbered, in the order they run\n  \
        vmlab reproduce tlb --shard 2/4            part 2 of 4 of those runs: results/tlb/part-2-of-4.json\n  \
        vmlab reproduce labt --set exits.mfmsr=1400             the e500 guest with a dearer mfmsr exit\n  \
        vmlab reproduce labt --reprice results/labt/labt.json --set hv.page_lookup=2000\n  \
        \x20                                          the saved replay's counts priced again, in a second\n\n\
        Job arrays: --shard I/N (I counted from 1) runs every distinct run RUN with (RUN - 1) mod N =\n\
        I - 1 and writes DIR/part-I-of-N.json; once all N parts are there, `vmlab merge DIR -o DIR`\n\
        writes the same NAME.csv, NAME.json and NAME.svg as one unsharded run (the provenance aside).\n\
        A part file already complete for the same plan and build is not run again. Only experiment\n\
        files split; labt and guest run whole.\n\n\
        An experiment file may sweep settings, each crossed with the rest: a profile key, seed,\n\
        fragmentation or pretouch, e.g. sweep = { \"latency.dram_ns\" = [60, 90, 120], seed = [1, 2] };\n\
        each swept value is a column of the CSV and part of its row's label.\n\n\
        Each experiment crosses workloads (and sizes), guest and host page sizes and paging schemes;\n\
        every combination is one `vmlab run` with the experiment's sample, run in parallel threads\n\
        (the results do not depend on how many). The JSON file records its provenance (the vmlab\n\
        version and git commit, the command line, the profile and its hash, the seed), so a result can be rerun.")]
    Reproduce(ReproduceArgs),
    /// Merge the parts of a sharded `vmlab reproduce NAME --shard I/N` into the experiment's
    /// files, the same as one unsharded run writes.
    #[command(after_help = "Examples:\n  \
        vmlab reproduce tlb --quick --shard 1/3     (and 2/3, 3/3: e.g. the tasks of a job array)\n  \
        vmlab merge results/tlb -o results/tlb      tlb.csv, tlb.json and tlb.svg from the three parts\n  \
        vmlab merge a/part-1-of-2.json b/part-2-of-2.json --html -o out\n\n\
        PARTS are part files (part-I-of-N.json) or directories holding them. The parts must be of one\n\
        plan (the same experiment, --quick, --set and --traces, the same profile file: each part\n\
        records a fingerprint of it) and one build of vmlab, and cover every run once: one part of each\n\
        I from 1 to N. Otherwise a one-line error names the part that is missing, given twice or of\n\
        another plan (exit 2), and nothing is written. An experiment that replays recordings (apps)\n\
        needs them at the merge too, at the paths the parts read them from.")]
    Merge(MergeArgs),
    /// Render the results `vmlab reproduce` wrote (NAME.json and NAME.svg) as one self-contained HTML page per experiment.
    #[command(after_help = crate::report::AFTER_HELP)]
    Report(crate::report::ReportArgs),
    /// Run the runs of a `vmlab run --json` report or of an experiment's NAME.json again,
    /// from the report alone, and say whether every number is identical.
    #[command(after_help = "Examples:\n  \
        vmlab run -w gups:table=64M -p native,nested --set latency.dram_ns=60 --json > r.json\n  \
        vmlab rerun r.json                 the same runs again: the table, then `rerun: identical: ...`\n  \
        vmlab rerun r.json --json          the new report as JSON (exit status 1 if a number differs)\n  \
        vmlab rerun results/tlb/tlb.json   every run of `vmlab reproduce tlb` again, on every core\n\n\
        The report holds what was asked (a run's \"comparison\": run spec, profile overrides, schemes,\n\
        seeds; an experiment's \"specs\": each run's spec with its sweep point and overrides) and the\n\
        effective machine profile (provenance.profile, every key with the value used), so the rerun does\n\
        not read the profile or experiment file again: an edited file does not change it. Exit status 0\n\
        when every number of every run is identical, 1 (with the first differences on stderr) when not.")]
    Rerun(RerunArgs),
    /// Show a machine profile as the simulator reads it, or list the built-in ones.
    #[command(after_help = "Examples:\n  \
        vmlab profile list                           the built-in profiles, one line each\n  \
        vmlab profile show                           the default profile (skylake), every key\n  \
        vmlab profile show skylake > my.toml         a copy to edit (e.g. [exits] cr3_load = 1000)\n  \
        vmlab run -m my.toml -w tlb-bench:size=1G    run on the edited machine\n  \
        vmlab profile show my.toml                   check a file: loads and validates it, or says why not\n\n\
        A profile is TOML: [machine] (clock, paging levels, host and guest memory), [core] (IPC, memory-level\n\
        parallelism, page walkers), [latency] (cycles; DRAM in ns), [tlb] and [memory] (structure geometry,\n\
        cache replacement), [virt] (shadow paging options, host remapping costs), [exits] (cycles per VM exit,\n\
        one key per exit reason), [shadow] (cycles per unit of KVM's shadow-MMU work), [tags] (TPT's\n\
        tag-check cost) and [kernel] (cycles per kernel operation, and pcid, kpti, hz). Every key is required; unknown keys and values out of bounds (each number has a lower\n\
        and an upper bound, and host_memory must be taggable by the caches) are errors naming the key.\n\
        profiles/skylake.toml gives the source of every number.")]
    Profile(ProfileArgs),
    /// Run a program under vmlab's user-level guest kernel (Linux x86-64), its system calls trapped by a chosen mechanism.
    #[command(after_help = crate::guest::AFTER_HELP)]
    Guest(crate::guest::GuestArgs),
    /// Inspect a recorded trace: the e500 Linux guest of guests/e500/, or an x86-64 Linux program (docs/x86-trace.md).
    #[command(after_help = crate::trace::AFTER_HELP)]
    Trace(crate::trace::TraceArgs),
    /// Record a real x86-64 Linux program (and what it forks and execs) under QEMU user mode,
    /// for `vmlab run -w trace:file=FILE`.
    #[command(after_help = crate::record::AFTER_HELP)]
    Record(crate::record::RecordArgs),
    /// How much a result moves over the profile's assumption ranges, and which assumptions
    /// move it most (Morris elementary effects): runs the Python package's
    /// `vmlab.sensitivity`. `vmlab sensitivity --help` lists its options.
    #[command(disable_help_flag = true, after_help = crate::sensitivity::AFTER_HELP)]
    Sensitivity(crate::sensitivity::SensitivityArgs),
}

#[derive(Args)]
pub struct ProfileArgs {
    #[command(subcommand)]
    pub command: ProfileCommand,
}

#[derive(Subcommand)]
pub enum ProfileCommand {
    /// Print the effective profile as TOML: every key with the value the simulator uses
    /// (comments and sources are in the profile file). The output loads back with --machine.
    Show(ProfileShowArgs),
    /// List the built-in profiles: name, description and fingerprint.
    List,
}

#[derive(Args)]
pub struct ProfileShowArgs {
    /// A built-in profile name (skylake) or a path to a .toml file.
    #[arg(value_name = "NAME|PATH", default_value = DEFAULT_PROFILE)]
    pub profile: String,
}

#[derive(Args)]
pub struct RunArgs {
    /// Workload as NAME[:key=value,...], e.g. sysbench-mem:block=4G,mode=rnd, gups:table=1G,
    /// tlb-bench:size=64M. Sizes are binary (4K = 4096 bytes, 4G = 4 GiB; 4KiB and 4GiB too;
    /// 4KB and 4GB are refused as ambiguous). `vmlab list` shows every workload and
    /// parameter, and the largest footprint the machine holds.
    #[arg(long, short = 'w', value_name = "SPEC")]
    pub workload: String,
    /// Paging schemes to compare, comma-separated: native, nested, shadow, agile, pv, tpt, tpt-prototype.
    #[arg(
        long,
        short = 'p',
        value_name = "SCHEMES",
        default_value = "native,nested",
        value_delimiter = ','
    )]
    pub paging: Vec<String>,
    #[command(flatten)]
    pub sim: SimArgs,
    /// Run every scheme under N seeds (--seed, --seed + 1, ...) and report, per scheme, the
    /// mean time with a 95% Student-t interval over the seeds beside each run's interval
    /// over its windows: how much a result depends on the seed's random choices.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub seeds: u64,
    /// Print one JSON object {"comparison": {...}, "provenance": {...}, "runs": [...]}
    /// instead of a table (with --seeds, every seed's run and "across_seeds": one summary
    /// per scheme). `vmlab rerun FILE` runs it again from that JSON alone.
    #[arg(long)]
    pub json: bool,
    /// Also write run.csv (a row per run), run.json (the --json report, which `vmlab rerun`
    /// takes) and run.svg (the time per scheme, a bar each) to DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
}

impl RunArgs {
    /// The comparison these arguments ask for (checked when it runs).
    pub fn comparison(&self) -> Result<lab::Comparison, UsageError> {
        self.seed_list()?;
        let mut spec = self.sim.spec(&self.workload);
        spec.overrides = self.sim.set.overrides()?;
        Ok(lab::Comparison {
            spec,
            schemes: self.paging.clone(),
            seeds: self.seeds,
        })
    }

    /// The seeds to run: --seed and the --seeds - 1 after it, checked against overflow.
    pub fn seed_list(&self) -> Result<Vec<u64>, UsageError> {
        let first = self.sim.seed;
        first.checked_add(self.seeds - 1).ok_or_else(|| {
            UsageError(format!(
                "--seed {first} with --seeds {} runs past the largest seed ({}); use a smaller --seed",
                self.seeds,
                u64::MAX
            ))
        })?;
        Ok((0..self.seeds).map(|i| first + i).collect())
    }
}

/// Options shared by every command that simulates.
#[derive(Args, Clone)]
pub struct SimArgs {
    /// Machine profile: a built-in name (skylake) or a path to a .toml file.
    #[arg(long, short = 'm', value_name = "PROFILE", default_value = DEFAULT_PROFILE)]
    pub machine: String,
    /// Guest page size for anonymous memory: 4k, or 2m (transparent huge pages always).
    #[arg(long, value_name = "SIZE", default_value = "4k")]
    pub guest_pages: String,
    /// Host page size backing guest memory under virtualized schemes: 4k, 2m or 1g.
    #[arg(long, value_name = "SIZE", default_value = "4k")]
    pub host_pages: String,
    /// Fraction (0 to 1) of large host regions too fragmented to back with large pages.
    #[arg(
        long,
        value_name = "F",
        default_value_t = 0.0,
        allow_negative_numbers = true
    )]
    pub fragmentation: f64,
    /// Measured accesses to simulate, in 10 equal windows whose spread gives the ± (a 95%
    /// Student-t interval); the rest of the workload is extrapolated from them. 0, or at
    /// least the workload's accesses, simulates every access from cold with no warm-up.
    /// Default: 10M; a recording (`trace:file=...`) is replayed whole.
    #[arg(long, short = 'n', value_name = "N")]
    pub accesses: Option<u64>,
    /// The most accesses to run before measuring, to warm TLBs and caches (not counted). The
    /// warm-up runs in windows of 1M accesses and stops once the cycles per access of the
    /// last 2 windows average within --tolerance of the 2 before (a sample whose windows
    /// still trend counts as warm-up too, and is measured again); the report gives the
    /// warm-up used and whether it converged or hit this cap (or the workload's end).
    #[arg(long, value_name = "N", default_value_t = lab::spec::DEFAULT_WARMUP_CAP)]
    pub warmup: u64,
    /// Relative tolerance of the warm-up's steady-state test (0.001 = 0.1%).
    #[arg(
        long,
        value_name = "T",
        default_value_t = sampling::DEFAULT_TOLERANCE,
        allow_negative_numbers = true
    )]
    pub tolerance: f64,
    /// Run exactly --warmup accesses of warm-up, with no steady-state test.
    #[arg(long)]
    pub fixed_warmup: bool,
    /// Seed of the workload's random numbers (and of host fragmentation).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Back all guest memory before the workload starts, as the TPT artifact's
    /// `echo 1 > /sys/kernel/devirt` does (its EPT violations count in set-up; slow with
    /// 4k host pages). No effect under native paging.
    #[arg(long)]
    pub pretouch: bool,
    #[command(flatten)]
    pub set: SetArgs,
}

/// `--set SECTION.KEY=VALUE`, shared by the commands that simulate.
#[derive(Args, Clone, Default)]
pub struct SetArgs {
    /// Override a machine-profile key for this command, as `vmlab profile show` names it:
    /// SECTION.KEY=VALUE (e.g. latency.dram_ns=60, exits.cr3_load=1000, tlb.stlb.entries=3072,
    /// memory.llc.size=44M, kernel.pcid=false). Repeatable; validated like the profile file
    /// (an unknown key or a value out of bounds is an error). The JSON's provenance records
    /// the overrides and the effective profile. For `reproduce labt` the keys are the e500
    /// profile's (profiles/e500.toml: exits.mfmsr=1400, hv.page_lookup=2000, core.cpi=2).
    #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
    pub set: Vec<String>,
}

impl SetArgs {
    /// The overrides, by key (a key given twice: the last value).
    pub fn overrides(&self) -> Result<std::collections::BTreeMap<String, String>, UsageError> {
        let mut out = std::collections::BTreeMap::new();
        for text in &self.set {
            let Some((key, value)) = text.split_once('=') else {
                return Err(UsageError(format!(
                    "--set '{text}': want SECTION.KEY=VALUE, e.g. --set latency.dram_ns=60 (`vmlab profile show` lists every key)"
                )));
            };
            out.insert(key.trim().to_string(), value.trim().to_string());
        }
        Ok(out)
    }

    /// `profile` with the overrides applied (errors name the override).
    pub fn apply(&self, profile: &Profile) -> Result<Profile, UsageError> {
        let overrides: Vec<(String, String)> = self.overrides()?.into_iter().collect();
        profile
            .with_overrides(&overrides)
            .map_err(|e| UsageError(e.to_string()))
    }
}

#[derive(Args)]
pub struct RerunArgs {
    /// A report written by `vmlab run --json` (or `vmlab run --out DIR`'s run.json), or an
    /// experiment's NAME.json written by `vmlab reproduce` (or `vmlab merge`).
    #[arg(value_name = "FILE")]
    pub file: std::path::PathBuf,
    /// Print the new report as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct ListArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct ReproduceArgs {
    /// Experiment: a built-in name (tpt, pagetable, tlb, lmbench, hugepages, remap, apps; guest, the
    /// user-level guest kernel's benchmarks; labt, the recorded e500 guest under each e500
    /// hypervisor model) or a path to a .toml file.
    #[arg(value_name = "NAME", required_unless_present = "list")]
    pub name: Option<String>,
    /// Describe each built-in experiment (or only NAME) in one line, and exit.
    #[arg(long, conflicts_with_all = ["quick", "json", "out", "jobs", "traces", "html", "set", "list_runs", "shard"])]
    pub list: bool,
    /// List every distinct run of the experiment (as --quick, --set and --traces make it), one
    /// per line with its number, in the order the runs run and --shard deals them out, and
    /// exit. With --json: {"plan": {...}, "runs": [{"run", "label", "spec"}, ...]}.
    #[arg(long, conflicts_with_all = ["html", "out", "jobs", "shard", "trace"])]
    pub list_runs: bool,
    /// Run only part I of N of the experiment's distinct runs (I counted from 1; run RUN of
    /// --list-runs is in part ((RUN - 1) mod N) + 1) and write it to DIR/part-I-of-N.json,
    /// for `vmlab merge`. A part file already complete for the same plan is not run again.
    #[arg(long, value_name = "I/N", conflicts_with_all = ["json", "html"])]
    pub shard: Option<String>,
    /// The quick variant: shorter samples and fewer iterations, the same workloads, sizes and schemes.
    #[arg(long)]
    pub quick: bool,
    /// Print one JSON object {"provenance": {...}, "runs": [...]} (as `vmlab run --json`)
    /// instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also write NAME.html: the tables, the figure, every run's specification and the
    /// provenance in one self-contained page (what `vmlab report DIR` renders later).
    #[arg(long)]
    pub html: bool,
    /// Directory for NAME.csv, NAME.json and NAME.svg, or with --shard for part-I-of-N.json
    /// [default: results/NAME].
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
    /// Runs to simulate at once [default: the number of CPUs].
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
    /// labt only: the recorded e500 trace to replay, or `minimal` for the first, minimal guest's
    /// (guests/e500/traces/e500-linux-6.1.trace.zst) [default:
    /// guests/e500/traces/e500-linux-6.1-busybox.trace.zst].
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
    /// labt only: instead of replaying, price the counts of a saved labt.json again under the
    /// e500 profile with --set applied (every exit, unit of work and instruction at the new
    /// costs; seconds, not minutes). Sizes the models act on (hv.host_tlb1_reserved,
    /// hv.guest_ram_mib, hv.host_huge_page_kib) change the counts and need a replay.
    #[arg(long, value_name = "LABT.JSON", conflicts_with_all = ["trace", "quick", "list_runs", "shard"])]
    pub reprice: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub set: SetArgs,
    /// For experiments that replay recordings (apps): the directory of the recordings,
    /// substituted for {traces} in the experiment's workloads [default: the experiment's,
    /// traces/apps for apps; apps/record.sh DIR makes them].
    #[arg(long, value_name = "DIR")]
    pub traces: Option<std::path::PathBuf>,
}

#[derive(Args)]
pub struct MergeArgs {
    /// Part files (part-I-of-N.json, from `vmlab reproduce NAME --shard I/N`) or directories
    /// holding them.
    #[arg(value_name = "PARTS", required = true)]
    pub parts: Vec<std::path::PathBuf>,
    /// Directory for NAME.csv, NAME.json and NAME.svg [default: results/NAME].
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
    /// Also write NAME.html, as `vmlab reproduce --html` does.
    #[arg(long)]
    pub html: bool,
    /// Print one JSON object {"provenance": {...}, "runs": [...]} instead of the table, as
    /// `vmlab reproduce --json` does.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct BenchArgs {
    /// Workload to time, as `vmlab run --workload` takes it (sizes binary: 4G = 4 GiB).
    #[arg(
        long,
        short = 'w',
        value_name = "SPEC",
        default_value = "sysbench-mem:block=4G,mode=rnd"
    )]
    pub workload: String,
    /// Paging schemes to time, comma-separated (default: every scheme).
    #[arg(long, short = 'p', value_name = "SCHEMES", value_delimiter = ',')]
    pub paging: Vec<String>,
    /// Measured accesses per scheme. 0, or at least the workload's accesses, times the whole
    /// workload: for the default workload about a billion accesses per scheme, minutes each
    /// (a line on stderr marks each scheme as it finishes).
    #[arg(long, short = 'n', value_name = "N", default_value_t = 20_000_000)]
    pub accesses: u64,
    /// Time each scheme this many times and report the fastest run; on a shared or noisy
    /// machine the best of 3 or more is the figure to compare.
    #[arg(long, short = 'r', value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Machine profile (built-in name or .toml path).
    #[arg(long, short = 'm', value_name = "PROFILE", default_value = DEFAULT_PROFILE)]
    pub machine: String,
    /// Host threads of the memory pipeline: 2 runs the cache levels on a second thread, 1
    /// runs them level by level on the translating thread, 0 serves every reference at once
    /// as it is made (no pipeline). Results are identical in every mode. Default: 2 on a host
    /// with two or more CPUs, else 1.
    #[arg(long, short = 't', value_name = "N", value_parser = clap::value_parser!(u8).range(0..=2))]
    pub threads: Option<u8>,
    #[command(flatten)]
    pub set: SetArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// A built-in profile by name, or a profile file by path (ending in `.toml` or containing a
/// `/`), read and validated.
pub fn load_profile(name: &str) -> Result<Profile, UsageError> {
    lab::load_profile(name).map_err(|e| UsageError(e.to_string()))
}

impl SimArgs {
    /// The flags given that only a hypervisor uses (host backing), as "--host-pages 2m,
    /// --pretouch", or None.
    pub fn host_only_flags(&self) -> Option<String> {
        let mut given = Vec::new();
        if !self
            .host_pages
            .eq_ignore_ascii_case(PageSize::Size4K.name())
        {
            given.push(format!("--host-pages {}", self.host_pages));
        }
        if self.fragmentation != 0.0 {
            given.push(format!("--fragmentation {}", self.fragmentation));
        }
        if self.pretouch {
            given.push("--pretouch".to_string());
        }
        (!given.is_empty()).then(|| given.join(", "))
    }

    /// The run these options describe for `workload`, as a spec (scheme: native).
    pub fn spec(&self, workload: &str) -> lab::RunSpec {
        lab::RunSpec {
            machine: self.machine.clone(),
            guest_pages: self.guest_pages.clone(),
            host_pages: self.host_pages.clone(),
            fragmentation: self.fragmentation,
            accesses: self
                .accesses
                .unwrap_or_else(|| vmlab_core::workload::default_accesses(workload)),
            warmup: self.warmup,
            tolerance: self.tolerance,
            fixed_warmup: self.fixed_warmup,
            seed: self.seed,
            pretouch: self.pretouch,
            ..lab::RunSpec::new(workload)
        }
    }
}
