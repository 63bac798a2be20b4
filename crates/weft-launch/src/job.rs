//! One job from start to cleanup: the event loop that forwards output, watches ranks, the
//! bootstrap store's events, the timeout and the launcher's signals, and the single path that
//! ends every job (TERM, grace, KILL of every rank's process group, reap, drain, remove
//! segments).
//!
//! Ranks are watched with `waitid(WNOWAIT)`, which sees an exit without reaping it: a dead
//! rank stays a zombie until the end, so its pid — which is also its process group id —
//! cannot be reused and killing the group later can only hit this job's processes.
//! Depends on weft-core, weft-boot (the store) and libc; not on the runtime.

use crate::output::{LineBuffer, Sink, StreamKind};
use crate::place::place_on_this_host;
use crate::shm::remove_job_segments;
use crate::signals::SignalWatch;
use crate::spawn::{
    pipe_file, raise_open_files_limit, resolve_program, spawn_local_rank, RankCommand,
};
use crate::status::{failure_line, signal_name, RankExit};
use crate::{JobOutcome, JobSpec};
use std::ffi::OsString;
use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_boot::auth::{encode_hex, new_secret, random_bytes};
use weft_boot::{ServerEvent, TcpStoreServer};
use weft_core::{Error, ErrorKind, Result};

/// How often the loop looks at ranks, signals and the clock when no output arrives.
const TICK: Duration = Duration::from_millis(10);
/// Time ranks get between SIGTERM and SIGKILL to clean up after themselves.
const TERM_GRACE: Duration = Duration::from_millis(200);
/// Time given, once every rank is reaped, for output still in the pipes to arrive.
const DRAIN_GRACE: Duration = Duration::from_millis(500);
/// Bytes read from one stream per loop turn, so a chatty rank cannot starve the checks.
const READ_BUDGET_BYTES: usize = 1 << 20;
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
    let mut id = [0u8; JOB_ID_BYTES];
    random_bytes(&mut id)?;
    let job_id = encode_hex(&id);
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
    };
    let mut job = Job {
        ranks: Vec::new(),
        streams: Vec::new(),
        sink,
        events,
        watch,
        tag: spec.tag_output,
        job_id: job_id.clone(),
        boot_addr: server.local_addr().to_string(),
        secret_hex: encode_hex(&secret),
    };
    let ending = match job.spawn_all(spec.nranks, &cmd) {
        Some(e) => e,
        None => job.watch_until_end(spec.timeout.map(|t| (started, t))),
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
struct Ending {
    exit_code: i32,
    line: Option<String>,
}

struct RankState {
    rank: u32,
    pid: u32,
    exit: Option<RankExit>,
    reaped: bool,
}

struct Stream {
    file: Option<File>,
    lines: LineBuffer,
}

struct Job {
    ranks: Vec<RankState>,
    streams: Vec<Stream>,
    sink: Sink,
    events: Receiver<ServerEvent>,
    watch: SignalWatch,
    tag: bool,
    job_id: String,
    boot_addr: String,
    secret_hex: String,
}

fn ranks_word(n: usize) -> &'static str {
    if n == 1 {
        "rank"
    } else {
        "ranks"
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
                Ok(p) => {
                    self.ranks.push(RankState {
                        rank: p.rank,
                        pid: p.pid,
                        exit: None,
                        reaped: false,
                    });
                    for (fd, kind) in [
                        (p.stdout, StreamKind::Stdout),
                        (p.stderr, StreamKind::Stderr),
                    ] {
                        self.streams.push(Stream {
                            file: Some(pipe_file(fd)),
                            lines: LineBuffer::new(p.rank, kind, self.tag),
                        });
                    }
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

    fn running(&self) -> usize {
        self.ranks.iter().filter(|r| r.exit.is_none()).count()
    }

    /// The main loop: returns as soon as something ends the job (after printing its line).
    fn watch_until_end(&mut self, timeout: Option<(Instant, Duration)>) -> Ending {
        loop {
            self.pump_output(TICK);
            if let Some(e) = self.handle_events(true) {
                return e;
            }
            if let Some(sig) = self.watch.pending() {
                let line = format!(
                    "weft: received {}; killing {} {}",
                    signal_name(sig),
                    self.running(),
                    ranks_word(self.running())
                );
                self.sink.launcher_line(&line);
                return Ending {
                    exit_code: 128 + sig,
                    line: Some(line),
                };
            }
            if let Some((start, limit)) = timeout {
                if start.elapsed() >= limit {
                    let line = format!(
                        "weft: job timed out after {} s; killing {} {}",
                        limit.as_secs_f64(),
                        self.running(),
                        ranks_word(self.running())
                    );
                    self.sink.launcher_line(&line);
                    return Ending {
                        exit_code: 124,
                        line: Some(line),
                    };
                }
            }
            let newly = self.check_ranks();
            if let Some(&i) = newly
                .iter()
                .find(|&&i| !self.ranks[i].exit.is_some_and(RankExit::is_success))
            {
                let r = &self.ranks[i];
                let exit = r.exit.expect("newly exited ranks have a status");
                let line = failure_line(r.rank, r.pid, exit);
                self.sink.launcher_line(&line);
                return Ending {
                    exit_code: exit.exit_code(),
                    line: Some(line),
                };
            }
            if self.running() == 0 {
                return Ending {
                    exit_code: 0,
                    line: None,
                };
            }
        }
    }

    /// Prints the store's log lines; an abort (when `may_end`) ends the job.
    fn handle_events(&mut self, may_end: bool) -> Option<Ending> {
        while let Ok(ev) = self.events.try_recv() {
            match ev {
                ServerEvent::Abort { code, .. } if may_end => {
                    let line = format!("{ev}; ending job");
                    self.sink.launcher_line(&line);
                    return Some(Ending {
                        exit_code: abort_exit_code(code),
                        line: Some(line),
                    });
                }
                // Aborts by ranks reacting to the job's end change nothing.
                ServerEvent::Abort { .. } => {}
                other => self.sink.launcher_line(&other.to_string()),
            }
        }
        None
    }

    /// Records ranks that exited since the last look (without reaping them); returns their
    /// indices in rank order.
    fn check_ranks(&mut self) -> Vec<usize> {
        let mut newly = Vec::new();
        for (i, r) in self.ranks.iter_mut().enumerate() {
            if r.exit.is_none() {
                if let Some(exit) = peek_exit(r.pid) {
                    r.exit = Some(exit);
                    newly.push(i);
                }
            }
        }
        newly
    }

    fn signal_groups(&self, sig: libc::c_int, only_running: bool) {
        for r in &self.ranks {
            if r.reaped || (only_running && r.exit.is_some()) {
                continue;
            }
            // SAFETY: kill() of this rank's own process group; the group id cannot have been
            // reused because the leader is not reaped yet.
            unsafe {
                libc::kill(-(r.pid as libc::pid_t), sig);
            }
        }
    }

    /// Ends every rank and whatever it forked, reaps them, and drains their output.
    fn end_all(&mut self) {
        if self.running() > 0 {
            self.signal_groups(libc::SIGTERM, true);
            let grace_end = Instant::now() + TERM_GRACE;
            while self.running() > 0 && Instant::now() < grace_end {
                self.pump_output(Duration::from_millis(5));
                self.check_ranks();
            }
        }
        // Every group, including those whose leader already exited: children it left
        // behind in its group die too.
        self.signal_groups(libc::SIGKILL, false);
        for r in &mut self.ranks {
            if !r.reaped {
                let exit = reap(r.pid);
                r.exit = r.exit.or(exit);
                r.reaped = true;
            }
        }
        let drain_end = Instant::now() + DRAIN_GRACE;
        while self.streams.iter().any(|s| s.file.is_some()) && Instant::now() < drain_end {
            self.pump_output(TICK);
        }
        self.handle_events(false);
        for s in &mut self.streams {
            // A process that left the rank's group may still hold the pipe; stop waiting.
            s.file = None;
            s.lines.finish(&mut self.sink);
        }
    }

    /// Waits up to `wait` for output and forwards what arrived.
    fn pump_output(&mut self, wait: Duration) {
        let mut fds: Vec<libc::pollfd> = Vec::new();
        let mut which: Vec<usize> = Vec::new();
        for (i, s) in self.streams.iter().enumerate() {
            if let Some(f) = &s.file {
                fds.push(libc::pollfd {
                    fd: f.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                });
                which.push(i);
            }
        }
        if fds.is_empty() {
            std::thread::sleep(wait);
            return;
        }
        let wait_ms = wait.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: poll over a vector of pollfd we own, its exact length.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, wait_ms) };
        if n <= 0 {
            return;
        }
        let mut buf = vec![0u8; 64 << 10];
        for (pfd, &i) in fds.iter().zip(&which) {
            if pfd.revents == 0 {
                continue;
            }
            let stream = &mut self.streams[i];
            let mut budget = READ_BUDGET_BYTES;
            while budget > 0 {
                let Some(f) = stream.file.as_mut() else { break };
                match f.read(&mut buf) {
                    Ok(0) => {
                        stream.file = None;
                        stream.lines.finish(&mut self.sink);
                    }
                    Ok(n) => {
                        stream.lines.push(&buf[..n], &mut self.sink);
                        budget = budget.saturating_sub(n);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        stream.file = None;
                        stream.lines.finish(&mut self.sink);
                    }
                }
            }
        }
    }
}

/// A process exit code carries 8 bits: an abort code outside 0..=255 keeps its low byte
/// (-1 becomes 255, as a shell shows it), and a non-zero code never turns into success.
fn abort_exit_code(code: i32) -> i32 {
    match code & 0xff {
        0 if code != 0 => 1,
        c => c,
    }
}

fn exit_from_code(code: libc::c_int, status: libc::c_int) -> Option<RankExit> {
    match code {
        libc::CLD_EXITED => Some(RankExit::Code(status)),
        libc::CLD_KILLED | libc::CLD_DUMPED => Some(RankExit::Signal(status)),
        _ => None,
    }
}

/// The exit of `pid` if it has exited, leaving it unreaped.
fn peek_exit(pid: u32) -> Option<RankExit> {
    // SAFETY: waitid on our own child with a zeroed siginfo it fills in.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        if r != 0 {
            // ECHILD: something else reaped it (SIGCHLD ignored by the embedding program);
            // it is gone, status unknown, and reported as a failure rather than a success.
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) {
                return Some(RankExit::Code(255));
            }
            return None;
        }
        if info.si_pid() == 0 {
            return None;
        }
        exit_from_code(info.si_code, info.si_status())
    }
}

/// Reaps `pid` (which has exited or been sent SIGKILL), returning how it ended.
fn reap(pid: u32) -> Option<RankExit> {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: waitpid on our own child.
        let r = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) };
        if r == pid as libc::pid_t {
            break;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return None;
        }
    }
    if libc::WIFEXITED(status) {
        Some(RankExit::Code(libc::WEXITSTATUS(status)))
    } else if libc::WIFSIGNALED(status) {
        Some(RankExit::Signal(libc::WTERMSIG(status)))
    } else {
        None
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
