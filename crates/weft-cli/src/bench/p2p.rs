//! `weft bench p2p`: one-way latency by ping-pong and bandwidth with a window of 64 messages
//! in flight, between rank pairs (0,1), (2,3), ... all at once; rank 0 reports the slowest pair.

use super::{default_sizes, median, parse_sizes};
use weft::{Comm, Result};

/// Messages in flight per bandwidth iteration (OSU's window).
const WINDOW: usize = 64;
const TAG_DATA: i32 = 1;
const TAG_ACK: i32 = 2;
const TAG_REPORT: i32 = 3;

/// Arguments of `weft bench p2p`.
#[derive(clap::Args, Clone)]
pub(crate) struct P2pArgs {
    /// Number of ranks (even; pairs run side by side; default 2, or one per slot of --hosts).
    #[arg(short = 'n', long = "np", value_name = "N")]
    pub np: Option<u32>,
    /// The rank count decided from `-n` and the hosts (set by `weft bench`).
    #[arg(skip)]
    pub nranks: u32,
    /// Message sizes, e.g. `8,1K,1M` (default: 1 B to 4 MiB in powers of two).
    #[arg(long)]
    pub sizes: Option<String>,
    /// Timed iterations per size (default: OSU's 10000 below 8 KiB, 1000 above for latency;
    /// 100 / 20 windows for bandwidth).
    #[arg(long)]
    pub iters: Option<u32>,
    /// Which tests: latency, bandwidth or all.
    #[arg(long, default_value = "all")]
    pub test: String,
    /// Print one JSON object per line instead of a table.
    #[arg(long)]
    pub json: bool,
    /// End the benchmark if it runs longer than this many seconds.
    #[arg(long = "timeout", default_value_t = 600)]
    pub timeout_s: u64,
}

impl P2pArgs {
    pub(super) fn validate(&self) -> std::result::Result<(), String> {
        if self.nranks < 2 || !self.nranks.is_multiple_of(2) {
            return Err(format!(
                "-n {}: needs an even number of ranks, at least 2",
                self.nranks
            ));
        }
        if let Some(s) = &self.sizes {
            parse_sizes(s)?;
        }
        if self.iters == Some(0) {
            return Err("--iters 0: need at least one iteration".into());
        }
        if !["latency", "bandwidth", "all"].contains(&self.test.as_str()) {
            return Err(format!(
                "--test {}: expected latency, bandwidth or all",
                self.test
            ));
        }
        Ok(())
    }

    pub(super) fn to_rank_args(&self) -> Vec<String> {
        let mut v = vec!["p2p".to_string(), "--test".into(), self.test.clone()];
        if let Some(s) = &self.sizes {
            v.extend(["--sizes".into(), s.clone()]);
        }
        if let Some(i) = self.iters {
            v.extend(["--iters".into(), i.to_string()]);
        }
        if self.json {
            v.push("--json".into());
        }
        v
    }
}

/// Rank-side arguments (forwarded by the driver).
#[derive(clap::Args)]
pub(crate) struct P2pRankArgs {
    #[arg(long)]
    sizes: Option<String>,
    #[arg(long)]
    iters: Option<u32>,
    #[arg(long, default_value = "all")]
    test: String,
    #[arg(long)]
    json: bool,
}

pub(super) fn rank_main(a: P2pRankArgs) -> Result<()> {
    let weft = weft::init()?;
    let world = weft.world();
    let sizes = match &a.sizes {
        Some(s) => {
            parse_sizes(s).map_err(|e| weft::Error::new(weft::ErrorKind::InvalidArgument, e))?
        }
        None => default_sizes(),
    };
    let me = world.rank();
    let np = world.size();
    if me == 0 && !a.json {
        println!(
            "# weft bench p2p, {np} ranks ({} pairs), yield when idle: {}",
            np / 2,
            weft.yields_when_idle()
        );
    }
    if a.test == "latency" || a.test == "all" {
        if me == 0 && !a.json {
            println!(
                "# one-way latency (ping-pong), slowest pair\n{:>10} {:>12} {:>12}",
                "bytes", "p50_us", "avg_us"
            );
        }
        for &bytes in &sizes {
            let (iters, skip) = match a.iters {
                Some(i) => (i as usize, (i as usize / 10).max(1)),
                None if bytes <= 8192 => (10_000, 1_000),
                None => (1_000, 100),
            };
            let (p50, avg) = latency(&world, bytes, iters, skip)?;
            let (p50, avg) = slowest_pair(&world, p50, avg)?;
            if me == 0 {
                if a.json {
                    println!("{{\"test\":\"latency\",\"bytes\":{bytes},\"p50_us\":{p50:.3},\"avg_us\":{avg:.3}}}");
                } else {
                    println!("{bytes:>10} {p50:>12.3} {avg:>12.3}");
                }
            }
        }
    }
    if a.test == "bandwidth" || a.test == "all" {
        if me == 0 && !a.json {
            println!(
                "# bandwidth (window of {WINDOW}), slowest pair\n{:>10} {:>12}",
                "bytes", "MB/s"
            );
        }
        for &bytes in &sizes {
            let (iters, skip) = match a.iters {
                Some(i) => (i as usize, (i as usize / 10).max(1)),
                None if bytes <= 8192 => (100, 10),
                None => (20, 2),
            };
            let mbps = bandwidth(&world, bytes, iters, skip, weft.config().shm_eager_bytes)?;
            let (mbps, _) = slowest_pair(&world, -mbps, 0.0)?;
            let mbps = -mbps;
            if me == 0 {
                if a.json {
                    println!("{{\"test\":\"bandwidth\",\"bytes\":{bytes},\"mb_per_s\":{mbps:.1}}}");
                } else {
                    println!("{bytes:>10} {mbps:>12.1}");
                }
            }
        }
    }
    weft.finalize()
}

/// Pair partner: 0↔1, 2↔3, ...
fn partner(world: &Comm) -> u32 {
    world.rank() ^ 1
}

/// Ping-pong: returns (median, mean) one-way latency in µs over `iters` timed round trips.
fn latency(world: &Comm, bytes: usize, iters: usize, skip: usize) -> Result<(f64, f64)> {
    let peer = partner(world);
    let sbuf = vec![b'a'; bytes];
    let mut rbuf = vec![0u8; bytes];
    let leader = world.rank().is_multiple_of(2);
    let mut stamps = Vec::with_capacity(iters + 1);
    for i in 0..iters + skip {
        if i >= skip {
            stamps.push(std::time::Instant::now());
        }
        if leader {
            world.send(&sbuf, peer, TAG_DATA)?;
            world.recv(&mut rbuf, peer as i32, TAG_DATA)?;
        } else {
            world.recv(&mut rbuf, peer as i32, TAG_DATA)?;
            world.send(&sbuf, peer, TAG_DATA)?;
        }
    }
    stamps.push(std::time::Instant::now());
    let mut one_way: Vec<f64> = stamps
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64() * 1e6 / 2.0)
        .collect();
    let avg = (stamps[stamps.len() - 1] - stamps[0]).as_secs_f64() * 1e6 / 2.0 / iters as f64;
    Ok((median(&mut one_way), avg))
}

/// Windowed bandwidth in MB/s (10^6 bytes) from the leader's point of view.
///
/// Like OSU's osu_bw, all messages of a window land in one receive buffer when they are large
/// (rendezvous: received one after the other, so the buffer is never shared by two operations
/// in flight); eager-sized messages are pre-posted into a window of small buffers.
fn bandwidth(
    world: &Comm,
    bytes: usize,
    iters: usize,
    skip: usize,
    eager_bytes: usize,
) -> Result<f64> {
    let peer = partner(world);
    let leader = world.rank().is_multiple_of(2);
    let sbuf = vec![b'b'; bytes];
    let preposted = bytes <= eager_bytes;
    let window_bufs = match (leader, preposted) {
        (true, _) => 0,
        (false, true) => WINDOW,
        (false, false) => 1,
    };
    let mut rbufs: Vec<Vec<u8>> = (0..window_bufs).map(|_| vec![0u8; bytes]).collect();
    let mut ack = [0u8; 1];
    let mut start = std::time::Instant::now();
    for i in 0..iters + skip {
        if i == skip {
            start = std::time::Instant::now();
        }
        if leader {
            world.scope(|s| -> Result<()> {
                let reqs = (0..WINDOW)
                    .map(|_| world.isend(s, &sbuf, peer, TAG_DATA))
                    .collect::<Result<Vec<_>>>()?;
                s.wait_all(reqs)?;
                Ok(())
            })?;
            world.recv(&mut ack, peer as i32, TAG_ACK)?;
        } else if preposted {
            world.scope(|s| -> Result<()> {
                let reqs = rbufs
                    .iter_mut()
                    .map(|b| world.irecv(s, b, peer as i32, TAG_DATA))
                    .collect::<Result<Vec<_>>>()?;
                s.wait_all(reqs)?;
                Ok(())
            })?;
            world.send(&ack, peer, TAG_ACK)?;
        } else {
            for _ in 0..WINDOW {
                world.recv(&mut rbufs[0], peer as i32, TAG_DATA)?;
            }
            world.send(&ack, peer, TAG_ACK)?;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    Ok((bytes * WINDOW * iters) as f64 / secs / 1e6)
}

/// Rank 0 learns every pair leader's numbers and keeps the largest (slowest) of each.
fn slowest_pair(world: &Comm, a: f64, b: f64) -> Result<(f64, f64)> {
    let me = world.rank();
    if me == 0 {
        let (mut ma, mut mb) = (a, b);
        for leader in (2..world.size()).step_by(2) {
            let mut v = [0f64; 2];
            world.recv(&mut v, leader as i32, TAG_REPORT)?;
            ma = ma.max(v[0]);
            mb = mb.max(v[1]);
        }
        Ok((ma, mb))
    } else {
        if me.is_multiple_of(2) {
            world.send(&[a, b], 0, TAG_REPORT)?;
        }
        Ok((a, b))
    }
}
