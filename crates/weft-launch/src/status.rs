//! How a rank ended, how that maps onto the launcher's exit code, and signal names for the
//! one line the launcher prints. Pure: no I/O.

/// How a rank process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankExit {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
}

impl RankExit {
    /// True for exit code 0.
    pub fn is_success(self) -> bool {
        self == RankExit::Code(0)
    }

    /// The shell convention: the code itself, or 128 + signal.
    pub fn exit_code(self) -> i32 {
        match self {
            RankExit::Code(c) => c,
            RankExit::Signal(s) => 128 + s,
        }
    }
}

/// `SIGKILL` for 9, and so on; `SIG<n>` for numbers without a name here.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("SIG{sig}"),
    };
    name.to_owned()
}

/// The line printed when rank `rank` (process `pid`) ended the job by failing.
pub fn failure_line(rank: u32, pid: u32, exit: RankExit) -> String {
    match exit {
        RankExit::Code(c) => format!("weft: rank {rank} exited with code {c}; ending job"),
        RankExit::Signal(s) => format!(
            "weft: rank {rank} (pid {pid}) killed by signal {s} ({}); ending job",
            signal_name(s)
        ),
    }
}

/// The line printed when rank `rank` on host `host` ended a multi-host job by failing.
pub fn failure_line_on_host(rank: u32, host: &str, pid: u32, exit: RankExit) -> String {
    match exit {
        RankExit::Code(c) => {
            format!("weft: rank {rank} on host {host} exited with code {c}; ending job")
        }
        RankExit::Signal(s) => format!(
            "weft: rank {rank} on host {host} (pid {pid}) killed by signal {s} ({}); ending job",
            signal_name(s)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_codes() {
        assert_eq!(
            failure_line(2, 1234, RankExit::Signal(9)),
            "weft: rank 2 (pid 1234) killed by signal 9 (SIGKILL); ending job"
        );
        assert_eq!(
            failure_line(1, 7, RankExit::Code(3)),
            "weft: rank 1 exited with code 3; ending job"
        );
        assert_eq!(
            failure_line_on_host(4, "b", 77, RankExit::Signal(9)),
            "weft: rank 4 on host b (pid 77) killed by signal 9 (SIGKILL); ending job"
        );
        assert_eq!(
            failure_line_on_host(0, "a", 7, RankExit::Code(2)),
            "weft: rank 0 on host a exited with code 2; ending job"
        );
        assert_eq!(RankExit::Signal(9).exit_code(), 137);
        assert_eq!(RankExit::Code(3).exit_code(), 3);
        assert!(RankExit::Code(0).is_success());
        assert!(!RankExit::Signal(15).is_success());
        assert_eq!(signal_name(11), "SIGSEGV");
        assert_eq!(signal_name(40), "SIG40");
    }
}
