//! The launcher's stdin, forwarded to the ranks that read it ([`StdinTarget`]): rank 0 by
//! default under `weft run` and `mpiexec` (as Open MPI and MPICH do), every rank, a chosen
//! rank, or none. Ranks run in their own process groups and so never read a terminal
//! themselves; the launcher reads its stdin on a thread and writes what it reads into a pipe
//! per reading rank (on its own host) or sends it to the rank's host agent. At the end of the
//! launcher's input the pipes are closed, so a rank reading stdin sees end of file; a rank
//! that exits without reading all of it only stops receiving. A rank that does not read
//! holds the input back rather than letting it pile up: a local rank's full pipe blocks
//! the reading thread, and towards other hosts a credit window of 1 MiB per rank (the
//! agents report what went into the pipes) stops the launcher reading while a rank is that
//! far behind.
//!
//! A launcher started in the background of a terminal does not read it (that would stop the
//! launcher): its ranks see end of file at once, as a shell's background job would.

use std::fs::File;
use std::io::{Read, Write};
use weft_core::{Error, ErrorKind, Result};

/// Which ranks read the launcher's stdin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum StdinTarget {
    /// None: every rank reads `/dev/null`.
    #[default]
    None,
    /// This rank alone.
    Rank(u32),
    /// Every rank gets a copy.
    All,
}

impl StdinTarget {
    /// Parses `none`, `all` or a rank number (`--stdin` of `weft run` and `mpiexec`).
    pub fn parse(text: &str) -> Result<StdinTarget> {
        match text.trim() {
            "none" => Ok(StdinTarget::None),
            "all" => Ok(StdinTarget::All),
            t => t.parse().map(StdinTarget::Rank).map_err(|_| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!("stdin: {text:?} is neither \"all\", \"none\" nor a rank number"),
                )
            }),
        }
    }

    /// Whether `rank` reads the launcher's stdin.
    pub fn includes(self, rank: u32) -> bool {
        match self {
            StdinTarget::None => false,
            StdinTarget::Rank(r) => r == rank,
            StdinTarget::All => true,
        }
    }

    /// Refuses a rank outside a job of `nranks` ranks.
    pub fn check(self, nranks: u32) -> Result<()> {
        match self {
            StdinTarget::Rank(r) if r >= nranks => Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("stdin: rank {r} is not in a job of {nranks} ranks"),
            )),
            _ => Ok(()),
        }
    }
}

/// Whether this process can read its stdin without being stopped by the terminal: stdin is
/// not a terminal, or this process's group is the terminal's foreground group.
pub fn stdin_readable() -> bool {
    // SAFETY: isatty, tcgetpgrp and getpgrp only look at descriptor 0 and this process.
    unsafe {
        if libc::isatty(0) == 0 {
            return true;
        }
        libc::tcgetpgrp(0) == libc::getpgrp()
    }
}

/// Bytes read from stdin at a time.
const CHUNK_BYTES: usize = 64 << 10;

/// Reads this process's stdin on a thread and hands each chunk to `deliver`, then `None` at
/// its end (or at once when stdin cannot be read, see [`stdin_readable`]); stops early when
/// `deliver` returns false (nobody listens any more).
pub(crate) fn read_stdin_chunks(mut deliver: impl FnMut(Option<Vec<u8>>) -> bool + Send + 'static) {
    let spawned = std::thread::Builder::new()
        .name("weft-stdin".into())
        .spawn(move || {
            if stdin_readable() {
                let mut input = std::io::stdin().lock();
                let mut buf = vec![0u8; CHUNK_BYTES];
                loop {
                    match input.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => {
                            if !deliver(Some(buf[..n].to_vec())) {
                                return;
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
            }
            deliver(None);
        });
    // Without the thread the ranks' pipes close with the launcher's end of them: they see
    // end of file, as with no input.
    drop(spawned);
}

/// Copies this process's stdin into `pipes` (write ends of reading ranks' stdin), dropping
/// each at its first failed write (its rank is gone) and all of them at the end of input.
pub(crate) fn forward_to_pipes(pipes: Vec<File>) {
    if pipes.is_empty() {
        return;
    }
    let mut pipes: Vec<Option<File>> = pipes.into_iter().map(Some).collect();
    read_stdin_chunks(move |chunk| {
        let Some(data) = chunk else {
            pipes.clear();
            return false;
        };
        for p in &mut pipes {
            if let Some(f) = p {
                if f.write_all(&data).is_err() {
                    *p = None;
                }
            }
        }
        pipes.iter().any(Option::is_some)
    });
}

/// Bytes of the launcher's stdin a rank on another host may have outstanding: sent to its
/// agent but not yet written into the rank's stdin pipe. The launcher stops reading its stdin
/// while the slowest reading rank is this far behind, so a rank that never reads costs its
/// agent (and the launcher) at most this much memory, and the writer into the launcher's stdin
/// blocks as it would on a local rank's full pipe.
pub(crate) const REMOTE_STDIN_WINDOW_BYTES: u64 = 1 << 20;

/// The credit window of the launcher's stdin towards ranks on other hosts (see
/// [`REMOTE_STDIN_WINDOW_BYTES`]): the stdin thread counts what it read and waits for room;
/// the launcher's loop moves the window as the agents report bytes written into the pipes.
pub(crate) struct StdinWindow {
    state: std::sync::Mutex<WindowState>,
    room: std::sync::Condvar,
}

struct WindowState {
    /// Bytes read from stdin so far.
    read: u64,
    /// Reading may go on while `read` is below this.
    limit: u64,
}

impl StdinWindow {
    pub(crate) fn new() -> StdinWindow {
        StdinWindow {
            state: std::sync::Mutex::new(WindowState {
                read: 0,
                limit: REMOTE_STDIN_WINDOW_BYTES,
            }),
            room: std::sync::Condvar::new(),
        }
    }

    /// Counts `bytes` just read and waits until the window has room for more.
    pub(crate) fn read_and_wait(&self, bytes: usize) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.read += bytes as u64;
        while s.read >= s.limit {
            s = self.room.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Every reading rank still running has taken at least `bytes` (`None`: none is left, so
    /// nothing holds the input back any more).
    pub(crate) fn taken_by_all(&self, bytes: Option<u64>) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let limit = bytes.map_or(u64::MAX, |b| b.saturating_add(REMOTE_STDIN_WINDOW_BYTES));
        if limit > s.limit {
            s.limit = limit;
            self.room.notify_all();
        }
    }

    /// Bytes read from stdin so far.
    #[cfg(test)]
    fn read_bytes(&self) -> u64 {
        self.state.lock().unwrap().read
    }
}

/// Writes what a host agent receives for one of its ranks into that rank's stdin pipe, on a
/// thread of its own so that a rank that does not read never holds up the agent; an empty
/// chunk is the end of input. Each chunk is reported on `taken` once written (or, after the
/// rank closed its stdin, dropped): the agent tells the launcher, which moves its
/// [`StdinWindow`]. The launcher never has more than [`REMOTE_STDIN_WINDOW_BYTES`] (plus one
/// chunk) outstanding for a rank, which bounds this queue.
pub(crate) struct PipeFeeder {
    tx: std::sync::mpsc::Sender<Vec<u8>>,
}

impl PipeFeeder {
    /// Starts the thread writing into `pipe` for `rank`.
    pub(crate) fn start(
        rank: u32,
        mut pipe: File,
        taken: std::sync::mpsc::Sender<(u32, usize)>,
    ) -> PipeFeeder {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let _ = std::thread::Builder::new()
            .name("weft-stdin-feed".into())
            .spawn(move || {
                let mut open = true;
                for data in rx {
                    if data.is_empty() {
                        return;
                    }
                    // A rank that closed its stdin only stops receiving; the rest is dropped
                    // (and reported taken) so the other reading ranks keep getting input.
                    open = open && pipe.write_all(&data).is_ok();
                    let _ = taken.send((rank, data.len()));
                }
            });
        PipeFeeder { tx }
    }

    /// Queues `data` (empty: end of input).
    pub(crate) fn feed(&self, data: Vec<u8>) {
        let _ = self.tx.send(data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_check() {
        assert_eq!(StdinTarget::parse("all").unwrap(), StdinTarget::All);
        assert_eq!(StdinTarget::parse(" none ").unwrap(), StdinTarget::None);
        assert_eq!(StdinTarget::parse("3").unwrap(), StdinTarget::Rank(3));
        let e = StdinTarget::parse("rank0").unwrap_err();
        assert!(e.message().contains("\"rank0\""), "{e}");
        assert!(StdinTarget::parse("-1").is_err());
        assert!(StdinTarget::Rank(2).includes(2) && !StdinTarget::Rank(2).includes(0));
        assert!(StdinTarget::All.includes(7) && !StdinTarget::None.includes(0));
        assert!(StdinTarget::Rank(3).check(4).is_ok());
        let e = StdinTarget::Rank(4).check(4).unwrap_err();
        assert!(e.message().contains("rank 4 is not in a job of 4"), "{e}");
    }

    #[test]
    fn the_window_holds_the_reader_until_the_slowest_rank_takes_its_input() {
        const CHUNK: u64 = 64 << 10;
        let window = std::sync::Arc::new(StdinWindow::new());
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let w = window.clone();
        // A reader of 64 KiB chunks, as read_stdin_chunks hands them over: it counts each
        // and waits for room before the next; `done` says a wait is over.
        let reader = std::thread::spawn(move || {
            for _ in 0..64 {
                w.read_and_wait(CHUNK as usize);
                done_tx.send(()).unwrap();
            }
        });
        // Takes `waits` ended waits, then checks the reader is held after `chunks` read: its
        // wait can only end when the window moves, so nothing more comes, however long we look.
        let held_at = |waits: u64, chunks: u64| {
            for _ in 0..waits {
                done_rx.recv().unwrap();
            }
            while window.read_bytes() < chunks * CHUNK {
                std::thread::yield_now();
            }
            assert_eq!(window.read_bytes(), chunks * CHUNK);
            assert!(done_rx.try_recv().is_err(), "read past the window");
        };
        let in_window = REMOTE_STDIN_WINDOW_BYTES / CHUNK;
        held_at(in_window - 1, in_window);
        // Half a window taken: half a window more is read, and not a chunk beyond it.
        window.taken_by_all(Some(REMOTE_STDIN_WINDOW_BYTES / 2));
        held_at(in_window / 2, in_window * 3 / 2);
        assert_eq!(window.read_bytes(), REMOTE_STDIN_WINDOW_BYTES * 3 / 2);
        // A smaller, late report moves nothing back.
        window.taken_by_all(Some(0));
        assert!(done_rx.try_recv().is_err());
        // No reading rank left: everything goes.
        window.taken_by_all(None);
        reader.join().unwrap();
        assert_eq!(window.read_bytes(), 64 * CHUNK);
    }
}
