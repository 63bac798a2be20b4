//! The job launcher behind `weft run`, usable as a library so `cargo test` can run real
//! multi-process jobs.
//!
//! [`run_job`] places ranks ([`place`]), hosts the job's authenticated bootstrap store,
//! spawns one process per rank ([`spawn`]), forwards their output line by line
//! ([`output`]), ends the whole job when one rank fails, aborts, times out or the launcher is
//! signalled, and whatever happened leaves no rank process and no `/dev/shm` segment of the
//! job behind. With [`JobSpec::hosts`] the same holds across hosts: [`hosts`] starts one
//! [`agent`] per host through a launcher template and the agents start the ranks. Ranks read stdin from `/dev/null`: each runs in its own process group, where
//! reading a terminal would stop it. This crate sits above weft-core and weft-boot and must not depend on the
//! runtime (`weft`) or the transports: it only starts processes and hands them an address.

pub mod agent;
pub mod agent_wire;
pub mod hosts;
mod job;
mod keepalive;
pub mod output;
pub mod place;
mod ranks;
mod shm;
mod signals;
pub mod spawn;
pub mod status;

pub use hosts::DEFAULT_LAUNCHER;
pub use job::run_job;
pub use place::{HostSlots, MapBy};
pub use shm::{remove_job_segments, shm_prefix};
pub use signals::default_sigpipe;

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
    /// Extra environment for every rank (the launcher's `WEFT_*` variables take precedence).
    pub env: Vec<(String, String)>,
    /// Where output goes.
    pub output: OutputMode,
    /// Run on these hosts instead of only this one.
    pub hosts: Option<HostsSpec>,
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
    /// `None` listens on every address and lets each host's agent find one it reaches.
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
        }
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
