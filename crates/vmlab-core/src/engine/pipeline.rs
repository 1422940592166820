//! Running a window of accesses through the decoupled memory pipeline
//! ([`crate::hw::pipeline`]): translation on this thread, the cache levels served level by
//! level, on this thread or on a second one. Every mode gives the same results; only the
//! host time differs. The pipeline is closed (every reference served, the levels back home)
//! around each OS operation and when the window ends, so counters read there are exact. A
//! big first touch of pages (set-up's, a fault per page) runs in a window of its own
//! (`engine::touch_pages`).

use crate::hw::pipeline::{Levels, Pipeline};
use crate::scheme::System;
use std::thread::{Scope, ScopedJoinHandle};

/// A window's pipeline, opened and closed around the cold operations between batches.
pub struct Window<'scope, 'env> {
    mode: Pipeline,
    scope: &'scope Scope<'scope, 'env>,
    cache_thread: Option<ScopedJoinHandle<'scope, Levels>>,
    /// Accesses since the pipeline last opened.
    since_open: u64,
}

/// Threaded windows whose OS operations come more often than this many accesses go on
/// staged: starting a thread per short stretch costs more than it saves.
const SHORT_STRETCH: u64 = 1 << 14;

impl<'scope, 'env> Window<'scope, 'env> {
    pub fn new(mode: Pipeline, scope: &'scope Scope<'scope, 'env>) -> Self {
        Window {
            mode: mode.resolve(),
            scope,
            cache_thread: None,
            since_open: 0,
        }
    }

    /// Start streaming `sys`'s memory references.
    pub fn open(&mut self, sys: &mut System) {
        self.since_open = 0;
        match self.mode {
            Pipeline::Auto | Pipeline::Immediate => {}
            Pipeline::Staged => sys.memory_mut().stage(),
            Pipeline::Threaded => {
                let (levels, worker) = sys.memory_mut().detach();
                self.cache_thread = Some(self.scope.spawn(move || worker.run(levels)));
            }
        }
    }

    /// `n` more accesses went in.
    #[inline]
    pub fn count(&mut self, n: u64) {
        self.since_open += n;
    }

    /// Serve every pending reference and bring the levels home. A threaded window that
    /// only ran a short stretch goes on staged.
    pub fn close(&mut self, sys: &mut System) {
        match self.cache_thread.take() {
            Some(thread) => {
                sys.memory_mut().hang_up();
                let levels = thread
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                sys.memory_mut().attach(levels);
                if self.since_open < SHORT_STRETCH {
                    self.mode = Pipeline::Staged;
                }
            }
            None => sys.memory_mut().end_stream(),
        }
    }
}
