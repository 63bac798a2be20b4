//! The lanes of this process: every registered transport's description
//! (`weft_transport::transport`), with a lane file's figures over them, scored by
//! `weft_model::lanes`; and the network endpoint the choice calls for.
//!
//! A lane file (`WEFT_LANE_FILE`, TOML) replaces figures of the lanes it names:
//!
//! ```toml
//! [[lane]]
//! transport = "tcp"           # the lanes of this transport ...
//! device = "eth0"             # ... on this device only (optional)
//! latency_us = 30.0           # each figure is optional
//! overhead_us = 1.5
//! dedicated_gbytes_per_s = 0.0
//! shared_gbytes_per_s = 1.25
//! registration_ns_per_byte = 0.0
//! ```

use crate::config::Config;
use std::sync::Arc;
use std::time::Duration;
use weft_boot::Store;
use weft_core::{Error, ErrorKind, Result};
use weft_model::lanes::{self as model, LaneDesc, LanePolicy, PeerKind, TransportKind};
use weft_transport::net::NetEndpoint;
use weft_transport::transport::{self as tr, Exchange, Job, Lane, LaneQuery, Origin, Reach};

/// A registered transport and whether it is offered here.
pub struct TransportState {
    /// Its name (as in `WEFT_TRANSPORTS`).
    pub name: &'static str,
    /// What it is.
    pub summary: &'static str,
    /// Offered, or why not.
    pub offered: std::result::Result<(), String>,
    /// Whether `WEFT_TRANSPORTS` allows it.
    pub allowed: bool,
}

/// Every registered transport, offered or not.
pub fn transports(config: &Config) -> Vec<TransportState> {
    let q = LaneQuery {
        values: &config.values,
        probe: false,
    };
    tr::registry()
        .iter()
        .map(|t| TransportState {
            name: t.name(),
            summary: t.summary(),
            offered: t.available(&q),
            allowed: config.transports.contains(&TransportKind(t.name())),
        })
        .collect()
}

/// The lanes of every transport offered here, with the lane file's figures over them;
/// `probe` lets transports measure what they can at first use (`weft info`).
pub fn candidates(config: &Config, probe: bool) -> Result<Vec<Lane>> {
    let q = LaneQuery {
        values: &config.values,
        probe,
    };
    let mut lanes: Vec<Lane> = tr::registry()
        .iter()
        .filter(|t| t.available(&q).is_ok())
        .flat_map(|t| t.lanes(&q))
        .collect();
    if let Some(path) = config
        .values
        .text("WEFT_LANE_FILE")
        .filter(|p| !p.is_empty())
    {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error::io(format!("WEFT_LANE_FILE={path}"), e))?;
        apply_lane_file(&mut lanes, &text, &path)?;
    }
    Ok(lanes)
}

/// Replaces the figures of the lanes a lane file names (see the module comment).
pub fn apply_lane_file(lanes: &mut [Lane], text: &str, path: &str) -> Result<()> {
    let bad = |why: String| Error::new(ErrorKind::Config, format!("WEFT_LANE_FILE={path}: {why}"));
    let doc: toml::Table = text.parse().map_err(|e| bad(format!("{e}")))?;
    let Some(entries) = doc.get("lane") else {
        return Ok(());
    };
    let entries = entries
        .as_array()
        .ok_or_else(|| bad("`lane` must be an array of tables ([[lane]])".into()))?;
    for (i, e) in entries.iter().enumerate() {
        let t = e
            .as_table()
            .ok_or_else(|| bad(format!("lane {}: not a table", i + 1)))?;
        let mut transport = None;
        let mut device = None;
        let mut figures: Vec<(&str, f64)> = Vec::new();
        for (k, v) in t {
            match k.as_str() {
                "transport" => transport = v.as_str(),
                "device" => device = v.as_str(),
                "latency_us"
                | "overhead_us"
                | "dedicated_gbytes_per_s"
                | "shared_gbytes_per_s"
                | "registration_ns_per_byte" => {
                    let x = v
                        .as_float()
                        .or_else(|| v.as_integer().map(|n| n as f64))
                        .filter(|x| x.is_finite() && *x >= 0.0)
                        .ok_or_else(|| {
                            bad(format!(
                                "lane {}: {k} must be a number of at least 0",
                                i + 1
                            ))
                        })?;
                    figures.push((k.as_str(), x));
                }
                other => return Err(bad(format!("lane {}: unknown key {other:?}", i + 1))),
            }
        }
        let transport =
            transport.ok_or_else(|| bad(format!("lane {}: `transport` is missing", i + 1)))?;
        if tr::find(transport).is_none() {
            return Err(bad(format!(
                "lane {}: unknown transport {transport:?}",
                i + 1
            )));
        }
        for l in lanes
            .iter_mut()
            .filter(|l| l.transport == transport)
            .filter(|l| device.is_none() || l.device.as_deref() == device)
        {
            for &(k, x) in &figures {
                match k {
                    "latency_us" => l.costs.latency_ns = x * 1e3,
                    "overhead_us" => l.costs.overhead_ns = x * 1e3,
                    "dedicated_gbytes_per_s" => l.costs.dedicated_bytes_per_s = x * 1e9,
                    "shared_gbytes_per_s" => l.costs.shared_bytes_per_s = x * 1e9,
                    _ => l.costs.registration_ns_per_byte = x,
                }
            }
            l.origin = Origin::Tuning(path.to_string());
        }
    }
    Ok(())
}

/// A lane as the model scores it.
pub fn to_model(l: &Lane) -> LaneDesc {
    LaneDesc {
        name: l.name.clone(),
        transport: TransportKind(l.transport),
        latency_ns: l.costs.latency_ns,
        overhead_ns: l.costs.overhead_ns,
        registration_ns_per_byte: l.costs.registration_ns_per_byte,
        dedicated_bytes_per_s: l.costs.dedicated_bytes_per_s,
        shared_bytes_per_s: l.costs.shared_bytes_per_s,
        reach: match l.caps.reach {
            Reach::SameNode => model::Reach::SameNode,
            Reach::AnyNode => model::Reach::AnyNode,
        },
        network: tr::find(l.transport).is_some_and(|t| t.network()),
        single_copy: l.caps.single_copy,
        numa_near: l.numa_near,
    }
}

/// The lane policy the knobs describe.
pub fn policy(config: &Config) -> LanePolicy {
    LanePolicy {
        allowed: config.transports.clone(),
        max_rails: config.max_rails,
        stripe_threshold_bytes: config.stripe_bytes,
    }
}

/// The bootstrap store as the transports see it.
struct StoreExchange<'a> {
    store: &'a Arc<dyn Store>,
    timeout: Duration,
}

impl Exchange for StoreExchange<'_> {
    fn publish(&self, key: &str, value: &[u8]) -> Result<()> {
        self.store.put(key, value)
    }

    fn fetch(&self, key: &str) -> Result<Vec<u8>> {
        self.store.get(key, self.timeout)
    }
}

/// Where a rank is, for opening its network endpoint.
pub(crate) struct Placement<'a> {
    pub rank: u32,
    pub size: u32,
    pub node_of: &'a [u32],
    pub local_size: u32,
}

/// The network endpoint this rank needs, if any: the transport the lane choice picks for
/// peers on other nodes (or, when `WEFT_TRANSPORTS` leaves out shared memory, for every
/// peer), opened on the lanes chosen for large messages (its rails). Every rank must pick
/// the same transport: rank 0's choice is published and a rank that differs (a transport
/// missing on its host) fails saying so.
pub(crate) fn open_network(
    p: &Placement,
    config: &Config,
    store: &Arc<dyn Store>,
) -> Result<Option<Box<dyn NetEndpoint>>> {
    let rank = p.rank;
    let net_local = !config.transports.contains(&TransportKind::SHM);
    if p.size <= 1 || !(net_local || p.local_size < p.size) {
        return Ok(None);
    }
    let at = |what: &str| format!("rank {rank}: {what}");
    // A transport named in WEFT_TRANSPORTS that cannot be used here is an error, not a lane
    // silently left out.
    let named = config.values.text("WEFT_TRANSPORTS").unwrap_or_default();
    for t in transports(config) {
        let explicit =
            config.values.is_set("WEFT_TRANSPORTS") && named.split(',').any(|n| n.trim() == t.name);
        if let (true, Err(why)) = (explicit, &t.offered) {
            return Err(Error::new(
                ErrorKind::Unsupported,
                at(&format!(
                    "WEFT_TRANSPORTS={named} names {}, which is not offered here: {why}",
                    t.name
                )),
            ));
        }
    }
    let lanes = candidates(config, false)?;
    let descs: Vec<LaneDesc> = lanes.iter().map(to_model).collect();
    let policy = policy(config);
    let choose = |same_node: bool| {
        model::choose(
            &descs,
            PeerKind {
                same_node,
                ppn: p.local_size,
            },
            &policy,
        )
        .map_err(|e| e.context(at("choosing transports")))
    };
    let same = choose(true)?;
    let same_is_net = tr::find(lanes[same.small].transport).is_some_and(|t| t.network());
    if same_is_net != net_local {
        return Err(Error::new(
            ErrorKind::Internal,
            at("lane choice for same-node peers disagrees with WEFT_TRANSPORTS"),
        ));
    }
    let choice = if p.local_size < p.size {
        choose(false)?
    } else {
        same
    };
    let transport = lanes[choice.small].transport;
    let rails: Vec<Lane> = choice
        .large
        .iter()
        .map(|&i| lanes[i].clone())
        .filter(|l| l.transport == transport)
        .collect();
    let rails = if rails.is_empty() {
        vec![lanes[choice.small].clone()]
    } else {
        rails
    };
    let timeout = Duration::from_secs(config.boot_timeout_s);
    let exchange = StoreExchange { store, timeout };
    // Every rank must speak the same network transport.
    store.put(&format!("net/{rank}"), transport.as_bytes())?;
    if rank != 0 {
        let first = store
            .get("net/0", timeout)
            .map_err(|e| e.context(at("waiting for rank 0's network transport")))?;
        if first != transport.as_bytes() {
            return Err(Error::new(
                ErrorKind::Unsupported,
                at(&format!(
                    "the lane choice here picks {transport} for other ranks, rank 0's picks {} (is a transport missing on one of the hosts? weft info --transports says)",
                    String::from_utf8_lossy(&first)
                )),
            ));
        }
    }
    // The job secret when the launcher gave one; otherwise (in-process jobs) a key made by
    // rank 0 and shared through the store, which only holders of the job secret can read.
    let key = match &config.job_secret {
        Some(k) => k.clone(),
        None => {
            if rank == 0 {
                let k = weft_boot::auth::new_secret()?;
                store.put("tcp/key", weft_boot::auth::encode_hex(&k).as_bytes())?;
                k
            } else {
                let hex = store
                    .get("tcp/key", timeout)
                    .map_err(|e| e.context(at("waiting for the network key")))?;
                weft_boot::auth::decode_hex("tcp/key", &String::from_utf8_lossy(&hex))?
            }
        }
    };
    let me = p.node_of[rank as usize];
    let peers: Vec<bool> = (0..p.size)
        .map(|r| r != rank && (net_local || p.node_of[r as usize] != me))
        .collect();
    let t = tr::find(transport).ok_or_else(|| {
        Error::new(
            ErrorKind::Internal,
            at(&format!("no transport {transport}")),
        )
    })?;
    t.open(&Job {
        rank,
        size: p.size,
        node_of: p.node_of,
        peers: &peers,
        key: &key,
        values: &config.values,
        lanes: &rails,
        exchange: &exchange,
    })
    .map(Some)
}
