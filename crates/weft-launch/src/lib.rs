//! The job launcher behind `weft run`, usable as a library so `cargo test` can run real
//! multi-process jobs.
//!
//! [`run_job`] places ranks ([`place`]), hosts the job's authenticated bootstrap store,
//! spawns one process per rank ([`spawn`]), forwards their output line by line
//! ([`output`]), ends the whole job when one rank fails, aborts, times out or the launcher is
//! signalled, and whatever happened leaves no rank process and no `/dev/shm` segment of the
//! job behind. With [`JobSpec::hosts`] the same holds across hosts: [`hosts`] starts one
//! [`agent`] per host through a launcher template and the agents start the ranks. Each rank runs in its own process group, where
//! reading a terminal would stop it, so a rank never reads the terminal itself: the ranks
//! [`JobSpec::stdin`] names read a pipe the launcher feeds from its own stdin ([`stdin`]),
//! the others `/dev/null`. [`torus`] places a job's ranks on a virtual torus of healthy
//! hosts (`weft run --map`). This crate sits above weft-core, weft-boot and the pure
//! weft-model and must not depend on the runtime (`weft`) or the transports: it only starts
//! processes and hands them an address.

pub mod agent;
mod agent_port;
pub mod agent_wire;
mod cause;
pub mod hosts;
mod job;
mod keepalive;
pub mod output;
pub mod place;
mod ranks;
mod shm;
mod signals;
pub mod slurm;
pub mod spawn;
pub mod status;
pub mod stdin;
pub mod torus;

pub use hosts::{is_this_host, DEFAULT_LAUNCHER, FORK_LAUNCHER};
pub use job::run_job;
pub use place::{HostSlots, MapBy};
pub use shm::{remove_job_segments, shm_prefix, sweep_stale_segments, StaleSegment, SWEEP_MIN_AGE};
pub use signals::default_sigpipe;
pub use stdin::StdinTarget;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// Where the ranks' stdout and stderr go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OutputMode {
    /// Forward to the launcher's own stdout and stderr, line by line.
    #[default]
    Inherit,
    /// Collect into [`JobOutcome::stdout`] / [`JobOutcome::stderr`] (with the launcher's own
    /// messages in `stderr`), still rank-prefixed when `tag_output` is set.
    Capture,
}

/// What to run.
#[derive(Clone, Debug)]
pub struct JobSpec {
    /// Number of ranks, at least 1.
    pub nranks: u32,
    /// The program each rank runs; searched in `PATH` when it has no `/`.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Prefix each output line with `[rank] `.
    pub tag_output: bool,
    /// End the job (exit code 124) when it runs longer than this.
    pub timeout: Option<Duration>,
    /// Extra environment for every rank, e.g. from `weft run -x NAME`. Ranks on other hosts
    /// get these and the launcher's own `WEFT_*` knobs ([`forwarded_env`]); the variables
    /// the launcher sets per rank (`WEFT_RANK`, ...) take precedence.
    pub env: Vec<(String, String)>,
    /// Where output goes.
    pub output: OutputMode,
    /// Run on these hosts instead of only this one.
    pub hosts: Option<HostsSpec>,
    /// Which ranks read the launcher's stdin (the others read `/dev/null`).
    pub stdin: StdinTarget,
    /// Also write each rank's output to files under a folder.
    pub output_files: Option<OutputFiles>,
    /// Variables of single ranks (index: rank; ranks past its end get none), set after
    /// [`JobSpec::env`] and before the launcher's own (`weft run --map` gives each rank its
    /// torus coordinates, [`torus`]).
    pub rank_env: Vec<Vec<(String, String)>>,
    /// The `weft` binary starting the job, told to the ranks on this host as
    /// `WEFT_RUN_PROGRAM` (MPI_Comm_spawn starts child jobs with it); None for programs
    /// that start jobs through this crate without being `weft`.
    pub launcher_program: Option<PathBuf>,
    /// Programs after the first (MPMD, `weft run -n 2 a : -n 1 b`): the last ranks run
    /// them in order, each app's share after the previous one's, and the first program
    /// runs the `nranks` minus their sum (at least 1). Every rank then gets its app's
    /// index as `WEFT_APPNUM` (MPI_APPNUM; 0 for the first program). On this host only.
    pub apps: Vec<App>,
    /// Working directory of the first program's ranks (None: the launcher's).
    pub wdir: Option<PathBuf>,
}

/// One more program of an MPMD job ([`JobSpec::apps`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct App {
    /// Its ranks, at least 1.
    pub nranks: u32,
    /// The program, searched in `PATH` when it has no `/`.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Its ranks' working directory (None: the launcher's).
    pub wdir: Option<PathBuf>,
}

/// Each rank's stdout and stderr written to `DIR/rank.N/stdout` and `DIR/rank.N/stderr`
/// (N zero-padded to the width of the last rank, as Open MPI's `--output-filename` does), on
/// the launcher's host, as the ranks wrote them (never tagged).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputFiles {
    /// The folder; made if missing.
    pub dir: PathBuf,
    /// Whether output also goes where [`JobSpec::output`] says (Open MPI's default; its
    /// `:nocopy` turns it off).
    pub copy: bool,
}

/// Where and how a multi-host job's ranks are started.
#[derive(Clone, Debug)]
pub struct HostsSpec {
    /// The hosts and their slots.
    pub hosts: Vec<HostSlots>,
    /// Placement of ranks over the hosts.
    pub map_by: MapBy,
    /// The command that runs a command on a host, `{host}` standing for its name
    /// ([`DEFAULT_LAUNCHER`] is `ssh {host}`; tests use `ip netns exec {host}`).
    pub launcher: String,
    /// Where the bootstrap store and the agent port listen: an IP address or `IP:PORT`.
    /// `None` listens only where the hosts need it ([`hosts::listen_ip`]: the one address
    /// they all reach this machine through, when that can be told; else every address) and
    /// lets each host's agent find one it reaches.
    pub boot_addr: Option<String>,
    /// The `weft` binary (it has the hidden `__agent` subcommand), at the same path on
    /// every host.
    pub agent_program: PathBuf,
}

impl JobSpec {
    /// A spec of `nranks` ranks of `program` with no arguments, untagged inherited output and
    /// no timeout.
    pub fn new(nranks: u32, program: impl Into<PathBuf>) -> JobSpec {
        JobSpec {
            nranks,
            program: program.into(),
            args: Vec::new(),
            tag_output: false,
            timeout: None,
            env: Vec::new(),
            output: OutputMode::Inherit,
            hosts: None,
            stdin: StdinTarget::None,
            output_files: None,
            rank_env: Vec::new(),
            launcher_program: None,
            apps: Vec::new(),
            wdir: None,
        }
    }

    /// The variables of `rank` alone ([`JobSpec::rank_env`]).
    pub(crate) fn vars_of(&self, rank: u32) -> &[(String, String)] {
        self.rank_env.get(rank as usize).map_or(&[], Vec::as_slice)
    }
}

/// How a job ended.
#[derive(Clone, Debug)]
pub struct JobOutcome {
    /// The launcher's exit code: 0, the first failing rank's code (128 + signal when it was
    /// killed), an abort's code, 124 on timeout, 128 + signal (130 SIGINT, 143 SIGTERM, 129
    /// SIGHUP) when the launcher was signalled,
    /// 126/127 when the program could not be started.
    pub exit_code: i32,
    /// The job's id (names its `/dev/shm` segments).
    pub job_id: String,
    /// The one line the launcher printed about why the job ended early, if it did.
    pub failure: Option<String>,
    /// Collected stdout when [`OutputMode::Capture`].
    pub stdout: Vec<u8>,
    /// Collected stderr (ranks' and the launcher's) when [`OutputMode::Capture`].
    pub stderr: Vec<u8>,
    /// Wall time from start to the last rank reaped and cleanup done.
    pub elapsed: Duration,
}

/// Variables the launcher sets itself for each rank, never forwarded from its own
/// environment (the one list, kept in weft-boot, which the runtime's MPI_Comm_spawn uses too).
pub use weft_boot::PER_RANK_VARS;

/// The environment ranks on other hosts get: the `WEFT_*` knobs and OpenSHMEM's `SHMEM_*`
/// variables of `launcher_env` (the launcher's environment; a remote login does not carry it;
/// a symmetric heap must have one size on every host) except [`PER_RANK_VARS`], then
/// `extra` (the job's [`JobSpec::env`]), which wins over a knob of the same name.
pub fn forwarded_env(
    launcher_env: impl IntoIterator<Item = (String, String)>,
    extra: &[(String, String)],
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = launcher_env
        .into_iter()
        .filter(|(k, _)| {
            (k.starts_with("WEFT_") || k.starts_with("SHMEM_"))
                && !PER_RANK_VARS.contains(&k.as_str())
        })
        .filter(|(k, _)| !extra.iter().any(|(e, _)| e == k))
        .collect();
    env.sort();
    env.extend(extra.iter().cloned());
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn knobs_and_named_variables_are_forwarded_identity_and_secret_are_not() {
        let launcher = vars(&[
            ("WEFT_SHM_EAGER_BYTES", "8K"),
            ("WEFT_RANK", "3"),
            ("WEFT_JOB_SECRET", "00ff"),
            ("HOME", "/root"),
            ("WEFT_YIELD", "on"),
            ("SHMEM_SYMMETRIC_SIZE", "1G"),
        ]);
        let extra = vars(&[("OMP_NUM_THREADS", "2"), ("WEFT_YIELD", "off")]);
        assert_eq!(
            forwarded_env(launcher, &extra),
            vars(&[
                ("SHMEM_SYMMETRIC_SIZE", "1G"),
                ("WEFT_SHM_EAGER_BYTES", "8K"),
                ("OMP_NUM_THREADS", "2"),
                ("WEFT_YIELD", "off"),
            ])
        );
    }
}
