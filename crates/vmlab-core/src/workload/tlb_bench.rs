//! `tlb-bench`: the classic TLB-reach experiment, a dependent pointer chase over a region.
//!
//! The program links one node per 64-byte line of a `size`-byte region (writing every
//! node: the write [`Op::TouchPages`]), then follows `accesses` pointers. Sweeping `size`
//! from 4 KiB to gigabytes shows each level of TLB and cache running out of reach.
//!
//! Each access reads a line chosen uniformly at random, independently of the others. A
//! real chase follows a random cyclic permutation, which visits every line once per lap;
//! for the question this benchmark asks (how often the TLBs and caches hold the
//! translation and the line) independent uniform choice behaves the same once the region
//! is larger than what they hold, and needs no per-line state.

use super::spec::{check_count, check_size, ParamInfo, Values, WorkloadError};
use super::{Op, UniformAccesses, Workload, WorkloadKind};
use crate::units::format_size;

/// The parameters of a `tlb-bench` run (validated by [`super::WorkloadSpec`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TlbBenchConfig {
    /// Region size in bytes (a multiple of 4 KiB).
    pub size: u64,
    /// Pointer loads in the measured phase.
    pub accesses: u64,
}

impl TlbBenchConfig {
    /// Bytes per node: one cache line.
    pub const LINE_BYTES: u64 = 64;

    /// Nodes (lines) in the region.
    pub const fn lines(&self) -> u64 {
        self.size / Self::LINE_BYTES
    }
}

impl Default for TlbBenchConfig {
    /// 64 MiB (beyond the reach of a 4 KiB-page STLB), ten million loads.
    fn default() -> Self {
        TlbBenchConfig {
            size: 64 << 20,
            accesses: 10_000_000,
        }
    }
}

impl WorkloadKind for TlbBenchConfig {
    type Generator = TlbBench;

    const NAME: &'static str = "tlb-bench";
    const SUMMARY: &'static str =
        "TLB reach: dependent random pointer chase, one 64-byte line per load";
    const PARAMS: &'static [ParamInfo] = &[
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

    fn parse(values: &Values<'_>) -> Result<Self, WorkloadError> {
        Ok(TlbBenchConfig {
            size: values.size("size")?,
            accesses: values.count("accesses")?,
        })
    }

    fn validate(&self) -> Result<(), WorkloadError> {
        check_size(Self::NAME, "size", self.size)?;
        check_count(Self::NAME, "accesses", self.accesses)
    }

    fn canonical_params(&self) -> String {
        format!("size={},accesses={}", format_size(self.size), self.accesses)
    }

    fn footprint_bytes(&self) -> u64 {
        self.size
    }

    fn measured_accesses_total(&self) -> u64 {
        self.accesses
    }

    fn program(&self) -> &'static str {
        "tlb-bench"
    }

    fn build(&self, seed: u64) -> Result<TlbBench, WorkloadError> {
        Ok(TlbBench::new(*self, seed))
    }
}

/// The generator of a `tlb-bench` run.
#[derive(Clone, Debug)]
pub struct TlbBench {
    config: TlbBenchConfig,
    stream: UniformAccesses,
}

impl TlbBench {
    /// A generator for `config` (which must have come through spec validation: size a
    /// non-zero multiple of 4 KiB).
    pub fn new(config: TlbBenchConfig, seed: u64) -> Self {
        TlbBench {
            config,
            stream: UniformAccesses::new(
                config.size,
                TlbBenchConfig::LINE_BYTES,
                config.accesses,
                false,
                seed,
            ),
        }
    }

    /// The parameters this generator runs.
    pub fn config(&self) -> &TlbBenchConfig {
        &self.config
    }
}

impl Workload for TlbBench {
    #[inline]
    fn next_op(&mut self) -> Option<Op> {
        self.stream.next_op()
    }

    fn measured_accesses_total(&self) -> u64 {
        self.config.accesses
    }

    /// 2: the chase loop gcc 12 -O2 emits is `mov (%rax),%rax; sub $1,%rdx; jae` — the
    /// load plus a counter decrement and a branch.
    fn instructions_per_access(&self) -> f64 {
        2.0
    }

    fn dependent_accesses(&self) -> bool {
        // Each load's address is the value the previous load returned.
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::measured_accesses;
    use super::*;

    #[test]
    fn reads_line_aligned_nodes_inside_the_region() {
        let c = TlbBenchConfig {
            size: 4096,
            accesses: 1000,
        };
        let mut w = TlbBench::new(c, 4);
        let accesses = measured_accesses(&mut w, 4096);
        assert_eq!(accesses.len() as u64, w.measured_accesses_total());
        assert!(accesses
            .iter()
            .all(|&(off, write)| off < 4096 && off % 64 == 0 && !write));
        let distinct: std::collections::HashSet<_> = accesses.iter().map(|a| a.0).collect();
        assert_eq!(
            distinct.len(),
            64,
            "1000 draws over 64 lines should hit them all"
        );
        assert!(w.dependent_accesses());
    }

    #[test]
    fn stream_is_a_function_of_the_seed() {
        let c = TlbBenchConfig {
            size: 1 << 20,
            accesses: 200,
        };
        let run = |seed| measured_accesses(&mut TlbBench::new(c, seed), 1 << 20);
        assert_eq!(run(8), run(8));
        assert_ne!(run(8), run(9));
    }
}
