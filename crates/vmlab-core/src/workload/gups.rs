//! `gups`: HPCC RandomAccess (Giga-Updates Per Second).
//!
//! HPCC fills a table of 64-bit words (`Table[i] = i`, here the write [`Op::TouchPages`]),
//! then performs 4 updates per word, each `Table[r & (size - 1)] ^= r` for a pseudo-random
//! `r`. Each update is a read-modify-write of one word, modeled as one write access (the
//! load and the store of an x86 `xor` to memory translate the same address once).
//!
//! HPCC draws `r` from its own LFSR (x^63 + ... polynomial, 128 interleaved streams) and
//! needs a power-of-two table; we draw the word index from the seeded Xoshiro256++ by
//! multiply-shift instead, uniform over the table like HPCC's, so any table size that is a
//! multiple of 4 KiB works. Updates are independent (HPCC even lets 128 be in flight).

use super::spec::{check_count, check_size, ParamInfo, Values, WorkloadError};
use super::{Op, UniformAccesses, Workload, WorkloadKind};
use crate::units::format_size;

/// The parameters of a `gups` run (validated by [`super::WorkloadSpec`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GupsConfig {
    /// Table size in bytes (a multiple of 4 KiB).
    pub table: u64,
    /// Number of XOR updates.
    pub updates: u64,
}

impl GupsConfig {
    /// Bytes per table word.
    pub const WORD_BYTES: u64 = 8;

    /// A table of `table` bytes with HPCC's default number of updates (4 per word).
    pub const fn with_table(table: u64) -> Self {
        GupsConfig {
            table,
            updates: Self::default_updates(table),
        }
    }

    /// HPCC's update count for a table: four times its number of words.
    pub const fn default_updates(table: u64) -> u64 {
        4 * (table / Self::WORD_BYTES)
    }

    /// Words in the table.
    pub const fn words(&self) -> u64 {
        self.table / Self::WORD_BYTES
    }
}

impl Default for GupsConfig {
    /// A 1 GiB table, HPCC's 4 updates per word.
    fn default() -> Self {
        GupsConfig::with_table(1 << 30)
    }
}

impl WorkloadKind for GupsConfig {
    type Generator = Gups;

    const NAME: &'static str = "gups";
    const SUMMARY: &'static str =
        "HPCC RandomAccess: random read-modify-write updates of 64-bit words in a table";
    const PARAMS: &'static [ParamInfo] = &[
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

    fn parse(values: &Values<'_>) -> Result<Self, WorkloadError> {
        let table = values.size("table")?;
        let updates = match values.given("updates") {
            Some(_) => values.count("updates")?,
            None => GupsConfig::default_updates(table),
        };
        Ok(GupsConfig { table, updates })
    }

    fn validate(&self) -> Result<(), WorkloadError> {
        check_size(Self::NAME, "table", self.table)?;
        check_count(Self::NAME, "updates", self.updates)
    }

    fn canonical_params(&self) -> String {
        format!("table={},updates={}", format_size(self.table), self.updates)
    }

    fn footprint_bytes(&self) -> u64 {
        self.table
    }

    fn measured_accesses_total(&self) -> u64 {
        self.updates
    }

    fn program(&self) -> &'static str {
        "gups"
    }

    fn build(&self, seed: u64) -> Result<Gups, WorkloadError> {
        Ok(Gups::new(*self, seed))
    }
}

/// The generator of a `gups` run.
#[derive(Clone, Debug)]
pub struct Gups {
    config: GupsConfig,
    stream: UniformAccesses,
}

impl Gups {
    /// A generator for `config` (which must have come through spec validation: table a
    /// non-zero multiple of 4 KiB).
    pub fn new(config: GupsConfig, seed: u64) -> Self {
        Gups {
            config,
            stream: UniformAccesses::new(
                config.table,
                GupsConfig::WORD_BYTES,
                config.updates,
                true,
                seed,
            ),
        }
    }

    /// The parameters this generator runs.
    pub fn config(&self) -> &GupsConfig {
        &self.config
    }
}

impl Workload for Gups {
    #[inline]
    fn next_op(&mut self) -> Option<Op> {
        self.stream.next_op()
    }

    fn measured_accesses_total(&self) -> u64 {
        self.config.updates
    }

    /// 12: counted in the x86-64 code gcc 12 -O2 emits for HPCC's serial update loop
    /// (restated in C), per update, leaving out the `xor` to memory: load the stream's
    /// state 1, shift (lea) 1, xor with the polynomial (mov, xor) 2, sign test and cmov 2,
    /// mask the index (mov, and) 2, store the state back 1, advance and compare the stream
    /// pointer 2, branch 1; the outer loop adds 3 per 128 updates, which rounds away.
    fn instructions_per_access(&self) -> f64 {
        12.0
    }

    fn dependent_accesses(&self) -> bool {
        // Indices come from the generator, never from table contents.
        false
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::measured_accesses;
    use super::*;

    #[test]
    fn default_is_hpcc_sized() {
        let c = GupsConfig::default();
        assert_eq!(c.words(), 1 << 27);
        assert_eq!(c.updates, 1 << 29);
    }

    #[test]
    fn updates_are_word_aligned_writes_inside_the_table() {
        let c = GupsConfig::with_table(8192);
        let mut w = Gups::new(c, 9);
        assert_eq!(w.measured_accesses_total(), 4 * 1024);
        let accesses = measured_accesses(&mut w, 8192);
        assert_eq!(accesses.len() as u64, w.measured_accesses_total());
        assert!(accesses
            .iter()
            .all(|&(off, write)| off < 8192 && off % 8 == 0 && write));
        let distinct: std::collections::HashSet<_> = accesses.iter().map(|a| a.0).collect();
        // 4 draws per word leave about 1 - e^-4 = 98% of the words touched.
        assert!(
            distinct.len() > 950,
            "only {} distinct words",
            distinct.len()
        );
        assert!(!w.dependent_accesses());
    }

    #[test]
    fn stream_is_a_function_of_the_seed() {
        let c = GupsConfig {
            table: 4096,
            updates: 500,
        };
        let run = |seed| measured_accesses(&mut Gups::new(c, seed), 4096);
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
    }
}
