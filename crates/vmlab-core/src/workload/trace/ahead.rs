//! The replay on a thread of its own, a few thousand operations ahead of the simulator:
//! decompressing and decoding a recording costs about as much per reference as simulating
//! it natively, and the simulator's thread should only simulate.

use super::replay::TraceReplay;
use crate::workload::Op;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

/// Operations per batch handed from the replay thread to the simulator.
const BATCH: usize = 4096;
/// Batches in flight: enough to ride out a chunk's decompression.
const IN_FLIGHT: usize = 8;

/// A batch of operations, each with the instructions retired with it.
struct Batch {
    ops: Vec<Op>,
    /// Wide: a sampled recording's gap between windows can retire billions.
    insns: Vec<u64>,
    /// Set on the last batch: why the stream ended early, if it did.
    end: Option<Option<String>>,
    /// On the last batch: instructions retired after its last operation (a sampled
    /// recording's final Window event carries the instructions after the last reference).
    tail: u64,
}

/// The consuming end: operations in the replay's order.
pub(super) struct Ahead {
    rx: Receiver<Batch>,
    batch: Batch,
    at: usize,
    finished: bool,
    retired: u64,
    refs: u64,
    pid: u32,
    failure: Option<String>,
}

impl Ahead {
    /// Starts `replay` on a thread of its own.
    pub(super) fn start(replay: TraceReplay) -> Ahead {
        let (tx, rx) = sync_channel(IN_FLIGHT);
        std::thread::Builder::new()
            .name("vmlab-trace".to_owned())
            .spawn(move || produce(replay, tx))
            .expect("a thread for the trace replay");
        Ahead {
            rx,
            batch: Batch {
                ops: Vec::new(),
                insns: Vec::new(),
                end: None,
                tail: 0,
            },
            at: 0,
            finished: false,
            retired: 0,
            refs: 0,
            pid: 0,
            failure: None,
        }
    }

    /// The next operation; `None` at the end (then see [`Ahead::take_failure`]).
    #[inline]
    pub(super) fn next_op(&mut self) -> Option<Op> {
        loop {
            if let (Some(&op), Some(&insns)) =
                (self.batch.ops.get(self.at), self.batch.insns.get(self.at))
            {
                self.at += 1;
                self.retired += insns;
                match op {
                    Op::Access { .. } => self.refs += 1,
                    Op::Switch { pid } | Op::Exit { next: pid } => self.pid = pid,
                    _ => {}
                }
                return Some(op);
            }
            if self.finished {
                return None;
            }
            if let Some(end) = self.batch.end.take() {
                self.retired += self.batch.tail;
                self.failure = end;
                self.finished = true;
                return None;
            }
            match self.rx.recv() {
                Ok(batch) => {
                    self.batch = batch;
                    self.at = 0;
                }
                Err(_) => {
                    self.failure = Some("the trace replay thread stopped".to_owned());
                    self.finished = true;
                    return None;
                }
            }
        }
    }

    /// Instructions retired by the operations handed out so far.
    pub(super) fn retired(&self) -> u64 {
        self.retired
    }

    /// References handed out so far.
    pub(super) fn refs(&self) -> u64 {
        self.refs
    }

    /// Why the stream ended early, if it did (taken once).
    pub(super) fn take_failure(&mut self) -> Option<String> {
        self.failure.take()
    }

    /// Where the simulator is in the recording, for an error message.
    pub(super) fn position(&self) -> String {
        format!(
            "at reference {} of the trace (process {})",
            self.refs, self.pid
        )
    }
}

/// The replay thread: batches until the end, or until the simulator hangs up.
fn produce(mut replay: TraceReplay, tx: SyncSender<Batch>) {
    loop {
        let mut batch = Batch {
            ops: Vec::with_capacity(BATCH),
            insns: Vec::with_capacity(BATCH),
            end: None,
            tail: 0,
        };
        let mut retired = replay.instructions();
        while batch.ops.len() < BATCH {
            let Some(op) = replay.next_op() else {
                batch.end = Some(replay.take_error().map(|e| e.to_string()));
                batch.tail = replay.instructions() - retired;
                break;
            };
            let now = replay.instructions();
            batch.ops.push(op);
            batch.insns.push(now - retired);
            retired = now;
        }
        let last = batch.end.is_some();
        if tx.send(batch).is_err() || last {
            return;
        }
    }
}
