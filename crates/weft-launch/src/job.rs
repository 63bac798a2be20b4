//! One single-host job from start to cleanup: the event loop that forwards output, watches
//! ranks, the bootstrap store's events, the timeout and the launcher's signals, and the single
//! path that ends every job (TERM, grace, KILL of every rank's process group, reap, drain,
//! remove segments). Multi-host jobs go to [`crate::hosts`].
//!
//! Depends on weft-core, weft-boot (the store) and libc; not on the runtime.

use crate::output::{RankLines, Sink, StreamKind};
use crate::place::place_on_this_host;
use crate::ranks::{Chunk, RankSet};
use crate::shm::remove_job_segments;
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
    if let Some(hosts) = &spec.hosts {
        return crate::hosts::run_on_hosts(spec, hosts, job_id, started);
    }
    let mut sink = Sink::new(spec.output);

    let path = spec
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| OsString::from(v))
        .or_else(|| std::env::var_os("PATH"));
    let program = match resolve_program(&spec.program, path.as_deref()) {
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
    let cmd = RankCommand {
        program,
        arg0: spec.program.clone().into_os_string(),
        args: spec.args.clone(),
        env: spec.env.clone(),
        open_files_soft_limit,
        stdin: spec.stdin,
    };
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
    let ending = match job.spawn_all(spec.nranks, &cmd) {
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

/// Prints a store event; an abort (when `may_end`) ends the job.
pub(crate) fn store_event(ev: ServerEvent, may_end: bool, sink: &mut Sink) -> Option<Ending> {
    match ev {
        ServerEvent::Abort { code, .. } if may_end => {
            let line = format!("{ev}; ending job");
            sink.launcher_line(&line);
            Some(Ending {
                exit_code: abort_exit_code(code),
                line: Some(line),
            })
        }
        // Aborts by ranks reacting to the job's end change nothing.
        ServerEvent::Abort { .. } => None,
        other => {
            sink.launcher_line(&other.to_string());
            None
        }
    }
}

impl Job {
    /// Starts every rank; on the first failure returns the ending (ranks already started are
    /// then ended like any others).
    fn spawn_all(&mut self, nranks: u32, cmd: &RankCommand) -> Option<Ending> {
        for place in place_on_this_host(nranks) {
            let vars = vec![
                ("WEFT_RANK".to_owned(), place.rank.to_string()),
                ("WEFT_SIZE".to_owned(), nranks.to_string()),
                ("WEFT_LOCAL_RANK".to_owned(), place.local_rank.to_string()),
                ("WEFT_LOCAL_SIZE".to_owned(), place.local_size.to_string()),
                ("WEFT_BOOT_ADDR".to_owned(), self.boot_addr.clone()),
                ("WEFT_JOB_ID".to_owned(), self.job_id.clone()),
                ("WEFT_JOB_SECRET".to_owned(), self.secret_hex.clone()),
            ];
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

    /// The main loop: returns as soon as something ends the job (after printing its line).
    fn watch_until_end(&mut self, timeout: Option<(Instant, Duration)>) -> Ending {
        loop {
            self.set
                .pump(TICK, &mut forward(&mut self.lines, &mut self.sink));
            while let Ok(ev) = self.events.try_recv() {
                if let Some(e) = store_event(ev, true, &mut self.sink) {
                    return e;
                }
            }
            let running = self.set.running();
            if let Some(e) = signal_ending(&self.watch, running, &mut self.sink) {
                return e;
            }
            if let Some(e) = timeout_ending(timeout, running, &mut self.sink) {
                return e;
            }
            let newly = self.set.check();
            if let Some(&i) = newly
                .iter()
                .find(|&&i| !self.set.ranks[i].exit.is_some_and(RankExit::is_success))
            {
                let r = &self.set.ranks[i];
                let exit = r.exit.expect("newly exited ranks have a status");
                let line = failure_line(r.rank, r.pid, exit);
                self.sink.launcher_line(&line);
                return Ending {
                    exit_code: exit.exit_code(),
                    line: Some(line),
                };
            }
            if self.set.running() == 0 {
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
            store_event(ev, false, &mut self.sink);
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
