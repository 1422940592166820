//! `tpt-isolation-probe`: a malicious guest against TPT's isolation.
//!
//! The program maps `pages` 4 KiB pages at [`BUFFER_BASE`] and writes them all (the
//! [`Op::Map`] and write [`Op::TouchPages`] of set-up), so every level of its devirt tables
//! is built. The measured phase is `probes` [`Op::ForeignProbe`]s: each time the guest
//! kernel points the devirt entry at one level on the path of a random page of the buffer
//! at another VM's host frame, and the process reads or writes that page through it. The
//! level cycles 1 (leaf), 2, 3, 4 and the access alternates read and write, flipping phase
//! every full cycle, so every level is probed by reads and by writes. TPT's ownership tags must refuse every such access: the report's
//! `tag_violations` counts the refusals and `foreign_accesses` (accesses that reached the
//! foreign frame) must stay 0. Only meaningful under `--paging tpt`; elsewhere the first
//! probe is a configuration error.
//!
//! The probes are not data accesses: [`Workload::measured_accesses_total`] is 0 and the
//! engine runs all of them.

use super::spec::{check_count, out_of_range, ParamInfo, Values, WorkloadError};
use super::{uniform_below, Op, Prologue, Workload, WorkloadKind, BUFFER_BASE};
use crate::addr::Gva;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

const PAGE: u64 = 4096;
/// Levels probed, cycled in order: the leaf (1) up to the root of a 4-level table.
const LEVELS: u8 = 4;

/// The parameters of a `tpt-isolation-probe` run (validated by [`super::WorkloadSpec`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TptIsolationProbeConfig {
    /// 4 KiB pages mapped and written at set-up, 1 to 2^20.
    pub pages: u64,
    /// Foreign probes in the measured phase, at least 1.
    pub probes: u64,
}

impl TptIsolationProbeConfig {
    /// Largest buffer: 2^20 pages (4 GiB).
    pub const MAX_PAGES: u64 = 1 << 20;

    /// Bytes mapped and touched.
    pub const fn bytes(&self) -> u64 {
        self.pages * PAGE
    }
}

impl Default for TptIsolationProbeConfig {
    /// 64 pages (256 KiB), 256 probes: 64 at each level.
    fn default() -> Self {
        TptIsolationProbeConfig {
            pages: 64,
            probes: 256,
        }
    }
}

impl WorkloadKind for TptIsolationProbeConfig {
    type Generator = TptIsolationProbe;

    const NAME: &'static str = "tpt-isolation-probe";
    const SUMMARY: &'static str = "TPT isolation: a malicious guest points its devirt tables, at every level, at another VM's host frame and reads/writes through them; tag_violations counts the refusals, foreign_accesses must be 0 (runs under pv, tpt or tpt-prototype)";
    const PARAMS: &'static [ParamInfo] = &[
        ParamInfo {
            key: "pages",
            default: "64",
            help: "4K pages mapped and written before probing, 1 to 1048576",
        },
        ParamInfo {
            key: "probes",
            default: "256",
            help: "foreign probes, each on a random page; level cycles 1 (leaf) to 4, read and write alternate",
        },
    ];

    fn parse(values: &Values<'_>) -> Result<Self, WorkloadError> {
        Ok(TptIsolationProbeConfig {
            pages: values.count("pages")?,
            probes: values.count("probes")?,
        })
    }

    fn validate(&self) -> Result<(), WorkloadError> {
        if !(1..=Self::MAX_PAGES).contains(&self.pages) {
            let why = "must be 1 to 1048576 pages of 4K";
            return Err(out_of_range(
                Self::NAME,
                "pages",
                self.pages.to_string(),
                why,
            ));
        }
        check_count(Self::NAME, "probes", self.probes)
    }

    fn canonical_params(&self) -> String {
        format!("pages={},probes={}", self.pages, self.probes)
    }

    fn footprint_bytes(&self) -> u64 {
        self.bytes()
    }

    /// 0: the probes are not data accesses.
    fn measured_accesses_total(&self) -> u64 {
        0
    }

    fn program(&self) -> &'static str {
        "tpt-isolation-probe"
    }

    fn build(&self, seed: u64) -> Result<TptIsolationProbe, WorkloadError> {
        Ok(TptIsolationProbe::new(*self, seed))
    }
}

/// The generator of a `tpt-isolation-probe` run.
#[derive(Clone, Debug)]
pub struct TptIsolationProbe {
    config: TptIsolationProbeConfig,
    rng: Xoshiro256PlusPlus,
    prologue: Prologue,
    /// Probes handed out so far.
    done: u64,
}

impl TptIsolationProbe {
    /// A generator for `config` (which must have come through spec validation: pages 1 to
    /// 2^20, probes at least 1).
    pub fn new(config: TptIsolationProbeConfig, seed: u64) -> Self {
        TptIsolationProbe {
            config,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            prologue: Prologue::new(config.bytes()),
            done: 0,
        }
    }

    /// The parameters this generator runs.
    pub fn config(&self) -> &TptIsolationProbeConfig {
        &self.config
    }
}

impl Workload for TptIsolationProbe {
    fn next_op(&mut self) -> Option<Op> {
        if !self.prologue.done() {
            return Some(self.prologue.next());
        }
        if self.done >= self.config.probes {
            return None;
        }
        let page = uniform_below(&mut self.rng, self.config.pages);
        let op = Op::ForeignProbe {
            va: Gva::new(BUFFER_BASE.raw() + page * PAGE),
            level: (self.done % u64::from(LEVELS)) as u8 + 1,
            write: (self.done + self.done / 4) % 2 == 1,
        };
        self.done += 1;
        Some(op)
    }

    fn measured_accesses_total(&self) -> u64 {
        0
    }

    /// 0: the measured phase makes no `Access` ops; what matters is the probe counters.
    fn instructions_per_access(&self) -> f64 {
        0.0
    }

    fn dependent_accesses(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::drain;
    use super::*;

    #[test]
    fn tiny_run_is_set_up_then_probes_cycling_levels() {
        let c = TptIsolationProbeConfig {
            pages: 3,
            probes: 6,
        };
        let mut w = TptIsolationProbe::new(c, 7);
        let ops = drain(&mut w);
        assert_eq!(
            ops[..3],
            [
                Op::Map {
                    start: BUFFER_BASE,
                    len: 3 * PAGE
                },
                Op::TouchPages {
                    start: BUFFER_BASE,
                    len: 3 * PAGE,
                    write: true
                },
                Op::StartMeasurement,
            ]
        );
        assert_eq!(ops.len(), 3 + 6);
        let mut levels = Vec::new();
        let mut writes = Vec::new();
        for op in &ops[3..] {
            let Op::ForeignProbe { va, level, write } = *op else {
                panic!("unexpected op in the measured phase: {op:?}");
            };
            let offset = va.raw() - BUFFER_BASE.raw();
            assert!(va.raw() >= BUFFER_BASE.raw() && offset < 3 * PAGE, "{va:?}");
            assert_eq!(offset % PAGE, 0, "{va:?}");
            levels.push(level);
            writes.push(write);
        }
        assert_eq!(levels, [1, 2, 3, 4, 1, 2]);
        assert_eq!(writes, [false, true, false, true, true, false]);
        assert_eq!(w.measured_accesses_total(), 0);
        assert_eq!(w.instructions_per_access(), 0.0);
        assert!(!w.dependent_accesses());
    }

    #[test]
    fn makes_exactly_probes_probes_over_the_buffer_and_depends_on_the_seed() {
        let c = TptIsolationProbeConfig {
            pages: 64,
            probes: 1000,
        };
        let ops = drain(&mut TptIsolationProbe::new(c, 1));
        let probes: Vec<Op> = ops
            .iter()
            .copied()
            .filter(|op| matches!(op, Op::ForeignProbe { .. }))
            .collect();
        assert_eq!(probes.len(), 1000);
        assert_eq!(ops.len(), 3 + 1000);
        assert!(!ops.iter().any(|op| matches!(op, Op::Access { .. })));
        // Every level is probed equally, and the pages spread over the buffer.
        for level in 1..=4 {
            for write in [false, true] {
                let n = probes
                    .iter()
                    .filter(|op| matches!(op, Op::ForeignProbe { level: l, write: w, .. } if *l == level && *w == write))
                    .count();
                // Levels cycle with period 4 and the read/write phase flips every cycle,
                // so each level gets as many reads as writes.
                let expected = 125;
                assert_eq!(n, expected, "level {level} write {write}");
            }
        }
        let distinct: std::collections::HashSet<u64> = probes
            .iter()
            .filter_map(|op| match *op {
                Op::ForeignProbe { va, .. } => Some(va.raw()),
                _ => None,
            })
            .collect();
        assert!(distinct.len() > 32, "{}", distinct.len());
        // Same seed, same stream; another seed, another.
        assert_eq!(drain(&mut TptIsolationProbe::new(c, 1)), ops);
        assert_ne!(drain(&mut TptIsolationProbe::new(c, 2)), ops);
    }
}
