//! The one-sided service as a stranger and as a misbehaving job member see it: a connection
//! that does not prove the job key is dropped and nothing it sent is applied (the job goes
//! on), and silent ones beyond a cap are evicted oldest first; an authenticated connection's put or get with an offset outside the heap is answered
//! with an error, never applied; a frame the decoder rejects closes the connection.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use weft::rma::net::wire;
use weft::rma::SymmetricHeap;
use weft_transport::tcp::handshake;

const HEAP_BYTES: usize = 1 << 20;

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    // A hang catcher: the service's handshake timeout is an hour here (see the test), so
    // what closes a connection is the refusal each case checks, however loaded the machine.
    s.set_read_timeout(Some(common::STEP_WAIT)).unwrap();
    s
}

/// Reads until the service closes the connection; true if it did (no answer bytes).
fn closed_without_answer(s: &mut TcpStream, answer_bytes_allowed: usize) -> bool {
    let mut all = Vec::new();
    let mut b = [0u8; 256];
    loop {
        match s.read(&mut b) {
            Ok(0) => return all.len() <= answer_bytes_allowed,
            Ok(n) => all.extend_from_slice(&b[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

fn authenticated(port: u16, key: &[u8], me: u32, pe: u32) -> TcpStream {
    let mut s = connect(port);
    let nc = handshake::nonce().unwrap();
    s.write_all(&handshake::hello(me, pe, &nc)).unwrap();
    let mut ch = [0u8; handshake::CHALLENGE_BYTES];
    s.read_exact(&mut ch).unwrap();
    let na = handshake::check_challenge(key, me, pe, &nc, &ch).unwrap();
    s.write_all(&handshake::proof(key, me, pe, &nc, &na))
        .unwrap();
    s
}

fn read_reply(s: &mut TcpStream) -> (bool, Vec<u8>, u64) {
    let mut h = [0u8; wire::REPLY_HEAD_BYTES];
    s.read_exact(&mut h).unwrap();
    let (failed, len, value) = wire::decode_reply_head(&h, 1 << 20).unwrap();
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    (failed, body, value)
}

#[test]
fn strangers_are_refused_and_bad_offsets_rejected() {
    // The 10 s handshake timeout would close every stranger sooner or later: with an hour,
    // only the refusals and the eviction checked below can.
    weft::rma::net::set_service_handshake_timeout(Duration::from_secs(3600));
    common::run_job(
        2,
        &[],
        |r| r,
        |_, weft, store| {
            let h = SymmetricHeap::with_size(&weft, HEAP_BYTES).unwrap();
            let world = weft.world();
            let base = h.base() as u64;
            let word = base + h.malloc(64).unwrap() as u64;
            world.barrier().unwrap();
            if h.pe() == 1 {
                let port = h.service_port().expect("PEs on two nodes: a service");
                // 1. Garbage instead of a hello.
                let mut s = connect(port);
                s.write_all(&[0x55u8; handshake::HELLO_BYTES + 100])
                    .unwrap();
                assert!(closed_without_answer(&mut s, 0), "garbage hello");
                // 2. A well-formed hello, then a proof made with the wrong key, then a put frame.
                let mut s = connect(port);
                let nc = handshake::nonce().unwrap();
                s.write_all(&handshake::hello(0, 1, &nc)).unwrap();
                let mut ch = [0u8; handshake::CHALLENGE_BYTES];
                s.read_exact(&mut ch).unwrap();
                let wrong = [9u8; 32];
                assert!(
                    handshake::check_challenge(&wrong, 0, 1, &nc, &ch).is_err(),
                    "the service proved a key we do not hold"
                );
                let na: [u8; handshake::NONCE_BYTES] =
                    ch[8..8 + handshake::NONCE_BYTES].try_into().unwrap();
                s.write_all(&handshake::proof(&wrong, 0, 1, &nc, &na))
                    .unwrap();
                let mut put = Vec::new();
                let off = word - base;
                wire::put_head(&mut put, wire::SPACE_HEAP, off, 8);
                put.extend_from_slice(&0xdead_beefu64.to_ne_bytes());
                let _ = s.write_all(&put);
                assert!(closed_without_answer(&mut s, 0), "wrong proof");
                // SAFETY: our own heap word; the stranger's put must not have landed.
                assert_eq!(unsafe { *(word as *const u64) }, 0);
                // 3. A hello addressed to another PE.
                let mut s = connect(port);
                s.write_all(&handshake::hello(0, 0, &nc)).unwrap();
                assert!(
                    closed_without_answer(&mut s, 0),
                    "hello for PE 0 at PE 1's port"
                );
                // 4. More silent strangers than the service keeps unproven (64): the oldest
                // are evicted (refused), so strangers cannot take every descriptor.
                let mut silent: Vec<TcpStream> = (0..70).map(|_| connect(port)).collect();
                assert!(
                    closed_without_answer(&mut silent[0], 0),
                    "the oldest silent stranger was not evicted"
                );
                let deadline = std::time::Instant::now() + common::STEP_WAIT;
                while h.refused_connections() < 3 + 6 {
                    assert!(
                        std::time::Instant::now() < deadline,
                        "refused {}",
                        h.refused_connections()
                    );
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            world.barrier().unwrap();
            if h.pe() == 0 {
                // The job goes on: a real put and get to PE 1.
                h.put(1, word, &42u64.to_ne_bytes()).unwrap();
                let mut v = [0u8; 8];
                h.get(1, word, &mut v).unwrap();
                assert_eq!(u64::from_ne_bytes(v), 42);
            }
            world.barrier().unwrap();
            if h.pe() == 0 {
                // A job member (holding the key) sends offsets outside PE 1's heap.
                let hex =
                    weft_boot::Store::get(&**store, "tcp-key/0", Duration::from_secs(5)).unwrap();
                let mut key =
                    weft_boot::auth::decode_hex("tcp-key/0", &String::from_utf8_lossy(&hex))
                        .unwrap();
                key.extend_from_slice(b"/weft-rma");
                let port: u16 = {
                    let rec =
                        weft_boot::Store::get(&**store, "rma/heap1/1", Duration::from_secs(5))
                            .unwrap();
                    let rec = String::from_utf8_lossy(&rec).into_owned();
                    let first = rec
                        .split(';')
                        .nth(1)
                        .unwrap()
                        .split(',')
                        .next()
                        .unwrap()
                        .to_owned();
                    first.rsplit(':').next().unwrap().parse().unwrap()
                };
                let mut s = authenticated(port, &key, 0, 1);
                let mut b = Vec::new();
                wire::put_head(&mut b, wire::SPACE_HEAP, HEAP_BYTES as u64 - 4, 8);
                b.extend_from_slice(&[0xffu8; 8]);
                wire::put_head(&mut b, wire::SPACE_HEAP, u64::MAX - 3, 8);
                b.extend_from_slice(&[0xffu8; 8]);
                wire::sync(&mut b);
                wire::get(&mut b, wire::SPACE_HEAP, HEAP_BYTES as u64, 1);
                wire::amo(
                    &mut b,
                    wire::SPACE_HEAP,
                    word - base + 4,
                    8,
                    wire::Amo::Add,
                    1,
                    0,
                    true,
                );
                wire::get(&mut b, wire::SPACE_IMAGE, u64::MAX / 2, 8);
                wire::get(&mut b, wire::SPACE_HEAP, word - base, 8);
                s.write_all(&b).unwrap();
                let (failed, text, _) = read_reply(&mut s);
                let text = String::from_utf8_lossy(&text);
                assert!(
                    failed && text.contains("past") && text.contains("put rejected"),
                    "{text}"
                );
                let (failed, text, _) = read_reply(&mut s);
                assert!(failed && String::from_utf8_lossy(&text).contains("get rejected"));
                let (failed, text, _) = read_reply(&mut s);
                assert!(failed && String::from_utf8_lossy(&text).contains("aligned"));
                let (failed, text, _) = read_reply(&mut s);
                assert!(failed && String::from_utf8_lossy(&text).contains("not a global"));
                let (failed, data, _) = read_reply(&mut s);
                assert!(!failed);
                assert_eq!(
                    u64::from_ne_bytes(data.try_into().unwrap()),
                    42,
                    "the connection still works"
                );
                // A frame the decoder rejects closes the connection.
                let mut b = Vec::new();
                wire::get(&mut b, wire::SPACE_HEAP, 0, u32::MAX);
                s.write_all(&b).unwrap();
                assert!(closed_without_answer(&mut s, 0), "oversized get");
            }
            world.barrier().unwrap();
        },
    );
}
