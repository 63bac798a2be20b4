//! `weft info`: what this machine and build offer, and every knob with its value.

use weft::config::{knob_tables, CmaMode, Config, YieldMode};

/// Arguments of `weft info`.
#[derive(clap::Args)]
pub struct InfoArgs {
    /// List every `WEFT_*` knob with its type, default, current value and help.
    #[arg(long)]
    pub knobs: bool,
}

/// Runs `weft info`.
pub fn run(args: InfoArgs) -> i32 {
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
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let cma = probe_cma();
    println!("weft {}", env!("CARGO_PKG_VERSION"));
    println!(
        "node:        {} ({} cores available to this process)",
        hostname(),
        cores
    );
    println!("transports:  shm (this node)");
    println!(
        "  shm rings:   {} bytes per peer pair, eager limit {} bytes",
        config.shm_ring_bytes, config.shm_eager_bytes
    );
    println!(
        "  rendezvous:  {} (CMA {}), both sides copy from {} bytes, fallback fragments of {} bytes",
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
        config.shm_coop_bytes,
        config.shm_fragment_bytes
    );
    println!(
        "  idle policy: {}",
        match config.yield_mode {
            YieldMode::Auto => "poll; yield when a node runs more ranks than cores",
            YieldMode::Always => "yield whenever idle",
            YieldMode::Never => "poll without yielding",
        }
    );
    println!(
        "knobs:       `weft info --knobs` lists all {}",
        knob_tables().iter().map(|t| t.len()).sum::<usize>()
    );
    0
}

fn print_knobs(config: &Config) {
    println!(
        "{:<28} {:<14} {:<10} {:<10} help",
        "name", "type", "default", "value"
    );
    for (k, value) in config.values.listing() {
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
