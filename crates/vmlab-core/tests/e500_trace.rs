//! The e500 trace reader: round trips with the writer on generated events, and clear errors
//! (never panics) on truncated, corrupted and foreign input.

use proptest::prelude::*;
use smallvec::SmallVec;
use vmlab_core::trace::e500::reader::decompress;
use vmlab_core::trace::e500::{Event, ExceptionKind, Header, Reader, Record, TraceError, Writer};

fn header() -> Header {
    Header {
        meta: "format=test\n".into(),
        system_map: "c0000000 T _stext\nc0400000 T _etext\n".into(),
        phases_text: "1\tnull_syscall\t10\n".into(),
    }
}

fn write(events: &[Event]) -> Vec<u8> {
    let mut w = Writer::new(Vec::new(), &header()).unwrap();
    for e in events {
        w.write(e).unwrap();
    }
    w.finish().unwrap()
}

fn read(bytes: &[u8]) -> Result<Vec<Event>, TraceError> {
    Reader::new(bytes)?.collect()
}

fn sample() -> Vec<Event> {
    let ev = |u, k, record| Event {
        user_insns: u,
        kernel_insns: k,
        record,
    };
    vec![
        ev(
            0,
            120,
            Record::Priv {
                pc: 0xC000_0010,
                word: 0x7C00_07A4,
                values: SmallVec::from_slice(&[0x1001_0000, 0xC000_0900, 0xC000_0000, 0x15, 0]),
                gprs_unknown: false,
            },
        ),
        ev(
            0,
            3,
            Record::Mem {
                pc: 0xC000_0014,
                vaddr: 0xC010_0000,
                paddr: 0x0010_0000,
                store: true,
                size_log2: 2,
                count: 1,
            },
        ),
        ev(
            0,
            7,
            Record::Mem {
                pc: 0xC000_0018,
                vaddr: 0xE100_0000,
                paddr: 0xF_E000_0000,
                store: false,
                size_log2: 0,
                count: 300,
            },
        ),
        ev(0, 1, Record::BootEnd { pc: 0x1000_0100 }),
        ev(40, 0, Record::Marker { id: 1 }),
        ev(
            5,
            0,
            Record::UserSyscall {
                pc: 0x1000_0200,
                number: 4,
            },
        ),
        ev(
            0,
            1,
            Record::Exception {
                kind: ExceptionKind::SYSCALL,
                by_branch: false,
                vector: 0xC000_2100,
                srr0: 0x1000_0204,
                srr1: 0x2_D000,
                dear: 0,
                esr: 0,
            },
        ),
        ev(
            0,
            90,
            Record::Exception {
                kind: ExceptionKind(2),
                by_branch: true,
                vector: 0xC000_2000,
                srr0: 0xC000_1234,
                srr1: 0x2_9000,
                dear: 0x1FFF_F000,
                esr: 0x80_0000,
            },
        ),
        ev(3, 0, Record::Marker { id: 0x8001 }),
    ]
}

#[test]
fn round_trip_of_a_hand_built_trace() {
    let events = sample();
    let bytes = write(&events);
    let mut reader = Reader::new(&bytes[..]).unwrap();
    assert_eq!(reader.header(), &header());
    assert_eq!(
        reader.header().kernel_text(),
        Some((0xC000_0000, 0xC040_0000))
    );
    let back: Vec<Event> = reader.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(back, events);
    let totals = reader.totals().unwrap();
    assert_eq!(
        (totals.records, totals.user_insns, totals.kernel_insns),
        (9, 48, 222)
    );
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = write(&sample());
    for len in 0..bytes.len() {
        let err = read(&bytes[..len]).expect_err("a truncated trace must not read");
        assert!(
            matches!(err, TraceError::Truncated(_) | TraceError::BadMagic),
            "length {len}: {err}"
        );
    }
}

#[test]
fn every_flipped_byte_is_an_error() {
    let bytes = write(&sample());
    for i in 0..bytes.len() {
        for bit in [0x01u8, 0x80] {
            let mut bad = bytes.clone();
            bad[i] ^= bit;
            assert!(
                read(&bad).is_err(),
                "flipping bit {bit:#x} of byte {i} went unnoticed"
            );
        }
    }
}

#[test]
fn foreign_input_and_other_versions_are_named() {
    assert!(matches!(read(b"#!/bin/sh\n"), Err(TraceError::BadMagic)));
    let mut bytes = write(&sample());
    bytes[8] = 2;
    let err = read(&bytes).unwrap_err();
    assert!(matches!(err, TraceError::Version(2)), "{err}");
    assert!(err.to_string().contains("version 2 is not supported"));
}

#[test]
fn data_after_the_end_record_is_an_error() {
    let mut bytes = write(&sample());
    bytes.push(0);
    let err = read(&bytes).unwrap_err();
    assert!(err.to_string().contains("after the end record"), "{err}");
}

#[test]
fn compressed_traces_read_and_truncated_ones_fail() {
    let raw = write(&sample());
    let z =
        ruzstd::encoding::compress_to_vec(&raw[..], ruzstd::encoding::CompressionLevel::Fastest);
    let events: Vec<Event> = Reader::new(decompress(&z[..]).unwrap())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(events, sample());
    for len in [z.len() / 2, z.len() - 1] {
        let r = decompress(&z[..len]).and_then(Reader::new);
        let failed = match r {
            Err(_) => true,
            Ok(reader) => reader.collect::<Result<Vec<_>, _>>().is_err(),
        };
        assert!(failed, "a zstd stream cut at {len} of {} read", z.len());
    }
}

fn record() -> impl Strategy<Value = Record> {
    prop_oneof![
        (
            any::<u32>(),
            any::<u32>(),
            prop::collection::vec(any::<u32>(), 0..=5),
            any::<bool>()
        )
            .prop_map(|(pc, word, v, gprs_unknown)| Record::Priv {
                pc,
                word,
                values: SmallVec::from_vec(v),
                gprs_unknown
            }),
        (any::<u32>(), any::<u32>()).prop_map(|(pc, number)| Record::UserSyscall { pc, number }),
        (0u8..0x80, any::<bool>(), any::<u32>(), any::<[u32; 4]>()).prop_map(|(k, b, v, r)| {
            Record::Exception {
                kind: ExceptionKind(k),
                by_branch: b,
                vector: v,
                srr0: r[0],
                srr1: r[1],
                dear: r[2],
                esr: r[3],
            }
        }),
        any::<u16>().prop_map(|id| Record::Marker { id }),
        any::<u32>().prop_map(|pc| Record::BootEnd { pc }),
        (
            any::<u32>(),
            any::<u32>(),
            0u64..(1 << 36),
            any::<bool>(),
            0u8..4,
            1u32..
        )
            .prop_map(|(pc, vaddr, paddr, store, size_log2, count)| Record::Mem {
                pc,
                vaddr,
                paddr,
                store,
                size_log2,
                count
            }),
    ]
}

proptest! {
    #[test]
    fn writer_and_reader_round_trip(
        events in prop::collection::vec(
            (0u64..1 << 40, 0u64..1 << 40, record())
                .prop_map(|(u, k, record)| Event { user_insns: u, kernel_insns: k, record }),
            0..200,
        )
    ) {
        let bytes = write(&events);
        let back = read(&bytes).unwrap();
        prop_assert_eq!(back, events);
    }
}
