//! `weft sim`: runs the plans weft's own builders make for every rank of a call (the code
//! the runtime executes, `weft::coll::sim_plan`) through the discrete-event model of the
//! machine (`weft_model::sim`) and reports the predicted completion time, the busiest
//! links and, with `--plot`, a timeline of some ranks' steps (SVG).
//!
//! The machine: `--ppn` ranks per node (contiguous), the node's lane (shared memory or
//! single copy: latency and bandwidth) between ranks of a node, and between nodes a flat
//! network of one NIC per node or the links of a `--fabric` description, each at the
//! network lane's bandwidth. The figures come from the collectives' model lanes (weft's
//! defaults, or a tuning file's with `--tuning`), and each can be set on the command line.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;
use weft::coll::select::{algorithms, CallTraits, Choice, Tuning};
use weft::coll::sim_plan::{SimCall, SimPlans};
use weft::coll::Coll;
use weft_core::{Error, ErrorKind, Result};
use weft_model::fabric::{parse_fabric_json, parse_fabric_toml, DistanceCache, Fabric, Vertex};
use weft_model::sim::{simulate, FlatNetwork, Machine, Outcome, Program, Routes, StepSpan};

/// Programs above this many actions in all are refused (memory: 16 bytes each).
const MAX_OPS: usize = 100_000_000;

#[derive(clap::Args, Debug)]
pub(crate) struct SimArgs {
    /// The collective (allreduce, bcast, alltoall, ...).
    #[arg(long)]
    op: String,
    /// Ranks in the job.
    #[arg(long)]
    procs: u32,
    /// Bytes per rank as the selector counts them (the whole buffer of allreduce, bcast
    /// and reduce; one rank's block of alltoall, allgather, gather and scatter), with K/M/G
    /// suffixes; a comma-separated list simulates each.
    #[arg(long, default_value = "1M")]
    bytes: String,
    /// Ranks per node (default: every rank on one node, or the ranks spread evenly over
    /// the `--fabric`'s nodes).
    #[arg(long)]
    ppn: Option<u32>,
    /// Cores per node: CPU work of more ranks than cores queues for them (default: the
    /// `--tuning` file's measured cores, `[machine] cores`; without one as many as ranks
    /// per node).
    #[arg(long)]
    cores: Option<u32>,
    /// The algorithm, or `all` for every one the call allows (default: the one weft's
    /// selector chooses for this call).
    #[arg(long)]
    algo: Option<String>,
    /// The tree radix of algorithms that have one (default: the selector's).
    #[arg(long)]
    radix: Option<u32>,
    /// The root of rooted collectives.
    #[arg(long, default_value_t = 0)]
    root: u32,
    /// A fabric between the nodes: a generator (`fat-tree:...`, `torus:...`,
    /// `dragonfly:...`, as `weft plan` takes) or a .toml/.json description; its first port
    /// of each node carries the node's traffic. Default: a flat network, one NIC per node.
    #[arg(long)]
    fabric: Option<String>,
    /// A tuning file (`weft tune`): its lanes and rules replace weft's defaults.
    #[arg(long)]
    tuning: Option<PathBuf>,
    /// Node lane latency, µs (default: the model lanes' intra latency).
    #[arg(long)]
    intra_latency_us: Option<f64>,
    /// Node lane bandwidth, GB/s (default: the model lanes' intra bandwidth).
    #[arg(long)]
    intra_gbps: Option<f64>,
    /// Network latency, µs (default: the model lanes' inter latency).
    #[arg(long)]
    inter_latency_us: Option<f64>,
    /// Bandwidth of each network link, GB/s (default: the model lanes' inter bandwidth).
    #[arg(long)]
    inter_gbps: Option<f64>,
    /// Per-message gap on a network link, µs (LogGP g).
    #[arg(long, default_value_t = 0.0)]
    gap_us: f64,
    /// Per-message CPU overhead of a send, µs (LogGP o).
    #[arg(long, default_value_t = 0.1)]
    overhead_us: f64,
    /// Local copy bandwidth, GB/s (default: the node lane's).
    #[arg(long)]
    copy_gbps: Option<f64>,
    /// Reduction rate, GB/s of combined bytes (default: the model lanes').
    #[arg(long)]
    reduce_gbps: Option<f64>,
    /// Messages up to this size are eager.
    #[arg(long, default_value = "16K")]
    eager: String,
    /// Bytes of the node's collective area (WEFT_SHM_COLL_BYTES).
    #[arg(long, default_value = "4M")]
    area: String,
    /// Network links to list, busiest first.
    #[arg(long, default_value_t = 5)]
    top: usize,
    /// Writes a timeline of up to 32 ranks' steps (the first size and algorithm) as SVG.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// JSON output.
    #[arg(long)]
    json: bool,
}

fn bad(msg: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, msg)
}

fn one_size(text: &str, what: &str) -> Result<usize> {
    match crate::bench::parse_sizes(text).map_err(|e| bad(format!("--{what}: {e}")))?[..] {
        [b] => Ok(b),
        _ => Err(bad(format!("--{what}: one size, not {text:?}"))),
    }
}

/// The network between nodes of a `--fabric`: every directed fabric link (a node's port
/// to its switch, switch to switch, switch to a port) at one bandwidth; routes as the
/// fabric's deterministic routing gives them, found once per node pair.
struct FabricNetwork {
    fabric: Fabric,
    cache: DistanceCache,
    /// The first port of each node.
    port: Vec<u32>,
    ns_per_byte: f64,
    link_ids: HashMap<(Vertex, Vertex), u32>,
    names: Vec<String>,
    routes: HashMap<(u32, u32), Vec<u32>>,
    max_links: usize,
}

impl FabricNetwork {
    fn new(fabric: Fabric, ns_per_byte: f64) -> FabricNetwork {
        let mut port = vec![u32::MAX; fabric.node_count() as usize];
        for e in 0..fabric.endpoint_count() {
            let n = fabric.endpoint_node(e) as usize;
            if port[n] == u32::MAX {
                port[n] = e;
            }
        }
        let max_links =
            2 * (fabric.endpoint_count() as usize + fabric.switch_link_count() as usize);
        FabricNetwork {
            cache: DistanceCache::new(&fabric, 64 << 20),
            fabric,
            port,
            ns_per_byte,
            link_ids: HashMap::new(),
            names: Vec::new(),
            routes: HashMap::new(),
            max_links,
        }
    }
}

impl Routes for FabricNetwork {
    fn link_count(&self) -> usize {
        self.max_links
    }
    fn link_ns_per_byte(&self, _l: usize) -> f64 {
        self.ns_per_byte
    }
    fn route(&mut self, src: u32, dst: u32, out: &mut Vec<u32>) {
        out.clear();
        if let Some(r) = self.routes.get(&(src, dst)) {
            out.extend_from_slice(r);
            return;
        }
        let v = self.fabric.route(
            self.port[src as usize],
            self.port[dst as usize],
            &mut self.cache,
        );
        for w in v.windows(2) {
            let next = self.link_ids.len() as u32;
            let id = *self.link_ids.entry((w[0], w[1])).or_insert_with(|| {
                self.names.push(format!(
                    "{} -> {}",
                    self.fabric.vertex_name(w[0]),
                    self.fabric.vertex_name(w[1])
                ));
                next
            });
            out.push(id);
        }
        self.routes.insert((src, dst), out.clone());
    }
}

fn load_fabric(spec: &str) -> Result<Fabric> {
    let spec = spec.trim();
    if spec.ends_with(".toml") || spec.ends_with(".json") {
        let text =
            std::fs::read_to_string(spec).map_err(|e| bad(format!("fabric file {spec}: {e}")))?;
        if spec.ends_with(".json") {
            parse_fabric_json(&text, spec, &[])
        } else {
            parse_fabric_toml(&text, spec, &[])
        }
    } else {
        Fabric::generate(spec, &[])
    }
}

/// One simulated call.
struct Run {
    algo: &'static str,
    radix: u32,
    bytes: usize,
    outcome: Outcome,
    build_s: f64,
    sim_s: f64,
    link_names: Vec<String>,
}

pub(crate) fn run(a: SimArgs) -> i32 {
    match sim(&a) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("weft sim: {e}");
            2
        }
    }
}

fn sim(a: &SimArgs) -> Result<()> {
    let coll = Coll::from_name(&a.op)?;
    if a.procs == 0 {
        return Err(bad("--procs must be at least 1".into()));
    }
    let sizes = crate::bench::parse_sizes(&a.bytes).map_err(|e| bad(format!("--bytes: {e}")))?;
    let fabric = a.fabric.as_deref().map(load_fabric).transpose()?;
    let ppn = match (a.ppn, &fabric) {
        (Some(0), _) => return Err(bad("--ppn must be at least 1".into())),
        (Some(p), _) => p,
        (None, Some(f)) => a.procs.div_ceil(f.node_count().max(1)),
        (None, None) => a.procs,
    };
    let nodes = a.procs.div_ceil(ppn);
    if let Some(f) = &fabric {
        if nodes > f.node_count() {
            return Err(bad(format!(
                "{} ranks at {ppn} per node need {nodes} nodes; the fabric has {}",
                a.procs,
                f.node_count()
            )));
        }
    }
    let mut vars: Vec<(String, String)> = Vec::new();
    if let Some(t) = &a.tuning {
        vars.push(("WEFT_TUNING_FILE".into(), t.display().to_string()));
    }
    let upper = coll.name().to_ascii_uppercase();
    if let Some(k) = a.radix {
        vars.push((format!("WEFT_{upper}_RADIX"), k.to_string()));
    }
    let base = tuning_of(&vars)?;
    let lanes = *base.model_lanes();
    let cores = a
        .cores
        .or((lanes.node_cores > 0).then_some(lanes.node_cores))
        .unwrap_or(ppn);
    let gbps = |v: Option<f64>, ns_per_byte: f64, what: &str| -> Result<f64> {
        match v {
            Some(g) if g > 0.0 && g.is_finite() => Ok(1.0 / g),
            Some(g) => Err(bad(format!("--{what} {g}: must be above 0"))),
            None => Ok(ns_per_byte),
        }
    };
    let intra_ns_per_byte = gbps(a.intra_gbps, lanes.intra.ns_per_byte, "intra-gbps")?;
    let machine = Machine {
        ppn,
        cores,
        overhead_ns: a.overhead_us * 1e3,
        intra_latency_ns: a
            .intra_latency_us
            .map_or(lanes.intra.latency_ns, |u| u * 1e3),
        intra_ns_per_byte,
        inter_latency_ns: a
            .inter_latency_us
            .map_or(lanes.inter.latency_ns, |u| u * 1e3),
        inter_gap_ns: a.gap_us * 1e3,
        copy_ns_per_byte: gbps(a.copy_gbps, intra_ns_per_byte, "copy-gbps")?,
        reduce_ns_per_byte: gbps(a.reduce_gbps, lanes.reduce_ns_per_byte, "reduce-gbps")?,
        cma_latency_ns: a
            .intra_latency_us
            .map_or(lanes.intra.latency_ns, |u| u * 1e3),
        cma_ns_per_byte: intra_ns_per_byte,
        arrive_ns: a
            .intra_latency_us
            .map_or(lanes.intra.latency_ns, |u| u * 1e3),
        header_ns: 50.0,
        eager_bytes: one_size(&a.eager, "eager")? as u64,
    };
    let inter_ns_per_byte = gbps(a.inter_gbps, lanes.inter.ns_per_byte, "inter-gbps")?;
    let area = one_size(&a.area, "area")?;
    let rails = lanes.inter_rails;
    let traits = CallTraits {
        commutative: true,
        shared_memory: a.procs > 1 && ppn >= a.procs,
        blocking: true,
        cma: a.procs > 1 && ppn >= a.procs,
        oversubscribed: ppn > cores,
    };
    let mut runs = Vec::new();
    for &bytes in &sizes {
        let choices: Vec<Choice> = match a.algo.as_deref() {
            None => vec![base.select(coll, a.procs, ppn, bytes as u64, traits)?],
            Some("all") => {
                let mut out = Vec::new();
                for al in algorithms(coll) {
                    let mut v = vars.clone();
                    v.push((format!("WEFT_{upper}_ALGO"), al.name.to_string()));
                    // An algorithm the call does not allow is left out (its restriction).
                    match tuning_of(&v)?.select(coll, a.procs, ppn, bytes as u64, traits) {
                        Ok(c) => out.push(c),
                        Err(e) if !a.json => println!("left out: {e}"),
                        Err(_) => {}
                    }
                }
                out
            }
            Some(name) => {
                let mut v = vars.clone();
                v.push((format!("WEFT_{upper}_ALGO"), name.to_string()));
                vec![tuning_of(&v)?.select(coll, a.procs, ppn, bytes as u64, traits)?]
            }
        };
        let every = choices.len() > 1;
        for choice in choices {
            let run = simulate_one(
                coll,
                &choice,
                a,
                ppn,
                bytes,
                rails,
                area,
                &machine,
                fabric.as_ref(),
                inter_ns_per_byte,
            );
            match run {
                Ok(r) => runs.push(r),
                // With `--algo all`, one that is too large is left out and said so.
                Err(e) if every => {
                    if !a.json {
                        println!("left out: {e}");
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
    if let (Some(path), Some(r)) = (&a.plot, runs.first()) {
        std::fs::write(path, timeline_svg(r, coll.name(), a.procs))
            .map_err(|e| bad(format!("--plot {}: {e}", path.display())))?;
    }
    if a.json {
        let rows: Vec<serde_json::Value> = runs.iter().map(|r| run_json(r, a.top)).collect();
        let v = serde_json::json!({
            "op": coll.name(),
            "procs": a.procs,
            "ppn": ppn,
            "cores": cores,
            "nodes": nodes,
            "network": a.fabric.as_deref().unwrap_or("flat"),
            "machine": {
                "overhead_us": machine.overhead_ns / 1e3,
                "intra_latency_us": machine.intra_latency_ns / 1e3,
                "intra_gbps": 1.0 / machine.intra_ns_per_byte,
                "inter_latency_us": machine.inter_latency_ns / 1e3,
                "inter_gbps": 1.0 / inter_ns_per_byte,
                "copy_gbps": 1.0 / machine.copy_ns_per_byte,
                "reduce_gbps": 1.0 / machine.reduce_ns_per_byte,
                "eager_bytes": machine.eager_bytes,
            },
            "runs": rows,
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        println!(
            "{} on {} ranks, {ppn} per node ({nodes} node(s), {cores} cores each), {} network",
            coll.name(),
            a.procs,
            a.fabric.as_deref().unwrap_or("flat")
        );
        println!(
            "{:>20} {:>5} {:>10} {:>14} {:>10} {:>10} {:>8}",
            "algorithm", "radix", "bytes", "predicted_us", "messages", "steps", "sim_s"
        );
        for r in &runs {
            println!(
                "{:>20} {:>5} {:>10} {:>14.2} {:>10} {:>10} {:>8.2}",
                r.algo,
                r.radix,
                r.bytes,
                r.outcome.completion_ns() / 1e3,
                r.outcome.messages,
                r.outcome.steps,
                r.build_s + r.sim_s
            );
        }
        // The busiest links of the first run (`--json` has every run's).
        for r in runs.iter().take(1) {
            let top = busiest(r, a.top);
            if top.is_empty() {
                continue;
            }
            println!("busiest links of {} at {} bytes:", r.algo, r.bytes);
            for (name, bytes, busy_ns) in top {
                println!("  {name:<40} {bytes:>14} B {:>12.2} us busy", busy_ns / 1e3);
            }
        }
    }
    Ok(())
}

fn tuning_of(vars: &[(String, String)]) -> Result<Tuning> {
    let v: Vec<(&str, &str)> = vars.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    Tuning::from_vars(&v)
}

#[allow(clippy::too_many_arguments)]
fn simulate_one(
    coll: Coll,
    choice: &Choice,
    a: &SimArgs,
    ppn: u32,
    bytes: usize,
    rails: u32,
    area: usize,
    machine: &Machine,
    fabric: Option<&Fabric>,
    inter_ns_per_byte: f64,
) -> Result<Run> {
    let t0 = Instant::now();
    fits_estimate(coll, choice, a, ppn, bytes, rails, area)?;
    let call = SimCall::new(a.procs, ppn, bytes, a.root, rails, area);
    let plans = SimPlans::new(coll, choice, &call)?;
    let mut programs: Vec<Program> = Vec::with_capacity(a.procs as usize);
    let mut ops = 0usize;
    for r in 0..a.procs {
        let p = plans.rank(r)?;
        ops += p.op_count();
        // Rank 0's program times the ranks estimates the whole before building it.
        if ops > MAX_OPS || (r == 0 && p.op_count().saturating_mul(a.procs as usize) > MAX_OPS) {
            return Err(bad(format!(
                "{} on {} ranks has more than {MAX_OPS} actions in all (rank {r} alone has {}): \
                 too large to simulate",
                choice.algo.name,
                a.procs,
                p.op_count()
            )));
        }
        programs.push(p);
    }
    let build_s = t0.elapsed().as_secs_f64();
    let trace: Vec<u32> = {
        let n = a.procs.min(32);
        (0..n)
            .map(|i| (i as u64 * a.procs as u64 / n as u64) as u32)
            .collect()
    };
    let t1 = Instant::now();
    let nodes = a.procs.div_ceil(ppn);
    let (outcome, link_names) = match fabric {
        None => {
            let mut net = FlatNetwork {
                nodes,
                ns_per_byte: inter_ns_per_byte,
            };
            let out = simulate(&programs, machine, &mut net, &trace)?;
            let names = (0..2 * nodes)
                .map(|l| {
                    format!(
                        "node {} nic {}",
                        l / 2,
                        if l % 2 == 0 { "out" } else { "in" }
                    )
                })
                .collect();
            (out, names)
        }
        Some(f) => {
            let mut net = FabricNetwork::new(f.clone(), inter_ns_per_byte);
            let out = simulate(&programs, machine, &mut net, &trace)?;
            (out, std::mem::take(&mut net.names))
        }
    };
    Ok(Run {
        algo: choice.algo.name,
        radix: choice.radix,
        bytes,
        outcome,
        build_s,
        sim_s: t1.elapsed().as_secs_f64(),
        link_names,
    })
}

/// Ranks of the two calls [`fits_estimate`] builds rank 0's program for, the second twice
/// the first; calls of more ranks than the second are estimated from them.
const PROBE_RANKS: [u32; 2] = [512, 1024];

/// Refuses, before the call's own programs are built, a call whose programs would exceed
/// [`MAX_OPS`] by an estimate: rank 0's program is built for the same call on
/// [`PROBE_RANKS`] ranks, and its growth between them (a power of the ranks) carried to the
/// call's ranks. Building rank 0's program can itself outgrow memory: the node-area
/// algorithms of 16 384 ranks on one node move each rank's data through 64-byte slots, some
/// 300 million actions for rank 0 alone. The check on the built programs still follows.
fn fits_estimate(
    coll: Coll,
    choice: &Choice,
    a: &SimArgs,
    ppn: u32,
    bytes: usize,
    rails: u32,
    area: usize,
) -> Result<()> {
    if a.procs <= PROBE_RANKS[1] {
        return Ok(());
    }
    let mut ops = [0usize; 2];
    for (o, q) in ops.iter_mut().zip(PROBE_RANKS) {
        let root = if a.root < q { a.root } else { 0 };
        let call = SimCall::new(q, ppn.min(q), bytes, root, rails, area);
        *o = SimPlans::new(coll, choice, &call)?.rank(0)?.op_count();
    }
    let growth = if ops[0] == 0 || ops[1] <= ops[0] {
        0.0
    } else {
        (ops[1] as f64 / ops[0] as f64).log2()
    };
    let rank0 = ops[1] as f64 * (a.procs as f64 / PROBE_RANKS[1] as f64).powf(growth);
    let all = rank0 * a.procs as f64;
    if all > MAX_OPS as f64 {
        return Err(bad(format!(
            "{} on {} ranks ({ppn} per node) would have about {all:.1e} actions in all, more \
             than {MAX_OPS} (rank 0's program has {} actions on {} ranks and {} on {}, so about \
             {rank0:.1e} on {}): too large to simulate{}",
            choice.algo.name,
            a.procs,
            ops[0],
            PROBE_RANKS[0],
            ops[1],
            PROBE_RANKS[1],
            a.procs,
            if ppn >= a.procs {
                " (every rank is on one node: give --ppn, the ranks per node)"
            } else {
                ""
            }
        )));
    }
    Ok(())
}

/// The `top` busiest links: network links by busy time, or with no network traffic the
/// ranks' copies on their node.
fn busiest(r: &Run, top: usize) -> Vec<(String, u64, f64)> {
    let o = &r.outcome;
    let mut v: Vec<(String, u64, f64)> = o
        .link_busy_ns
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b > 0.0)
        .map(|(l, &b)| {
            let name = r
                .link_names
                .get(l)
                .cloned()
                .unwrap_or_else(|| format!("link {l}"));
            (name, o.link_bytes[l], b)
        })
        .collect();
    if v.is_empty() {
        v = o
            .intra_busy_ns
            .iter()
            .enumerate()
            .filter(|&(_, &b)| b > 0.0)
            .map(|(rank, &b)| (format!("rank {rank} copies in"), o.intra_bytes[rank], b))
            .collect();
    }
    v.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
    v.truncate(top);
    v
}

fn run_json(r: &Run, top: usize) -> serde_json::Value {
    let links: Vec<serde_json::Value> = busiest(r, top)
        .into_iter()
        .map(|(name, bytes, busy)| {
            serde_json::json!({"link": name, "bytes": bytes, "busy_us": busy / 1e3})
        })
        .collect();
    serde_json::json!({
        "algo": r.algo,
        "radix": r.radix,
        "bytes": r.bytes,
        "predicted_us": r.outcome.completion_ns() / 1e3,
        "messages": r.outcome.messages,
        "steps": r.outcome.steps,
        "build_s": r.build_s,
        "sim_s": r.sim_s,
        "busiest_links": links,
    })
}

/// A timeline of the traced ranks: one row per rank, each step a bar (darker: its local
/// work until its messages were posted; lighter: waiting for them).
fn timeline_svg(r: &Run, op: &str, procs: u32) -> String {
    let spans: &[StepSpan] = &r.outcome.trace;
    let mut ranks: Vec<u32> = spans.iter().map(|s| s.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    let end = r.outcome.completion_ns().max(1.0);
    let (left, top, width, row) = (90.0, 40.0, 900.0, 16.0);
    let height = top + row * ranks.len() as f64 + 40.0;
    let x = |t: f64| left + width * t / end;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{height}" font-family="sans-serif" font-size="11">"#,
        left + width + 20.0
    );
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="20" font-size="14">{op} of {} bytes on {procs} ranks by {} (radix {}): {:.2} us predicted</text>"#,
        r.bytes,
        r.algo,
        r.radix,
        end / 1e3
    );
    for (i, rank) in ranks.iter().enumerate() {
        let y = top + row * i as f64;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">rank {rank}</text>"#,
            left - 6.0,
            y + row * 0.75
        );
        for sp in spans.iter().filter(|sp| sp.rank == *rank) {
            let done = if sp.end_ns.is_finite() {
                sp.end_ns
            } else {
                sp.posted_ns
            };
            let _ = writeln!(
                s,
                r##"<rect x="{:.2}" y="{y}" width="{:.2}" height="{}" fill="#9ecae1" stroke="#3182bd" stroke-width="0.3"><title>step {} {:.2}-{:.2} us</title></rect>"##,
                x(sp.start_ns),
                (x(done) - x(sp.start_ns)).max(0.5),
                row - 3.0,
                sp.step,
                sp.start_ns / 1e3,
                done / 1e3
            );
            let _ = writeln!(
                s,
                r##"<rect x="{:.2}" y="{y}" width="{:.2}" height="{}" fill="#3182bd"/>"##,
                x(sp.start_ns),
                (x(sp.posted_ns) - x(sp.start_ns)).max(0.0),
                row - 3.0
            );
        }
    }
    let axis_y = top + row * ranks.len() as f64 + 14.0;
    for k in 0..=4 {
        let t = end * k as f64 / 4.0;
        let _ = writeln!(
            s,
            r#"<text x="{:.2}" y="{axis_y}" text-anchor="middle">{:.1} us</text>"#,
            x(t),
            t / 1e3
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft::coll::sim_plan::rank_program;

    /// Round figures for the closed forms: `ppn` ranks per node, a core each.
    fn machine(ppn: u32) -> Machine {
        Machine {
            ppn,
            cores: ppn,
            overhead_ns: 100.0,
            intra_latency_ns: 300.0,
            intra_ns_per_byte: 0.1,
            inter_latency_ns: 3000.0,
            inter_gap_ns: 0.0,
            copy_ns_per_byte: 0.1,
            reduce_ns_per_byte: 0.25,
            cma_latency_ns: 300.0,
            cma_ns_per_byte: 0.1,
            arrive_ns: 300.0,
            header_ns: 50.0,
            eager_bytes: 16384,
        }
    }

    /// A ring allreduce of n bytes on p ranks one per node, as the runtime's ring plan
    /// runs: 2(p − 1) rounds of o + n/p bytes + L, and p − 1 reductions of n/p bytes.
    #[test]
    fn ring_allreduce_matches_its_closed_form() {
        let (p, n) = (6u32, 6 * 1024 * 1024usize);
        let t = Tuning::from_vars(&[("WEFT_ALLREDUCE_ALGO", "ring")]).unwrap();
        let traits = CallTraits {
            commutative: true,
            shared_memory: false,
            blocking: true,
            cma: false,
            oversubscribed: false,
        };
        let choice = t.select(Coll::Allreduce, p, 1, n as u64, traits).unwrap();
        let call = SimCall::new(p, 1, n, 0, 1, 4 << 20);
        let programs: Vec<Program> = (0..p)
            .map(|r| rank_program(Coll::Allreduce, &choice, &call, r).unwrap())
            .collect();
        let m = machine(1);
        let mut net = FlatNetwork {
            nodes: p,
            ns_per_byte: 0.5,
        };
        let out = simulate(&programs, &m, &mut net, &[]).unwrap();
        let c = (n / p as usize) as f64;
        let round = 100.0 + c * 0.5 + 3000.0;
        let want = 2.0 * (p - 1) as f64 * round + (p - 1) as f64 * c * 0.25;
        assert!(
            (out.completion_ns() - want).abs() < 1e-6 * want,
            "{} against {want}",
            out.completion_ns()
        );
        // Every node's NIC sent 2(p − 1) chunks.
        assert_eq!(out.link_bytes[0], 2 * (p as u64 - 1) * c as u64);
    }

    #[test]
    fn every_allreduce_algorithm_runs_to_its_end() {
        // On one node of 4 (the area's algorithms) and on 4 nodes of 2 (the others):
        // every program set the builders make matches (no rank left waiting).
        for (procs, ppn) in [(4u32, 4u32), (8, 2), (7, 7), (6, 2)] {
            let traits = CallTraits {
                commutative: true,
                shared_memory: ppn >= procs,
                blocking: true,
                cma: ppn >= procs,
                oversubscribed: false,
            };
            for al in algorithms(Coll::Allreduce) {
                let Ok(t) = Tuning::from_vars(&[("WEFT_ALLREDUCE_ALGO", al.name)]) else {
                    continue;
                };
                let Ok(choice) = t.select(Coll::Allreduce, procs, ppn, 1 << 16, traits) else {
                    continue;
                };
                let call = SimCall::new(procs, ppn, 1 << 16, 0, 1, 4 << 20);
                let programs: Vec<Program> = (0..procs)
                    .map(|r| rank_program(Coll::Allreduce, &choice, &call, r).unwrap())
                    .collect();
                let m = machine(ppn);
                let mut net = FlatNetwork {
                    nodes: procs.div_ceil(ppn),
                    ns_per_byte: 0.5,
                };
                let out = simulate(&programs, &m, &mut net, &[])
                    .unwrap_or_else(|e| panic!("{} on {procs}/{ppn}: {e}", al.name));
                // At least the buffer's bytes once through the slowest lane's time.
                assert!(
                    out.completion_ns() > (1 << 16) as f64 * 0.1,
                    "{} on {procs}/{ppn}: {}",
                    al.name,
                    out.completion_ns()
                );
            }
        }
    }
}
