//! End-to-end runs through the engine: exact set-up state, sampling and extrapolation,
//! determinism, and the shape of the native/nested comparison.

use vmlab_core::addr::PageSize;
use vmlab_core::cost::Profile;
use vmlab_core::engine::{run, Pipeline, RunConfig};
use vmlab_core::scheme::Paging;
use vmlab_core::stats::RunReport;
use vmlab_core::workload::WorkloadSpec;

fn config(workload: &str, paging: Paging) -> RunConfig {
    RunConfig {
        workload: WorkloadSpec::parse(workload).unwrap(),
        paging,
        profile: Profile::builtin("skylake").unwrap(),
        guest_pages: PageSize::Size4K,
        host_pages: PageSize::Size4K,
        fragmentation: 0.0,
        accesses: 50_000,
        warmup: 10_000,
        tolerance: vmlab_core::engine::sampling::DEFAULT_TOLERANCE,
        fixed_warmup: true,
        seed: 7,
        pretouch: false,
        pipeline: Pipeline::default(),
    }
}

fn go(config: &RunConfig) -> RunReport {
    run(config, &mut |_| std::ops::ControlFlow::Continue(())).unwrap()
}

#[test]
fn set_up_builds_exactly_the_page_tables_the_buffer_needs() {
    // A 1 GiB buffer at a 1 GiB-aligned address: one PML4 (two with the profile's KPTI: the
    // kernel's and the user copy), one PDPT, one PD and 512 PTs.
    let native = go(&config("sysbench-mem:block=1G", Paging::Native));
    assert_eq!(native.setup.page_faults, 262_144);
    assert_eq!(native.setup.page_table_pages, 516);
    assert_eq!(native.setup.vm_exits, 0);
    // With THP the PD maps 2 MiB pages directly: no PT pages, 512 faults.
    let mut huge = config("sysbench-mem:block=1G", Paging::Native);
    huge.guest_pages = PageSize::Size2M;
    let huge = go(&huge);
    assert_eq!(huge.setup.page_faults, 512);
    assert_eq!(huge.setup.page_table_pages, 4);
}

#[test]
fn nested_set_up_exits_once_per_guest_frame_touched() {
    let nested = go(&config("sysbench-mem:block=256M", Paging::Nested));
    // Every guest frame the kernel touched (data pages, table pages) was backed on its
    // first touch; nothing else exits.
    let frames = nested.setup.backed_bytes["4k"] / 4096;
    assert_eq!(nested.setup.vm_exits, frames);
    assert_eq!(nested.setup.exits_by_reason["ept_violation"], frames);
    assert_eq!(frames, 65_536 + nested.setup.page_table_pages);
    // The measured phase touches no new frame.
    assert_eq!(nested.vm_exits, 0);
    assert_eq!(nested.page_faults, 0);
}

#[test]
fn large_host_pages_back_the_guest_with_few_exits() {
    let mut c = config("sysbench-mem:block=256M", Paging::Nested);
    c.host_pages = PageSize::Size2M;
    let r = go(&c);
    assert_eq!(r.setup.backed_bytes["4k"], 0);
    assert_eq!(r.setup.vm_exits, r.setup.backed_bytes["2m"] / (2 << 20));
}

#[test]
fn samples_are_extrapolated_and_say_so() {
    let r = go(&config("sysbench-mem:block=64M", Paging::Native));
    assert_eq!(r.accesses_total, 16 << 20);
    assert_eq!((r.accesses_simulated, r.accesses_warmup), (50_000, 10_000));
    assert!(r.extrapolated);
    let expected = r.cycles_per_access * r.accesses_total as f64;
    assert!((r.cycles - expected).abs() <= 1e-6 * expected);
    assert!((r.seconds - r.cycles / 2.1e9).abs() <= 1e-9 * r.seconds);

    let mut whole = config("tlb-bench:size=1M,accesses=30000", Paging::Native);
    whole.accesses = 0;
    let w = go(&whole);
    assert_eq!(
        (
            w.accesses_simulated,
            w.accesses_total,
            w.accesses_warmup,
            w.extrapolated
        ),
        (30_000, 30_000, 0, false)
    );
}

#[test]
fn runs_are_a_function_of_their_inputs() {
    let c = config("gups:table=64M,updates=100000", Paging::Nested);
    assert_eq!(go(&c), go(&c));
    let mut other_seed = c.clone();
    other_seed.seed = 8;
    assert_ne!(go(&c).walks, go(&other_seed).walks);
}

#[test]
fn every_memory_pipeline_gives_the_same_report() {
    // Cache-level counts (served by level and requester) are where a reordered or lost
    // reference would show; OS operations between batches close and reopen the pipeline.
    // Set-up's first touch of a buffer of 4,096 pages or more runs through the pipeline too,
    // faults and all (every scheme's fault path: the buffers below are 16 MiB or more, but
    // for the 8 MiB fork-bench, which touches page by page as before).
    let workloads = [
        ("sysbench-mem:block=256M,mode=rnd", Paging::Native),
        ("sysbench-mem:block=256M,mode=rnd", Paging::Nested),
        ("gups:table=64M,updates=100000", Paging::Shadow),
        ("gups:table=64M,updates=100000", Paging::Tpt),
        ("fork-bench:rss=8M,forks=5", Paging::Pv),
        ("fork-bench:rss=32M,forks=2", Paging::Pv),
        ("lmbench:op=mmap,iters=5", Paging::Nested),
    ];
    for (workload, paging) in workloads {
        let mut c = config(workload, paging);
        c.pipeline = Pipeline::Immediate;
        let immediate = go(&c);
        for pipeline in [Pipeline::Staged, Pipeline::Threaded] {
            c.pipeline = pipeline;
            assert_eq!(go(&c), immediate, "{workload} {paging:?} {pipeline:?}");
        }
    }
}

#[test]
fn nested_walks_cost_more_than_native_walks() {
    let native = go(&config("tlb-bench:size=256M", Paging::Native));
    let nested = go(&config("tlb-bench:size=256M", Paging::Nested));
    // Same workload and seed: the same accesses miss the TLB the same way.
    assert_eq!(native.tlb_misses, nested.tlb_misses);
    assert!(native.tlb_misses > 40_000, "{}", native.tlb_misses);
    assert_eq!(native.ept_walk_refs, 0);
    assert!(nested.walk_refs_per_walk > 2.0 * native.walk_refs_per_walk);
    assert!(
        nested.seconds > 1.2 * native.seconds,
        "{} vs {}",
        nested.seconds,
        native.seconds
    );
}

#[test]
fn host_huge_pages_shorten_the_nested_walk() {
    let small = go(&config("tlb-bench:size=256M", Paging::Nested));
    let mut c = config("tlb-bench:size=256M", Paging::Nested);
    c.host_pages = PageSize::Size2M;
    let large = go(&c);
    assert!(
        large.ept_walk_refs < small.ept_walk_refs,
        "{} vs {}",
        large.ept_walk_refs,
        small.ept_walk_refs
    );
    assert!(large.seconds < small.seconds);
}

#[test]
fn memory_is_page_tables_not_data() {
    // 1 GiB of touched data costs its 515 page-table pages in the simulator, nothing per page.

    use vmlab_core::scheme::System;
    let profile = Profile::builtin("skylake").unwrap();
    let mut sys =
        System::new(&vmlab_core::engine::system_config(Paging::Native, &profile)).unwrap();
    let base = vmlab_core::workload::BUFFER_BASE;
    sys.mmap(base, 1 << 30, true).unwrap();
    for page in 0..(1u64 << 18) {
        sys.access(vmlab_core::addr::Gva::new(base.raw() + page * 4096), true)
            .unwrap();
    }
    // 515 tables and KPTI's user top-level table.
    assert_eq!(sys.host_memory().table_pages(), 516);
    assert_eq!(sys.kernel().frames_in_use(), 262_144 + 516);
}

#[test]
fn pretouch_backs_all_guest_memory_before_set_up() {
    for paging in [Paging::Nested, Paging::Tpt] {
        let mut c = config("sysbench-mem:block=16M,mode=rnd", paging);
        c.host_pages = PageSize::Size1G;
        c.pretouch = true;
        let r = go(&c);
        let guest = c.profile.machine.guest_memory;
        // One EPT violation per 1 GiB backing page, and none later: the buffer's first
        // touches find memory backed.
        assert_eq!(r.setup.vm_exits, guest >> 30, "{paging:?}");
        assert_eq!(r.setup.backed_bytes["1g"], guest);
        assert!(r.pretouch);
    }
    let mut c = config("sysbench-mem:block=16M,mode=rnd", Paging::Native);
    c.pretouch = true;
    assert_eq!(
        go(&c).setup.vm_exits,
        0,
        "nothing to back without a hypervisor"
    );
}

#[test]
fn host_remaps_are_counted_and_costed_in_the_measured_phase() {
    let mut c = config("host-remap:size=16M,accesses=40000,every=1000", Paging::Tpt);
    c.accesses = 0;
    let tpt = go(&c);
    c.paging = Paging::Nested;
    let nested = go(&c);
    let p = &c.profile.virt;
    for r in [&tpt, &nested] {
        assert_eq!(
            (r.remap.remaps, r.remap.global_flushes, r.remap.frames_moved),
            (40, 40, 40),
            "{}",
            r.paging
        );
    }
    assert_eq!(
        (
            tpt.remap.tag_updates,
            tpt.remap.gfn_to_hfn_updates,
            tpt.remap.devirt_fixups
        ),
        (80, 40, 40)
    );
    assert_eq!(
        (nested.remap.tag_updates, nested.remap.devirt_fixups),
        (0, 0)
    );
    let host = 40.0
        * (p.host_remap
            + c.profile
                .kernel_cost(vmlab_core::cost::KernelCost::CopyPage4k)
            + p.global_flush);
    assert!((nested.cycles_breakdown.exits - host).abs() < 1e-6);
    assert!((tpt.cycles_breakdown.exits - host - 80.0 * p.tag_update).abs() < 1e-6);
    assert!((tpt.cycles_breakdown.kernel - 40.0 * (p.remap_notify + p.devirt_fixup)).abs() < 1e-6);
    assert_eq!(tpt.tag_violations, 0);
}

#[test]
fn tpt_task_narrows_which_program_runs_with_tpt() {
    let run = |spec: &str| go(&config(spec, Paging::Tpt));
    let marked = run("sysbench-mem:block=16M,mode=rnd");
    assert!(
        marked.tag_checks > 0 && marked.ept_walk_refs == 0,
        "the workload's own program is marked by default"
    );
    let unmarked = run("sysbench-mem:block=16M,mode=rnd,tpt_task=none");
    assert_eq!(
        unmarked.workload,
        "sysbench-mem:block=16M,oper=write,mode=rnd,events=1,tpt_task=none"
    );
    assert!(
        unmarked.tag_checks == 0 && unmarked.ept_walk_refs > 0,
        "nothing marked: nested paging"
    );
    let nested = go(&config("sysbench-mem:block=16M,mode=rnd", Paging::Nested));
    assert_eq!(unmarked.walk_refs, nested.walk_refs);
}

#[test]
fn the_warmup_stops_at_steady_state_and_never_eats_the_sample() {
    // A 4K region costs the same once its 64 lines are cached; the first 1M-access window pays
    // their cold misses, so windows 1-2 and 3-4 are the first two blocks within 0.1%.
    let mut c = config("tlb-bench:size=4K,accesses=6000000", Paging::Native);
    c.fixed_warmup = false;
    c.warmup = 5_000_000;
    // Without timer ticks: at 250 Hz every other 5M-cycle window takes one, which would make
    // the windows' exact costs alternate (the convergence test tolerates it; this exact
    // assertion would not).
    c.profile.kernel.hz = 0.0;
    let r = go(&c);
    assert_eq!(r.sample.warmup_end, "converged");
    assert_eq!(r.accesses_warmup, 5_000_000);
    assert_eq!(r.sample.warmup_cycles_per_access.len(), 5);
    assert_eq!(r.sample.warmup_cycles_per_access[1..], [5.0; 4]);
    assert_eq!(r.sample.window_cycles_per_access.len(), 10);
    // 1.5M accesses, 1M measured: the warm-up gets the 500,000 left, and says so.
    c.workload = WorkloadSpec::parse("tlb-bench:size=4K,accesses=1500000").unwrap();
    c.accesses = 1_000_000;
    let r = go(&c);
    assert_eq!(
        (r.accesses_warmup, r.accesses_simulated),
        (500_000, 1_000_000)
    );
    assert_eq!(r.sample.warmup_end, "workload");
}

#[test]
fn counts_that_overflow_are_config_errors() {
    let mut c = config("gups:table=16M,updates=1000", Paging::Native);
    c.warmup = u64::MAX - 9;
    c.accesses = 10;
    let e = run(&c, &mut |_| std::ops::ControlFlow::Continue(())).expect_err("overflows");
    assert!(
        matches!(e, vmlab_core::engine::EngineError::Config(ref m) if m.contains("overflows")),
        "{e}"
    );
}

#[test]
fn the_report_gives_the_llc_policy_selector_at_each_window_end_under_drrip_only() {
    // The built-in profile's LLC duels SRRIP against BRRIP: one selector value per warm-up
    // window and per measured window, each within its 10-bit range.
    let mut c = config("sysbench-mem:block=16M,mode=rnd", Paging::Native);
    c.warmup = 2_000_000;
    c.accesses = 100_000;
    let r = go(&c);
    assert_eq!(r.sample.warmup_llc_policy_selector.len(), 2);
    assert_eq!(r.sample.window_llc_policy_selector.len(), 10);
    assert!(r
        .sample
        .warmup_llc_policy_selector
        .iter()
        .chain(&r.sample.window_llc_policy_selector)
        .all(|&p| p <= 1023));
    // On SRRIP there is no selector, and the costs are still reported.
    c.profile.memory.llc.replacement = vmlab_core::hw::cache::Replacement::Srrip;
    let r = go(&c);
    assert!(r.sample.warmup_llc_policy_selector.is_empty());
    assert!(r.sample.window_llc_policy_selector.is_empty());
    assert_eq!(r.sample.window_cycles_per_access.len(), 10);
}

#[test]
fn a_forked_childs_touch_set_is_a_workload_parameter() {
    // Each child writes `stack + data` pages, each a copy-on-write fault (a copy, or a reuse
    // of the top stack page the parent already copied away from), and the parent re-faults
    // its 2 pages; reads of text fork copied cost no fault.
    for (params, child_faults) in [
        ("", 16),
        (",child_stack=1,child_data=2,child_text=4", 3),
        (",child_stack=0,child_data=0,child_text=0", 0),
    ] {
        let workload = format!("fork-bench:rss=64K,forks=3{params}");
        let r = go(&config(&workload, Paging::Native));
        assert_eq!(r.forks, 3, "{workload}");
        assert_eq!(r.page_faults, 3 * (child_faults + 2), "{workload}");
        assert_eq!(
            r.os.cow_faults + r.os.cow_reuses,
            r.page_faults,
            "{workload}"
        );
    }
}

#[test]
fn the_kernel_takes_a_timer_tick_every_one_over_hz_of_simulated_time() {
    for paging in [Paging::Native, Paging::Shadow, Paging::Pv] {
        for hz in [0.0, 10_000.0] {
            let mut c = config("lmbench:op=page-fault,size=1M,iters=3", paging);
            c.profile.kernel.hz = hz;
            let r = go(&c);
            // Every operation is simulated after set-up, so the report's cycles are the
            // time the ticks were counted over (their own cost included).
            let period = c.profile.machine.frequency_ghz * 1e9 / hz;
            let expected = if hz > 0.0 {
                (r.cycles / period) as u64
            } else {
                0
            };
            assert_eq!(r.os.interrupts, expected, "{paging:?} hz {hz}");
            if hz > 0.0 {
                assert!(expected >= 10, "{paging:?}: {expected} ticks");
            }
            let timer_exits = r.exits_by_reason["timer"];
            let want = match paging {
                Paging::Shadow => r.os.interrupts,
                _ => 0,
            };
            assert_eq!(timer_exits, want, "{paging:?} hz {hz}");
        }
    }
}
