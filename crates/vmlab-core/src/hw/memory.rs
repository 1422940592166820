//! The memory hierarchy's front end: where the MMU and the walker send references. It serves
//! each at once through the cache levels ([`crate::hw::cache`]), or, while the engine keeps a
//! stream open, batches them for the memory pipeline ([`crate::hw::pipeline`]), which serves
//! them level by level or on a second thread with the same results.

use crate::addr::Hpa;
use crate::hw::cache::{Cache, MemLevel, MemoryConfig, MemoryStats, Requester};
use crate::hw::pipeline::{self, Levels, Pipeline, Stream};

/// L1D, L2 and LLC in front of DRAM, shared by data accesses and page-walk references.
#[derive(Debug)]
pub struct MemoryHierarchy {
    line_shift: u32,
    levels: Levels,
    /// Where [`Self::reference`] sends references.
    stream: Stream,
    /// References emitted while a stream is open and not yet served or sent.
    pending: pipeline::Chunk,
    /// Where a record is written when no stream is open ([`Self::record_slot`]).
    scratch_record: [u64; pipeline::RECORD_WORDS],
    /// How the engine is to stream references here (its windows read it).
    mode: Pipeline,
}

impl MemoryHierarchy {
    /// Builds empty caches. Assumes `cfg` passed [`MemoryConfig::validate`].
    pub fn new(cfg: &MemoryConfig) -> Self {
        debug_assert!(cfg.validate().is_ok(), "{cfg:?}");
        let line_shift = cfg.line_size.trailing_zeros();
        Self {
            line_shift,
            levels: Levels {
                l1: Cache::new(&cfg.l1d, line_shift),
                l2: Cache::new(&cfg.l2, line_shift),
                llc: Cache::new(&cfg.llc, line_shift),
                stats: MemoryStats::default(),
                replay: None,
                line_shift,
            },
            stream: Stream::Immediate,
            pending: pipeline::Chunk::default(),
            scratch_record: [0; pipeline::RECORD_WORDS],
            mode: Pipeline::default(),
        }
    }

    /// How the engine is to stream references to this hierarchy (host speed only).
    pub fn pipeline(&self) -> Pipeline {
        self.mode
    }

    /// Choose how the engine streams references here (host speed only).
    pub fn set_pipeline(&mut self, mode: Pipeline) {
        self.mode = mode;
    }

    /// Looks the line of `hpa` up in L1D, then L2, then LLC; the first level that has it
    /// serves the access, and the line is filled into every level above it (a miss everywhere
    /// is served by DRAM and fills all). Disabled levels are skipped. Counts the access in
    /// the stats by requester and serving level. Only outside a stream (it would jump the
    /// references still pending).
    #[inline]
    pub fn access(&mut self, hpa: Hpa, who: Requester) -> MemLevel {
        debug_assert!(matches!(self.stream, Stream::Immediate));
        self.levels.access(hpa.raw() >> self.line_shift, who)
    }

    /// A reference whose serving level nobody waits for: served at once, or queued in order
    /// while a stream is open ([`Self::stage`], [`Self::detach`]).
    #[inline(always)]
    pub fn reference(&mut self, hpa: Hpa, who: Requester) {
        let line = hpa.raw() >> self.line_shift;
        if matches!(self.stream, Stream::Immediate) {
            self.serve_now(line, who);
        } else if self.pending.push(pipeline::encode(line, who)) {
            self.chunk_full();
        }
    }

    /// Work deferred to the back end of the stream: a record that [`Self::set_replay`]'s
    /// replay expands into walk references, at once or in its place in the stream.
    #[inline(always)]
    pub fn defer(&mut self, record: &[u64; pipeline::RECORD_WORDS]) {
        *self.record_slot() = *record;
        self.commit_record();
    }

    /// Where to write the next record ([`Self::defer`] in two steps, so that a staged
    /// record is written where it goes, not copied there): in its place in a staged
    /// stream's chunk; aside when no stream is open (replayed from there) or when the chunk
    /// goes to a cache thread (copied from there around this core's caches, see
    /// [`pipeline::Chunk`]). [`Self::commit_record`] emits what is written.
    #[inline(always)]
    pub fn record_slot(&mut self) -> &mut [u64; pipeline::RECORD_WORDS] {
        if matches!(self.stream, Stream::Immediate) {
            return &mut self.scratch_record;
        }
        if !self.pending.fits_record() {
            self.chunk_full();
        }
        if self.pending.is_sent() {
            return &mut self.scratch_record;
        }
        self.pending.record_slot()
    }

    /// Emit the record written into [`Self::record_slot`] (its first word below 2^62).
    #[inline(always)]
    pub fn commit_record(&mut self) {
        if matches!(self.stream, Stream::Immediate) {
            self.replay_now();
        } else if self.pending.commit_record(&self.scratch_record) {
            self.chunk_full();
        }
    }

    /// [`Self::commit_record`] with no stream open.
    #[inline(never)]
    fn replay_now(&mut self) {
        let mut out = [0; pipeline::RECORD_REFS];
        let replay = self
            .levels
            .replay
            .as_mut()
            .expect("a record needs a replay");
        let n = replay.replay(&self.scratch_record, &mut out);
        for &hpa in &out[..n] {
            self.levels.access(hpa >> self.line_shift, Requester::Walk);
        }
    }

    /// Install what expands deferred records ([`Self::defer`]); it stays with the levels.
    pub fn set_replay(&mut self, replay: Box<dyn pipeline::Replay>) {
        self.levels.replay = Some(replay);
    }

    /// The replay installed by [`Self::set_replay`], if it is a `T`. `None` while the
    /// levels are with a cache thread; read it with no stream open.
    pub fn replay<T: pipeline::Replay>(&self) -> Option<&T> {
        let replay: &dyn std::any::Any = self.levels.replay.as_deref()?;
        replay.downcast_ref()
    }

    /// [`Self::reference`] with no stream open: out of line, so that the emitting paths stay
    /// small.
    #[inline(never)]
    fn serve_now(&mut self, line: u64, who: Requester) {
        self.levels.access(line, who);
    }

    /// The pending chunk is full: serve it level by level, or send it to the cache thread.
    #[cold]
    #[inline(never)]
    fn chunk_full(&mut self) {
        match &mut self.stream {
            Stream::Immediate => unreachable!("references are pending only in a stream"),
            Stream::Staged => {
                pipeline::serve(&mut self.levels, &mut self.pending);
            }
            Stream::Threaded(sender) => sender.send(&mut self.pending),
        }
    }

    /// Open a stream served on this thread, a chunk at a time, level by level.
    pub fn stage(&mut self) {
        self.end_stream();
        self.pending.set_destination(false);
        self.stream = Stream::Staged;
    }

    /// Open a stream served by a cache thread: the levels leave with the returned worker
    /// (run it on its own thread) and come back with [`Self::attach`]; until then the
    /// hierarchy has no levels and its stats read zero.
    pub fn detach(&mut self) -> (Levels, pipeline::Worker) {
        self.end_stream();
        self.pending.set_destination(true);
        let (sender, worker) = pipeline::queue();
        self.stream = Stream::Threaded(sender);
        let levels = std::mem::replace(&mut self.levels, Levels::placeholder(self.line_shift));
        (levels, worker)
    }

    /// Send what is pending to the cache thread and hang up, so the worker returns the
    /// levels once it has served everything; then give them to [`Self::attach`].
    pub fn hang_up(&mut self) {
        if let Stream::Threaded(sender) = &mut self.stream {
            sender.send(&mut self.pending);
            self.stream = Stream::Immediate;
        }
    }

    /// The levels back from the cache thread, every reference served.
    pub fn attach(&mut self, levels: Levels) {
        self.hang_up();
        self.levels = levels;
    }

    /// Serve whatever a staged stream holds and serve later references at once again.
    pub fn end_stream(&mut self) {
        match std::mem::take(&mut self.stream) {
            Stream::Immediate => {}
            Stream::Staged => {
                pipeline::serve(&mut self.levels, &mut self.pending);
            }
            Stream::Threaded(_) => {
                unreachable!("a threaded stream ends with hang_up and attach")
            }
        }
    }

    /// Prefetch (in the host) the sets an access to `hpa` will look at beyond L1; no
    /// simulated effect.
    #[inline]
    pub fn prefetch(&self, hpa: Hpa) {
        // A stream's levels prefetch their own sets just before they serve.
        if self.is_streaming() {
            return;
        }
        let line = hpa.raw() >> self.line_shift;
        self.levels.l2.prefetch(line);
        self.levels.llc.prefetch(line);
    }

    /// Whether a stream is open: references are served later, by levels that prefetch their
    /// own sets, so [`Self::prefetch`] does nothing.
    #[inline]
    pub fn is_streaming(&self) -> bool {
        !matches!(self.stream, Stream::Immediate)
    }

    /// Highest host address every enabled level can tag (packed tags are 28 bits wide).
    pub fn max_addr(&self) -> u64 {
        let levels = &self.levels;
        let lines = [&levels.l1, &levels.l2, &levels.llc]
            .iter()
            .filter(|c| c.is_enabled())
            .map(|c| c.max_line())
            .min();
        lines.map_or(u64::MAX, |l| l.saturating_mul(1 << self.line_shift))
    }

    /// The LLC's DRRIP policy selector ([`Cache::policy_selector`]). Exact only with no
    /// stream open.
    pub fn llc_policy_selector(&self) -> Option<u16> {
        debug_assert!(
            matches!(self.stream, Stream::Immediate),
            "selector read with references pending"
        );
        self.levels.llc.policy_selector()
    }

    /// Counts since construction. Exact only with no stream open.
    pub fn stats(&self) -> &MemoryStats {
        debug_assert!(
            matches!(self.stream, Stream::Immediate),
            "stats read with references pending"
        );
        &self.levels.stats
    }

    /// Empties every level; the stats are kept.
    pub fn flush(&mut self) {
        self.end_stream();
        self.levels.l1.flush();
        self.levels.l2.flush();
        self.levels.llc.flush();
    }
}
