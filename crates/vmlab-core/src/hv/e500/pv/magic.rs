//! The page the host shares with a paravirtual guest ("magic page"): where it is mapped and
//! where each register lives on it. Layout of Linux's `struct kvm_vcpu_arch_shared`
//! (`arch/powerpc/include/uapi/asm/kvm_para.h`), big-endian, as a 32-bit guest sees it: the
//! `u64` fields hold a 32-bit register in their second word, which is why Linux's 32-bit
//! `kvm_patch_ins_ld`/`_std` add 4 to the field's offset.

/// Guest effective address of the magic page: Linux's `KVM_MAGIC_PAGE` (-4096), the last
/// page of the address space, so that `lwz rT, d(0)` with a negative 16-bit displacement
/// reaches it from anywhere without a base register.
pub const MAGIC_PAGE: u32 = 0xFFFF_F000;

/// Byte offsets of the fields of `struct kvm_vcpu_arch_shared`.
pub mod field {
    /// Template scratch space (r31).
    pub const SCRATCH1: u16 = 0;
    /// Template scratch space (r30).
    pub const SCRATCH2: u16 = 8;
    /// Template scratch space (CR).
    pub const SCRATCH3: u16 = 16;
    /// `critical`: the guest may not take interrupts while it equals r1.
    pub const CRITICAL: u16 = 24;
    /// SPRG0; SPRG1..3 follow every 8 bytes.
    pub const SPRG0: u16 = 32;
    /// SPRG1.
    pub const SPRG1: u16 = 40;
    /// SPRG2.
    pub const SPRG2: u16 = 48;
    /// SPRG3.
    pub const SPRG3: u16 = 56;
    /// SRR0.
    pub const SRR0: u16 = 64;
    /// SRR1.
    pub const SRR1: u16 = 72;
    /// DAR; DEAR on Book E.
    pub const DAR: u16 = 80;
    /// The guest's MSR as the host keeps it.
    pub const MSR: u16 = 88;
    /// DSISR (a `u32`).
    pub const DSISR: u16 = 96;
    /// `int_pending`: the host has an interrupt waiting for `MSR[EE]`.
    pub const INT_PENDING: u16 = 100;
    /// MAS0 (a `u32`).
    pub const MAS0: u16 = 168;
    /// MAS1 (a `u32`).
    pub const MAS1: u16 = 172;
    /// MAS7 in the first word, MAS3 in the second (a `u64`).
    pub const MAS7_3: u16 = 176;
    /// MAS2 (a `u64`).
    pub const MAS2: u16 = 184;
    /// MAS4 (a `u32`).
    pub const MAS4: u16 = 192;
    /// MAS6 (a `u32`).
    pub const MAS6: u16 = 196;
    /// ESR (a `u32`).
    pub const ESR: u16 = 200;
    /// PIR (a `u32`).
    pub const PIR: u16 = 204;
    /// SPRG4; SPRG5..7 follow every 8 bytes.
    pub const SPRG4: u16 = 208;
    /// SPRG5.
    pub const SPRG5: u16 = 216;
    /// SPRG6.
    pub const SPRG6: u16 = 224;
    /// SPRG7.
    pub const SPRG7: u16 = 232;
    /// The structure's size: everything above fits in the first 240 bytes of the page.
    pub const END: u16 = 240;
}
