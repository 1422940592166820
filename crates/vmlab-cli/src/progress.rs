//! A progress bar on stderr for long runs, shown only when stderr is a terminal.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use vmlab_core::engine::{Phase, Progress};

/// Progress of one run, labelled with the scheme being simulated.
pub struct RunProgress {
    bar: Option<ProgressBar>,
    phase: Option<Phase>,
    label: String,
}

impl RunProgress {
    pub fn new(label: &str) -> RunProgress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix:>8} {msg:8} [{bar:30}] {human_pos}/{human_len} ({eta})",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            bar.set_prefix(label.to_string());
            bar
        });
        RunProgress {
            bar,
            phase: None,
            label: label.to_string(),
        }
    }

    pub fn update(&mut self, p: Progress) {
        let Some(bar) = &self.bar else { return };
        if self.phase != Some(p.phase) {
            self.phase = Some(p.phase);
            // Reset first, so the old phase's count never shows against the new length.
            bar.set_position(0);
            bar.set_message(p.phase.name());
            bar.set_length(p.total);
        }
        bar.set_position(p.done);
    }

    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
        let _ = self.label;
    }
}

/// Progress of a batch of runs done in parallel (`vmlab reproduce`): runs finished of all.
pub struct CountProgress {
    bar: Option<ProgressBar>,
}

impl CountProgress {
    pub fn new(label: &str, total: u64) -> CountProgress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix:>10} [{bar:30}] {pos}/{len} runs ({elapsed})",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            bar.set_prefix(label.to_string());
            bar.enable_steady_tick(std::time::Duration::from_millis(500));
            bar
        });
        CountProgress { bar }
    }

    /// One more run finished (called from any thread).
    pub fn inc(&self) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
