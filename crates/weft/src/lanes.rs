//! The lanes of this process: every registered transport's description
//! (`weft_transport::transport`), with a lane file's figures over them, scored by
//! `weft_model::lanes`; and the network endpoint the choice calls for.
//!
//! Lane figures come from a tuning file (`WEFT_TUNING_FILE`, written by `weft tune`; its
//! `[[lane]]` tables) and then from a lane file (`WEFT_LANE_FILE`), which replaces figures
//! of the lanes it names over the tuning file's. Both files share one format
//! (`crate::coll::select::parse_tuning_file` checks it whole: an unknown key anywhere is an
//! error naming its line):
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
use serde::{Deserialize, Serialize};
use std::time::Duration;
use weft_boot::Boot;
use weft_core::{Error, ErrorKind, Result};
use weft_model::lanes::{self as model, LaneDesc, LanePolicy, PeerKind, TransportKind};
use weft_transport::net::NetEndpoint;
use weft_transport::transport::{
    self as tr, Exchange, Job, Lane, LaneQuery, Opening, Origin, Reach,
};

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
    if let Some((path, file)) = crate::coll::select::read_tuning_file(&config.values)? {
        apply_entries(&mut lanes, &file.lanes, &path);
    }
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

/// One `[[lane]]` of a tuning or lane file: the lanes it names and the figures it replaces
/// (each optional).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaneEntry {
    /// The transport whose lanes it names.
    pub transport: String,
    /// Only the lane on this device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Latency, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<f64>,
    /// Per-message overhead, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_us: Option<f64>,
    /// Bandwidth of one process, GB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedicated_gbytes_per_s: Option<f64>,
    /// Bandwidth shared by the node's processes, GB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_gbytes_per_s: Option<f64>,
    /// Registration cost, ns per byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_ns_per_byte: Option<f64>,
}

/// Why `e` is refused, with the key at fault: a transport that is not registered, or a
/// figure that is not a number of at least 0.
pub(crate) fn check_entry(e: &LaneEntry) -> std::result::Result<(), (&'static str, String)> {
    if tr::find(&e.transport).is_none() {
        return Err(("transport", format!("unknown transport {:?}", e.transport)));
    }
    for (k, v) in [
        ("latency_us", e.latency_us),
        ("overhead_us", e.overhead_us),
        ("dedicated_gbytes_per_s", e.dedicated_gbytes_per_s),
        ("shared_gbytes_per_s", e.shared_gbytes_per_s),
        ("registration_ns_per_byte", e.registration_ns_per_byte),
    ] {
        if let Some(x) = v.filter(|x| !(x.is_finite() && *x >= 0.0)) {
            return Err((
                k,
                format!(
                    "transport {:?}: {k} = {x}: must be a number of at least 0",
                    e.transport
                ),
            ));
        }
    }
    Ok(())
}

/// Puts the figures of `entries` (checked) over the lanes they name; their origin becomes
/// the file `path`.
fn apply_entries(lanes: &mut [Lane], entries: &[LaneEntry], path: &str) {
    for e in entries {
        for l in lanes
            .iter_mut()
            .filter(|l| l.transport == e.transport)
            .filter(|l| e.device.is_none() || l.device == e.device)
        {
            let c = &mut l.costs;
            let set = |to: &mut f64, v: Option<f64>, scale: f64| {
                if let Some(x) = v {
                    *to = x * scale;
                }
            };
            set(&mut c.latency_ns, e.latency_us, 1e3);
            set(&mut c.overhead_ns, e.overhead_us, 1e3);
            set(&mut c.dedicated_bytes_per_s, e.dedicated_gbytes_per_s, 1e9);
            set(&mut c.shared_bytes_per_s, e.shared_gbytes_per_s, 1e9);
            set(
                &mut c.registration_ns_per_byte,
                e.registration_ns_per_byte,
                1.0,
            );
            l.origin = Origin::Tuning(path.to_string());
        }
    }
}

/// Replaces the figures of the lanes a lane file names (see the module comment); the file
/// is checked whole, as a tuning file is.
pub fn apply_lane_file(lanes: &mut [Lane], text: &str, path: &str) -> Result<()> {
    let file = crate::coll::select::parse_tuning_file(text, &format!("WEFT_LANE_FILE={path}"))?;
    apply_entries(lanes, &file.lanes, path);
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

/// The job's bootstrap as the transports see it. Before the fence that follows
/// [`open_network`] it only publishes: a read then is refused, since PMI back ends cannot
/// answer one and the weft store would only answer it by luck.
struct BootExchange<'a> {
    boot: &'a dyn Boot,
    timeout: Duration,
    fenced: bool,
}

impl Exchange for BootExchange<'_> {
    fn publish(&self, key: &str, value: &[u8]) -> Result<()> {
        self.boot.put(key, value)
    }

    fn fetch_all(&self, ranks: &[u32], key: &str) -> Result<Vec<Vec<u8>>> {
        if !self.fenced {
            return Err(Error::new(
                ErrorKind::Internal,
                format!(
                    "rank {}: a transport read the peers' {key:?} before the start-up fence",
                    self.boot.job().rank
                ),
            ));
        }
        self.boot.get_all(ranks, key, self.timeout)
    }
}

/// Where a rank is, for opening its network endpoint.
pub(crate) struct Placement<'a> {
    pub rank: u32,
    pub size: u32,
    pub node_of: &'a [u32],
    pub local_size: u32,
}

/// The network lane choice of a rank: the transport the lane choice picks for peers on
/// other nodes (or, when `WEFT_TRANSPORTS` leaves out shared memory, for every peer), the
/// lanes chosen for large messages (its rails) and the peers it serves.
pub(crate) struct NetworkPlan {
    transport: &'static str,
    rails: Vec<Lane>,
    peers: Vec<bool>,
}

/// The network lanes this rank needs, if any (see [`NetworkPlan`]). Needs nothing from the
/// other ranks: every rank decides alone and [`NetworkOpening::connect`] checks they agree.
pub(crate) fn plan_network(p: &Placement, config: &Config) -> Result<Option<NetworkPlan>> {
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
    let me = p.node_of[rank as usize];
    let peers: Vec<bool> = (0..p.size)
        .map(|r| r != rank && (net_local || p.node_of[r as usize] != me))
        .collect();
    Ok(Some(NetworkPlan {
        transport,
        rails,
        peers,
    }))
}

/// Logs, at debug level (`WEFT_LOG=weft::lanes=debug`), the lanes each peer of this rank
/// gets and why: per kind of peer (same node, other nodes) the ranks, the lane of small
/// messages, the rails of large ones and every other lane with the reason it is not used.
/// The choice is the model's, as the start-up makes it (`plan_network` for the network,
/// shared memory for the node when `WEFT_TRANSPORTS` allows it). Start-up only; nothing is
/// computed when the level is off.
pub(crate) fn log_choices(p: &Placement, config: &Config) {
    if !log::log_enabled!(log::Level::Debug) || p.size <= 1 {
        return;
    }
    let lanes = match candidates(config, false) {
        Ok(l) => l,
        Err(e) => {
            log::debug!("no lane choice to show: {e}");
            return;
        }
    };
    let descs: Vec<LaneDesc> = lanes.iter().map(to_model).collect();
    let policy = policy(config);
    let me = p.node_of[p.rank as usize];
    for same_node in [true, false] {
        let peers: Vec<usize> = (0..p.size as usize)
            .filter(|&r| r != p.rank as usize && (p.node_of[r] == me) == same_node)
            .collect();
        if peers.is_empty() {
            continue;
        }
        let word = if peers.len() == 1 { "rank" } else { "ranks" };
        let who = format!(
            "{word} {} ({} node)",
            crate::bind::number_ranges(&peers),
            if same_node { "same" } else { "other" }
        );
        let peer = PeerKind {
            same_node,
            ppn: p.local_size,
        };
        match model::choose(&descs, peer, &policy) {
            Ok(c) => {
                let rails: Vec<&str> = c.large.iter().map(|&i| lanes[i].name.as_str()).collect();
                let others: Vec<String> = c
                    .candidates
                    .iter()
                    .filter_map(|s| {
                        Some(format!("{} ({})", lanes[s.lane].name, s.excluded.as_ref()?))
                    })
                    .collect();
                log::debug!(
                    "{who}: lane {} for small messages (lowest latency + overhead), large \
                     ones over {} (best bandwidth; striped from {} bytes); not used: {}",
                    lanes[c.small].name,
                    rails.join("+"),
                    c.stripe_threshold_bytes,
                    if others.is_empty() {
                        "none".to_string()
                    } else {
                        others.join(", ")
                    }
                );
            }
            Err(e) => log::debug!("{who}: no lane: {e}"),
        }
    }
}

/// A rank's network endpoint between its opening and the fence after it.
pub(crate) struct NetworkOpening {
    plan: NetworkPlan,
    key: Vec<u8>,
    opening: Box<dyn Opening>,
}

/// Opens the planned network endpoint with the job key `key` (the launcher's job secret, or
/// the key rank 0 shares as `tcp-key`) and publishes, through `boot`, the transport's name
/// (`net`) and what the peers need to reach it. Reads nothing: the caller runs the fence
/// before [`NetworkOpening::connect`].
pub(crate) fn open_network(
    plan: NetworkPlan,
    p: &Placement,
    config: &Config,
    boot: &dyn Boot,
    key: Vec<u8>,
) -> Result<NetworkOpening> {
    let rank = p.rank;
    let at = |what: &str| format!("rank {rank}: {what}");
    boot.put("net", plan.transport.as_bytes())
        .map_err(|e| e.context(at("publishing the network transport")))?;
    let t = tr::find(plan.transport).ok_or_else(|| {
        Error::new(
            ErrorKind::Internal,
            at(&format!("no transport {}", plan.transport)),
        )
    })?;
    let exchange = BootExchange {
        boot,
        timeout: Duration::from_secs(config.boot_timeout_s),
        fenced: false,
    };
    let opening = t.open(&job_of(&plan, p, config, &key, &exchange))?;
    Ok(NetworkOpening { plan, key, opening })
}

impl NetworkOpening {
    /// After the fence that followed [`open_network`]: checks that every peer picked the
    /// same network transport as this rank (an error names the ranks that differ) and
    /// connects the endpoint to them.
    pub(crate) fn connect(
        self,
        p: &Placement,
        config: &Config,
        boot: &dyn Boot,
    ) -> Result<Box<dyn NetEndpoint>> {
        let rank = p.rank;
        let exchange = BootExchange {
            boot,
            timeout: Duration::from_secs(config.boot_timeout_s),
            fenced: true,
        };
        let peers: Vec<u32> = (0..p.size)
            .filter(|&r| self.plan.peers[r as usize])
            .collect();
        let picks = exchange
            .fetch_all(&peers, "net")
            .map_err(|e| e.context(format!("rank {rank}: reading the peers' network transport")))?;
        check_same_transport(rank, self.plan.transport, &peers, &picks)?;
        self.opening
            .connect(&job_of(&self.plan, p, config, &self.key, &exchange))
    }
}

/// What a transport's open and connect are told.
fn job_of<'a>(
    plan: &'a NetworkPlan,
    p: &'a Placement,
    config: &'a Config,
    key: &'a [u8],
    exchange: &'a dyn Exchange,
) -> Job<'a> {
    Job {
        rank: p.rank,
        size: p.size,
        node_of: p.node_of,
        peers: &plan.peers,
        key,
        values: &config.values,
        lanes: &plan.rails,
        exchange,
    }
}

/// An error unless every one of `peers` picked `mine` (their picks are `picks`, read after
/// the fence): the message names the ranks of each other pick.
pub(crate) fn check_same_transport(
    rank: u32,
    mine: &str,
    peers: &[u32],
    picks: &[Vec<u8>],
) -> Result<()> {
    let mut other: Vec<(String, Vec<u32>)> = Vec::new();
    for (&r, pick) in peers.iter().zip(picks) {
        let pick = String::from_utf8_lossy(pick);
        if pick == mine {
            continue;
        }
        match other.iter_mut().find(|(t, _)| *t == pick) {
            Some((_, ranks)) => ranks.push(r),
            None => other.push((pick.into_owned(), vec![r])),
        }
    }
    if other.is_empty() {
        return Ok(());
    }
    let theirs: Vec<String> = other
        .iter()
        .map(|(t, ranks)| format!("{t} at {}", rank_list(ranks)))
        .collect();
    Err(Error::new(
        ErrorKind::Unsupported,
        format!(
            "rank {rank}: ranks disagree on the network transport: this rank's lane choice picks \
             {mine}, {} (is a transport missing on one of the hosts? weft info --transports \
             says why)",
            theirs.join(", ")
        ),
    ))
}

/// `ranks` (ascending) as a short list: "rank 3", "ranks 0-2,5".
fn rank_list(ranks: &[u32]) -> String {
    let word = if ranks.len() == 1 { "rank" } else { "ranks" };
    let numbers: Vec<usize> = ranks.iter().map(|&r| r as usize).collect();
    format!("{word} {}", crate::bind::number_ranges(&numbers))
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_boot::{JobInfo, MemStore, StoreBoot};

    #[test]
    fn the_exchange_refuses_reads_before_the_fence() {
        let boot = StoreBoot::new(
            MemStore::new(),
            JobInfo {
                rank: 0,
                size: 1,
                launcher_job: "j".into(),
                node_of: None,
            },
            "",
        )
        .unwrap();
        let before = BootExchange {
            boot: &boot,
            timeout: Duration::from_secs(1),
            fenced: false,
        };
        before.publish("ucx", b"addr").unwrap();
        // Even a value that is there: a PMI back end could not answer before the fence.
        let e = before.fetch(0, "ucx").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Internal);
        assert!(e.to_string().contains("before the start-up fence"), "{e}");
        boot.fence(Duration::from_secs(1)).unwrap();
        let after = BootExchange {
            fenced: true,
            ..before
        };
        assert_eq!(after.fetch(0, "ucx").unwrap(), b"addr");
        assert_eq!(after.fetch_all(&[0, 0], "ucx").unwrap().len(), 2);
    }

    #[test]
    fn agreeing_ranks_pass_and_disagreeing_ones_are_named() {
        let picks =
            |v: &[&str]| -> Vec<Vec<u8>> { v.iter().map(|s| s.as_bytes().to_vec()).collect() };
        assert!(check_same_transport(0, "tcp", &[1, 2, 3], &picks(&["tcp", "tcp", "tcp"])).is_ok());
        assert!(check_same_transport(0, "tcp", &[], &[]).is_ok());
        let e = check_same_transport(
            4,
            "ucx",
            &[0, 1, 2, 3, 5, 6],
            &picks(&["tcp", "tcp", "tcp", "ucx", "tcp", "ofi"]),
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        let m = e.to_string();
        assert!(m.contains("rank 4:"), "{m}");
        assert!(m.contains("picks ucx"), "{m}");
        assert!(m.contains("tcp at ranks 0-2,5"), "{m}");
        assert!(m.contains("ofi at rank 6"), "{m}");
        assert!(!m.contains("3"), "rank 3 agrees: {m}");
    }
}
