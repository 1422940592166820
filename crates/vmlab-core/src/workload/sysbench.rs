//! `sysbench-mem`: sysbench 1.0's memory test (`sysbench memory run`), the workload of the
//! TPT artifact's headline result.
//!
//! What sysbench does (`src/tests/memory/sb_memory.c`):
//! - `memory_init` mallocs one global buffer of `--memory-block-size` bytes and memsets
//!   it to zero. Here: [`Op::Map`] and a write [`Op::TouchPages`].
//! - Each event (`memory_execute_event`) runs `block / sizeof(int)` iterations, each
//!   touching one 4-byte `int`:
//!   - `seq`: a pointer walks the buffer from its start to its end, storing (`write`) or
//!     loading (`read`) each `int` in turn;
//!   - `rnd`: each iteration draws `idx = (int)(sb_rand_uniform_double() * (block / 4))`
//!     and stores to (or loads from) `buf[idx]`. `sb_rand_uniform_double` takes the top
//!     52 bits of a xoroshiro128+ output as the mantissa of a double in [0, 1).
//!
//! The value stored is a `volatile int` local, so every iteration also loads it from the
//! stack (writes), or stores the loaded value to it (reads): one L1-resident access we
//! fold into the instruction count rather than the access stream.
//!
//! Deviations: our random stream is Xoshiro256++ rather than sysbench's xoroshiro128+
//! (same distribution, different numbers), but it is turned into an index exactly as
//! sysbench does (52-bit double times the element count, truncated). sysbench's `int`
//! index would overflow for `rnd` blocks of 8 GiB and more; we index in 64 bits, which is
//! what such a run would mean. Per-event bookkeeping (timers, a mutex) is not modeled:
//! it is negligible against the block/4 accesses of any block of a megabyte or more.
//! `--memory-oper=none` makes no memory accesses and is not offered.

use super::spec::{check_count, check_size, out_of_range, ParamInfo, Values, WorkloadError};
use super::{Op, Prologue, Workload, WorkloadKind, BUFFER_BASE};
use crate::addr::Gva;
use crate::units::format_size;
use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Whether each iteration stores or loads (`--memory-oper`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemOper {
    /// Store to each `int` (`write`, the default).
    Write,
    /// Load each `int` (`read`).
    Read,
}

impl MemOper {
    /// Every choice with its spec name, in the order help text lists them.
    pub const ALL: [(&'static str, MemOper); 2] =
        [("write", MemOper::Write), ("read", MemOper::Read)];

    /// The spec name (`write` or `read`).
    pub const fn name(self) -> &'static str {
        match self {
            MemOper::Write => "write",
            MemOper::Read => "read",
        }
    }
}

/// Sequential or random indexing (`--memory-access-mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessMode {
    /// `seq`: every `int` of the buffer in order, start to end.
    Seq,
    /// `rnd`: a uniformly random `int` per iteration.
    Rnd,
}

impl AccessMode {
    /// Every choice with its spec name, in the order help text lists them.
    pub const ALL: [(&'static str, AccessMode); 2] =
        [("seq", AccessMode::Seq), ("rnd", AccessMode::Rnd)];

    /// The spec name (`seq` or `rnd`).
    pub const fn name(self) -> &'static str {
        match self {
            AccessMode::Seq => "seq",
            AccessMode::Rnd => "rnd",
        }
    }
}

/// The parameters of a `sysbench-mem` run (validated by [`super::WorkloadSpec`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SysbenchMemConfig {
    /// `--memory-block-size`: the buffer, in bytes (a multiple of 4 KiB here).
    pub block: u64,
    /// `--memory-oper`.
    pub oper: MemOper,
    /// `--memory-access-mode`.
    pub mode: AccessMode,
    /// Events to run. sysbench stops at its time limit (10 s by default) or at
    /// `--memory-total-size` (100G), checked between events; a 4 GiB `rnd` event takes
    /// longer than 10 s, so the artifact's run is exactly one event.
    pub events: u64,
}

impl SysbenchMemConfig {
    /// Bytes per element: sysbench's buffer is an `int` array.
    pub const ELEMENT_BYTES: u64 = 4;

    /// Accesses in one event: one per `int` of the block.
    pub const fn elements_per_event(&self) -> u64 {
        self.block / Self::ELEMENT_BYTES
    }

    /// Accesses of the whole measured phase (None if that overflows 64 bits).
    pub const fn total_accesses(&self) -> Option<u64> {
        self.events.checked_mul(self.elements_per_event())
    }
}

impl Default for SysbenchMemConfig {
    /// The TPT artifact's run: `--memory-block-size=4G --memory-access-mode=rnd`, write.
    fn default() -> Self {
        SysbenchMemConfig {
            block: 4 << 30,
            oper: MemOper::Write,
            mode: AccessMode::Rnd,
            events: 1,
        }
    }
}

impl WorkloadKind for SysbenchMemConfig {
    type Generator = SysbenchMem;

    const NAME: &'static str = "sysbench-mem";
    const SUMMARY: &'static str =
        "sysbench 1.0 memory test: seq or random int reads/writes over one block";
    const PARAMS: &'static [ParamInfo] = &[
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

    fn parse(values: &Values<'_>) -> Result<Self, WorkloadError> {
        Ok(SysbenchMemConfig {
            block: values.size("block")?,
            oper: values.choice("oper", &MemOper::ALL)?,
            mode: values.choice("mode", &AccessMode::ALL)?,
            events: values.count("events")?,
        })
    }

    fn validate(&self) -> Result<(), WorkloadError> {
        check_size(Self::NAME, "block", self.block)?;
        check_count(Self::NAME, "events", self.events)?;
        if self.total_accesses().is_none() {
            let why = "events x block/4 accesses must fit in 64 bits";
            return Err(out_of_range(
                Self::NAME,
                "events",
                self.events.to_string(),
                why,
            ));
        }
        Ok(())
    }

    fn canonical_params(&self) -> String {
        format!(
            "block={},oper={},mode={},events={}",
            format_size(self.block),
            self.oper.name(),
            self.mode.name(),
            self.events
        )
    }

    fn footprint_bytes(&self) -> u64 {
        self.block
    }

    fn measured_accesses_total(&self) -> u64 {
        self.total_accesses().unwrap_or(u64::MAX)
    }

    fn program(&self) -> &'static str {
        "sysbench"
    }

    fn build(&self, seed: u64) -> Result<SysbenchMem, WorkloadError> {
        Ok(SysbenchMem::new(*self, seed))
    }
}

/// 2^-52: scales a 52-bit integer into [0, 1), as sysbench's mantissa trick does.
const TWO_POW_MINUS_52: f64 = 1.0 / (1u64 << 52) as f64;

/// The generator of a `sysbench-mem` run.
#[derive(Clone, Debug)]
pub struct SysbenchMem {
    config: SysbenchMemConfig,
    rng: Xoshiro256PlusPlus,
    prologue: Prologue,
    /// Elements per event, as an integer and as the double sysbench multiplies by.
    elements: u64,
    elements_f64: f64,
    /// With a power-of-two element count 2^k (k from 1 to 52), `64 - k`: the index is then
    /// the top k random bits, the very value the double arithmetic yields (see
    /// [`Self::random_index`]), without converting to and from floating point.
    power_of_two_shift: Option<u32>,
    /// Next element of the current event (used by `seq`).
    next_elem: u64,
    /// Accesses still to come in the measured phase.
    remaining: u64,
    write: bool,
}

impl SysbenchMem {
    /// A generator for `config` (which must have come through spec validation: block a
    /// non-zero multiple of 4 KiB, events at least 1, total accesses within 64 bits).
    pub fn new(config: SysbenchMemConfig, seed: u64) -> Self {
        let elements = config.elements_per_event();
        SysbenchMem {
            config,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            prologue: Prologue::new(config.block),
            elements,
            elements_f64: elements as f64,
            power_of_two_shift: (elements.is_power_of_two() && (2..=1 << 52).contains(&elements))
                .then(|| 64 - elements.trailing_zeros()),
            next_elem: 0,
            remaining: config.total_accesses().unwrap_or(u64::MAX),
            write: config.oper == MemOper::Write,
        }
    }

    /// The parameters this generator runs.
    pub fn config(&self) -> &SysbenchMemConfig {
        &self.config
    }

    /// sysbench's index: a double in [0, 1) from 52 random bits, times the element count,
    /// truncated.
    ///
    /// With 2^k elements the product is the 52-bit integer times 2^(k - 52), exact in a
    /// double, so the truncation is a right shift of the 52 bits by 52 - k: the top k bits
    /// of the random word. That is the same number, taken without floating point.
    #[inline]
    fn random_index(&mut self) -> u64 {
        let bits = self.rng.next_u64();
        match self.power_of_two_shift {
            Some(shift) => bits >> shift,
            None => scaled_index(bits, self.elements_f64, self.elements),
        }
    }
}

/// sysbench's index from a random word in floating point: the top 52 bits scaled into
/// [0, 1), times `elements`, truncated. The `min` only guards the (unreachable for
/// n < 2^52) rounding up to n.
#[inline]
fn scaled_index(bits: u64, elements_f64: f64, elements: u64) -> u64 {
    // Both conversions go through i64 (one instruction each on x86-64, where u64 takes
    // several); lossless, as the mantissa and the product stay below 2^52.
    let unit = ((bits >> 12) as i64) as f64 * TWO_POW_MINUS_52;
    (((unit * elements_f64) as i64) as u64).min(elements - 1)
}

impl Workload for SysbenchMem {
    #[inline]
    fn next_op(&mut self) -> Option<Op> {
        if !self.prologue.done() {
            return Some(self.prologue.next());
        }
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let index = match self.config.mode {
            AccessMode::Seq => {
                let i = self.next_elem;
                // Wrap at the end of the block: the next event starts over.
                self.next_elem = if i + 1 == self.elements { 0 } else { i + 1 };
                i
            }
            AccessMode::Rnd => self.random_index(),
        };
        let va = Gva::new(BUFFER_BASE.raw() + index * SysbenchMemConfig::ELEMENT_BYTES);
        Some(Op::Access {
            va,
            write: self.write,
        })
    }

    fn measured_accesses_total(&self) -> u64 {
        self.config.total_accesses().unwrap_or(u64::MAX)
    }

    /// Counted in the x86-64 code gcc 12 -O2 emits for each loop (restated in C; sysbench
    /// builds with -O2), per iteration, leaving out the buffer access itself:
    /// - `rnd` write, 20: xoroshiro128+ step 8 (lea, 3 xor, 2 ror, shl, mov; its state
    ///   stays in registers), double from bits 4 (shr, or, movq, subsd), scale and
    ///   truncate 3 (mulsd, cvttsd2si, cltq), address 1 (lea), volatile `tmp` load 1,
    ///   loop 3 (add, cmp, jl);
    /// - `rnd` read, 19: the same minus the lea (the load indexes `buf` directly), with the
    ///   volatile `tmp` store in place of its load;
    /// - `seq`, 4: volatile `tmp` load (write) or store (read), pointer add, cmp, jb.
    fn instructions_per_access(&self) -> f64 {
        match (self.config.mode, self.config.oper) {
            (AccessMode::Rnd, MemOper::Write) => 20.0,
            (AccessMode::Rnd, MemOper::Read) => 19.0,
            (AccessMode::Seq, _) => 4.0,
        }
    }

    fn dependent_accesses(&self) -> bool {
        // Indices come from the RNG, not from loaded data: loads and stores overlap.
        false
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::measured_accesses;
    use super::*;
    use proptest::prelude::{any, prop_assert_eq, proptest};

    proptest! {
        /// The shift taken for power-of-two element counts is the floating-point index.
        #[test]
        fn power_of_two_shift_is_the_scaled_index(bits in any::<u64>(), k in 1u32..=52) {
            let elements = 1u64 << k;
            let block = elements * SysbenchMemConfig::ELEMENT_BYTES;
            let w = SysbenchMem::new(config(block, MemOper::Write, AccessMode::Rnd, 1), 1);
            prop_assert_eq!(w.power_of_two_shift, Some(64 - k));
            prop_assert_eq!(bits >> (64 - k), scaled_index(bits, elements as f64, elements));
        }
    }

    #[test]
    fn other_element_counts_keep_floating_point() {
        for elements in [1, 3, 4095, 3 << 20] {
            let block = elements * SysbenchMemConfig::ELEMENT_BYTES;
            let w = SysbenchMem::new(config(block, MemOper::Write, AccessMode::Rnd, 1), 1);
            assert_eq!(w.power_of_two_shift, None, "{elements}");
        }
    }

    fn config(block: u64, oper: MemOper, mode: AccessMode, events: u64) -> SysbenchMemConfig {
        SysbenchMemConfig {
            block,
            oper,
            mode,
            events,
        }
    }

    #[test]
    fn default_is_the_artifact_run() {
        let c = SysbenchMemConfig::default();
        assert_eq!(c.total_accesses(), Some(1 << 28 << 2));
        let w = SysbenchMem::new(c, 0);
        assert_eq!(w.measured_accesses_total(), 1_073_741_824);
        assert!(!w.dependent_accesses());
    }

    #[test]
    fn seq_visits_every_int_in_order_each_event() {
        for oper in [MemOper::Write, MemOper::Read] {
            let c = config(8192, oper, AccessMode::Seq, 3);
            let mut w = SysbenchMem::new(c, 7);
            let total = w.measured_accesses_total();
            let accesses = measured_accesses(&mut w, 8192);
            assert_eq!(accesses.len() as u64, total);
            assert_eq!(total, 3 * 2048);
            for (i, &(offset, write)) in accesses.iter().enumerate() {
                assert_eq!(offset, (i as u64 % 2048) * 4);
                assert_eq!(write, oper == MemOper::Write);
            }
        }
    }

    #[test]
    fn rnd_stays_in_the_block_aligned_to_ints() {
        let c = config(16384, MemOper::Read, AccessMode::Rnd, 2);
        let mut w = SysbenchMem::new(c, 3);
        let accesses = measured_accesses(&mut w, 16384);
        assert_eq!(accesses.len() as u64, 2 * 4096);
        assert!(accesses
            .iter()
            .all(|&(off, write)| off < 16384 && off % 4 == 0 && !write));
        // Random, so not in order, and spread over the block.
        assert!(accesses.windows(2).any(|p| p[1].0 < p[0].0));
        let distinct: std::collections::HashSet<_> = accesses.iter().map(|a| a.0).collect();
        // 2 draws per int leave about 1 - e^-2 = 86% (3542) of the 4096 ints touched.
        assert!(
            distinct.len() > 3400,
            "only {} distinct ints",
            distinct.len()
        );
    }

    #[test]
    fn rnd_is_a_function_of_the_seed() {
        let c = config(4096, MemOper::Write, AccessMode::Rnd, 1);
        let run = |seed| measured_accesses(&mut SysbenchMem::new(c, seed), 4096);
        assert_eq!(run(11), run(11));
        assert_ne!(run(11), run(12));
    }

    #[test]
    fn random_index_matches_sysbench_formula() {
        // Same generator state, index computed the way sb_rand_uniform_double does it.
        let c = config(12288, MemOper::Write, AccessMode::Rnd, 1);
        let mut w = SysbenchMem::new(c, 5);
        let mut reference = Xoshiro256PlusPlus::seed_from_u64(5);
        for _ in 0..1000 {
            let bits = (0x3ffu64 << 52) | (reference.next_u64() >> 12);
            let unit = f64::from_bits(bits) - 1.0;
            let expected = (unit * (12288 / 4) as f64) as u64;
            assert_eq!(w.random_index(), expected);
        }
    }

    #[test]
    fn instructions_per_access_by_mode() {
        let w =
            |oper, mode| SysbenchMem::new(config(4096, oper, mode, 1), 0).instructions_per_access();
        assert_eq!(w(MemOper::Write, AccessMode::Rnd), 20.0);
        assert_eq!(w(MemOper::Read, AccessMode::Rnd), 19.0);
        assert_eq!(w(MemOper::Write, AccessMode::Seq), 4.0);
    }
}
