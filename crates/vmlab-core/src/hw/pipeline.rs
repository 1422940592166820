//! The decoupled memory pipeline: translation emits the ordered stream of memory references
//! (physical line, requester) and the cache levels serve it later, each level in a tight loop
//! of its own over the references the level above missed.
//!
//! Exactness: in this model translation never depends on where a reference is served (cache
//! levels only decide which level serves it and so what it costs), and each level's state
//! depends only on the sequence of lines it is asked for. L1D sees every reference in
//! order, L2 the L1D misses in order, the LLC the L2 misses in order, whether the levels run
//! reference by reference or level by level over a chunk. So serving a chunk level by level,
//! later or on another thread, gives the very same contents, replacement state and counts.
//!
//! Why it is faster: a level's loop has no dependence on the other levels, so the host
//! overlaps the misses in the simulator's own tag arrays (each loop prefetches its sets a few
//! references ahead), and a hit or a miss only changes an index, not the path taken.
//!
//! Modes ([`Stream`]): references are served at once (the default, and what single accesses
//! outside the engine's batch loop see), buffered and served a chunk at a time, or sent in
//! chunks over a bounded queue to a thread that owns the cache levels. A chunk is served in
//! the order it was emitted, and the queue keeps chunks in order, so thread timing cannot
//! change any result. [`crate::hw::memory::MemoryHierarchy::end_stream`] serves (or waits
//! for) every pending reference, so counters read after it are exact.
//!
//! Deferred work: besides references, the stream carries *records* of work translation
//! hands to the back end, each expanded there, in place and in order, into the references
//! it stands for before the levels run ([`Replay`]). What a record expands into may depend
//! on state the back end keeps (an EPT walk's paging-structure caches decide which entries
//! it reads, `crate::hw::x86::deferred`), provided no translation result depends on that
//! state. Served at once, a record is expanded at once.

use crate::hw::cache::{Cache, CacheConfig, MemLevel, MemoryStats, Replacement, Requester};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::time::{Duration, Instant};

/// Words a chunk can hold: what a chunk sent to the cache thread holds (128 KiB; a nested
/// access takes about 16 words, its EPT walks' records included). A send may have to wake
/// the cache thread if it has slept (see `POLL_BEFORE_SLEEP`); chunks of 2,048 and 4,096
/// references ran slower, with the cache thread polling or sleeping, and nested runs ran
/// faster at 16,384 than at 8,192 once records came in.
pub const CHUNK: usize = 16384;
const _: () = assert!(CHUNK.is_power_of_two());

/// References a staged chunk holds before it is served: a few times the references of a batch
/// of random accesses, and few enough (16 KiB) to stay in the host's L1D while the levels run
/// over it on the same thread.
pub const STAGED_CHUNK: usize = 2048;
const _: () = assert!(STAGED_CHUNK <= CHUNK);

/// Chunks that may wait in the queue to the cache thread before translation waits: deep
/// enough to ride out the cache thread's pauses (its CPU is shared with the host's other
/// work) now that it is busy most of the time under nested paging (4 chunks of 8,192 words
/// left some nested runs 10-25% slower).
const QUEUE_DEPTH: usize = 16;

/// How long the cache thread polls for the next chunk before it sleeps. It serves a chunk
/// faster than translation fills one, so it waits before nearly every chunk: a sleeping
/// receiver must be woken by the sender (a system call on the translating thread and,
/// under a hypervisor, an inter-processor interrupt), a polling one need not be. A chunk
/// takes about 0.1-0.3 ms to fill; past this the translating thread is busy elsewhere (an
/// OS operation, a fault), and the cache thread sleeps so as not to hold a CPU for nothing.
const POLL_BEFORE_SLEEP: Duration = Duration::from_millis(1);

/// How far ahead a level's loop prefetches its sets, in references.
const PREFETCH_AHEAD: usize = 12;

/// One reference as the stream holds it: the line number above the requester in the low
/// two bits.
#[inline(always)]
pub fn encode(line: u64, who: Requester) -> u64 {
    line << 2 | who as u64
}

/// Words of a record in the stream: its header, then its payload. Every word counts: the
/// stream is written on one core and read on the other.
pub const RECORD_WORDS: usize = 5;
/// The most references one record expands into: no more than its words, so records expand
/// in place (a record is copied out before what it stands for is written).
pub const RECORD_REFS: usize = RECORD_WORDS;
/// The low two bits of a record's first word in the stream (requesters take 0 to 2).
const RECORD_TAG: u64 = 3;
const _: () = assert!(Requester::ALL.len() as u64 <= RECORD_TAG);

/// Work translation defers to the stream's back end: a record of [`RECORD_WORDS`] words
/// (the first below 2^62) that the back end turns into the host addresses of the walk
/// references it stands for, in order, through state of its own. Whatever that state, the
/// translation results must be the same: only which references are made may depend on it.
pub trait Replay: Send + std::fmt::Debug + std::any::Any {
    /// The walk references `record` stands for, their host addresses in order in `out`;
    /// returns how many.
    fn replay(&mut self, record: &[u64; RECORD_WORDS], out: &mut [u64; RECORD_REFS]) -> usize;
}

/// Expand, in place, every record in `refs` into its references; returns the new length.
fn expand(replay: &mut dyn Replay, line_shift: u32, refs: &mut [u64]) -> usize {
    let (mut read, mut write) = (0, 0);
    let mut out = [0; RECORD_REFS];
    while read < refs.len() {
        let word = refs[read];
        if word & 3 != RECORD_TAG {
            refs[write] = word;
            write += 1;
            read += 1;
            continue;
        }
        let mut record: [u64; RECORD_WORDS] = refs[read..read + RECORD_WORDS]
            .try_into()
            .expect("a record is whole in its chunk");
        record[0] >>= 2;
        read += RECORD_WORDS;
        let n = replay.replay(&record, &mut out);
        // `n <= RECORD_WORDS`: what is written stays behind what is read.
        for &hpa in &out[..n] {
            refs[write] = encode(hpa >> line_shift, Requester::Walk);
            write += 1;
        }
    }
    write
}

#[inline(always)]
fn line_of(reference: u64) -> u64 {
    reference >> 2
}

#[inline(always)]
fn who_of(reference: u64) -> usize {
    (reference & 3) as usize
}

/// A chunk of references on their way to the cache levels: a fixed array, so that emitting
/// a reference is a store and an increment, with no growth check and no bounds check. It is
/// full at its `limit`: [`CHUNK`] when sent to the cache thread (the default), whose words
/// are then stored around this core's caches (`crate::host::nontemporal`; [`Sender::send`]
/// fences them), or [`STAGED_CHUNK`] when served on the translating thread, which reads it
/// back at once from its own caches.
#[derive(Debug)]
pub struct Chunk {
    refs: Box<[u64; CHUNK]>,
    len: usize,
    limit: usize,
    /// Whether the chunk goes to the cache thread: then [`Self::push`] and
    /// [`Self::commit_record`] store around this core's caches (why: `crate::host::nontemporal`).
    /// `limit` follows from it, kept as a field for the emitting paths' compare.
    sent: bool,
    /// Whether it holds a record ([`Replay`]), to expand before the levels run.
    records: bool,
}

impl Default for Chunk {
    fn default() -> Self {
        Self {
            refs: vec![0; CHUNK]
                .into_boxed_slice()
                .try_into()
                .expect("CHUNK elements"),
            len: 0,
            limit: CHUNK,
            sent: true,
            records: false,
        }
    }
}

impl Chunk {
    /// Append `reference`; returns true when the chunk is now full (serve or send it before
    /// the next push).
    #[inline(always)]
    pub fn push(&mut self, reference: u64) -> bool {
        // `len < limit <= CHUNK` here (a full chunk is emptied before the next push), so the
        // mask changes nothing; it shows the compiler the index is in range.
        let slot = &mut self.refs[self.len & (CHUNK - 1)];
        if self.sent {
            crate::host::nontemporal::store(slot, reference);
        } else {
            *slot = reference;
        }
        self.len += 1;
        self.len == self.limit
    }

    /// Whether a record fits before the chunk is full.
    #[inline(always)]
    pub fn fits_record(&self) -> bool {
        self.len + RECORD_WORDS <= self.limit
    }

    /// Whether the chunk goes to the cache thread: then a record is written aside and copied
    /// in by [`Self::commit_record`] (with the stores of [`Self::push`]), else written in
    /// its place ([`Self::record_slot`]).
    #[inline(always)]
    pub fn is_sent(&self) -> bool {
        self.sent
    }

    /// Where the next record goes in a chunk served on this thread: it must fit
    /// ([`Self::fits_record`]). Written there, it is emitted by [`Self::commit_record`].
    #[inline(always)]
    pub fn record_slot(&mut self) -> &mut [u64; RECORD_WORDS] {
        debug_assert!(self.fits_record() && !self.sent);
        let at = self.len.min(CHUNK - RECORD_WORDS);
        (&mut self.refs[at..at + RECORD_WORDS])
            .try_into()
            .expect("RECORD_WORDS words")
    }

    /// Emit a record ([`Replay`]; its first word below 2^62), which must fit: the one
    /// written into [`Self::record_slot`], or for a chunk sent to the cache thread,
    /// `aside`. Returns true when the chunk is now full.
    #[inline(always)]
    pub fn commit_record(&mut self, aside: &[u64; RECORD_WORDS]) -> bool {
        debug_assert!(self.fits_record());
        let at = self.len.min(CHUNK - RECORD_WORDS);
        let slots: &mut [u64; RECORD_WORDS] = (&mut self.refs[at..at + RECORD_WORDS])
            .try_into()
            .expect("RECORD_WORDS words");
        if self.sent {
            debug_assert!(aside[0] >> 62 == 0);
            let tagged =
                std::iter::once(aside[0] << 2 | RECORD_TAG).chain(aside[1..].iter().copied());
            for (slot, word) in slots.iter_mut().zip(tagged) {
                crate::host::nontemporal::store(slot, word);
            }
        } else {
            debug_assert!(slots[0] >> 62 == 0);
            slots[0] = slots[0] << 2 | RECORD_TAG;
        }
        self.len += RECORD_WORDS;
        self.records = true;
        self.len == self.limit
    }

    /// Make the (empty) chunk one served on this thread, full at [`STAGED_CHUNK`]
    /// references, or (`sent`) one sent to the cache thread, full at [`CHUNK`].
    pub fn set_destination(&mut self, sent: bool) {
        debug_assert!(self.is_empty());
        self.sent = sent;
        self.limit = if sent { CHUNK } else { STAGED_CHUNK };
    }

    /// The references held, in order (mutable: serving uses them as scratch).
    pub fn refs_mut(&mut self) -> &mut [u64] {
        &mut self.refs[..self.len]
    }

    /// Whether the chunk holds no references.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forget the references held (they have been served).
    pub fn clear(&mut self) {
        self.len = 0;
        self.records = false;
    }
}

/// Where memory references go.
#[derive(Debug, Default)]
pub enum Stream {
    /// Served at once, one reference at a time through every level.
    #[default]
    Immediate,
    /// Buffered, and served level by level whenever a chunk fills.
    Staged,
    /// Buffered, and sent a chunk at a time to the cache thread.
    Threaded(Sender),
}

/// The translation side of the queue to the cache thread.
#[derive(Debug)]
pub struct Sender {
    full: SyncSender<Chunk>,
    empty: Receiver<Chunk>,
}

impl Sender {
    /// Send what `chunk` holds, leaving it empty: a chunk the cache thread has served if
    /// there is one, else a new one.
    #[cold]
    pub fn send(&mut self, chunk: &mut Chunk) {
        if chunk.is_empty() {
            return;
        }
        // The chunk's words were stored around this core's caches: make them visible
        // before the channel's release hands the chunk over.
        crate::host::nontemporal::fence();
        let next = self.empty.try_recv().unwrap_or_default();
        let full = std::mem::replace(chunk, next);
        // The cache thread only ends once this sender is dropped, so it is there to receive.
        self.full
            .send(full)
            .expect("the cache thread outlives the stream");
    }
}

/// The cache thread's side of the queue.
pub struct Worker {
    full: Receiver<Chunk>,
    empty: SyncSender<Chunk>,
}

impl Worker {
    /// Serve every chunk in arrival order until translation hangs up; returns the levels.
    pub fn run(self, mut levels: Levels) -> Levels {
        while let Some(mut chunk) = self.next_chunk() {
            serve(&mut levels, &mut chunk);
            // Translation may be gone already, or have chunks enough: then drop this one.
            let _ = self.empty.try_send(chunk);
        }
        levels
    }

    /// The next chunk, or `None` once translation has hung up: polled for up to
    /// [`POLL_BEFORE_SLEEP`], then waited for asleep.
    fn next_chunk(&self) -> Option<Chunk> {
        let mut since: Option<Instant> = None;
        loop {
            match self.full.try_recv() {
                Ok(chunk) => return Some(chunk),
                Err(TryRecvError::Disconnected) => return None,
                Err(TryRecvError::Empty) => {}
            }
            // Read the clock only now and then: a poll is a few loads.
            for _ in 0..64 {
                std::hint::spin_loop();
            }
            let start = *since.get_or_insert_with(Instant::now);
            if start.elapsed() > POLL_BEFORE_SLEEP {
                return self.full.recv().ok();
            }
        }
    }
}

/// A bounded queue between translation and a cache thread.
pub fn queue() -> (Sender, Worker) {
    let (full, full_rx) = sync_channel(QUEUE_DEPTH);
    let (empty_tx, empty) = sync_channel(QUEUE_DEPTH + 2);
    (
        Sender { full, empty },
        Worker {
            full: full_rx,
            empty: empty_tx,
        },
    )
}

/// Serve the chunk's references, in order, through `levels`, and empty it: first expand
/// the records among them ([`Replay`]), then L1D over all of them, L2 over the L1D misses,
/// the LLC over the L2 misses, DRAM for the rest.
pub fn serve(levels: &mut Levels, chunk: &mut Chunk) {
    let records = chunk.records;
    let refs = chunk.refs_mut();
    let mut len = refs.len();
    if records {
        let (replay, line_shift) = levels.replay_mut();
        let replay = replay.expect("records are emitted only to levels with a replay");
        len = expand(replay, line_shift, refs);
    }
    let (l1, l2, llc, stats) = levels.parts();
    len = pass(l1, MemLevel::L1, &mut refs[..len], stats);
    len = pass(l2, MemLevel::L2, &mut refs[..len], stats);
    len = pass(llc, MemLevel::Llc, &mut refs[..len], stats);
    for &reference in &refs[..len] {
        stats.served[who_of(reference)][MemLevel::Dram as usize] += 1;
    }
    chunk.clear();
}

/// One level over `refs`, in order: counts its hits as served by `level` and keeps its
/// misses, in order, at the front of `refs` (never ahead of what it reads), as the next
/// level's input; returns how many missed.
fn pass(cache: &mut Cache, level: MemLevel, refs: &mut [u64], stats: &mut MemoryStats) -> usize {
    if !cache.is_enabled() {
        return refs.len();
    }
    // The lookup's form is fixed for the level: chosen once here, not per reference.
    #[cfg(target_arch = "x86_64")]
    if crate::host::simd::avx2::available() {
        match cache.access_kind() {
            // SAFETY: the host has AVX2 (checked just above).
            (8, true) => return unsafe { pass_avx2::<8, true>(cache, level, refs, stats) },
            // SAFETY: as above.
            (_, true) => return unsafe { pass_avx2::<16, true>(cache, level, refs, stats) },
            // SAFETY: as above.
            (8, false) => return unsafe { pass_avx2::<8, false>(cache, level, refs, stats) },
            // SAFETY: as above.
            (_, false) => return unsafe { pass_avx2::<16, false>(cache, level, refs, stats) },
        }
    }
    match cache.access_kind() {
        (8, true) => pass_as::<8, true>(cache, level, refs, stats),
        (8, false) => pass_as::<8, false>(cache, level, refs, stats),
        (_, true) => pass_as::<16, true>(cache, level, refs, stats),
        (_, false) => pass_as::<16, false>(cache, level, refs, stats),
    }
}

/// [`pass`] with AVX2 set operations, the level's lookup form fixed as in [`pass_as`]:
/// [`Cache::access_lru_avx2`] for an LRU level, [`Cache::access_rrip_avx2`] for an SRRIP or
/// DRRIP one.
///
/// # Safety
/// The host must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn pass_avx2<const N: usize, const LRU: bool>(
    cache: &mut Cache,
    level: MemLevel,
    refs: &mut [u64],
    stats: &mut MemoryStats,
) -> usize {
    // SAFETY: the host has AVX2 (this function's contract).
    pass_with(cache, level, refs, stats, |cache, line| unsafe {
        if LRU {
            cache.access_lru_avx2::<N>(line)
        } else {
            cache.access_rrip_avx2::<N>(line)
        }
    })
}

/// [`pass`] with the level's lookup form fixed ([`Cache::access_as`]).
#[inline(always)]
fn pass_as<const N: usize, const LRU: bool>(
    cache: &mut Cache,
    level: MemLevel,
    refs: &mut [u64],
    stats: &mut MemoryStats,
) -> usize {
    pass_with(cache, level, refs, stats, |cache, line| {
        cache.access_as::<N, LRU>(line)
    })
}

/// [`pass`]'s loop, looking lines up with `access`.
#[inline(always)]
fn pass_with(
    cache: &mut Cache,
    level: MemLevel,
    refs: &mut [u64],
    stats: &mut MemoryStats,
    mut access: impl FnMut(&mut Cache, u64) -> bool,
) -> usize {
    // Hits by requester, indexed by the reference's two low bits (so no bounds check),
    // added to the level's counts at the end.
    let mut hits = [0u64; 4];
    let mut missed = 0;
    for i in 0..refs.len() {
        if let Some(&ahead) = refs.get(i + PREFETCH_AHEAD) {
            cache.prefetch(line_of(ahead));
        }
        let reference = refs[i];
        let hit = access(cache, line_of(reference));
        hits[(reference & 3) as usize] += u64::from(hit);
        debug_assert!(missed <= i);
        // SAFETY: `missed <= i < refs.len()`: at most one miss per reference read.
        unsafe { *refs.get_unchecked_mut(missed) = reference };
        missed += usize::from(!hit);
    }
    for (who, served) in stats.served.iter_mut().enumerate() {
        served[level as usize] += hits[who];
    }
    missed
}

/// The cache levels and their counts: what the cache thread owns while the memory pipeline
/// runs threaded (see the module documentation).
#[derive(Debug)]
pub struct Levels {
    pub(crate) l1: Cache,
    pub(crate) l2: Cache,
    pub(crate) llc: Cache,
    pub(crate) stats: MemoryStats,
    /// What expands the stream's records into references ([`Replay`]).
    pub(crate) replay: Option<Box<dyn Replay>>,
    /// log2 of the line size: a reference's line is its address shifted by this.
    pub(crate) line_shift: u32,
}

impl Levels {
    /// Every level disabled: what the hierarchy keeps while its levels are away.
    pub(crate) fn placeholder(line_shift: u32) -> Self {
        let off = CacheConfig {
            size: 0,
            ways: 1,
            replacement: Replacement::Lru,
        };
        Levels {
            l1: Cache::new(&off, line_shift),
            l2: Cache::new(&off, line_shift),
            llc: Cache::new(&off, line_shift),
            stats: MemoryStats::default(),
            replay: None,
            line_shift,
        }
    }

    /// The levels in order and the counts, for the pipeline's level-by-level loops.
    pub(crate) fn parts(&mut self) -> (&mut Cache, &mut Cache, &mut Cache, &mut MemoryStats) {
        (&mut self.l1, &mut self.l2, &mut self.llc, &mut self.stats)
    }

    /// What expands records, if anything does, and the line shift of their references.
    pub(crate) fn replay_mut(&mut self) -> (Option<&mut dyn Replay>, u32) {
        (self.replay.as_deref_mut(), self.line_shift)
    }

    #[inline]
    pub(crate) fn access(&mut self, line: u64, who: Requester) -> MemLevel {
        // Each `access` inserts on a miss, so probing in order fills exactly the levels above
        // the one that serves; a disabled level costs one predictable branch.
        let level = if self.l1.access(line) {
            MemLevel::L1
        } else if self.l2.access(line) {
            MemLevel::L2
        } else if self.llc.access(line) {
            MemLevel::Llc
        } else {
            MemLevel::Dram
        };
        self.stats.served[who as usize][level as usize] += 1;
        level
    }
}

/// How the memory references of the engine's batches are served: a setting of the memory
/// hierarchy ([`crate::hw::memory::MemoryHierarchy::set_pipeline`]), read by the engine when
/// it opens a window. Host speed only: every mode gives the same results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pipeline {
    /// Threaded where the host has two or more CPUs, else staged.
    #[default]
    Auto,
    /// One access at a time through every level, as single accesses are.
    Immediate,
    /// Level by level, a chunk at a time, on the translating thread.
    Staged,
    /// Level by level on a second thread, fed over a bounded queue.
    Threaded,
}

impl Pipeline {
    /// The pipeline of `threads` host threads (1 staged, 2 threaded).
    pub fn with_threads(threads: usize) -> Option<Pipeline> {
        match threads {
            1 => Some(Pipeline::Staged),
            2 => Some(Pipeline::Threaded),
            _ => None,
        }
    }

    /// Host threads this pipeline runs on here: 0 with no pipeline (references served at
    /// once), 1 staged, 2 threaded (`Auto` resolved for this host).
    pub fn threads(self) -> usize {
        match self.resolve() {
            Pipeline::Immediate => 0,
            Pipeline::Auto | Pipeline::Staged => 1,
            Pipeline::Threaded => 2,
        }
    }

    /// `Auto` made concrete for this host.
    pub(crate) fn resolve(self) -> Pipeline {
        match self {
            Pipeline::Auto => {
                let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
                if cpus >= 2 {
                    Pipeline::Threaded
                } else {
                    Pipeline::Staged
                }
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::addr::Hpa;
    use crate::hw::cache::{CacheConfig, MemoryConfig, Replacement, Requester};
    use crate::hw::memory::MemoryHierarchy;
    use proptest::prelude::*;

    /// Small levels (4 and 16 ways, L2 disabled in some cases) so that random lines hit,
    /// miss and evict at every level.
    fn hierarchy(policy: Replacement, l2_size: u64) -> MemoryHierarchy {
        let level = |size, ways| CacheConfig {
            size,
            ways,
            replacement: policy,
        };
        MemoryHierarchy::new(&MemoryConfig {
            line_size: 64,
            l1d: level(4 * 4 * 64, 4),
            l2: level(l2_size, 4),
            llc: level(128 * 16 * 64, 16),
        })
    }

    /// A replay whose expansions depend on its own state: each record expands into one to
    /// five references derived from its payload and from how many records came before, so
    /// a record replayed out of order, twice or not at all changes the counts.
    #[derive(Debug, Default)]
    struct Counting {
        records: u64,
    }

    impl super::Replay for Counting {
        fn replay(
            &mut self,
            record: &[u64; super::RECORD_WORDS],
            out: &mut [u64; super::RECORD_REFS],
        ) -> usize {
            let n = 1 + (record[0] + self.records) as usize % super::RECORD_REFS;
            for (i, hpa) in out[..n].iter_mut().enumerate() {
                *hpa = (record[1] + i as u64 * 577 + self.records * 31) % 4096 * 64;
            }
            self.records += 1;
            n
        }
    }

    /// A record with `payload` in its words.
    fn record(payload: u64) -> [u64; super::RECORD_WORDS] {
        let mut record = [payload; super::RECORD_WORDS];
        record[0] = payload % 7;
        record
    }

    /// Emit `refs` into `memory`: requester 3 stands for a record.
    fn emit(memory: &mut MemoryHierarchy, refs: &[(u64, usize)]) {
        for &(line, who) in refs {
            match Requester::ALL.get(who) {
                Some(&who) => memory.reference(Hpa::new(line * 64), who),
                None => memory.defer(&record(line)),
            }
        }
    }

    fn policy() -> impl Strategy<Value = Replacement> {
        prop_oneof![
            Just(Replacement::Lru),
            Just(Replacement::Srrip),
            Just(Replacement::Drrip)
        ]
    }

    /// A cache thread that polled in vain and went to sleep is woken by the next chunk, and
    /// serves every chunk in order: pauses longer than `POLL_BEFORE_SLEEP` between chunks
    /// leave the counts and contents of serving each reference at once.
    #[test]
    fn a_sleeping_cache_thread_serves_every_chunk_in_order() {
        let refs: Vec<(Hpa, Requester)> = (0..5 * super::CHUNK as u64 / 2)
            .map(|i| {
                (
                    Hpa::new((i * 7919 % 4096) * 64),
                    Requester::ALL[i as usize % 3],
                )
            })
            .collect();
        let mut immediate = hierarchy(Replacement::Drrip, 16 * 4 * 64);
        for &(hpa, who) in &refs {
            immediate.access(hpa, who);
        }
        let mut threaded = hierarchy(Replacement::Drrip, 16 * 4 * 64);
        let (levels, worker) = threaded.detach();
        let cache = std::thread::spawn(move || worker.run(levels));
        for (i, &(hpa, who)) in refs.iter().enumerate() {
            threaded.reference(hpa, who);
            if i % super::CHUNK == super::CHUNK - 1 {
                std::thread::sleep(3 * super::POLL_BEFORE_SLEEP);
            }
        }
        threaded.hang_up();
        threaded.attach(cache.join().unwrap());
        assert_eq!(threaded.stats(), immediate.stats());
        for line in 0..4096 {
            let hpa = Hpa::new(line * 64);
            assert_eq!(
                threaded.access(hpa, Requester::Data),
                immediate.access(hpa, Requester::Data)
            );
        }
    }

    proptest! {
        /// Staged and threaded serving give the counts of serving each reference at once,
        /// over streams longer than a chunk with records among the references (expanded in
        /// place, records straddling no chunk), and leave the same lines behind.
        #[test]
        fn every_stream_serves_as_immediate_access_does(
            refs in proptest::collection::vec((0u64..4096, 0usize..4), 0..3 * super::CHUNK),
            policy in policy(),
            l2_size in prop_oneof![Just(0u64), Just(16 * 4 * 64)],
        ) {
            let with_replay = |policy, l2_size| {
                let mut memory = hierarchy(policy, l2_size);
                memory.set_replay(Box::new(Counting::default()));
                memory
            };
            let mut immediate = with_replay(policy, l2_size);
            emit(&mut immediate, &refs);
            let mut staged = with_replay(policy, l2_size);
            staged.stage();
            emit(&mut staged, &refs);
            staged.end_stream();
            let mut threaded = with_replay(policy, l2_size);
            let (levels, worker) = threaded.detach();
            let cache = std::thread::spawn(move || worker.run(levels));
            emit(&mut threaded, &refs);
            threaded.hang_up();
            threaded.attach(cache.join().unwrap());
            prop_assert_eq!(staged.stats(), immediate.stats());
            prop_assert_eq!(threaded.stats(), immediate.stats());
            let records = |m: &MemoryHierarchy| m.replay::<Counting>().map(|r| r.records);
            let emitted = refs.iter().filter(|&&(_, who)| who == 3).count() as u64;
            prop_assert_eq!(records(&immediate), Some(emitted));
            prop_assert_eq!(records(&staged), Some(emitted));
            prop_assert_eq!(records(&threaded), Some(emitted));
            // The same contents and replacement state: the same outcomes from here on.
            for line in 0..4096 {
                let hpa = Hpa::new(line * 64);
                let want = immediate.access(hpa, Requester::Data);
                prop_assert_eq!(staged.access(hpa, Requester::Data), want);
                prop_assert_eq!(threaded.access(hpa, Requester::Data), want);
            }
        }
    }
}
