//! Writes the e500 trace format (uncompressed) exactly as the recorder plugin does, so
//! tests and tools can make traces without QEMU.

use super::format::*;
use std::io::{self, Write};

/// A trace writer: the header at creation, then [`Writer::write`] per event, then
/// [`Writer::finish`] for the end record.
pub struct Writer<W: Write> {
    out: W,
    crc: crc32fast::Hasher,
    last_pc: u32,
    last_vaddr: u32,
    totals: Totals,
}

impl<W: Write> Writer<W> {
    /// Writes the magic, the version and the header's sections.
    pub fn new(out: W, header: &Header) -> io::Result<Self> {
        let mut w = Writer {
            out,
            crc: crc32fast::Hasher::new(),
            last_pc: 0,
            last_vaddr: 0,
            totals: Totals::default(),
        };
        w.put(MAGIC)?;
        w.put(&VERSION.to_le_bytes())?;
        for text in [&header.meta, &header.system_map, &header.phases_text] {
            w.varint(text.len() as u64)?;
            w.put(text.as_bytes())?;
        }
        Ok(w)
    }

    fn put(&mut self, b: &[u8]) -> io::Result<()> {
        self.crc.update(b);
        self.out.write_all(b)
    }

    fn varint(&mut self, mut v: u64) -> io::Result<()> {
        let mut b = [0u8; 10];
        let mut n = 0;
        loop {
            b[n] = (v & 0x7F) as u8;
            v >>= 7;
            if v != 0 {
                b[n] |= 0x80;
            }
            n += 1;
            if v == 0 {
                break;
            }
        }
        self.put(&b[..n])
    }

    fn signed(&mut self, v: i64) -> io::Result<()> {
        self.varint(((v << 1) ^ (v >> 63)) as u64)
    }

    fn pc(&mut self, pc: u32) -> io::Result<()> {
        self.signed(i64::from(pc) - i64::from(self.last_pc))?;
        self.last_pc = pc;
        Ok(())
    }

    /// Appends one event.
    pub fn write(&mut self, e: &Event) -> io::Result<()> {
        let tag = match &e.record {
            Record::Priv { .. } => TAG_PRIV,
            Record::UserSyscall { .. } => TAG_USER_SC,
            Record::Exception { .. } => TAG_EXC,
            Record::Marker { .. } => TAG_MARK,
            Record::BootEnd { .. } => TAG_BOOT_END,
            Record::Mem {
                store, size_log2, ..
            } => TAG_MEM | if *store { TAG_MEM_STORE } else { 0 } | (size_log2 & 3),
        };
        self.put(&[tag])?;
        self.varint(e.user_insns)?;
        self.varint(e.kernel_insns)?;
        self.totals.records += 1;
        self.totals.user_insns += e.user_insns;
        self.totals.kernel_insns += e.kernel_insns;
        match &e.record {
            Record::Priv {
                pc,
                word,
                values,
                gprs_unknown,
            } => {
                self.pc(*pc)?;
                self.put(&word.to_le_bytes())?;
                self.put(&[values.len() as u8 | if *gprs_unknown { 0x80 } else { 0 }])?;
                for v in values {
                    self.varint(u64::from(*v))?;
                }
            }
            Record::UserSyscall { pc, number } => {
                self.pc(*pc)?;
                self.varint(u64::from(*number))?;
            }
            Record::Exception {
                kind,
                by_branch,
                vector,
                srr0,
                srr1,
                dear,
                esr,
            } => {
                self.put(&[kind.0 & 0x7F | if *by_branch { 0x80 } else { 0 }])?;
                self.pc(*vector)?;
                for v in [srr0, srr1, dear, esr] {
                    self.varint(u64::from(*v))?;
                }
            }
            Record::Marker { id } => self.varint(u64::from(*id))?,
            Record::BootEnd { pc } => self.pc(*pc)?,
            Record::Mem {
                pc,
                vaddr,
                paddr,
                count,
                ..
            } => {
                self.pc(*pc)?;
                self.signed(i64::from(*vaddr) - i64::from(self.last_vaddr))?;
                self.last_vaddr = *vaddr;
                self.signed(*paddr as i64 - i64::from(vaddr.wrapping_sub(KERNEL_BASE)))?;
                self.varint(u64::from(*count))?;
            }
        }
        Ok(())
    }

    /// Writes the end record (totals and CRC) and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        let t = self.totals;
        self.put(&[TAG_END])?;
        self.varint(t.records)?;
        self.varint(t.user_insns)?;
        self.varint(t.kernel_insns)?;
        let crc = self.crc.clone().finalize();
        self.out.write_all(&crc.to_le_bytes())?;
        Ok(self.out)
    }
}
