//! The pv-ops every backend that does not trap them implements alike, written once: a
//! backend says `hardware_tlb_ops!()` or `backed_page_writes!()` in its `impl PvOps` and
//! implements only what differs (a shadow MMU's trapped flushes, PV's hypercalls).

/// `invlpg`, `flush_tlb` and `invpcid_addr` as the plain instructions on the backend's
/// `mmu` (native paging, and guests whose flushes do not exit under hardware-assisted
/// paging).
macro_rules! hardware_tlb_ops {
    () => {
        fn invlpg(&mut self, va: crate::addr::Gva) -> crate::os::PvResult {
            self.mmu.invlpg(va);
            Ok(())
        }

        fn flush_tlb(&mut self) -> crate::os::PvResult {
            self.mmu.flush_current();
            Ok(())
        }

        fn invpcid_addr(&mut self, pcid: u16, va: crate::addr::Gva) -> crate::os::PvResult {
            self.mmu.invlpg_tag(va, pcid as u64);
            Ok(())
        }
    };
}

/// `clear_page` and `copy_page` under a hypervisor that backs each guest frame when it is
/// first written (the backend's `mem` and `vm`): every frame of the written page the host
/// never backed traps once and is backed.
macro_rules! backed_page_writes {
    () => {
        fn clear_page(
            &mut self,
            frame: crate::addr::Gfn,
            size: crate::addr::PageSize,
        ) -> crate::os::PvResult {
            super::touch_frames(self.mem, self.vm, frame, size)
        }

        fn copy_page(
            &mut self,
            _from: crate::addr::Gfn,
            to: crate::addr::Gfn,
            size: crate::addr::PageSize,
        ) -> crate::os::PvResult {
            super::touch_frames(self.mem, self.vm, to, size)
        }
    };
}
