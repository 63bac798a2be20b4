//! `weft info`: what this machine and build offer, and every knob with its value.

use weft::{knob_tables, BlockMode, CmaMode, Config, YieldMode};

/// Arguments of `weft info`.
#[derive(clap::Args)]
pub(crate) struct InfoArgs {
    /// List every `WEFT_*` knob with its type, default, current value and help.
    #[arg(long)]
    pub knobs: bool,
    /// Explain which algorithm a collective would use: every candidate with its modelled
    /// cost, and the choice (honours `WEFT_<COLL>_ALGO`, `_RADIX` and `WEFT_TUNING_FILE`).
    #[arg(long, value_name = "COLL")]
    pub explain: Option<String>,
    /// With --explain: bytes per rank (e.g. 8, 64K, 1MiB).
    #[arg(long, default_value = "8")]
    pub bytes: String,
    /// With --explain: number of ranks.
    #[arg(short = 'n', long = "np", default_value_t = 2)]
    pub nranks: u32,
    /// With --explain: ranks per node (default: all on one node).
    #[arg(long)]
    pub ppn: Option<u32>,
    /// With --explain: network rails between nodes (as `WEFT_MAX_RAILS` and the lanes give
    /// a job), which the multi-rail algorithms need.
    #[arg(long, default_value_t = 1)]
    pub rails: u32,
    /// With --explain: print JSON.
    #[arg(long)]
    pub json: bool,
    /// With --explain: the hosts of a communicator's ranks (comma-separated, one per rank):
    /// ask the aggregation manager `WEFT_AGGD` names which tree it would get now
    /// (docs/aggd.md).
    #[arg(long, value_delimiter = ',')]
    pub hosts: Vec<String>,
    /// Every candidate lane (transport and interface) for a same-node and an other-node peer,
    /// with its score, and the choice (honours `WEFT_TRANSPORTS`, `WEFT_MAX_RAILS`; `--ppn`
    /// sets the ranks per node the scores assume).
    #[arg(long)]
    pub transports: bool,
    /// Every function of the MPI standard ABI that `libmpi_abi.so.1` exports, and whether
    /// weft implements it (the others return MPI_ERR_UNSUPPORTED_OPERATION).
    #[arg(long)]
    pub mpi: bool,
}

/// Runs `weft info`.
pub(crate) fn run(args: InfoArgs) -> i32 {
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("weft info: {e}");
            return 2;
        }
    };
    if args.knobs {
        print_knobs(&config);
        return 0;
    }
    if args.transports {
        return crate::transports::run(&config, args.ppn);
    }
    if args.mpi {
        print_mpi();
        return 0;
    }
    if let Some(coll) = &args.explain {
        return explain(coll, &args, &config);
    }
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let cma = probe_cma();
    println!("weft {}", env!("CARGO_PKG_VERSION"));
    // The build, as `weft --version` and ompi_info's header give it.
    for (name, value) in crate::build_info::lines().into_iter().skip(1) {
        println!("{:<13}{value}", format!("{name}:"));
    }
    println!(
        "node:        {} ({} cores available to this process)",
        hostname(),
        cores
    );
    print_bootstrap();
    println!("fortran:     {}", fortran_summary());
    let offered: Vec<String> = weft::lanes::transports(&config)
        .into_iter()
        .map(|t| match (t.offered, t.allowed) {
            (Err(_), _) => format!("{} (not offered)", t.name),
            (Ok(()), true) => t.name.to_string(),
            (Ok(()), false) => format!("{} (not in WEFT_TRANSPORTS)", t.name),
        })
        .collect();
    println!(
        "transports:  {}; `weft info --transports` gives the lanes, their figures and the choice",
        offered.join(", ")
    );
    println!(
        "  shm rings:   {} bytes per peer pair at first (eager limit {} bytes), {} bytes for up to {} peers past {} bytes of traffic (eager limit {} bytes)",
        config.shm_small_ring_bytes,
        config.shm_eager_bytes.min(config.shm_small_ring_bytes / 4),
        config.shm_ring_bytes,
        config.max_fast_peers,
        config.fast_peer_bytes,
        config.shm_eager_bytes
    );
    println!(
        "  rendezvous:  {} (CMA {}), fragments of {} bytes through the segment below the single copy or without CMA",
        match config.cma {
            CmaMode::Auto => "auto",
            CmaMode::On => "CMA required",
            CmaMode::Off => "pipelined copy (CMA off)",
        },
        if cma {
            "allowed by this kernel"
        } else {
            "refused by this kernel"
        },
        config.shm_fragment_bytes
    );
    let ppn = args.ppn.unwrap_or(args.nranks).max(1);
    match weft::shm_rendezvous(&config, ppn, cma) {
        Ok(r) => {
            println!(
                "    single copy from: {} (per peer pair at start-up, {ppn} ranks per node)",
                r.single_copy_why
            );
            println!("    both sides copy from: {}", r.split_why);
        }
        Err(e) => println!("    thresholds: {e}"),
    }
    println!(
        "  idle policy: {}",
        match config.yield_mode {
            YieldMode::Auto => format!(
                "poll; yield at once when a node runs more ranks than cores, else after {} us of idle polling",
                config.yield_after_us
            ),
            YieldMode::Always => "yield whenever idle".into(),
            YieldMode::Never => "poll without yielding".into(),
        }
    );
    println!(
        "  sleep policy: {}",
        match (config.block_mode, config.yield_mode) {
            (BlockMode::Never, _) => "never sleep (WEFT_BLOCK=off)".to_string(),
            (BlockMode::Now, _) => "sleep on a futex as soon as a wait finds nothing to do, woken by the peer that delivers (at most WEFT_BLOCK_SLEEP_MS at a time)".into(),
            (BlockMode::Auto, YieldMode::Never) => "never sleep (WEFT_YIELD=off never yields)".into(),
            (BlockMode::Auto, _) => format!(
                "spin and yield; sleep on a futex only while programs that are not this job's ranks compete for the cores (runnable tasks from /proc/loadavg less the job's awake local ranks, more runnable than usable cores; read at most every 2 ms in the slow part of a wait): instead of yielding where a rank yields at once and a yield lost its core for 50 us, else after {} of yielding (0: where it would first yield, after its spin); whatever the load after 20 ms of yielding; woken by the peer that delivers (at most WEFT_BLOCK_SLEEP_MS at a time); waits on network peers, full rings, one-sided and file operations only yield\n    load:      {}",
                match config.block_after_us {
                    Some(us) => format!("{us} us (WEFT_BLOCK_AFTER_US)"),
                    None => format!(
                        "0 us (a rank with a core of its own) or {} us (a rank that yields at once)",
                        weft::node_load::AT_ONCE_BLOCK_AFTER.as_micros()
                    ),
                },
                weft::node_load::explain_now(args.ppn.unwrap_or(args.nranks))
            ),
        }
    );
    print_peer_memory(&config, args.nranks, args.ppn);
    println!(
        "knobs:       `weft info --knobs` lists all {}",
        knob_tables().iter().map(|t| t.len()).sum::<usize>()
    );
    0
}

/// The bootstrap back end a rank started from this environment would use, and why; for
/// PMIx, whether the library loads (nothing is connected or initialised).
#[allow(
    clippy::disallowed_methods,
    reason = "the bootstrap choice reads launchers' variables (PMI_*, PMIX_*, SLURM_*), not settings"
)]
fn print_bootstrap() {
    let var = |n: &str| std::env::var(n).ok();
    match weft_boot::select::choose(&var) {
        Ok(c) => {
            println!("bootstrap:   {} ({})", c.backend, c.why);
            if c.backend == weft_boot::Backend::Pmix {
                let lib = var(weft_boot::knobs::PMIX_LIBRARY)
                    .filter(|l| !l.trim().is_empty())
                    .unwrap_or_else(|| weft_boot::pmix::DEFAULT_LIBRARY.to_owned());
                match weft_boot::pmix::library_status(lib.trim()) {
                    Ok(s) => println!("  pmix:        {s}"),
                    Err(e) => println!("  pmix:        {lib} cannot be loaded: {e}"),
                }
            }
        }
        Err(e) => println!("bootstrap:   none: {e}"),
    }
}

/// `weft info --mpi`: the standard ABI's functions, implemented ones marked.
fn print_mpi() {
    let table = mpi_abi::function_table();
    let real = table.iter().filter(|(_, implemented)| *implemented).count();
    let others = if real < table.len() {
        "; the others return MPI_ERR_UNSUPPORTED_OPERATION"
    } else {
        ""
    };
    println!(
        "MPI 5.0 standard ABI (libmpi_abi.so.1): {real} of {} functions implemented{others}",
        table.len()
    );
    let io: Vec<bool> = table
        .iter()
        .filter(|(n, _)| n.starts_with("MPI_File_") || n.starts_with("MPI_Register_datarep"))
        .map(|(_, implemented)| *implemented)
        .collect();
    println!(
        "  chapter 14, I/O (MPI_File_*, MPI_Register_datarep*): {} of {} implemented",
        io.iter().filter(|&&i| i).count(),
        io.len()
    );
    println!("  {}", fortran_summary());
    for (name, implemented) in table {
        println!("{} {name}", if implemented { "yes" } else { " no" });
    }
    for (name, why) in weft_mpifort::UNBOUND {
        println!("fortran: no {name}: {why}");
    }
}

/// What the Fortran bindings are: built (how many procedures) or why not.
fn fortran_summary() -> String {
    match weft_mpifort::NOT_BUILT {
        None => format!(
            "Fortran (mpif.h, use mpi, use mpi_f08 for gfortran; libmpifort_abi, `mpifort -show` gives the command): {} procedures bound, {} of the ABI's not (`weft info --mpi` lists them)",
            weft_mpifort::BOUND.len(),
            weft_mpifort::UNBOUND.len()
        ),
        Some(why) => format!("Fortran bindings not built: {why}"),
    }
}

fn explain(coll: &str, args: &InfoArgs, config: &Config) -> i32 {
    match explain_text(coll, args, config) {
        Ok(text) => {
            print!("{text}");
            0
        }
        Err(e) => {
            eprintln!("weft info --explain: {e}");
            2
        }
    }
}

/// What `weft info --explain` prints: a table, or one JSON object with `--json`.
fn explain_text(coll: &str, args: &InfoArgs, config: &Config) -> Result<String, String> {
    let bytes = weft_core::units::parse_bytes(&args.bytes).map_err(|e| format!("--bytes: {e}"))?;
    let ppn = args.ppn.unwrap_or(args.nranks);
    let e = weft::coll::explain(coll, bytes, args.nranks, ppn, args.rails)
        .map_err(|e| e.to_string())?;
    if args.json {
        let candidates: Vec<serde_json::Value> = e
            .candidates
            .iter()
            .map(|c| serde_json::json!({"algo": c.algo, "cost_us": c.cost_us, "radix": c.radix}))
            .collect();
        let v =
            serde_json::json!({"choice": e.choice, "source": e.source, "candidates": candidates});
        return Ok(format!("{v}\n"));
    }
    let mut out = format!(
        "{coll}, {bytes} bytes per rank, {} ranks, {ppn} per node: {} ({})\n",
        args.nranks, e.choice, e.source
    );
    out += &format!(
        "  {:<24} {:>6} {:>14}\n",
        "algorithm", "radix", "model (us)"
    );
    for c in &e.candidates {
        let mark = if c.algo == e.choice { "*" } else { " " };
        let cost = c
            .cost_us
            .map(|x| format!("{x:.3}"))
            .unwrap_or_else(|| "not modelled".into());
        out += &format!("{mark} {:<24} {:>6} {:>14}\n", c.algo, c.radix, cost);
    }
    // The groups the hierarchical trees nest inside each node (docs/topology.md).
    let nodes = if args.nranks > ppn {
        ", then nodes"
    } else {
        ""
    };
    out += &match weft::coll::node_core_groups(config, ppn) {
        Ok((kind, ids)) => {
            let ids: Vec<String> = ids.iter().map(u32::to_string).collect();
            format!(
                "hierarchical levels: {kind} groups of a node's ranks ({}){nodes}\n",
                ids.join(",")
            )
        }
        Err(why) => format!("hierarchical levels: one group per node ({why}){nodes}\n"),
    };
    // The in-network tree (docs/aggd.md): what the manager would give these hosts now.
    out += &if !args.hosts.is_empty() {
        format!(
            "aggregation tree: {}\n",
            weft::agg::explain_hosts(config, &args.hosts)
        )
    } else if config
        .values
        .text("WEFT_AGGD")
        .is_some_and(|a| !a.is_empty())
    {
        "aggregation tree: a job's rank 0 asks WEFT_AGGD at start-up (--hosts H,... asks \
         now)\n"
            .to_string()
    } else {
        "aggregation tree: type I (host trees): WEFT_AGGD is not set\n".to_string()
    };
    Ok(out)
}

fn print_knobs(config: &Config) {
    println!(
        "{:<28} {:<14} {:<10} {:<10} help",
        "name", "type", "default", "value"
    );
    for (k, value) in config.values.listing() {
        // A job's secret is what keeps strangers out of its sockets: never print it.
        let value = match value {
            Some(_) if k.name.ends_with("_SECRET") => Some("(hidden)".to_string()),
            v => v,
        };
        println!(
            "{:<28} {:<14} {:<10} {:<10} {}",
            k.name,
            k.kind.describe(),
            if k.default.is_empty() { "-" } else { k.default },
            value.as_deref().unwrap_or("-"),
            k.help
        );
    }
}

/// Whether this kernel lets a process read another process's memory with CMA (ptrace
/// policy): starts a short-lived child, reads a readable page of it, ends it.
fn probe_cma() -> bool {
    let Ok(mut child) = std::process::Command::new("sleep").arg("5").spawn() else {
        return false;
    };
    let readable = std::fs::read_to_string(format!("/proc/{}/maps", child.id()))
        .ok()
        .and_then(|maps| {
            let line = maps.lines().find(|l| {
                l.split_whitespace()
                    .nth(1)
                    .is_some_and(|p| p.starts_with('r'))
            })?;
            u64::from_str_radix(line.split('-').next()?, 16).ok()
        });
    let ok = readable.is_some_and(|a| {
        weft_transport::shm::cma::read(child.id() as i32, a, &mut [0u8; 8]).is_ok()
    });
    let _ = child.kill();
    let _ = child.wait();
    ok
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

/// The memory a rank uses for its peers: shared-memory rings it sends into and TCP receive
/// buffers, in memory-saving mode and with the most peers allowed in high-speed mode, for a
/// job of `nranks` ranks with `ppn` per node (`-n`, `--ppn`), and the node segment's size.
fn print_peer_memory(config: &Config, nranks: u32, ppn: Option<u32>) {
    use weft_transport::shm::ring::ring_footprint;
    use weft_transport::tcp::{frame::Limits, receive_buffer_bytes};
    let ppn = ppn.unwrap_or(nranks).clamp(1, nranks.max(1));
    let local_peers = ppn as usize - 1;
    let remote_peers = nranks.saturating_sub(ppn) as usize;
    // The node's rings as init lays them out (a small ring equal to the large one means no
    // switching: no large rings in the pool).
    let modes = match config.shm_layout(ppn) {
        Ok((_, modes)) => modes,
        Err(e) => {
            println!("peer memory: {e}");
            return;
        }
    };
    let small_ring = ring_footprint(modes.small_ring_bytes);
    let large_ring = ring_footprint(config.shm_ring_bytes);
    let limits = Limits {
        eager_bytes: config.tcp_eager_bytes as u32,
        fragment_bytes: config.tcp_fragment_bytes as u32,
    };
    let small_fragment = config.tcp_small_fragment_bytes() as u32;
    let tcp_small = receive_buffer_bytes(&limits, small_fragment, false);
    let tcp_large = receive_buffer_bytes(&limits, small_fragment, true);
    let max_fast = config.max_fast_peers as usize;
    let shm_min = local_peers * small_ring;
    let shm_max = shm_min + modes.fast_rings as usize * large_ring;
    let tcp_min = remote_peers * tcp_small;
    let tcp_max = tcp_min + remote_peers.min(max_fast) * (tcp_large - tcp_small);
    // Shared-memory figures are reservations in the node segment: a ring's pages take memory
    // only once written (a running rank reports what it touched: Weft::shm_peer_touched_bytes).
    // TCP receive buffers are allocated whole when a connection is made.
    println!(
        "peer memory: per rank, {nranks} ranks with {ppn} per node (-n, --ppn): shm {} to {} reserved (pages used only once written), tcp {} to {} allocated (all memory-saving .. {} peers of each kind high-speed)",
        human(shm_min),
        human(shm_max),
        human(tcp_min),
        human(tcp_max),
        max_fast
    );
    println!(
        "  per peer:    shm ring {} (+{} high-speed), tcp receive buffer {} ({} high-speed)",
        human(small_ring),
        human(large_ring),
        human(tcp_small),
        human(tcp_large)
    );
    let mut sizes = vec![16, 64];
    if ppn >= 2 && !sizes.contains(&ppn) {
        sizes.insert(0, ppn);
    }
    for local in sizes {
        let (layout, modes) = match config.shm_layout(local) {
            Ok(g) => g,
            Err(e) => {
                println!("  segment:     {local} local ranks: {e}");
                continue;
            }
        };
        println!(
            "  segment:     {local} local ranks: {} ({} if every pair had a large ring)",
            human(layout.segment_bytes_with(&modes)),
            human(layout.segment_bytes())
        );
    }
}

/// Bytes in binary units with one decimal.
fn human(bytes: usize) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.1} GiB", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    } else if b >= 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(bytes: &str, nranks: u32, ppn: Option<u32>, json: bool) -> InfoArgs {
        InfoArgs {
            knobs: false,
            explain: None,
            hosts: Vec::new(),
            bytes: bytes.into(),
            nranks,
            ppn,
            rails: 1,
            json,
            transports: false,
            mpi: false,
        }
    }

    #[test]
    fn explain_lists_every_registered_algorithm_and_marks_the_choice() {
        for coll in weft::coll::select::ALL {
            let algos = weft::coll::select::algorithms(*coll);
            let text = explain_text(coll.name(), &args("64K", 4, None, false), &plain()).unwrap();
            assert!(text.starts_with(&format!("{}, 65536 bytes per rank, 4 ranks", coll.name())));
            for a in algos {
                assert!(text.contains(&format!(" {} ", a.name)), "{text}");
            }
            assert_eq!(
                text.lines().filter(|l| l.starts_with('*')).count(),
                1,
                "{text}"
            );
        }
    }

    #[test]
    fn explain_json_names_choice_and_costs() {
        let text = explain_text("alltoall", &args("1M", 4, None, true), &plain()).unwrap();
        let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        let names: Vec<&str> = v["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["algo"].as_str().unwrap())
            .collect();
        // Every algorithm of alltoall is a candidate (others may join the list).
        for algo in ["pairwise", "bruck", "shm"] {
            assert!(names.contains(&algo), "{algo} missing from {names:?}");
        }
        assert!(names.contains(&v["choice"].as_str().unwrap()));
        assert!(v["candidates"][0]["cost_us"].as_f64().unwrap() > 0.0);
        // Across nodes the area algorithms are out: the choice is a message algorithm.
        let text = explain_text("allreduce", &args("1M", 8, Some(2), true), &plain()).unwrap();
        let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        assert_ne!(v["choice"], "shm", "{v}");
    }

    fn plain() -> Config {
        Config::from_vars(&[]).unwrap()
    }

    #[test]
    fn explain_shows_the_core_groups_of_a_node() {
        let given = |t: &str| Config::from_vars(&[("WEFT_TOPOLOGY", t)]).unwrap();
        let two_by_four = given("synthetic:package:2 core:4 pu:1");
        let text = explain_text("bcast", &args("8", 16, Some(8), false), &two_by_four).unwrap();
        assert!(
            text.contains(
                "hierarchical levels: package groups of a node's ranks (0,0,0,0,1,1,1,1), \
                 then nodes\n"
            ),
            "{text}"
        );
        // Three ranks fit in one package: one group per node, and why.
        let text = explain_text("bcast", &args("8", 3, None, false), &two_by_four).unwrap();
        assert!(
            text.contains(
                "hierarchical levels: one group per node (all 3 ranks are in package 0)\n"
            ),
            "{text}"
        );
        let text =
            explain_text("bcast", &args("8", 4, None, false), &given("synthetic:bad")).unwrap();
        assert!(
            text.contains("one group per node (WEFT_TOPOLOGY=synthetic:bad: hwloc refused it"),
            "{text}"
        );
        // Without hwloc this machine's node is one group, and the line says why.
        let no_hwloc =
            Config::from_vars(&[("WEFT_HWLOC_LIB", "libhwloc-not-there.so.15")]).unwrap();
        let text = explain_text("bcast", &args("8", 4, None, false), &no_hwloc).unwrap();
        assert!(
            text.contains(
                "hierarchical levels: one group per node (no hwloc to read this machine's \
                 topology: libhwloc-not-there.so.15 cannot be loaded"
            ),
            "{text}"
        );
    }

    #[test]
    fn explain_rejects_bad_input_by_name() {
        let e = explain_text("allreduce", &args("12Q", 4, None, false), &plain()).unwrap_err();
        assert!(e.contains("--bytes"), "{e}");
        let e = explain_text("allreduse", &args("8", 4, None, false), &plain()).unwrap_err();
        assert!(e.contains("allreduse"), "{e}");
        let e = explain_text("bcast", &args("8", 0, None, false), &plain()).unwrap_err();
        assert!(e.contains("procs=0"), "{e}");
    }
}
