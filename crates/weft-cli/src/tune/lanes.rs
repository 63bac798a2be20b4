//! The lane half of `weft tune`: two ranks of this node ping-pong (one-way latency per
//! size) and stream 8-byte messages (a window of 64 in flight: the per-message overhead)
//! through `weft bench p2p`'s rank side, with the runtime held to one way at a time by its
//! knobs. Figures, per lane: overhead = the 8-byte message's share of a window; latency =
//! the 8-byte one-way time less the overhead; bandwidth = the slope of the one-way time
//! between the two largest sizes. The single copy (CMA, forced from 0 bytes, the copy not
//! split) has a fixed cost (the intercept of that line) and its slope. Crossovers are the
//! smallest measured sizes at which the second way of a pair was faster. Every job runs
//! several rounds, interleaved, and each size keeps its fastest round.

use crate::progress::Progress;
use weft::coll::select::Crossovers;
use weft::lanes::LaneEntry;

/// Which way a job measures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Way {
    /// The ring and its pipelined copy (`WEFT_SHM_CMA=off`).
    Shm,
    /// The single copy (CMA from 0 bytes, not split between the two processes).
    Cma,
    /// TCP over loopback.
    Tcp,
    /// UCX (when this build has it and libucp loads).
    Ucx,
    /// Eager sends up to 64 KiB (rings of 256 KiB).
    Eager,
    /// Rendezvous from 512 bytes (same rings).
    Rendezvous,
}

/// One measuring job.
#[derive(Clone, Debug)]
pub(crate) struct Job {
    pub way: Way,
    /// `latency` or `bandwidth`.
    pub test: &'static str,
    pub sizes: &'static str,
    pub iters: u32,
    pub env: Vec<(String, String)>,
}

/// The environment of a measuring job: no tuning or lane file (the runtime's own
/// defaults), then `extra`.
pub(crate) fn clean_env(extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v = vec![
        ("WEFT_TUNING_FILE".to_string(), String::new()),
        ("WEFT_LANE_FILE".to_string(), String::new()),
    ];
    v.extend(extra.iter().map(|(k, x)| (k.to_string(), x.to_string())));
    v
}

/// Whether the UCX transport is offered here.
fn ucx_offered() -> bool {
    weft::Config::from_vars(&[]).is_ok_and(|c| {
        weft::lanes::transports(&c)
            .iter()
            .any(|t| t.name == "ucx" && t.offered.is_ok())
    })
}

/// The jobs of a run.
pub(crate) fn jobs(quick: bool) -> Vec<Job> {
    let (lat, bw) = if quick { (100, 20) } else { (1000, 100) };
    let big = if quick {
        "8,64K,1M"
    } else {
        "8,32K,64K,256K,1M,4M"
    };
    let cma = if quick {
        "64K,1M"
    } else {
        "32K,64K,256K,1M,4M"
    };
    let net = if quick { "8,64K,1M" } else { "8,64K,1M,4M" };
    let eager = if quick {
        "2K,8K,32K"
    } else {
        "1K,2K,4K,8K,16K,32K,64K"
    };
    let rings: &[(&str, &str)] = &[
        ("WEFT_SHM_SMALL_RING_BYTES", "256K"),
        ("WEFT_SHM_RING_BYTES", "256K"),
    ];
    let with = |extra: &[(&str, &str)]| {
        let mut v: Vec<(&str, &str)> = rings.to_vec();
        v.extend_from_slice(extra);
        clean_env(&v)
    };
    let job = |way, test, sizes, iters, env| Job {
        way,
        test,
        sizes,
        iters,
        env,
    };
    let shm_off = clean_env(&[("WEFT_SHM_CMA", "off")]);
    let cma_on = clean_env(&[
        ("WEFT_SHM_CMA", "on"),
        ("WEFT_SHM_CMA_MIN_BYTES", "0"),
        ("WEFT_SHM_COOP_BYTES", "1G"),
    ]);
    let tcp = clean_env(&[("WEFT_TRANSPORTS", "tcp")]);
    let mut v = vec![
        job(Way::Shm, "latency", big, lat, shm_off.clone()),
        job(Way::Shm, "bandwidth", "8", bw, shm_off),
        job(Way::Cma, "latency", cma, lat, cma_on),
        job(Way::Tcp, "latency", net, lat, tcp.clone()),
        job(Way::Tcp, "bandwidth", "8", bw, tcp),
        job(
            Way::Eager,
            "latency",
            eager,
            lat,
            with(&[("WEFT_SHM_EAGER_BYTES", "64K")]),
        ),
        job(
            Way::Rendezvous,
            "latency",
            eager,
            lat,
            with(&[("WEFT_SHM_EAGER_BYTES", "512")]),
        ),
    ];
    if !quick && ucx_offered() {
        let ucx = clean_env(&[("WEFT_TRANSPORTS", "ucx")]);
        v.push(job(Way::Ucx, "latency", net, lat, ucx.clone()));
        v.push(job(Way::Ucx, "bandwidth", "8", bw, ucx));
    }
    v
}

/// One line of `weft bench p2p --json`.
#[derive(serde::Deserialize)]
struct P2pLine {
    test: String,
    bytes: u64,
    #[serde(default)]
    p50_us: f64,
    #[serde(default)]
    mb_per_s: f64,
}

/// What the lane jobs found.
pub(crate) struct Measured {
    pub lanes: Vec<LaneEntry>,
    pub crossover: Crossovers,
}

/// Curves of one way: one-way latency per size, and the 8-byte message rate (MB/s).
#[derive(Default)]
struct Curves {
    latency: Vec<(u64, f64)>,
    small_mb_per_s: Option<f64>,
}

/// Runs `jobs` (two ranks each) and derives the figures.
pub(crate) fn measure(
    jobs: &[Job],
    repeats: u32,
    timeout_s: u64,
    progress: &Progress,
) -> Result<Measured, String> {
    let mut curves: Vec<(Way, Curves)> = Vec::new();
    let mut refused = false;
    // Rounds of every job, interleaved; each size keeps its fastest round (a ring's
    // ping-pong waits for both processes to run, so on a busy node a round's median may
    // hold the scheduler's delays rather than the lane's cost).
    for j in (0..repeats).flat_map(|_| jobs.iter()) {
        if refused && j.way == Way::Cma {
            progress.done();
            continue;
        }
        progress.start(&format!("{:?} {}", j.way, j.test).to_lowercase());
        let args = vec![
            "p2p".to_string(),
            "--test".into(),
            j.test.into(),
            "--sizes".into(),
            j.sizes.into(),
            "--iters".into(),
            j.iters.to_string(),
            "--json".into(),
        ];
        let (code, out) =
            crate::bench::run_subcommand("__bench-rank", 2, args, timeout_s, &j.env, None);
        progress.done();
        if code != 0 {
            if j.way == Way::Cma {
                // Refused here (kernel or seccomp policy): no single-copy lane to describe.
                progress.note("# the single copy (CMA) is refused here: not measured");
                refused = true;
                continue;
            }
            return Err(format!(
                "the {:?} {} job failed (exit {code})",
                j.way, j.test
            ));
        }
        let at = match curves.iter().position(|(w, _)| *w == j.way) {
            Some(i) => i,
            None => {
                curves.push((j.way, Curves::default()));
                curves.len() - 1
            }
        };
        for line in String::from_utf8_lossy(&out).lines() {
            let Ok(l) = serde_json::from_str::<P2pLine>(line) else {
                continue;
            };
            let c = &mut curves[at].1;
            match l.test.as_str() {
                "latency" => match c.latency.iter_mut().find(|p| p.0 == l.bytes) {
                    Some(p) => p.1 = p.1.min(l.p50_us),
                    None => c.latency.push((l.bytes, l.p50_us)),
                },
                "bandwidth" if l.bytes == 8 => {
                    c.small_mb_per_s =
                        Some(c.small_mb_per_s.map_or(l.mb_per_s, |r| r.max(l.mb_per_s)))
                }
                _ => {}
            }
        }
    }
    let get = |w: Way| curves.iter().find(|(x, _)| *x == w).map(|(_, c)| c);
    let mut lanes = Vec::new();
    for (way, name) in [(Way::Shm, "shm"), (Way::Tcp, "tcp"), (Way::Ucx, "ucx")] {
        if let Some(c) = get(way) {
            lanes.push(message_lane(name, c)?);
        }
    }
    if let Some(c) = get(Way::Cma) {
        let (fixed_us, gbytes_per_s) =
            line_fit(&c.latency).ok_or("the single-copy curve has fewer than two sizes")?;
        lanes.push(LaneEntry {
            transport: "cma".into(),
            latency_us: Some(round(fixed_us.max(0.0))),
            overhead_us: Some(0.0),
            dedicated_gbytes_per_s: Some(round(gbytes_per_s)),
            shared_gbytes_per_s: Some(0.0),
            ..LaneEntry::default()
        });
    }
    let first_faster = |slow: Option<&Curves>, fast: Option<&Curves>| -> Option<u64> {
        let (slow, fast) = (slow?, fast?);
        let mut sizes: Vec<u64> = fast.latency.iter().map(|p| p.0).collect();
        sizes.sort_unstable();
        sizes.into_iter().find(|s| {
            let t = |c: &Curves| c.latency.iter().find(|p| p.0 == *s).map(|p| p.1);
            matches!((t(slow), t(fast)), (Some(a), Some(b)) if b < a)
        })
    };
    Ok(Measured {
        lanes,
        crossover: Crossovers {
            eager_rendezvous_bytes: first_faster(get(Way::Eager), get(Way::Rendezvous)),
            pipelined_cma_bytes: first_faster(get(Way::Shm), get(Way::Cma)),
            model_cma_bytes: None,
        },
    })
}

fn round(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

/// (intercept in µs, bandwidth in GB/s) of the line through the two largest sizes.
fn line_fit(points: &[(u64, f64)]) -> Option<(f64, f64)> {
    let mut p = points.to_vec();
    p.sort_by_key(|x| x.0);
    let (&(n2, t2), &(n1, t1)) = (p.last()?, p.get(p.len().checked_sub(2)?)?);
    let slope_us_per_byte = if t2 > t1 && n2 > n1 {
        (t2 - t1) / (n2 - n1) as f64
    } else {
        // Noise made the larger message no slower: take its average rate.
        t2.max(1e-3) / n2.max(1) as f64
    };
    let intercept = t1 - slope_us_per_byte * n1 as f64;
    // bytes per µs = MB/s; / 1000 = GB/s.
    Some((intercept, 1.0 / slope_us_per_byte / 1000.0))
}

/// A message lane's figures from its curves (see the module notes).
fn message_lane(name: &str, c: &Curves) -> Result<LaneEntry, String> {
    let small = c
        .latency
        .iter()
        .min_by_key(|p| p.0)
        .ok_or_else(|| format!("no latency measured on {name}"))?
        .1;
    let overhead = c
        .small_mb_per_s
        .filter(|&r| r > 0.0)
        .map_or(0.0, |r| 8.0 / r)
        .min(small);
    let (_, gbytes_per_s) =
        line_fit(&c.latency).ok_or_else(|| format!("the {name} curve has fewer than two sizes"))?;
    Ok(LaneEntry {
        transport: name.into(),
        latency_us: Some(round((small - overhead).max(0.0))),
        overhead_us: Some(round(overhead)),
        dedicated_gbytes_per_s: Some(round(gbytes_per_s)),
        shared_gbytes_per_s: Some(0.0),
        ..LaneEntry::default()
    })
}

/// Time to sum one byte of f32 vectors of 1 MiB (the best of 20 runs), ns.
pub(crate) fn reduce_ns_per_byte() -> f64 {
    let n = (1 << 20) / 4;
    let src = vec![1.0f32; n];
    let mut dst = vec![0.5f32; n];
    let best = (0..20)
        .map(|_| {
            let t = std::time::Instant::now();
            for (d, s) in dst.iter_mut().zip(std::hint::black_box(&src)) {
                *d += *s;
            }
            std::hint::black_box(&mut dst);
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    round(best * 1e9 / (n * 4) as f64)
}

/// The single-copy threshold the runtime's lane model takes from the tuning file at `path`
/// (two ranks on a node), as the runtime loads it; None when it never takes the single copy
/// or the file has no single-copy lane.
pub(crate) fn model_cma_bytes(path: &std::path::Path) -> Option<u64> {
    let p = path.to_string_lossy();
    let c = weft::Config::from_vars(&[("WEFT_TUNING_FILE", p.as_ref())]).ok()?;
    let lanes = weft::lanes::candidates(&c, false).ok()?;
    let desc = |t: &str| {
        lanes
            .iter()
            .find(|l| l.transport == t)
            .map(weft::lanes::to_model)
    };
    let (ring, single) = (desc("shm")?, desc("cma")?);
    let choice =
        weft_model::lanes::rendezvous::choose_rendezvous(&ring, Some(&single), 2, None, None);
    (choice.single_copy_from_bytes != u64::MAX).then_some(choice.single_copy_from_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_from_curves() {
        // 8 B in 1 us with 0.25 us per message in a window; 1 MB more takes 100 us more.
        let c = Curves {
            latency: vec![(8, 1.0), (1 << 20, 101.0), (2 << 20, 201.0)],
            small_mb_per_s: Some(32.0),
        };
        let l = message_lane("shm", &c).unwrap();
        assert_eq!(l.overhead_us, Some(0.25));
        assert_eq!(l.latency_us, Some(0.75));
        let bw = l.dedicated_gbytes_per_s.unwrap();
        assert!((bw - 10.4858).abs() < 1e-3, "{bw}");
        let (icpt, _) = line_fit(&c.latency).unwrap();
        assert!((icpt - 1.0).abs() < 1e-6, "{icpt}");
        assert!(message_lane("shm", &Curves::default()).is_err());
    }
}
