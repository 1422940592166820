//! `host-remap`: a program reading random words of a buffer while the host migrates pages
//! of it underneath (compaction, NUMA balancing), the cost TPT must pay for that its tags
//! and `gfn_to_hfn` table cannot avoid.
//!
//! The program maps and writes a `size`-byte buffer at [`BUFFER_BASE`], then reads
//! `accesses` 8-byte words at uniformly random offsets (independent loads, like sysbench's
//! rnd mode). After every `every` reads the host moves the page backing a random page of the
//! buffer ([`Op::HostRemap`]). Under nested paging a move is a p2m (EPT) update and a global
//! flush; under TPT it is also a tag update, a `gfn_to_hfn` refresh and the guest's fix-up of
//! its devirt entries. Other schemes reject the first move.

use super::spec::{check_count, check_size, ParamInfo, Values, WorkloadError};
use super::{uniform_below, Op, UniformAccesses, Workload, WorkloadKind, BUFFER_BASE};
use crate::addr::{Gva, PAGE_SIZE};
use crate::units::format_size;

/// The parameters of a `host-remap` run (validated by [`super::WorkloadSpec`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HostRemapConfig {
    /// Buffer size in bytes (a multiple of 4 KiB).
    pub size: u64,
    /// Word reads in the measured phase.
    pub accesses: u64,
    /// Reads between two host moves, at least 1.
    pub every: u64,
}

impl HostRemapConfig {
    const WORD_BYTES: u64 = 8;

    /// Host moves in the measured phase.
    pub const fn remaps(&self) -> u64 {
        self.accesses / self.every
    }
}

impl Default for HostRemapConfig {
    /// 64 MiB, a million reads, a move every 10,000 reads (100 moves).
    fn default() -> Self {
        HostRemapConfig {
            size: 64 << 20,
            accesses: 1_000_000,
            every: 10_000,
        }
    }
}

impl WorkloadKind for HostRemapConfig {
    type Generator = HostRemap;

    const NAME: &'static str = "host-remap";
    const SUMMARY: &'static str = "host page migration under a running program: random reads while the host moves a page every `every` reads (p2m, tags, global flush, TPT's devirt fix-up; nested and tpt paging)";
    const PARAMS: &'static [ParamInfo] = &[
        ParamInfo {
            key: "size",
            default: "64M",
            help: "buffer read at random 8-byte words, 4K to 64T in multiples of 4K",
        },
        ParamInfo {
            key: "accesses",
            default: "1000000",
            help: "independent random reads in the measured phase",
        },
        ParamInfo {
            key: "every",
            default: "10000",
            help: "reads between two host moves of a random page of the buffer (nested and tpt paging)",
        },
    ];

    fn parse(values: &Values<'_>) -> Result<Self, WorkloadError> {
        Ok(HostRemapConfig {
            size: values.size("size")?,
            accesses: values.count("accesses")?,
            every: values.count("every")?,
        })
    }

    fn validate(&self) -> Result<(), WorkloadError> {
        check_size(Self::NAME, "size", self.size)?;
        check_count(Self::NAME, "accesses", self.accesses)?;
        check_count(Self::NAME, "every", self.every)
    }

    fn canonical_params(&self) -> String {
        format!(
            "size={},accesses={},every={}",
            format_size(self.size),
            self.accesses,
            self.every
        )
    }

    fn footprint_bytes(&self) -> u64 {
        self.size
    }

    fn measured_accesses_total(&self) -> u64 {
        self.accesses
    }

    fn program(&self) -> &'static str {
        "host-remap"
    }

    fn build(&self, seed: u64) -> Result<HostRemap, WorkloadError> {
        Ok(HostRemap::new(*self, seed))
    }
}

/// The generator of a `host-remap` run.
#[derive(Clone, Debug)]
pub struct HostRemap {
    config: HostRemapConfig,
    /// The set-up and the reads; moves draw their pages from its random numbers too.
    stream: UniformAccesses,
    /// Reads until the next move.
    until_remap: u64,
}

impl HostRemap {
    /// A generator for `config` (which must have come through spec validation).
    pub fn new(config: HostRemapConfig, seed: u64) -> Self {
        HostRemap {
            config,
            stream: UniformAccesses::new(
                config.size,
                HostRemapConfig::WORD_BYTES,
                config.accesses,
                false,
                seed,
            ),
            until_remap: config.every,
        }
    }

    /// The parameters this generator runs.
    pub fn config(&self) -> &HostRemapConfig {
        &self.config
    }
}

impl Workload for HostRemap {
    #[inline]
    fn next_op(&mut self) -> Option<Op> {
        if !self.stream.measuring() {
            return self.stream.next_op();
        }
        if self.until_remap == 0 {
            self.until_remap = self.config.every;
            let page = uniform_below(self.stream.rng(), self.config.size / PAGE_SIZE);
            return Some(Op::HostRemap {
                va: Gva::new(BUFFER_BASE.raw() + page * PAGE_SIZE),
            });
        }
        let read = self.stream.next_op()?;
        self.until_remap -= 1;
        Some(read)
    }

    fn measured_accesses_total(&self) -> u64 {
        self.config.accesses
    }

    /// 19, as sysbench's rnd read loop (an RNG step, index scaling, the load, the loop):
    /// the same shape of program.
    fn instructions_per_access(&self) -> f64 {
        19.0
    }

    fn dependent_accesses(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_a_random_page_after_every_every_reads() {
        let config = HostRemapConfig {
            size: 1 << 20,
            accesses: 35,
            every: 10,
        };
        let mut w = HostRemap::new(config, 3);
        for _ in 0..3 {
            assert!(matches!(
                w.next_op(),
                Some(Op::Map { .. } | Op::TouchPages { .. } | Op::StartMeasurement)
            ));
        }
        let ops: Vec<Op> = std::iter::from_fn(|| w.next_op()).collect();
        let remaps: Vec<usize> = ops
            .iter()
            .enumerate()
            .filter(|(_, op)| matches!(op, Op::HostRemap { .. }))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(remaps, vec![10, 21, 32], "a move after each 10 reads");
        assert_eq!(ops.len(), 35 + 3);
        assert_eq!(config.remaps(), 3);
        for op in ops {
            let va = match op {
                Op::HostRemap { va } => {
                    assert_eq!(va.raw() % PAGE_SIZE, 0);
                    va
                }
                Op::Access { va, write: false } => va,
                other => panic!("unexpected {other:?}"),
            };
            assert!((BUFFER_BASE.raw()..BUFFER_BASE.raw() + (1 << 20)).contains(&va.raw()));
        }
    }
}
