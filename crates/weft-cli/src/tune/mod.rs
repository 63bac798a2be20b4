//! `weft tune`: measures this node with real processes and writes one tuning file (TOML)
//! that the runtime loads through `WEFT_TUNING_FILE`: the machine's description, each
//! lane's figures (`[[lane]]`, read by the lanes reader), the measured protocol crossovers,
//! the reduction rate, the collective rules (`[[rule]]`, read by the selector) and every
//! measured cell (`[[point]]`, for `weft tune --check`).
//!
//! Lanes ([`lanes`]): ping-pong and windowed bandwidth between two ranks (`weft bench
//! p2p`'s rank side) with the runtime forced onto one way at a time: the shared-memory ring
//! and its pipelined copy (`WEFT_SHM_CMA=off`), the single copy (CMA from 0 bytes), TCP over
//! loopback and UCX (`WEFT_TRANSPORTS`), and eager against rendezvous sends of the same
//! sizes. Collectives ([`rank`]): one job per rank count and round (the rounds interleaved),
//! the runtime's own selection first and then every algorithm forced in turn at every size.
//! The fastest per size (median over the rounds) becomes the size's rule only where it beat
//! the runtime's own selection by the margin in every round; elsewhere the rule pins the
//! runtime's own selection (the file's lane figures feed the model, which could otherwise
//! choose differently there), so a noisy or loaded run does not write a loser. A rule is
//! bounded by what was measured (that rank count, one node, the size band around the size,
//! oversubscribed or not), so the model
//! still decides outside. `--check` ([`check`]) compares the file's points with the cost
//! model fed with the file's lane figures.

pub(crate) mod check;
pub(crate) mod lanes;
pub(crate) mod rank;

use crate::progress::Progress;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use weft::coll::select::{Crossovers, Machine, MeasuredPoint, ModelFigures, TuningFile};
use weft::lanes::LaneEntry;

/// The collectives `weft tune` measures (as `weft bench coll --op` names them).
pub(crate) const OPS: &[&str] = &[
    "barrier",
    "bcast",
    "reduce",
    "allreduce",
    "allgather",
    "alltoall",
    "gather",
    "scatter",
    "reduce_scatter",
];

/// Arguments of `weft tune`.
#[derive(clap::Args)]
#[command(after_help = "\
The file holds [machine], [[lane]], [crossover], [model], [[rule]] and [[point]] tables. \
Load it with WEFT_TUNING_FILE=FILE: the selector takes its rules (`weft info --explain COLL` \
says \"tuning file\"), the lanes reader its lane figures (`weft info --transports` shows \
\"tuning file FILE\" as their origin) and the collectives' cost model its figures. An \
installed weft's modulefile sets WEFT_TUNING_FILE to <prefix>/share/weft/tuning.toml when \
that file exists (`weft tune` writes there by default when run from an installed prefix).")]
pub(crate) struct TuneArgs {
    /// Fewer sizes, radices and repetitions, rank counts 2 and one oversubscribed (under a
    /// minute on a 2-core machine; no UCX, fewer crossover sizes).
    #[arg(long)]
    pub quick: bool,
    /// Where to write the tuning file (default: PREFIX/share/weft/tuning.toml when this
    /// weft runs from a prefix made by `weft install`, else ./weft-tuning.toml).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Rank counts to measure the collectives at, e.g. 2,3,4 (default: 2, the powers of two
    /// up to the cores, the cores, and one oversubscribed count: twice the cores up to 4
    /// more than them).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub np: Option<Vec<u32>>,
    /// Collectives to measure (default: barrier, bcast, reduce, allreduce, allgather,
    /// alltoall, gather, scatter, reduce_scatter).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub colls: Option<Vec<String>>,
    /// Collective sizes in bytes per rank, e.g. 8,64K,1M (default: 8 B to 4 MiB in powers of
    /// 8; --quick: 8, 4K, 64K, 1M).
    #[arg(long)]
    pub sizes: Option<String>,
    /// Timed calls per cell (default: 200 below 64 KiB, 20 above; --quick: 100 and 20).
    #[arg(long)]
    pub iters: Option<u32>,
    /// Times every collective cell is measured, in separate interleaved jobs (default 3;
    /// --quick: 2).
    #[arg(long, value_name = "N")]
    pub rounds: Option<u32>,
    /// How much faster than the runtime's own selection (without a tuning file), in percent,
    /// an algorithm must be in every round to become a rule.
    #[arg(
        long,
        value_name = "PCT",
        default_value_t = 10.0,
        allow_negative_numbers = true
    )]
    pub margin: f64,
    /// Let measured winners become rules even when other programs ran on the node while
    /// measuring (by default a busy node's run pins every size to the runtime's own choice:
    /// its cells measure the other programs as much as the algorithms).
    #[arg(long)]
    pub busy_ok: bool,
    /// Compare the model with the measurements of FILE (a file `weft tune` wrote) instead of
    /// measuring: predicted and measured time of every cell, the error, and per collective
    /// the mean absolute percentage error (all sizes, and from 64 KiB).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["quick", "out", "np", "colls", "sizes", "iters", "rounds", "busy_ok"])]
    pub check: Option<PathBuf>,
    /// Print JSON (one object per line) and no progress bar.
    #[arg(long)]
    pub json: bool,
    /// End a measuring job that runs longer than this many seconds.
    #[arg(long = "timeout", default_value_t = 600)]
    pub timeout_s: u64,
}

/// What a run measures, from the arguments.
struct Plan {
    nps: Vec<u32>,
    ops: Vec<String>,
    sizes: String,
    iters: (u32, u32),
    radices: Vec<u32>,
    rounds: u32,
    /// A rule's required gain over the baseline, as a fraction (0.1 = 10%).
    margin: f64,
    out: PathBuf,
    cores: u32,
}

/// The cores this process may use.
fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// The default rank counts for `cores` cores (see `--np`).
pub(crate) fn default_nps(cores: u32, quick: bool) -> Vec<u32> {
    let over = (2 * cores).min(cores + 4).max(cores + 1);
    let mut v: Vec<u32> = if quick {
        vec![2]
    } else {
        let mut v: Vec<u32> = (1..)
            .map(|i| 1u32 << i)
            .take_while(|&k| k <= cores)
            .collect();
        v.push(cores.max(2));
        v
    };
    v.push(over.max(3));
    v.sort_unstable();
    v.dedup();
    v
}

/// `PREFIX/share/weft/tuning.toml` when this binary is `PREFIX/bin/weft` of a prefix
/// `weft install` made (it has the modulefile), else `./weft-tuning.toml`.
pub(crate) fn default_out() -> PathBuf {
    let prefix = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent()?.parent().map(Path::to_path_buf));
    match prefix {
        Some(p) if p.join("share/modulefiles/weft").is_file() => {
            p.join(crate::install::TUNING_FILE)
        }
        _ => PathBuf::from("weft-tuning.toml"),
    }
}

fn plan(a: &TuneArgs) -> Result<Plan, String> {
    let cores = cores();
    let nps = a.np.clone().unwrap_or_else(|| default_nps(cores, a.quick));
    if nps.is_empty() {
        return Err("--np: empty list".into());
    }
    if let Some(&n) = nps.iter().find(|&&n| n < 2) {
        return Err(format!(
            "--np {n}: a collective needs at least 2 ranks to measure"
        ));
    }
    let ops: Vec<String> = match &a.colls {
        None => OPS.iter().map(|s| s.to_string()).collect(),
        Some(v) => {
            for c in v {
                if !OPS.contains(&c.as_str()) {
                    return Err(format!("--colls {c}: expected some of {}", OPS.join(", ")));
                }
            }
            v.clone()
        }
    };
    let sizes = match &a.sizes {
        Some(s) => {
            crate::bench::parse_sizes(s)?;
            s.clone()
        }
        None if a.quick => "8,4K,64K,1M".into(),
        None => "8,64,512,4K,32K,256K,1M,4M".into(),
    };
    if a.iters == Some(0) {
        return Err("--iters 0: need at least one iteration".into());
    }
    let iters = match (a.iters, a.quick) {
        (Some(i), _) => (i, i),
        (None, true) => (100, 20),
        (None, false) => (200, 20),
    };
    let rounds = match (a.rounds, a.quick) {
        (Some(0), _) => return Err("--rounds 0: need at least one round".into()),
        (Some(r), _) => r,
        (None, true) => 2,
        (None, false) => 3,
    };
    if !(0.0..100.0).contains(&a.margin) {
        return Err(format!(
            "--margin {}: a percentage from 0 up to (not including) 100",
            a.margin
        ));
    }
    let radices = if a.quick {
        vec![2, 3, 4]
    } else {
        vec![2, 3, 4, 8]
    };
    Ok(Plan {
        nps,
        ops,
        sizes,
        iters,
        radices,
        rounds,
        margin: a.margin / 100.0,
        out: a.out.clone().unwrap_or_else(default_out),
        cores,
    })
}

/// Runs `weft tune`.
pub(crate) fn run(a: TuneArgs) -> i32 {
    if let Some(file) = &a.check {
        return check::run(file, a.json);
    }
    let p = match plan(&a) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("weft tune: {e}");
            return 2;
        }
    };
    // The default place under an installed prefix may not exist yet.
    if a.out.is_none() {
        if let Some(dir) = p.out.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = std::fs::create_dir_all(dir);
        }
    }
    // Refuse an unwritable destination before measuring anything.
    let tmp = temp_beside(&p.out);
    if let Err(e) = std::fs::write(&tmp, b"") {
        eprintln!(
            "weft tune: --out {}: cannot write there: {e}",
            p.out.display()
        );
        return 2;
    }
    let code = measure_and_write(&a, &p, &tmp);
    let _ = std::fs::remove_file(&tmp);
    code
}

/// A scratch file in `out`'s directory (renamed over `out` when complete).
fn temp_beside(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "weft-tuning.toml".into());
    out.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

fn measure_and_write(a: &TuneArgs, p: &Plan, tmp: &Path) -> i32 {
    let quiet = a.json || !std::io::stdout().is_terminal();
    let lane_jobs = lanes::jobs(a.quick);
    let repeats = if a.quick { 3 } else { 5 };
    let total =
        (lane_jobs.len() as u64) * u64::from(repeats) + p.nps.len() as u64 * u64::from(p.rounds);
    let progress = Progress::new("tune", total, quiet);
    // Other programs' runnable tasks, sampled while none of ours runs: before each job.
    let probe = weft::node_load::LoadProbe::open();
    let mut busiest = others_runnable(probe.as_ref());
    let measured = match lanes::measure(&lane_jobs, repeats, a.timeout_s, &progress) {
        Ok(m) => m,
        Err(e) => {
            drop(progress);
            eprintln!("weft tune: {e}");
            return 1;
        }
    };
    let mut samples: Vec<Sample> = Vec::new();
    let ops: Vec<&str> = p.ops.iter().map(String::as_str).collect();
    for round in 0..p.rounds {
        for &np in &p.nps {
            progress.start(&format!(
                "collectives at {np} ranks, round {} of {}",
                round + 1,
                p.rounds
            ));
            busiest = busiest.max(others_runnable(probe.as_ref()));
            let args = rank::TuneRankArgs::to_args(&ops, &p.sizes, p.iters, &p.radices);
            let (code, out) = crate::bench::run_subcommand(
                "__tune-rank",
                np,
                args,
                a.timeout_s,
                &lanes::clean_env(&[]),
                None,
            );
            if code != 0 {
                drop(progress);
                eprintln!("weft tune: the collectives job at {np} ranks failed (exit {code})");
                return code;
            }
            for line in String::from_utf8_lossy(&out).lines() {
                if let Ok(cell) = serde_json::from_str::<rank::Cell>(line) {
                    samples.push(Sample { round, cell });
                } else if let Ok(s) = serde_json::from_str::<rank::Skip>(line) {
                    if round == 0 {
                        progress.note(&format!("# skipped {}: {}", s.skip, s.why));
                    }
                } else if !line.trim().is_empty() {
                    progress.note(line);
                }
            }
            progress.done();
        }
    }
    drop(progress);
    let points = points_of(&samples);
    busiest = busiest.max(others_runnable(probe.as_ref()));
    let busy = (busiest > 0 && !a.busy_ok).then_some(busiest);
    // A busy node's cells measure the other programs as much as the algorithms: nothing
    // can win (a margin of 100%), so every measured size keeps the baseline's choice.
    let margin = if busy.is_some() { 1.0 } else { p.margin };
    let (rules, kept) = rules_of(&samples, p.cores, margin);
    let machine = describe(a.quick, &p.nps, p.cores);
    let mut file = FileOut {
        machine,
        lane: measured.lanes.clone(),
        crossover: measured.crossover.clone(),
        model: ModelFigures {
            reduce_ns_per_byte: Some(lanes::reduce_ns_per_byte()),
            // Not measured by tune (it needs two nodes with several rails).
            stripe_efficiency: None,
        },
        rule: rules,
        point: points,
    };
    // Write, load it as the runtime does (which computes the single-copy threshold the
    // lane model takes from these figures), record that, write again.
    let write = |f: &FileOut| -> Result<TuningFile, String> {
        let text = f.render()?;
        std::fs::write(tmp, &text).map_err(|e| format!("{}: {e}", tmp.display()))?;
        weft::coll::select::parse_tuning_file(&text, &p.out.display().to_string())
            .map_err(|e| format!("the file written does not load: {e}"))
    };
    if let Err(e) = write(&file) {
        eprintln!("weft tune: {e}");
        return 1;
    }
    file.crossover.model_cma_bytes = lanes::model_cma_bytes(tmp);
    let loaded = match write(&file) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("weft tune: {e}");
            return 1;
        }
    };
    if let Err(e) = std::fs::rename(tmp, &p.out) {
        eprintln!("weft tune: --out {}: {e}", p.out.display());
        return 1;
    }
    summary(&p.out, &file, &loaded, &kept, margin, busy, a.json);
    0
}

/// The machine's description.
fn describe(quick: bool, nps: &[u32], cores: u32) -> Machine {
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string());
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|t| {
        t.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    });
    Machine {
        hostname,
        cores: Some(cores),
        cpu_model,
        date: Some(utc_now()),
        weft_version: Some(format!(
            "{} ({})",
            env!("CARGO_PKG_VERSION"),
            env!("BUILD_INFO_COMMIT")
        )),
        quick: Some(quick),
        np: Some(nps.to_vec()),
    }
}

/// Now as RFC 3339 UTC (days to civil date after Howard Hinnant's published algorithm).
pub(crate) fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    civil(secs)
}

fn civil(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// One `[[rule]]` as `weft tune` writes it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub(crate) struct RuleOut {
    pub coll: String,
    pub algo: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub radix: Option<u32>,
    pub min_procs: u32,
    pub max_procs: u32,
    pub max_nodes: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    pub oversubscribed: bool,
}

/// The whole file as written.
#[derive(serde::Serialize)]
struct FileOut {
    machine: Machine,
    lane: Vec<LaneEntry>,
    crossover: Crossovers,
    model: ModelFigures,
    rule: Vec<RuleOut>,
    point: Vec<MeasuredPoint>,
}

impl FileOut {
    fn render(&self) -> Result<String, String> {
        let body = toml::to_string(self).map_err(|e| format!("writing the tuning file: {e}"))?;
        Ok(format!(
            "# weft tuning file, written by `weft tune` (load it with WEFT_TUNING_FILE=this file;\n\
             # `weft tune --check` compares its [[point]] measurements with the cost model).\n\
             # Rules hold only for what was measured: one node, the rank counts of [machine].np,\n\
             # sizes up to the largest measured; the cost model decides elsewhere.\n\n{body}"
        ))
    }
}

/// Runnable tasks of other programs now, while none of ours runs: the fewest of a few
/// readings 20 ms apart (a task that ran for a moment is not load), less this process.
fn others_runnable(probe: Option<&weft::node_load::LoadProbe>) -> u32 {
    let Some(probe) = probe else { return 0 };
    let mut least = u32::MAX;
    for i in 0..5 {
        if i > 0 {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        if let Some(n) = probe.runnable() {
            least = least.min(n);
        }
    }
    if least == u32::MAX {
        0
    } else {
        least.saturating_sub(1)
    }
}

/// One collective cell measured in one round.
#[derive(Clone, Debug)]
pub(crate) struct Sample {
    /// The round (0-based).
    pub round: u32,
    /// What the job printed.
    pub cell: rank::Cell,
}

/// A size at which no algorithm beat the runtime's own selection by the margin in every
/// round, so no rule was written there.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Kept {
    pub coll: String,
    pub procs: u32,
    pub bytes: u64,
    /// What the runtime chose there (the baseline's algorithm).
    pub default_algo: String,
    /// The baseline's radix (algorithms that take one); with `default_algo` the rule
    /// written for this size, when the baseline was measured.
    pub default_radix: Option<u32>,
    /// The fastest forced algorithm (median over the rounds) and its time over the
    /// baseline's, median of the rounds' ratios.
    pub fastest: String,
    pub ratio: f64,
}

/// The median of `v` (the mean of the middle two for an even count); None when empty.
fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// The forced cells as the file's `[[point]]`s: each the median of its rounds.
pub(crate) fn points_of(samples: &[Sample]) -> Vec<MeasuredPoint> {
    let mut out: Vec<MeasuredPoint> = Vec::new();
    for s in samples.iter().filter(|s| !s.cell.baseline) {
        let c = &s.cell;
        let same = |p: &MeasuredPoint| {
            p.coll == c.coll
                && p.algo == c.algo
                && p.radix == c.radix
                && p.procs == c.procs
                && p.ppn == c.ppn
                && p.bytes == c.bytes
        };
        if out.iter().any(same) {
            continue;
        }
        let times: Vec<f64> = samples
            .iter()
            .filter(|t| {
                let d = &t.cell;
                !d.baseline
                    && d.coll == c.coll
                    && d.algo == c.algo
                    && d.radix == c.radix
                    && d.procs == c.procs
                    && d.ppn == c.ppn
                    && d.bytes == c.bytes
            })
            .map(|t| t.cell.p50_us)
            .collect();
        out.push(MeasuredPoint {
            coll: c.coll.clone(),
            algo: c.algo.clone(),
            radix: c.radix,
            procs: c.procs,
            ppn: c.ppn,
            bytes: c.bytes,
            measured_us: median(times).expect("at least this sample"),
        });
    }
    out
}

/// A rule's algorithm and radix.
type Winner = (String, Option<u32>);

/// The winner at one size: the fastest forced algorithm and radix by median over the
/// rounds, if it is not the baseline's own choice and beat the baseline by `margin` in every
/// round that measured both (and at least one did); else what was kept.
fn winner_at(
    cells: &[&Sample],
    coll: &str,
    procs: u32,
    bytes: u64,
    margin: f64,
) -> Result<Winner, Kept> {
    let mut keys: Vec<(&str, Option<u32>)> = Vec::new();
    for s in cells.iter().filter(|s| !s.cell.baseline) {
        let k = (s.cell.algo.as_str(), s.cell.radix);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let at = |algo: &str, radix: Option<u32>, baseline: bool| -> Vec<(u32, f64)> {
        cells
            .iter()
            .filter(|s| {
                s.cell.baseline == baseline
                    && (baseline || (s.cell.algo == algo && s.cell.radix == radix))
            })
            .map(|s| (s.round, s.cell.p50_us))
            .collect()
    };
    let best = keys
        .iter()
        .filter_map(|&(a, r)| {
            median(at(a, r, false).iter().map(|x| x.1).collect()).map(|m| (a, r, m))
        })
        .min_by(|x, y| x.2.total_cmp(&y.2));
    let base = at("", None, true);
    let default = cells.iter().find(|s| s.cell.baseline).map(|s| &s.cell);
    let default_algo = default.map_or_else(|| "(not measured)".to_string(), |c| c.algo.clone());
    let default_radix = default.and_then(|c| c.radix);
    let is_default = |algo: &str, radix: Option<u32>| {
        default.is_some_and(|c| c.algo == algo && c.radix == radix)
    };
    let Some((algo, radix, _)) = best else {
        return Err(Kept {
            coll: coll.to_string(),
            procs,
            bytes,
            default_algo,
            default_radix,
            fastest: "(none)".into(),
            ratio: f64::NAN,
        });
    };
    let ratios: Vec<f64> = at(algo, radix, false)
        .iter()
        .filter_map(|&(round, us)| {
            base.iter()
                .find(|b| b.0 == round)
                .map(|b| us / b.1.max(f64::MIN_POSITIVE))
        })
        .collect();
    // The runtime's own choice needs no rule, however its rounds went.
    if !is_default(algo, radix) && !ratios.is_empty() && ratios.iter().all(|&q| q <= 1.0 - margin) {
        Ok((algo.to_string(), radix))
    } else {
        Err(Kept {
            coll: coll.to_string(),
            procs,
            bytes,
            default_algo,
            default_radix,
            fastest: match radix {
                Some(k) => format!("{algo} (radix {k})"),
                None => algo.to_string(),
            },
            ratio: median(ratios).unwrap_or(f64::NAN),
        })
    }
}

/// The rules of `samples`, and the sizes where the default was kept: per collective and
/// rank count, the winner at each size ([`winner_at`]), each over the band of sizes around
/// it (from the geometric middle between it and the size below to that between it and the
/// size above; from 0 for the smallest, up to the largest measured size for the largest),
/// adjacent bands with the same winner merged; a size without a winner has no rule, so the
/// runtime keeps its own selection there. Bytes mean nothing to a barrier: its rule has no
/// size bounds. Reduce_scatter's rules (measured as the block form) are written for both
/// forms.
pub(crate) fn rules_of(samples: &[Sample], cores: u32, margin: f64) -> (Vec<RuleOut>, Vec<Kept>) {
    let mut keys: Vec<(String, u32, u32)> = Vec::new();
    for s in samples {
        let k = (s.cell.coll.clone(), s.cell.procs, s.cell.ppn);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut out = Vec::new();
    let mut kept = Vec::new();
    for (coll, procs, ppn) in keys {
        let cells: Vec<&Sample> = samples
            .iter()
            .filter(|s| s.cell.coll == coll && s.cell.procs == procs && s.cell.ppn == ppn)
            .collect();
        let mut sizes: Vec<u64> = cells.iter().map(|s| s.cell.bytes).collect();
        sizes.sort_unstable();
        sizes.dedup();
        // (lo, hi, winner); None where the default was kept.
        let mut bands: Vec<(u64, u64, Option<Winner>)> = Vec::new();
        for (i, &size) in sizes.iter().enumerate() {
            let here: Vec<&Sample> = cells
                .iter()
                .copied()
                .filter(|s| s.cell.bytes == size)
                .collect();
            // A kept size is pinned to the baseline's own choice: the file's lane figures
            // feed the model, which could otherwise choose differently there.
            let win = match winner_at(&here, &coll, procs, size, margin) {
                Ok(w) => Some(w),
                Err(k) => {
                    let pinned = here
                        .iter()
                        .any(|s| s.cell.baseline)
                        .then(|| (k.default_algo.clone(), k.default_radix));
                    kept.push(k);
                    pinned
                }
            };
            let lo = if i == 0 {
                0
            } else {
                ((sizes[i - 1] as f64 * size as f64).sqrt().floor() as u64 + 1)
                    .max(sizes[i - 1] + 1)
            };
            let hi = if i + 1 == sizes.len() {
                size
            } else {
                ((size as f64 * sizes[i + 1] as f64).sqrt().floor() as u64).max(size)
            };
            match bands.last_mut() {
                Some(b) if b.2.is_some() && b.2 == win => b.1 = hi,
                _ => bands.push((lo, hi, win)),
            }
        }
        let barrier = coll == "barrier";
        let names: Vec<&str> = if coll == "reduce_scatter_block" {
            vec!["reduce_scatter_block", "reduce_scatter"]
        } else {
            vec![coll.as_str()]
        };
        for name in names {
            for (lo, hi, win) in &bands {
                let Some((algo, radix)) = win else { continue };
                out.push(RuleOut {
                    coll: name.to_string(),
                    algo: algo.clone(),
                    radix: *radix,
                    min_procs: procs,
                    max_procs: procs,
                    max_nodes: 1,
                    min_bytes: (!barrier && *lo > 0).then_some(*lo),
                    max_bytes: (!barrier).then_some(*hi),
                    oversubscribed: ppn > cores,
                });
            }
        }
    }
    (out, kept)
}

/// What a run prints at the end.
fn summary(
    out: &Path,
    f: &FileOut,
    loaded: &TuningFile,
    kept: &[Kept],
    margin: f64,
    busy: Option<u32>,
    json: bool,
) {
    if json {
        let kept: Vec<serde_json::Value> = kept
            .iter()
            .map(|k| {
                serde_json::json!({
                    "coll": k.coll, "procs": k.procs, "bytes": k.bytes,
                    "default": k.default_algo, "default_radix": k.default_radix,
                    "fastest": k.fastest,
                    "ratio": k.ratio.is_finite().then_some(k.ratio),
                })
            })
            .collect();
        let v = serde_json::json!({
            "file": out.display().to_string(),
            "kept_default": kept,
            "busy_others_runnable": busy,
            "lanes": f.lane,
            "crossover": f.crossover,
            "reduce_ns_per_byte": f.model.reduce_ns_per_byte,
            "rules": loaded.rules.len(),
            "points": loaded.points.len(),
        });
        println!("{v}");
        return;
    }
    println!("wrote {}", out.display());
    if let Some(n) = busy {
        println!(
            "the node was busy: {n} runnable tasks of other programs while measuring; every \
             size keeps the runtime's own choice (measure on an idle node, or pass --busy-ok \
             to let measured winners through)"
        );
    }
    println!(
        "{:<6} {:>12} {:>12} {:>10}",
        "lane", "latency_us", "overhead_us", "GB/s"
    );
    for l in &f.lane {
        println!(
            "{:<6} {:>12.3} {:>12.3} {:>10.3}",
            l.transport,
            l.latency_us.unwrap_or(0.0),
            l.overhead_us.unwrap_or(0.0),
            l.dedicated_gbytes_per_s.unwrap_or(0.0)
        );
    }
    let show = |v: Option<u64>| v.map_or("none measured".to_string(), |n| format!("{n} B"));
    println!(
        "crossovers: eager -> rendezvous {}, pipelined copy -> CMA {} (lane model from these figures: {})",
        show(f.crossover.eager_rendezvous_bytes),
        show(f.crossover.pipelined_cma_bytes),
        show(f.crossover.model_cma_bytes)
    );
    println!(
        "{} rules from {} measured cells; the runtime's own choice kept (and pinned) at {} \
         sizes (nothing beat it by {:.0}% in every round); load with WEFT_TUNING_FILE={}",
        loaded.rules.len(),
        loaded.points.len(),
        kept.len(),
        margin * 100.0,
        out.display()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cell of `round`; `algo = "base:X"` makes it the baseline (the runtime chose X).
    fn at(round: u32, coll: &str, algo: &str, procs: u32, bytes: u64, us: f64) -> Sample {
        let (algo, baseline) = match algo.strip_prefix("base:") {
            Some(a) => (a, true),
            None => (algo, false),
        };
        Sample {
            round,
            cell: rank::Cell {
                coll: coll.into(),
                algo: algo.into(),
                radix: None,
                procs,
                ppn: procs,
                bytes,
                p50_us: us,
                baseline,
            },
        }
    }

    #[test]
    fn rules_cover_the_measured_bands_only() {
        let mut pts = Vec::new();
        for round in 0..2 {
            pts.extend([
                at(round, "bcast", "base:knomial", 2, 8, 1.0),
                at(round, "bcast", "knomial", 2, 8, 1.0),
                at(round, "bcast", "shm", 2, 8, 0.5),
                at(round, "bcast", "base:knomial", 2, 4096, 3.0),
                at(round, "bcast", "knomial", 2, 4096, 3.0),
                at(round, "bcast", "shm", 2, 4096, 2.0),
                at(round, "bcast", "base:knomial", 2, 65536, 9.0),
                at(round, "bcast", "knomial", 2, 65536, 9.0),
                at(round, "bcast", "shm", 2, 65536, 5.0),
                at(round, "barrier", "base:dissemination", 4, 0, 2.0),
                at(round, "barrier", "shm_counter", 4, 0, 1.0),
            ]);
        }
        let (r, kept) = rules_of(&pts, 2, 0.1);
        assert!(kept.is_empty(), "{kept:?}");
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(
            (r[0].algo.as_str(), r[0].min_bytes, r[0].max_bytes),
            ("shm", None, Some(65536))
        );
        assert!(r.iter().all(|x| x.max_nodes == 1));
        assert_eq!((r[1].max_bytes, r[1].oversubscribed), (None, true));
        assert!(!r[0].oversubscribed);
        // The points are the rounds' medians of the forced cells; baselines are not points.
        let p = points_of(&pts);
        assert_eq!(p.len(), 7);
        assert!(p.iter().all(|x| x.algo != "dissemination"));
    }

    #[test]
    fn a_rule_must_beat_the_default_by_the_margin_in_every_round() {
        let pts = vec![
            // 8 B: shm is 40% faster in both rounds: a rule.
            at(0, "bcast", "base:knomial", 2, 8, 10.0),
            at(0, "bcast", "shm", 2, 8, 6.0),
            at(1, "bcast", "base:knomial", 2, 8, 10.0),
            at(1, "bcast", "shm", 2, 8, 6.0),
            // 4 KiB: shm fastest by median, but only 5% better in round 1: kept.
            at(0, "bcast", "base:knomial", 2, 4096, 10.0),
            at(0, "bcast", "shm", 2, 4096, 5.0),
            at(1, "bcast", "base:knomial", 2, 4096, 10.0),
            at(1, "bcast", "shm", 2, 4096, 9.5),
            // 64 KiB: a loser under load in one round (the baseline was slow once) does
            // not win either way: kept.
            at(0, "bcast", "base:knomial", 2, 65536, 100.0),
            at(0, "bcast", "shm", 2, 65536, 20.0),
            at(1, "bcast", "base:knomial", 2, 65536, 10.0),
            at(1, "bcast", "shm", 2, 65536, 30.0),
            // 1 MiB: shm again clearly faster: a rule, not merged across the kept sizes.
            at(0, "bcast", "base:knomial", 2, 1 << 20, 100.0),
            at(0, "bcast", "shm", 2, 1 << 20, 50.0),
            at(1, "bcast", "base:knomial", 2, 1 << 20, 100.0),
            at(1, "bcast", "shm", 2, 1 << 20, 50.0),
        ];
        let (r, kept) = rules_of(&pts, 2, 0.1);
        // The kept sizes are pinned to the default's own choice (merged into one band).
        let bands: Vec<(&str, Option<u64>, Option<u64>)> = r
            .iter()
            .map(|x| (x.algo.as_str(), x.min_bytes, x.max_bytes))
            .collect();
        assert_eq!(
            bands,
            vec![
                ("shm", None, Some(181)),
                ("knomial", Some(182), Some(262144)),
                ("shm", Some(262145), Some(1 << 20))
            ]
        );
        let at_kept: Vec<u64> = kept.iter().map(|k| k.bytes).collect();
        assert_eq!(at_kept, vec![4096, 65536]);
        assert_eq!(kept[0].default_algo, "knomial");
        assert_eq!(kept[0].fastest, "shm");
        assert!((kept[0].ratio - 0.725).abs() < 1e-9, "{:?}", kept[0]);
        // With no margin the 4 KiB cell (better in both rounds) becomes a rule too.
        let (r0, kept0) = rules_of(&pts, 2, 0.0);
        assert_eq!(kept0.len(), 1);
        assert_eq!(r0.len(), 3, "{r0:?}");
        assert_eq!(
            (r0[0].algo.as_str(), r0[0].min_bytes, r0[0].max_bytes),
            ("shm", None, Some(16384))
        );
        // A margin of 100% (a busy node's run) pins every size to the default.
        let (all, kept_all) = rules_of(&pts, 2, 1.0);
        assert_eq!(kept_all.len(), 4);
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].algo, "knomial");
        // The runtime's own choice, however much faster forced than as the baseline, does
        // not win: the size is kept (and pinned to it).
        let same = vec![
            at(0, "bcast", "base:shm", 2, 8, 10.0),
            at(0, "bcast", "shm", 2, 8, 5.0),
            at(0, "bcast", "knomial", 2, 8, 6.0),
        ];
        let (r1, k1) = rules_of(&same, 2, 0.1);
        assert_eq!(r1.len(), 1, "{r1:?}");
        assert_eq!(r1[0].algo, "shm");
        assert_eq!((k1[0].fastest.as_str(), k1[0].ratio), ("shm", 0.5));
        // Without a baseline measured nothing is pinned and nothing wins.
        let forced: Vec<Sample> = pts.into_iter().filter(|s| !s.cell.baseline).collect();
        let (none, all_kept) = rules_of(&forced, 2, 0.1);
        assert!(none.is_empty());
        assert_eq!(all_kept.len(), 4);
        assert_eq!(all_kept[0].default_algo, "(not measured)");
    }

    #[test]
    fn dates_and_defaults() {
        assert_eq!(civil(0), "1970-01-01T00:00:00Z");
        assert_eq!(civil(1_795_996_800 + 3_661), "2026-11-30T01:01:01Z");
        assert_eq!(default_nps(2, true), vec![2, 4]);
        assert_eq!(default_nps(2, false), vec![2, 4]);
        assert_eq!(default_nps(8, false), vec![2, 4, 8, 12]);
        assert_eq!(default_nps(1, false), vec![2, 3]);
    }
}
