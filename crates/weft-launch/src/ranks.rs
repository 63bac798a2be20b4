//! The rank processes one process started on its own host — the launcher for a single-host
//! job, an agent for its host's share of a multi-host job — and the one way they are watched,
//! read and ended.
//!
//! Ranks are watched with `waitid(WNOWAIT)`, which sees an exit without reaping it: a dead
//! rank stays a zombie until the end, so its pid — which is also its process group id —
//! cannot be reused and killing the group later can only hit this job's processes.
//! Knows nothing of jobs, stores or where output goes (callers pass a callback).
//! Depends on libc and the crate's spawn/output/status types.

use crate::output::StreamKind;
use crate::spawn::{pipe_file, RankProcess};
use crate::status::RankExit;
use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Time ranks get between SIGTERM and SIGKILL to clean up after themselves.
pub(crate) const TERM_GRACE: Duration = Duration::from_millis(200);
/// Time given, once every rank is reaped, for output still in the pipes to arrive.
pub(crate) const DRAIN_GRACE: Duration = Duration::from_millis(500);
/// Bytes read from one stream per loop turn, so a chatty rank cannot starve the checks.
const READ_BUDGET_BYTES: usize = 1 << 20;

/// One started rank.
pub(crate) struct RankState {
    pub(crate) rank: u32,
    pub(crate) pid: u32,
    pub(crate) exit: Option<RankExit>,
    reaped: bool,
}

/// What a read of a rank's stream produced.
pub(crate) enum Chunk<'a> {
    /// Bytes.
    Data(&'a [u8]),
    /// The stream ended.
    End,
}

struct Pipe {
    file: Option<File>,
    rank: u32,
    kind: StreamKind,
}

/// The ranks started here and their output pipes.
#[derive(Default)]
pub(crate) struct RankSet {
    pub(crate) ranks: Vec<RankState>,
    pipes: Vec<Pipe>,
}

impl RankSet {
    /// Takes over a started rank.
    pub(crate) fn add(&mut self, p: RankProcess) {
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
            self.pipes.push(Pipe {
                file: Some(pipe_file(fd)),
                rank: p.rank,
                kind,
            });
        }
    }

    /// Ranks that have not exited.
    pub(crate) fn running(&self) -> usize {
        self.ranks.iter().filter(|r| r.exit.is_none()).count()
    }

    /// Records ranks that exited since the last look (without reaping them); returns their
    /// indices in rank order.
    pub(crate) fn check(&mut self) -> Vec<usize> {
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

    /// Ends every rank and whatever it forked (TERM, grace, KILL of every group), reaps
    /// them and drains their output into `out`.
    pub(crate) fn end_all(&mut self, out: &mut dyn FnMut(u32, StreamKind, Chunk<'_>)) {
        if self.running() > 0 {
            self.signal_groups(libc::SIGTERM, true);
            let grace_end = Instant::now() + TERM_GRACE;
            while self.running() > 0 && Instant::now() < grace_end {
                self.pump(Duration::from_millis(5), out);
                self.check();
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
        while self.pipes.iter().any(|s| s.file.is_some()) && Instant::now() < drain_end {
            self.pump(Duration::from_millis(10), out);
        }
        for p in &mut self.pipes {
            // A process that left the rank's group may still hold the pipe; stop waiting.
            if p.file.take().is_some() {
                out(p.rank, p.kind, Chunk::End);
            }
        }
    }

    /// Waits up to `wait` for output and hands what arrived to `out`.
    pub(crate) fn pump(&mut self, wait: Duration, out: &mut dyn FnMut(u32, StreamKind, Chunk<'_>)) {
        let mut fds: Vec<libc::pollfd> = Vec::new();
        let mut which: Vec<usize> = Vec::new();
        for (i, s) in self.pipes.iter().enumerate() {
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
            let pipe = &mut self.pipes[i];
            let mut budget = READ_BUDGET_BYTES;
            while budget > 0 {
                let Some(f) = pipe.file.as_mut() else { break };
                match f.read(&mut buf) {
                    Ok(0) => {
                        pipe.file = None;
                        out(pipe.rank, pipe.kind, Chunk::End);
                    }
                    Ok(n) => {
                        out(pipe.rank, pipe.kind, Chunk::Data(&buf[..n]));
                        budget = budget.saturating_sub(n);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        pipe.file = None;
                        out(pipe.rank, pipe.kind, Chunk::End);
                    }
                }
            }
        }
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
pub(crate) fn peek_exit(pid: u32) -> Option<RankExit> {
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
pub(crate) fn reap(pid: u32) -> Option<RankExit> {
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
