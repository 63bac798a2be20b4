//! The fault-injection campaign: `weft-fault-campaign [--jobs N] [--seed S] [--kinds LIST]
//! [--weft PATH] [--rank PATH] [--max-end-ms MS]`.
//!
//! Runs N jobs of `weft run -n 2..4 weft-itest-rank traffic` (ring exchanges across every
//! protocol, allreduce, bcast, alltoall; shared memory or TCP) and, once every rank moves
//! data, injects one fault per job, the kinds taken in turn:
//! - `rank-kill`: SIGKILL to a random rank; the job must end with 137 and name that rank
//!   and signal (not the aborts of the ranks that noticed);
//! - `rank-segv`: a random rank writes through a null pointer (SIGSEGV, 139, named);
//! - `rank-exit`: a random rank calls `exit(C)` without finalizing (C, named);
//! - `launcher-term` / `launcher-int`: SIGTERM / SIGINT to `weft run` (143 / 130);
//! - `launcher-kill`: SIGKILL to `weft run` while the ranks move data;
//! - `launcher-kill-early`: SIGKILL to `weft run` while the ranks start up: as soon as the
//!   node segment exists (before every rank attached, when a segment can be left: the next
//!   job's start must sweep it), or at a random moment of the first 400 ms with TCP.
//!
//! Every job is checked: it ended within `--max-end-ms` (1000) of the fault, with the
//! expected exit code and first-cause line (none for the launcher kills), no rank process
//! outlived it by more than that, and no `/dev/shm` segment of it is left (a
//! `launcher-kill-early` leftover must be gone once the next job started). A job still
//! running 20 s (or twice `--max-end-ms`) after its fault is a hang; a larger `--max-end-ms`
//! lengthens the start-up bound (30 s) to it too. Prints one line per job and a summary;
//! exits 1 when any check failed. The machine may be loaded: times are wall clock.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

const KINDS: &[&str] = &[
    "rank-kill",
    "rank-exit",
    "launcher-term",
    "rank-segv",
    "launcher-int",
    "launcher-kill",
    "launcher-kill-early",
];
/// A job still running this long after its fault is a hang.
const HANG: Duration = Duration::from_secs(20);
/// How long the ranks get to start moving data.
const START: Duration = Duration::from_secs(30);
/// Segments younger than this are left alone by a job start's sweep (weft-launch's
/// SWEEP_MIN_AGE): a leftover is checked after the next job started once it is this old.
const SWEEP_AGE: Duration = Duration::from_millis(1100);

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

struct Args {
    jobs: usize,
    seed: u64,
    kinds: Vec<String>,
    weft: PathBuf,
    rank: PathBuf,
    max_end: Duration,
}

fn parse_args() -> Result<Args, String> {
    let here = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = here.parent().unwrap_or(Path::new(".")).to_path_buf();
    let mut a = Args {
        jobs: 14,
        seed: 1,
        kinds: KINDS.iter().map(|k| k.to_string()).collect(),
        weft: dir.join("weft"),
        rank: dir.join("weft-itest-rank"),
        max_end: Duration::from_millis(1000),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{flag}: a value is missing"))
        };
        match flag.as_str() {
            "--jobs" => a.jobs = value()?.parse().map_err(|e| format!("--jobs: {e}"))?,
            "--seed" => a.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--kinds" => {
                a.kinds = value()?.split(',').map(str::to_owned).collect();
                if let Some(k) = a.kinds.iter().find(|k| !KINDS.contains(&k.as_str())) {
                    return Err(format!("--kinds: unknown kind {k:?} (known: {KINDS:?})"));
                }
            }
            "--weft" => a.weft = value()?.into(),
            "--rank" => a.rank = value()?.into(),
            "--max-end-ms" => {
                a.max_end = Duration::from_millis(
                    value()?.parse().map_err(|e| format!("--max-end-ms: {e}"))?,
                )
            }
            "-h" | "--help" => {
                println!("weft-fault-campaign [--jobs N] [--seed S] [--kinds {}] [--weft PATH] [--rank PATH] [--max-end-ms MS]", KINDS.join(","));
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    for (what, p) in [("--weft", &a.weft), ("--rank", &a.rank)] {
        if !p.is_file() {
            return Err(format!(
                "{what} {}: no such program (build weft-cli and weft-itest)",
                p.display()
            ));
        }
    }
    if a.kinds.is_empty() || a.seed == 0 {
        return Err("--kinds must name a kind and --seed must not be 0".into());
    }
    Ok(a)
}

/// What one job's output told.
enum Line {
    Out(String),
    Err(String),
}

fn readers(child: &mut Child) -> Receiver<Line> {
    let (tx, rx) = channel();
    let out = child.stdout.take().expect("piped stdout");
    let err = child.stderr.take().expect("piped stderr");
    let t1 = tx.clone();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = t1.send(Line::Out(l));
        }
    });
    std::thread::spawn(move || {
        for l in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(Line::Err(l));
        }
    });
    rx
}

fn alive(pid: u32) -> bool {
    // A zombie is dead for this purpose; /proc/<pid>/stat's state says so.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// The processes whose parent is `ppid`.
fn children_of(ppid: u32) -> Vec<u32> {
    let Ok(d) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    d.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    let rest = s.rsplit_once(')')?.1;
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(ppid)
        })
        .collect()
}

fn job_id_of(pid: u32) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    env.split(|&b| b == 0)
        .find_map(|kv| kv.strip_prefix(b"WEFT_JOB_ID="))
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

fn segments_of(job_id: &str) -> Vec<String> {
    let prefix = format!("weft-{job_id}");
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill() of a process this campaign started (or one of its ranks).
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

#[derive(Default)]
struct Tally {
    jobs: usize,
    failed: usize,
    hangs: usize,
    leaked_processes: usize,
    leaked_segments: usize,
    swept_segments: usize,
    first_cause_ok: usize,
    first_cause_expected: usize,
    end_ms: Vec<f64>,
}

/// A job the campaign ran: what to check once the next one has started.
struct Pending {
    job: usize,
    segments: Vec<String>,
    since: Instant,
}

fn main() {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("weft-fault-campaign: {e}");
            std::process::exit(2);
        }
    };
    let mut rng = Rng(a.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut t = Tally::default();
    let mut pending: Option<Pending> = None;
    let started = Instant::now();
    for j in 0..a.jobs {
        let kind = a.kinds[j % a.kinds.len()].as_str();
        let n = 2 + rng.below(3) as u32;
        let tcp = rng.below(2) == 1;
        let victim = rng.below(n as u64) as u32;
        let code = 2 + rng.below(90) as i32;
        let after_ms = 50 + rng.below(250);
        if let Some(p) = &pending {
            let age = p.since.elapsed();
            if age < SWEEP_AGE {
                std::thread::sleep(SWEEP_AGE - age);
            }
        }
        let mut cmd = Command::new(&a.weft);
        cmd.args(["run", "-n", &n.to_string(), "--timeout", "60", "--"])
            .arg(&a.rank)
            .args(["traffic", "30"]);
        if kind == "rank-exit" {
            cmd.args([
                "exit",
                &victim.to_string(),
                &code.to_string(),
                &after_ms.to_string(),
            ]);
        }
        if kind == "rank-segv" {
            cmd.args(["segv", &victim.to_string(), &after_ms.to_string()]);
        }
        if tcp {
            cmd.env("WEFT_TRANSPORTS", "tcp");
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("weft-fault-campaign: starting {}: {e}", a.weft.display());
                std::process::exit(2);
            }
        };
        let launcher = child.id();
        let lines = readers(&mut child);
        let mut problems: Vec<String> = Vec::new();
        let mut stderr: Vec<String> = Vec::new();
        let mut ranks: Vec<(u32, u32)> = Vec::new();
        let mut injected_at = None;
        let mut early_job_id = None;
        if kind == "launcher-kill-early" {
            if tcp {
                // No node segment: a kill at a random moment of the start.
                std::thread::sleep(Duration::from_millis(rng.below(400)));
            } else {
                // The moment that leaked segments: the node segment exists, not every rank
                // has attached (its creator removes the name once all have).
                let deadline = Instant::now() + Duration::from_secs(5);
                while Instant::now() < deadline {
                    let id = children_of(launcher).into_iter().find_map(job_id_of);
                    if id.is_some_and(|id| !segments_of(&id).is_empty()) {
                        break;
                    }
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
            // Its ranks so far (their job id names the segments they may leave; read now:
            // a dead rank's environment cannot be).
            ranks = children_of(launcher)
                .into_iter()
                .enumerate()
                .map(|(i, p)| (i as u32, p))
                .collect();
            early_job_id = ranks.iter().find_map(|&(_, p)| job_id_of(p));
            signal(launcher, libc::SIGKILL);
            injected_at = Some(Instant::now());
        } else {
            // Wait until every rank moves data; a rank that ends itself may do so before the
            // others say they run: then its own line is enough.
            let self_ending = matches!(kind, "rank-exit" | "rank-segv");
            let deadline = Instant::now() + START.max(a.max_end);
            let ready = |ranks: &[(u32, u32)]| {
                ranks.len() == n as usize
                    || (self_ending && ranks.iter().any(|&(r, _)| r == victim))
            };
            while !ready(&ranks) && Instant::now() < deadline {
                match lines.recv_timeout(Duration::from_millis(20)) {
                    Ok(Line::Out(l)) => {
                        let w: Vec<&str> = l.split_whitespace().collect();
                        if let ["traffic", "running", "rank", r, "pid", p] = w[..] {
                            if let (Ok(r), Ok(p)) = (r.parse(), p.parse()) {
                                ranks.push((r, p));
                            }
                        }
                    }
                    Ok(Line::Err(l)) => stderr.push(l),
                    Err(_) => {}
                }
                if matches!(child.try_wait(), Ok(Some(_))) {
                    break;
                }
            }
            let is_ready = ready(&ranks);
            // Every rank process there is, for the check that none outlives the job.
            for p in children_of(launcher) {
                if !ranks.iter().any(|&(_, q)| q == p) {
                    ranks.push((u32::MAX, p));
                }
            }
            if !is_ready {
                problems.push(format!(
                    "only {} of {n} ranks started moving data",
                    ranks.len()
                ));
            } else {
                let (_, vpid) = ranks
                    .iter()
                    .copied()
                    .find(|&(r, _)| r == victim)
                    .expect("victim");
                if matches!(kind, "rank-exit" | "rank-segv") {
                    // The rank ends itself `after_ms` after it started: the fault's time is
                    // its death, watched to the millisecond.
                    let deadline = Instant::now() + START.max(a.max_end);
                    while alive(vpid) && Instant::now() < deadline {
                        std::thread::sleep(Duration::from_micros(500));
                    }
                } else {
                    std::thread::sleep(Duration::from_millis(rng.below(200)));
                    match kind {
                        "rank-kill" => signal(vpid, libc::SIGKILL),
                        "launcher-term" => signal(launcher, libc::SIGTERM),
                        "launcher-int" => signal(launcher, libc::SIGINT),
                        "launcher-kill" => signal(launcher, libc::SIGKILL),
                        _ => unreachable!("kind {kind}"),
                    }
                }
                injected_at = Some(Instant::now());
            }
        }
        let job_id = early_job_id.or_else(|| ranks.iter().find_map(|&(_, p)| job_id_of(p)));
        let t0 = injected_at.unwrap_or_else(Instant::now);
        // Wait for the launcher (and, when it was killed, for its ranks).
        let mut status = None;
        // A larger --max-end-ms (CI on a loaded machine) lengthens the hang bound with it.
        let hang = HANG.max(2 * a.max_end);
        while t0.elapsed() < hang {
            if let Ok(Some(s)) = child.try_wait() {
                status = Some(s);
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let mut ended = t0.elapsed();
        let status = match status {
            Some(s) => s,
            None => {
                t.hangs += 1;
                problems.push(format!(
                    "hang: still running {} s after the fault",
                    hang.as_secs()
                ));
                signal(launcher, libc::SIGKILL);
                child.wait().expect("reaped")
            }
        };
        // Ranks must be gone within the same bound of the launcher's end (a killed
        // launcher's ranks die with it).
        let rank_deadline = Instant::now() + a.max_end;
        while ranks.iter().any(|&(_, p)| alive(p)) && Instant::now() < rank_deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        if kind.starts_with("launcher-kill") {
            ended = ended.max(t0.elapsed());
        }
        let left: Vec<u32> = ranks
            .iter()
            .map(|&(_, p)| p)
            .filter(|&p| alive(p))
            .collect();
        if !left.is_empty() {
            t.leaked_processes += left.len();
            problems.push(format!("rank processes left: {left:?}"));
            for p in &left {
                signal(*p, libc::SIGKILL);
            }
        }
        // The rest of the output, until the pipes close (the launcher and its ranks are gone
        // by now; the bound only catches a process that keeps them open).
        let drain = Instant::now() + hang;
        while Instant::now() < drain {
            match lines.recv_timeout(Duration::from_millis(20)) {
                Ok(Line::Err(l)) => stderr.push(l),
                Ok(Line::Out(_)) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                Err(_) => {}
            }
        }
        if ended > a.max_end {
            problems.push(format!(
                "ended {:.0} ms after the fault",
                ended.as_secs_f64() * 1e3
            ));
        }
        t.end_ms.push(ended.as_secs_f64() * 1e3);
        // Exit code and first cause.
        use std::os::unix::process::ExitStatusExt;
        let got = status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
        let victim_pid = ranks.iter().find(|&&(r, _)| r == victim).map(|&(_, p)| p);
        let (want_code, want_line): (i32, Option<String>) = match kind {
            "rank-kill" => (
                137,
                Some(format!(
                    "weft: rank {victim} (pid {}) killed by signal 9 (SIGKILL); ending job",
                    victim_pid.unwrap_or(0)
                )),
            ),
            "rank-segv" => (
                139,
                Some(format!(
                    "weft: rank {victim} (pid {}) killed by signal 11 (SIGSEGV); ending job",
                    victim_pid.unwrap_or(0)
                )),
            ),
            "rank-exit" => (
                code,
                Some(format!(
                    "weft: rank {victim} exited with code {code}; ending job"
                )),
            ),
            "launcher-term" => (
                143,
                Some(format!("weft: received SIGTERM; killing {n} ranks")),
            ),
            "launcher-int" => (
                130,
                Some(format!("weft: received SIGINT; killing {n} ranks")),
            ),
            _ => (137, None),
        };
        if got != want_code {
            problems.push(format!("exit code {got}, want {want_code}"));
        }
        if let Some(line) = &want_line {
            t.first_cause_expected += 1;
            // The cause is the one line the launcher prints about the job's end.
            let causes: Vec<&String> = stderr
                .iter()
                .filter(|l| l.ends_with("; ending job") || l.starts_with("weft: received "))
                .collect();
            if causes.len() == 1 && causes[0] == line {
                t.first_cause_ok += 1;
            } else {
                problems.push(format!("cause lines {causes:?}, want [{line:?}]"));
            }
        }
        if let Some(cut) = stderr
            .iter()
            .find(|l| l.trim_end() == "weft: rank" || l.ends_with("weft: rank "))
        {
            problems.push(format!("a cut diagnostic line: {cut:?}"));
        }
        // Segments: none may be left, except by an early launcher kill until the next start.
        if let Some(p) = pending.take() {
            let still: Vec<&String> = p
                .segments
                .iter()
                .filter(|s| Path::new("/dev/shm").join(s).exists())
                .collect();
            if still.is_empty() {
                t.swept_segments += p.segments.len();
            } else {
                t.leaked_segments += still.len();
                println!(
                    "job {}: segments not swept by the next job's start: {still:?}",
                    p.job
                );
                t.failed += 1;
            }
        }
        let segs = job_id.as_deref().map(segments_of).unwrap_or_default();
        if !segs.is_empty() {
            if kind == "launcher-kill-early" {
                pending = Some(Pending {
                    job: j,
                    segments: segs.clone(),
                    since: Instant::now(),
                });
            } else {
                t.leaked_segments += segs.len();
                problems.push(format!("segments left: {segs:?}"));
            }
        }
        t.jobs += 1;
        let verdict = if problems.is_empty() { "ok" } else { "FAILED" };
        if !problems.is_empty() {
            t.failed += 1;
        }
        println!(
            "job {j:4} {kind:<20} n={n} {:<3} {verdict:<6} exit {got:3} ended {:6.1} ms after the fault{}{}",
            if tcp { "tcp" } else { "shm" },
            ended.as_secs_f64() * 1e3,
            match (&job_id, segs.len()) {
                (None, _) => ", no rank had started".to_owned(),
                (Some(_), 0) => String::new(),
                (Some(_), k) => format!(", {k} segment(s) for the sweep"),
            },
            if problems.is_empty() { String::new() } else { format!(": {}", problems.join("; ")) },
        );
        if !problems.is_empty() {
            for l in &stderr {
                println!("    stderr: {l}");
            }
        }
    }
    // A last start sweeps what the last job may have left.
    if let Some(p) = pending.take() {
        let age = p.since.elapsed();
        if age < SWEEP_AGE {
            std::thread::sleep(SWEEP_AGE - age);
        }
        let _ = Command::new(&a.weft)
            .args(["run", "-n", "1", "true"])
            .output();
        let still: Vec<&String> = p
            .segments
            .iter()
            .filter(|s| Path::new("/dev/shm").join(s).exists())
            .collect();
        if still.is_empty() {
            t.swept_segments += p.segments.len();
        } else {
            t.leaked_segments += still.len();
            t.failed += 1;
            println!(
                "job {}: segments not swept by the next job's start: {still:?}",
                p.job
            );
        }
    }
    let mut ms = t.end_ms.clone();
    ms.sort_by(|x, y| x.total_cmp(y));
    let pct = |q: f64| {
        ms.get(((ms.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    println!(
        "campaign: {} jobs, {} failed, {} hangs, {} leaked processes, {} leaked segments ({} left by early launcher kills and swept by the next start), first cause {}/{}, end after fault: median {:.1} ms, p99 {:.1} ms, max {:.1} ms; {:.0} s",
        t.jobs,
        t.failed,
        t.hangs,
        t.leaked_processes,
        t.leaked_segments,
        t.swept_segments,
        t.first_cause_ok,
        t.first_cause_expected,
        pct(0.5),
        pct(0.99),
        pct(1.0),
        started.elapsed().as_secs_f64()
    );
    std::process::exit(i32::from(t.failed > 0));
}
