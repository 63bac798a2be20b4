//! Shared memory and CMA as [`Transport`]s: their lanes, capabilities and costs. Both are
//! driven by the engine's shared-memory protocol (rings; CMA for single-copy rendezvous and
//! for one-sided traffic to a peer's globals), so they open no network endpoint.
//!
//! Probes (at first use, when asked for): shared memory measures a memory copy of
//! [`PROBE_BYTES`] (a message through the segment is copied twice: in and out), CMA a
//! `process_vm_readv` of this process's own memory (one byte for the call's overhead,
//! [`PROBE_BYTES`] for its bandwidth).

use super::cma;
use crate::transport::{Capabilities, Costs, Lane, LaneQuery, Origin, Reach, Transport};
use std::sync::OnceLock;
use std::time::Instant;

/// Bytes each probe copies.
pub const PROBE_BYTES: usize = 4 << 20;
/// Copies per probe (the fastest counts).
const PROBE_ROUNDS: usize = 4;

/// Shared memory's defaults: a message through the rings is two cache-line copies apart
/// (latency), the engine's per-message work (overhead), and a copy in and a copy out at
/// about 16 GB/s each (seed 000's per-process memory bandwidth), dedicated to the process.
const SHM_DEFAULT: Costs = Costs {
    latency_ns: 300.0,
    overhead_ns: 100.0,
    dedicated_bytes_per_s: 8e9,
    shared_bytes_per_s: 0.0,
    registration_ns_per_byte: 0.0,
};

/// CMA's defaults: a system call that pins the peer's pages (about 1.5 us), one copy.
const CMA_DEFAULT: Costs = Costs {
    latency_ns: 1_500.0,
    overhead_ns: 1_500.0,
    dedicated_bytes_per_s: 12e9,
    shared_bytes_per_s: 0.0,
    registration_ns_per_byte: 0.0,
};

/// The shared-memory transport.
pub struct Shm;
/// Cross Memory Attach (`process_vm_readv`/`writev`), single copy between local processes.
pub struct Cma;

pub static SHM: Shm = Shm;
pub static CMA: Cma = Cma;

/// The fastest of [`PROBE_ROUNDS`] runs of `f`, in seconds.
fn fastest(mut f: impl FnMut()) -> f64 {
    (0..PROBE_ROUNDS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// Memory copy bandwidth of this process (bytes per second), measured once.
fn copy_bandwidth() -> f64 {
    static BW: OnceLock<f64> = OnceLock::new();
    *BW.get_or_init(|| {
        let src = vec![1u8; PROBE_BYTES];
        let mut dst = vec![0u8; PROBE_BYTES];
        let s = fastest(|| {
            dst.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box(&mut dst);
        });
        PROBE_BYTES as f64 / s
    })
}

/// CMA's overhead (ns) and bandwidth (bytes per second) on this process's own memory, or
/// None when the kernel refuses it.
fn cma_probe() -> Option<(f64, f64)> {
    static FIGURES: OnceLock<Option<(f64, f64)>> = OnceLock::new();
    *FIGURES.get_or_init(|| {
        let pid = std::process::id() as i32;
        let src = vec![1u8; PROBE_BYTES];
        let mut dst = vec![0u8; PROBE_BYTES];
        let mut one = [0u8; 1];
        cma::read(pid, src.as_ptr() as u64, &mut one).ok()?;
        let small = fastest(|| {
            let _ = cma::read(pid, src.as_ptr() as u64, &mut one);
        });
        let large = fastest(|| {
            let _ = cma::read(pid, src.as_ptr() as u64, &mut dst);
        });
        Some((small * 1e9, PROBE_BYTES as f64 / large))
    })
}

/// Whether CMA works on this process's own memory (a policy that forbids it, such as a
/// seccomp filter, forbids it for peers too; Yama's ptrace scope is checked per peer by the
/// engine's probe).
fn cma_works() -> bool {
    let pid = std::process::id() as i32;
    let v = [7u8; 8];
    let mut out = [0u8; 8];
    cma::read(pid, v.as_ptr() as u64, &mut out).is_ok() && out == v
}

impl Transport for Shm {
    fn name(&self) -> &'static str {
        "shm"
    }

    fn summary(&self) -> &'static str {
        "shared-memory rings between the processes of a node"
    }

    fn network(&self) -> bool {
        false
    }

    fn available(&self, _q: &LaneQuery) -> Result<(), String> {
        Ok(())
    }

    fn lanes(&self, q: &LaneQuery) -> Vec<Lane> {
        let (costs, origin) = if q.probe {
            let bw = copy_bandwidth() / 2.0;
            (
                Costs {
                    dedicated_bytes_per_s: bw,
                    ..SHM_DEFAULT
                },
                Origin::Probe("memory copy bandwidth; latency and overhead defaults".into()),
            )
        } else {
            (SHM_DEFAULT, Origin::Default)
        };
        vec![Lane {
            name: "shm".into(),
            transport: "shm",
            device: None,
            address: None,
            caps: Capabilities {
                reach: Reach::SameNode,
                eager_bytes: q.values.bytes("WEFT_SHM_EAGER_BYTES").unwrap_or(16 << 10) as usize,
                rendezvous_piece_bytes: Some(
                    q.values
                        .bytes("WEFT_SHM_FRAGMENT_BYTES")
                        .unwrap_or(32 << 10) as usize,
                ),
                single_copy: false,
                rma: true,
                atomics: true,
            },
            costs,
            origin,
            numa_near: None,
        }]
    }
}

impl Transport for Cma {
    fn name(&self) -> &'static str {
        "cma"
    }

    fn summary(&self) -> &'static str {
        "single-copy rendezvous and globals between the processes of a node (process_vm_readv)"
    }

    fn network(&self) -> bool {
        false
    }

    fn available(&self, q: &LaneQuery) -> Result<(), String> {
        if q.values.text("WEFT_SHM_CMA").as_deref() == Some("off") {
            return Err("WEFT_SHM_CMA=off".into());
        }
        if !cma_works() {
            return Err("process_vm_readv is refused here (kernel or seccomp policy)".into());
        }
        Ok(())
    }

    fn lanes(&self, q: &LaneQuery) -> Vec<Lane> {
        let (costs, origin) = match q.probe.then(cma_probe).flatten() {
            Some((overhead, bw)) => (
                Costs {
                    overhead_ns: overhead,
                    dedicated_bytes_per_s: bw,
                    ..CMA_DEFAULT
                },
                Origin::Probe("overhead and bandwidth on own memory; latency default".into()),
            ),
            None => (CMA_DEFAULT, Origin::Default),
        };
        vec![Lane {
            name: "cma".into(),
            transport: "cma",
            device: None,
            address: None,
            caps: Capabilities {
                reach: Reach::SameNode,
                eager_bytes: 0,
                rendezvous_piece_bytes: None,
                single_copy: true,
                rma: true,
                atomics: false,
            },
            costs,
            origin,
            numa_near: None,
        }]
    }
}
