//! `weft run -n N [--tag-output] [--timeout SECS] [--hosts a:2,b:2 [--launcher TEMPLATE]
//! [--map-by node|slot] [--boot-addr ADDR]] [--] PROGRAM ARGS...`: parses and checks the
//! command line, then hands the job to weft-launch and returns its exit code. The host
//! options are one parser ([`HostArgs`]) shared with `weft bench`; the hidden `weft __agent`
//! (the remote part of a multi-host job) is parsed here too.
//!
//! Only argument handling lives here; everything about processes is in weft-launch.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use weft_launch::agent::{run_agent, AgentConfig};
use weft_launch::hosts::{expand_template, parse_boot_addr};
use weft_launch::place::{parse_hosts, place_on_hosts, total_slots};
use weft_launch::slurm::{self, SRUN_TEMPLATE};
use weft_launch::{run_job, HostsSpec, JobSpec, MapBy, OutputMode, DEFAULT_LAUNCHER};

/// Where a job runs: the options `weft run` and `weft bench` share.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct HostArgs {
    /// Run on these hosts: NAME:SLOTS,... (a host without :SLOTS has one slot). Without -n the
    /// job has one rank per slot. Inside a Slurm allocation the default is the allocation's
    /// nodes and tasks, its agents started with srun.
    #[arg(long, value_name = "HOSTS", global = true)]
    pub hosts: Option<String>,
    /// The command that runs a command on a host, {host} standing for its name (default
    /// "ssh {host}"; "ip netns exec {host}" for namespace test hosts). Split on spaces, no shell.
    /// The weft binary must be at the same path on every host.
    #[arg(long, value_name = "TEMPLATE", global = true)]
    pub launcher: Option<String>,
    /// Rank placement over the hosts: "slot" fills each host in turn (default), "node" goes
    /// round robin.
    #[arg(long, value_name = "node|slot", global = true)]
    pub map_by: Option<String>,
    /// Address the bootstrap store listens on: IP or IP:PORT. Default: every address of this
    /// machine; each host's agent tries them (non-loopback first) and its ranks use the first
    /// one it reached.
    #[arg(long, value_name = "ADDR", global = true)]
    pub boot_addr: Option<String>,
}

impl HostArgs {
    /// The multi-host part of a job, `None` without `--hosts`. Every value is checked here so
    /// a typo is reported before anything starts.
    pub fn spec(&self) -> Result<Option<HostsSpec>, String> {
        self.spec_in(&|n| std::env::var(n).ok())
    }

    /// [`Self::spec`] with the environment looked up by `var`: inside a Slurm allocation
    /// (`SLURM_JOB_ID`) and without `--hosts`, the allocation's nodes and task counts are
    /// the hosts and agents start as job steps ([`SRUN_TEMPLATE`]).
    pub fn spec_in(
        &self,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<HostsSpec>, String> {
        let (hosts, default_launcher) = match &self.hosts {
            Some(list) => (
                parse_hosts(list).map_err(|e| e.to_string())?,
                DEFAULT_LAUNCHER,
            ),
            None => match slurm::allocation(var).map_err(|e| e.to_string())? {
                Some(hosts) => (hosts, SRUN_TEMPLATE),
                None => {
                    for (given, name) in [
                        (self.launcher.is_some(), "--launcher"),
                        (self.map_by.is_some(), "--map-by"),
                        (self.boot_addr.is_some(), "--boot-addr"),
                    ] {
                        if given {
                            return Err(format!("{name} needs --hosts"));
                        }
                    }
                    return Ok(None);
                }
            },
        };
        let map_by = match &self.map_by {
            Some(m) => MapBy::parse(m).map_err(|e| e.to_string())?,
            None => MapBy::default(),
        };
        let launcher = self
            .launcher
            .clone()
            .unwrap_or_else(|| default_launcher.to_owned());
        expand_template(&launcher, &hosts[0].name).map_err(|e| e.to_string())?;
        if let Some(a) = &self.boot_addr {
            parse_boot_addr(a).map_err(|e| e.to_string())?;
        }
        let agent_program = std::env::current_exe()
            .map_err(|e| format!("cannot find the weft binary to start on the hosts: {e}"))?;
        Ok(Some(HostsSpec {
            hosts,
            map_by,
            launcher,
            boot_addr: self.boot_addr.clone(),
            agent_program,
        }))
    }
}

/// The rank count: `-n` when given, else one per slot of the hosts, else 1.
fn job_size(given: Option<u32>, hosts: Option<&HostsSpec>) -> u32 {
    job_size_or(given, hosts, 1)
}

/// The rank count of a job `weft run` or `weft bench` starts: `-n` when given, else one per
/// slot of the hosts (or the Slurm allocation), else `default`.
pub fn job_size_or(given: Option<u32>, hosts: Option<&HostsSpec>, default: u32) -> u32 {
    match (given, hosts) {
        (Some(n), _) => n,
        (None, Some(h)) => total_slots(&h.hosts),
        (None, None) => default,
    }
}

/// Exit code when the launcher itself fails (no socket, no random source).
const LAUNCHER_FAILED: i32 = 1;

/// Arguments of `weft run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Number of ranks to start (at least 1; default 1, or one per slot with --hosts).
    #[arg(short = 'n', long = "np", value_name = "N", value_parser = parse_nranks)]
    pub nranks: Option<u32>,
    /// Prefix every output line with `[rank] `.
    #[arg(long)]
    pub tag_output: bool,
    /// End the job with exit code 124 when it runs longer than SECS seconds (may be
    /// fractional, e.g. 0.5).
    #[arg(long, value_name = "SECS", value_parser = parse_timeout)]
    pub timeout: Option<Duration>,
    /// Hosts to run on.
    #[command(flatten)]
    pub on: HostArgs,
    /// Give every rank the variable NAME: its value here, or VALUE (repeatable, like
    /// mpiexec -x). Ranks on other hosts get these and this environment's WEFT_* knobs, no
    /// other variable of the launcher's.
    #[arg(short = 'x', long = "export", value_name = "NAME[=VALUE]", value_parser = parse_export)]
    pub export: Vec<(String, Option<String>)>,
    /// The program every rank runs, then its arguments.
    #[arg(
        value_name = "PROGRAM",
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub command: Vec<OsString>,
}

fn parse_nranks(s: &str) -> Result<u32, String> {
    let n: u32 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a whole number of ranks"))?;
    if n == 0 {
        return Err("the number of ranks must be at least 1".into());
    }
    Ok(n)
}

fn parse_export(s: &str) -> Result<(String, Option<String>), String> {
    let (name, value) = match s.split_once('=') {
        Some((n, v)) => (n, Some(v.to_owned())),
        None => (s, None),
    };
    let ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return Err(format!(
            "{name:?} is not a variable name (letters, digits and _, not starting with a digit)"
        ));
    }
    Ok((name.to_owned(), value))
}

/// The `-x` variables with their values (a bare NAME takes this environment's value).
fn export_env(
    export: &[(String, Option<String>)],
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, String> {
    export
        .iter()
        .map(|(name, value)| match value {
            Some(v) => Ok((name.clone(), v.clone())),
            None => lookup(name).map(|v| (name.clone(), v)).ok_or_else(|| {
                format!("-x {name}: not set in this environment (use -x {name}=VALUE)")
            }),
        })
        .collect()
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!(
            "{s:?}: the timeout must be a positive number of seconds"
        ));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| format!("{s:?}: timeout out of range"))
}

/// Runs `weft run`; returns the process exit code.
pub fn run(args: RunArgs) -> i32 {
    let mut command = args.command.into_iter();
    let Some(program) = command.next() else {
        eprintln!("weft run: no program given");
        return 2;
    };
    let hosts = match args.on.spec() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("weft run: {e}");
            return 2;
        }
    };
    let env = match export_env(&args.export, |n| std::env::var(n).ok()) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("weft run: {e}");
            return 2;
        }
    };
    let nranks = job_size(args.nranks, hosts.as_ref());
    if let Some(h) = &hosts {
        // A usage error (exit 2) like the other checks, before anything starts.
        if let Err(e) = place_on_hosts(nranks, &h.hosts, h.map_by) {
            eprintln!("weft run: {e}");
            return 2;
        }
    }
    let spec = JobSpec {
        nranks,
        program: PathBuf::from(program),
        args: command.collect(),
        tag_output: args.tag_output,
        timeout: args.timeout,
        env,
        output: OutputMode::Inherit,
        hosts,
    };
    match run_job(&spec) {
        Ok(outcome) => outcome.exit_code,
        Err(e) => {
            eprintln!("weft run: {e}");
            LAUNCHER_FAILED
        }
    }
}

/// Arguments of the hidden `weft __agent` (started by `weft run --hosts` on each host; the
/// job secret arrives on stdin, never here).
#[derive(clap::Args, Debug)]
pub struct AgentArgs {
    /// This host's name in the host list.
    #[arg(long)]
    pub host: String,
    /// The job id.
    #[arg(long)]
    pub job: String,
    /// The launcher's addresses to try, comma-separated IP:PORT.
    #[arg(long, value_delimiter = ',', required = true)]
    pub connect: Vec<String>,
}

/// Runs `weft __agent`; returns its exit code.
pub fn agent(args: AgentArgs) -> i32 {
    let mut connect = Vec::new();
    for a in &args.connect {
        match a.parse::<SocketAddr>() {
            Ok(sa) => connect.push(sa),
            Err(_) => {
                eprintln!("weft __agent: --connect: {a:?} is not IP:PORT");
                return 2;
            }
        }
    }
    run_agent(&AgentConfig {
        connect,
        host: args.host,
        job_id: args.job,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }

    fn parse(args: &[&str]) -> Result<RunArgs, String> {
        let mut v = vec!["weft-run"];
        v.extend_from_slice(args);
        Cli::try_parse_from(v)
            .map(|c| c.run)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn export_takes_values_from_here_or_the_argument() {
        let a = parse(&[
            "-x",
            "OMP_NUM_THREADS=4",
            "--export",
            "HOME",
            "-x",
            "E=",
            "prog",
        ])
        .unwrap();
        let env = export_env(&a.export, |n| (n == "HOME").then(|| "/h".to_owned())).unwrap();
        assert_eq!(
            env,
            [
                ("OMP_NUM_THREADS".to_owned(), "4".to_owned()),
                ("HOME".to_owned(), "/h".to_owned()),
                ("E".to_owned(), String::new()),
            ]
        );
        let e = export_env(&parse(&["-x", "NOPE", "prog"]).unwrap().export, |_| None).unwrap_err();
        assert!(e.contains("-x NOPE: not set"), "{e}");
        for bad in ["1A", "A-B", "=x", ""] {
            let e = parse(&["-x", bad, "prog"]).err().unwrap();
            assert!(e.contains("not a variable name"), "{bad}: {e}");
        }
    }

    #[test]
    fn parses_ranks_timeout_and_program_arguments() {
        let a = parse(&[
            "-n",
            "4",
            "--tag-output",
            "--timeout",
            "2.5",
            "prog",
            "-x",
            "--y",
        ])
        .unwrap();
        assert_eq!(a.nranks, Some(4));
        assert!(a.tag_output);
        assert_eq!(a.timeout, Some(Duration::from_millis(2500)));
        assert_eq!(a.command, ["prog", "-x", "--y"]);
        let a = parse(&["--", "prog", "-n", "3"]).unwrap();
        assert_eq!(
            job_size(a.nranks, None),
            1,
            "-n defaults to 1 and after -- belongs to the program"
        );
        assert_eq!(a.command, ["prog", "-n", "3"]);
    }

    #[test]
    fn bad_numbers_are_clear_errors() {
        let e = parse(&["-n", "0", "prog"]).unwrap_err();
        assert!(e.contains("at least 1"), "{e}");
        let e = parse(&["-n", "many", "prog"]).unwrap_err();
        assert!(e.contains("not a whole number"), "{e}");
        let e = parse(&["--timeout", "-1", "prog"]).unwrap_err();
        assert!(e.contains("positive"), "{e}");
        let e = parse(&["--timeout", "soon", "prog"]).unwrap_err();
        assert!(e.contains("not a number of seconds"), "{e}");
        assert!(parse(&["--timeout", "inf", "prog"]).is_err());
        assert!(parse(&["-n", "2"]).is_err(), "a program is required");
    }

    #[test]
    fn host_options_are_checked_before_anything_starts() {
        let a = parse(&[
            "--hosts",
            "a:2,b:3",
            "--map-by",
            "node",
            "--launcher",
            "ip netns exec {host}",
            "--boot-addr",
            "10.0.0.1",
            "prog",
        ])
        .unwrap();
        let h = a.on.spec().unwrap().expect("hosts given");
        assert_eq!(h.hosts.len(), 2);
        assert_eq!(h.map_by, MapBy::Node);
        assert_eq!(h.launcher, "ip netns exec {host}");
        assert_eq!(h.boot_addr.as_deref(), Some("10.0.0.1"));
        assert_eq!(job_size(a.nranks, Some(&h)), 5, "one rank per slot");
        assert_eq!(job_size(Some(2), Some(&h)), 2);
        let d = parse(&["--hosts", "x", "prog"])
            .unwrap()
            .on
            .spec()
            .unwrap()
            .unwrap();
        assert_eq!((d.launcher.as_str(), d.map_by), ("ssh {host}", MapBy::Slot));
        for (args, want) in [
            (vec!["--hosts", "a:0", "p"], "at least 1 slot"),
            (vec!["--hosts", "a", "--map-by", "core", "p"], "\"core\""),
            (
                vec!["--hosts", "a", "--boot-addr", "nowhere", "p"],
                "boot-addr",
            ),
            (vec!["--hosts", "a", "--launcher", " ", "p"], "no command"),
            (
                vec!["--launcher", "ssh {host}", "p"],
                "--launcher needs --hosts",
            ),
            (
                vec!["--boot-addr", "1.2.3.4", "p"],
                "--boot-addr needs --hosts",
            ),
        ] {
            let e = parse(&args).unwrap().on.spec().unwrap_err();
            assert!(e.contains(want), "{args:?}: {e}");
        }
    }

    #[test]
    fn inside_a_slurm_allocation_the_allocation_is_the_host_list() {
        let env = |n: &str| match n {
            "SLURM_JOB_ID" => Some("7".to_owned()),
            "SLURM_JOB_NODELIST" => Some("n[01-02]".to_owned()),
            "SLURM_TASKS_PER_NODE" => Some("3,2".to_owned()),
            _ => None,
        };
        let a = parse(&["prog"]).unwrap();
        let h = a.on.spec_in(&env).unwrap().expect("the allocation");
        assert_eq!(
            h.hosts
                .iter()
                .map(|x| (x.name.as_str(), x.slots))
                .collect::<Vec<_>>(),
            [("n01", 3), ("n02", 2)]
        );
        assert!(
            h.launcher
                .starts_with("srun --nodes=1 --ntasks=1 --nodelist={host}"),
            "{}",
            h.launcher
        );
        assert_eq!(job_size(a.nranks, Some(&h)), 5);
        // --hosts and --launcher still win.
        let a = parse(&["--hosts", "x:2", "--launcher", "ssh {host}", "prog"]).unwrap();
        let h = a.on.spec_in(&env).unwrap().unwrap();
        assert_eq!(
            (h.hosts[0].name.as_str(), h.launcher.as_str()),
            ("x", "ssh {host}")
        );
        let bad = |n: &str| match n {
            "SLURM_JOB_ID" => Some("7".to_owned()),
            "SLURM_JOB_NODELIST" => Some("n[01-".to_owned()),
            _ => None,
        };
        let e = parse(&["prog"]).unwrap().on.spec_in(&bad).unwrap_err();
        assert!(e.contains("SLURM_JOB_NODELIST=\"n[01-\""), "{e}");
    }

    #[test]
    fn runs_a_job_and_returns_its_code() {
        let a = parse(&["-n", "2", "/bin/sh", "-c", "exit $((WEFT_RANK * 3))"]).unwrap();
        assert_eq!(run(a), 3);
        let a = parse(&["/no/such/program"]).unwrap();
        assert_eq!(run(a), 127);
    }
}
