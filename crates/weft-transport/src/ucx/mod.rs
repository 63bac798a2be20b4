//! UCX as a [`Transport`] (`ucp`, UCX 1.13 or later).
//!
//! Built with the `ucx` cargo feature, weft loads libucp at run time (`WEFT_UCX_LIB`,
//! default `libucp.so.0`): where the library is absent the lane is not offered and
//! `weft info --transports` says why; built without the feature, the lane is listed as not
//! built. `link` (built with the feature) is the endpoint.
//!
//! Lanes: with `UCX_NET_DEVICES` set, one per device listed; otherwise, when UCX is limited
//! to its TCP transport (`UCX_TLS=tcp`) or the machine has no RDMA device
//! (`/sys/class/infiniband` is empty), one per network interface, so weft can stripe large
//! messages over several of them; otherwise one lane, on which UCX picks its devices (and
//! its own rails) itself. A lane on an interface costs what TCP's lane there costs less
//! UCX's smaller per-message overhead (measured: `docs/bench`); a lane on RDMA hardware
//! takes RDMA-class defaults. `UCX_*` variables are UCX's own configuration, which the
//! lanes follow (weft declares no knob for them).

#[cfg(feature = "ucx")]
pub mod ffi;
#[cfg(feature = "ucx")]
pub mod link;

use crate::tcp::lanes::{interfaces, nic_bytes_per_s, numa_near};
use crate::transport::{
    Capabilities, Costs, Job, Lane, LaneQuery, Opening, Origin, Reach, Transport,
};
use weft_core::Result;
#[cfg(not(feature = "ucx"))]
use weft_core::{Error, ErrorKind};

/// A lane on a network interface (UCX's TCP transport, or a NIC UCX drives): TCP's figures
/// with a smaller per-message cost.
const IFACE_DEFAULT: Costs = Costs {
    latency_ns: 25_000.0,
    overhead_ns: 1_000.0,
    dedicated_bytes_per_s: 0.0,
    shared_bytes_per_s: 10e9 / 8.0,
    registration_ns_per_byte: 0.0,
};

/// A lane on RDMA hardware (InfiniBand, RoCE): a 100 Gbit/s NIC's figures (seed 000).
const RDMA_DEFAULT: Costs = Costs {
    latency_ns: 2_000.0,
    overhead_ns: 300.0,
    dedicated_bytes_per_s: 0.0,
    shared_bytes_per_s: 100e9 / 8.0,
    registration_ns_per_byte: 0.000_1,
};

/// The UCX transport.
pub struct Ucx;
pub static UCX: Ucx = Ucx;

/// The library to load.
pub fn library_path(q_values: &weft_core::knob::KnobValues) -> String {
    q_values
        .text("WEFT_UCX_LIB")
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "libucp.so.0".into())
}

/// Whether the machine has an RDMA device.
fn has_rdma_device() -> bool {
    std::fs::read_dir("/sys/class/infiniband").is_ok_and(|mut d| d.next().is_some())
}

impl Transport for Ucx {
    fn name(&self) -> &'static str {
        "ucx"
    }

    fn summary(&self) -> &'static str {
        "UCX (ucp active and tag messages, RMA and atomics), loaded at run time"
    }

    #[cfg(feature = "ucx")]
    fn available(&self, q: &LaneQuery) -> std::result::Result<(), String> {
        link::library(&library_path(q.values)).map(|_| ())
    }

    #[cfg(not(feature = "ucx"))]
    fn available(&self, _q: &LaneQuery) -> std::result::Result<(), String> {
        Err("weft was built without the ucx cargo feature".into())
    }

    fn lanes(&self, q: &LaneQuery) -> Vec<Lane> {
        let eager = q.values.bytes("WEFT_UCX_EAGER_BYTES").unwrap_or(64 << 10) as usize;
        let caps = Capabilities {
            reach: Reach::AnyNode,
            eager_bytes: eager,
            rendezvous_piece_bytes: None,
            single_copy: true,
            rma: true,
            atomics: true,
        };
        // UCX's own variables, not weft's settings: the lanes are described as UCX, which
        // reads them too, will behave.
        #[allow(
            clippy::disallowed_methods,
            reason = "UCX_NET_DEVICES and UCX_TLS are UCX's variables, read as UCX reads them"
        )]
        let (devices, tls) = (std::env::var("UCX_NET_DEVICES"), std::env::var("UCX_TLS"));
        let devices: Option<Vec<String>> = devices
            .ok()
            .filter(|d| !d.is_empty() && d != "all")
            .map(|d| d.split(',').map(|s| s.trim().to_string()).collect());
        let tls = tls.unwrap_or_default();
        let tcp_only = !tls.is_empty()
            && tls.split(',').all(|t| {
                matches!(
                    t.trim(),
                    "tcp" | "self" | "sm" | "shm" | "posix" | "sysv" | "cma"
                )
            });
        let iface_lane = |dev: String| {
            let (costs, origin) = match nic_bytes_per_s(&dev) {
                Some(bw) => (
                    Costs {
                        shared_bytes_per_s: bw,
                        ..IFACE_DEFAULT
                    },
                    Origin::System,
                ),
                None => (IFACE_DEFAULT, Origin::Default),
            };
            Lane {
                name: format!("ucx:{dev}"),
                transport: "ucx",
                numa_near: numa_near(&dev),
                device: Some(dev),
                address: None,
                caps: caps.clone(),
                costs,
                origin,
            }
        };
        if let Some(devs) = devices {
            return devs.into_iter().map(iface_lane).collect();
        }
        if tcp_only || !has_rdma_device() {
            let Ok(ifaces) = interfaces(q) else {
                return Vec::new();
            };
            let nics: Vec<Lane> = ifaces
                .into_iter()
                .filter(|(_, ip)| !ip.is_loopback())
                .map(|(dev, _)| iface_lane(dev))
                .collect();
            if !nics.is_empty() {
                return nics;
            }
        }
        vec![Lane {
            name: "ucx".into(),
            transport: "ucx",
            device: None,
            address: None,
            caps,
            costs: if has_rdma_device() {
                RDMA_DEFAULT
            } else {
                IFACE_DEFAULT
            },
            origin: Origin::Default,
            numa_near: None,
        }]
    }

    #[cfg(feature = "ucx")]
    fn open(&self, job: &Job) -> Result<Box<dyn Opening>> {
        link::open(job)
    }

    #[cfg(not(feature = "ucx"))]
    fn open(&self, job: &Job) -> Result<Box<dyn Opening>> {
        Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "rank {}: the ucx transport was chosen but weft was built without the ucx cargo feature",
                job.rank
            ),
        ))
    }
}
