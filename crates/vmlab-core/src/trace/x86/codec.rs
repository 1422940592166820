//! The encoding of events inside a chunk (`docs/x86-trace.md`, "Events"): a tag byte, then
//! LEB128 varints. A Ref's tag packs its size, direction, a small instruction count and which
//! of the thread's four address slots its zigzag address delta is taken from; the slots and the
//! code-page delta are per thread and reset at every chunk start.

use super::event::Event;
use super::format::MAX_PATH;
use super::totals::Counter;
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
pub(crate) const TAG_WINDOW_OPEN: u8 = 0xE9;
pub(crate) const TAG_WINDOW_CLOSE: u8 = 0xEA;
pub(crate) const TAG_WARM: u8 = 0xEB;

/// The delta bases of one thread.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Bases {
    pub slots: [u64; SLOTS],
    pub code_page: u64,
    /// The previous Warm line's address.
    pub warm: u64,
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

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline(always)]
fn unzigzag(z: u64) -> i64 {
    (z >> 1) as i64 ^ -((z & 1) as i64)
}

fn put_signed(out: &mut Vec<u8>, v: i64) {
    put_varint(out, zigzag(v));
}

/// Writes a Ref's address delta for a size of `1 << size_log2` bytes as a varint `v`: bit 0
/// clear, the rest is the delta in units of the size (a stack frame's slots, an array's
/// elements stay within a byte); bit 0 set, the delta in bytes; `v == 1` alone, a full zigzag
/// varint follows (a delta 63 bits cannot hold, beyond 2^62 units or bytes).
fn put_ref_delta(out: &mut Vec<u8>, delta: i64, size_log2: u8) {
    let units = zigzag(delta >> size_log2);
    let bytes = zigzag(delta);
    if delta & ((1 << size_log2) - 1) == 0 && units < 1 << 63 {
        put_varint(out, units << 1);
    } else if bytes < 1 << 63 {
        put_varint(out, bytes << 1 | 1);
    } else {
        put_varint(out, 1);
        put_varint(out, bytes);
    }
}

/// A chunk's events being encoded: their tags, and their fields in the same order. Kept
/// apart so each compresses with its own statistics (zstd's literal coding is per block).
#[derive(Debug, Default)]
pub(crate) struct Encoded {
    pub tags: Vec<u8>,
    pub data: Vec<u8>,
}

impl Encoded {
    pub fn len(&self) -> usize {
        self.tags.len() + self.data.len()
    }

    pub fn clear(&mut self) {
        self.tags.clear();
        self.data.clear();
    }
}

/// Appends `e` to `enc`, updating the current thread's bases. Fails on what the format
/// cannot hold.
pub(crate) fn encode(
    enc: &mut Encoded,
    e: &Event,
    threads: &mut Threads<EncodeThread>,
) -> Result<(), String> {
    let (tags, out) = (&mut enc.tags, &mut enc.data);
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
            tags.push((class as u8) << 5 | (slot as u8) << 3 | u8::from(*write) << 2 | size_log2);
            if class == INLINE_INSNS {
                put_varint(out, u64::from(insns - INLINE_INSNS));
            }
            put_ref_delta(out, delta, size_log2);
        }
        Event::CodePage { page } => {
            tags.push(TAG_CODE_PAGE);
            let t = &mut threads.current.bases;
            put_signed(out, page.wrapping_sub(t.code_page) as i64);
            t.code_page = *page;
        }
        Event::Switch { pid, tid } => {
            tags.push(TAG_SWITCH);
            put_varint(out, u64::from(*pid));
            put_varint(out, u64::from(*tid));
            threads.switch(*pid, *tid);
        }
        Event::Map { start, end, prot } => {
            tags.push(TAG_MAP);
            put_varint(out, *start);
            put_varint(out, end.wrapping_sub(*start));
            out.push(*prot);
        }
        Event::Syscall { nr, args, ret } => {
            tags.push(if ret.is_some() {
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
            tags.push(TAG_KERNEL_WRITE);
            put_varint(out, *addr);
            put_varint(out, *len);
        }
        Event::Fork { child } => {
            tags.push(TAG_FORK);
            put_varint(out, u64::from(*child));
        }
        Event::Exec { path } => {
            if path.len() > MAX_PATH {
                return Err(format!(
                    "an Exec path of {} bytes (at most {MAX_PATH})",
                    path.len()
                ));
            }
            tags.push(TAG_EXEC);
            put_varint(out, path.len() as u64);
            out.extend_from_slice(path.as_bytes());
        }
        Event::Exit { code } => {
            tags.push(TAG_EXIT);
            put_signed(out, i64::from(*code));
        }
        Event::Window {
            open,
            skipped,
            insns,
        } => {
            tags.push(if *open {
                TAG_WINDOW_OPEN
            } else {
                TAG_WINDOW_CLOSE
            });
            put_varint(out, *skipped);
            put_varint(out, *insns);
        }
        Event::Warm { addr } => {
            tags.push(TAG_WARM);
            let t = &mut threads.current.bases;
            put_signed(out, addr.wrapping_sub(t.warm) as i64);
            t.warm = *addr;
        }
    }
    Ok(())
}

/// Decodes events from one chunk's tags and fields. Errors are static strings so the hot
/// path never allocates; the reader adds where.
pub(crate) struct Decoder<'a> {
    pub tags: &'a [u8],
    pub tag_pos: usize,
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

    /// A varint; up to 8 bytes are read as one word and unpacked without a branch per byte,
    /// since how long the next varint is cannot be predicted.
    #[inline(always)]
    fn varint(&mut self) -> Result<u64, &'static str> {
        if let Some(word) = self.buf.get(self.pos..self.pos + 8) {
            let w = u64::from_le_bytes([
                word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7],
            ]);
            let ends = !w & 0x8080_8080_8080_8080;
            if ends != 0 {
                let len = (ends.trailing_zeros() + 1) / 8;
                self.pos += len as usize;
                let x = (w & (u64::MAX >> (64 - 8 * len))) & 0x7F7F_7F7F_7F7F_7F7F;
                let x = (x & 0x007F_007F_007F_007F) | (x & 0x7F00_7F00_7F00_7F00) >> 1;
                let x = (x & 0x0000_3FFF_0000_3FFF) | (x & 0x3FFF_0000_3FFF_0000) >> 2;
                return Ok((x & 0x0FFF_FFFF) | (x & 0x0FFF_FFFF_0000_0000) >> 4);
            }
        }
        self.varint_bytewise()
    }

    /// A varint byte by byte: near a chunk's end, or longer than 8 bytes.
    fn varint_bytewise(&mut self) -> Result<u64, &'static str> {
        let mut v = 0;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos).ok_or(PAST_END)?;
            self.pos += 1;
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

    #[inline(always)]
    fn signed(&mut self) -> Result<i64, &'static str> {
        Ok(unzigzag(self.varint()?))
    }

    /// The inverse of `put_ref_delta`, without a branch on the form in the common cases
    /// (which one a Ref takes is data, so a branch would be mispredicted).
    #[inline(always)]
    fn ref_delta(&mut self, size_log2: u8) -> Result<i64, &'static str> {
        let v = self.varint()?;
        if v == 1 {
            return self.signed();
        }
        // All ones when bit 0 is clear (in units), zero when set (in bytes).
        let scaled = (v & 1).wrapping_sub(1) as u32;
        Ok(unzigzag(v >> 1).wrapping_shl(u32::from(size_log2) & scaled))
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, &'static str> {
        u32::try_from(self.varint()?).map_err(|_| what)
    }

    #[inline(always)]
    fn tag(&mut self) -> Result<u8, &'static str> {
        let t = *self.tags.get(self.tag_pos).ok_or(PAST_END)?;
        self.tag_pos += 1;
        Ok(t)
    }

    /// The next event, counted into `counter` (a Ref in place: a second dispatch on the
    /// event's kind would cost a fifth of the decoding). The caller checks there is one left.
    #[inline]
    pub fn event(
        &mut self,
        threads: &mut Threads<Bases>,
        counter: &mut Counter,
    ) -> Result<Event, &'static str> {
        let tag = self.tag()?;
        if tag < REF_TAGS {
            let class = u32::from(tag >> 5);
            let insns = if class == INLINE_INSNS {
                u32::try_from(self.varint()? + u64::from(INLINE_INSNS))
                    .map_err(|_| "a Ref's instruction count exceeds 32 bits")?
            } else {
                class
            };
            let delta = self.ref_delta(tag & 3)?;
            let slot = &mut threads.current.slots[usize::from(tag >> 3 & 3)];
            *slot = slot.wrapping_add(delta as u64);
            let write = tag & 4 != 0;
            counter.count_ref(write, insns);
            return Ok(Event::Ref {
                addr: *slot,
                size: 1 << (tag & 3),
                write,
                insns,
            });
        }
        let event = match tag {
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
            TAG_WINDOW_OPEN | TAG_WINDOW_CLOSE => Event::Window {
                open: tag == TAG_WINDOW_OPEN,
                skipped: self.varint()?,
                insns: self.varint()?,
            },
            TAG_WARM => {
                let base = &mut threads.current.warm;
                *base = base.wrapping_add(self.signed()? as u64);
                Event::Warm { addr: *base }
            }
            _ => return Err("an unknown event tag"),
        };
        counter.count(&event);
        Ok(event)
    }
}
