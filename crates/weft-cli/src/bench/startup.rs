//! `weft bench startup`: how long a job takes from launch to exit when each rank only
//! initialises, enters one barrier and finalizes.
//!
//! The driver starts `N` copies of `weft __bench-rank startup` through weft-launch (as
//! `weft run` does, with `--hosts` or inside a Slurm allocation too) and times each job
//! from the start of the launch to the last rank reaped. `--compare NAME=COMMAND` adds other
//! launchers, timed the same way from outside: the command's words, `{n}` standing for the
//! rank count and `{weft}` for this binary (so `srun --mpi=pmix -n {n} {weft} __bench-rank
//! startup` starts the same rank program through Slurm's PMIx). Runs are interleaved (every
//! launcher of every size in turn, `--reps` rounds) and the median, minimum and maximum of
//! each are printed: the machine's noise falls on all alike.

use super::median;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use weft_launch::{HostsSpec, JobSpec, OutputMode};

/// Arguments of `weft bench startup`.
#[derive(clap::Args, Clone)]
pub(crate) struct StartupArgs {
    /// Rank counts, one job each per round, e.g. `4,16,64` (default 4, or one per slot of
    /// --hosts).
    #[arg(short = 'n', long = "np", value_name = "N,...")]
    pub np: Option<String>,
    /// Rounds; each times every launcher at every size once.
    #[arg(long, default_value_t = 5)]
    pub reps: u32,
    /// Another launcher to time alongside: NAME=COMMAND, `{n}` the rank count, `{weft}` this
    /// binary (repeatable).
    #[arg(long = "compare", value_name = "NAME=COMMAND")]
    pub compare: Vec<String>,
    /// Print one JSON object per launcher and size instead of a table.
    #[arg(long)]
    pub json: bool,
    /// End any one job that runs longer than this many seconds (the benchmark then fails).
    #[arg(long = "timeout", default_value_t = 120)]
    pub timeout_s: u64,
}

/// Arguments of the rank side.
#[derive(clap::Args)]
pub(crate) struct StartupRankArgs {}

/// A launcher timed by the benchmark.
enum Launcher {
    /// weft's own (`weft run`).
    Weft,
    /// An outside command line.
    Command { name: String, words: Vec<String> },
}

impl Launcher {
    fn name(&self) -> &str {
        match self {
            Launcher::Weft => "weft run",
            Launcher::Command { name, .. } => name,
        }
    }
}

fn parse_counts(text: &str) -> Result<Vec<u32>, String> {
    let v: Vec<u32> = text
        .split(',')
        .map(|s| s.trim().parse::<u32>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("-n {text}: expected a list like 4,16,64"))?;
    if v.is_empty() || v.iter().any(|&n| !(1..=4096).contains(&n)) {
        return Err(format!("-n {text}: each count must be 1..=4096"));
    }
    Ok(v)
}

fn parse_compare(text: &str) -> Result<Launcher, String> {
    let (name, cmd) = text
        .split_once('=')
        .ok_or_else(|| format!("--compare {text:?}: expected NAME=COMMAND"))?;
    let words: Vec<String> = cmd.split_whitespace().map(str::to_owned).collect();
    if name.trim().is_empty() || words.is_empty() {
        return Err(format!("--compare {text:?}: expected NAME=COMMAND"));
    }
    if !words.iter().any(|w| w.contains("{n}")) {
        return Err(format!(
            "--compare {text:?}: the command must say where the rank count goes ({{n}})"
        ));
    }
    Ok(Launcher::Command {
        name: name.trim().to_owned(),
        words,
    })
}

/// One timed job: seconds from launch to exit, or why it failed.
fn time_one(
    launcher: &Launcher,
    n: u32,
    timeout: Duration,
    on: Option<&HostsSpec>,
) -> Result<f64, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
    let t0 = Instant::now();
    match launcher {
        Launcher::Weft => {
            let mut spec = JobSpec::new(n, &exe);
            spec.args = vec!["__bench-rank".into(), "startup".into()];
            spec.timeout = Some(timeout);
            spec.output = OutputMode::Capture;
            spec.hosts = on.cloned();
            let out = weft_launch::run_job(&spec).map_err(|e| e.to_string())?;
            if out.exit_code != 0 {
                return Err(format!(
                    "weft run -n {n}: exit {}: {}",
                    out.exit_code,
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
        Launcher::Command { name, words } => {
            let w: Vec<String> = words
                .iter()
                .map(|w| {
                    w.replace("{n}", &n.to_string())
                        .replace("{weft}", &exe.to_string_lossy())
                })
                .collect();
            let mut child = Command::new(&w[0])
                .args(&w[1..])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("{name}: cannot run {}: {e}", w[0]))?;
            let status = loop {
                if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
                    break st;
                }
                if t0.elapsed() > timeout {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("{name} -n {n}: no exit within {timeout:?}"));
                }
                std::thread::sleep(Duration::from_micros(200));
            };
            if !status.success() {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                return Err(format!("{name} -n {n}: {status}: {}", err.trim()));
            }
        }
    }
    Ok(t0.elapsed().as_secs_f64())
}

/// Runs `weft bench startup`.
pub(crate) fn run(a: StartupArgs, on: Option<&HostsSpec>) -> i32 {
    let text = match (&a.np, on) {
        (Some(t), _) => t.clone(),
        (None, Some(h)) => weft_launch::place::total_slots(&h.hosts).to_string(),
        (None, None) => "4".to_owned(),
    };
    let counts = match parse_counts(&text) {
        Ok(c) if (1..=1000).contains(&a.reps) => c,
        Ok(_) => {
            eprintln!("weft bench startup: --reps {}: must be 1..=1000", a.reps);
            return 2;
        }
        Err(e) => {
            eprintln!("weft bench startup: {e}");
            return 2;
        }
    };
    let mut launchers = vec![Launcher::Weft];
    for c in &a.compare {
        match parse_compare(c) {
            Ok(l) => launchers.push(l),
            Err(e) => {
                eprintln!("weft bench startup: {e}");
                return 2;
            }
        }
    }
    let timeout = Duration::from_secs(a.timeout_s.max(1));
    // times[launcher][count]
    let mut times = vec![vec![Vec::new(); counts.len()]; launchers.len()];
    for _ in 0..a.reps {
        for (ci, &n) in counts.iter().enumerate() {
            for (li, l) in launchers.iter().enumerate() {
                match time_one(l, n, timeout, on) {
                    Ok(t) => times[li][ci].push(t),
                    Err(e) => {
                        eprintln!("weft bench startup: {e}");
                        return 1;
                    }
                }
            }
        }
    }
    if !a.json {
        println!(
            "# weft bench startup: launch + init + barrier + finalize, wall time per job in ms ({} interleaved rounds)",
            a.reps
        );
        println!(
            "{:>6} {:>28} {:>10} {:>10} {:>10} {:>12}",
            "ranks", "launcher", "median", "min", "max", "vs_weft_run"
        );
    }
    for (ci, &n) in counts.iter().enumerate() {
        let base = median(&mut times[0][ci].clone());
        for (li, l) in launchers.iter().enumerate() {
            let v = &mut times[li][ci];
            let med = median(v) * 1e3;
            let min = v.first().copied().unwrap_or(0.0) * 1e3;
            let max = v.last().copied().unwrap_or(0.0) * 1e3;
            let ratio = med / (base * 1e3);
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({
                        "ranks": n,
                        "launcher": l.name(),
                        "median_ms": med,
                        "min_ms": min,
                        "max_ms": max,
                        "ratio_to_weft_run": ratio,
                        "reps": v.len(),
                    })
                );
            } else {
                println!(
                    "{n:>6} {:>28} {med:>10.1} {min:>10.1} {max:>10.1} {ratio:>12.2}",
                    l.name()
                );
            }
        }
    }
    0
}

/// The rank side: init, one barrier, finalize.
pub(crate) fn rank_main(_: StartupRankArgs) -> weft::Result<()> {
    let w = weft::init()?;
    w.world().barrier()?;
    w.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_comparisons_are_checked() {
        assert_eq!(parse_counts("4,16,64").unwrap(), [4, 16, 64]);
        assert!(parse_counts("0").is_err());
        assert!(parse_counts("4,x").is_err());
        let l = parse_compare("srun=srun --mpi=pmix -n {n} {weft} __bench-rank startup").unwrap();
        assert_eq!(l.name(), "srun");
        assert!(parse_compare("srun").is_err());
        assert!(parse_compare("x=").is_err());
        let e = parse_compare("x=mpirun prog").err().unwrap();
        assert!(e.contains("{n}"), "{e}");
    }
}
