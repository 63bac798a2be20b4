//! The runtime's typed configuration, read once from the environment at init. Nothing reads
//! `WEFT_*` variables after this.

use weft_core::knob::{Knob, KnobValues, LAUNCH_VARS, PROCESS_KNOBS, TOOL_VARS};
use weft_core::{Error, ErrorKind, Result};
use weft_model::lanes::TransportKind;
use weft_transport::shm::{Layout, Modes};

/// How the progress engine waits when it has nothing to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YieldMode {
    /// Yield when the node runs more ranks than it has cores.
    Auto,
    /// Always yield when idle.
    Always,
    /// Never yield (pure busy polling).
    Never,
}

/// Whether a wait with nothing to do sleeps in the kernel until a peer delivers something
/// (`WEFT_BLOCK`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockMode {
    /// The default. Only while other programs compete for the cores (`crate::node_load`):
    /// where a rank yields at once, instead of yielding once a yield lost the core; else
    /// after the spin and `WEFT_BLOCK_AFTER_US` of yielding (by default none: where it would
    /// first yield). Whatever the load after a long idle wait.
    Auto,
    /// As soon as a wait finds nothing to do.
    Now,
    /// Never: spin and yield as `WEFT_YIELD` says.
    Never,
}

/// Whether a launched rank pins its process to one core (`WEFT_BIND`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindMode {
    /// Pin when the node runs more ranks than the process may use cores (and nobody bound
    /// the process to fewer CPUs than are online).
    Auto,
    /// Always pin (local rank modulo the usable cores).
    Core,
    /// Never pin.
    None,
}

/// Whether large messages may use single-copy CMA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmaMode {
    /// Probe each peer; fall back to pipelined copies where refused.
    Auto,
    /// Require CMA; an error at start-up when the kernel refuses it.
    On,
    /// Never use CMA: pipelined copy-in/copy-out through the segment.
    Off,
}

/// Typed settings of the runtime and its data path.
#[derive(Clone, Debug)]
pub struct Config {
    /// Largest message sent inline through the shared-memory ring.
    pub shm_eager_bytes: usize,
    /// Size of a high-speed (large) per-pair ring.
    pub shm_ring_bytes: usize,
    /// Size of the memory-saving ring every pair starts with.
    pub shm_small_ring_bytes: usize,
    /// Fragment size of the pipelined copy rendezvous.
    pub shm_fragment_bytes: usize,
    /// Single-copy rendezvous messages of at least this size are copied by both sides at
    /// once (`WEFT_SHM_COOP_BYTES`; None: the lane model chooses, [`crate::shm_rendezvous`]).
    pub shm_coop_bytes: Option<usize>,
    /// Rendezvous messages below this size take the pipelined copy even where CMA works
    /// (`WEFT_SHM_CMA_MIN_BYTES`; None: the lane model chooses, [`crate::shm_rendezvous`]).
    pub shm_cma_min_bytes: Option<usize>,
    /// Bytes of the node-wide area for shared-memory collectives.
    pub shm_coll_bytes: usize,
    /// CMA policy.
    pub cma: CmaMode,
    /// Idle policy.
    pub yield_mode: YieldMode,
    /// Sleeping policy (`WEFT_BLOCK`).
    pub block_mode: BlockMode,
    /// Under `WEFT_BLOCK=auto`, while others compete for the cores: microseconds a wait
    /// yields before it sleeps, when `WEFT_BLOCK_AFTER_US` was set (None: each rank's
    /// default, `crate::node_load::block_after`).
    pub block_after_us: Option<u64>,
    /// The longest sleep of a wait, in ms, before it checks its peers are alive.
    pub block_sleep_ms: u64,
    /// Whether a launched rank pins itself to a core.
    pub bind: BindMode,
    /// Whether each rank reports its binding on stderr at start-up.
    pub report_bindings: bool,
    /// The node topology the hierarchical collectives group ranks by (`WEFT_TOPOLOGY`):
    /// empty for this machine's.
    pub topology: String,
    /// The hwloc library loaded to read the topology (`WEFT_HWLOC_LIB`).
    pub hwloc_lib: String,
    /// Under `WEFT_YIELD=auto` with a core per local rank: microseconds a waiting rank spins
    /// in one idle stretch before it starts yielding.
    pub yield_after_us: u64,
    /// Seconds to wait for peers during start-up.
    pub boot_timeout_s: u64,
    /// How often a rank under a foreign launcher checks its neighbour is alive, in ms (0:
    /// never).
    pub liveness_ms: u64,
    /// Transports allowed (`WEFT_TRANSPORTS`; cma comes with shm); without shm every peer goes
    /// over a network transport.
    pub transports: Vec<TransportKind>,
    /// Largest message sent whole over TCP.
    pub tcp_eager_bytes: usize,
    /// Fragment size of TCP rendezvous.
    pub tcp_fragment_bytes: usize,
    /// Interfaces (names or addresses) whose addresses a rank publishes; empty = all.
    pub tcp_interfaces: Vec<String>,
    /// Progress calls between epoll polls while shared-memory peers exist and TCP is idle.
    pub tcp_poll_every: u32,
    /// Peers that may switch to high-speed buffers (TCP and shared-memory rings).
    pub max_fast_peers: u32,
    /// Bytes received from a peer after which it switches to high-speed buffers.
    pub fast_peer_bytes: u64,
    /// Most lanes a large message may be striped over.
    pub max_rails: u32,
    /// Messages of at least this size are striped over several lanes.
    pub stripe_bytes: u64,
    /// Reductions take C's `char` as a signed 8-bit integer (`WEFT_CHAR_REDUCTIONS`).
    pub char_reductions: bool,
    /// MPI may provide MPI_THREAD_MULTIPLE (`WEFT_MPI_THREAD_MULTIPLE`, default on; off caps
    /// the level at MPI_THREAD_SERIALIZED).
    pub mpi_thread_multiple: bool,
    /// The job secret from `WEFT_JOB_SECRET` (decoded), proven by TCP handshakes.
    pub job_secret: Option<Vec<u8>>,
    /// What this process logs (`WEFT_LOG`, `weft_core::logging`'s filter; None: warnings).
    pub log_filter: Option<String>,
    /// The job's torus of nodes from `WEFT_TORUS_DIMS` (set by `weft run --map`), node `k`
    /// at row-major position `k` (MPI's order: the last dimension fastest), stored with the
    /// dimensions reversed so that `Torus`'s numbering (dimension 0 fastest) is that one.
    pub node_torus: Option<weft_model::mapping::Torus>,
    /// The values as read, for `weft info --knobs`.
    pub values: KnobValues,
}

/// One knob table with what it is about: a name (`weft_...`, the MPI tool interface's
/// category name) and a line of description.
#[derive(Clone, Copy, Debug)]
pub struct KnobGroup {
    pub name: &'static str,
    pub about: &'static str,
    pub knobs: &'static [Knob],
    /// Variables the runtime does not tune itself by: set by the launcher for each rank, or
    /// read by the weft command's tools (the tool interface shows them to users, not tuners).
    pub outside_runtime: bool,
}

/// Every knob table of the crates below the surfaces, named, for reading and listing.
pub fn knob_groups() -> Vec<KnobGroup> {
    let group = |name, about, knobs| KnobGroup {
        name,
        about,
        knobs,
        outside_runtime: false,
    };
    vec![
        group(
            "weft_runtime",
            "weft's progress engine and lanes",
            crate::knobs::KNOBS,
        ),
        group(
            "weft_collectives",
            "collective algorithm choice and radices",
            crate::coll::knobs::KNOBS,
        ),
        group("weft_rma", "one-sided operations", crate::rma::knobs::KNOBS),
        group("weft_io", "file I/O (MPI-IO)", crate::io::knobs::KNOBS),
        group(
            "weft_sync",
            "the node synchronisation engine",
            crate::sync::knobs::KNOBS,
        ),
        group(
            "weft_transport",
            "shared-memory and TCP transports",
            weft_transport::knobs::KNOBS,
        ),
        group("weft_boot", "job start-up", weft_boot::knobs::KNOBS),
        group("weft_log", "what weft logs on stderr", PROCESS_KNOBS),
        KnobGroup {
            outside_runtime: true,
            ..group(
                "weft_launch",
                "set by the launcher for each rank",
                LAUNCH_VARS,
            )
        },
        KnobGroup {
            outside_runtime: true,
            ..group("weft_tools", "read by the weft command's tools", TOOL_VARS)
        },
    ]
}

/// Every knob table of the crates below the surfaces, for reading and listing.
pub fn knob_tables() -> Vec<&'static [Knob]> {
    knob_groups().into_iter().map(|g| g.knobs).collect()
}

impl Config {
    /// The geometry and buffer modes of a node segment for `local_size` ranks under these
    /// knobs: every pair starts on a small ring, the busiest peers move to large ones. The
    /// runtime makes its segment from this and `weft info` reports it.
    pub fn shm_layout(&self, local_size: u32) -> Result<(Layout, Modes)> {
        let layout = Layout {
            local_size,
            ring_bytes: self.shm_ring_bytes,
            coll_bytes: self.shm_coll_bytes,
        };
        let modes = Modes::new(
            &layout,
            self.shm_small_ring_bytes,
            self.max_fast_peers,
            self.fast_peer_bytes,
        )?;
        Ok((layout, modes))
    }

    /// The TCP fragment size asked of a peer in memory-saving mode.
    pub fn tcp_small_fragment_bytes(&self) -> usize {
        self.tcp_fragment_bytes.min(32 * 1024)
    }

    /// Reads and validates the configuration from the process environment, warning about
    /// unknown `WEFT_*` variables on stderr.
    pub fn from_env() -> Result<Config> {
        Self::from_values(KnobValues::from_env(&knob_tables())?)
    }

    /// Builds the configuration from explicit variables (tests).
    pub fn from_vars(vars: &[(&str, &str)]) -> Result<Config> {
        let (values, _) = KnobValues::read(
            &knob_tables(),
            vars.iter().map(|(a, b)| (a.to_string(), b.to_string())),
        )?;
        Self::from_values(values)
    }

    fn from_values(values: KnobValues) -> Result<Config> {
        let eager = values.bytes("WEFT_SHM_EAGER_BYTES").unwrap_or(16384) as usize;
        let ring = values.bytes("WEFT_SHM_RING_BYTES").unwrap_or(262144) as usize;
        let frag = values.bytes("WEFT_SHM_FRAGMENT_BYTES").unwrap_or(32768) as usize;
        if !ring.is_power_of_two() || ring < 4096 {
            return Err(Error::new(
                ErrorKind::Config,
                format!("WEFT_SHM_RING_BYTES={ring}: must be a power of two of at least 4096"),
            ));
        }
        // Unset, the small ring follows a smaller WEFT_SHM_RING_BYTES down.
        let small_ring = match values.bytes("WEFT_SHM_SMALL_RING_BYTES") {
            Some(b) if values.is_set("WEFT_SHM_SMALL_RING_BYTES") => b as usize,
            b => ring.min(b.unwrap_or(65536) as usize),
        };
        if small_ring > ring {
            return Err(weft_transport::shm::small_ring_too_large(small_ring, ring));
        }
        if !small_ring.is_power_of_two() || small_ring < 4096 {
            return Err(Error::new(
                ErrorKind::Config,
                format!("WEFT_SHM_SMALL_RING_BYTES={small_ring}: must be a power of two from 4096 to WEFT_SHM_RING_BYTES={ring}"),
            ));
        }
        let max_payload = weft_transport::shm::ring::max_payload(ring);
        if eager > ring / 4 {
            return Err(Error::new(
                ErrorKind::Config,
                format!("WEFT_SHM_EAGER_BYTES={eager}: must be at most a quarter of WEFT_SHM_RING_BYTES={ring}"),
            ));
        }
        if frag == 0 || frag > max_payload {
            return Err(Error::new(
                ErrorKind::Config,
                format!("WEFT_SHM_FRAGMENT_BYTES={frag}: must be 1..={max_payload} for a ring of {ring} bytes"),
            ));
        }
        let cma = match values.text("WEFT_SHM_CMA").as_deref() {
            Some("on") => CmaMode::On,
            Some("off") => CmaMode::Off,
            _ => CmaMode::Auto,
        };
        let yield_mode = match values.text("WEFT_YIELD").as_deref() {
            Some("on") => YieldMode::Always,
            Some("off") => YieldMode::Never,
            _ => YieldMode::Auto,
        };
        let block_mode = match values.text("WEFT_BLOCK").as_deref() {
            Some("on") => BlockMode::Now,
            Some("off") => BlockMode::Never,
            _ => BlockMode::Auto,
        };
        let bind = match values.text("WEFT_BIND").as_deref().map(str::trim) {
            Some("core") => BindMode::Core,
            Some("none") => BindMode::None,
            _ => BindMode::Auto,
        };
        let mut transports = Vec::new();
        let spec = values.text("WEFT_TRANSPORTS").unwrap_or_default();
        let known = || {
            weft_transport::transport::registry()
                .iter()
                .map(|t| t.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        for name in spec.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match weft_transport::transport::find(name) {
                Some(t) if !transports.contains(&TransportKind(t.name())) => {
                    transports.push(TransportKind(t.name()))
                }
                Some(_) => {}
                None => {
                    return Err(Error::new(
                        ErrorKind::Config,
                        format!(
                            "WEFT_TRANSPORTS={spec}: unknown transport {name:?} (known: {})",
                            known()
                        ),
                    ))
                }
            }
        }
        if transports.is_empty() {
            return Err(Error::new(
                ErrorKind::Config,
                format!("WEFT_TRANSPORTS={spec:?}: name at least one of {}", known()),
            ));
        }
        // CMA is the shared-memory protocol's single copy: it comes with shm (WEFT_SHM_CMA
        // turns it off) and means nothing without it.
        match (
            transports.contains(&TransportKind::SHM),
            transports.contains(&TransportKind::CMA),
        ) {
            (true, false) => {
                let at = transports
                    .iter()
                    .position(|t| *t == TransportKind::SHM)
                    .unwrap_or(0);
                transports.insert(at + 1, TransportKind::CMA);
            }
            (false, true) => {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!(
                        "WEFT_TRANSPORTS={spec}: cma is shared memory's single copy and needs shm"
                    ),
                ))
            }
            _ => {}
        }
        let tcp_eager = values.bytes("WEFT_TCP_EAGER_BYTES").unwrap_or(65536);
        let tcp_frag = values.bytes("WEFT_TCP_FRAGMENT_BYTES").unwrap_or(262144);
        const TCP_MAX_FRAME: u64 = 64 << 20;
        if tcp_eager > TCP_MAX_FRAME {
            return Err(Error::new(
                ErrorKind::Config,
                format!("WEFT_TCP_EAGER_BYTES={tcp_eager}: at most {TCP_MAX_FRAME}"),
            ));
        }
        if tcp_frag == 0 || tcp_frag > TCP_MAX_FRAME {
            return Err(Error::new(
                ErrorKind::Config,
                format!("WEFT_TCP_FRAGMENT_BYTES={tcp_frag}: must be 1..={TCP_MAX_FRAME}"),
            ));
        }
        let max_rails = values.uint("WEFT_MAX_RAILS").unwrap_or(4);
        if max_rails == 0 || max_rails > 64 {
            return Err(Error::new(
                ErrorKind::Config,
                format!("WEFT_MAX_RAILS={max_rails}: must be 1..=64"),
            ));
        }
        let node_torus = match values.text(weft_core::knob::TORUS_DIMS) {
            Some(t) if !t.trim().is_empty() => {
                let torus = weft_model::mapping::Torus::parse(&t).map_err(|e| {
                    Error::new(
                        ErrorKind::Config,
                        format!("{}={t}: {}", weft_core::knob::TORUS_DIMS, e.message()),
                    )
                })?;
                let reversed: Vec<u32> = torus.dims.iter().rev().copied().collect();
                Some(weft_model::mapping::Torus { dims: reversed })
            }
            _ => None,
        };
        let log_filter = values.text(weft_core::knob::LOG);
        if let Some(filter) = &log_filter {
            weft_core::logging::check_filter(filter).map_err(|why| {
                Error::new(ErrorKind::Config, format!("WEFT_LOG={filter}: {why}"))
            })?;
        }
        let job_secret = match values.text("WEFT_JOB_SECRET").filter(|t| !t.is_empty()) {
            Some(t) => Some(weft_boot::auth::decode_hex("WEFT_JOB_SECRET", &t)?),
            None => None,
        };
        Ok(Config {
            transports,
            tcp_eager_bytes: tcp_eager as usize,
            tcp_fragment_bytes: tcp_frag as usize,
            tcp_interfaces: values
                .text("WEFT_TCP_IFACES")
                .unwrap_or_default()
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            tcp_poll_every: values
                .uint("WEFT_TCP_POLL_EVERY")
                .unwrap_or(16)
                .clamp(1, 1 << 20) as u32,
            max_rails: max_rails as u32,
            max_fast_peers: values
                .uint("WEFT_MAX_FAST_PEERS")
                .unwrap_or(8)
                .min(u32::MAX as u64) as u32,
            fast_peer_bytes: values.bytes("WEFT_FAST_PEER_BYTES").unwrap_or(1 << 20),
            stripe_bytes: values.bytes("WEFT_STRIPE_BYTES").unwrap_or(1 << 20),
            char_reductions: values.bool("WEFT_CHAR_REDUCTIONS"),
            mpi_thread_multiple: values.bool("WEFT_MPI_THREAD_MULTIPLE"),
            job_secret,
            shm_eager_bytes: eager,
            shm_ring_bytes: ring,
            shm_small_ring_bytes: small_ring,
            shm_fragment_bytes: frag,
            shm_coll_bytes: (values.bytes("WEFT_SHM_COLL_BYTES").unwrap_or(4 << 20) as usize)
                .next_multiple_of(4096),
            shm_coop_bytes: values.bytes("WEFT_SHM_COOP_BYTES").map(|n| n as usize),
            shm_cma_min_bytes: values.bytes("WEFT_SHM_CMA_MIN_BYTES").map(|n| n as usize),
            cma,
            yield_mode,
            block_mode,
            block_after_us: values
                .is_set("WEFT_BLOCK_AFTER_US")
                .then(|| values.uint("WEFT_BLOCK_AFTER_US"))
                .flatten(),
            block_sleep_ms: values.uint("WEFT_BLOCK_SLEEP_MS").unwrap_or(10),
            bind,
            report_bindings: values.bool("WEFT_REPORT_BINDINGS"),
            topology: values.text("WEFT_TOPOLOGY").unwrap_or_default(),
            hwloc_lib: values
                .text("WEFT_HWLOC_LIB")
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "libhwloc.so.15".into()),
            yield_after_us: values.uint("WEFT_YIELD_AFTER_US").unwrap_or(100),
            boot_timeout_s: values.uint("WEFT_BOOT_TIMEOUT_S").unwrap_or(60),
            liveness_ms: values
                .uint("WEFT_LIVENESS_MS")
                .unwrap_or(100)
                .min(3_600_000),
            log_filter,
            node_torus,
            values,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let c = Config::from_vars(&[]).unwrap();
        assert_eq!(c.shm_eager_bytes, 16384);
        assert_eq!((c.shm_small_ring_bytes, c.max_fast_peers), (65536, 8));
        assert_eq!(c.cma, CmaMode::Auto);
        // Unset: the lane model chooses both rendezvous thresholds at start-up.
        assert_eq!((c.shm_cma_min_bytes, c.shm_coop_bytes), (None, None));
        let c = Config::from_vars(&[
            ("WEFT_SHM_CMA_MIN_BYTES", "0"),
            ("WEFT_SHM_COOP_BYTES", "256K"),
        ])
        .unwrap();
        assert_eq!(
            (c.shm_cma_min_bytes, c.shm_coop_bytes),
            (Some(0), Some(256 << 10))
        );
    }

    #[test]
    fn block_after_is_known_to_be_given_or_not() {
        // Unset: each rank takes its own default (node_load::block_after).
        assert_eq!(Config::from_vars(&[]).unwrap().block_after_us, None);
        // Set, 0 included: the value, for every rank.
        for (text, us) in [("0", 0), ("200", 200), ("5000", 5000)] {
            let c = Config::from_vars(&[("WEFT_BLOCK_AFTER_US", text)]).unwrap();
            assert_eq!(c.block_after_us, Some(us), "WEFT_BLOCK_AFTER_US={text}");
        }
    }

    #[test]
    fn bad_values_name_the_knob() {
        let e = Config::from_vars(&[("WEFT_SHM_RING_BYTES", "5000")]).unwrap_err();
        assert!(e.message().contains("WEFT_SHM_RING_BYTES"), "{e}");
        for small in ["5000", "1M"] {
            let e = Config::from_vars(&[("WEFT_SHM_SMALL_RING_BYTES", small)]).unwrap_err();
            assert!(e.message().contains("WEFT_SHM_SMALL_RING_BYTES"), "{e}");
        }
        let c = Config::from_vars(&[
            ("WEFT_SHM_RING_BYTES", "16K"),
            ("WEFT_SHM_EAGER_BYTES", "4K"),
            ("WEFT_SHM_FRAGMENT_BYTES", "4K"),
        ])
        .unwrap();
        assert_eq!(c.shm_small_ring_bytes, 16384);
        let e = Config::from_vars(&[("WEFT_SHM_EAGER_BYTES", "1M")]).unwrap_err();
        assert!(e.message().contains("WEFT_SHM_EAGER_BYTES"), "{e}");
        let e = Config::from_vars(&[("WEFT_SHM_CMA", "maybe")]).unwrap_err();
        assert!(e.message().contains("WEFT_SHM_CMA"), "{e}");
        let e = Config::from_vars(&[("WEFT_TRANSPORTS", "shm,ib")]).unwrap_err();
        assert!(e.message().contains("\"ib\""), "{e}");
        let e = Config::from_vars(&[("WEFT_MAX_RAILS", "0")]).unwrap_err();
        assert!(e.message().contains("WEFT_MAX_RAILS"), "{e}");
    }

    #[test]
    fn a_small_ring_larger_than_the_large_one_is_refused_naming_both() {
        // Set explicitly, either way round, and whatever the large ring's size.
        for (small, large) in [("1M", None), ("128K", Some("64K")), ("512K", Some("256K"))] {
            let mut vars = vec![("WEFT_SHM_SMALL_RING_BYTES", small)];
            if let Some(l) = large {
                vars.push(("WEFT_SHM_RING_BYTES", l));
                vars.push(("WEFT_SHM_EAGER_BYTES", "4K"));
                vars.push(("WEFT_SHM_FRAGMENT_BYTES", "4K"));
            }
            let e = Config::from_vars(&vars).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Config);
            let small_b = weft_core::units::parse_bytes(small).unwrap();
            let large_b = weft_core::units::parse_bytes(large.unwrap_or("256K")).unwrap();
            for part in [
                format!("WEFT_SHM_SMALL_RING_BYTES={small_b}"),
                format!("WEFT_SHM_RING_BYTES={large_b}"),
            ] {
                assert!(e.message().contains(&part), "{e}");
            }
        }
        // Equal: no switching, accepted; the segment's modes say so.
        let c = Config::from_vars(&[("WEFT_SHM_SMALL_RING_BYTES", "256K")]).unwrap();
        let (layout, modes) = c.shm_layout(4).unwrap();
        assert_eq!(modes, Modes::fixed(&layout));
        // The default: small rings and a pool of at most one large ring per peer.
        let (layout, modes) = Config::from_vars(&[]).unwrap().shm_layout(4).unwrap();
        assert_eq!(layout.ring_bytes, 262144);
        assert_eq!((modes.small_ring_bytes, modes.fast_rings), (65536, 3));
    }

    #[test]
    fn transports_default_to_shared_memory_and_tcp() {
        let c = Config::from_vars(&[]).unwrap();
        assert_eq!(
            c.transports,
            vec![TransportKind::SHM, TransportKind::CMA, TransportKind::TCP]
        );
        let c = Config::from_vars(&[("WEFT_TRANSPORTS", "tcp")]).unwrap();
        assert_eq!(c.transports, vec![TransportKind::TCP]);
        let c = Config::from_vars(&[("WEFT_TRANSPORTS", "ucx,shm")]).unwrap();
        assert_eq!(
            c.transports,
            vec![TransportKind::UCX, TransportKind::SHM, TransportKind::CMA]
        );
        let e = Config::from_vars(&[("WEFT_TRANSPORTS", "cma,tcp")]).unwrap_err();
        assert!(e.message().contains("needs shm"), "{e}");
        let e = Config::from_vars(&[("WEFT_TRANSPORTS", "shm,ib")]).unwrap_err();
        assert!(e.message().contains("known: shm, cma, tcp, ucx"), "{e}");
    }
}
