//! Workload specs: how users name a workload (`NAME[:key=value,...]`), parsed, validated
//! and with defaults filled, plus the catalog behind `vmlab list` and `--help`.
//!
//! This module owns the grammar, the `key=value` values and their parsers that every
//! workload shares ([`Values`]), `tpt_task`, the errors and the catalog; it finds a workload
//! by name in the registry, and what the workload's parameters are and mean is its own
//! module's ([`WorkloadKind`](super::WorkloadKind)).

use super::registry::{self, AnyWorkload, Entry, WorkloadConfig};
use crate::units::{format_size, parse_size, SizeError};
use std::fmt;
use std::str::FromStr;

/// Smallest size a size parameter takes: one page.
pub(crate) const MIN_SIZE: u64 = 4 << 10;
/// Largest size a size parameter takes: 64 TiB, half of a 47-bit user address space.
pub(crate) const MAX_SIZE: u64 = 64 << 40;
/// Why a size was out of range, in the words users read.
const SIZE_RANGE: &str = "sizes go from 4K to 64T in multiples of 4K";
/// User text is quoted in error messages up to this many characters.
const MAX_QUOTED_CHARS: usize = 48;

/// One parameter of a workload, for help text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamInfo {
    /// The key as written in a spec (`block`, `op`, ...).
    pub key: &'static str,
    /// The default, as a user would write it (or how it is derived).
    pub default: &'static str,
    /// One line on what the parameter sets.
    pub help: &'static str,
}

/// One workload, for `vmlab list` and help text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadInfo {
    /// The workload's name in a spec (`sysbench-mem`, `gups`, ...).
    pub name: &'static str,
    /// One line on what the workload models.
    pub summary: &'static str,
    /// Its parameters, in the order a canonical spec lists them.
    pub params: Vec<ParamInfo>,
}

/// Every workload, in the order `vmlab list` shows them.
pub fn catalog() -> Vec<WorkloadInfo> {
    registry::KINDS
        .iter()
        .map(|kind| WorkloadInfo {
            name: kind.name,
            summary: kind.summary,
            params: kind
                .params
                .iter()
                .copied()
                .chain([TPT_TASK_PARAM])
                .collect(),
        })
        .collect()
}

/// Why a workload spec was rejected. Each message is one line naming the problem and
/// the valid choices.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WorkloadError {
    /// No workload has this name.
    #[error("unknown workload {name:?}; valid workloads: {valid}")]
    UnknownWorkload {
        /// The name given (clipped).
        name: String,
        /// Every workload name, comma-separated.
        valid: String,
    },
    /// A parameter the workload does not take.
    #[error("unknown parameter {key:?} for {workload}; valid parameters: {valid}")]
    UnknownKey {
        /// The workload's name.
        workload: &'static str,
        /// The key given (clipped).
        key: String,
        /// The workload's keys, comma-separated.
        valid: String,
    },
    /// A parameter that is not `key=value`.
    #[error("malformed parameter {item:?} for {workload}: expected key=value, e.g. {example}")]
    Malformed {
        /// The workload's name.
        workload: &'static str,
        /// The text given (clipped).
        item: String,
        /// A valid spec of this workload.
        example: String,
    },
    /// A required parameter was not given (`lmbench` needs `op`).
    #[error("missing parameter {key:?} for {workload}, e.g. {example}; valid values: {valid}")]
    MissingKey {
        /// The workload's name.
        workload: &'static str,
        /// The missing key.
        key: &'static str,
        /// A valid spec of this workload.
        example: String,
        /// The values the key takes, comma-separated.
        valid: String,
    },
    /// A parameter that `lmbench`'s chosen `op` does not use.
    #[error(
        "parameter {key:?} does not apply to {workload} op={op}; valid parameters for op={op}: {valid}"
    )]
    KeyNotForOp {
        /// The workload's name.
        workload: &'static str,
        /// The key given.
        key: &'static str,
        /// The op chosen.
        op: &'static str,
        /// The keys that op takes, comma-separated.
        valid: String,
    },
    /// The same parameter given twice.
    #[error("duplicate parameter {key:?} for {workload}: give each parameter at most once")]
    DuplicateKey {
        /// The workload's name.
        workload: &'static str,
        /// The repeated key.
        key: &'static str,
    },
    /// A size value that does not parse as a byte size.
    #[error("invalid size {value:?} for {workload} {key}: {reason}")]
    InvalidSize {
        /// The workload's name.
        workload: &'static str,
        /// The size parameter.
        key: &'static str,
        /// The text given (clipped).
        value: String,
        /// Why it does not parse.
        reason: SizeError,
    },
    /// A count value that is not a decimal integer.
    #[error(
        "invalid number {value:?} for {workload} {key}: expected a decimal integer, e.g. 1000000"
    )]
    InvalidNumber {
        /// The workload's name.
        workload: &'static str,
        /// The count parameter.
        key: &'static str,
        /// The text given (clipped).
        value: String,
    },
    /// A value that is not one of the parameter's choices.
    #[error("invalid value {value:?} for {workload} {key}; valid values: {valid}")]
    InvalidChoice {
        /// The workload's name.
        workload: &'static str,
        /// The parameter.
        key: &'static str,
        /// The text given (clipped).
        value: String,
        /// Its choices, comma-separated.
        valid: String,
    },
    /// A value that parses but lies outside the parameter's range.
    #[error("{workload} {key}={value} is out of range: {expected}")]
    OutOfRange {
        /// The workload's name.
        workload: &'static str,
        /// The parameter.
        key: &'static str,
        /// The text given (clipped).
        value: String,
        /// The allowed range, in words.
        expected: &'static str,
    },
    /// A file a parameter names cannot be read, or is not what the workload reads.
    #[error("cannot read {path:?} for {workload} {key}: {reason}")]
    Unreadable {
        /// The workload's name.
        workload: &'static str,
        /// The parameter naming the file.
        key: &'static str,
        /// The path given.
        path: String,
        /// Why it cannot be read (one line).
        reason: String,
    },
}

impl WorkloadError {
    /// [`WorkloadError::Unreadable`] for `path`, given as `key` of `workload`: `reason` (an
    /// I/O or format error) is flattened to one line.
    pub fn unreadable(
        workload: &'static str,
        key: &'static str,
        path: &std::path::Path,
        reason: impl fmt::Display,
    ) -> WorkloadError {
        WorkloadError::Unreadable {
            workload,
            key,
            path: path.display().to_string(),
            reason: reason.to_string().replace(['\n', '\r'], " "),
        }
    }
}

/// User text as quoted in an error: bounded, so a huge input cannot make a huge message
/// (the `{:?}` formatting then escapes control characters, keeping it one line).
fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

/// A size parameter's check: 4 KiB to 64 TiB in multiples of 4 KiB.
pub(crate) fn check_size(
    workload: &'static str,
    key: &'static str,
    bytes: u64,
) -> Result<(), WorkloadError> {
    if (MIN_SIZE..=MAX_SIZE).contains(&bytes) && bytes.is_multiple_of(MIN_SIZE) {
        Ok(())
    } else {
        Err(out_of_range(workload, key, format_size(bytes), SIZE_RANGE))
    }
}

/// A count parameter's check: at least 1.
pub(crate) fn check_count(
    workload: &'static str,
    key: &'static str,
    count: u64,
) -> Result<(), WorkloadError> {
    if count >= 1 {
        Ok(())
    } else {
        Err(out_of_range(
            workload,
            key,
            "0".to_owned(),
            "must be at least 1",
        ))
    }
}

/// [`WorkloadError::OutOfRange`], with the value clipped.
pub(crate) fn out_of_range(
    workload: &'static str,
    key: &'static str,
    value: String,
    expected: &'static str,
) -> WorkloadError {
    WorkloadError::OutOfRange {
        workload,
        key,
        value: clip(&value),
        expected,
    }
}

/// A parsed, validated workload spec with every parameter filled in.
///
/// Written `NAME[:key=value,...]`, e.g. `sysbench-mem:block=4G,mode=rnd`, `gups:table=1G`,
/// `tlb-bench:size=64M,accesses=1000000`, `fork-bench:rss=1G`, `lmbench:op=ctxsw,procs=8`,
/// `tpt-isolation-probe:pages=64,probes=256`.
/// It serializes as its canonical string.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct WorkloadSpec {
    config: WorkloadConfig,
    /// `tpt_task=NAME` as given: one of the workload's programs, or [`NO_TPT_TASK`].
    tpt_task: Option<&'static str>,
}

/// The key every workload takes: which of its programs runs with TPT under `--paging tpt`.
pub const TPT_TASK_KEY: &str = "tpt_task";
/// `tpt_task=none`: TPT is on in the guest but no program is marked (all on nested paging).
pub const NO_TPT_TASK: &str = "none";

/// The catalog entry of `tpt_task`, shown with every workload.
const TPT_TASK_PARAM: ParamInfo = ParamInfo {
    key: TPT_TASK_KEY,
    default: "its own",
    help: "--paging tpt: the program whose next exec runs with TPT (the artifact's task_name): the workload's own (sysbench, gups, lat_proc, ...), hello (lmbench fork-exec's child) or none",
};

impl WorkloadSpec {
    /// Parses and validates a spec string, filling defaults. Never panics.
    pub fn parse(text: &str) -> Result<WorkloadSpec, WorkloadError> {
        let (name, params) = match text.split_once(':') {
            Some((name, params)) => (name, Some(params)),
            None => (text, None),
        };
        let kind = registry::find(name).ok_or_else(|| WorkloadError::UnknownWorkload {
            name: clip(name),
            valid: registry::names(),
        })?;
        let (tpt_task, params) = split_tpt_task(kind.name, params)?;
        let values = Values::split(kind, params.as_deref())?;
        let mut spec = WorkloadSpec::new((kind.parse)(&values)?)?;
        if let Some(task) = tpt_task {
            spec = spec.with_tpt_task(task)?;
        }
        Ok(spec)
    }

    /// The same workload with TPT's mark on `program` (one of [`Self::programs`], or
    /// `"none"`).
    pub fn with_tpt_task(mut self, program: &str) -> Result<WorkloadSpec, WorkloadError> {
        let valid = self.programs().into_iter().chain([NO_TPT_TASK]);
        let task =
            valid
                .clone()
                .find(|p| *p == program)
                .ok_or_else(|| WorkloadError::InvalidChoice {
                    workload: self.name(),
                    key: TPT_TASK_KEY,
                    value: clip(program),
                    valid: join(valid),
                })?;
        self.tpt_task = Some(task);
        Ok(self)
    }

    /// The program the workload's first process runs (what `tpt_task` names by default).
    pub fn program(&self) -> &'static str {
        self.config.program()
    }

    /// Every program the workload runs: its own, and what its processes exec.
    pub fn programs(&self) -> Vec<&'static str> {
        self.config.programs()
    }

    /// TPT's mark under `--paging tpt`: the program whose next exec runs with TPT. By
    /// default the workload's own program, so its first process is a TPT process.
    pub fn tpt_task(&self) -> Option<&'static str> {
        match self.tpt_task {
            None => Some(self.program()),
            Some(NO_TPT_TASK) => None,
            Some(program) => Some(program),
        }
    }

    /// A spec for parameters built in code, checked like parsed ones.
    pub fn new(config: WorkloadConfig) -> Result<WorkloadSpec, WorkloadError> {
        config.validate()?;
        Ok(WorkloadSpec {
            config,
            tpt_task: None,
        })
    }

    /// The workload's name, e.g. `sysbench-mem`.
    pub fn name(&self) -> &'static str {
        self.config.name()
    }

    /// The validated parameters.
    pub fn config(&self) -> &WorkloadConfig {
        &self.config
    }

    /// The name and every parameter with its value, sizes in their shortest exact unit:
    /// parsing it gives back this spec.
    pub fn canonical(&self) -> String {
        let mut params = self.config.canonical_params();
        if let Some(task) = self.tpt_task {
            if !params.is_empty() {
                params.push(',');
            }
            params.push_str(&format!("{TPT_TASK_KEY}={task}"));
        }
        match params.is_empty() {
            true => self.name().to_owned(),
            false => format!("{}:{params}", self.name()),
        }
    }

    /// Bytes the workload maps and touches (its data; a forked child's copy-on-write
    /// share of its parent's and an exec'd program's small image are not counted).
    pub fn footprint_bytes(&self) -> u64 {
        self.config.footprint_bytes()
    }

    /// The files the workload reads (a recording), for a report's provenance.
    pub fn inputs(&self) -> Vec<crate::provenance::Input> {
        self.config.inputs()
    }

    /// Accesses of the full measured phase (what the built workload reports too).
    pub fn measured_accesses_total(&self) -> u64 {
        self.config.measured_accesses_total()
    }

    /// The generator for this spec; its stream is a function of (spec, seed). Building may
    /// fail for a workload that reads a file.
    pub fn build(&self, seed: u64) -> Result<AnyWorkload, WorkloadError> {
        self.config.build(seed)
    }
}

impl fmt::Display for WorkloadSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

impl FromStr for WorkloadSpec {
    type Err = WorkloadError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        WorkloadSpec::parse(text)
    }
}

impl TryFrom<String> for WorkloadSpec {
    type Error = WorkloadError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        WorkloadSpec::parse(&text)
    }
}

impl From<WorkloadSpec> for String {
    fn from(spec: WorkloadSpec) -> String {
        spec.canonical()
    }
}

/// Takes `tpt_task=NAME` (which every workload accepts) out of a spec's parameters; returns
/// its value and the other parameters.
fn split_tpt_task<'a>(
    workload: &'static str,
    params: Option<&'a str>,
) -> Result<(Option<&'a str>, Option<String>), WorkloadError> {
    let Some(params) = params else {
        return Ok((None, None));
    };
    let (mut task, mut rest) = (None, Vec::new());
    for item in params.split(',') {
        match item.split_once('=') {
            Some((TPT_TASK_KEY, value)) if !value.is_empty() => {
                if task.replace(value).is_some() {
                    return Err(WorkloadError::DuplicateKey {
                        workload,
                        key: TPT_TASK_KEY,
                    });
                }
            }
            _ => rest.push(item),
        }
    }
    Ok((task, Some(rest.join(",")).filter(|_| !rest.is_empty())))
}

/// Items joined with `", "`, as error messages list choices.
pub(crate) fn join<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    items.into_iter().collect::<Vec<_>>().join(", ")
}

/// The `key=value` items of one spec, checked against its workload's keys (each given at
/// most once), with the catalog's defaults behind them: what a workload's
/// [`WorkloadKind::parse`](super::WorkloadKind::parse) reads. The getters turn the text
/// into sizes, counts and choices, with errors naming the workload and the key.
pub struct Values<'a> {
    kind: &'static Entry,
    /// One slot per parameter of `kind`, in catalog order.
    given: Vec<Option<&'a str>>,
}

impl<'a> Values<'a> {
    fn split(kind: &'static Entry, params: Option<&'a str>) -> Result<Values<'a>, WorkloadError> {
        let workload = kind.name;
        let keys = kind.params;
        let mut given = vec![None; keys.len()];
        for item in params.into_iter().flat_map(|p| p.split(',')) {
            let (key, value) = match item.split_once('=') {
                Some((key, value)) if !key.is_empty() && !value.is_empty() => (key, value),
                _ => {
                    return Err(WorkloadError::Malformed {
                        workload,
                        item: clip(item),
                        example: (kind.example)(),
                    });
                }
            };
            let slot = keys.iter().position(|p| p.key == key).ok_or_else(|| {
                WorkloadError::UnknownKey {
                    workload,
                    key: clip(key),
                    valid: join(keys.iter().map(|p| p.key).chain([TPT_TASK_KEY])),
                }
            })?;
            if given[slot].is_some() {
                return Err(WorkloadError::DuplicateKey {
                    workload,
                    key: keys[slot].key,
                });
            }
            given[slot] = Some(value);
        }
        Ok(Values { kind, given })
    }

    /// The catalog entry for `key` and the value the user gave, if any. `key` is always
    /// one of the workload's own (a caller bug otherwise, caught by the round-trip tests).
    fn slot(&self, key: &str) -> (&'static ParamInfo, Option<&'a str>) {
        let params = self.kind.params;
        let i = params
            .iter()
            .position(|p| p.key == key)
            .unwrap_or_else(|| unreachable!("no key {key}"));
        (&params[i], self.given[i])
    }

    /// The value given for `key`, if it was given (for keys whose default depends on
    /// another, or that are required).
    pub fn given(&self, key: &str) -> Option<&'a str> {
        self.slot(key).1
    }

    /// The key as the catalog spells it, and the value given for it or its default.
    fn key_and_text(&self, key: &str) -> (&'static str, &'a str) {
        let (param, value) = self.slot(key);
        (param.key, value.unwrap_or(param.default))
    }

    /// The text given for `key`, or its catalog default, as it is: for a string-valued
    /// parameter (a name, a path), which the workload checks itself.
    pub fn text(&self, key: &str) -> &'a str {
        self.key_and_text(key).1
    }

    /// A byte size (`4K`, `16M`, ...), given or the default.
    pub fn size(&self, key: &str) -> Result<u64, WorkloadError> {
        let workload = self.kind.name;
        let (key, text) = self.key_and_text(key);
        parse_size(text).map_err(|reason| match reason {
            SizeError::Overflow => out_of_range(workload, key, text.to_owned(), SIZE_RANGE),
            SizeError::Malformed | SizeError::Ambiguous(_) => WorkloadError::InvalidSize {
                workload,
                key,
                value: clip(text),
                reason,
            },
        })
    }

    /// The size given for `key`, or `default` (for keys whose default depends on another).
    pub fn size_or(&self, key: &str, default: u64) -> Result<u64, WorkloadError> {
        match self.given(key) {
            Some(_) => self.size(key),
            None => Ok(default),
        }
    }

    /// Rejects any given key outside `allowed` (the keys of the chosen `op`).
    pub fn only(&self, allowed: &[&str], op: &'static str) -> Result<(), WorkloadError> {
        let params = self.kind.params;
        match params
            .iter()
            .zip(&self.given)
            .find(|(param, given)| given.is_some() && !allowed.contains(&param.key))
        {
            Some((param, _)) => Err(WorkloadError::KeyNotForOp {
                workload: self.kind.name,
                key: param.key,
                op,
                valid: join(allowed.iter().copied()),
            }),
            None => Ok(()),
        }
    }

    /// A decimal count, given or the default.
    pub fn count(&self, key: &str) -> Result<u64, WorkloadError> {
        let workload = self.kind.name;
        let (key, text) = self.key_and_text(key);
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(WorkloadError::InvalidNumber {
                workload,
                key,
                value: clip(text),
            });
        }
        // Only digits: failing to parse means it exceeds u64.
        text.parse().map_err(|_| {
            out_of_range(
                workload,
                key,
                text.to_owned(),
                "must be at most 18446744073709551615",
            )
        })
    }

    /// One of `choices` by its name, given or the default.
    pub fn choice<T: Copy>(
        &self,
        key: &str,
        choices: &[(&'static str, T)],
    ) -> Result<T, WorkloadError> {
        let (key, text) = self.key_and_text(key);
        choices
            .iter()
            .find(|(name, _)| *name == text)
            .map(|&(_, value)| value)
            .ok_or_else(|| WorkloadError::InvalidChoice {
                workload: self.kind.name,
                key,
                value: clip(text),
                valid: join(choices.iter().map(|(name, _)| *name)),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::super::{
        ChildTouches, ForkBenchConfig, GupsConfig, LmbenchConfig, LmbenchOp, LmbenchTest,
        SysbenchMemConfig, TlbBenchConfig, TptIsolationProbeConfig,
    };
    use super::super::{Op, Workload};
    use super::*;
    use proptest::prelude::*;

    fn err(text: &str) -> String {
        let e = WorkloadSpec::parse(text).expect_err(text);
        let msg = e.to_string();
        assert!(!msg.contains('\n'), "multi-line message: {msg}");
        msg
    }

    #[test]
    fn defaults_are_filled() {
        let s = WorkloadSpec::parse("sysbench-mem").unwrap();
        assert_eq!(
            s.config(),
            &WorkloadConfig::SysbenchMem(SysbenchMemConfig::default())
        );
        assert_eq!(
            s.canonical(),
            "sysbench-mem:block=4G,oper=write,mode=rnd,events=1"
        );
        assert_eq!(s.measured_accesses_total(), 1 << 30);
        assert_eq!(s.footprint_bytes(), 4 << 30);

        let s = WorkloadSpec::parse("gups").unwrap();
        assert_eq!(s.config(), &WorkloadConfig::Gups(GupsConfig::default()));
        assert_eq!(s.canonical(), "gups:table=1G,updates=536870912");

        let s = WorkloadSpec::parse("tlb-bench").unwrap();
        assert_eq!(
            s.config(),
            &WorkloadConfig::TlbBench(TlbBenchConfig::default())
        );
        assert_eq!(s.canonical(), "tlb-bench:size=64M,accesses=10000000");

        let s = WorkloadSpec::parse("fork-bench").unwrap();
        assert_eq!(
            s.config(),
            &WorkloadConfig::ForkBench(ForkBenchConfig::default())
        );
        assert_eq!(s.canonical(), "fork-bench:rss=64M,forks=100");
        assert_eq!(s.footprint_bytes(), 64 << 20);
        assert_eq!(s.measured_accesses_total(), 0);
    }

    #[test]
    fn lmbench_defaults_depend_on_the_op() {
        for (text, canonical) in [
            ("lmbench:op=fork-exit", "lmbench:op=fork-exit,iters=100"),
            ("lmbench:op=fork-exec", "lmbench:op=fork-exec,iters=100"),
            (
                "lmbench:op=page-fault",
                "lmbench:op=page-fault,size=16M,iters=100",
            ),
            ("lmbench:op=mmap", "lmbench:op=mmap,size=1M,iters=100"),
            (
                "lmbench:op=ctxsw",
                "lmbench:op=ctxsw,procs=2,ws=0,iters=100",
            ),
        ] {
            let s = WorkloadSpec::parse(text).unwrap();
            assert_eq!(s.canonical(), canonical);
            let op = LmbenchOp::ALL
                .iter()
                .find(|(_, op)| text.ends_with(op.name()));
            let op = op.unwrap().1;
            assert_eq!(
                s.config(),
                &WorkloadConfig::Lmbench(LmbenchConfig::default_for(op))
            );
        }
        assert_eq!(
            WorkloadSpec::parse("lmbench:op=page-fault")
                .unwrap()
                .footprint_bytes(),
            16 << 20
        );
        let s = WorkloadSpec::parse("lmbench:ws=64K,op=ctxsw,procs=8").unwrap();
        assert_eq!(s.canonical(), "lmbench:op=ctxsw,procs=8,ws=64K,iters=100");
        assert_eq!(s.footprint_bytes(), 8 * (64 << 10));
        assert_eq!(s.measured_accesses_total(), 100 * 8 * 1024);
        assert_eq!(
            WorkloadSpec::parse("lmbench:op=fork-exec")
                .unwrap()
                .footprint_bytes(),
            0
        );
    }

    #[test]
    fn gups_updates_default_follows_the_table() {
        let s = WorkloadSpec::parse("gups:table=64M").unwrap();
        assert_eq!(
            s.config(),
            &WorkloadConfig::Gups(GupsConfig {
                table: 64 << 20,
                updates: 4 * (8 << 20)
            })
        );
        let s = WorkloadSpec::parse("gups:updates=7,table=4K").unwrap();
        assert_eq!(s.canonical(), "gups:table=4K,updates=7");
    }

    #[test]
    fn tpt_task_names_one_of_the_workloads_programs() {
        let s = WorkloadSpec::parse("sysbench-mem").unwrap();
        assert_eq!((s.program(), s.tpt_task()), ("sysbench", Some("sysbench")));
        let s = WorkloadSpec::parse("lmbench:op=fork-exec,tpt_task=hello").unwrap();
        assert_eq!(s.tpt_task(), Some("hello"));
        assert_eq!(
            s.canonical(),
            "lmbench:op=fork-exec,iters=100,tpt_task=hello"
        );
        assert_eq!(WorkloadSpec::parse(&s.canonical()).unwrap(), s);
        assert_eq!(
            WorkloadSpec::parse("gups:tpt_task=none")
                .unwrap()
                .tpt_task(),
            None
        );
        assert_eq!(
            err("sysbench-mem:tpt_task=hello"),
            "invalid value \"hello\" for sysbench-mem tpt_task; valid values: sysbench, none"
        );
        assert!(
            err("gups:tpt_task=gups,tpt_task=none").contains("duplicate parameter \"tpt_task\"")
        );
        assert!(err("gups:bogus=1").ends_with("valid parameters: table, updates, tpt_task"));
    }

    #[test]
    fn canonical_round_trips() {
        for text in [
            "sysbench-mem:block=4G,mode=rnd",
            "sysbench-mem:mode=seq,oper=read,block=1536K,events=25",
            "gups:table=1G",
            "gups:table=12K,updates=1",
            "tlb-bench:size=64M,accesses=1000000",
            "tlb-bench:size=4K",
            "tlb-bench:size=64T,accesses=18446744073709551615",
            "fork-bench",
            "fork-bench:rss=4K,forks=1",
            "fork-bench:forks=4294967295,rss=1536K",
            "lmbench:op=fork-exit,iters=1",
            "lmbench:iters=4294967295,op=fork-exec",
            "lmbench:op=page-fault,size=4K",
            "lmbench:op=mmap,iters=7,size=3M",
            "lmbench:op=ctxsw,procs=2048,ws=16G,iters=3",
            "lmbench:op=ctxsw,ws=0,procs=3",
            "lmbench:op=ctxsw,procs=2,ws=56T",
            "tpt-isolation-probe",
            "tpt-isolation-probe:probes=1,pages=1048576",
            "tpt-isolation-probe:pages=1",
        ] {
            let spec = WorkloadSpec::parse(text).unwrap();
            let canonical = spec.canonical();
            assert_eq!(
                WorkloadSpec::parse(&canonical).unwrap(),
                spec,
                "{text} -> {canonical}"
            );
            assert_eq!(spec.to_string(), canonical);
            assert_eq!(canonical.parse::<WorkloadSpec>().unwrap(), spec);
        }
        assert_eq!(
            WorkloadSpec::parse("sysbench-mem:block=1536K,mode=seq")
                .unwrap()
                .canonical(),
            "sysbench-mem:block=1536K,oper=write,mode=seq,events=1"
        );
    }

    /// The shortest valid specs of a catalog entry: its name, or for lmbench one per op.
    fn minimal_specs(name: &str) -> Vec<String> {
        if name == "trace" {
            vec![format!(
                "trace:file={}",
                crate::workload::trace::tiny_trace().display()
            )]
        } else if name == "champsim" {
            vec![format!(
                "champsim:file={}",
                crate::workload::champsim::testing::tiny_champsim().display()
            )]
        } else if name == "lmbench" {
            LmbenchOp::ALL
                .iter()
                .map(|(op, _)| format!("lmbench:op={op}"))
                .collect()
        } else {
            vec![name.to_owned()]
        }
    }

    #[test]
    fn canonical_lists_the_catalog_keys_in_order() {
        for info in catalog() {
            let catalog_keys: Vec<_> = info.params.iter().map(|p| p.key).collect();
            for text in minimal_specs(info.name) {
                let spec = WorkloadSpec::parse(&text).unwrap();
                let canonical = spec.canonical();
                let (name, params) = canonical.split_once(':').unwrap();
                assert_eq!(name, info.name);
                let keys: Vec<_> = params
                    .split(',')
                    .map(|kv| kv.split_once('=').unwrap().0)
                    .collect();
                match spec.config() {
                    // The keys of its op, which are catalog keys in catalog order.
                    WorkloadConfig::Lmbench(c) => {
                        assert_eq!(keys, c.test.op().keys());
                        let mut in_catalog = catalog_keys.iter();
                        assert!(keys.iter().all(|k| in_catalog.any(|c| c == k)), "{keys:?}");
                    }
                    // rss and forks: the child's touches appear only when not the default.
                    WorkloadConfig::ForkBench(_) => assert_eq!(keys, catalog_keys[..2]),
                    // Every catalog key but tpt_task, which appears only when given.
                    _ => assert_eq!(keys, catalog_keys[..catalog_keys.len() - 1]),
                }
            }
            assert!(!info.summary.is_empty() && info.params.iter().all(|p| !p.help.is_empty()));
        }
    }

    #[test]
    fn spec_and_built_workload_agree() {
        let mut texts: Vec<String> = catalog()
            .iter()
            .flat_map(|info| minimal_specs(info.name))
            .collect();
        texts.push("lmbench:op=ctxsw,procs=3,ws=64K,iters=2".to_owned());
        for text in texts {
            let spec = WorkloadSpec::parse(&text).unwrap();
            let w = spec.build(0).unwrap();
            assert_eq!(w.measured_accesses_total(), spec.measured_accesses_total());
        }
    }

    /// Small specs of every workload, built and drained: the `Access` ops after
    /// `StartMeasurement` are exactly `measured_accesses_total()`.
    #[test]
    fn measured_accesses_total_is_exact() {
        for text in [
            "sysbench-mem:block=8K,events=2",
            "gups:table=4K,updates=100",
            "tlb-bench:size=4K,accesses=50",
            "fork-bench:rss=8K,forks=3",
            "lmbench:op=fork-exit,iters=3",
            "lmbench:op=fork-exec,iters=3",
            "lmbench:op=page-fault,size=64K,iters=3",
            "lmbench:op=mmap,size=2M,iters=3",
            "lmbench:op=ctxsw,procs=3,iters=4",
            "lmbench:op=ctxsw,procs=3,ws=12K,iters=4",
            "tpt-isolation-probe:pages=2,probes=9",
        ] {
            let spec = WorkloadSpec::parse(text).unwrap();
            let mut w = spec.build(5).unwrap();
            let mut measuring = false;
            let mut measured = 0;
            while let Some(op) = w.next_op() {
                match op {
                    Op::StartMeasurement => {
                        assert!(!measuring, "{text}: two StartMeasurement");
                        measuring = true;
                    }
                    Op::Access { .. } if measuring => measured += 1,
                    _ => {}
                }
            }
            assert!(measuring, "{text}: no StartMeasurement");
            assert_eq!(measured, w.measured_accesses_total(), "{text}");
            assert_eq!(measured, spec.measured_accesses_total(), "{text}");
        }
    }

    #[test]
    fn text_values_are_given_or_the_default() {
        let gups = registry::find("gups").unwrap();
        let values = Values::split(gups, Some("table=12K")).unwrap();
        assert_eq!(values.text("table"), "12K");
        assert_eq!(values.text("updates"), "4 x words");
        assert_eq!(values.given("updates"), None);
    }

    #[test]
    fn unreadable_files_are_named_in_one_line() {
        let e = WorkloadError::unreadable(
            "trace",
            "file",
            std::path::Path::new("/tmp/a\nb.trace"),
            "bad header\nat byte 0",
        );
        assert_eq!(
            e.to_string(),
            r#"cannot read "/tmp/a\nb.trace" for trace file: bad header at byte 0"#
        );
    }

    #[test]
    fn serializes_as_the_canonical_string() {
        let spec = WorkloadSpec::parse("gups:table=4K").unwrap();
        let json = String::from(spec.clone());
        assert_eq!(json, "gups:table=4K,updates=2048");
        assert_eq!(WorkloadSpec::try_from(json).unwrap(), spec);
    }

    #[test]
    fn unknown_workload_lists_the_valid_names() {
        assert_eq!(
            err("stream"),
            r#"unknown workload "stream"; valid workloads: sysbench-mem, gups, tlb-bench, fork-bench, lmbench, tpt-isolation-probe, host-remap, trace, champsim"#
        );
        assert!(
            err("").contains("valid workloads: sysbench-mem, gups, tlb-bench, fork-bench, lmbench, tpt-isolation-probe, host-remap, trace, champsim")
        );
        assert!(err("GUPS:table=1G").starts_with(r#"unknown workload "GUPS""#));
    }

    #[test]
    fn unknown_key_lists_the_valid_keys() {
        assert_eq!(
            err("sysbench-mem:size=4G"),
            r#"unknown parameter "size" for sysbench-mem; valid parameters: block, oper, mode, events, tpt_task"#
        );
        assert_eq!(
            err("gups:block=1G"),
            r#"unknown parameter "block" for gups; valid parameters: table, updates, tpt_task"#
        );
    }

    #[test]
    fn malformed_items_say_the_expected_form() {
        assert_eq!(
            err("gups:table"),
            r#"malformed parameter "table" for gups: expected key=value, e.g. gups:table=1G"#
        );
        for bad in [
            "gups:",
            "gups:table=1G,",
            "gups:=1G",
            "gups:table=",
            "tlb-bench:size=4K,,accesses=1",
        ] {
            assert!(err(bad).contains("expected key=value"), "{bad}");
        }
    }

    #[test]
    fn duplicate_keys_are_rejected() {
        assert_eq!(
            err("tlb-bench:size=4K,size=8K"),
            r#"duplicate parameter "size" for tlb-bench: give each parameter at most once"#
        );
    }

    #[test]
    fn invalid_sizes_say_the_expected_form() {
        assert_eq!(
            err("sysbench-mem:block=4Q"),
            r#"invalid size "4Q" for sysbench-mem block: expected a number with optional K, M, G or T suffix (binary units), e.g. 4K, 16M, 4G"#
        );
        assert_eq!(
            err("gups:table=99999999999T"),
            "gups table=99999999999T is out of range: sizes go from 4K to 64T in multiples of 4K"
        );
    }

    #[test]
    fn sizes_out_of_range_are_rejected() {
        assert_eq!(
            err("sysbench-mem:block=0"),
            "sysbench-mem block=0 is out of range: sizes go from 4K to 64T in multiples of 4K"
        );
        assert!(err("tlb-bench:size=2K").starts_with("tlb-bench size=2K is out of range"));
        assert!(err("tlb-bench:size=1536").starts_with("tlb-bench size=1536 is out of range"));
        assert!(err("gups:table=65T").starts_with("gups table=65T is out of range"));
        assert!(err("gups:table=6K").contains("multiples of 4K"));
        assert!(WorkloadSpec::parse("gups:table=64T").is_ok());
        assert!(WorkloadSpec::parse("tlb-bench:size=4k").is_ok());
    }

    #[test]
    fn invalid_choices_list_the_valid_values() {
        assert_eq!(
            err("sysbench-mem:mode=foo"),
            r#"invalid value "foo" for sysbench-mem mode; valid values: seq, rnd"#
        );
        assert_eq!(
            err("sysbench-mem:oper=none"),
            r#"invalid value "none" for sysbench-mem oper; valid values: write, read"#
        );
    }

    #[test]
    fn invalid_and_out_of_range_counts() {
        assert_eq!(
            err("tlb-bench:accesses=1e6"),
            r#"invalid number "1e6" for tlb-bench accesses: expected a decimal integer, e.g. 1000000"#
        );
        assert!(err("tlb-bench:accesses=-1").starts_with("invalid number"));
        assert_eq!(
            err("tlb-bench:accesses=0"),
            "tlb-bench accesses=0 is out of range: must be at least 1"
        );
        assert_eq!(
            err("sysbench-mem:events=0"),
            "sysbench-mem events=0 is out of range: must be at least 1"
        );
        assert!(err("gups:updates=18446744073709551616")
            .contains("must be at most 18446744073709551615"));
        assert_eq!(
            err("sysbench-mem:block=64T,events=1048576"),
            "sysbench-mem events=1048576 is out of range: events x block/4 accesses must fit in 64 bits"
        );
    }

    #[test]
    fn user_text_in_messages_is_escaped_and_bounded() {
        let msg = err("gups:table=\n4G");
        assert!(msg.contains(r#""\n4G""#), "{msg}");
        let long = format!("nope{}", "x".repeat(10_000));
        assert!(err(&long).len() < 200);
    }

    #[test]
    fn programmatic_configs_are_validated() {
        let bad = WorkloadConfig::Gups(GupsConfig {
            table: 4096,
            updates: 0,
        });
        assert!(WorkloadSpec::new(bad).is_err());
        let good = WorkloadConfig::TlbBench(TlbBenchConfig {
            size: 8192,
            accesses: 3,
        });
        assert_eq!(
            WorkloadSpec::new(good).unwrap().canonical(),
            "tlb-bench:size=8K,accesses=3"
        );
    }

    #[test]
    fn fork_bench_errors() {
        assert_eq!(
            err("fork-bench:rss=2K"),
            "fork-bench rss=2K is out of range: sizes go from 4K to 64T in multiples of 4K"
        );
        assert_eq!(
            err("fork-bench:forks=0"),
            "fork-bench forks=0 is out of range: must be at least 1"
        );
        assert_eq!(
            err("fork-bench:forks=4294967296"),
            "fork-bench forks=4294967296 is out of range: must be at most 4294967295 (each fork takes a new 32-bit pid)"
        );
        assert_eq!(
            err("fork-bench:size=1G"),
            r#"unknown parameter "size" for fork-bench; valid parameters: rss, forks, child_stack, child_data, child_text, tpt_task"#
        );
        assert_eq!(
            err("fork-bench:rss"),
            r#"malformed parameter "rss" for fork-bench: expected key=value, e.g. fork-bench:rss=64M"#
        );
        assert_eq!(
            err("fork-bench:child_stack=9"),
            "fork-bench child_stack=9 is out of range: must be 0 to 8 (the program's stack is 8 pages)"
        );
        assert_eq!(
            err("fork-bench:child_data=17"),
            "fork-bench child_data=17 is out of range: must be 0 to 16 (the program's data is 16 pages)"
        );
        assert_eq!(
            err("fork-bench:child_text=17"),
            "fork-bench child_text=17 is out of range: must be 0 to 16 (the program's text is 16 pages)"
        );
    }

    #[test]
    fn fork_bench_child_touches_are_parameters_named_only_when_not_the_default() {
        let s = WorkloadSpec::parse("fork-bench:rss=8M,child_data=2,child_stack=0").unwrap();
        let WorkloadConfig::ForkBench(c) = s.config() else {
            panic!("{s:?}")
        };
        assert_eq!(
            c.child,
            ChildTouches {
                stack: 0,
                data: 2,
                text: 1
            }
        );
        assert_eq!(
            s.canonical(),
            "fork-bench:rss=8M,forks=100,child_stack=0,child_data=2,child_text=1"
        );
        assert_eq!(
            WorkloadSpec::parse(&s.canonical()).unwrap().config(),
            s.config()
        );
        let default = WorkloadSpec::parse("fork-bench:child_stack=4,child_data=12,child_text=1");
        assert_eq!(default.unwrap().canonical(), "fork-bench:rss=64M,forks=100");
    }

    #[test]
    fn tpt_isolation_probe_defaults_and_errors() {
        let s = WorkloadSpec::parse("tpt-isolation-probe").unwrap();
        assert_eq!(
            s.config(),
            &WorkloadConfig::TptIsolationProbe(TptIsolationProbeConfig::default())
        );
        assert_eq!(s.canonical(), "tpt-isolation-probe:pages=64,probes=256");
        assert_eq!(s.footprint_bytes(), 64 << 12);
        assert_eq!(s.measured_accesses_total(), 0);
        let s = WorkloadSpec::parse("tpt-isolation-probe:probes=5,pages=3").unwrap();
        assert_eq!(s.canonical(), "tpt-isolation-probe:pages=3,probes=5");
        assert_eq!(s.build(0).unwrap().measured_accesses_total(), 0);

        let pages = "is out of range: must be 1 to 1048576 pages of 4K";
        assert_eq!(
            err("tpt-isolation-probe:pages=0"),
            format!("tpt-isolation-probe pages=0 {pages}")
        );
        assert_eq!(
            err("tpt-isolation-probe:pages=1048577"),
            format!("tpt-isolation-probe pages=1048577 {pages}")
        );
        assert_eq!(
            err("tpt-isolation-probe:pages=4K"),
            r#"invalid number "4K" for tpt-isolation-probe pages: expected a decimal integer, e.g. 1000000"#
        );
        assert_eq!(
            err("tpt-isolation-probe:probes=0"),
            "tpt-isolation-probe probes=0 is out of range: must be at least 1"
        );
        assert_eq!(
            err("tpt-isolation-probe:level=1"),
            r#"unknown parameter "level" for tpt-isolation-probe; valid parameters: pages, probes, tpt_task"#
        );
        assert_eq!(
            err("tpt-isolation-probe:pages"),
            r#"malformed parameter "pages" for tpt-isolation-probe: expected key=value, e.g. tpt-isolation-probe:pages=64"#
        );
        assert_eq!(
            err("tpt-isolation-probe:probes=1,probes=2"),
            r#"duplicate parameter "probes" for tpt-isolation-probe: give each parameter at most once"#
        );
        let bad = WorkloadConfig::TptIsolationProbe(TptIsolationProbeConfig {
            pages: 0,
            probes: 1,
        });
        assert!(WorkloadSpec::new(bad).is_err());
    }

    #[test]
    fn lmbench_needs_a_valid_op() {
        let ops = "fork-exit, fork-exec, page-fault, mmap, ctxsw";
        assert_eq!(
            err("lmbench"),
            format!(
                r#"missing parameter "op" for lmbench, e.g. lmbench:op=fork-exit; valid values: {ops}"#
            )
        );
        assert_eq!(err("lmbench:iters=5"), err("lmbench"));
        assert_eq!(
            err("lmbench:op=lat_ctx"),
            format!(r#"invalid value "lat_ctx" for lmbench op; valid values: {ops}"#)
        );
        assert_eq!(
            err("lmbench:op"),
            r#"malformed parameter "op" for lmbench: expected key=value, e.g. lmbench:op=fork-exit"#
        );
        assert_eq!(
            err("lmbench:op=mmap,stride=4K"),
            r#"unknown parameter "stride" for lmbench; valid parameters: op, size, procs, ws, iters, tpt_task"#
        );
        assert_eq!(
            err("lmbench:op=mmap,op=ctxsw"),
            r#"duplicate parameter "op" for lmbench: give each parameter at most once"#
        );
    }

    #[test]
    fn lmbench_params_apply_only_to_their_ops() {
        assert_eq!(
            err("lmbench:op=mmap,procs=4"),
            r#"parameter "procs" does not apply to lmbench op=mmap; valid parameters for op=mmap: op, size, iters"#
        );
        assert_eq!(
            err("lmbench:ws=4K,op=fork-exit"),
            r#"parameter "ws" does not apply to lmbench op=fork-exit; valid parameters for op=fork-exit: op, iters"#
        );
        assert_eq!(
            err("lmbench:op=ctxsw,size=1M"),
            r#"parameter "size" does not apply to lmbench op=ctxsw; valid parameters for op=ctxsw: op, procs, ws, iters"#
        );
        assert!(err("lmbench:op=fork-exec,size=1M")
            .contains("valid parameters for op=fork-exec: op, iters"));
        assert!(err("lmbench:op=page-fault,procs=2").contains("op=page-fault: op, size, iters"));
        // The key check comes before the values are read.
        assert!(err("lmbench:op=mmap,procs=x").starts_with(r#"parameter "procs" does not apply"#));
    }

    #[test]
    fn lmbench_values_out_of_range() {
        assert_eq!(
            err("lmbench:op=page-fault,size=6K"),
            "lmbench size=6K is out of range: sizes go from 4K to 64T in multiples of 4K"
        );
        assert_eq!(
            err("lmbench:op=mmap,size=1Q"),
            r#"invalid size "1Q" for lmbench size: expected a number with optional K, M, G or T suffix (binary units), e.g. 4K, 16M, 4G"#
        );
        assert_eq!(
            err("lmbench:op=mmap,iters=0"),
            "lmbench iters=0 is out of range: must be at least 1"
        );
        assert_eq!(
            err("lmbench:op=fork-exit,iters=4294967296"),
            "lmbench iters=4294967296 is out of range: must be at most 4294967295 (each fork takes a new 32-bit pid)"
        );
        assert!(WorkloadSpec::parse("lmbench:op=mmap,iters=4294967296").is_ok());
        let procs = "is out of range: a ring has 2 to 2048 processes (lat_ctx's MAXPROC)";
        assert_eq!(
            err("lmbench:op=ctxsw,procs=1"),
            format!("lmbench procs=1 {procs}")
        );
        assert_eq!(
            err("lmbench:op=ctxsw,procs=2049"),
            format!("lmbench procs=2049 {procs}")
        );
        assert_eq!(
            err("lmbench:op=ctxsw,procs=99999999999"),
            format!("lmbench procs=99999999999 {procs}")
        );
        assert_eq!(
            err("lmbench:op=ctxsw,procs=two"),
            r#"invalid number "two" for lmbench procs: expected a decimal integer, e.g. 1000000"#
        );
        assert_eq!(
            err("lmbench:op=ctxsw,ws=100"),
            "lmbench ws=100 is out of range: 0, or 4K to 64T in multiples of 4K"
        );
        assert_eq!(
            err("lmbench:op=ctxsw,ws=65T"),
            "lmbench ws=65T is out of range: 0, or 4K to 64T in multiples of 4K"
        );
        assert_eq!(
            err("lmbench:op=ctxsw,ws=57T"),
            "lmbench ws=57T is out of range: procs arrays of ws, each 1G aligned from 16T, must end below 128T"
        );
        assert_eq!(
            err("lmbench:op=ctxsw,procs=2048,ws=1T,iters=1"),
            "lmbench ws=1T is out of range: procs arrays of ws, each 1G aligned from 16T, must end below 128T"
        );
        assert_eq!(
            err("lmbench:op=ctxsw,ws=64K,iters=18446744073709551615"),
            "lmbench iters=18446744073709551615 is out of range: iters x procs x ws/64 accesses must fit in 64 bits"
        );
        // Without a working set there are no accesses to count.
        assert!(WorkloadSpec::parse("lmbench:op=ctxsw,iters=18446744073709551615").is_ok());
    }

    #[test]
    fn programmatic_lmbench_configs_are_validated() {
        let config = |test, iters| WorkloadConfig::Lmbench(LmbenchConfig { test, iters });
        assert!(WorkloadSpec::new(config(LmbenchTest::Ctxsw { procs: 0, ws: 0 }, 1)).is_err());
        assert!(WorkloadSpec::new(config(LmbenchTest::Mmap { size: 0 }, 1)).is_err());
        assert!(WorkloadSpec::new(config(LmbenchTest::ForkExit, 0)).is_err());
        let spec = WorkloadSpec::new(config(LmbenchTest::Ctxsw { procs: 3, ws: 8192 }, 2));
        assert_eq!(
            spec.unwrap().canonical(),
            "lmbench:op=ctxsw,procs=3,ws=8K,iters=2"
        );
    }

    fn check_never_panics(text: &str) {
        match WorkloadSpec::parse(text) {
            Ok(spec) => assert_round_trips(&spec),
            Err(e) => assert!(!e.to_string().contains('\n')),
        }
    }

    fn assert_round_trips(spec: &WorkloadSpec) {
        assert_eq!(WorkloadSpec::parse(&spec.canonical()).as_ref(), Ok(spec));
    }

    proptest! {
        #[test]
        fn arbitrary_strings_never_panic(text in any::<String>()) {
            check_never_panics(&text);
        }

        #[test]
        fn spec_like_strings_never_panic(
            text in "(sysbench-mem|gups|tlb-bench|x)(:((block|oper|mode|events|table|updates|size|accesses|k)?=?[0-9a-zA-Z]{0,22},?){0,5})?"
        ) {
            check_never_panics(&text);
        }

        #[test]
        fn fork_and_lmbench_specs_never_panic(
            text in "(fork-bench|lmbench|tpt-isolation-probe)(:((op|rss|forks|size|procs|ws|iters|pages|probes|k)?=?(fork-exit|fork-exec|page-fault|mmap|ctxsw|[0-9]{0,21}[kKmMgGtT]?|[0-9a-zA-Z-]{0,12}),?){0,6})?"
        ) {
            check_never_panics(&text);
        }
    }
}
