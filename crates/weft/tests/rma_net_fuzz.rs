//! Property tests of the one-sided wire decoder: any bytes decode to a request, a request
//! for more bytes, or an error — never a panic — and a request never claims more bytes
//! than the input holds; encoded requests decode to themselves. Then a live service fed
//! valid heads with hostile offsets, lengths and PE numbers (so the body checks are reached),
//! against a model of what it must answer and write.

mod common;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use weft::rma::net::wire::{self, Decoded, Request};

proptest! {
    #[test]
    fn any_bytes_decode_safely(input in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut pos = 0;
        while pos < input.len() {
            match wire::decode_request(&input[pos..]) {
                Ok(Decoded::Request(r, n)) => {
                    prop_assert!(n >= wire::HEAD_BYTES && n <= input.len() - pos);
                    if let Request::Put { data, .. } = r {
                        prop_assert_eq!(n, wire::HEAD_BYTES + data.len());
                    }
                    pos += n;
                }
                Ok(Decoded::NeedBytes(n)) => {
                    prop_assert!(n > input.len() - pos);
                    prop_assert!(n <= wire::HEAD_BYTES + wire::MAX_PAYLOAD_BYTES);
                    break;
                }
                Err(_) => break,
            }
        }
    }

    #[test]
    fn heads_with_hostile_fields(op in 0u8..8, width in any::<u8>(), space in any::<u8>(), amo in any::<u8>(),
                                 len in any::<u32>(), offset in any::<u64>()) {
        let mut b = vec![op, width, space, amo];
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(&offset.to_le_bytes());
        b.extend_from_slice(&[0u8; 16]);
        match wire::decode_request(&b) {
            Ok(Decoded::Request(Request::Get { len: l, .. }, _)) => prop_assert!(l as usize <= wire::MAX_PAYLOAD_BYTES),
            Ok(Decoded::Request(Request::Amo { width: w, .. }, _)) => prop_assert!(w == 4 || w == 8),
            Ok(Decoded::NeedBytes(n)) => prop_assert!(n <= wire::HEAD_BYTES + wire::MAX_PAYLOAD_BYTES),
            _ => {}
        }
    }

    #[test]
    fn puts_round_trip(offset in any::<u64>(), data in proptest::collection::vec(any::<u8>(), 0..300),
                       more in proptest::collection::vec(any::<u8>(), 0..50)) {
        let mut b = Vec::new();
        wire::put_head(&mut b, wire::SPACE_HEAP, offset, data.len() as u32);
        b.extend_from_slice(&data);
        wire::grow_put(&mut b, 0, more.len() as u32);
        b.extend_from_slice(&more);
        let mut all = data.clone();
        all.extend_from_slice(&more);
        match wire::decode_request(&b).unwrap() {
            Decoded::Request(Request::Put { space, offset: o, data: d }, n) => {
                prop_assert_eq!(space, wire::SPACE_HEAP);
                prop_assert_eq!(o, offset);
                prop_assert_eq!(d, &all[..]);
                prop_assert_eq!(n, b.len());
            }
            other => prop_assert!(false, "{:?}", other),
        }
    }
}

/// A request the live-service fuzz sends: a valid head (known op, width, space and atomic
/// kind) with hostile offsets and lengths, so every request reaches the service's body
/// checks (`Memory::locate`, alignment) instead of stopping at the decoder.
#[derive(Clone, Debug)]
enum Fuzz {
    Put {
        image: bool,
        offset: u64,
        len: usize,
        byte: u8,
    },
    Get {
        image: bool,
        offset: u64,
        len: u32,
    },
    Amo {
        offset: u64,
        width: u8,
        kind: u8,
        a: u64,
        b: u64,
        reply: bool,
    },
    Sync,
}

const FUZZ_HEAP_BYTES: usize = 1 << 20;

/// Offsets at the heap's end (inside, straddling, just past), anywhere in it, near 2^64
/// (where offset + length overflows), anywhere at all.
fn hostile_offset(len: u64) -> impl Strategy<Value = u64> {
    let heap = FUZZ_HEAP_BYTES as u64;
    prop_oneof![
        (0u64..24).prop_map(move |d| (heap + 8).saturating_sub(len).saturating_sub(d)),
        0..heap,
        (0u64..64).prop_map(|d| u64::MAX - d),
        any::<u64>(),
    ]
}

fn fuzz_request() -> impl Strategy<Value = Fuzz> {
    let len = prop_oneof![8 => 0usize..48, 1 => Just(wire::MAX_PAYLOAD_BYTES)];
    prop_oneof![
        4 => (len.clone(), any::<u8>(), any::<bool>()).prop_flat_map(|(len, byte, image)| {
            hostile_offset(len as u64).prop_map(move |offset| Fuzz::Put {
                // Image offsets only far beyond any executable: the rank threads share this
                // process, whose globals a legal image put would overwrite.
                image,
                offset: if image { offset | 1 << 44 } else { offset },
                len,
                byte,
            })
        }),
        3 => (len, any::<bool>()).prop_flat_map(|(len, image)| {
            hostile_offset(len as u64).prop_map(move |offset| Fuzz::Get {
                image,
                offset: if image { offset | 1 << 44 } else { offset },
                len: len as u32,
            })
        }),
        3 => (prop_oneof![Just(4u8), Just(8u8)], 0u8..8, any::<u64>(), any::<u64>(), any::<bool>())
            .prop_flat_map(|(width, kind, a, b, reply)| {
                // Word offsets: mostly aligned, some not.
                hostile_offset(width as u64).prop_map(move |o| Fuzz::Amo {
                    offset: if kind % 3 == 0 { o } else { o & !7 },
                    width,
                    kind,
                    a,
                    b,
                    reply,
                })
            }),
        1 => Just(Fuzz::Sync),
    ]
}

const AMOS: [wire::Amo; 8] = [
    wire::Amo::Fetch,
    wire::Amo::Set,
    wire::Amo::Swap,
    wire::Amo::CompareSwap,
    wire::Amo::Add,
    wire::Amo::And,
    wire::Amo::Or,
    wire::Amo::Xor,
];

/// The service's rules applied to a copy of the heap: what each reply must be.
struct Model {
    heap: Vec<u8>,
    deferred: bool,
}

/// An expected reply: Err(()) for an error, else the value and the data.
type Expected = std::result::Result<(u64, Vec<u8>), ()>;

impl Model {
    fn range(&self, image: bool, offset: u64, len: u64) -> Option<usize> {
        let end = offset.checked_add(len)?;
        (!image && end <= self.heap.len() as u64).then_some(offset as usize)
    }

    fn apply(&mut self, r: &Fuzz) -> Option<Expected> {
        match *r {
            Fuzz::Put {
                image,
                offset,
                len,
                byte,
            } => {
                match self.range(image, offset, len as u64) {
                    Some(o) => self.heap[o..o + len].fill(byte),
                    None => self.deferred = true,
                }
                None
            }
            Fuzz::Get { image, offset, len } => Some(if std::mem::take(&mut self.deferred) {
                Err(())
            } else {
                match self.range(image, offset, len as u64) {
                    Some(o) => Ok((0, self.heap[o..o + len as usize].to_vec())),
                    None => Err(()),
                }
            }),
            Fuzz::Amo {
                offset,
                width,
                kind,
                a,
                b,
                reply,
            } => {
                let old = match self.range(false, offset, width as u64) {
                    Some(o) if o % width as usize == 0 => {
                        let w = width as usize;
                        let mut bytes = [0u8; 8];
                        bytes[..w].copy_from_slice(&self.heap[o..o + w]);
                        let old = u64::from_le_bytes(bytes);
                        let mask = if w == 4 { u32::MAX as u64 } else { u64::MAX };
                        let (a, b) = (a & mask, b & mask);
                        let new = match AMOS[kind as usize] {
                            wire::Amo::Fetch => old,
                            wire::Amo::Set | wire::Amo::Swap => a,
                            wire::Amo::CompareSwap => {
                                if old == a {
                                    b
                                } else {
                                    old
                                }
                            }
                            wire::Amo::Add => old.wrapping_add(a) & mask,
                            wire::Amo::And => old & a,
                            wire::Amo::Or => old | a,
                            wire::Amo::Xor => old ^ a,
                        };
                        self.heap[o..o + w].copy_from_slice(&new.to_le_bytes()[..w]);
                        Some(old)
                    }
                    _ => None,
                };
                match (old, reply) {
                    (_, true) if std::mem::take(&mut self.deferred) => Some(Err(())),
                    (Some(v), true) => Some(Ok((v, Vec::new()))),
                    (None, true) => Some(Err(())),
                    (None, false) => {
                        self.deferred = true;
                        None
                    }
                    (Some(_), false) => None,
                }
            }
            Fuzz::Sync => Some(if std::mem::take(&mut self.deferred) {
                Err(())
            } else {
                Ok((0, Vec::new()))
            }),
        }
    }
}

fn encode(r: &Fuzz, out: &mut Vec<u8>) {
    let space = |image: bool| {
        if image {
            wire::SPACE_IMAGE
        } else {
            wire::SPACE_HEAP
        }
    };
    match *r {
        Fuzz::Put {
            image,
            offset,
            len,
            byte,
        } => {
            wire::put_head(out, space(image), offset, len as u32);
            out.resize(out.len() + len, byte);
        }
        Fuzz::Get { image, offset, len } => wire::get(out, space(image), offset, len),
        Fuzz::Amo {
            offset,
            width,
            kind,
            a,
            b,
            reply,
        } => wire::amo(
            out,
            wire::SPACE_HEAP,
            offset,
            width,
            AMOS[kind as usize],
            a,
            b,
            reply,
        ),
        Fuzz::Sync => wire::sync(out),
    }
}

fn read_reply(s: &mut std::net::TcpStream) -> (bool, Vec<u8>, u64) {
    use std::io::Read;
    let mut h = [0u8; wire::REPLY_HEAD_BYTES];
    s.read_exact(&mut h).unwrap();
    let (failed, len, value) = wire::decode_reply_head(&h, wire::MAX_PAYLOAD_BYTES).unwrap();
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    (failed, body, value)
}

/// A live service (PE 1, on another node than PE 0) fed batches of valid-headed requests
/// with hostile offsets and lengths by an authenticated job member: every reply is what a
/// model of the service's rules predicts (errors for what lies outside the heap or the
/// executable, deferred to the next reply for puts and quiet atomics; data and old values
/// otherwise), and a whole-heap get at the end of each batch matches the model byte for
/// byte, so nothing outside the checks was written. Hellos with hostile PE numbers are
/// dropped before anything is applied.
#[test]
fn a_live_service_applies_exactly_what_its_checks_allow() {
    use std::io::{Read, Write};
    use std::time::Duration;
    use weft_transport::tcp::handshake;
    common::run_job(
        2,
        &[],
        |r| r,
        |_, weft, store| {
            let h = weft::rma::SymmetricHeap::with_size(&weft, FUZZ_HEAP_BYTES).unwrap();
            let world = weft.world();
            if h.pe() == 1 {
                let port = h.service_port().expect("PEs on two nodes: a service");
                weft_boot::Store::put(&**store, "fuzz/port", port.to_string().as_bytes()).unwrap();
            }
            assert_eq!(h.heap_bytes(), FUZZ_HEAP_BYTES);
            if h.pe() == 0 {
                let get =
                    |k: &str| weft_boot::Store::get(&**store, k, Duration::from_secs(10)).unwrap();
                let port: u16 = String::from_utf8_lossy(&get("fuzz/port")).parse().unwrap();
                let mut key = weft_boot::auth::decode_hex(
                    "tcp/key",
                    &String::from_utf8_lossy(&get("tcp-key/0")),
                )
                .unwrap();
                key.extend_from_slice(b"/weft-rma");
                let connect = || {
                    let s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
                    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                    s
                };
                // Hostile PE numbers in the hello: the claimed sender beyond the job, and the
                // target another PE than the service's. Both are dropped unanswered.
                for (from, to) in [(7u32, 1u32), (u32::MAX, 1), (0, 0), (0, 9)] {
                    let mut s = connect();
                    let nc = handshake::nonce().unwrap();
                    s.write_all(&handshake::hello(from, to, &nc)).unwrap();
                    let mut b = [0u8; 64];
                    match s.read(&mut b) {
                        Ok(0) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
                        other => panic!("hello from {from} to {to}: {other:?} instead of a close"),
                    }
                }
                let mut s = connect();
                let nc = handshake::nonce().unwrap();
                s.write_all(&handshake::hello(0, 1, &nc)).unwrap();
                let mut ch = [0u8; handshake::CHALLENGE_BYTES];
                s.read_exact(&mut ch).unwrap();
                let na = handshake::check_challenge(&key, 0, 1, &nc, &ch).unwrap();
                s.write_all(&handshake::proof(&key, 0, 1, &nc, &na))
                    .unwrap();
                let mut whole = Vec::new();
                wire::get(&mut whole, wire::SPACE_HEAP, 0, FUZZ_HEAP_BYTES as u32);
                s.write_all(&whole).unwrap();
                let (failed, heap, _) = read_reply(&mut s);
                assert!(!failed);
                let mut model = Model {
                    heap,
                    deferred: false,
                };
                let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
                    cases: 48,
                    ..ProptestConfig::default()
                });
                let batch = proptest::collection::vec(fuzz_request(), 1..24);
                for _ in 0..48 {
                    let reqs = batch.new_tree(&mut runner).unwrap().current();
                    let mut out = Vec::new();
                    let mut expected = Vec::new();
                    for r in &reqs {
                        encode(r, &mut out);
                        if let Some(e) = model.apply(r) {
                            expected.push((r.clone(), e));
                        }
                    }
                    // A sync collects any deferred error; then the whole heap.
                    for r in [
                        Fuzz::Sync,
                        Fuzz::Get {
                            image: false,
                            offset: 0,
                            len: FUZZ_HEAP_BYTES as u32,
                        },
                    ] {
                        encode(&r, &mut out);
                        let e = model.apply(&r).unwrap();
                        expected.push((r, e));
                    }
                    // Written by another thread while this one reads: the service stops reading
                    // while megabytes of answers wait, so writing everything first could block.
                    let mut w = s.try_clone().unwrap();
                    let writer = std::thread::spawn(move || w.write_all(&out).unwrap());
                    for (r, e) in expected {
                        let (failed, data, value) = read_reply(&mut s);
                        match e {
                            Err(()) => assert!(failed, "{r:?}: expected an error"),
                            Ok((v, d)) => {
                                assert!(!failed, "{r:?}: {}", String::from_utf8_lossy(&data));
                                assert_eq!(value, v, "{r:?}");
                                assert!(data == d, "{r:?}: data differ from the model");
                            }
                        }
                    }
                    writer.join().unwrap();
                }
            }
            world.barrier().unwrap();
            drop(h);
            weft.finalize().unwrap();
        },
    );
}
