//! TCP as a [`Transport`]: one lane per IPv4 interface that is up (`WEFT_TCP_IFACES` picks
//! some), and the endpoint ([`TcpLink`] over an [`Endpoint`]) for the peers the lane choice
//! gave it.
//!
//! A NIC's bandwidth is what the machine reports (`/sys/class/net/IF/speed`, shared by the
//! node's processes), its latency and overhead the defaults below; loopback is a memory copy
//! through the kernel (dedicated to each process). The loopback probe (at first use, when
//! asked for) times a ping-pong and a stream over a loopback connection in this process.

use super::link::TcpLink;
use super::{frame, interface_names, local_addresses, order_for_source, parse_addresses};
use super::{Endpoint, TcpConfig};
use crate::net::NetEndpoint;
use crate::transport::{
    Capabilities, Costs, Job, Lane, LaneQuery, Opening, Origin, Reach, Transport,
};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpListener, TcpStream};
use std::sync::OnceLock;
use std::time::Instant;
use weft_core::Result;

/// A NIC lane's defaults: a small message's one-way time through two kernels' stacks and a
/// switch, the per-message system calls, and 10 Gbit/s when the NIC does not say.
const NIC_DEFAULT: Costs = Costs {
    latency_ns: 25_000.0,
    overhead_ns: 2_000.0,
    dedicated_bytes_per_s: 0.0,
    shared_bytes_per_s: 10e9 / 8.0,
    registration_ns_per_byte: 0.0,
};

/// Loopback's defaults: one kernel's stack, a memory copy's bandwidth through the kernel.
const LOOPBACK_DEFAULT: Costs = Costs {
    latency_ns: 12_000.0,
    overhead_ns: 2_000.0,
    dedicated_bytes_per_s: 3e9,
    shared_bytes_per_s: 0.0,
    registration_ns_per_byte: 0.0,
};

/// Round trips and bytes of the loopback probe.
const PROBE_ROUND_TRIPS: u32 = 200;
const PROBE_STREAM_BYTES: usize = 16 << 20;

/// The TCP transport.
pub struct Tcp;
pub static TCP: Tcp = Tcp;

/// The interfaces TCP would publish, following `WEFT_TCP_IFACES`, with their addresses.
pub fn interfaces(q: &LaneQuery) -> Result<Vec<(String, IpAddr)>> {
    let only: Vec<String> = q
        .values
        .text("WEFT_TCP_IFACES")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let ips = local_addresses(&only)?;
    let names = interface_names();
    Ok(ips
        .into_iter()
        .map(|ip| {
            let name = names
                .iter()
                .find(|(_, a)| *a == ip)
                .map(|(n, _)| n.clone())
                .unwrap_or_else(|| ip.to_string());
            (name, ip)
        })
        .collect())
}

/// The speed a NIC reports, in bytes per second.
pub fn nic_bytes_per_s(iface: &str) -> Option<f64> {
    std::fs::read_to_string(format!("/sys/class/net/{iface}/speed"))
        .ok()
        .and_then(|t| t.trim().parse::<f64>().ok())
        .filter(|&s| s > 0.0)
        .map(|mbit| mbit * 1e6 / 8.0)
}

/// Whether the device behind `iface` is on this process's NUMA node (None: unknown).
pub fn numa_near(iface: &str) -> Option<bool> {
    let numa = std::fs::read_to_string(format!("/sys/class/net/{iface}/device/numa_node"))
        .ok()
        .and_then(|t| t.trim().parse::<i64>().ok())
        .filter(|&n| n >= 0)?;
    Some(numa == current_numa_node()?)
}

/// The NUMA node of the CPU this process runs on, when the machine says.
pub fn current_numa_node() -> Option<i64> {
    // SAFETY: sched_getcpu takes no arguments.
    let cpu = unsafe { libc::sched_getcpu() };
    if cpu < 0 {
        return None;
    }
    let dir = std::fs::read_dir(format!("/sys/devices/system/cpu/cpu{cpu}")).ok()?;
    dir.filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_string_lossy()
                .strip_prefix("node")?
                .parse()
                .ok()
        })
        .next()
}

/// Loopback latency and overhead (ns) and stream bandwidth (bytes per second), measured once
/// over a loopback connection within this process; None when loopback cannot be used.
fn loopback_probe() -> Option<(f64, f64, f64)> {
    static FIGURES: OnceLock<Option<(f64, f64, f64)>> = OnceLock::new();
    *FIGURES.get_or_init(|| {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).ok()?;
        let mut a = TcpStream::connect(listener.local_addr().ok()?).ok()?;
        let (mut b, _) = listener.accept().ok()?;
        a.set_nodelay(true).ok()?;
        b.set_nodelay(true).ok()?;
        let mut byte = [0u8; 8];
        let t = Instant::now();
        for _ in 0..PROBE_ROUND_TRIPS {
            a.write_all(&byte).ok()?;
            b.read_exact(&mut byte).ok()?;
            b.write_all(&byte).ok()?;
            a.read_exact(&mut byte).ok()?;
        }
        // Four system calls per one-way trip: half of them is the overhead of each end.
        let one_way = t.elapsed().as_secs_f64() * 1e9 / (2 * PROBE_ROUND_TRIPS) as f64;
        let chunk = vec![0u8; 256 << 10];
        let mut sink = vec![0u8; 256 << 10];
        let t = Instant::now();
        let mut left = PROBE_STREAM_BYTES;
        while left > 0 {
            let n = chunk.len().min(left);
            a.write_all(&chunk[..n]).ok()?;
            b.read_exact(&mut sink[..n]).ok()?;
            left -= n;
        }
        let bw = PROBE_STREAM_BYTES as f64 / t.elapsed().as_secs_f64();
        Some((one_way, one_way / 2.0, bw))
    })
}

impl Transport for Tcp {
    fn name(&self) -> &'static str {
        "tcp"
    }

    fn summary(&self) -> &'static str {
        "weft's TCP protocol, one lane per interface"
    }

    fn available(&self, _q: &LaneQuery) -> std::result::Result<(), String> {
        Ok(())
    }

    fn lanes(&self, q: &LaneQuery) -> Vec<Lane> {
        let Ok(ifaces) = interfaces(q) else {
            return Vec::new();
        };
        let eager = q.values.bytes("WEFT_TCP_EAGER_BYTES").unwrap_or(64 << 10) as usize;
        let frag = q
            .values
            .bytes("WEFT_TCP_FRAGMENT_BYTES")
            .unwrap_or(256 << 10) as usize;
        // Loopback reaches only this host; on a machine without a network interface every
        // peer it can reach at all (ranks given other node ids) is on this host.
        let has_nic = ifaces.iter().any(|(_, ip)| !ip.is_loopback());
        ifaces
            .into_iter()
            .map(|(iface, ip)| {
                let loopback = ip.is_loopback();
                let (costs, origin) = if loopback {
                    match q.probe.then(loopback_probe).flatten() {
                        Some((latency, overhead, bw)) => (
                            Costs {
                                latency_ns: latency,
                                overhead_ns: overhead,
                                dedicated_bytes_per_s: bw,
                                ..LOOPBACK_DEFAULT
                            },
                            Origin::Probe("loopback ping-pong and stream".into()),
                        ),
                        None => (LOOPBACK_DEFAULT, Origin::Default),
                    }
                } else {
                    match nic_bytes_per_s(&iface) {
                        Some(bw) => (
                            Costs {
                                shared_bytes_per_s: bw,
                                ..NIC_DEFAULT
                            },
                            Origin::System,
                        ),
                        None => (NIC_DEFAULT, Origin::Default),
                    }
                };
                Lane {
                    name: format!("tcp:{iface}({ip})"),
                    transport: "tcp",
                    numa_near: numa_near(&iface),
                    device: Some(iface),
                    address: Some(ip),
                    caps: Capabilities {
                        reach: if loopback && has_nic {
                            Reach::SameNode
                        } else {
                            Reach::AnyNode
                        },
                        eager_bytes: eager,
                        rendezvous_piece_bytes: Some(frag),
                        single_copy: false,
                        rma: true,
                        atomics: true,
                    },
                    costs,
                    origin,
                }
            })
            .collect()
    }

    fn open(&self, job: &Job) -> Result<Box<dyn Opening>> {
        let v = job.values;
        let at = |what: &str| format!("rank {}: {what}", job.rank);
        let rank = job.rank;
        let me = job.node_of[rank as usize];
        let eager = v.bytes("WEFT_TCP_EAGER_BYTES").unwrap_or(64 << 10) as u32;
        let frag = v.bytes("WEFT_TCP_FRAGMENT_BYTES").unwrap_or(256 << 10) as u32;
        let small_frag = frag.min(32 << 10);
        let interfaces: Vec<String> = v
            .text("WEFT_TCP_IFACES")
            .unwrap_or_default()
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        // Each rail leaves from its lane's interface (see TcpConfig::rail_sources).
        let mut rail_sources: Vec<IpAddr> = job.lanes.iter().filter_map(|l| l.address).collect();
        if rail_sources.len() != job.lanes.len() {
            rail_sources.clear();
        }
        let only_local = job.node_of.iter().all(|&n| n == me);
        let ep = Endpoint::bind(TcpConfig {
            rank,
            size: job.size,
            key: job.key.to_vec(),
            limits: frame::Limits {
                eager_bytes: eager,
                fragment_bytes: frag,
            },
            // A job on one node (forced TCP) needs loopback only.
            bind_ip: if only_local && interfaces.is_empty() {
                Ipv4Addr::LOCALHOST.into()
            } else {
                Ipv4Addr::UNSPECIFIED.into()
            },
            interfaces,
            small_fragment_bytes: small_frag,
            max_fast_peers: v
                .uint("WEFT_MAX_FAST_PEERS")
                .unwrap_or(8)
                .min(u32::MAX as u64) as u32,
            fast_after_bytes: v.bytes("WEFT_FAST_PEER_BYTES").unwrap_or(1 << 20),
            rails: job.lanes.len().max(1) as u32,
            rail_sources: rail_sources.clone(),
        })
        .map_err(|e| e.context(at("TCP")))?;
        job.exchange
            .publish("tcp", ep.address_record().as_bytes())
            .map_err(|e| e.context(at("publishing the TCP address")))?;
        Ok(Box::new(TcpOpening {
            link: TcpLink::new(ep, small_frag as usize),
            rail_sources,
        }))
    }
}

/// A TCP endpoint bound and published, before it knows its peers' addresses.
struct TcpOpening {
    link: TcpLink,
    rail_sources: Vec<IpAddr>,
}

impl Opening for TcpOpening {
    fn connect(self: Box<Self>, job: &Job) -> Result<Box<dyn NetEndpoint>> {
        let TcpOpening {
            mut link,
            rail_sources,
        } = *self;
        let rank = job.rank;
        let me = job.node_of[rank as usize];
        let peers: Vec<u32> = (0..job.size)
            .filter(|&r| r != rank && job.peers[r as usize])
            .collect();
        let records = job
            .exchange
            .fetch_all(&peers, "tcp")
            .map_err(|e| e.context(format!("rank {rank}: reading the peers' TCP addresses")))?;
        for (&r, rec) in peers.iter().zip(records) {
            let mut addrs = parse_addresses(r, &String::from_utf8_lossy(&rec))?;
            if job.node_of[r as usize] == me {
                let port = addrs.first().map(|a| a.port()).unwrap_or(0);
                addrs.insert(0, (Ipv4Addr::LOCALHOST, port).into());
                addrs.dedup();
            } else if let Some(&src) = rail_sources.first() {
                // The main connection goes over the first lane chosen, not the first address
                // the peer happened to publish.
                order_for_source(&mut addrs, src);
            }
            link.endpoint_mut().set_peer_addresses(r, addrs);
        }
        Ok(Box::new(link))
    }
}
