//! The encoding of events inside a chunk (`docs/x86-trace.md`, "Events"): a tag byte, then
//! LEB128 varints. A Ref's tag packs its size, direction, a small instruction count and which
//! of the thread's four address slots its zigzag address delta is taken from; the slots and the
//! code-page delta are per thread and reset at every chunk start.

use super::event::Event;
use super::format::MAX_PATH;
use rustc_hash::FxHashMap;

/// Address slots per thread. Four let a stack, a sequential stream and two pointer chases
/// each keep small deltas when the thread interleaves them.
pub(crate) const SLOTS: usize = 4;
/// Tags below this are Refs: `insn_class * 32 + slot * 8 + write * 4 + log2(size)`.
pub(crate) const REF_TAGS: u8 = 224;
/// The Ref instruction class that is followed by a varint of `insns - INLINE_INSNS`; classes
/// below it are the count itself.
pub(crate) const INLINE_INSNS: u32 = 6;
pub(crate) const TAG_CODE_PAGE: u8 = 0xE0;
pub(crate) const TAG_SWITCH: u8 = 0xE1;
pub(crate) const TAG_MAP: u8 = 0xE2;
pub(crate) const TAG_SYSCALL: u8 = 0xE3;
pub(crate) const TAG_SYSCALL_NO_RETURN: u8 = 0xE4;
pub(crate) const TAG_KERNEL_WRITE: u8 = 0xE5;
pub(crate) const TAG_FORK: u8 = 0xE6;
pub(crate) const TAG_EXEC: u8 = 0xE7;
pub(crate) const TAG_EXIT: u8 = 0xE8;

/// The delta bases of one thread.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Bases {
    pub slots: [u64; SLOTS],
    pub code_page: u64,
}

/// Per-thread state, the current thread's held outside the map so a Ref touches no hash.
#[derive(Debug, Default)]
pub(crate) struct Threads<T: Default> {
    pub current: T,
    key: Option<(u32, u32)>,
    others: FxHashMap<(u32, u32), T>,
}

impl<T: Default> Threads<T> {
    pub fn switch(&mut self, pid: u32, tid: u32) {
        if self.key == Some((pid, tid)) {
            return;
        }
        let state = self.others.remove(&(pid, tid)).unwrap_or_default();
        let old = std::mem::replace(&mut self.current, state);
        if let Some(key) = self.key {
            self.others.insert(key, old);
        }
        self.key = Some((pid, tid));
    }

    /// Forgets every thread's state (at a chunk start), keeping which thread is current.
    pub fn reset(&mut self) {
        self.others.clear();
        self.current = T::default();
    }
}

/// A thread's encoder state: the bases and, for choosing which slot to replace, when each
/// slot was last used.
#[derive(Debug, Default)]
pub(crate) struct EncodeThread {
    bases: Bases,
    used: [u64; SLOTS],
    clock: u64,
}

/// A delta beyond this is "far": the Ref then replaces the least recently used slot rather
/// than the nearest, so one far jump does not evict a slot still in use.
const FAR: u64 = 1 << 16;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_signed(out: &mut Vec<u8>, v: i64) {
    put_varint(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// Appends `e` to `out`, updating the current thread's bases. Fails on what the format
/// cannot hold.
pub(crate) fn encode(
    out: &mut Vec<u8>,
    e: &Event,
    threads: &mut Threads<EncodeThread>,
) -> Result<(), String> {
    match e {
        Event::Ref {
            addr,
            size,
            write,
            insns,
        } => {
            let size_log2 = match size {
                1 => 0,
                2 => 1,
                4 => 2,
                8 => 3,
                _ => return Err(format!("a Ref of {size} bytes (sizes are 1, 2, 4, 8)")),
            };
            let t = &mut threads.current;
            let (mut slot, mut dist) = (0, u64::MAX);
            for (i, base) in t.bases.slots.iter().enumerate() {
                let d = (addr.wrapping_sub(*base) as i64).unsigned_abs();
                if d < dist {
                    (slot, dist) = (i, d);
                }
            }
            if dist > FAR {
                slot = (0..SLOTS).min_by_key(|&i| t.used[i]).unwrap_or(0);
            }
            t.clock += 1;
            t.used[slot] = t.clock;
            let delta = addr.wrapping_sub(t.bases.slots[slot]) as i64;
            t.bases.slots[slot] = *addr;
            let class = (*insns).min(INLINE_INSNS);
            out.push((class as u8) << 5 | (slot as u8) << 3 | u8::from(*write) << 2 | size_log2);
            if class == INLINE_INSNS {
                put_varint(out, u64::from(insns - INLINE_INSNS));
            }
            put_signed(out, delta);
        }
        Event::CodePage { page } => {
            out.push(TAG_CODE_PAGE);
            let t = &mut threads.current.bases;
            put_signed(out, page.wrapping_sub(t.code_page) as i64);
            t.code_page = *page;
        }
        Event::Switch { pid, tid } => {
            out.push(TAG_SWITCH);
            put_varint(out, u64::from(*pid));
            put_varint(out, u64::from(*tid));
            threads.switch(*pid, *tid);
        }
        Event::Map { start, end, prot } => {
            out.push(TAG_MAP);
            put_varint(out, *start);
            put_varint(out, end.wrapping_sub(*start));
            out.push(*prot);
        }
        Event::Syscall { nr, args, ret } => {
            out.push(if ret.is_some() {
                TAG_SYSCALL
            } else {
                TAG_SYSCALL_NO_RETURN
            });
            put_varint(out, u64::from(*nr));
            for a in args {
                put_varint(out, *a);
            }
            if let Some(r) = ret {
                put_signed(out, *r);
            }
        }
        Event::KernelWrite { addr, len } => {
            out.push(TAG_KERNEL_WRITE);
            put_varint(out, *addr);
            put_varint(out, *len);
        }
        Event::Fork { child } => {
            out.push(TAG_FORK);
            put_varint(out, u64::from(*child));
        }
        Event::Exec { path } => {
            if path.len() > MAX_PATH {
                return Err(format!(
                    "an Exec path of {} bytes (at most {MAX_PATH})",
                    path.len()
                ));
            }
            out.push(TAG_EXEC);
            put_varint(out, path.len() as u64);
            out.extend_from_slice(path.as_bytes());
        }
        Event::Exit { code } => {
            out.push(TAG_EXIT);
            put_signed(out, i64::from(*code));
        }
    }
    Ok(())
}

/// Decodes events from one chunk's bytes. Errors are static strings so the hot path never
/// allocates; the reader adds where.
pub(crate) struct Decoder<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
}

const PAST_END: &str = "an event runs past the end of the chunk";

impl Decoder<'_> {
    #[inline]
    fn byte(&mut self) -> Result<u8, &'static str> {
        let b = *self.buf.get(self.pos).ok_or(PAST_END)?;
        self.pos += 1;
        Ok(b)
    }

    #[inline]
    fn varint(&mut self) -> Result<u64, &'static str> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                break;
            }
            v |= u64::from(b & 0x7F) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err("a varint longer than 64 bits")
    }

    #[inline]
    fn signed(&mut self) -> Result<i64, &'static str> {
        let z = self.varint()?;
        Ok((z >> 1) as i64 ^ -((z & 1) as i64))
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, &'static str> {
        u32::try_from(self.varint()?).map_err(|_| what)
    }

    /// The next event; the caller checks there is one left.
    #[inline]
    pub fn event(&mut self, threads: &mut Threads<Bases>) -> Result<Event, &'static str> {
        let tag = self.byte()?;
        if tag < REF_TAGS {
            let class = u32::from(tag >> 5);
            let insns = if class == INLINE_INSNS {
                u32::try_from(self.varint()? + u64::from(INLINE_INSNS))
                    .map_err(|_| "a Ref's instruction count exceeds 32 bits")?
            } else {
                class
            };
            let delta = self.signed()?;
            let slot = &mut threads.current.slots[usize::from(tag >> 3 & 3)];
            *slot = slot.wrapping_add(delta as u64);
            return Ok(Event::Ref {
                addr: *slot,
                size: 1 << (tag & 3),
                write: tag & 4 != 0,
                insns,
            });
        }
        Ok(match tag {
            TAG_CODE_PAGE => {
                let base = &mut threads.current.code_page;
                *base = base.wrapping_add(self.signed()? as u64);
                Event::CodePage { page: *base }
            }
            TAG_SWITCH => {
                let pid = self.u32("a Switch pid exceeds 32 bits")?;
                let tid = self.u32("a Switch tid exceeds 32 bits")?;
                threads.switch(pid, tid);
                Event::Switch { pid, tid }
            }
            TAG_MAP => {
                let start = self.varint()?;
                let end = start.wrapping_add(self.varint()?);
                Event::Map {
                    start,
                    end,
                    prot: self.byte()?,
                }
            }
            TAG_SYSCALL | TAG_SYSCALL_NO_RETURN => {
                let nr = self.u32("a system call number exceeds 32 bits")?;
                let mut args = [0; 6];
                for a in &mut args {
                    *a = self.varint()?;
                }
                let ret = if tag == TAG_SYSCALL {
                    Some(self.signed()?)
                } else {
                    None
                };
                Event::Syscall { nr, args, ret }
            }
            TAG_KERNEL_WRITE => Event::KernelWrite {
                addr: self.varint()?,
                len: self.varint()?,
            },
            TAG_FORK => Event::Fork {
                child: self.u32("a Fork child pid exceeds 32 bits")?,
            },
            TAG_EXEC => {
                let len = self.varint()?;
                if len > MAX_PATH as u64 {
                    return Err("an Exec path longer than the format allows");
                }
                let end = self.pos.checked_add(len as usize).ok_or(PAST_END)?;
                let bytes = self.buf.get(self.pos..end).ok_or(PAST_END)?;
                self.pos = end;
                let path = std::str::from_utf8(bytes).map_err(|_| "an Exec path is not UTF-8")?;
                Event::Exec {
                    path: path.to_string(),
                }
            }
            TAG_EXIT => Event::Exit {
                code: i32::try_from(self.signed()?).map_err(|_| "an Exit code exceeds 32 bits")?,
            },
            _ => return Err("an unknown event tag"),
        })
    }
}
