//! Merging a recording's raw files into one trace: every block of every process image in the
//! order of its time stamp, with processes and threads numbered in order of appearance, forks
//! placed where the parent made them, execs where the new image starts, and each image's
//! initial memory map from QEMU's `-d page` log.

use super::raw::{initial_layout, BlockDecoder, ImageKind, RawImage, RawRecord};
use super::RecordError;
use crate::trace::x86::{Event, Writer};
use rustc_hash::FxHashMap;
use std::path::Path;

use crate::trace::x86::syscalls::{EXIT as NR_EXIT, EXIT_GROUP as NR_EXIT_GROUP};
/// User addresses end here; QEMU's layout also lists the vsyscall page above it.
const USER_END: u64 = 1 << 47;
/// Progress is reported every this many references.
const PROGRESS_REFS: u64 = 1 << 20;

/// What the merge found besides the events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MergeSummary {
    /// Process images (raw files) merged.
    pub images: usize,
    /// Blocks merged.
    pub blocks: usize,
    /// Bytes of blocks cut short by a process that died while writing (left out).
    pub torn_bytes: u64,
    /// Processes that ended without an exit the recording saw (killed, or still running when
    /// the recording stopped).
    pub unfinished: usize,
}

/// Per-image merge state.
#[derive(Default)]
struct ImageState {
    /// The recording's pid, once the image is live.
    pid: Option<u32>,
    /// Blocks that arrived before the image went live, in order.
    waiting: Vec<usize>,
    /// Host tid -> recording tid.
    tids: FxHashMap<u32, u32>,
    /// System calls entered and not yet returned, by host tid.
    pending: FxHashMap<u32, (u32, [u64; 6])>,
    /// A fork child's first return is its half of the parent's call.
    inherited: Option<(u32, [u64; 6])>,
    /// The process exited (exit_group seen).
    exited: bool,
}

struct Merger<'w> {
    images: Vec<RawImage>,
    state: Vec<ImageState>,
    /// (parent image, fork ordinal) -> child image.
    forks: FxHashMap<(usize, u64), usize>,
    /// Exec'd image -> the image it replaced.
    predecessor: FxHashMap<usize, usize>,
    writer: &'w mut Writer,
    current: Option<(u32, u32)>,
    next_pid: u32,
    next_tid: u32,
    refs: u64,
    buf: Vec<u8>,
}

/// Merges every `*.raw` file in `dir` into `writer`. `root_end` is the exit code of the
/// recorded program as its parent saw it (for a program killed before it could exit).
/// `progress` hears the references merged so far.
pub fn merge(
    dir: &Path,
    writer: &mut Writer,
    root_end: Option<i32>,
    progress: &mut dyn FnMut(u64),
) -> Result<MergeSummary, RecordError> {
    let mut images = Vec::new();
    let entries =
        std::fs::read_dir(dir).map_err(|e| RecordError::Raw(format!("{}: {e}", dir.display())))?;
    for entry in entries {
        let path = entry
            .map_err(|e| RecordError::Raw(format!("{}: {e}", dir.display())))?
            .path();
        if path.extension().is_some_and(|x| x == "raw") {
            images.push(RawImage::open(&path)?);
        }
    }
    images.sort_by_key(|i| (i.stamp, i.host_pid));
    if !images.iter().any(|i| i.kind == ImageKind::Root) {
        return Err(RecordError::Empty(String::new()));
    }
    let mut merger = Merger::new(images, writer);
    merger.run(progress)?;
    merger.finish(root_end)
}

impl<'w> Merger<'w> {
    fn new(images: Vec<RawImage>, writer: &'w mut Writer) -> Self {
        // The image host process `pid` was running just before `stamp`: a fork child's
        // parent image, an exec'd image's predecessor.
        let running_before = |pid: u32, stamp: u64| {
            images
                .iter()
                .enumerate()
                .filter(|(_, i)| i.host_pid == pid && i.stamp < stamp)
                .max_by_key(|(_, i)| i.stamp)
                .map(|(n, _)| n)
        };
        let mut forks = FxHashMap::default();
        let mut predecessor = FxHashMap::default();
        for (n, image) in images.iter().enumerate() {
            match image.kind {
                ImageKind::Fork { parent, ordinal } => {
                    if let Some(p) = running_before(parent, image.stamp) {
                        forks.insert((p, u64::from(ordinal)), n);
                    }
                }
                ImageKind::Exec => {
                    if let Some(p) = running_before(image.host_pid, image.stamp) {
                        predecessor.insert(n, p);
                    }
                }
                ImageKind::Root => {}
            }
        }
        let state = images.iter().map(|_| ImageState::default()).collect();
        Merger {
            images,
            state,
            forks,
            predecessor,
            writer,
            current: None,
            next_pid: 0,
            next_tid: 0,
            refs: 0,
            buf: Vec::new(),
        }
    }

    fn emit(&mut self, event: &Event) -> Result<(), RecordError> {
        self.writer.push(event).map_err(RecordError::Trace)
    }

    /// Makes `(image, host tid)` the current thread, numbering it on first sight.
    fn switch(&mut self, image: usize, host_tid: u32) -> Result<(), RecordError> {
        let pid = self.state[image].pid.expect("a live image");
        let next_tid = &mut self.next_tid;
        let tid = *self.state[image].tids.entry(host_tid).or_insert_with(|| {
            *next_tid += 1;
            *next_tid - 1
        });
        if self.current != Some((pid, tid)) {
            self.current = Some((pid, tid));
            self.emit(&Event::Switch { pid, tid })?;
        }
        Ok(())
    }

    /// The image's initial map, from its `-d page` log.
    fn initial_map(&mut self, image: usize) -> Result<(), RecordError> {
        let path = self.images[image].maps.clone();
        let log = std::fs::read(&path)
            .map_err(|e| RecordError::Raw(format!("{path}: {e} (QEMU's -d page log)")))?;
        let first_mmap = self.images[image].first_mmap()?;
        let regions =
            initial_layout(&String::from_utf8_lossy(&log), first_mmap).ok_or_else(|| {
                RecordError::Raw(format!("{path}: no page layout after the binary load"))
            })?;
        for r in regions.into_iter().filter(|r| r.end <= USER_END) {
            self.emit(&Event::Map {
                start: r.start,
                end: r.end,
                prot: r.prot,
            })?;
        }
        Ok(())
    }

    fn run(&mut self, progress: &mut dyn FnMut(u64)) -> Result<(), RecordError> {
        let mut order: Vec<(u64, usize, usize)> = self
            .images
            .iter()
            .enumerate()
            .flat_map(|(n, image)| {
                image
                    .blocks
                    .iter()
                    .enumerate()
                    .map(move |(b, block)| (block.stamp, n, b))
            })
            .collect();
        order.sort_unstable();
        let mut reported = 0;
        for (_, image, block) in order {
            if self.state[image].pid.is_none() && !self.go_live(image)? {
                self.state[image].waiting.push(block);
                continue;
            }
            self.block(image, block)?;
            if self.refs - reported >= PROGRESS_REFS {
                reported = self.refs;
                progress(self.refs);
            }
        }
        progress(self.refs);
        Ok(())
    }

    /// Brings an image to life if it can start now: the root, or an exec'd image whose
    /// predecessor is live. Fork children go live at their parent's fork point.
    fn go_live(&mut self, image: usize) -> Result<bool, RecordError> {
        match self.images[image].kind {
            ImageKind::Root => {
                self.state[image].pid = Some(self.new_pid());
                let tid = self.first_tid(image);
                self.switch(image, tid)?;
                self.initial_map(image)?;
            }
            ImageKind::Exec => {
                let Some(&before) = self.predecessor.get(&image) else {
                    return Ok(false);
                };
                let Some(pid) = self.state[before].pid else {
                    return Ok(false);
                };
                // The old image's execve did not return: it succeeded.
                self.unreturned(before)?;
                self.state[before].exited = true;
                self.state[image].pid = Some(pid);
                // The thread that exec'd goes on (same host tid) in the new image.
                self.state[image].tids = self.state[before].tids.clone();
                let tid = self.first_tid(image);
                self.switch(image, tid)?;
                let path = self.images[image].program.clone();
                self.emit(&Event::Exec { path })?;
                self.initial_map(image)?;
            }
            ImageKind::Fork { .. } => return Ok(false),
        }
        self.drain_waiting(image)?;
        Ok(true)
    }

    fn first_tid(&self, image: usize) -> u32 {
        self.images[image].blocks.first().map_or(0, |b| b.tid)
    }

    fn new_pid(&mut self) -> u32 {
        self.next_pid += 1;
        self.next_pid - 1
    }

    fn drain_waiting(&mut self, image: usize) -> Result<(), RecordError> {
        for block in std::mem::take(&mut self.state[image].waiting) {
            self.block(image, block)?;
        }
        Ok(())
    }

    fn block(&mut self, image: usize, block: usize) -> Result<(), RecordError> {
        if self.state[image].exited {
            // Another thread's last buffer, written out after its process exited or exec'd.
            return Ok(());
        }
        let mut buf = std::mem::take(&mut self.buf);
        self.images[image].read_block(block, &mut buf)?;
        let host_tid = self.images[image].blocks[block].tid;
        self.switch(image, host_tid)?;
        let mut decoder = BlockDecoder::new(&buf);
        loop {
            let record = decoder.next_record().map_err(|what| {
                RecordError::Raw(format!(
                    "{}: block {block}: {what}",
                    self.images[image].path.display()
                ))
            })?;
            let Some(record) = record else { break };
            self.record(image, host_tid, record)?;
        }
        self.buf = buf;
        Ok(())
    }

    fn record(
        &mut self,
        image: usize,
        host_tid: u32,
        record: RawRecord,
    ) -> Result<(), RecordError> {
        match record {
            RawRecord::Ref {
                addr,
                size,
                write,
                insns,
            } => {
                self.refs += 1;
                self.emit(&Event::Ref {
                    addr,
                    size,
                    write,
                    insns: u32::try_from(insns).unwrap_or(u32::MAX),
                })
            }
            RawRecord::CodePage(page) => self.emit(&Event::CodePage { page }),
            RawRecord::Window {
                open,
                skipped,
                insns,
            } => self.emit(&Event::Window {
                open,
                skipped,
                insns,
            }),
            RawRecord::Warm { lines, count } => {
                for line in &lines[..usize::from(count)] {
                    self.emit(&Event::Warm {
                        addr: line.wrapping_mul(64),
                    })?;
                }
                Ok(())
            }
            RawRecord::Syscall { nr, args } => {
                let nr = u32::try_from(nr).unwrap_or(u32::MAX);
                self.state[image].pending.insert(host_tid, (nr, args));
                Ok(())
            }
            RawRecord::Sysret { nr, ret } => {
                let state = &mut self.state[image];
                let (nr, args) = match state.pending.remove(&host_tid) {
                    Some(call) => call,
                    None => state
                        .inherited
                        .take()
                        .unwrap_or((u32::try_from(nr).unwrap_or(u32::MAX), [0; 6])),
                };
                self.emit(&Event::Syscall {
                    nr,
                    args,
                    ret: Some(ret),
                })
            }
            RawRecord::KernelWrite { addr, len } => self.emit(&Event::KernelWrite { addr, len }),
            RawRecord::ForkPoint(ordinal) => {
                let child = self.new_pid();
                self.emit(&Event::Fork { child })?;
                if let Some(&child_image) = self.forks.get(&(image, ordinal)) {
                    self.state[child_image].pid = Some(child);
                    self.state[child_image].inherited =
                        self.state[image].pending.get(&host_tid).copied();
                    self.drain_waiting(child_image)?;
                    self.switch(image, host_tid)?;
                }
                Ok(())
            }
            RawRecord::ExitGroup(status) => {
                let args = self.take_pending(image, host_tid, NR_EXIT_GROUP);
                self.emit(&Event::Syscall {
                    nr: NR_EXIT_GROUP,
                    args,
                    ret: None,
                })?;
                self.state[image].exited = true;
                self.emit(&Event::Exit {
                    code: status as i32,
                })
            }
            RawRecord::ThreadExit => {
                let args = self.take_pending(image, host_tid, NR_EXIT);
                self.emit(&Event::Syscall {
                    nr: NR_EXIT,
                    args,
                    ret: None,
                })
            }
        }
    }

    /// The calls the image's threads entered and never returned from (a successful execve, a
    /// process killed in a call), as Syscall events without a result.
    fn unreturned(&mut self, image: usize) -> Result<(), RecordError> {
        let mut pending: Vec<_> = self.state[image].pending.drain().collect();
        pending.sort_unstable_by_key(|&(host_tid, _)| host_tid);
        for (host_tid, (nr, args)) in pending {
            self.switch(image, host_tid)?;
            self.emit(&Event::Syscall {
                nr,
                args,
                ret: None,
            })?;
        }
        Ok(())
    }

    fn take_pending(&mut self, image: usize, host_tid: u32, nr: u32) -> [u64; 6] {
        match self.state[image].pending.remove(&host_tid) {
            Some((n, args)) if n == nr => args,
            _ => [0; 6],
        }
    }

    /// Ends every process the recording did not see exit.
    fn finish(mut self, root_end: Option<i32>) -> Result<MergeSummary, RecordError> {
        let mut unfinished = 0;
        let mut ended: Vec<u32> = Vec::new();
        for image in 0..self.images.len() {
            let Some(pid) = self.state[image].pid else {
                continue;
            };
            // An image an exec replaced is marked exited when its successor goes live.
            if self.state[image].exited || ended.contains(&pid) {
                continue;
            }
            ended.push(pid);
            unfinished += 1;
            let tid = self.first_tid(image);
            self.switch(image, tid)?;
            self.unreturned(image)?;
            let code = match (self.images[image].kind, root_end) {
                (ImageKind::Root, Some(code)) => code,
                _ => -1,
            };
            self.emit(&Event::Exit { code })?;
        }
        // Forks whose child never wrote a raw file: the child still has to end.
        let live: Vec<u32> = self.state.iter().filter_map(|s| s.pid).collect();
        for pid in 0..self.next_pid {
            if !live.contains(&pid) {
                unfinished += 1;
                self.current = Some((pid, u32::MAX));
                self.emit(&Event::Switch {
                    pid,
                    tid: self.next_tid,
                })?;
                self.next_tid += 1;
                self.emit(&Event::Exit { code: -1 })?;
            }
        }
        Ok(MergeSummary {
            images: self.images.len(),
            blocks: self.images.iter().map(|i| i.blocks.len()).sum(),
            torn_bytes: self.images.iter().map(|i| i.torn_bytes).sum(),
            unfinished,
        })
    }
}
