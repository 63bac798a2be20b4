//! Starting one rank process on this host: program lookup, environment, its own process
//! group (so everything it forks can be killed together), death with the launcher
//! (`PR_SET_PDEATHSIG`), and non-blocking pipes for its stdout and stderr.
//!
//! Knows nothing about jobs or the bootstrap store beyond the variables it is handed.
//! Depends on weft-core and libc.

use crate::place::RankPlacement;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use weft_core::{Error, ErrorKind, Result};

/// Why the program cannot be started, with the shell's exit code for it (127 not found,
/// 126 found but not runnable).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotRunnable {
    /// 126 or 127.
    pub exit_code: i32,
    /// The one line to print.
    pub message: String,
}

/// The launcher's `PATH`, where [`resolve_program`] looks for a program a job's environment
/// does not say where to find.
#[allow(
    clippy::disallowed_methods,
    reason = "PATH is the shell's search path, not a weft setting: programs are found as execvp finds them"
)]
pub(crate) fn search_path() -> Option<OsString> {
    std::env::var_os("PATH")
}

/// Finds `program` the way a shell does: as given when it contains `/`, else in `path`
/// (a `PATH`-style list). Checks that the result is a runnable file.
pub fn resolve_program(
    program: &Path,
    path: Option<&OsStr>,
) -> std::result::Result<PathBuf, NotRunnable> {
    let shown = program.display();
    if program.as_os_str().is_empty() {
        return Err(NotRunnable {
            exit_code: 127,
            message: "weft: no program given".into(),
        });
    }
    if program.as_os_str().as_bytes().contains(&b'/') {
        return check_runnable(program).map(|_| program.to_path_buf());
    }
    let dirs = path.map(std::env::split_paths).into_iter().flatten();
    for dir in dirs {
        // An empty PATH entry means the current directory.
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        let candidate = dir.join(program);
        if candidate.is_file() && check_runnable(&candidate).is_ok() {
            return Ok(candidate);
        }
    }
    Err(NotRunnable {
        exit_code: 127,
        message: format!("weft: {shown}: command not found in PATH"),
    })
}

fn check_runnable(path: &Path) -> std::result::Result<(), NotRunnable> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| NotRunnable {
        exit_code: if e.kind() == std::io::ErrorKind::NotFound {
            127
        } else {
            126
        },
        message: format!("weft: {shown}: {e}"),
    })?;
    if meta.is_dir() {
        return Err(NotRunnable {
            exit_code: 126,
            message: format!("weft: {shown}: is a directory"),
        });
    }
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| NotRunnable {
        exit_code: 127,
        message: format!("weft: {shown}: path contains a NUL byte"),
    })?;
    // SAFETY: access() reads a NUL-terminated path and nothing else.
    let executable = unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0;
    // root passes access(X_OK) when any execute bit is set; a file with none is still refused
    // by exec, so check the bits too.
    if !executable || meta.permissions().mode() & 0o111 == 0 {
        return Err(NotRunnable {
            exit_code: 126,
            message: format!("weft: {shown}: permission denied (not executable)"),
        });
    }
    Ok(())
}

/// Everything needed to start a rank, apart from where it is placed.
#[derive(Clone, Debug)]
pub struct RankCommand {
    /// The resolved program.
    pub program: PathBuf,
    /// `argv[0]` as the user wrote it.
    pub arg0: OsString,
    /// The remaining arguments.
    pub args: Vec<OsString>,
    /// Environment shared by every rank (applied over the launcher's own).
    pub env: Vec<(String, String)>,
    /// The soft open-files limit to give the rank, when the launcher raised its own (see
    /// [`raise_open_files_limit`]): ranks start with the limit the user had.
    pub open_files_soft_limit: Option<u64>,
    /// The ranks whose stdin is a pipe the launcher feeds ([`RankProcess::stdin`]); the
    /// others read `/dev/null`.
    pub stdin: crate::StdinTarget,
    /// The rank's working directory (None: the launcher's).
    pub wdir: Option<PathBuf>,
}

/// File descriptors the launcher holds per rank: two output pipes and one store connection.
const FDS_PER_RANK: u64 = 3;
/// Descriptors kept for everything else (std streams, the listener, libraries).
const FDS_SPARE: u64 = 64;

/// Raises this process's soft open-files limit so `nranks` ranks fit; returns the previous
/// soft limit when it changed. Fails, naming the numbers, when even the hard limit is short.
pub fn raise_open_files_limit(nranks: u32) -> Result<Option<u64>> {
    let needed = u64::from(nranks) * FDS_PER_RANK + FDS_SPARE;
    // SAFETY: rlimit is two integers; all zeroes is a valid value.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: getrlimit writes one rlimit into `lim`, which we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Ok(None);
    }
    let (soft, hard) = (lim.rlim_cur as u64, lim.rlim_max as u64);
    if soft >= needed {
        return Ok(None);
    }
    if hard < needed {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "nranks {nranks}: the launcher needs about {needed} open files but the hard limit is {hard} (raise ulimit -Hn)"
            ),
        ));
    }
    lim.rlim_cur = needed as libc::rlim_t;
    // SAFETY: setrlimit reads the rlimit `lim`, which we own, and changes nothing else.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
        return Err(Error::io(
            format!("nranks {nranks}: raising the open-files limit to {needed}"),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(Some(soft))
}

/// A started rank: its process id and the read ends of its output pipes.
#[derive(Debug)]
pub struct RankProcess {
    /// The rank.
    pub rank: u32,
    /// Its process id, which is also its process group id.
    pub pid: u32,
    /// Read end of its stdout pipe (non-blocking).
    pub stdout: OwnedFd,
    /// Read end of its stderr pipe (non-blocking).
    pub stderr: OwnedFd,
    /// Write end of its stdin pipe when it reads the launcher's stdin.
    pub stdin: Option<OwnedFd>,
}

/// Starts the rank at `place` on this host with `cmd` plus the per-rank variables `vars`
/// (which override anything of the same name).
pub fn spawn_local_rank(
    cmd: &RankCommand,
    place: &RankPlacement,
    vars: &[(String, String)],
) -> Result<RankProcess> {
    if place.host.is_some() {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "rank {}: placed on host {:?}, but only local ranks can be started",
                place.rank,
                place.host.as_deref().unwrap_or_default()
            ),
        ));
    }
    let mut c = Command::new(&cmd.program);
    if let Some(d) = &cmd.wdir {
        c.current_dir(d);
    }
    c.arg0(&cmd.arg0)
        .args(&cmd.args)
        // A job started from inside a rank of a `--map` job has no torus of its own.
        .env_remove(crate::torus::TORUS_DIMS_VAR)
        .env_remove(crate::torus::TORUS_COORDS_VAR)
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .envs(vars.iter().map(|(k, v)| (k, v)))
        // A rank in its own process group reading the terminal would be stopped (SIGTTIN):
        // it reads a pipe the launcher feeds, or nothing.
        .stdin(if cmd.stdin.includes(place.rank) {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: getpid() before the fork, and only async-signal-safe calls in the child.
    let launcher_pid = unsafe { libc::getpid() };
    let open_files = cmd.open_files_soft_limit;
    // SAFETY: the closure runs in the forked child before exec, where only async-signal-safe
    // calls are allowed: it makes only system calls (setpgid, prctl, getrlimit, setrlimit,
    // getppid) on values copied in before the fork, and its errors are errno values, so it
    // allocates nothing.
    unsafe {
        c.pre_exec(move || {
            // Own process group: the launcher kills the group, catching whatever the rank
            // forked, and a terminal's Ctrl-C reaches only the launcher, which ends the job.
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Die with the launcher; the signal is tied to the thread that forked, which
            // stays in `run_job` until every rank is reaped.
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(soft) = open_files {
                let mut lim: libc::rlimit = std::mem::zeroed();
                if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
                    lim.rlim_cur = soft as libc::rlim_t;
                    libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
                }
            }
            // The launcher may have died before prctl took effect.
            if libc::getppid() != launcher_pid {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    let mut child = c.spawn().map_err(|e| {
        Error::io(
            format!("starting rank {} ({})", place.rank, cmd.program.display()),
            e,
        )
    })?;
    let pid = child.id();
    let stdout: OwnedFd =
        child.stdout.take().map(OwnedFd::from).ok_or_else(|| {
            Error::new(ErrorKind::Internal, "rank stdout pipe missing after spawn")
        })?;
    let stderr: OwnedFd =
        child.stderr.take().map(OwnedFd::from).ok_or_else(|| {
            Error::new(ErrorKind::Internal, "rank stderr pipe missing after spawn")
        })?;
    let stdin = child.stdin.take().map(OwnedFd::from);
    // The `Child` is dropped without waiting: the job loop reaps by pid so that it can look
    // at an exit without reaping it (see job.rs).
    drop(child);
    set_nonblocking(&stdout)?;
    set_nonblocking(&stderr)?;
    Ok(RankProcess {
        rank: place.rank,
        pid,
        stdout,
        stderr,
        stdin,
    })
}

fn set_nonblocking(fd: &OwnedFd) -> Result<()> {
    let raw = fd.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own.
    let ok = unsafe {
        let flags = libc::fcntl(raw, libc::F_GETFL);
        flags >= 0 && libc::fcntl(raw, libc::F_SETFL, flags | libc::O_NONBLOCK) == 0
    };
    if ok {
        Ok(())
    } else {
        Err(Error::io(
            "making a rank output pipe non-blocking",
            std::io::Error::last_os_error(),
        ))
    }
}

/// Turns a pipe fd into a `File` for reading.
pub(crate) fn pipe_file(fd: OwnedFd) -> File {
    File::from(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_like_a_shell() {
        let path = search_path();
        let sh = resolve_program(Path::new("sh"), path.as_deref()).unwrap();
        assert!(sh.ends_with("sh"), "{}", sh.display());
        assert_eq!(
            resolve_program(Path::new("/bin/sh"), None).unwrap(),
            PathBuf::from("/bin/sh")
        );
        let e = resolve_program(Path::new("no-such-program-weft"), path.as_deref()).unwrap_err();
        assert_eq!(e.exit_code, 127);
        assert!(
            e.message
                .contains("no-such-program-weft: command not found"),
            "{e:?}"
        );
        let e = resolve_program(Path::new("/no/such/file"), None).unwrap_err();
        assert_eq!(e.exit_code, 127);
        let e = resolve_program(Path::new("/tmp"), None).unwrap_err();
        assert_eq!(
            (e.exit_code, e.message.as_str()),
            (126, "weft: /tmp: is a directory")
        );
        let f = std::env::temp_dir().join(format!("weft-noexec-{}", std::process::id()));
        std::fs::write(&f, b"#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = resolve_program(&f, None).unwrap_err();
        assert_eq!(e.exit_code, 126);
        assert!(e.message.contains("not executable"), "{e:?}");
        std::fs::remove_file(&f).unwrap();
        assert_eq!(
            resolve_program(Path::new(""), None).unwrap_err().exit_code,
            127
        );
    }
}
