//! Long calls without holding the interpreter: the work runs on a worker thread, which only
//! queues progress messages and watches a stop flag; the calling thread waits with the GIL
//! released, wakes every [`TICK`] (or when a message arrives) to hand the messages to the
//! Python callback and to check for signals, and stops the work on Ctrl-C, on an exception
//! from the callback, or when the callback returns `False`.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;
use vmlab_core::engine::{Progress, RunConfig};
use vmlab_core::lab::LabError;

/// How often the waiting thread checks for signals with no message to deliver: Ctrl-C stops
/// the work within this, plus the time to the run's next progress report (every few hundred
/// thousand simulated operations, well under a second).
const TICK: Duration = Duration::from_millis(100);

/// A progress message, owned so that it can cross threads; a dict on the Python side.
#[derive(Clone, Debug)]
pub struct Message {
    /// `start`, `progress` or `finished`.
    event: &'static str,
    /// The run's position in the call (a comparison's or a sweep's).
    index: usize,
    /// For `finished`: runs finished so far; for `progress`: units of the phase done.
    done: u64,
    /// Runs in the call (`start`, `finished`) or units of the phase (`progress`).
    total: u64,
    /// The run, when known: workload, scheme, seed.
    run: Option<(String, String, u64)>,
    /// For `progress`: the phase.
    phase: Option<&'static str>,
}

impl Message {
    /// Run `index` of `total` starts.
    pub fn start(index: usize, total: usize, config: &RunConfig) -> Message {
        Message {
            event: "start",
            index,
            done: 0,
            total: total as u64,
            run: Some(run_of(config)),
            phase: None,
        }
    }

    /// How far run `index` is.
    pub fn progress(index: usize, config: &RunConfig, progress: Progress) -> Message {
        Message {
            event: "progress",
            index,
            done: progress.done,
            total: progress.total,
            run: Some(run_of(config)),
            phase: Some(progress.phase.name()),
        }
    }

    /// Run `index` finished: `done` of `total`.
    pub fn finished(index: usize, done: usize, total: usize) -> Message {
        Message {
            event: "finished",
            index,
            done: done as u64,
            total: total as u64,
            run: None,
            phase: None,
        }
    }

    /// A recording's progress: its `phase` (`running`: `done` raw bytes from `total`
    /// process images; `merging`: `done` references written).
    pub fn recording(phase: &'static str, done: u64, total: u64) -> Message {
        Message {
            event: "progress",
            index: 0,
            done,
            total,
            run: None,
            phase: Some(phase),
        }
    }

    /// The dict the Python callback receives.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("event", self.event)?;
        d.set_item("index", self.index)?;
        d.set_item("done", self.done)?;
        d.set_item("total", self.total)?;
        if let Some((workload, paging, seed)) = &self.run {
            d.set_item("workload", workload)?;
            d.set_item("paging", paging)?;
            d.set_item("seed", seed)?;
        }
        if let Some(phase) = self.phase {
            d.set_item("phase", phase)?;
        }
        Ok(d)
    }
}

fn run_of(config: &RunConfig) -> (String, String, u64) {
    (
        config.workload.canonical(),
        config.paging.name().to_string(),
        config.seed,
    )
}

/// What the worker side holds: the queue and the stop flag.
pub struct Sink {
    queue: Mutex<Queue>,
    wake: Condvar,
    stop: AtomicBool,
    /// Whether anyone listens (no callback: messages are not queued).
    listening: bool,
}

#[derive(Default)]
struct Queue {
    messages: Vec<Message>,
    done: bool,
}

impl Sink {
    /// Queues `message` for the callback; `Break` once the work is to stop.
    pub fn send(&self, message: Message) -> ControlFlow<()> {
        if self.listening {
            if let Ok(mut q) = self.queue.lock() {
                q.messages.push(message);
            }
            self.wake.notify_one();
        }
        self.check()
    }

    /// `Break` once the work is to stop.
    pub fn check(&self) -> ControlFlow<()> {
        if self.stop.load(Ordering::Relaxed) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    /// The flag that stops the work (for the lab's pool, `runner::in_parallel`).
    pub fn stop_flag(&self) -> &AtomicBool {
        &self.stop
    }

    fn finish(&self) {
        if let Ok(mut q) = self.queue.lock() {
            q.done = true;
        }
        self.wake.notify_one();
    }

    /// Waits up to [`TICK`] for messages or the end; returns the messages and whether the
    /// work has ended.
    fn wait(&self) -> (Vec<Message>, bool) {
        let Ok(q) = self.queue.lock() else {
            return (Vec::new(), true);
        };
        let (mut q, _) = self
            .wake
            .wait_timeout_while(q, TICK, |q| q.messages.is_empty() && !q.done)
            .unwrap_or_else(|e| e.into_inner());
        (std::mem::take(&mut q.messages), q.done)
    }
}

/// Runs `work` on a worker thread while this thread, detached from the interpreter, waits;
/// hands every message to `callback` (a callable taking a dict; `False` stops the work) and
/// checks for signals. A Python exception (KeyboardInterrupt, or the callback's) stops the
/// work and is raised once it has stopped; a lab error becomes `ValueError` or `vmlab.Error`.
pub fn detached<T: Send>(
    py: Python<'_>,
    callback: Option<&Bound<'_, PyAny>>,
    work: impl FnOnce(&Sink) -> Result<T, LabError> + Send,
) -> PyResult<T> {
    let sink = Sink {
        queue: Mutex::new(Queue::default()),
        wake: Condvar::new(),
        stop: AtomicBool::new(false),
        listening: callback.is_some(),
    };
    let mut raised: Option<PyErr> = None;
    let mut stopped_by_callback = false;
    let result = std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            let result = work(&sink);
            sink.finish();
            result
        });
        loop {
            let (messages, done) = py.detach(|| sink.wait());
            if raised.is_none() && !stopped_by_callback {
                if let Some(callback) = callback {
                    for m in &messages {
                        match m.to_dict(py).and_then(|d| callback.call1((d,))) {
                            Ok(v) if is_false(&v) => {
                                stopped_by_callback = true;
                            }
                            Ok(_) => {}
                            Err(e) => raised = Some(e),
                        }
                        if raised.is_some() || stopped_by_callback {
                            break;
                        }
                    }
                }
                if raised.is_none() {
                    if let Err(e) = py.check_signals() {
                        raised = Some(e);
                    }
                }
                if raised.is_some() || stopped_by_callback {
                    sink.stop.store(true, Ordering::Relaxed);
                }
            }
            if done {
                break;
            }
        }
        py.detach(|| worker.join())
    });
    if let Some(e) = raised {
        return Err(e);
    }
    match result {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(crate::lab_error(e)),
        Err(_) => Err(crate::Error::new_err(
            "a vmlab worker thread panicked (a bug: please report it with the call that made it)",
        )),
    }
}

/// Whether a callback's return value is `False` itself (not merely false-like: a callback
/// that returns nothing, `None`, goes on).
fn is_false(value: &Bound<'_, PyAny>) -> bool {
    value
        .cast::<pyo3::types::PyBool>()
        .is_ok_and(|b| !b.is_true())
}
