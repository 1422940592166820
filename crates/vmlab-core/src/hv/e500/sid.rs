//! KVM/e500v2's shadow address-space IDs (Linux `arch/powerpc/kvm/e500.c`). The guest's TLB
//! entries are tagged (AS, TID) and it runs in both privilege levels; the host TLB holds
//! shadows tagged with one 8-bit TID, so KVM maps each guest (AS, TID, PR) it meets to a
//! shadow ID of the host CPU:
//! - the vcpu's table (`vcpu_id_table`, 2 x 256 x 2 entries) holds the ID of each guest
//!   triple; the CPU's table (`pcpu_sids`) the owner of each ID. A mapping is valid only
//!   while both agree (`local_sid_lookup`);
//! - a triple without a valid ID takes the next ID of the CPU's counter
//!   (`local_sid_setup_one`, IDs 1..255). Resetting the vcpu's table
//!   (`kvmppc_e500_id_table_reset_all`, after every guest TLB flush) forgets the mappings but
//!   does not give their IDs back: the counter only grows;
//! - when the counter runs out, KVM flash-invalidates the whole host TLB (`_tlbil_all`),
//!   clears the CPU's table and starts again from ID 1 (`local_sid_destroy_all`): every
//!   shadow of every triple is gone.
//!
//! One vcpu on one host CPU, as in the recorded guest's runs.

/// Shadow IDs a host CPU hands out: `NUM_TIDS` = 256, ID 0 unused.
pub const NUM_TIDS: usize = 256;

/// A guest (AS, TID, PR) triple, the key of the vcpu's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuestId {
    /// Address space (`MSR[IS]` or `MSR[DS]` for the current context; the entry's TS for a
    /// shadow).
    pub as_: bool,
    /// The guest TID (a PID, or 0 for global entries).
    pub tid: u8,
    /// Guest user mode.
    pub pr: bool,
}

impl GuestId {
    fn index(self) -> usize {
        (self.as_ as usize) << 9 | (self.tid as usize) << 1 | self.pr as usize
    }
}

/// What finding a triple's shadow ID did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SidLookup {
    /// The triple had a valid ID.
    Hit,
    /// It took the next ID.
    Allocated,
    /// The IDs ran out: the whole host TLB was invalidated and the IDs started again; the
    /// triple took the first one.
    Rollover,
}

/// The vcpu's and the host CPU's shadow-ID tables.
#[derive(Clone, Debug)]
pub struct ShadowIds {
    /// The vcpu's table: the ID of each triple (0: none).
    vcpu: Vec<u8>,
    /// The CPU's table: the triple owning each ID.
    pcpu: [Option<u16>; NUM_TIDS],
    /// The last ID handed out (`pcpu_last_used_sid`).
    last_used: usize,
}

impl Default for ShadowIds {
    fn default() -> Self {
        ShadowIds {
            vcpu: vec![0; 2 * NUM_TIDS * 2],
            pcpu: [None; NUM_TIDS],
            last_used: 0,
        }
    }
}

impl ShadowIds {
    /// `kvmppc_e500_get_sid`: the triple's ID, allocating one (and rolling over) as needed.
    pub fn get(&mut self, id: GuestId) -> SidLookup {
        let i = id.index();
        let sid = self.vcpu[i] as usize;
        if sid != 0 && self.pcpu[sid] == Some(i as u16) {
            return SidLookup::Hit;
        }
        let mut outcome = SidLookup::Allocated;
        self.last_used += 1;
        if self.last_used >= NUM_TIDS {
            // _tlbil_all and local_sid_destroy_all; the loop in get_sid then allocates again.
            outcome = SidLookup::Rollover;
            self.pcpu = [None; NUM_TIDS];
            self.last_used = 1;
        }
        self.pcpu[self.last_used] = Some(i as u16);
        self.vcpu[i] = self.last_used as u8;
        outcome
    }

    /// `kvmppc_e500_id_table_reset_all`: the vcpu forgets every mapping (the IDs stay used).
    pub fn reset_all(&mut self) {
        self.vcpu.fill(0);
    }

    /// IDs handed out since the last rollover.
    pub fn used(&self) -> usize {
        self.last_used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(tid: u8, pr: bool) -> GuestId {
        GuestId {
            as_: false,
            tid,
            pr,
        }
    }

    #[test]
    fn a_triple_keeps_its_id_until_the_vcpu_forgets_it() {
        let mut s = ShadowIds::default();
        assert_eq!(s.get(id(5, false)), SidLookup::Allocated);
        assert_eq!(s.get(id(5, false)), SidLookup::Hit);
        assert_eq!(s.get(id(5, true)), SidLookup::Allocated);
        assert_eq!(s.used(), 2);
        s.reset_all();
        // Forgotten, and the IDs are not given back: the counter goes on.
        assert_eq!(s.get(id(5, false)), SidLookup::Allocated);
        assert_eq!(s.used(), 3);
    }

    #[test]
    fn the_256th_allocation_invalidates_everything_and_starts_again() {
        let mut s = ShadowIds::default();
        for n in 0..255u32 {
            assert_eq!(s.get(id(n as u8, n >= 255)), SidLookup::Allocated, "{n}");
        }
        assert_eq!(s.used(), 255);
        assert_eq!(s.get(id(0, true)), SidLookup::Rollover);
        assert_eq!(s.used(), 1);
        // Every earlier mapping died with the CPU's table.
        assert_eq!(s.get(id(1, false)), SidLookup::Allocated);
        assert_eq!(s.get(id(0, true)), SidLookup::Hit);
        assert_eq!(s.used(), 2);
    }

    #[test]
    fn resets_alone_exhaust_the_ids() {
        // A guest that flushes its TLB after every two triples it uses runs out after 127
        // flushes: the IDs of forgotten mappings are not reused.
        let mut s = ShadowIds::default();
        let mut rollovers = 0;
        for _ in 0..128 {
            for pr in [false, true] {
                rollovers += (s.get(id(7, pr)) == SidLookup::Rollover) as u32;
            }
            s.reset_all();
        }
        assert_eq!(rollovers, 1);
        assert_eq!(s.used(), 1);
    }
}
