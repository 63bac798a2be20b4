//! Two or three TCP endpoints in one thread over loopback: lazy connection on first send,
//! frames in order both ways (including simultaneous connects), a connection with the wrong
//! key refused without disturbing the others, and a closed peer reported as lost.

mod tcp_common;

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpStream};
use weft_transport::shm::Header;
use weft_transport::tcp::frame::{Limits, KIND_EAGER, KIND_FRAG};
use weft_transport::tcp::{handshake, Endpoint, TcpConfig};

const LIMITS: Limits = Limits {
    eager_bytes: 64 * 1024,
    fragment_bytes: 256 * 1024,
};

fn endpoints(n: u32, key: &[u8]) -> Vec<Endpoint> {
    endpoints_with_rails(n, key, 1)
}

fn endpoints_with_rails(n: u32, key: &[u8], rails: u32) -> Vec<Endpoint> {
    tcp_common::loopback_endpoints(n, key, LIMITS, rails)
}

type Got = Vec<(u32, Header, Vec<u8>)>;

fn pump(eps: &mut [Endpoint], got: &mut [Got]) {
    for (i, ep) in eps.iter_mut().enumerate() {
        ep.poll(|peer, h, body| got[i].push((peer, *h, body.to_vec())));
    }
}

fn send_all(eps: &mut [Endpoint], got: &mut [Got], from: usize, to: u32, h: &Header, body: &[u8]) {
    for _ in 0..1_000_000 {
        if eps[from].try_send(to, h, &[body]) {
            return;
        }
        pump(eps, got);
    }
    panic!("send from {from} to {to} never went out");
}

fn eager(tag: i32, len: usize) -> (Header, Vec<u8>) {
    let body: Vec<u8> = (0..len).map(|i| (i as i32 * 7 + tag) as u8).collect();
    let h = Header {
        kind: KIND_EAGER,
        tag,
        len: len as u32,
        ..Header::default()
    };
    (h, body)
}

#[test]
fn frames_flow_both_ways_in_order_even_when_both_connect_at_once() {
    let mut eps = endpoints(2, &[3u8; 32]);
    let mut got: Vec<Got> = vec![Vec::new(), Vec::new()];
    assert_eq!(eps[0].connection_count(), 0, "connections are made lazily");
    // Both sides start sending before either connection exists.
    let mut sent = [Vec::new(), Vec::new()];
    for i in 0..200 {
        for from in 0..2usize {
            let (h, body) = eager(i, (i as usize * 331) % 70_000 % (64 * 1024));
            send_all(&mut eps, &mut got, from, 1 - from as u32, &h, &body);
            sent[1 - from].push((from as u32, h, body));
        }
    }
    // A large fragment goes out with a partial write and the rest buffered.
    let big = vec![0x5Au8; 256 * 1024];
    let hf = Header {
        kind: KIND_FRAG,
        len: big.len() as u32,
        aux: 9,
        ..Header::default()
    };
    send_all(&mut eps, &mut got, 0, 1, &hf, &big);
    sent[1].push((0, hf, big));
    for _ in 0..100_000 {
        if got[0].len() == sent[0].len() && got[1].len() == sent[1].len() {
            break;
        }
        pump(&mut eps, &mut got);
    }
    assert_eq!(got[0], sent[0]);
    assert_eq!(got[1], sent[1]);
    assert!(eps[0].take_lost().is_empty());
}

#[test]
fn wrong_key_is_refused_and_the_job_continues() {
    let mut eps = endpoints(2, &[3u8; 32]);
    let mut got: Vec<Got> = vec![Vec::new(), Vec::new()];
    let addr = eps[1].addresses()[0];
    // An intruder with a wrong key claims to be rank 0.
    let nonce = handshake::nonce().unwrap();
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&handshake::hello(0, 1, &nonce)).unwrap();
    let mut challenge = [0u8; handshake::CHALLENGE_BYTES];
    let start = std::time::Instant::now();
    let mut have = 0;
    s.set_nonblocking(true).unwrap();
    while have < challenge.len() && start.elapsed().as_secs() < 60 {
        pump(&mut eps, &mut got);
        if let Ok(n) = s.read(&mut challenge[have..]) {
            have += n;
        }
    }
    assert_eq!(have, challenge.len());
    assert!(handshake::check_challenge(&[9u8; 32], 0, 1, &nonce, &challenge).is_err());
    // It forges a proof and then sends a frame that would be delivered if interpreted.
    let nonce_a: [u8; 32] = challenge[8..40].try_into().unwrap();
    s.write_all(&handshake::proof(&[9u8; 32], 0, 1, &nonce, &nonce_a))
        .unwrap();
    let (h, body) = eager(77, 5);
    s.write_all(&weft_transport::tcp::frame::encode_header(&h))
        .unwrap();
    s.write_all(&body).unwrap();
    // A connection that sends garbage instead of a hello.
    let mut g = TcpStream::connect(addr).unwrap();
    g.write_all(&[0xFFu8; handshake::HELLO_BYTES]).unwrap();
    for _ in 0..10_000 {
        pump(&mut eps, &mut got);
        if eps[1].refused_count() == 2 {
            break;
        }
    }
    assert_eq!(eps[1].refused_count(), 2);
    assert!(
        got[1].is_empty(),
        "a frame of an unproven connection was delivered"
    );
    assert!(
        eps[1].take_lost().is_empty(),
        "refusal must not mark rank 0 dead"
    );
    // The real rank 0 still gets through.
    let (h, body) = eager(5, 100);
    send_all(&mut eps, &mut got, 0, 1, &h, &body);
    for _ in 0..100_000 {
        if !got[1].is_empty() {
            break;
        }
        pump(&mut eps, &mut got);
    }
    assert_eq!(got[1], vec![(0, h, body)]);
}

#[test]
fn a_closed_peer_is_reported_lost() {
    let mut eps = endpoints(3, &[4u8; 32]);
    let mut got: Vec<Got> = vec![Vec::new(), Vec::new(), Vec::new()];
    let (h, body) = eager(1, 10);
    send_all(&mut eps, &mut got, 0, 2, &h, &body);
    for _ in 0..100_000 {
        if !got[2].is_empty() {
            break;
        }
        pump(&mut eps, &mut got);
    }
    drop(eps.pop());
    let mut lost = Vec::new();
    for _ in 0..100_000 {
        pump(&mut eps, &mut got);
        lost.extend(eps[0].take_lost());
        if !lost.is_empty() {
            break;
        }
    }
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert_eq!(lost[0].0, 2);
    assert!(lost[0].1.contains("rank 2"), "{}", lost[0].1);
    assert!(eps[0].is_dead(2));
    // A rank that never listened (its port is closed) is reported unreachable.
    let mut eps2 = endpoints(2, &[4u8; 32]);
    drop(eps2.pop());
    let (h, body) = eager(1, 1);
    assert!(!eps2[0].try_send(1, &h, &[&body]));
    for _ in 0..100_000 {
        eps2[0].poll(|_, _, _| {});
        if eps2[0].is_dead(1) {
            break;
        }
    }
    let lost = eps2[0].take_lost();
    assert_eq!(lost.len(), 1);
    assert!(
        lost[0].1.contains("could not reach rank 1"),
        "{}",
        lost[0].1
    );
}

#[test]
fn fragments_are_striped_over_extra_rails() {
    let mut eps = endpoints_with_rails(2, &[5u8; 32], 3);
    let mut got: Vec<Got> = vec![Vec::new(), Vec::new()];
    // The main connection first (rails open with the first fragment).
    let (h, body) = eager(1, 10);
    send_all(&mut eps, &mut got, 0, 1, &h, &body);
    let mut sent = vec![(0u32, h, body)];
    let chunk = vec![0xC3u8; 200_000];
    for i in 0..60u32 {
        let h = Header {
            kind: KIND_FRAG,
            len: chunk.len() as u32,
            aux: 7,
            ctx: i,
            ..Header::default()
        };
        send_all(&mut eps, &mut got, 0, 1, &h, &chunk);
        sent.push((0, h, chunk.clone()));
        // Let the rails opened by the first fragment finish their handshakes.
        for _ in 0..20 {
            pump(&mut eps, &mut got);
        }
    }
    for _ in 0..1_000_000 {
        if got[1].len() == sent.len() {
            break;
        }
        pump(&mut eps, &mut got);
    }
    // Rails may reorder fragments among themselves, never lose or change one.
    let key = |x: &(u32, Header, Vec<u8>)| (x.1.kind, x.1.ctx);
    got[1].sort_by_key(key);
    sent.sort_by_key(key);
    assert_eq!(got[1], sent);
    assert!(
        eps[0].striped_count() > 0,
        "no fragment went over an extra rail"
    );
    assert!(eps[0].take_lost().is_empty() && eps[1].take_lost().is_empty());
}

/// Rank 0 stripes fragments to rank 1 over two rails whose lanes are the local addresses
/// `sources`; rank 1 published `published` (its port filled in). Returns the (local,
/// remote) address pair of each of rank 0's connections to rank 1, main connection first.
fn rails_over(sources: &[Ipv4Addr], published: &[Ipv4Addr]) -> Vec<(IpAddr, IpAddr)> {
    let mut eps: Vec<Endpoint> = (0..2u32)
        .map(|rank| {
            Endpoint::bind(TcpConfig {
                rank,
                size: 2,
                key: vec![6u8; 32],
                limits: LIMITS,
                bind_ip: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                interfaces: Vec::new(),
                small_fragment_bytes: 32 * 1024,
                max_fast_peers: 1,
                fast_after_bytes: 1 << 20,
                rails: 2,
                rail_sources: sources.iter().map(|&ip| IpAddr::V4(ip)).collect(),
            })
            .unwrap()
        })
        .collect();
    for r in 0..2usize {
        let port = eps[r].addresses()[0].port();
        let mut addrs: Vec<std::net::SocketAddr> =
            published.iter().map(|&ip| (ip, port).into()).collect();
        // As the runtime does: the main connection's lane first.
        if let Some(&src) = sources.first() {
            weft_transport::tcp::order_for_source(&mut addrs, IpAddr::V4(src));
        }
        eps[1 - r].set_peer_addresses(r as u32, addrs);
    }
    let mut got: Vec<Got> = vec![Vec::new(), Vec::new()];
    let chunk = vec![0x3Cu8; 100_000];
    for i in 0..20u32 {
        let h = Header {
            kind: KIND_FRAG,
            len: chunk.len() as u32,
            aux: 7,
            ctx: i,
            ..Header::default()
        };
        send_all(&mut eps, &mut got, 0, 1, &h, &chunk);
        for _ in 0..20 {
            pump(&mut eps, &mut got);
        }
    }
    for _ in 0..1_000_000 {
        if got[1].len() == 20 {
            break;
        }
        pump(&mut eps, &mut got);
    }
    assert_eq!(got[1].len(), 20, "fragments lost");
    eps[0]
        .rail_addresses(1)
        .into_iter()
        .map(|(l, r)| (l.ip(), r.ip()))
        .collect()
}

#[test]
fn each_rail_leaves_by_its_own_lane_whatever_order_the_peer_published() {
    // Two "interfaces" on loopback (127.0.0.0/8 is all local): the peer publishes them in the
    // opposite order of the lane choice.
    let (a, b) = (Ipv4Addr::new(127, 0, 0, 1), Ipv4Addr::new(127, 0, 1, 1));
    let conns = rails_over(&[a, b], &[b, a]);
    assert_eq!(
        conns,
        vec![
            (IpAddr::V4(a), IpAddr::V4(a)),
            (IpAddr::V4(b), IpAddr::V4(b))
        ],
        "main connection on lane {a}, rail 1 on lane {b}"
    );
    // Without lanes to follow, the kernel picks the source: both leave from one address, which
    // is what the lanes prevent (on real hosts: one NIC carrying both rails).
    let conns = rails_over(&[], &[b, a]);
    assert_eq!(conns.len(), 2);
    assert_eq!(conns[0].0, conns[1].0, "{conns:?}");
}
