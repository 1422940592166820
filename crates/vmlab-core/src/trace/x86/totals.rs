//! Counting [`Totals`] event by event, the same way in the writer (which stores them in the
//! trailer) and the reader (which checks them against it).

use super::event::Event;
use super::format::Totals;
use rustc_hash::FxHashSet;

/// Totals so far, with the distinct processes and threads seen.
#[derive(Debug, Default)]
pub(crate) struct Counter {
    pub totals: Totals,
    pids: FxHashSet<u32>,
    threads: FxHashSet<(u32, u32)>,
}

impl Counter {
    #[inline(always)]
    pub fn count_ref(&mut self, write: bool, insns: u32) {
        let t = &mut self.totals;
        t.events.refs += 1;
        if write {
            t.stores += 1;
        } else {
            t.loads += 1;
        }
        // Saturating like a Window's count: a huge skipped count must not wrap the total.
        t.instructions = t.instructions.saturating_add(u64::from(insns));
    }

    #[inline]
    pub fn count(&mut self, e: &Event) {
        let t = &mut self.totals;
        match e {
            Event::Ref { write, insns, .. } => self.count_ref(*write, *insns),
            Event::CodePage { .. } => t.events.code_pages += 1,
            Event::Switch { pid, tid } => {
                t.events.switches += 1;
                if self.threads.insert((*pid, *tid)) {
                    t.threads += 1;
                }
                if self.pids.insert(*pid) {
                    t.processes += 1;
                }
            }
            Event::Map { .. } => t.events.maps += 1,
            Event::Syscall { .. } => t.events.syscalls += 1,
            Event::KernelWrite { .. } => t.events.kernel_writes += 1,
            Event::Fork { child } => {
                t.events.forks += 1;
                if self.pids.insert(*child) {
                    t.processes += 1;
                }
            }
            Event::Exec { .. } => t.events.execs += 1,
            Event::Exit { .. } => t.events.exits += 1,
            Event::Window { skipped, insns, .. } => {
                t.events.windows += 1;
                t.unrecorded_refs = t.unrecorded_refs.saturating_add(*skipped);
                t.instructions = t.instructions.saturating_add(*insns);
            }
            Event::Warm { .. } => t.events.warms += 1,
        }
    }
}

/// The fields where `a` and `b` differ, `name a/b` each, for a one-line message.
pub(crate) fn differences(a: &Totals, b: &Totals) -> String {
    let (e, f) = (&a.events, &b.events);
    let fields = [
        ("refs", e.refs, f.refs),
        ("code_pages", e.code_pages, f.code_pages),
        ("switches", e.switches, f.switches),
        ("maps", e.maps, f.maps),
        ("syscalls", e.syscalls, f.syscalls),
        ("kernel_writes", e.kernel_writes, f.kernel_writes),
        ("forks", e.forks, f.forks),
        ("execs", e.execs, f.execs),
        ("exits", e.exits, f.exits),
        ("windows", e.windows, f.windows),
        ("warms", e.warms, f.warms),
        ("loads", a.loads, b.loads),
        ("stores", a.stores, b.stores),
        ("instructions", a.instructions, b.instructions),
        ("processes", a.processes, b.processes),
        ("threads", a.threads, b.threads),
        ("chunks", a.chunks, b.chunks),
        ("unrecorded_refs", a.unrecorded_refs, b.unrecorded_refs),
    ];
    fields
        .iter()
        .filter(|(_, x, y)| x != y)
        .map(|(n, x, y)| format!("{n} {x}/{y}"))
        .collect::<Vec<_>>()
        .join(", ")
}
