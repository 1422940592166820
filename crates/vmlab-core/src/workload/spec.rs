//! Workload specs: how users name a workload (`NAME[:key=value,...]`), parsed, validated
//! and with defaults filled, plus the catalog behind `vmlab list` and `--help`.

use crate::units::{format_size, parse_size, SizeError};
use super::{AccessMode, AnyWorkload, Gups, GupsConfig, MemOper, SysbenchMem, SysbenchMemConfig};
use super::{TlbBench, TlbBenchConfig};
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
    pub key: &'static str,
    /// The default, as a user would write it (or how it is derived).
    pub default: &'static str,
    pub help: &'static str,
}

/// One workload, for `vmlab list` and help text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub params: Vec<ParamInfo>,
}

/// Every workload, in the order `vmlab list` shows them.
pub fn catalog() -> Vec<WorkloadInfo> {
    Kind::ALL
        .iter()
        .map(|kind| WorkloadInfo {
            name: kind.name(),
            summary: kind.summary(),
            params: kind.params().to_vec(),
        })
        .collect()
}

const SYSBENCH_PARAMS: &[ParamInfo] = &[
    ParamInfo {
        key: "block",
        default: "4G",
        help: "buffer size (--memory-block-size), 4K to 64T in multiples of 4K",
    },
    ParamInfo { key: "oper", default: "write", help: "write or read each int (--memory-oper)" },
    ParamInfo { key: "mode", default: "rnd", help: "seq or rnd indexing (--memory-access-mode)" },
    ParamInfo {
        key: "events",
        default: "1",
        help: "events, each block/4 int accesses (a 4G rnd event outlasts sysbench's default 10 s limit)",
    },
];

const GUPS_PARAMS: &[ParamInfo] = &[
    ParamInfo {
        key: "table",
        default: "1G",
        help: "table size of 64-bit words, 4K to 64T in multiples of 4K",
    },
    ParamInfo {
        key: "updates",
        default: "4 x words",
        help: "random XOR updates (HPCC: 4 per word)",
    },
];

const TLB_BENCH_PARAMS: &[ParamInfo] = &[
    ParamInfo {
        key: "size",
        default: "64M",
        help: "region chased over, 4K to 64T in multiples of 4K",
    },
    ParamInfo {
        key: "accesses",
        default: "10000000",
        help: "dependent loads, one random 64-byte line each",
    },
];

/// The workloads by name; private so the catalog, parser and builder cannot disagree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    SysbenchMem,
    Gups,
    TlbBench,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::SysbenchMem, Kind::Gups, Kind::TlbBench];

    const fn name(self) -> &'static str {
        match self {
            Kind::SysbenchMem => "sysbench-mem",
            Kind::Gups => "gups",
            Kind::TlbBench => "tlb-bench",
        }
    }

    const fn summary(self) -> &'static str {
        match self {
            Kind::SysbenchMem => {
                "sysbench 1.0 memory test: seq or random int reads/writes over one block"
            }
            Kind::Gups => {
                "HPCC RandomAccess: random read-modify-write updates of 64-bit words in a table"
            }
            Kind::TlbBench => {
                "TLB reach: dependent random pointer chase, one 64-byte line per load"
            }
        }
    }

    const fn params(self) -> &'static [ParamInfo] {
        match self {
            Kind::SysbenchMem => SYSBENCH_PARAMS,
            Kind::Gups => GUPS_PARAMS,
            Kind::TlbBench => TLB_BENCH_PARAMS,
        }
    }

    fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

/// Why a workload spec was rejected. Each message is one line naming the problem and
/// the valid choices.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WorkloadError {
    #[error("unknown workload {name:?}; valid workloads: {valid}")]
    UnknownWorkload { name: String, valid: String },
    #[error("unknown parameter {key:?} for {workload}; valid parameters: {valid}")]
    UnknownKey {
        workload: &'static str,
        key: String,
        valid: String,
    },
    #[error("malformed parameter {item:?} for {workload}: expected key=value, e.g. {example}")]
    Malformed {
        workload: &'static str,
        item: String,
        example: String,
    },
    #[error("duplicate parameter {key:?} for {workload}: give each parameter at most once")]
    DuplicateKey {
        workload: &'static str,
        key: &'static str,
    },
    #[error("invalid size {value:?} for {workload} {key}: {reason}")]
    InvalidSize {
        workload: &'static str,
        key: &'static str,
        value: String,
        reason: SizeError,
    },
    #[error(
        "invalid number {value:?} for {workload} {key}: expected a decimal integer, e.g. 1000000"
    )]
    InvalidNumber {
        workload: &'static str,
        key: &'static str,
        value: String,
    },
    #[error("invalid value {value:?} for {workload} {key}; valid values: {valid}")]
    InvalidChoice {
        workload: &'static str,
        key: &'static str,
        value: String,
        valid: String,
    },
    #[error("{workload} {key}={value} is out of range: {expected}")]
    OutOfRange {
        workload: &'static str,
        key: &'static str,
        value: String,
        expected: &'static str,
    },
}

/// User text as quoted in an error: bounded, so a huge input cannot make a huge message
/// (the `{:?}` formatting then escapes control characters, keeping it one line).
fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

/// The validated parameters of one workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WorkloadConfig {
    SysbenchMem(SysbenchMemConfig),
    Gups(GupsConfig),
    TlbBench(TlbBenchConfig),
}

impl WorkloadConfig {
    fn kind(&self) -> Kind {
        match self {
            WorkloadConfig::SysbenchMem(_) => Kind::SysbenchMem,
            WorkloadConfig::Gups(_) => Kind::Gups,
            WorkloadConfig::TlbBench(_) => Kind::TlbBench,
        }
    }

    /// Checks the ranges a generator relies on (sizes, non-zero counts, no overflow).
    fn validate(&self) -> Result<(), WorkloadError> {
        let workload = self.kind().name();
        let check_size = |key: &'static str, bytes: u64| {
            if (MIN_SIZE..=MAX_SIZE).contains(&bytes) && bytes.is_multiple_of(MIN_SIZE) {
                Ok(())
            } else {
                Err(out_of_range(workload, key, format_size(bytes), SIZE_RANGE))
            }
        };
        let check_count = |key: &'static str, count: u64| {
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
        };
        match *self {
            WorkloadConfig::SysbenchMem(c) => {
                check_size("block", c.block)?;
                check_count("events", c.events)?;
                if c.total_accesses().is_none() {
                    let why = "events x block/4 accesses must fit in 64 bits";
                    return Err(out_of_range(workload, "events", c.events.to_string(), why));
                }
            }
            WorkloadConfig::Gups(c) => {
                check_size("table", c.table)?;
                check_count("updates", c.updates)?;
            }
            WorkloadConfig::TlbBench(c) => {
                check_size("size", c.size)?;
                check_count("accesses", c.accesses)?;
            }
        }
        Ok(())
    }
}

fn out_of_range(
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
/// `tlb-bench:size=64M,accesses=1000000`. It serializes as its canonical string.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct WorkloadSpec {
    config: WorkloadConfig,
}

impl WorkloadSpec {
    /// Parses and validates a spec string, filling defaults. Never panics.
    pub fn parse(text: &str) -> Result<WorkloadSpec, WorkloadError> {
        let (name, params) = match text.split_once(':') {
            Some((name, params)) => (name, Some(params)),
            None => (text, None),
        };
        let kind = Kind::from_name(name).ok_or_else(|| WorkloadError::UnknownWorkload {
            name: clip(name),
            valid: join(Kind::ALL.iter().map(|k| k.name())),
        })?;
        let values = Values::split(kind, params)?;
        let config = match kind {
            Kind::SysbenchMem => WorkloadConfig::SysbenchMem(SysbenchMemConfig {
                block: values.size("block")?,
                oper: values.choice("oper", &MemOper::ALL)?,
                mode: values.choice("mode", &AccessMode::ALL)?,
                events: values.count("events")?,
            }),
            Kind::Gups => {
                let table = values.size("table")?;
                let updates = match values.given("updates") {
                    Some(_) => values.count("updates")?,
                    None => GupsConfig::default_updates(table),
                };
                WorkloadConfig::Gups(GupsConfig { table, updates })
            }
            Kind::TlbBench => WorkloadConfig::TlbBench(TlbBenchConfig {
                size: values.size("size")?,
                accesses: values.count("accesses")?,
            }),
        };
        WorkloadSpec::new(config)
    }

    /// A spec for parameters built in code, checked like parsed ones.
    pub fn new(config: WorkloadConfig) -> Result<WorkloadSpec, WorkloadError> {
        config.validate()?;
        Ok(WorkloadSpec { config })
    }

    /// The workload's name, e.g. `sysbench-mem`.
    pub fn name(&self) -> &'static str {
        self.config.kind().name()
    }

    /// The validated parameters.
    pub fn config(&self) -> &WorkloadConfig {
        &self.config
    }

    /// The name and every parameter with its value, sizes in their shortest exact unit:
    /// parsing it gives back this spec.
    pub fn canonical(&self) -> String {
        let name = self.name();
        match self.config {
            WorkloadConfig::SysbenchMem(c) => format!(
                "{name}:block={},oper={},mode={},events={}",
                format_size(c.block),
                c.oper.name(),
                c.mode.name(),
                c.events
            ),
            WorkloadConfig::Gups(c) => format!(
                "{name}:table={},updates={}",
                format_size(c.table),
                c.updates
            ),
            WorkloadConfig::TlbBench(c) => {
                format!(
                    "{name}:size={},accesses={}",
                    format_size(c.size),
                    c.accesses
                )
            }
        }
    }

    /// Bytes the workload maps and touches.
    pub fn footprint_bytes(&self) -> u64 {
        match self.config {
            WorkloadConfig::SysbenchMem(c) => c.block,
            WorkloadConfig::Gups(c) => c.table,
            WorkloadConfig::TlbBench(c) => c.size,
        }
    }

    /// Accesses of the full measured phase (what the built workload reports too).
    pub fn measured_accesses_total(&self) -> u64 {
        match self.config {
            WorkloadConfig::SysbenchMem(c) => c.total_accesses().unwrap_or(u64::MAX),
            WorkloadConfig::Gups(c) => c.updates,
            WorkloadConfig::TlbBench(c) => c.accesses,
        }
    }

    /// The generator for this spec; its stream is a function of (spec, seed).
    pub fn build(&self, seed: u64) -> AnyWorkload {
        match self.config {
            WorkloadConfig::SysbenchMem(c) => AnyWorkload::SysbenchMem(SysbenchMem::new(c, seed)),
            WorkloadConfig::Gups(c) => AnyWorkload::Gups(Gups::new(c, seed)),
            WorkloadConfig::TlbBench(c) => AnyWorkload::TlbBench(TlbBench::new(c, seed)),
        }
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

fn join<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    items.into_iter().collect::<Vec<_>>().join(", ")
}

/// The `key=value` items of one spec, checked against the workload's keys, with the
/// catalog's defaults behind them.
struct Values<'a> {
    kind: Kind,
    /// One slot per parameter of `kind`, in catalog order.
    given: Vec<Option<&'a str>>,
}

impl<'a> Values<'a> {
    fn split(kind: Kind, params: Option<&'a str>) -> Result<Values<'a>, WorkloadError> {
        let workload = kind.name();
        let keys = kind.params();
        let mut given = vec![None; keys.len()];
        for item in params.into_iter().flat_map(|p| p.split(',')) {
            let (key, value) = match item.split_once('=') {
                Some((key, value)) if !key.is_empty() && !value.is_empty() => (key, value),
                _ => {
                    let first = &keys[0];
                    let example = format!("{workload}:{}={}", first.key, first.default);
                    return Err(WorkloadError::Malformed {
                        workload,
                        item: clip(item),
                        example,
                    });
                }
            };
            let slot = keys.iter().position(|p| p.key == key).ok_or_else(|| {
                WorkloadError::UnknownKey {
                    workload,
                    key: clip(key),
                    valid: join(keys.iter().map(|p| p.key)),
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
        let params = self.kind.params();
        let i = params
            .iter()
            .position(|p| p.key == key)
            .unwrap_or_else(|| unreachable!("no key {key}"));
        (&params[i], self.given[i])
    }

    fn given(&self, key: &str) -> Option<&'a str> {
        self.slot(key).1
    }

    /// The value given for `key`, or its catalog default.
    fn text(&self, key: &str) -> (&'static str, &'a str) {
        let (param, value) = self.slot(key);
        (param.key, value.unwrap_or(param.default))
    }

    fn size(&self, key: &str) -> Result<u64, WorkloadError> {
        let workload = self.kind.name();
        let (key, text) = self.text(key);
        parse_size(text).map_err(|reason| match reason {
            SizeError::Overflow => out_of_range(workload, key, text.to_owned(), SIZE_RANGE),
            SizeError::Malformed => WorkloadError::InvalidSize {
                workload,
                key,
                value: clip(text),
                reason,
            },
        })
    }

    fn count(&self, key: &str) -> Result<u64, WorkloadError> {
        let workload = self.kind.name();
        let (key, text) = self.text(key);
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

    fn choice<T: Copy>(
        &self,
        key: &str,
        choices: &[(&'static str, T)],
    ) -> Result<T, WorkloadError> {
        let (key, text) = self.text(key);
        choices
            .iter()
            .find(|(name, _)| *name == text)
            .map(|&(_, value)| value)
            .ok_or_else(|| WorkloadError::InvalidChoice {
                workload: self.kind.name(),
                key,
                value: clip(text),
                valid: join(choices.iter().map(|(name, _)| *name)),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::super::Workload;
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
    fn canonical_round_trips() {
        for text in [
            "sysbench-mem:block=4G,mode=rnd",
            "sysbench-mem:mode=seq,oper=read,block=1536K,events=25",
            "gups:table=1G",
            "gups:table=12K,updates=1",
            "tlb-bench:size=64M,accesses=1000000",
            "tlb-bench:size=4K",
            "tlb-bench:size=64T,accesses=18446744073709551615",
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

    #[test]
    fn canonical_lists_the_catalog_keys_in_order() {
        for info in catalog() {
            let spec = WorkloadSpec::parse(info.name).unwrap();
            let canonical = spec.canonical();
            let (name, params) = canonical.split_once(':').unwrap();
            assert_eq!(name, info.name);
            let keys: Vec<_> = params
                .split(',')
                .map(|kv| kv.split_once('=').unwrap().0)
                .collect();
            let catalog_keys: Vec<_> = info.params.iter().map(|p| p.key).collect();
            assert_eq!(keys, catalog_keys);
            assert!(!info.summary.is_empty() && info.params.iter().all(|p| !p.help.is_empty()));
        }
    }

    #[test]
    fn spec_and_built_workload_agree() {
        for info in catalog() {
            let spec = WorkloadSpec::parse(info.name).unwrap();
            let w = spec.build(0);
            assert_eq!(w.measured_accesses_total(), spec.measured_accesses_total());
        }
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
            r#"unknown workload "stream"; valid workloads: sysbench-mem, gups, tlb-bench"#
        );
        assert!(err("").contains("valid workloads: sysbench-mem, gups, tlb-bench"));
        assert!(err("GUPS:table=1G").starts_with(r#"unknown workload "GUPS""#));
    }

    #[test]
    fn unknown_key_lists_the_valid_keys() {
        assert_eq!(
            err("sysbench-mem:size=4G"),
            r#"unknown parameter "size" for sysbench-mem; valid parameters: block, oper, mode, events"#
        );
        assert_eq!(
            err("gups:block=1G"),
            r#"unknown parameter "block" for gups; valid parameters: table, updates"#
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
    }
}
