//! Benchmarks of the simulator's hot path: the per-access translation and cache path, page
//! walks, the translation cache and cache hierarchy on their own, and workload generation.
//!
//! Every benchmark reports `Throughput::Elements`, so criterion prints simulated accesses
//! (or lookups, or generated ops) per second. Set-up (building systems, mapping and touching
//! memory, precomputing addresses) happens outside the timed closures, and each set-up checks
//! that the timed loop exercises the path its name promises (e.g. no L1 DTLB misses in
//! `tlb_hit`). Run with `cargo bench -p vmlab-core --bench hot_path`.

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use vmlab_core::addr::{Gva, Hpa};
use vmlab_core::cost::profile::Profile;
use vmlab_core::hw::assoc::{TranslationCache, TranslationCacheConfig};
use vmlab_core::hw::cache::{MemLevel, Requester};
use vmlab_core::hw::memory::MemoryHierarchy;
use vmlab_core::scheme::{Paging, System};
use vmlab_core::workload::{AnyWorkload, Op, Workload, WorkloadSpec, BUFFER_BASE};

const PAGE: u64 = 4096;
/// Seed of every precomputed address or key stream.
const SEED: u64 = 0x5eed;

/// Modest times so the whole file runs in about two minutes on a small machine.
fn configure<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);
    group
}

fn rng() -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(SEED)
}

/// `n` uniform values in `0..bound` (multiply-shift; the bias is irrelevant here).
fn uniform(rng: &mut Xoshiro256PlusPlus, n: usize, bound: u64) -> Vec<u64> {
    (0..n)
        .map(|_| ((u128::from(rng.next_u64()) * u128::from(bound)) >> 64) as u64)
        .collect()
}

fn skylake() -> Profile {
    Profile::builtin("skylake").expect("the built-in skylake profile loads")
}

/// A skylake system with 4K pages in both dimensions and `region` bytes mapped at
/// [`BUFFER_BASE`] and write-touched page by page, so no timed access faults.
fn system_with_region(paging: Paging, region: u64) -> System {
    let profile = skylake();
    let mut sys = System::new(&vmlab_core::engine::system_config(paging, &profile))
        .unwrap_or_else(|e| panic!("building a {} system: {e}", paging.name()));
    sys.mmap(BUFFER_BASE, region, true)
        .expect("mmap of the benchmark region");
    for page in 0..region / PAGE {
        sys.access(Gva::new(BUFFER_BASE.raw() + page * PAGE), true)
            .expect("touching the benchmark region");
    }
    sys
}

/// Read every address once; a timed pass is this loop.
#[inline]
fn access_all(sys: &mut System, vas: &[Gva]) {
    for &va in vas {
        match sys.access(va, false) {
            Ok(hpa) => {
                black_box::<Hpa>(hpa);
            }
            Err(e) => panic!("access to {va:?}: {e}"),
        }
    }
}

/// `n` random 8-byte-aligned addresses in the first `region` bytes of the buffer.
fn addresses_in(region: u64, n: usize) -> Vec<Gva> {
    uniform(&mut rng(), n, region / 8)
        .into_iter()
        .map(|i| Gva::new(BUFFER_BASE.raw() + i * 8))
        .collect()
}

/// 1. The per-access hit path: 64 KiB (16 pages) mapped, every access hits the L1 DTLB.
fn tlb_hit(c: &mut Criterion) {
    const REGION: u64 = 64 << 10;
    const N: usize = 4096;
    let vas = addresses_in(REGION, N);
    let mut group = configure(c, "tlb_hit");
    group.throughput(Throughput::Elements(N as u64));
    for paging in Paging::ALL {
        let mut sys = system_with_region(paging, REGION);
        access_all(&mut sys, &vas);
        let before = sys.mmu().counters();
        access_all(&mut sys, &vas);
        let pass = sys.mmu().counters().since(&before);
        assert_eq!(pass.accesses, N as u64);
        assert_eq!(
            pass.l1_tlb_misses,
            0,
            "tlb_hit/{}: accesses missed the L1 DTLB",
            paging.name()
        );
        group.bench_function(paging.name(), |b| {
            b.iter(|| access_all(&mut sys, black_box(&vas)))
        });
    }
    group.finish();
}

/// 2. TLB misses and page walks: random addresses over 256 MiB, far beyond the STLB's
///    reach (1536 x 4 KiB = 6 MiB).
fn walk(c: &mut Criterion) {
    const REGION: u64 = 256 << 20;
    const N: usize = 1 << 16;
    let vas = addresses_in(REGION, N);
    let mut group = configure(c, "walk");
    group.throughput(Throughput::Elements(N as u64));
    for paging in Paging::ALL {
        let mut sys = system_with_region(paging, REGION);
        access_all(&mut sys, &vas);
        let before = sys.mmu().counters();
        access_all(&mut sys, &vas);
        let pass = sys.mmu().counters().since(&before);
        assert!(
            pass.walks * 10 >= pass.accesses * 9,
            "walk/{}: only {} walks in {} accesses",
            paging.name(),
            pass.walks,
            pass.accesses
        );
        assert_eq!(pass.faults, 0);
        group.bench_function(paging.name(), |b| {
            b.iter(|| access_all(&mut sys, black_box(&vas)))
        });
    }
    group.finish();
}

/// 3. `TranslationCache::lookup` on its own, hits and misses, and a miss followed by a fill.
fn translation_cache(c: &mut Criterion) {
    const N: usize = 4096;
    let geometries = [
        (
            "stlb_1536x12",
            TranslationCacheConfig {
                entries: 1536,
                ways: 12,
            },
        ),
        ("fa_32", TranslationCacheConfig::fully_associative(32)),
    ];
    let mut group = configure(c, "translation_cache");
    group.throughput(Throughput::Elements(N as u64));
    for (name, cfg) in geometries {
        cfg.validate(name).expect("a valid geometry");
        let entries = u64::from(cfg.entries);
        let mut cache = TranslationCache::new(&cfg);
        // Keys 0..entries fill every way of every set exactly once.
        for key in 0..entries {
            cache.fill(key, key << 12);
        }
        assert_eq!(cache.occupancy(), entries as usize);
        let mut rng = rng();
        let hits = uniform(&mut rng, N, entries);
        // Keys above every filled one, spread over all sets.
        let misses: Vec<u64> = uniform(&mut rng, N, 1 << 36)
            .into_iter()
            .map(|k| k + entries)
            .collect();
        for &key in &hits {
            assert!(cache.peek(key).is_some());
        }
        for &key in &misses {
            assert!(cache.peek(key).is_none());
        }

        let lookup_all = |cache: &mut TranslationCache, keys: &[u64]| {
            for &key in keys {
                black_box(cache.lookup(key));
            }
        };
        group.bench_function(format!("{name}/hit"), |b| {
            b.iter(|| lookup_all(&mut cache, black_box(&hits)))
        });
        group.bench_function(format!("{name}/miss"), |b| {
            b.iter(|| lookup_all(&mut cache, black_box(&misses)))
        });
        assert_eq!(
            cache.occupancy(),
            entries as usize,
            "lookups must not evict"
        );
        // The translation path's pattern on a miss: the lookup, then a fill of the absent key
        // that evicts the set's least recently used entry (the sets are full). The stream
        // repeats only every N keys, far more than a set holds, so its lookups miss.
        let mut refill = cache.clone();
        let fresh: Vec<u64> = (0..N as u64).map(|n| misses[n as usize] + n).collect();
        group.bench_function(format!("{name}/miss_fill"), |b| {
            b.iter(|| {
                for &key in black_box(&fresh) {
                    if refill.lookup(key).is_none() {
                        refill.fill_absent(key, key << 12);
                    }
                }
            })
        });
        assert_eq!(refill.occupancy(), entries as usize);
    }
    group.finish();
}

/// 4. `MemoryHierarchy::access` with the skylake caches: hot lines (all L1D hits) and
///    random lines over 4 GiB (mostly misses to DRAM, with fills into every level: the
///    2^20 lines are about three times the 22 MiB LLC); and the same lines as a reference
///    stream served level by level (`_staged`) or on a cache thread (`_threaded`).
fn cache_hierarchy(c: &mut Criterion) {
    let profile = skylake();
    let line = u64::from(profile.memory.line_size);
    let mut group = configure(c, "cache_hierarchy");

    // 256 lines of one 16 KiB block: four per L1D set, well within its 8 ways.
    let hot: Vec<Hpa> = uniform(&mut rng(), 4096, 256)
        .into_iter()
        .map(|l| Hpa::new(l * line))
        .collect();
    let random: Vec<Hpa> = uniform(&mut rng(), 1 << 20, (4u64 << 30) / line)
        .into_iter()
        .map(|l| Hpa::new(l * line))
        .collect();
    let access_all = |memory: &mut MemoryHierarchy, lines: &[Hpa]| {
        for &hpa in lines {
            black_box(memory.access(hpa, Requester::Data));
        }
    };

    for (name, lines) in [("hot", &hot), ("random_4g", &random)] {
        let mut memory = MemoryHierarchy::new(&profile.memory);
        access_all(&mut memory, lines);
        let before = *memory.stats();
        access_all(&mut memory, lines);
        let pass = memory.stats().since(&before);
        let l1 = pass.get(Requester::Data, MemLevel::L1);
        let dram = pass.get(Requester::Data, MemLevel::Dram);
        match name {
            "hot" => assert_eq!(l1, lines.len() as u64, "hot lines must all hit the L1D"),
            _ => assert!(
                dram * 2 > lines.len() as u64,
                "random lines should mostly miss: {dram} DRAM"
            ),
        }
        group.throughput(Throughput::Elements(lines.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| access_all(&mut memory, black_box(lines)))
        });

        // The same lines through the decoupled pipeline (`hw::pipeline`), level by level on
        // this thread, then with the levels on a cache thread: the same counts, checked.
        let mut staged = MemoryHierarchy::new(&profile.memory);
        stream_staged(&mut staged, lines);
        let before = *staged.stats();
        stream_staged(&mut staged, lines);
        assert_eq!(
            staged.stats().since(&before),
            pass,
            "staged serving is exact"
        );
        group.bench_function(format!("{name}_staged"), |b| {
            b.iter(|| stream_staged(&mut staged, black_box(lines)))
        });
        let mut threaded = MemoryHierarchy::new(&profile.memory);
        stream_threaded(&mut threaded, lines);
        let before = *threaded.stats();
        stream_threaded(&mut threaded, lines);
        assert_eq!(
            threaded.stats().since(&before),
            pass,
            "threaded serving is exact"
        );
        group.bench_function(format!("{name}_threaded"), |b| {
            b.iter(|| stream_threaded(&mut threaded, black_box(lines)))
        });
    }
    group.finish();
}

/// `lines` as one stream served level by level on this thread.
fn stream_staged(memory: &mut MemoryHierarchy, lines: &[Hpa]) {
    memory.stage();
    for &hpa in lines {
        memory.reference(hpa, Requester::Data);
    }
    memory.end_stream();
}

/// `lines` as one stream served by a cache thread.
fn stream_threaded(memory: &mut MemoryHierarchy, lines: &[Hpa]) {
    let (levels, worker) = memory.detach();
    let cache = std::thread::spawn(move || worker.run(levels));
    for &hpa in lines {
        memory.reference(hpa, Requester::Data);
    }
    memory.hang_up();
    memory.attach(cache.join().expect("the cache thread serves every chunk"));
}

/// 5. Generating sysbench-mem's random accesses (`Workload::next_op` of the concrete type,
///    as the engine's monomorphized loop calls it), after skipping the set-up ops.
fn workload_next_op(c: &mut Criterion) {
    const N: usize = 4096;
    // `events` only keeps the stream from ending however long criterion runs; each event
    // is block/4 = 2^30 accesses drawn the same way.
    let spec = WorkloadSpec::parse("sysbench-mem:block=4G,events=1000").expect("a valid spec");
    let AnyWorkload::SysbenchMem(mut w) = spec.build(1).unwrap() else {
        panic!("sysbench-mem builds a SysbenchMem");
    };
    // Map, TouchPages, StartMeasurement: skipped, not simulated.
    loop {
        match w.next_op() {
            Some(Op::StartMeasurement) => break,
            Some(Op::Map { .. } | Op::TouchPages { .. }) => {}
            other => panic!("unexpected set-up op {other:?}"),
        }
    }
    assert!(matches!(w.next_op(), Some(Op::Access { .. })));

    let mut group = configure(c, "workload_next_op");
    group.throughput(Throughput::Elements(N as u64));
    group.bench_function("sysbench_mem_rnd_4g", |b| {
        b.iter(|| {
            for _ in 0..N {
                black_box(w.next_op());
            }
        })
    });
    group.finish();
    assert!(
        matches!(w.next_op(), Some(Op::Access { .. })),
        "the stream ran out"
    );
}

criterion_group!(
    benches,
    tlb_hit,
    walk,
    translation_cache,
    cache_hierarchy,
    workload_next_op
);
criterion_main!(benches);
