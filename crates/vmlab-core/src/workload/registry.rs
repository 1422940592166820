//! The workloads by name: one list, from which the parser's and the catalog's table
//! (`KINDS`), the parameters of any workload ([`WorkloadConfig`]) and any built generator
//! ([`AnyWorkload`]) are generated. Adding a workload is one module implementing
//! [`WorkloadKind`] on its config and one line in the `registry!` list below.

use super::champsim::ChampSimConfig;
use super::fork_bench::ForkBenchConfig;
use super::gups::GupsConfig;
use super::host_remap::HostRemapConfig;
use super::kind::WorkloadKind;
use super::lmbench::LmbenchConfig;
use super::spec::{ParamInfo, Values, WorkloadError};
use super::sysbench::SysbenchMemConfig;
use super::tlb_bench::TlbBenchConfig;
use super::tpt_probe::TptIsolationProbeConfig;
use super::trace::TraceConfig;
use super::{Op, Workload};

registry! {
    SysbenchMem(SysbenchMemConfig),
    Gups(GupsConfig),
    TlbBench(TlbBenchConfig),
    ForkBench(ForkBenchConfig),
    Lmbench(LmbenchConfig),
    TptIsolationProbe(TptIsolationProbeConfig),
    HostRemap(HostRemapConfig),
    Trace(TraceConfig),
    ChampSim(ChampSimConfig),
}

/// Something to do with a built generator, generic over its type: [`AnyWorkload::visit`]
/// matches once and calls [`Self::visit`] with the concrete generator, so what it runs (the
/// engine's measured loop) is monomorphized per workload, with no dynamic call per op.
pub trait WorkloadVisitor {
    /// What the visit returns.
    type Output;

    /// Does it with `workload`.
    fn visit<W: Workload>(self, workload: W) -> Self::Output;
}

/// One registered workload, as the parser and the catalog see it before any config exists.
pub(crate) struct Entry {
    /// [`WorkloadKind::NAME`].
    pub(crate) name: &'static str,
    /// [`WorkloadKind::SUMMARY`].
    pub(crate) summary: &'static str,
    /// [`WorkloadKind::PARAMS`].
    pub(crate) params: &'static [ParamInfo],
    /// [`WorkloadKind::example`].
    pub(crate) example: fn() -> String,
    /// [`WorkloadKind::DEFAULT_ACCESSES`].
    pub(crate) default_accesses: u64,
    /// [`WorkloadKind::parse`], into its [`WorkloadConfig`] variant.
    pub(crate) parse: fn(&Values<'_>) -> Result<WorkloadConfig, WorkloadError>,
}

/// The workload called `name`.
pub(crate) fn find(name: &str) -> Option<&'static Entry> {
    KINDS.iter().find(|kind| kind.name == name)
}

/// The measured accesses `vmlab run` simulates by default for the workload `spec` names
/// ([`WorkloadKind::DEFAULT_ACCESSES`]; that of the generators for an unknown name, which
/// parsing rejects later).
pub fn default_accesses(spec: &str) -> u64 {
    let name = spec.split_once(':').map_or(spec, |(name, _)| name);
    find(name).map_or(super::kind::DEFAULT_SAMPLE, |kind| kind.default_accesses)
}

/// Every workload name in catalog order, comma-separated (for error messages).
pub(crate) fn names() -> String {
    KINDS
        .iter()
        .map(|kind| kind.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Generates, from `Variant(Config)` lines, the catalog table and the enums over every
/// workload with their dispatch: each arm calls the [`WorkloadKind`] or [`Workload`] method
/// of the variant's type.
macro_rules! registry {
    ($($variant:ident($config:ty),)+) => {
        /// Every workload, in the order `vmlab list` shows them.
        pub(crate) const KINDS: &[Entry] = &[$(
            Entry {
                name: <$config as WorkloadKind>::NAME,
                summary: <$config as WorkloadKind>::SUMMARY,
                params: <$config as WorkloadKind>::PARAMS,
                example: <$config as WorkloadKind>::example,
                default_accesses: <$config as WorkloadKind>::DEFAULT_ACCESSES,
                parse: |values| {
                    <$config as WorkloadKind>::parse(values).map(WorkloadConfig::$variant)
                },
            },
        )+];

        /// The validated parameters of one workload.
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum WorkloadConfig {$(
            #[doc = concat!("[`", stringify!($config), "`].")]
            $variant($config),
        )+}

        impl WorkloadConfig {
            /// The workload's name, e.g. `sysbench-mem`.
            pub fn name(&self) -> &'static str {
                match self {$(Self::$variant(_) => <$config as WorkloadKind>::NAME,)+}
            }

            /// [`WorkloadKind::validate`].
            pub(crate) fn validate(&self) -> Result<(), WorkloadError> {
                match self {$(Self::$variant(c) => WorkloadKind::validate(c),)+}
            }

            /// [`WorkloadKind::canonical_params`].
            pub(crate) fn canonical_params(&self) -> String {
                match self {$(Self::$variant(c) => WorkloadKind::canonical_params(c),)+}
            }

            /// [`WorkloadKind::footprint_bytes`].
            pub(crate) fn footprint_bytes(&self) -> u64 {
                match self {$(Self::$variant(c) => WorkloadKind::footprint_bytes(c),)+}
            }

            /// [`WorkloadKind::measured_accesses_total`].
            pub(crate) fn measured_accesses_total(&self) -> u64 {
                match self {$(Self::$variant(c) => WorkloadKind::measured_accesses_total(c),)+}
            }

            /// [`WorkloadKind::inputs`].
            pub(crate) fn inputs(&self) -> Vec<crate::provenance::Input> {
                match self {$(Self::$variant(c) => WorkloadKind::inputs(c),)+}
            }

            /// [`WorkloadKind::program`].
            pub(crate) fn program(&self) -> &'static str {
                match self {$(Self::$variant(c) => WorkloadKind::program(c),)+}
            }

            /// [`WorkloadKind::programs`].
            pub(crate) fn programs(&self) -> Vec<&'static str> {
                match self {$(Self::$variant(c) => WorkloadKind::programs(c),)+}
            }

            /// [`WorkloadKind::build`], into its [`AnyWorkload`] variant.
            pub(crate) fn build(&self, seed: u64) -> Result<AnyWorkload, WorkloadError> {
                match self {$(
                    Self::$variant(c) => WorkloadKind::build(c, seed).map(AnyWorkload::$variant),
                )+}
            }
        }

        /// Any of the workloads' generators. [`Self::visit`] matches once and hands the
        /// concrete generator on, for loops monomorphized per type; the [`Workload`] impl
        /// matches on every call: fine for tests and set-up, not for the measured loop.
        #[derive(Debug)]
        pub enum AnyWorkload {$(
            #[doc = concat!("The generator of [`", stringify!($config), "`].")]
            $variant(<$config as WorkloadKind>::Generator),
        )+}

        impl AnyWorkload {
            /// Runs `visitor` on the concrete generator.
            pub fn visit<V: WorkloadVisitor>(self, visitor: V) -> V::Output {
                match self {$(Self::$variant(w) => visitor.visit(w),)+}
            }
        }

        impl Workload for AnyWorkload {
            fn next_op(&mut self) -> Option<Op> {
                match self {$(Self::$variant(w) => w.next_op(),)+}
            }

            fn measured_accesses_total(&self) -> u64 {
                match self {$(Self::$variant(w) => w.measured_accesses_total(),)+}
            }

            fn instructions_per_access(&self) -> f64 {
                match self {$(Self::$variant(w) => w.instructions_per_access(),)+}
            }

            fn dependent_accesses(&self) -> bool {
                match self {$(Self::$variant(w) => w.dependent_accesses(),)+}
            }

            fn instructions_retired(&self) -> Option<u64> {
                match self {$(Self::$variant(w) => w.instructions_retired(),)+}
            }

            fn take_failure(&mut self) -> Option<String> {
                match self {$(Self::$variant(w) => w.take_failure(),)+}
            }

            fn position(&self) -> Option<String> {
                match self {$(Self::$variant(w) => w.position(),)+}
            }
        }
    };
}
use registry;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::WorkloadSpec;

    #[test]
    fn names_are_unique_and_each_parses_into_its_own_variant() {
        for (i, kind) in KINDS.iter().enumerate() {
            assert!(KINDS[..i].iter().all(|other| other.name != kind.name));
            assert_eq!(find(kind.name).map(|k| k.name), Some(kind.name));
            // lmbench needs its op: its example names one; a trace needs a file that exists.
            let text = match kind.name {
                "trace" => format!(
                    "trace:file={}",
                    crate::workload::trace::tiny_trace().display()
                ),
                "champsim" => format!(
                    "champsim:file={}",
                    crate::workload::champsim::testing::tiny_champsim().display()
                ),
                _ => (kind.example)(),
            };
            let spec = WorkloadSpec::parse(&text).unwrap();
            assert_eq!(spec.config().name(), kind.name);
            assert_eq!(spec.name(), kind.name);
        }
        assert!(find("nope").is_none());
    }
}
