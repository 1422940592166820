//! Job arrays: an experiment's distinct runs dealt out to N parts that run apart (the tasks of
//! a job array, or other machines), each making a [`PartialResult`], and the [`merge`] of the
//! parts back into the rows one unsharded run gives, so that the same writer
//! ([`report::files`](crate::lab::report::files)) renders both, byte for byte.
//!
//! - [`Shard`]: part I of N, counted from 1. Run r of the plan (its distinct runs counted from
//!   1, in [`Plan::distinct_jobs`]'s order) belongs to part ((r - 1) mod N) + 1: round robin,
//!   so every part gets a share of each workload's cheap and dear runs.
//! - [`ShardedPlan`]: an experiment planned for sharding: its plan, profile and [`PlanId`]
//!   (experiment, quick, overrides, run count and a fingerprint of the experiment's
//!   definition, the profile file and every run's spec), the runs it lists and a part's run.
//! - [`PartialResult`]: one part's run reports keyed by run number, with the plan's identity,
//!   the experiment's definition (so a merge needs no experiment file) and the provenance.
//! - [`merge`]: every part of one plan, each once, into [`Merged`]: the experiment, its plan,
//!   its rows and the parts' provenance.

use crate::cost::Profile;
use crate::lab::experiment::Experiment;
use crate::lab::plan::{Job, Plan};
use crate::lab::report::{rows, to_json, Row};
use crate::lab::runner::{dedup_key, run_jobs, LabProgressFn};
use crate::lab::spec::RunSpec;
use crate::lab::LabError;
use crate::provenance::{Provenance, GIT_COMMIT, VERSION};
use crate::stats::RunReport;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// Part `index` of `count` parts, counted from 1 (written `I/N`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Shard {
    index: usize,
    count: usize,
}

impl Shard {
    /// Part `index` of `count` (1 <= `index` <= `count`), or why not.
    pub fn new(index: usize, count: usize) -> Result<Shard, LabError> {
        let err = |why: String| LabError::Shard(format!("shard '{index}/{count}': {why}"));
        if count == 0 {
            return Err(err("N is the number of parts, at least 1".into()));
        }
        if index == 0 {
            return Err(err(format!(
                "parts are counted from 1, so I is 1 to {count} (from a 0-based task id ID: $((ID + 1))/{count})"
            )));
        }
        if index > count {
            return Err(err(format!(
                "there are only {count} parts, so I is 1 to {count}"
            )));
        }
        Ok(Shard { index, count })
    }

    /// Parses `I/N` (whole numbers, I from 1 to N).
    pub fn parse(text: &str) -> Result<Shard, LabError> {
        let numbers = text
            .split_once('/')
            .and_then(|(i, n)| Some((i.trim().parse().ok()?, n.trim().parse().ok()?)));
        match numbers {
            Some((index, count)) => Shard::new(index, count),
            None => Err(LabError::Shard(format!(
                "shard '{text}': want I/N, part I of N parts counted from 1 (e.g. 2/4)"
            ))),
        }
    }

    /// I, from 1.
    pub fn index(self) -> usize {
        self.index
    }

    /// N, the number of parts.
    pub fn count(self) -> usize {
        self.count
    }

    /// Whether run `run` (counted from 1) belongs to this part.
    pub fn owns(self, run: usize) -> bool {
        run >= 1 && (run - 1) % self.count == self.index - 1
    }

    /// The runs of this part (counted from 1, ascending) among `total` runs.
    pub fn runs(self, total: usize) -> Vec<usize> {
        (self.index..=total).step_by(self.count).collect()
    }

    /// The part's file name: `part-I-of-N.json`.
    pub fn file_name(self) -> String {
        format!("part-{}-of-{}.json", self.index, self.count)
    }

    /// The part a file name `part-I-of-N.json` names, if it is one ([`Shard::file_name`]).
    pub fn from_file_name(name: &str) -> Option<Shard> {
        let (index, count) = name
            .strip_prefix("part-")?
            .strip_suffix(".json")?
            .split_once("-of-")?;
        Shard::new(index.parse().ok()?, count.parse().ok()?).ok()
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = LabError;

    fn from_str(text: &str) -> Result<Shard, LabError> {
        Shard::parse(text)
    }
}

impl TryFrom<String> for Shard {
    type Error = LabError;

    fn try_from(text: String) -> Result<Shard, LabError> {
        Shard::parse(&text)
    }
}

impl From<Shard> for String {
    fn from(shard: Shard) -> String {
        shard.to_string()
    }
}

/// What identifies a plan: parts of one plan have equal ones, and only those merge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanId {
    /// The experiment's name.
    pub experiment: String,
    /// Whether it is the quick variant.
    pub quick: bool,
    /// The machine-profile overrides of every run (the experiment's, and `--set`'s).
    #[serde(default)]
    pub overrides: BTreeMap<String, String>,
    /// The plan's distinct runs.
    pub runs: usize,
    /// FNV-1a 64 (`fnv1a64:` and 16 hex digits) of the experiment's definition, the quick
    /// flag, the profile file's fingerprint and every distinct run's spec, in order.
    pub fingerprint: String,
}

impl PlanId {
    /// The identity of `plan`, planned from `exp`, on the profile file whose fingerprint
    /// ([`Profile::fingerprint_hex`], as [`Provenance::machine_fingerprint`] records it) is
    /// `machine_fingerprint`.
    pub fn new(
        exp: &Experiment,
        plan: &Plan,
        machine_fingerprint: &str,
    ) -> Result<PlanId, LabError> {
        #[derive(Serialize)]
        struct Identity<'a> {
            experiment: &'a Experiment,
            quick: bool,
            machine_fingerprint: &'a str,
            runs: Vec<RunSpec>,
        }
        let runs: Vec<RunSpec> = plan
            .distinct_jobs()
            .into_iter()
            .map(|job| plan.run_spec(job))
            .collect();
        let count = runs.len();
        let text = to_json(&Identity {
            experiment: exp,
            quick: plan.quick,
            machine_fingerprint,
            runs,
        })?;
        Ok(PlanId {
            experiment: plan.experiment.clone(),
            quick: plan.quick,
            overrides: plan.overrides.clone(),
            runs: count,
            fingerprint: fnv1a64(text.as_bytes()),
        })
    }

    /// The plan's name, for messages: "tpt --quick --set latency.dram_ns=60".
    pub fn name(&self) -> String {
        let mut text = self.experiment.clone();
        if self.quick {
            text.push_str(" --quick");
        }
        for (k, v) in &self.overrides {
            text.push_str(&format!(" --set {k}={v}"));
        }
        text
    }

    /// The plan in words, for messages that tell plans apart: "tpt --quick (9 runs,
    /// fnv1a64:...)".
    pub fn describe(&self) -> String {
        format!("{} ({} runs, {})", self.name(), self.runs, self.fingerprint)
    }
}

/// FNV-1a (64 bits) of `bytes`, as `fnv1a64:HEX`.
fn fnv1a64(bytes: &[u8]) -> String {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("fnv1a64:{hash:016x}")
}

/// One distinct run of a plan, as `vmlab reproduce --list-runs` lists it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlannedRun {
    /// Its number, from 1, in the order the runner takes the runs.
    pub run: usize,
    /// Its row's label in the experiment's tables.
    pub label: String,
    /// What it runs.
    pub spec: RunSpec,
}

/// An experiment planned for sharding: the experiment (as run: its recordings directory and
/// overrides applied), its plan, the machine profile and the plan's identity.
#[derive(Clone, Debug)]
pub struct ShardedPlan {
    /// The experiment.
    pub experiment: Experiment,
    /// Its plan.
    pub plan: Plan,
    /// The machine profile of every run (the plan's overrides applied).
    pub profile: Profile,
    /// The plan's identity.
    pub id: PlanId,
}

impl ShardedPlan {
    /// Plans `experiment` (`quick`: its quick variant) and loads its profile.
    pub fn new(experiment: Experiment, quick: bool) -> Result<ShardedPlan, LabError> {
        let plan = experiment.plan(quick)?;
        let profile = plan.profile()?;
        let id = PlanId::new(&experiment, &plan, &profile.fingerprint_hex())?;
        Ok(ShardedPlan {
            experiment,
            plan,
            profile,
            id,
        })
    }

    /// Every distinct run, in order, numbered from 1.
    pub fn runs(&self) -> Vec<PlannedRun> {
        self.plan
            .distinct_jobs()
            .into_iter()
            .enumerate()
            .map(|(i, job)| PlannedRun {
                run: i + 1,
                label: self.plan.varies.label(&job.group, true),
                spec: self.plan.run_spec(job),
            })
            .collect()
    }

    /// Runs the runs of `shard` on `threads` threads (as [`run_plan`](crate::lab::run_plan)
    /// runs a whole plan: [`Event::Finished`](crate::lab::Event::Finished) counts the part's
    /// runs) and returns the part, with `provenance` (how the part was run).
    pub fn run(
        &self,
        shard: Shard,
        threads: usize,
        progress: &LabProgressFn<'_>,
        provenance: Provenance,
    ) -> Result<PartialResult, LabError> {
        let distinct = self.plan.distinct_jobs();
        let numbers = shard.runs(distinct.len());
        let todo: Vec<&Job> = numbers.iter().map(|&r| distinct[r - 1]).collect();
        let reports = run_jobs(&self.plan, &todo, &self.profile, threads, progress)?;
        let runs = numbers
            .iter()
            .zip(&todo)
            .zip(reports)
            .map(|((&run, &job), report)| PartRun {
                run,
                spec: self.plan.run_spec(job),
                report,
            })
            .collect();
        Ok(PartialResult {
            plan: self.id.clone(),
            shard,
            experiment: self.experiment.clone(),
            provenance,
            runs,
        })
    }
}

/// One run of a part: its number in the plan, its spec and its report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartRun {
    /// The run's number, from 1 ([`ShardedPlan::runs`]).
    pub run: usize,
    /// What it ran.
    pub spec: RunSpec,
    /// Its report.
    pub report: RunReport,
}

/// The result of one part of a sharded experiment: `part-I-of-N.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartialResult {
    /// The plan it is a part of.
    pub plan: PlanId,
    /// Which part.
    pub shard: Shard,
    /// The experiment as run (recordings directory and overrides applied): what a merge
    /// plans again to lay out the rows.
    pub experiment: Experiment,
    /// How the part was run: the build, the command, the profile.
    pub provenance: Provenance,
    /// The part's runs, ascending by number.
    pub runs: Vec<PartRun>,
}

impl PartialResult {
    /// The file's text (pretty, keys sorted, a final newline).
    pub fn to_json(&self) -> Result<String, LabError> {
        to_json(self)
    }

    /// Reads a part back from its JSON.
    pub fn from_json(text: &str) -> Result<PartialResult, LabError> {
        serde_json::from_str(text).map_err(|e| {
            LabError::Shard(format!(
                "not a part of a sharded run (part-I-of-N.json): {e}"
            ))
        })
    }

    /// Whether it holds exactly its shard's runs of its plan.
    pub fn is_complete(&self) -> bool {
        let numbers: Vec<usize> = self.runs.iter().map(|r| r.run).collect();
        numbers == self.shard.runs(self.plan.runs)
    }

    /// Whether it is `shard` of the plan `id`, complete, and made by this build: a part that
    /// need not run again.
    pub fn completes(&self, id: &PlanId, shard: Shard) -> bool {
        &self.plan == id
            && self.shard == shard
            && self.is_complete()
            && self.provenance.vmlab_version == VERSION
            && self.provenance.git_commit == GIT_COMMIT
    }
}

/// Parts merged: what one unsharded run of the plan gives.
#[derive(Clone, Debug)]
pub struct Merged {
    /// The experiment, as the parts ran it.
    pub experiment: Experiment,
    /// Its plan.
    pub plan: Plan,
    /// A row per job of the plan, in order, as [`run_plan`](crate::lab::run_plan) returns.
    pub rows: Vec<Row>,
    /// The first part's provenance (every part's build and profile are the same).
    pub provenance: Provenance,
}

/// Merges `parts` (each named, for messages, by where it came from): they must be parts of
/// one plan by one build, split into the same number of parts, each part given once,
/// complete, and none missing.
pub fn merge(parts: &[(String, PartialResult)]) -> Result<Merged, LabError> {
    let Some((first_name, first)) = parts.first() else {
        return Err(LabError::Shard("no parts to merge".into()));
    };
    let err = |message: String| Err(LabError::Shard(message));
    let build = |p: &Provenance| format!("{} {}", p.vmlab_version, p.git_commit);
    for (name, part) in &parts[1..] {
        if part.plan != first.plan {
            return err(format!(
                "cannot merge {name} with {first_name}: parts of different plans, {} and {}",
                part.plan.describe(),
                first.plan.describe()
            ));
        }
        if build(&part.provenance) != build(&first.provenance) {
            return err(format!(
                "cannot merge {name} with {first_name}: made by different builds of vmlab ({} and {}); run every part with one build",
                build(&part.provenance),
                build(&first.provenance)
            ));
        }
        if part.shard.count() != first.shard.count() {
            return err(format!(
                "cannot merge {name} (part {}) with {first_name} (part {}): the plan split into different numbers of parts",
                part.shard, first.shard
            ));
        }
    }
    let count = first.shard.count();
    let total = first.plan.runs;
    let mut given: BTreeMap<usize, &str> = BTreeMap::new();
    for (name, part) in parts {
        if let Some(other) = given.insert(part.shard.index(), name) {
            return err(format!(
                "part {} of {} given twice: {other} and {name}",
                part.shard,
                first.plan.name()
            ));
        }
        if !part.is_complete() {
            let held: Vec<usize> = part.runs.iter().map(|r| r.run).collect();
            return err(format!(
                "{name}: part {} is incomplete: it holds runs {} of {total}, it should hold runs {}",
                part.shard,
                list(&held),
                list(&part.shard.runs(total))
            ));
        }
    }
    let missing: Vec<Shard> = (1..=count)
        .filter(|i| !given.contains_key(i))
        .map(|i| Shard { index: i, count })
        .collect();
    if !missing.is_empty() {
        let runs: Vec<usize> = (1..=total)
            .filter(|&r| missing.iter().any(|s| s.owns(r)))
            .collect();
        let names: Vec<String> = missing.iter().map(Shard::to_string).collect();
        return err(format!(
            "missing part{} {} of {} (runs {} of {total})",
            if missing.len() > 1 { "s" } else { "" },
            names.join(", "),
            first.plan.name(),
            list(&runs)
        ));
    }
    let plan = first.experiment.plan(first.plan.quick)?;
    let id = PlanId::new(
        &first.experiment,
        &plan,
        &first.provenance.machine_fingerprint,
    )?;
    if id != first.plan {
        return err(format!(
            "{first_name}: its experiment does not plan to its plan's fingerprint ({} there, {} here): edited by hand, or planned by another version of vmlab",
            first.plan.fingerprint, id.fingerprint
        ));
    }
    let distinct = plan.distinct_jobs();
    let mut reports = BTreeMap::new();
    for (name, part) in parts {
        for run in &part.runs {
            // Complete parts of this plan hold runs 1 to its number of runs.
            let Some(&job) = distinct.get(run.run.wrapping_sub(1)) else {
                return err(format!("{name}: no run {} in the plan", run.run));
            };
            if run.spec != plan.run_spec(job) {
                return err(format!(
                    "{name}: run {} is not the plan's run {} ({} under {})",
                    run.run, run.run, run.spec.workload, run.spec.paging
                ));
            }
            reports.insert(dedup_key(job), run.report.clone());
        }
    }
    let rows = rows(&plan, &reports);
    Ok(Merged {
        experiment: first.experiment.clone(),
        plan,
        rows,
        provenance: first.provenance.clone(),
    })
}

/// Run numbers as "1, 4, 7", the first eight and how many more.
fn list(runs: &[usize]) -> String {
    if runs.is_empty() {
        return "none".to_string();
    }
    let shown: Vec<String> = runs.iter().take(8).map(usize::to_string).collect();
    match runs.len() {
        n if n > 8 => format!("{} and {} more", shown.join(", "), n - 8),
        _ => shown.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::report::csv;

    /// Every run of a quick hugepages plan, faked (no simulation): run r's report takes r
    /// seconds, so a misplaced report shows.
    fn fake_part(sharded: &ShardedPlan, shard: Shard) -> PartialResult {
        let profile = &sharded.profile;
        let distinct = sharded.plan.distinct_jobs();
        PartialResult {
            plan: sharded.id.clone(),
            shard,
            experiment: sharded.experiment.clone(),
            provenance: Provenance::new("test", profile, sharded.plan.seed),
            runs: shard
                .runs(distinct.len())
                .into_iter()
                .map(|run| PartRun {
                    run,
                    spec: sharded.plan.run_spec(distinct[run - 1]),
                    report: fake_report(run),
                })
                .collect(),
        }
    }

    fn fake_report(run: usize) -> RunReport {
        RunReport {
            seconds: run as f64,
            ..RunReport::default()
        }
    }

    /// hugepages --quick: skipped jobs and one native run for several host page sizes, so
    /// the plan's jobs and its distinct runs differ.
    fn hugepages() -> ShardedPlan {
        let exp = Experiment::builtin("hugepages").expect("built in");
        ShardedPlan::new(exp, true).expect("plans")
    }

    /// Parts through their JSON, as the files carry them, named by file name.
    fn parts(sharded: &ShardedPlan, shards: &[Shard]) -> Vec<(String, PartialResult)> {
        shards
            .iter()
            .map(|&s| {
                let text = fake_part(sharded, s).to_json().expect("renders");
                (
                    s.file_name(),
                    PartialResult::from_json(&text).expect("reads back"),
                )
            })
            .collect()
    }

    fn shards(count: usize) -> Vec<Shard> {
        (1..=count)
            .map(|i| Shard::new(i, count).expect("valid"))
            .collect()
    }

    #[test]
    fn shards_parse_and_bad_ones_say_why() {
        let s = Shard::parse("2/3").expect("valid");
        assert_eq!((s.index(), s.count()), (2, 3));
        assert_eq!(s.to_string(), "2/3");
        assert_eq!(s.file_name(), "part-2-of-3.json");
        assert_eq!(Shard::from_file_name("part-2-of-3.json"), Some(s));
        for name in [
            "part-0-of-3.json",
            "part-2-of-3.json.partial",
            "tpt.json",
            "part-x-of-3.json",
        ] {
            assert_eq!(Shard::from_file_name(name), None, "{name}");
        }
        let cases = [
            ("0/0", "shard '0/0': N is the number of parts, at least 1"),
            ("3/2", "shard '3/2': there are only 2 parts, so I is 1 to 2"),
            (
                "0/4",
                "shard '0/4': parts are counted from 1, so I is 1 to 4 (from a 0-based task id ID: $((ID + 1))/4)",
            ),
            (
                "x",
                "shard 'x': want I/N, part I of N parts counted from 1 (e.g. 2/4)",
            ),
            (
                "1/-2",
                "shard '1/-2': want I/N, part I of N parts counted from 1 (e.g. 2/4)",
            ),
        ];
        for (text, msg) in cases {
            let e = Shard::parse(text).expect_err(text);
            assert!(e.is_user_error());
            assert_eq!(e.to_string(), msg);
        }
    }

    #[test]
    fn every_run_belongs_to_exactly_one_part() {
        for count in 1..=5 {
            for total in 0..=12 {
                let mut seen = vec![0; total];
                for shard in shards(count) {
                    for run in shard.runs(total) {
                        assert!(shard.owns(run));
                        seen[run - 1] += 1;
                    }
                    let owned = (1..=total).filter(|&r| shard.owns(r)).count();
                    assert_eq!(owned, shard.runs(total).len());
                }
                assert!(seen.iter().all(|&n| n == 1), "{count} parts of {total}");
            }
        }
    }

    #[test]
    fn merged_parts_give_the_rows_of_the_whole_plan_for_1_to_5_parts() {
        let sharded = hugepages();
        let plan = &sharded.plan;
        let distinct = plan.distinct_jobs();
        assert!(distinct.len() < plan.jobs.len());
        assert_eq!(sharded.runs().len(), distinct.len());
        // What run_plan gives with the same reports.
        let whole: BTreeMap<_, _> = distinct
            .iter()
            .enumerate()
            .map(|(i, job)| (dedup_key(job), fake_report(i + 1)))
            .collect();
        let expected = csv(&sharded.experiment, &rows(plan, &whole)).expect("csv");
        for count in 1..=5 {
            let mut parts = parts(&sharded, &shards(count));
            parts.reverse(); // order does not matter
            let merged = merge(&parts).expect("merges");
            assert_eq!(merged.rows.len(), plan.jobs.len());
            assert_eq!(
                csv(&merged.experiment, &merged.rows).expect("csv"),
                expected,
                "{count} parts"
            );
            for row in &merged.rows {
                let want = distinct
                    .iter()
                    .position(|j| dedup_key(j) == dedup_key(&row.job))
                    .map(|i| (i + 1) as f64);
                assert_eq!(row.report.as_ref().map(|r| r.seconds), want);
            }
        }
    }

    #[test]
    fn a_complete_part_of_the_same_plan_need_not_run_again() {
        let sharded = hugepages();
        let s = Shard::new(2, 3).expect("valid");
        let mut part = fake_part(&sharded, s);
        assert!(part.completes(&sharded.id, s));
        assert!(!part.completes(&sharded.id, Shard::new(1, 3).expect("valid")));
        let full = ShardedPlan::new(sharded.experiment.clone(), false).expect("plans");
        assert!(!part.completes(&full.id, s));
        part.runs.pop();
        assert!(!part.completes(&sharded.id, s));
    }

    #[test]
    fn merge_refuses_missing_duplicate_foreign_and_incomplete_parts() {
        let sharded = hugepages();
        let all = parts(&sharded, &shards(3));
        let total = sharded.id.runs;
        let msg = |parts: &[(String, PartialResult)]| {
            let e = merge(parts).expect_err("refused");
            assert!(e.is_user_error());
            e.to_string()
        };
        let name = sharded.id.name();

        let m = msg(&all[..2]);
        assert!(
            m.starts_with(&format!("missing part 3/3 of {name} (runs 3, 6, ")),
            "{m}"
        );
        let m = msg(&all[..1]);
        assert!(m.starts_with("missing parts 2/3, 3/3 of "), "{m}");
        assert!(msg(&[]).contains("no parts"));

        let mut twice = all.clone();
        twice.push(("again.json".into(), all[1].1.clone()));
        assert_eq!(
            msg(&twice),
            format!("part 2/3 of {name} given twice: part-2-of-3.json and again.json")
        );

        // The full variant's part among the quick one's.
        let full = ShardedPlan::new(sharded.experiment.clone(), false).expect("plans");
        let mut mixed = all.clone();
        mixed[2] = ("full.json".into(), fake_part(&full, shards(3)[2]));
        let m = msg(&mixed);
        assert!(
            m.starts_with("cannot merge full.json with part-1-of-3.json: parts of different plans, hugepages (")
                && m.contains(") and hugepages --quick ("),
            "{m}"
        );

        let mut split = all.clone();
        split[2] = ("two.json".into(), fake_part(&sharded, shards(2)[1]));
        assert_eq!(
            msg(&split),
            "cannot merge two.json (part 2/2) with part-1-of-3.json (part 1/3): the plan split into different numbers of parts"
        );

        let mut short = all.clone();
        short[0].1.runs.pop();
        assert!(
            msg(&short).starts_with("part-1-of-3.json: part 1/3 is incomplete: it holds runs 1, 4"),
            "{}",
            msg(&short)
        );

        let mut edited = all.clone();
        for (_, p) in &mut edited {
            p.experiment.seed += 1;
        }
        assert!(
            msg(&edited).contains("does not plan to its plan's fingerprint"),
            "{}",
            msg(&edited)
        );
        assert_eq!(total, sharded.runs().len());
    }
}
