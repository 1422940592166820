//! Recording a real x86-64 Linux program: run it under QEMU's user-mode emulator with vmlab's
//! recorder plugin (`recorder/x86/`), following the processes it forks and the programs it
//! execs, then merge what each process image wrote into one trace ([`crate::trace::x86`]).
//!
//! - [`launch`]: builds the plugin and the exec-following library, runs the emulator,
//!   reports progress, survives Ctrl-C and a crashing program.
//! - [`raw`]: the plugin's raw files (one per process image) and QEMU's page-layout log.
//! - [`merge`]: the raw files, in time order, into the trace's events.

pub mod launch;
pub mod merge;
pub mod raw;

pub use launch::{record, RecordProgress, RecordSpec, Recorded};

/// Why a recording failed. Each message is one line.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The emulator is not installed.
    #[error("{0} not found: the recorder runs programs under QEMU's user-mode emulator; install it with `apt-get install qemu-user`")]
    QemuMissing(String),
    /// No C compiler to build the recorder plugin.
    #[error("cannot build the recorder plugin: {0}; install a C compiler (`apt-get install gcc`) or set CC")]
    Compiler(String),
    /// The program to record does not exist or cannot be executed.
    #[error("cannot record {0}: no such executable (give a path, or a name found on PATH)")]
    NoProgram(String),
    /// The output cannot be written.
    #[error("cannot write {path}: {reason}")]
    Output {
        /// The output path.
        path: String,
        /// Why.
        reason: String,
    },
    /// The emulator could not be started or waited for.
    #[error("cannot run {qemu}: {reason}")]
    Spawn {
        /// The emulator.
        qemu: String,
        /// Why.
        reason: String,
    },
    /// The program ran no instruction under the recorder.
    #[error("nothing was recorded: no process image ran under the recorder{0}")]
    Empty(String),
    /// A raw file or page-layout log is unreadable.
    #[error("recorder output is unreadable: {0}")]
    Raw(String),
    /// Writing the trace failed.
    #[error("{0}")]
    Trace(#[from] crate::trace::x86::TraceError),
}
