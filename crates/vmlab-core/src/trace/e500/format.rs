//! The e500 trace format, version 1 (`docs/e500-trace.md`): a zstd stream holding a header
//! (magic, version, three text sections) and then records, each a tag byte, the user and
//! kernel instructions retired since the previous record, and the tag's fields; an end record
//! carries the totals and a CRC-32 of every byte before the CRC.

use smallvec::SmallVec;

/// The first eight bytes of the decompressed stream.
pub const MAGIC: &[u8; 8] = b"VMLE500T";
/// The only version this reader understands.
pub const VERSION: u32 = 1;
/// The first four bytes of a zstd frame.
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// Guest virtual address of the kernel's linear map (`PAGE_OFFSET`).
pub const KERNEL_BASE: u32 = 0xC000_0000;
/// Set in a marker id at the end of a phase.
pub const PHASE_END: u16 = 0x8000;

pub(crate) const TAG_PRIV: u8 = 0x01;
pub(crate) const TAG_USER_SC: u8 = 0x02;
pub(crate) const TAG_EXC: u8 = 0x03;
pub(crate) const TAG_MARK: u8 = 0x04;
pub(crate) const TAG_BOOT_END: u8 = 0x05;
pub(crate) const TAG_MEM: u8 = 0x10;
pub(crate) const TAG_MEM_STORE: u8 = 0x08;
pub(crate) const TAG_END: u8 = 0xFF;
/// The most values a privileged-instruction record carries (tlbwe: MAS0-3 and MAS7).
pub const MAX_PRIV_VALUES: usize = 5;

/// A benchmark of the guest's init, between two markers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Phase {
    /// The marker id (1..0x7fff).
    pub id: u16,
    /// Name, e.g. `null_syscall`.
    pub name: String,
    /// Operations the benchmark performs between its markers.
    pub ops: u64,
}

/// The trace's header: provenance, the kernel's symbols and the phase table.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Header {
    /// `key=value` lines: packages, hashes, the QEMU command.
    pub meta: String,
    /// The guest kernel's System.map.
    pub system_map: String,
    /// The phase table, `id<TAB>name<TAB>ops` lines.
    pub phases_text: String,
}

impl Header {
    /// The phases of the table (lines that do not parse are skipped).
    pub fn phases(&self) -> Vec<Phase> {
        self.phases_text
            .lines()
            .filter_map(|l| {
                let mut f = l.split('\t');
                let id = f.next()?.parse().ok()?;
                let name = f.next()?.to_string();
                let ops = f.next()?.parse().ok()?;
                Some(Phase { id, name, ops })
            })
            .collect()
    }

    /// The address of a System.map symbol.
    pub fn symbol(&self, name: &str) -> Option<u32> {
        self.system_map.lines().find_map(|l| {
            let mut f = l.split_whitespace();
            let addr = f.next()?;
            let _kind = f.next()?;
            (f.next()? == name).then(|| u32::from_str_radix(addr, 16).ok())?
        })
    }

    /// The kernel text range `[_stext, _etext)`, when System.map has both.
    pub fn kernel_text(&self) -> Option<(u32, u32)> {
        Some((self.symbol("_stext")?, self.symbol("_etext")?))
    }
}

/// An exception vector the guest entered, by IVOR number (`SPEUnavailable` and the other
/// e500 extensions use 32 and up).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExceptionKind(pub u8);

impl ExceptionKind {
    /// Data TLB miss (IVOR13).
    pub const DATA_TLB: Self = Self(13);
    /// Instruction TLB miss (IVOR14).
    pub const INSN_TLB: Self = Self(14);
    /// System call (IVOR8).
    pub const SYSCALL: Self = Self(8);
    /// Decrementer (IVOR10).
    pub const DECREMENTER: Self = Self(10);

    /// The vector's name in Linux's head_85xx.S.
    pub fn name(self) -> &'static str {
        match self.0 {
            0 => "critical_input",
            1 => "machine_check",
            2 => "data_storage",
            3 => "instruction_storage",
            4 => "external",
            5 => "alignment",
            6 => "program",
            7 => "fp_unavailable",
            8 => "system_call",
            9 => "ap_unavailable",
            10 => "decrementer",
            11 => "fixed_interval_timer",
            12 => "watchdog",
            13 => "data_tlb_miss",
            14 => "instruction_tlb_miss",
            15 => "debug",
            32 => "spe_unavailable",
            33 => "spe_fp_data",
            34 => "spe_fp_round",
            35 => "performance_monitor",
            _ => "unknown",
        }
    }
}

/// One recorded event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// A privileged instruction executed by the kernel, with the values it used: rfi/rfci
    /// the return address and MSR; mtmsr, mtspr and wrtee the source register; tlbsx and
    /// tlbivax the effective address; tlbwe MAS0, MAS1, MAS2, MAS3 and MAS7. None otherwise.
    /// Values read from GPRs are missing (and `gprs_unknown` set) when QEMU had not yet
    /// written the register back to the vCPU state (see docs/e500-trace.md).
    Priv {
        /// Guest virtual address of the instruction.
        pc: u32,
        /// The instruction's encoding.
        word: u32,
        /// The values listed above, in that order.
        values: SmallVec<[u32; MAX_PRIV_VALUES]>,
        /// The GPR-derived values could not be read.
        gprs_unknown: bool,
    },
    /// `sc` executed in user mode, with the system call number (r0; `u32::MAX` when QEMU
    /// had not yet written r0 back to the vCPU state).
    UserSyscall {
        /// Guest virtual address of the `sc`.
        pc: u32,
        /// r0.
        number: u32,
    },
    /// The first instruction of an exception vector ran.
    Exception {
        /// Which vector.
        kind: ExceptionKind,
        /// True when the kernel branched to the vector itself (head_85xx.S's TLB-miss
        /// handlers fall through to the storage-interrupt code on a page fault) rather than
        /// the hardware raising the exception.
        by_branch: bool,
        /// The vector's address.
        vector: u32,
        /// SRR0 (CSRR0 for critical vectors): where the exception was taken.
        srr0: u32,
        /// SRR1 (CSRR1): the MSR then.
        srr1: u32,
        /// DEAR: the faulting data address (meaningful for data exceptions).
        dear: u32,
        /// ESR.
        esr: u32,
    },
    /// A phase marker; `id & PHASE_END` marks the end of phase `id & !PHASE_END`.
    Marker {
        /// The marker id.
        id: u16,
    },
    /// The first user-mode instruction: the end of the boot.
    BootEnd {
        /// Its address.
        pc: u32,
    },
    /// `count` loads or stores by one kernel instruction to one 4 KiB page, with no other
    /// record between them (the recorder groups them; `vaddr` is the first one's address).
    Mem {
        /// The instruction's address.
        pc: u32,
        /// The accessed guest virtual address.
        vaddr: u32,
        /// The guest physical address QEMU translated it to (36 bits on e500v2).
        paddr: u64,
        /// Store (true) or load.
        store: bool,
        /// log2 of the access size in bytes.
        size_log2: u8,
        /// How many accesses the record stands for (at least 1).
        count: u32,
    },
}

/// A record and the instructions retired before it since the previous record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// User-mode instructions since the previous record.
    pub user_insns: u64,
    /// Kernel-mode instructions since the previous record.
    pub kernel_insns: u64,
    /// What happened.
    pub record: Record,
}

/// The totals of the end record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Totals {
    /// Records before the end record.
    pub records: u64,
    /// User-mode instructions in the whole run.
    pub user_insns: u64,
    /// Kernel-mode instructions in the whole run.
    pub kernel_insns: u64,
}
