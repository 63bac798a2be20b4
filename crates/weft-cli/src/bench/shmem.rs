//! `weft bench shmem`: one-sided communication on the symmetric heap (`weft::rma`). PE 0
//! initiates; the target is the first PE on another node when there is one (run with
//! `--hosts`), else PE 1 on the same node.
//!
//! - put and get latency (time per blocking call, as OSU's `osu_oshm_put`/`get` report it;
//!   a put to another node is followed by quiet, so it is a round trip) and bandwidth over a
//!   range of sizes;
//! - the message rate of 8-byte puts (`shmem_p`) with 1, 2, 4, ... initiating threads.
//!   Same node: each thread stores directly into the target's mapped heap, against threads
//!   handing their puts to one proxy thread. Other node: each thread posts to its own lanes
//!   with coalescing of contiguous puts, the same without coalescing, and the deliberate
//!   single-proxy mode (`WEFT_RMA_PROXY`: every put handed to one proxy thread), each on its
//!   own heap; the rate includes the final quiet (every put acknowledged by the target).
//!
//! Depends on the runtime and the launcher, not on libshmem.

use super::{default_sizes, parse_sizes};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::Instant;
use weft::rma::net::{Amo, Options};
use weft::rma::SymmetricHeap;
use weft::sync::SyncEngine;
use weft::{Error, ErrorKind, Result};
use weft_launch::HostsSpec;

/// Arguments of `weft bench shmem`.
#[derive(clap::Args, Clone)]
pub(crate) struct ShmemArgs {
    /// Number of PEs (PE 0 initiates, PE 1 is the target; others wait; default 2, or one per slot of --hosts).
    #[arg(short = 'n', long = "np", value_name = "N")]
    pub np: Option<u32>,
    /// The rank count decided from `-n` and the hosts (set by `weft bench`).
    #[arg(skip)]
    pub nranks: u32,
    /// Message sizes for latency and bandwidth (default: 1 B to 4 MiB in powers of two).
    #[arg(long)]
    pub sizes: Option<String>,
    /// Initiating thread counts for the message rate, e.g. `1,2,4,8`.
    #[arg(long, default_value = "1,2,4")]
    pub threads: String,
    /// 8-byte puts per initiating thread in the message-rate test.
    #[arg(long, default_value_t = 1_000_000)]
    pub puts: u64,
    /// Which tests: latency, bandwidth, rate or all.
    #[arg(long, default_value = "all")]
    pub test: String,
    /// End the benchmark if it runs longer than this many seconds.
    #[arg(long = "timeout", default_value_t = 600)]
    pub timeout_s: u64,
}

impl ShmemArgs {
    fn validate(&self) -> std::result::Result<Vec<usize>, String> {
        if self.nranks < 2 {
            return Err(format!("-n {}: needs at least 2 PEs", self.nranks));
        }
        if let Some(s) = &self.sizes {
            parse_sizes(s)?;
        }
        if self.puts == 0 {
            return Err("--puts 0: need at least one put".into());
        }
        if !["latency", "bandwidth", "rate", "all"].contains(&self.test.as_str()) {
            return Err(format!(
                "--test {}: expected latency, bandwidth, rate or all",
                self.test
            ));
        }
        parse_threads(&self.threads)
    }
}

fn parse_threads(text: &str) -> std::result::Result<Vec<usize>, String> {
    let v: Vec<usize> = text
        .split(',')
        .map(|s| s.trim().parse::<usize>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| format!("--threads {text}: expected a list like 1,2,4"))?;
    if v.is_empty() || v.iter().any(|&t| t == 0 || t > 256) {
        return Err(format!("--threads {text}: each count must be 1..=256"));
    }
    Ok(v)
}

/// Runs `weft bench shmem`.
pub(crate) fn run(a: ShmemArgs, on: Option<&HostsSpec>) -> i32 {
    if let Err(e) = a.validate() {
        eprintln!("weft bench shmem: {e}");
        return 2;
    }
    let mut args = vec![
        "shmem".to_string(),
        "--threads".into(),
        a.threads.clone(),
        "--puts".into(),
        a.puts.to_string(),
        "--test".into(),
        a.test.clone(),
    ];
    if let Some(s) = &a.sizes {
        args.extend(["--sizes".into(), s.clone()]);
    }
    super::launch(a.nranks, args, a.timeout_s, &[], on)
}

/// Rank-side arguments (forwarded by the driver).
#[derive(clap::Args)]
pub(crate) struct ShmemRankArgs {
    #[arg(long)]
    sizes: Option<String>,
    #[arg(long)]
    threads: String,
    #[arg(long)]
    puts: u64,
    #[arg(long)]
    test: String,
}

fn invalid(e: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, e)
}

/// The rank side: PE 0 measures, the others wait at the engine's barrier (asleep on its
/// futex, so they do not take the initiators' cores).
pub(crate) fn rank_main(a: ShmemRankArgs) -> Result<()> {
    let weft = weft::init()?;
    let world = weft.world();
    let heap = SymmetricHeap::new(&weft)?;
    let engine = SyncEngine::new(&weft, "bench")?;
    let (me, n) = (heap.pe(), heap.npes());
    let sizes = match &a.sizes {
        Some(s) => parse_sizes(s).map_err(invalid)?,
        None => default_sizes(),
    };
    let threads = parse_threads(&a.threads).map_err(invalid)?;
    let max = sizes.iter().copied().max().unwrap_or(8);
    let buf = heap.malloc(max)? as u64 + heap.base() as u64;
    let slots = 4096u64;
    let words = heap.malloc(8 * slots as usize * 256)? as u64 + heap.base() as u64;
    // PE 0 picks the target (the first PE on another node, else PE 1) and tells everyone.
    let mut pick = [(1..n).find(|&p| !heap.accessible(p)).unwrap_or(1), 0u32];
    pick[1] = !heap.accessible(pick[0]) as u32;
    world.bcast(&mut pick, 0)?;
    let (target, remote) = (pick[0], pick[1] == 1);
    if remote {
        remote_main(&weft, &heap, &a, &sizes, &threads, target)?;
        drop(world);
        return weft.finalize();
    }
    let barrier = |tag: u64| engine.barrier(tag, n);
    if me == 0 {
        println!(
            "# weft bench shmem, {n} PEs, target PE 1 on the same node, heap {} bytes per PE, yield when idle: {}",
            heap.heap_bytes(),
            weft.yields_when_idle()
        );
    }
    let run_lat = a.test == "latency" || a.test == "all";
    let run_bw = a.test == "bandwidth" || a.test == "all";
    if me == 0 && (run_lat || run_bw) {
        let src = vec![7u8; max];
        let mut dst = vec![0u8; max];
        println!(
            "{:>10} {:>12} {:>12} {:>12} {:>12}",
            "bytes", "put_us", "get_us", "put_MB/s", "get_MB/s"
        );
        for &bytes in &sizes {
            let iters = if bytes <= 8192 {
                100_000
            } else {
                (1 << 28) / bytes.max(1)
            }
            .max(20);
            let time = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
                for _ in 0..iters / 10 {
                    f()?;
                }
                let t = Instant::now();
                for _ in 0..iters {
                    f()?;
                }
                Ok(t.elapsed().as_secs_f64() / iters as f64)
            };
            let put_s = time(&mut || {
                heap.put(1, buf, &src[..bytes])?;
                heap.quiet();
                Ok(())
            })?;
            let get_s = time(&mut || heap.get(1, buf, &mut dst[..bytes]))?;
            let mb = |s: f64| bytes as f64 / s / 1e6;
            println!(
                "{bytes:>10} {:>12.3} {:>12.3} {:>12.1} {:>12.1}",
                put_s * 1e6,
                get_s * 1e6,
                mb(put_s),
                mb(get_s)
            );
        }
    }
    barrier(1)?;
    if a.test == "rate" || a.test == "all" {
        if me == 0 {
            println!(
                "# 8-byte put rate to PE 1 ({} puts per initiator)\n{:>8} {:>16} {:>16}",
                a.puts, "threads", "direct_Mputs/s", "proxy_Mputs/s"
            );
        }
        for &t in &threads {
            if me == 0 {
                let direct = rate_direct(&heap, words, slots, t, a.puts)?;
                let proxy = rate_proxy(&heap, words, slots, t, a.puts)?;
                println!("{t:>8} {:>16.2} {:>16.2}", direct / 1e6, proxy / 1e6);
            }
            barrier(2)?;
        }
    }
    // The target checks it really received puts (the last value of each slot is non-zero).
    barrier(3)?;
    if me == 1 && (a.test == "rate" || a.test == "all") {
        let first = heap.atomic_u64(1, words)?.load(Ordering::SeqCst);
        if first == 0 {
            return Err(Error::new(
                ErrorKind::Internal,
                "weft bench shmem: PE 1's heap shows none of PE 0's puts",
            ));
        }
    }
    drop(world);
    weft.finalize()
}

/// Latency/bandwidth of put+quiet and get, and the put rate, to `target` on another node.
fn remote_main(
    weft: &weft::Weft,
    heap: &SymmetricHeap,
    a: &ShmemRankArgs,
    sizes: &[usize],
    threads: &[usize],
    target: u32,
) -> Result<()> {
    let world = weft.world();
    let me = heap.pe();
    let run_rate = a.test == "rate" || a.test == "all";
    let max_threads = threads.iter().copied().max().unwrap_or(1) as u64;
    let slots = 4096u64;
    let region_bytes = (8 * slots * max_threads) as usize;
    let defaults = Options::from_config(weft)?;
    // One heap per mode, created by every PE in the same order (collective).
    let modes: Vec<(&str, SymmetricHeap)> = if run_rate {
        vec![
            (
                "coalesced",
                SymmetricHeap::with_options(
                    weft,
                    region_bytes + 4096,
                    &Options {
                        coalesce: true,
                        proxy: false,
                        ..defaults.clone()
                    },
                )?,
            ),
            (
                "uncoalesced",
                SymmetricHeap::with_options(
                    weft,
                    region_bytes + 4096,
                    &Options {
                        coalesce: false,
                        proxy: false,
                        ..defaults.clone()
                    },
                )?,
            ),
            (
                "proxy",
                SymmetricHeap::with_options(
                    weft,
                    region_bytes + 4096,
                    &Options {
                        coalesce: true,
                        proxy: true,
                        ..defaults.clone()
                    },
                )?,
            ),
        ]
    } else {
        Vec::new()
    };
    let words: Vec<u64> = modes
        .iter()
        .map(|(_, h)| Ok(h.malloc(region_bytes)? as u64 + h.base() as u64))
        .collect::<Result<_>>()?;
    let done = heap.malloc(8)? as u64 + heap.base() as u64;
    world.barrier()?;
    if me != 0 {
        // Wait asleep (the initiator and this PE's service need the cores) for PE 0's "done".
        // SAFETY: an 8-byte aligned word of this PE's own heap, written by PE 0's atomic.
        let word = unsafe { std::sync::atomic::AtomicU64::from_ptr(done as *mut u64) };
        while word.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        if me == target && run_rate {
            for ((name, _), &w) in modes.iter().zip(&words) {
                // SAFETY: this PE's own heap word, written by PE 0's puts before "done".
                if unsafe { *(w as *const u64) } == 0 {
                    return Err(Error::new(
                        ErrorKind::Internal,
                        format!(
                            "weft bench shmem: PE {target}'s {name} heap shows none of PE 0's puts"
                        ),
                    ));
                }
            }
        }
        world.barrier()?;
        return Ok(());
    }
    println!(
        "# weft bench shmem, {} PEs, target PE {target} on another node (through its one-sided service over TCP), flush {} bytes",
        heap.npes(),
        defaults.flush_bytes
    );
    let max = sizes.iter().copied().max().unwrap_or(8);
    let buf = heap.malloc(max)? as u64 + heap.base() as u64;
    if a.test == "latency" || a.test == "bandwidth" || a.test == "all" {
        let src = vec![7u8; max];
        let mut dst = vec![0u8; max];
        println!(
            "{:>10} {:>12} {:>12} {:>12} {:>12}",
            "bytes", "put_us", "get_us", "put_MB/s", "get_MB/s"
        );
        for &bytes in sizes {
            let iters = if bytes <= 8192 {
                5_000
            } else {
                (1 << 27) / bytes.max(1)
            }
            .max(10);
            let time = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
                for _ in 0..iters / 10 {
                    f()?;
                }
                let t = Instant::now();
                for _ in 0..iters {
                    f()?;
                }
                Ok(t.elapsed().as_secs_f64() / iters as f64)
            };
            let put_s = time(&mut || {
                heap.put(target, buf, &src[..bytes])?;
                heap.try_quiet()
            })?;
            let get_s = time(&mut || heap.get(target, buf, &mut dst[..bytes]))?;
            let mb = |s: f64| bytes as f64 / s / 1e6;
            println!(
                "{bytes:>10} {:>12.3} {:>12.3} {:>12.1} {:>12.1}",
                put_s * 1e6,
                get_s * 1e6,
                mb(put_s),
                mb(get_s)
            );
        }
    }
    if run_rate {
        println!(
            "# 8-byte put rate to PE {target} ({} puts per initiator, contiguous within each thread's range, until quiet)",
            a.puts
        );
        print!("{:>8}", "threads");
        for (name, _) in &modes {
            print!(" {:>16}", format!("{name}_Mputs/s"));
        }
        println!();
        let mut table = Vec::new();
        let mut cpu_table = Vec::new();
        for &t in threads {
            let mut row = Vec::new();
            let mut cpu_row = Vec::new();
            for ((_, h), &w) in modes.iter().zip(&words) {
                let (rate, cpu) = rate_remote(h, w, slots, target, t, a.puts)?;
                row.push(rate);
                cpu_row.push(cpu);
            }
            print!("{t:>8}");
            for r in &row {
                print!(" {:>16.2}", r / 1e6);
            }
            println!();
            table.push((t, row));
            cpu_table.push((t, cpu_row));
        }
        // On-CPU time is what the machine's load does not inflate: the per-put cost of the
        // initiators' own path (for the proxy mode only the hand-off to the proxy thread,
        // whose own time is not in it).
        println!("# initiating threads' on-CPU time per put (ns, from /proc/thread-self/schedstat; sends included, the final quiet not)");
        print!("{:>8}", "threads");
        for (name, _) in &modes {
            print!(" {:>16}", format!("{name}_cpu_ns"));
        }
        println!();
        for (t, row) in &cpu_table {
            print!("{t:>8}");
            for c in row {
                match c {
                    Some(ns) => print!(" {ns:>16.1}"),
                    None => print!(" {:>16}", "-"),
                }
            }
            println!();
        }
        let at = |t: usize| table.iter().find(|(n, _)| *n == t).map(|(_, r)| r.clone());
        if let (Some(one), Some(two)) = (at(1), at(2)) {
            println!(
                "# 2 vs 1 initiators (coalesced): {:.2}x; coalesced vs single proxy at 2 initiators: {:.2}x; uncoalesced 2 vs 1: {:.2}x",
                two[0] / one[0],
                two[0] / two[2],
                two[1] / one[1]
            );
        }
    }
    // Tell every other PE the measurement is over.
    for pe in 1..heap.npes() {
        heap.atomic(0, pe, done, 8, Amo::Set, 1, 0, true)?;
    }
    world.barrier()?;
    Ok(())
}

/// `threads` initiators each put `puts` 8-byte values into their own range of `target`'s
/// heap (through their own lanes, or the heap's proxy); ends when quiet has every put
/// acknowledged. Each thread connects its lane (one put) before the clock starts, as a
/// long-lived initiator would have. Returns puts per second and the initiating threads'
/// on-CPU nanoseconds per put (None where the kernel does not report it).
fn rate_remote(
    heap: &SymmetricHeap,
    words: u64,
    slots: u64,
    target: u32,
    threads: usize,
    puts: u64,
) -> Result<(f64, Option<f64>)> {
    let ready = std::sync::Barrier::new(threads + 1);
    let (elapsed, cpu_ns) = std::thread::scope(|s| -> Result<(f64, Option<u64>)> {
        let ready = &ready;
        let handles: Vec<_> = (0..threads as u64)
            .map(|tid| {
                s.spawn(move || -> Result<Option<u64>> {
                    let base = words + tid * slots * 8;
                    let warm = heap
                        .put(target, base, &0u64.to_ne_bytes())
                        .and_then(|_| heap.flush());
                    ready.wait();
                    warm?;
                    let cpu0 = thread_cpu_ns();
                    for i in 0..puts {
                        let v = i + 1;
                        heap.put(target, base + (i % slots) * 8, &v.to_ne_bytes())?;
                    }
                    heap.flush()?;
                    Ok(cpu0.zip(thread_cpu_ns()).map(|(a, b)| b.saturating_sub(a)))
                })
            })
            .collect();
        ready.wait();
        let start = Instant::now();
        let mut cpu = Some(0u64);
        for h in handles {
            let c = h
                .join()
                .map_err(|_| Error::new(ErrorKind::Internal, "an initiator thread panicked"))??;
            cpu = cpu.zip(c).map(|(a, b)| a + b);
        }
        heap.try_quiet()?;
        Ok((start.elapsed().as_secs_f64(), cpu))
    })?;
    let total = (threads as u64 * puts) as f64;
    Ok((total / elapsed, cpu_ns.map(|ns| ns as f64 / total)))
}

/// The calling thread's on-CPU time in nanoseconds (Linux schedstat), if the kernel reports it.
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Each thread stores its 8-byte values straight into PE 1's heap (its own slot range).
fn rate_direct(
    heap: &SymmetricHeap,
    words: u64,
    slots: u64,
    threads: usize,
    puts: u64,
) -> Result<f64> {
    let start = Instant::now();
    std::thread::scope(|s| -> Result<()> {
        let handles: Vec<_> = (0..threads as u64)
            .map(|tid| {
                s.spawn(move || -> Result<()> {
                    let base = words + tid * slots * 8;
                    for i in 0..puts {
                        let v = i + 1;
                        heap.put(1, base + (i % slots) * 8, &v.to_ne_bytes())?;
                    }
                    heap.quiet();
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join()
                .map_err(|_| Error::new(ErrorKind::Internal, "an initiator thread panicked"))??;
        }
        Ok(())
    })?;
    Ok((threads as u64 * puts) as f64 / start.elapsed().as_secs_f64())
}

/// The threads post their puts to one proxy thread, which performs them all (a bounded queue
/// like a NIC command queue); the rate is what that single consumer sustains.
fn rate_proxy(
    heap: &SymmetricHeap,
    words: u64,
    slots: u64,
    threads: usize,
    puts: u64,
) -> Result<f64> {
    let start = Instant::now();
    let (tx, rx) = mpsc::sync_channel::<(u64, u64)>(4096);
    std::thread::scope(|s| -> Result<()> {
        let proxy = s.spawn(move || -> Result<()> {
            for (addr, v) in rx {
                heap.put(1, addr, &v.to_ne_bytes())?;
            }
            heap.quiet();
            Ok(())
        });
        for tid in 0..threads as u64 {
            let tx = tx.clone();
            s.spawn(move || {
                let base = words + tid * slots * 8;
                for i in 0..puts {
                    if tx.send((base + (i % slots) * 8, i + 1)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        proxy
            .join()
            .map_err(|_| Error::new(ErrorKind::Internal, "the proxy thread panicked"))?
    })?;
    Ok((threads as u64 * puts) as f64 / start.elapsed().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_lists() {
        assert_eq!(parse_threads("1,2,4").unwrap(), vec![1, 2, 4]);
        assert!(parse_threads("0").is_err());
        assert!(parse_threads("a").is_err());
    }
}
