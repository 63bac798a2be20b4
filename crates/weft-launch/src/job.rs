//! One single-host job from start to cleanup: the event loop that forwards output, watches
//! ranks, the bootstrap store's events, the timeout and the launcher's signals, and the single
//! path that ends every job (TERM, grace, KILL of every rank's process group, reap, drain,
//! remove segments). Multi-host jobs go to [`crate::hosts`].
//!
//! Depends on weft-core, weft-boot (the store) and libc; not on the runtime.

use crate::cause::FirstCause;
use crate::output::{RankLines, Sink, StreamKind};
use crate::place::place_on_this_host;
use crate::ranks::{Chunk, RankSet};
use crate::shm::{remove_job_segments, sweep_stale_segments, SWEEP_MIN_AGE};
use crate::signals::SignalWatch;
use crate::spawn::{raise_open_files_limit, resolve_program, spawn_local_rank, RankCommand};
use crate::status::{failure_line, signal_name, RankExit};
use crate::stdin::forward_to_pipes;
use crate::{JobOutcome, JobSpec};
use std::ffi::OsString;
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_boot::auth::{encode_hex, new_secret, random_bytes};
use weft_boot::{ServerEvent, TcpStoreServer};
use weft_core::{Error, ErrorKind, Result};

/// How often the loop looks at ranks, signals and the clock when no output arrives.
pub(crate) const TICK: Duration = Duration::from_millis(10);
/// Random bytes in a job id (printed as twice as many hex digits).
const JOB_ID_BYTES: usize = 6;

/// Runs `spec` to the end and reports how it ended. Errors are the launcher's own failures
/// (bad spec, no socket); a program that cannot be started is an outcome with code 126/127.
pub fn run_job(spec: &JobSpec) -> Result<JobOutcome> {
    let started = Instant::now();
    if spec.nranks == 0 {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "nranks: must be at least 1 (got 0)",
        ));
    }
    if spec.timeout == Some(Duration::ZERO) {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "timeout: must be longer than 0 s",
        ));
    }
    spec.stdin.check(spec.nranks)?;
    let mut id = [0u8; JOB_ID_BYTES];
    random_bytes(&mut id)?;
    let job_id = encode_hex(&id);
    let app_ranks: u32 = spec.apps.iter().map(|a| a.nranks).sum();
    if spec.apps.iter().any(|a| a.nranks == 0) || app_ranks >= spec.nranks {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "apps: {app_ranks} ranks for the programs after the first leave none of {} for \
                 the first (each program needs at least 1)",
                spec.nranks
            ),
        ));
    }
    if let Some(hosts) = &spec.hosts {
        if !spec.apps.is_empty() || spec.wdir.is_some() {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "several programs (':') and a working directory run on this host only, not \
                 with hosts",
            ));
        }
        return crate::hosts::run_on_hosts(spec, hosts, job_id, started);
    }
    let mut sink = Sink::new(spec.output);
    // What earlier jobs killed with SIGKILL could not remove goes before this one starts.
    sweep_stale_segments(false, SWEEP_MIN_AGE);

    let path = spec
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| OsString::from(v))
        .or_else(crate::spawn::search_path);
    let programs = std::iter::once(&spec.program)
        .chain(spec.apps.iter().map(|a| &a.program))
        .map(|p| resolve_program(p, path.as_deref()))
        // A relative path names a program here, also for ranks started in another folder.
        .map(|r| r.map(|p| std::path::absolute(&p).unwrap_or(p)))
        .collect::<std::result::Result<Vec<_>, _>>();
    let programs = match programs {
        Ok(p) => p,
        Err(nr) => {
            sink.launcher_line(&nr.message);
            let (stdout, stderr) = sink.into_captured();
            return Ok(JobOutcome {
                exit_code: nr.exit_code,
                job_id,
                failure: Some(nr.message),
                stdout,
                stderr,
                elapsed: started.elapsed(),
            });
        }
    };

    let secret = new_secret()?;
    let (tx, events) = channel();
    let server = TcpStoreServer::bind_with_events(
        "127.0.0.1:0",
        &secret,
        Arc::new(move |ev| {
            // The job may already be over and the receiver gone; nothing to tell then.
            let _ = tx.send(ev);
        }),
    )?;
    let open_files_soft_limit = raise_open_files_limit(spec.nranks)?;
    let watch = SignalWatch::start();
    let firsts = std::iter::once((&spec.program, &spec.args, &spec.wdir))
        .chain(spec.apps.iter().map(|a| (&a.program, &a.args, &a.wdir)));
    let cmds: Vec<RankCommand> = firsts
        .zip(programs)
        .map(|((arg0, args, wdir), program)| RankCommand {
            program,
            arg0: arg0.clone().into_os_string(),
            args: args.clone(),
            env: spec.env.clone(),
            open_files_soft_limit,
            stdin: spec.stdin,
            wdir: wdir.clone(),
        })
        .collect();
    let mut job = Job {
        set: RankSet::default(),
        lines: RankLines::with_files(spec.nranks, spec.tag_output, spec.output_files.as_ref())?,
        stdin_pipes: Vec::new(),
        sink,
        events,
        watch,
        job_id: job_id.clone(),
        boot_addr: server.local_addr().to_string(),
        secret_hex: encode_hex(&secret),
    };
    let ending = match job.spawn_all(spec, &cmds) {
        Some(e) => e,
        None => {
            forward_to_pipes(std::mem::take(&mut job.stdin_pipes));
            job.watch_until_end(spec.timeout.map(|t| (started, t)))
        }
    };
    job.end_all();
    drop(server);
    remove_job_segments(&job_id);
    let Job { sink, watch, .. } = job;
    drop(watch);
    let (stdout, stderr) = sink.into_captured();
    Ok(JobOutcome {
        exit_code: ending.exit_code,
        job_id,
        failure: ending.line,
        stdout,
        stderr,
        elapsed: started.elapsed(),
    })
}

/// Why and with what code the job ended, and the line printed about it.
pub(crate) struct Ending {
    pub(crate) exit_code: i32,
    pub(crate) line: Option<String>,
}

struct Job {
    set: RankSet,
    lines: RankLines,
    /// Write ends of the stdin pipes of the ranks that read the launcher's stdin, until the
    /// forwarding thread takes them.
    stdin_pipes: Vec<std::fs::File>,
    sink: Sink,
    events: Receiver<ServerEvent>,
    watch: SignalWatch,
    job_id: String,
    boot_addr: String,
    secret_hex: String,
}

pub(crate) fn ranks_word(n: usize) -> &'static str {
    if n == 1 {
        "rank"
    } else {
        "ranks"
    }
}

/// Hands a chunk of rank output to the line buffers.
pub(crate) fn forward<'a>(
    lines: &'a mut RankLines,
    sink: &'a mut Sink,
) -> impl FnMut(u32, StreamKind, Chunk<'_>) + 'a {
    move |rank, kind, chunk| match chunk {
        Chunk::Data(d) => lines.push(rank, kind, d, sink),
        Chunk::End => lines.finish(rank, kind, sink),
    }
}

/// The line and code for a signal the launcher received, if one came.
pub(crate) fn signal_ending(
    watch: &SignalWatch,
    running: usize,
    sink: &mut Sink,
) -> Option<Ending> {
    let sig = watch.pending()?;
    let line = format!(
        "weft: received {}; killing {} {}",
        signal_name(sig),
        running,
        ranks_word(running)
    );
    sink.launcher_line(&line);
    Some(Ending {
        exit_code: 128 + sig,
        line: Some(line),
    })
}

/// The line and code when the job ran past its time limit.
pub(crate) fn timeout_ending(
    timeout: Option<(Instant, Duration)>,
    running: usize,
    sink: &mut Sink,
) -> Option<Ending> {
    let (start, limit) = timeout?;
    if start.elapsed() < limit {
        return None;
    }
    let line = format!(
        "weft: job timed out after {} s; killing {} {}",
        limit.as_secs_f64(),
        running,
        ranks_word(running)
    );
    sink.launcher_line(&line);
    Some(Ending {
        exit_code: 124,
        line: Some(line),
    })
}

/// Prints a store event; an abort (when `may_end`) is held in `cause` (see
/// [`crate::cause`]): it ends the job once its grace is over unless the death that caused
/// it shows up first.
pub(crate) fn store_event(ev: ServerEvent, may_end: bool, sink: &mut Sink, cause: &mut FirstCause) {
    match ev {
        ServerEvent::Abort { code, rank, .. } if may_end => {
            let line = format!("{ev}; ending job");
            cause.abort(rank, abort_exit_code(code), line, Instant::now());
        }
        // Aborts by ranks reacting to the job's end change nothing.
        ServerEvent::Abort { .. } => {}
        other => sink.launcher_line(&other.to_string()),
    }
}

/// The ending of a held abort whose time has come (printing its line).
pub(crate) fn abort_ending(
    cause: &FirstCause,
    no_rank_left: bool,
    sink: &mut Sink,
) -> Option<Ending> {
    let held = cause.due(Instant::now(), no_rank_left)?;
    sink.launcher_line(&held.line);
    Some(Ending {
        exit_code: held.exit_code,
        line: Some(held.line.clone()),
    })
}

impl Job {
    /// Starts every rank; on the first failure returns the ending (ranks already started are
    /// then ended like any others).
    fn spawn_all(&mut self, spec: &JobSpec, cmds: &[RankCommand]) -> Option<Ending> {
        // The first rank of each program after the first ([`JobSpec::apps`]).
        let first_app_rank = spec.nranks - spec.apps.iter().map(|a| a.nranks).sum::<u32>();
        let nranks = spec.nranks;
        for place in place_on_this_host(nranks) {
            let mut vars = vec![
                ("WEFT_RANK".to_owned(), place.rank.to_string()),
                ("WEFT_SIZE".to_owned(), nranks.to_string()),
                ("WEFT_LOCAL_RANK".to_owned(), place.local_rank.to_string()),
                ("WEFT_LOCAL_SIZE".to_owned(), place.local_size.to_string()),
                ("WEFT_BOOT_ADDR".to_owned(), self.boot_addr.clone()),
                ("WEFT_JOB_ID".to_owned(), self.job_id.clone()),
                ("WEFT_JOB_SECRET".to_owned(), self.secret_hex.clone()),
            ];
            // Where MPI_Comm_spawn finds the launcher for a child job.
            let mut app = 0;
            if !spec.apps.is_empty() {
                let mut start = first_app_rank;
                while place.rank >= start {
                    start += spec.apps[app].nranks;
                    app += 1;
                }
                vars.push(("WEFT_APPNUM".to_owned(), app.to_string()));
            }
            let cmd = &cmds[app];
            if let Some(exe) = &spec.launcher_program {
                vars.push((
                    "WEFT_RUN_PROGRAM".to_owned(),
                    exe.to_string_lossy().into_owned(),
                ));
            }
            vars.extend(spec.vars_of(place.rank).iter().cloned());
            match spawn_local_rank(cmd, &place, &vars) {
                Ok(mut p) => {
                    if let Some(fd) = p.stdin.take() {
                        self.stdin_pipes.push(std::fs::File::from(fd));
                    }
                    self.set.add(p)
                }
                Err(e) => {
                    let line = format!(
                        "weft: cannot start rank {}: {}; ending job",
                        place.rank,
                        e.message()
                    );
                    self.sink.launcher_line(&line);
                    return Some(Ending {
                        exit_code: 126,
                        line: Some(line),
                    });
                }
            }
        }
        None
    }

    fn drain_store_events(&mut self, cause: &mut FirstCause) {
        while let Ok(ev) = self.events.try_recv() {
            store_event(ev, true, &mut self.sink, cause);
        }
    }

    /// The main loop: returns as soon as something ends the job (after printing its line).
    /// The first cause wins ([`crate::cause`]): a rank's death, not the aborts of the ranks
    /// that noticed it.
    fn watch_until_end(&mut self, timeout: Option<(Instant, Duration)>) -> Ending {
        let mut cause = FirstCause::default();
        loop {
            // While an abort is held, look again soon rather than after a full tick.
            let wait = if cause.holding() { TICK / 5 } else { TICK };
            self.set
                .pump(wait, &mut forward(&mut self.lines, &mut self.sink));
            self.drain_store_events(&mut cause);
            let running = self.set.running();
            if let Some(e) = signal_ending(&self.watch, running, &mut self.sink) {
                return e;
            }
            if let Some(e) = timeout_ending(timeout, running, &mut self.sink) {
                return e;
            }
            let newly = self.set.check();
            if !newly.is_empty() {
                // An abort is reported before its rank can exit: whatever abort caused one of
                // these exits is in the channel now.
                self.drain_store_events(&mut cause);
            }
            let failed: Vec<(u32, RankExit)> = newly
                .iter()
                .map(|&i| {
                    let r = &self.set.ranks[i];
                    (r.rank, r.exit.expect("newly exited ranks have a status"))
                })
                .collect();
            if let Some(k) = cause.pick(&failed) {
                let r = &self.set.ranks[newly[k]];
                let exit = failed[k].1;
                let line = failure_line(r.rank, r.pid, exit);
                self.sink.launcher_line(&line);
                return Ending {
                    exit_code: exit.exit_code(),
                    line: Some(line),
                };
            }
            let no_rank_left = self.set.running() == 0;
            if let Some(e) = abort_ending(&cause, no_rank_left, &mut self.sink) {
                return e;
            }
            if no_rank_left {
                return Ending {
                    exit_code: 0,
                    line: None,
                };
            }
        }
    }

    /// Ends every rank and whatever it forked, reaps them, and drains their output.
    fn end_all(&mut self) {
        self.set
            .end_all(&mut forward(&mut self.lines, &mut self.sink));
        while let Ok(ev) = self.events.try_recv() {
            store_event(ev, false, &mut self.sink, &mut FirstCause::default());
        }
        self.lines.finish_all(&mut self.sink);
    }
}

/// A process exit code carries 8 bits: an abort code outside 0..=255 keeps its low byte
/// (-1 becomes 255, as a shell shows it), and a non-zero code never turns into success.
pub(crate) fn abort_exit_code(code: i32) -> i32 {
    match code & 0xff {
        0 if code != 0 => 1,
        c => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abort_codes_fit_an_exit_status() {
        assert_eq!(abort_exit_code(0), 0);
        assert_eq!(abort_exit_code(5), 5);
        assert_eq!(abort_exit_code(255), 255);
        assert_eq!(abort_exit_code(-1), 255);
        assert_eq!(abort_exit_code(256), 1);
        assert_eq!(abort_exit_code(300), 44);
    }
}
