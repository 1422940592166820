//! The e500v2 instructions the recorder treats as privileged, by class, and the names of
//! the SPRs they touch (Power ISA 2.06 Book III-E; e500 core reference manual).

/// A privileged instruction's class: the exit reasons people count on this platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PrivClass {
    /// mfmsr
    Mfmsr,
    /// mtmsr
    Mtmsr,
    /// wrtee
    Wrtee,
    /// wrteei
    Wrteei,
    /// rfi
    Rfi,
    /// rfci, rfmci, rfdi
    RfOther,
    /// mfspr of a privileged SPR
    Mfspr,
    /// mtspr of a privileged SPR
    Mtspr,
    /// tlbwe
    Tlbwe,
    /// tlbre
    Tlbre,
    /// tlbsx
    Tlbsx,
    /// tlbivax
    Tlbivax,
    /// tlbsync
    Tlbsync,
    /// dcbi, mfpmr, mtpmr
    Other,
}

impl PrivClass {
    /// Every class, in report order.
    pub const ALL: [PrivClass; 14] = [
        PrivClass::Mfmsr,
        PrivClass::Mtmsr,
        PrivClass::Wrtee,
        PrivClass::Wrteei,
        PrivClass::Rfi,
        PrivClass::RfOther,
        PrivClass::Mfspr,
        PrivClass::Mtspr,
        PrivClass::Tlbwe,
        PrivClass::Tlbre,
        PrivClass::Tlbsx,
        PrivClass::Tlbivax,
        PrivClass::Tlbsync,
        PrivClass::Other,
    ];

    /// Lower-case name, as in reports.
    pub fn name(self) -> &'static str {
        match self {
            PrivClass::Mfmsr => "mfmsr",
            PrivClass::Mtmsr => "mtmsr",
            PrivClass::Wrtee => "wrtee",
            PrivClass::Wrteei => "wrteei",
            PrivClass::Rfi => "rfi",
            PrivClass::RfOther => "rfci/rfmci/rfdi",
            PrivClass::Mfspr => "mfspr",
            PrivClass::Mtspr => "mtspr",
            PrivClass::Tlbwe => "tlbwe",
            PrivClass::Tlbre => "tlbre",
            PrivClass::Tlbsx => "tlbsx",
            PrivClass::Tlbivax => "tlbivax",
            PrivClass::Tlbsync => "tlbsync",
            PrivClass::Other => "other",
        }
    }
}

/// The SPR number of an mfspr/mtspr encoding (its two 5-bit halves are swapped).
pub fn spr_number(word: u32) -> u16 {
    (((word >> 16) & 31) | (((word >> 11) & 31) << 5)) as u16
}

/// The class of a privileged instruction, or `None` when the encoding is not one (the
/// recorder's rule: SPR numbers with bit 0x10 set are privileged in Book E).
pub fn classify(word: u32) -> Option<PrivClass> {
    let op = word >> 26;
    let xo = (word >> 1) & 0x3FF;
    match (op, xo) {
        (19, 50) => Some(PrivClass::Rfi),
        (19, 51 | 38 | 39) => Some(PrivClass::RfOther),
        (31, 83) => Some(PrivClass::Mfmsr),
        (31, 146) => Some(PrivClass::Mtmsr),
        (31, 131) => Some(PrivClass::Wrtee),
        (31, 163) => Some(PrivClass::Wrteei),
        (31, 978) => Some(PrivClass::Tlbwe),
        (31, 946) => Some(PrivClass::Tlbre),
        (31, 914) => Some(PrivClass::Tlbsx),
        (31, 786) => Some(PrivClass::Tlbivax),
        (31, 566) => Some(PrivClass::Tlbsync),
        (31, 470 | 334 | 462) => Some(PrivClass::Other),
        (31, 339) if spr_number(word) & 0x10 != 0 => Some(PrivClass::Mfspr),
        (31, 467) if spr_number(word) & 0x10 != 0 => Some(PrivClass::Mtspr),
        _ => None,
    }
}

/// The name of an e500 SPR, or `None` for one this table does not know.
pub fn spr_name(n: u16) -> Option<&'static str> {
    Some(match n {
        22 => "DEC",
        26 => "SRR0",
        27 => "SRR1",
        48 => "PID",
        54 => "DECAR",
        58 => "CSRR0",
        59 => "CSRR1",
        61 => "DEAR",
        62 => "ESR",
        63 => "IVPR",
        272 => "SPRG0",
        273 => "SPRG1",
        274 => "SPRG2",
        275 => "SPRG3",
        276 => "SPRG4",
        277 => "SPRG5",
        278 => "SPRG6",
        279 => "SPRG7",
        284 => "TBL",
        285 => "TBU",
        286 => "PIR",
        287 => "PVR",
        304 => "DBSR",
        308 => "DBCR0",
        309 => "DBCR1",
        310 => "DBCR2",
        336 => "TSR",
        340 => "TCR",
        400..=415 => return Some(IVOR_NAMES[(n - 400) as usize]),
        528 => "IVOR32",
        529 => "IVOR33",
        530 => "IVOR34",
        531 => "IVOR35",
        570 => "MCSRR0",
        571 => "MCSRR1",
        572 => "MCSR",
        573 => "MCAR",
        624 => "MAS0",
        625 => "MAS1",
        626 => "MAS2",
        627 => "MAS3",
        628 => "MAS4",
        630 => "MAS6",
        633 => "PID1",
        634 => "PID2",
        688 => "TLB0CFG",
        689 => "TLB1CFG",
        944 => "MAS7",
        1008 => "HID0",
        1009 => "HID1",
        1010 => "L1CSR0",
        1011 => "L1CSR1",
        1012 => "MMUCSR0",
        1013 => "BUCSR",
        1015 => "MMUCFG",
        1023 => "SVR",
        _ => return None,
    })
}

const IVOR_NAMES: [&str; 16] = [
    "IVOR0", "IVOR1", "IVOR2", "IVOR3", "IVOR4", "IVOR5", "IVOR6", "IVOR7", "IVOR8", "IVOR9",
    "IVOR10", "IVOR11", "IVOR12", "IVOR13", "IVOR14", "IVOR15",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_known_encodings() {
        assert_eq!(classify(0x7C0000A6), Some(PrivClass::Mfmsr)); // mfmsr r0
        assert_eq!(classify(0x7C000124), Some(PrivClass::Mtmsr)); // mtmsr r0
        assert_eq!(classify(0x7C008146), Some(PrivClass::Wrteei)); // wrteei 1
        assert_eq!(classify(0x4C000064), Some(PrivClass::Rfi));
        assert_eq!(classify(0x7C0007A4), Some(PrivClass::Tlbwe));
        assert_eq!(classify(0x7C000624), Some(PrivClass::Tlbivax)); // tlbivax 0,r0
                                                                    // mtspr SRR0,r3 (SPR 26) is privileged; mtlr r0 (SPR 8) is not.
        assert_eq!(classify(0x7C7A03A6), Some(PrivClass::Mtspr));
        assert_eq!(spr_number(0x7C7A03A6), 26);
        assert_eq!(classify(0x7C0803A6), None);
        // mfspr r3,SPRG3 (275) privileged; mfspr r3,USPRG0... 256 is not.
        assert_eq!(classify(0x7C7342A6), Some(PrivClass::Mfspr));
        assert_eq!(classify(0x7C6042A6), None);
        assert_eq!(classify(0x44000002), None); // sc is recorded separately
        assert_eq!(classify(0x60000000), None); // nop
    }
}
