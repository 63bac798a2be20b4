//! Start-up pieces that depend on how the rank was launched: the job id under a foreign
//! launcher, the node map, node-local waits through shared memory, and the liveness watch.
//!
//! Under `weft run` the launcher kills the job when a rank dies and removes the job's
//! segments. Under a foreign launcher (srun, mpiexec.hydra, Open MPI's mpirun) nobody does
//! that for weft, so the runtime does: segments are unlinked as soon as every local rank has
//! mapped them, and [`Watch`] makes each rank check the next local rank's process every
//! `WEFT_LIVENESS_MS`; a rank found gone before it finalized ends the job through the
//! launcher (PMIx/PMI abort) with a line naming it. Depends on weft-boot and the transport's
//! shared regions.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use weft_boot::{Boot, JobInfo};
use weft_core::{Error, ErrorKind, Result};
use weft_transport::shm::heap::Region;

/// The job id of a rank under a foreign launcher: a hash of the launcher's job name (PMIx
/// namespace, PMI job id), the same on every rank, short and safe in segment names.
pub(crate) fn job_id_of(job: &JobInfo) -> String {
    let h = job
        .launcher_job
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
        });
    format!("{h:016x}")
}

/// The job id under a foreign launcher: [`job_id_of`], after `WEFT_JOB_ID` when the user
/// set one (a tag that then names the job's segments, e.g. for `weft clean` or a test).
pub(crate) fn foreign_job_id(job: &JobInfo, tag: Option<&str>) -> Result<String> {
    let id = job_id_of(job);
    match tag.map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(id),
        Some(t)
            if t.len() <= 32
                && t.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')) =>
        {
            Ok(format!("{t}-{id}"))
        }
        Some(t) => Err(Error::new(
            ErrorKind::Config,
            format!("WEFT_JOB_ID={t:?}: at most 32 letters, digits, '_', '.' or '-'"),
        )),
    }
}

/// Node indices from the node names of every rank, numbered in order of first appearance.
pub(crate) fn node_indices(names: &[Vec<u8>]) -> Vec<u32> {
    let mut seen: Vec<&[u8]> = Vec::new();
    names
        .iter()
        .map(|n| match seen.iter().position(|s| *s == n.as_slice()) {
            Some(i) => i as u32,
            None => {
                seen.push(n);
                (seen.len() - 1) as u32
            }
        })
        .collect()
}

/// Waits until `count()` reaches `n` (local ranks attached to a node segment), yielding and
/// then sleeping between looks; `what` names the segment in the timeout error.
pub(crate) fn wait_node(
    rank: u32,
    what: &str,
    count: impl Fn() -> u32,
    n: u32,
    timeout: Duration,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    let mut looks = 0u32;
    loop {
        let c = count();
        if c >= n {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Error::new(
                ErrorKind::Timeout,
                format!(
                    "rank {rank}: {c} of the {n} ranks of this node attached to {what} within {} s (WEFT_BOOT_TIMEOUT_S)",
                    timeout.as_secs()
                ),
            ));
        }
        looks += 1;
        if looks < 64 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50 * (looks as u64 / 64).min(20)));
        }
    }
}

/// Removes a segment's name when dropped: the creator's guard on every way out of start-up.
pub(crate) struct UnlinkGuard(pub(crate) Option<String>);

impl Drop for UnlinkGuard {
    fn drop(&mut self) {
        if let Some(name) = self.0.take() {
            let _ = weft_transport::shm::segment::Segment::unlink(&name);
        }
    }
}

/// Word of a rank's slot in the liveness region: 0 while it runs, [`FINISHED`] once it has
/// finalized and may exit.
const STATE_WORD: usize = 0;
const FINISHED: u64 = 1;
/// Word where a rank leaving through `exit` leaves its exit status (`EXITED` | status), so
/// the rank that finds it gone can end the job with that code.
const EXIT_WORD: usize = 1;
const EXITED: u64 = 1 << 32;

/// The liveness region of this process, for the exit hook.
static LIVE: std::sync::Mutex<Option<Arc<Region>>> = std::sync::Mutex::new(None);

#[cfg(target_env = "gnu")]
extern "C" {
    /// glibc's exit hook that receives the exit status.
    fn on_exit(
        function: extern "C" fn(libc::c_int, *mut libc::c_void),
        arg: *mut libc::c_void,
    ) -> libc::c_int;
}

/// Publishes the status a rank exits with in its liveness slot (called by `exit`).
extern "C" fn publish_exit_status(status: libc::c_int, _arg: *mut libc::c_void) {
    if let Ok(live) = LIVE.try_lock() {
        if let Some(r) = live.as_ref() {
            r.publish(EXIT_WORD, EXITED | (status as u32 & 0xff) as u64);
        }
    }
}

/// Registers [`publish_exit_status`] once per process (glibc only; elsewhere the code of a
/// rank gone is not known and the job ends with 1).
fn hook_exit(region: &Arc<Region>) {
    let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let first = live.is_none();
    *live = Some(Arc::clone(region));
    #[cfg(target_env = "gnu")]
    if first {
        // SAFETY: registers a plain function with no argument; glibc calls it at exit.
        unsafe { on_exit(publish_exit_status, std::ptr::null_mut()) };
    }
    #[cfg(not(target_env = "gnu"))]
    let _ = first;
}

/// The liveness watch of one rank under a foreign launcher (see the module docs).
pub(crate) struct Watch {
    region: Arc<Region>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// What the watch needs to name a dead rank and end the job.
pub(crate) struct WatchTarget {
    pub(crate) boot: Arc<dyn Boot>,
    /// World rank of each local rank.
    pub(crate) local_world: Vec<u32>,
    pub(crate) node_id: String,
    pub(crate) period: Duration,
    /// How long a death is left to the launcher (which ends the job itself when a rank
    /// exits with an error) before the watch ends it.
    pub(crate) grace: Duration,
}

impl Watch {
    /// Starts watching the next local rank of `region` (a ring, so every local rank is
    /// watched by one other).
    pub(crate) fn start(region: Region, target: WatchTarget) -> Result<Watch> {
        let region = Arc::new(region);
        hook_exit(&region);
        let stop = Arc::new(AtomicBool::new(false));
        let n = region.local_size();
        let me = region.me();
        let thread = if n > 1 {
            let (r, s) = (Arc::clone(&region), Arc::clone(&stop));
            Some(
                std::thread::Builder::new()
                    .name("weft-liveness".into())
                    .stack_size(128 << 10)
                    .spawn(move || watch_loop(&r, &s, (me + 1) % n, target))
                    .map_err(|e| Error::io("starting the liveness watch", e))?,
            )
        } else {
            None
        };
        Ok(Watch {
            region,
            stop,
            thread,
        })
    }

    /// Marks this rank finished (its peers no longer mind its exit) and stops watching.
    pub(crate) fn finish(&mut self) {
        self.region.publish(STATE_WORD, FINISHED);
        self.stop_watching();
    }

    fn stop_watching(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

impl Drop for Watch {
    /// A rank dropped without finalize stops watching but does not say it finished: should
    /// its process exit, its peers end the job.
    fn drop(&mut self) {
        self.stop_watching();
    }
}

fn watch_loop(region: &Region, stop: &AtomicBool, peer: u32, t: WatchTarget) {
    while !stop.load(Ordering::Acquire) {
        std::thread::park_timeout(t.period);
        if stop.load(Ordering::Acquire) {
            return;
        }
        let pid = region.pid(peer);
        // Alive first, then the state: a peer sets its state before it exits, so a dead
        // peer whose state still says running died before finalizing.
        if pid == 0 || region.peer_alive(peer) || region.published(peer, STATE_WORD) == FINISHED {
            continue;
        }
        std::thread::sleep(t.grace);
        if stop.load(Ordering::Acquire) {
            return;
        }
        let rank = t.local_world[peer as usize];
        let exit = region.published(peer, EXIT_WORD);
        let (code, how) = match (exit & EXITED != 0, (exit & 0xff) as i32) {
            (true, 0) => (1, "exited with code 0".to_owned()),
            (true, c) => (c, format!("exited with code {c}")),
            (false, _) => (1, "ended without exit (killed by a signal?)".to_owned()),
        };
        let line = format!(
            "rank {rank} (pid {pid} on {}) {how} before finalize; ending the job",
            t.node_id
        );
        weft_core::diag!("weft: {line}");
        stderr_taken(STDERR_TAKEN_LIMIT);
        let _ = t.boot.abort(code, &line);
        // The launcher kills the job; should it not, this rank ends itself.
        std::thread::sleep(Duration::from_secs(5));
        // SAFETY: _exit ends the process at once, without running other threads' code.
        unsafe { libc::_exit(code) };
    }
}

/// How long an aborting rank waits for its launcher to read its last line.
pub(crate) const STDERR_TAKEN_LIMIT: Duration = Duration::from_secs(2);

/// Returns once the reader of this process's stderr has taken everything written to it
/// (stderr a pipe or socket whose queue is empty), or after `limit`. An aborting rank calls
/// it between its line and the abort: launchers such as Hydra kill the job as soon as they
/// hear of the abort, and a line still queued in the pipe to their proxy is then lost. On
/// a terminal or a file there is no queue and it returns at once (FIONREAD on a terminal
/// would count typed-ahead input, so it is asked only of a pipe).
pub(crate) fn stderr_taken(limit: Duration) {
    fd_taken(2, limit)
}

/// [`stderr_taken`] for file descriptor `fd`.
fn fd_taken(fd: libc::c_int, limit: Duration) {
    let Some(kind) = fd_kind(fd) else {
        return;
    };
    let start = Instant::now();
    loop {
        let mut queued: libc::c_int = 0;
        let out = &mut queued as *mut libc::c_int;
        // SAFETY: FIONREAD and TIOCOUTQ write one int through the pointer, which points at
        // `queued`; `fd` is not closed or reused by this call.
        let rc = unsafe {
            match kind {
                StderrKind::Pipe => libc::ioctl(fd, libc::FIONREAD, out),
                StderrKind::Socket => libc::ioctl(fd, libc::TIOCOUTQ, out),
            }
        };
        if rc != 0 || queued <= 0 || start.elapsed() >= limit {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// What stderr is, where a reader may not yet have taken what was written: a pipe (FIONREAD
/// tells the pipe's unread bytes) or a socket (TIOCOUTQ: for a Unix socket the bytes its
/// peer has not read, for TCP the unacknowledged ones).
#[derive(Clone, Copy)]
enum StderrKind {
    Pipe,
    Socket,
}

/// The kind of `fd`; None for a terminal, a file or anything else without a queue.
fn fd_kind(fd: libc::c_int) -> Option<StderrKind> {
    // SAFETY: an all-zero `stat` is a valid value of the plain C struct fstat fills.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes one struct stat through the pointer, which points at `st`.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return None;
    }
    match st.st_mode & libc::S_IFMT {
        libc::S_IFIFO => Some(StderrKind::Pipe),
        libc::S_IFSOCK => Some(StderrKind::Socket),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;

    #[test]
    fn an_aborting_rank_waits_only_while_its_pipe_holds_unread_bytes() {
        let (mut reader, mut writer) = std::io::pipe().unwrap();
        writer.write_all(b"rank 3 aborting\n").unwrap();
        let limit = Duration::from_millis(30);
        let start = Instant::now();
        fd_taken(writer.as_raw_fd(), limit);
        assert!(start.elapsed() >= limit, "returned with the line unread");
        let mut line = [0u8; 16];
        reader.read_exact(&mut line).unwrap();
        // Read: returns at once (were it to wait for the limit, an hour, the test hangs).
        fd_taken(writer.as_raw_fd(), Duration::from_secs(3600));
        let (unix_a, unix_b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert!(matches!(
            fd_kind(unix_a.as_raw_fd()),
            Some(StderrKind::Socket)
        ));
        (&unix_a).write_all(b"unread").unwrap();
        let start = Instant::now();
        fd_taken(unix_a.as_raw_fd(), limit);
        assert!(
            start.elapsed() >= limit,
            "returned with the socket's bytes unread"
        );
        let mut got = [0u8; 6];
        (&unix_b).read_exact(&mut got).unwrap();
        fd_taken(unix_a.as_raw_fd(), Duration::from_secs(3600));
    }

    #[test]
    fn a_file_or_terminal_has_no_queue_to_wait_for() {
        let file = std::fs::File::open("/proc/self/status").unwrap();
        assert!(fd_kind(file.as_raw_fd()).is_none());
        fd_taken(file.as_raw_fd(), Duration::from_secs(3600));
        // A character device, as a terminal is (where FIONREAD counts typed-ahead input).
        let device = std::fs::File::open("/dev/null").unwrap();
        assert!(fd_kind(device.as_raw_fd()).is_none());
    }

    #[test]
    fn node_indices_follow_first_appearance() {
        let n =
            |v: &[&str]| node_indices(&v.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>());
        assert_eq!(n(&["b", "a", "b", "c", "a"]), [0, 1, 0, 2, 1]);
        assert_eq!(n(&["x"]), [0]);
    }

    #[test]
    fn job_ids_are_stable_hex_and_differ_per_job() {
        let j = |s: &str| {
            job_id_of(&JobInfo {
                rank: 0,
                size: 1,
                launcher_job: s.into(),
                node_of: None,
            })
        };
        assert_eq!(j("slurm.pmix.3.0"), j("slurm.pmix.3.0"));
        assert_ne!(j("slurm.pmix.3.0"), j("slurm.pmix.3.1"));
        assert_eq!(j("x").len(), 16);
        assert!(j("kvs_123_0").bytes().all(|b| b.is_ascii_hexdigit()));
        let job = JobInfo {
            rank: 0,
            size: 1,
            launcher_job: "x".into(),
            node_of: None,
        };
        assert_eq!(foreign_job_id(&job, None).unwrap(), j("x"));
        assert_eq!(
            foreign_job_id(&job, Some("t42")).unwrap(),
            format!("t42-{}", j("x"))
        );
        assert!(foreign_job_id(&job, Some("a/b")).is_err());
    }
}
