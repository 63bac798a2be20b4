//! `weft run -n N [--tag-output] [--timeout SECS] [--hosts a:2,b:2 [--launcher TEMPLATE]
//! [--map-by node|slot | --map torus:XxYxZ[@AxBxC] [--exclude FILE]] [--boot-addr ADDR]]
//! [--] PROGRAM ARGS...`: parses and checks the
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
use weft_launch::place::{parse_hostfile, parse_hosts, place_on_hosts, total_slots};
use weft_launch::slurm::{self, SRUN_TEMPLATE};
use weft_launch::torus::{excluded_hosts, place_on_torus, TorusPlacement, TorusRequest};
use weft_launch::{
    is_this_host, run_job, HostSlots, HostsSpec, JobSpec, MapBy, OutputFiles, OutputMode,
    StdinTarget, DEFAULT_LAUNCHER,
};

/// Where a job runs: the options `weft run` and `weft bench` share.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct HostArgs {
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
    /// Read the hosts from FILE, one per line: `NAME`, `NAME slots=N` (Open MPI) or `NAME:N`
    /// (MPICH); `#` starts a comment; a host listed again adds its slots (a batch system's
    /// node file lists a host once per slot).
    #[arg(long, value_name = "FILE", global = true)]
    pub hostfile: Option<PathBuf>,
    /// Ranks per host: every host gets N slots, so without -n the job has N ranks per host
    /// (on this machine alone: N ranks).
    #[arg(long, value_name = "N", global = true, value_parser = parse_nranks)]
    pub ppn: Option<u32>,
}

/// Where a job runs once the host options are read: on other hosts, or on this machine
/// alone (no host list, or one that names only this machine) with the number of slots the
/// list or `--ppn` gave it.
#[derive(Debug)]
pub(crate) struct Where {
    /// The hosts, `None` to start every rank here without agents.
    pub hosts: Option<HostsSpec>,
    /// Slots on this machine when the job runs here and a host list or `--ppn` sized it.
    pub here_slots: Option<u32>,
}

impl HostArgs {
    /// Where the job runs. Every value is checked here so a typo is reported before anything
    /// starts. Host names that are this machine (`localhost`, its name or address) count as
    /// one host, started without the launcher template; a list of only this machine runs
    /// the job here as if no host were given.
    #[allow(
        clippy::disallowed_methods,
        reason = "a Slurm allocation's variables (SLURM_*) say where the job runs; they are not settings"
    )]
    pub(crate) fn resolve(&self) -> Result<Where, String> {
        self.resolve_in(&|n| std::env::var(n).ok())
    }

    /// [`Self::resolve`] with the environment looked up by `var`: inside a Slurm allocation
    /// (`SLURM_JOB_ID`) and without `--hosts` or `--hostfile`, the allocation's nodes and
    /// task counts are the hosts and agents start as job steps ([`SRUN_TEMPLATE`]).
    pub(crate) fn resolve_in(&self, var: &dyn Fn(&str) -> Option<String>) -> Result<Where, String> {
        // `ppr:N:node` (Open MPI) is N ranks per node, filled host by host.
        let (map_by, ppr) = match self.map_by.as_deref().map(str::trim) {
            Some(m) if m.starts_with("ppr:") => (None, Some(parse_ppr(m)?)),
            other => (other, None),
        };
        let ppn = match (self.ppn, ppr) {
            (Some(a), Some(b)) if a != b => {
                return Err(format!(
                    "--ppn {a} and --map-by ppr:{b}:node disagree; give one of them"
                ))
            }
            (a, b) => a.or(b),
        };
        let mut default_launcher = DEFAULT_LAUNCHER;
        let allocation = match (&self.hosts, &self.hostfile) {
            (None, None) => slurm::allocation(var).map_err(|e| e.to_string())?,
            _ => None,
        };
        let mut hosts = match (&self.hosts, &self.hostfile) {
            (Some(_), Some(_)) => return Err("give --hosts or --hostfile, not both".into()),
            (Some(list), None) => parse_hosts(list).map_err(|e| e.to_string())?,
            (None, Some(file)) => {
                let text = std::fs::read_to_string(file)
                    .map_err(|e| format!("--hostfile {}: {e}", file.display()))?;
                parse_hostfile(&text)
                    .map_err(|e| format!("--hostfile {}: {}", file.display(), e.message()))?
            }
            (None, None) if allocation.is_some() => {
                default_launcher = SRUN_TEMPLATE;
                allocation.unwrap_or_default()
            }
            (None, None) => {
                for (given, name) in [
                    (self.launcher.is_some(), "--launcher"),
                    (map_by.is_some(), "--map-by"),
                    (self.boot_addr.is_some(), "--boot-addr"),
                ] {
                    if given {
                        return Err(format!("{name} needs --hosts or --hostfile"));
                    }
                }
                return Ok(Where {
                    hosts: None,
                    here_slots: ppn,
                });
            }
        };
        merge_this_host(&mut hosts);
        if let Some(n) = ppn {
            for h in &mut hosts {
                h.slots = n;
            }
        }
        let map_by = match map_by {
            Some(m) => MapBy::parse(m).map_err(|e| e.to_string())?,
            None => MapBy::default(),
        };
        if let Some(a) = &self.boot_addr {
            parse_boot_addr(a).map_err(|e| e.to_string())?;
        }
        // An allocation's ranks run as its job steps even on this machine (Slurm accounts
        // for them, confines them and ends them with the job).
        if default_launcher != SRUN_TEMPLATE && hosts.len() == 1 && is_this_host(&hosts[0].name) {
            return Ok(Where {
                hosts: None,
                here_slots: Some(hosts[0].slots),
            });
        }
        let launcher = self
            .launcher
            .clone()
            .unwrap_or_else(|| default_launcher.to_owned());
        expand_template(&launcher, &hosts[0].name).map_err(|e| e.to_string())?;
        let agent_program = std::env::current_exe()
            .map_err(|e| format!("cannot find the weft binary to start on the hosts: {e}"))?;
        Ok(Where {
            hosts: Some(HostsSpec {
                hosts,
                map_by,
                launcher,
                boot_addr: self.boot_addr.clone(),
                agent_program,
            }),
            here_slots: None,
        })
    }
}

/// Parses `ppr:N:node`: N ranks per node.
fn parse_ppr(text: &str) -> Result<u32, String> {
    let mut parts = text.split(':');
    let (_, n, unit, rest) = (parts.next(), parts.next(), parts.next(), parts.next());
    match (n.map(str::parse::<u32>), unit, rest) {
        (Some(Ok(n)), Some("node"), None) if n > 0 => Ok(n),
        (Some(Ok(_)), Some(unit), None) if unit != "node" => Err(format!(
            "--map-by {text}: weft places ranks per node only (ppr:N:node), not per {unit}"
        )),
        _ => Err(format!(
            "--map-by {text:?}: expected ppr:N:node with N at least 1"
        )),
    }
}

/// Merges the entries that name this machine into the first of them (their slots added):
/// `localhost` and the machine's name are one node, as in Open MPI and MPICH.
fn merge_this_host(hosts: &mut Vec<HostSlots>) {
    let Some(first) = hosts.iter().position(|h| is_this_host(&h.name)) else {
        return;
    };
    let mut extra = 0u32;
    let mut i = first + 1;
    while i < hosts.len() {
        if is_this_host(&hosts[i].name) {
            extra = extra.saturating_add(hosts.remove(i).slots);
        } else {
            i += 1;
        }
    }
    hosts[first].slots = hosts[first].slots.saturating_add(extra);
}

/// The rank count: `-n` when given, else one per slot of the hosts (or of this machine's
/// entry), else 1.
fn job_size(given: Option<u32>, place: &Where) -> u32 {
    job_size_or(given, place, 1)
}

/// The rank count of a job `weft run` or `weft bench` starts: `-n` when given, else one per
/// slot of the hosts (or the Slurm allocation, or this machine's entry), else `default`.
pub(crate) fn job_size_or(given: Option<u32>, place: &Where, default: u32) -> u32 {
    match (given, &place.hosts) {
        (Some(n), _) => n,
        (None, Some(h)) => total_slots(&h.hosts),
        (None, None) => place.here_slots.unwrap_or(default),
    }
}

/// Exit code when the launcher itself fails (no socket, no random source).
const LAUNCHER_FAILED: i32 = 1;

/// Arguments of `weft run`.
#[derive(clap::Args, Debug)]
pub(crate) struct RunArgs {
    /// Number of ranks to start (at least 1; default 1, or one per slot with --hosts).
    #[arg(short = 'n', long = "np", value_name = "N", value_parser = parse_nranks, allow_negative_numbers = true)]
    pub nranks: Option<u32>,
    /// Prefix every output line with `[rank] `.
    #[arg(long)]
    pub tag_output: bool,
    /// End the job with exit code 124 when it runs longer than SECS seconds (may be
    /// fractional, e.g. 0.5).
    #[arg(long, value_name = "SECS", value_parser = parse_timeout, allow_negative_numbers = true)]
    pub timeout: Option<Duration>,
    /// Hosts to run on.
    #[command(flatten)]
    pub on: HostArgs,
    /// Give every rank the variable NAME: its value here, or VALUE (repeatable, like
    /// mpiexec -x). Ranks on other hosts get these and this environment's WEFT_* knobs, no
    /// other variable of the launcher's.
    #[arg(short = 'x', long = "export", value_name = "NAME[=VALUE]", value_parser = parse_export)]
    pub export: Vec<(String, Option<String>)>,
    /// Which ranks read this command's stdin: a rank number, "all" or "none" (the others
    /// read /dev/null).
    #[arg(long, value_name = "RANK|all|none", default_value = "0", value_parser = parse_stdin)]
    pub stdin: StdinTarget,
    /// Also write each rank's stdout and stderr to DIR/rank.N/stdout and DIR/rank.N/stderr
    /// (N zero-padded; files on this machine, as the ranks wrote them).
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// With --output-dir: write the ranks' output to the files only.
    #[arg(long, requires = "output_dir")]
    pub output_nocopy: bool,
    /// Pin each rank to a core ("core") or not ("none"): sets WEFT_BIND for every rank on
    /// every host (default: WEFT_BIND's own, auto).
    #[arg(long, value_name = "core|none", value_parser = ["core", "none"])]
    pub bind_to: Option<String>,
    /// Each rank prints the CPUs it is bound to on stderr at start-up (WEFT_REPORT_BINDINGS);
    /// with --map, the launcher also prints each host's ranks and torus coordinates.
    #[arg(long)]
    pub report_bindings: bool,
    /// Lay the job on a virtual torus of the healthy hosts: torus:XxYxZ (the host list is a
    /// torus of that shape) or torus:XxYxZ@AxBxC (the host list in order is the machine's
    /// AxBxC torus, dimension 0 fastest, as `weft plan map --torus` numbers nodes). Ranks
    /// follow the virtual torus in row-major order, the same number on each host; each gets
    /// WEFT_TORUS_DIMS and its host's WEFT_TORUS_COORDS; the dilation and congestion are
    /// printed.
    #[arg(long, value_name = "torus:XxYxZ[@AxBxC]")]
    pub map: Option<String>,
    /// With --map: hosts to leave out, one a line (a host name of the list, or the node's
    /// index or coordinates x,y,z as `weft plan map --exclude` takes them); `#` starts a
    /// comment.
    #[arg(long, value_name = "FILE", requires = "map")]
    pub exclude: Option<PathBuf>,
    /// Working directory of the (first program's) ranks; on this host only.
    #[arg(long, value_name = "DIR")]
    pub wdir: Option<PathBuf>,
    /// The program every rank runs, then its arguments (a program whose name starts with
    /// `-` goes after `--`). More programs follow a lone `:`, each as `-n N [--wdir DIR]
    /// PROGRAM ARGS...` (MPMD, as mpirun's; on this host only): their ranks come after the
    /// first program's, which runs `-n` of them, and each rank's MPI_APPNUM is its program's
    /// index.
    #[arg(value_name = "PROGRAM", required = true, trailing_var_arg = true)]
    pub command: Vec<OsString>,
}

/// The programs after the first of an MPMD command line ([`RunArgs::command`]): `command`
/// is cut at each lone `:`; each later part is `-n N [--wdir DIR] PROGRAM ARGS...`.
/// Returns the first part and the apps.
fn split_apps(command: Vec<OsString>) -> Result<(Vec<OsString>, Vec<weft_launch::App>), String> {
    let mut parts = command.split(|a| a == ":");
    let first = parts.next().unwrap_or_default().to_vec();
    let mut apps = Vec::new();
    for part in parts {
        let mut it = part.iter();
        let mut nranks = None;
        let mut wdir = None;
        let program = loop {
            let Some(a) = it.next() else {
                return Err("a program after ':' is missing".into());
            };
            match a.to_str() {
                Some("-n" | "-np" | "--np") => {
                    let n = it.next().ok_or("-n after ':' needs a number")?;
                    nranks = Some(parse_nranks(&n.to_string_lossy())?);
                }
                Some("--wdir" | "-wdir") => {
                    wdir = Some(PathBuf::from(it.next().ok_or("--wdir needs a folder")?));
                }
                _ => break a,
            }
        };
        apps.push(weft_launch::App {
            nranks: nranks.ok_or("each program after ':' needs its -n N")?,
            program: PathBuf::from(program),
            args: it.cloned().collect(),
            wdir,
        });
    }
    if first.is_empty() {
        return Err("no program before ':'".into());
    }
    Ok((first, apps))
}

/// `weft run`'s command line as clap should read it: MPI's `-np N` becomes `--np N`, and an
/// option before the program that `weft run` does not have is refused as an unknown option
/// (clap would read `-foo` as `-f -o -o`, or take it for the program). Arguments after the
/// program, and other subcommands, pass unchanged.
pub(crate) fn normalize_args(
    weft: &clap::Command,
    mut args: Vec<OsString>,
) -> Result<Vec<OsString>, clap::Error> {
    if args.get(1).is_none_or(|a| a != "run") {
        return Ok(args);
    }
    let run = weft
        .find_subcommand("run")
        .expect("weft has a run subcommand")
        .clone();
    let takes_value = |a: &clap::Arg| a.get_action().takes_values();
    let mut i = 2;
    while i < args.len() {
        let Some(t) = args[i].to_str().map(str::to_owned) else {
            break;
        };
        if t == "--" || !t.starts_with('-') || t == "-" {
            break;
        }
        if t == "-np" {
            args[i] = "--np".into();
            i += 2;
            continue;
        }
        let known = if let Some(long) = t.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or_default();
            run.get_arguments()
                .find(|a| {
                    a.get_long() == Some(name)
                        || a.get_all_aliases().is_some_and(|v| v.contains(&name))
                })
                .map(|a| takes_value(a) && !long.contains('='))
                .or((name == "help").then_some(false))
        } else {
            let c = t[1..].chars().next().unwrap_or('-');
            run.get_arguments()
                .find(|a| a.get_short() == Some(c))
                .map(|a| takes_value(a) && t.len() == 2)
                .or((c == 'h' && t.len() == 2).then_some(false))
        };
        match known {
            Some(skip_value) => i += 1 + usize::from(skip_value),
            None => {
                let mut run = run.clone().bin_name("weft run");
                return Err(run.error(
                    clap::error::ErrorKind::UnknownArgument,
                    format!(
                        "unknown option {t} (weft run --help lists the options; a program whose name starts with - goes after --)"
                    ),
                ));
            }
        }
    }
    Ok(args)
}

fn parse_stdin(s: &str) -> Result<StdinTarget, String> {
    StdinTarget::parse(s).map_err(|e| e.message().to_owned())
}

impl RunArgs {
    /// The environment every rank gets from the options: `-x`, then `--bind-to` and
    /// `--report-bindings` as the knobs they stand for.
    #[allow(
        clippy::disallowed_methods,
        reason = "-x NAME forwards this environment's NAME to the ranks, as mpirun -x does"
    )]
    fn rank_env(&self) -> Result<Vec<(String, String)>, String> {
        let mut env = export_env(&self.export, |n| std::env::var(n).ok())?;
        if let Some(b) = &self.bind_to {
            env.push(("WEFT_BIND".into(), b.clone()));
        }
        if self.report_bindings {
            env.push(("WEFT_REPORT_BINDINGS".into(), "1".into()));
        }
        Ok(env)
    }
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

/// Prints, once for the whole job, a warning for each `WEFT_*` variable of this environment
/// or of `env` (what the ranks get on top of it) that no knob table declares. The ranks stay
/// quiet about them ([`weft_core::knob::warns_for_job`]).
#[allow(
    clippy::disallowed_methods,
    reason = "the launcher checks the whole environment its ranks inherit against the knob tables"
)]
fn warn_unknown_knobs(env: &[(String, String)]) {
    let vars = std::env::vars()
        .filter(|(k, _)| !env.iter().any(|(e, _)| e == k))
        .chain(env.iter().cloned());
    // A malformed value is the ranks' error to report (with the knob's name), not ours.
    if let Ok((_, warnings)) = weft_core::knob::KnobValues::read(&weft::knob_tables(), vars) {
        for w in warnings {
            eprintln!("{w}");
        }
    }
}

/// Runs `weft run`; returns the process exit code.
pub(crate) fn run(mut args: RunArgs) -> i32 {
    let (command, apps) = match split_apps(std::mem::take(&mut args.command)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("weft run: {e}");
            return 2;
        }
    };
    let mut command = command.into_iter();
    let Some(program) = command.next() else {
        eprintln!("weft run: no program given");
        return 2;
    };
    let mut place = match args.on.resolve() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("weft run: {e}");
            return 2;
        }
    };
    let env = match args.rank_env() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("weft run: {e}");
            return 2;
        }
    };
    let torus = match &args.map {
        Some(map) => match torus_placement(&args, map, &mut place) {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("weft run: {e}");
                return 2;
            }
        },
        None => None,
    };
    let nranks = match &torus {
        Some(t) => t.nranks(),
        None => job_size(args.nranks, &place) + apps.iter().map(|a| a.nranks).sum::<u32>(),
    };
    // Usage errors (exit 2) like the other checks, before anything starts.
    if let Some(h) = &place.hosts {
        if let Err(e) = place_on_hosts(nranks, &h.hosts, h.map_by) {
            eprintln!("weft run: {e}");
            return 2;
        }
    }
    if let Err(e) = args.stdin.check(nranks) {
        eprintln!("weft run: {e}");
        return 2;
    }
    let mut rank_env = Vec::new();
    if let Some(t) = &torus {
        eprintln!("weft: {}", t.summary());
        if args.report_bindings {
            for line in t.host_lines() {
                eprintln!("weft: {line}");
            }
        }
        rank_env = t.rank_env();
    }
    warn_unknown_knobs(&env);
    let spec = JobSpec {
        nranks,
        program: PathBuf::from(program),
        args: command.collect(),
        tag_output: args.tag_output,
        timeout: args.timeout,
        env,
        output: OutputMode::Inherit,
        hosts: place.hosts,
        stdin: args.stdin,
        output_files: args.output_dir.map(|dir| OutputFiles {
            dir,
            copy: !args.output_nocopy,
        }),
        rank_env,
        launcher_program: std::env::current_exe().ok(),
        apps,
        wdir: args.wdir,
    };
    match run_job(&spec) {
        Ok(outcome) => outcome.exit_code,
        Err(e) => {
            eprintln!("weft run: {e}");
            LAUNCHER_FAILED
        }
    }
}

/// `weft run --map`: the job's hosts in the order of the virtual torus (`place` is changed
/// to them, filled slot by slot) and each rank's coordinates ([`weft_launch::torus`]).
fn torus_placement(args: &RunArgs, map: &str, place: &mut Where) -> Result<TorusPlacement, String> {
    let request = TorusRequest::parse(map).map_err(|e| e.message().to_owned())?;
    if args.on.map_by.is_some() {
        return Err(format!(
            "--map {map} places the ranks itself: drop --map-by"
        ));
    }
    let Some(hosts) = place.hosts.as_mut() else {
        return Err(format!(
            "--map {map} lays the job on hosts: give them with --hosts or --hostfile (or run \
             inside a Slurm allocation)"
        ));
    };
    let machine = request
        .machine
        .clone()
        .unwrap_or_else(|| request.job.clone());
    let excluded = match &args.exclude {
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .map_err(|e| format!("--exclude {}: {e}", file.display()))?;
            excluded_hosts(&text, &file.display().to_string(), &hosts.hosts, &machine)
                .map_err(|e| e.message().to_owned())?
        }
        None => Vec::new(),
    };
    let t = place_on_torus(&request, &hosts.hosts, &excluded, args.nranks)
        .map_err(|e| e.message().to_owned())?;
    hosts.hosts = t.host_slots();
    hosts.map_by = MapBy::Slot;
    Ok(t)
}

/// Arguments of the hidden `weft __agent` (started by `weft run --hosts` on each host; the
/// job secret arrives on stdin, never here).
#[derive(clap::Args, Debug)]
pub(crate) struct AgentArgs {
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
pub(crate) fn agent(args: AgentArgs) -> i32 {
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
    #[test]
    fn programs_after_a_colon_are_apps_with_their_counts_and_folders() {
        let os = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        let (first, apps) = split_apps(os(&[
            "a", "x", ":", "-n", "2", "b", "-n", ":", "--wdir", "/", "-np", "3", "c",
        ]))
        .unwrap();
        assert_eq!(first, os(&["a", "x"]));
        assert_eq!(apps.len(), 2);
        assert_eq!(
            (apps[0].nranks, apps[0].program.as_path()),
            (2, std::path::Path::new("b"))
        );
        assert_eq!(apps[0].args, os(&["-n"]));
        assert_eq!(apps[0].wdir, None);
        assert_eq!(
            (apps[1].nranks, apps[1].program.as_path()),
            (3, std::path::Path::new("c"))
        );
        assert_eq!(apps[1].wdir.as_deref(), Some(std::path::Path::new("/")));
        let (first, apps) = split_apps(os(&["a", "-n", "1"])).unwrap();
        assert_eq!((first, apps.len()), (os(&["a", "-n", "1"]), 0));
        for bad in [
            &[":", "-n", "1", "b"][..],
            &["a", ":", "b"],
            &["a", ":", "-n", "1"],
            &["a", ":", "-n", "0", "b"],
        ] {
            assert!(split_apps(os(bad)).is_err(), "{bad:?}");
        }
    }

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
            job_size(
                a.nranks,
                &Where {
                    hosts: None,
                    here_slots: None
                }
            ),
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
        let w = a.on.resolve().unwrap();
        let h = w.hosts.as_ref().expect("hosts given");
        assert_eq!(h.hosts.len(), 2);
        assert_eq!(h.map_by, MapBy::Node);
        assert_eq!(h.launcher, "ip netns exec {host}");
        assert_eq!(h.boot_addr.as_deref(), Some("10.0.0.1"));
        assert_eq!(job_size(a.nranks, &w), 5, "one rank per slot");
        assert_eq!(job_size(Some(2), &w), 2);
        let d = parse(&["--hosts", "x", "prog"])
            .unwrap()
            .on
            .resolve()
            .map(|w| w.hosts)
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
            (vec!["--hosts", "a", "--hostfile", "f", "p"], "not both"),
            (
                vec!["--hosts", "a", "--map-by", "ppr:2:socket", "p"],
                "per node only",
            ),
            (
                vec!["--hosts", "a", "--map-by", "ppr:0:node", "p"],
                "N at least 1",
            ),
            (
                vec!["--hosts", "a", "--ppn", "3", "--map-by", "ppr:2:node", "p"],
                "disagree",
            ),
            (
                vec!["--hostfile", "/no/such/hostfile", "p"],
                "/no/such/hostfile",
            ),
        ] {
            let e = parse(&args)
                .unwrap()
                .on
                .resolve()
                .map(|w| w.hosts)
                .unwrap_err();
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
        let w = a.on.resolve_in(&env).unwrap();
        assert_eq!(job_size(a.nranks, &w), 5);
        let h = w.hosts.expect("the allocation");
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
        // --hosts and --launcher still win.
        let a = parse(&["--hosts", "x:2", "--launcher", "ssh {host}", "prog"]).unwrap();
        let h = a.on.resolve_in(&env).unwrap().hosts.unwrap();
        assert_eq!(
            (h.hosts[0].name.as_str(), h.launcher.as_str()),
            ("x", "ssh {host}")
        );
        let bad = |n: &str| match n {
            "SLURM_JOB_ID" => Some("7".to_owned()),
            "SLURM_JOB_NODELIST" => Some("n[01-".to_owned()),
            _ => None,
        };
        let e = parse(&["prog"]).unwrap().on.resolve_in(&bad).unwrap_err();
        assert!(e.contains("SLURM_JOB_NODELIST=\"n[01-\""), "{e}");
    }

    #[test]
    fn ppn_ppr_hostfiles_and_this_machine() {
        let size = |args: &[&str]| {
            let a = parse(args).unwrap();
            let w = a.on.resolve().unwrap();
            (
                job_size(a.nranks, &w),
                w.hosts.map(|h| {
                    h.hosts
                        .iter()
                        .map(|x| format!("{}:{}", x.name, x.slots))
                        .collect::<Vec<_>>()
                        .join(",")
                }),
            )
        };
        assert_eq!(
            size(&["--hosts", "a,b:3", "--ppn", "2", "p"]),
            (4, Some("a:2,b:2".into()))
        );
        assert_eq!(
            size(&["--hosts", "a,b", "--map-by", "ppr:3:node", "p"]),
            (6, Some("a:3,b:3".into()))
        );
        // This machine's names are one host, started here without agents.
        assert_eq!(
            size(&["--hosts", "localhost:2,127.0.0.1:3", "p"]),
            (5, None)
        );
        assert_eq!(
            size(&["--hosts", "localhost:2,zz:1,127.0.0.1", "p"]),
            (4, Some("localhost:3,zz:1".into()))
        );
        assert_eq!(size(&["--ppn", "3", "p"]), (3, None));
        let dir = std::env::temp_dir().join(format!("weft-hostfile-{}", std::process::id()));
        std::fs::write(&dir, "# two nodes\nn1 slots=2\nn2:1\nn1\n").unwrap();
        let f = dir.to_str().unwrap();
        assert_eq!(size(&["--hostfile", f, "p"]), (4, Some("n1:3,n2:1".into())));
        std::fs::write(&dir, "n1 slots=two\n").unwrap();
        let e = parse(&["--hostfile", f, "p"])
            .unwrap()
            .on
            .resolve()
            .unwrap_err();
        assert!(e.contains("line 1") && e.contains(f), "{e}");
        std::fs::remove_file(&dir).unwrap();
    }

    #[test]
    fn np_and_unknown_options_before_the_program() {
        use clap::CommandFactory;
        let weft = clap::Command::new("weft").subcommand(Cli::command().name("run"));
        let norm = |v: &[&str]| {
            normalize_args(&weft, v.iter().map(OsString::from).collect())
                .map(|a| {
                    a.iter()
                        .map(|x| x.to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                })
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            norm(&[
                "weft",
                "run",
                "-np",
                "2",
                "--tag-output",
                "-x",
                "A",
                "p",
                "-np",
                "3"
            ])
            .unwrap(),
            [
                "weft",
                "run",
                "--np",
                "2",
                "--tag-output",
                "-x",
                "A",
                "p",
                "-np",
                "3"
            ]
        );
        assert_eq!(
            norm(&["weft", "run", "-n4", "--stdin=all", "--", "-np"]).unwrap(),
            ["weft", "run", "-n4", "--stdin=all", "--", "-np"]
        );
        let e = norm(&["weft", "run", "-foo", "p"]).unwrap_err();
        assert!(e.contains("unknown option -foo"), "{e}");
        let e = norm(&["weft", "run", "-n", "2", "--nope", "p"]).unwrap_err();
        assert!(e.contains("unknown option --nope"), "{e}");
        assert_eq!(
            norm(&["weft", "info", "-foo"]).unwrap(),
            ["weft", "info", "-foo"]
        );
        let a = parse(&[
            "--np",
            "2",
            "--stdin",
            "none",
            "--bind-to",
            "core",
            "--report-bindings",
            "p",
        ])
        .unwrap();
        assert_eq!(a.stdin, StdinTarget::None);
        assert_eq!(
            a.rank_env().unwrap(),
            [
                ("WEFT_BIND".to_owned(), "core".to_owned()),
                ("WEFT_REPORT_BINDINGS".to_owned(), "1".to_owned())
            ]
        );
        assert_eq!(parse(&["p"]).unwrap().stdin, StdinTarget::Rank(0));
        assert!(
            parse(&["--output-nocopy", "p"]).is_err(),
            "needs --output-dir"
        );
        assert!(parse(&["--bind-to", "socket", "p"]).is_err());
    }

    #[test]
    fn runs_a_job_and_returns_its_code() {
        let a = parse(&["-n", "2", "/bin/sh", "-c", "exit $((WEFT_RANK * 3))"]).unwrap();
        assert_eq!(run(a), 3);
        let a = parse(&["/no/such/program"]).unwrap();
        assert_eq!(run(a), 127);
    }

    #[test]
    fn map_replaces_the_host_list_with_the_torus_hosts_in_rank_order() {
        let a = parse(&[
            "--hosts",
            "h0:2,h1:2,h2:2,h3:2",
            "--launcher",
            "ip netns exec {host}",
            "--map",
            "torus:2x2",
            "-n",
            "4",
            "prog",
        ])
        .unwrap();
        let mut place = a.on.resolve().unwrap();
        let t = torus_placement(&a, a.map.as_deref().unwrap(), &mut place).unwrap();
        let h = place.hosts.unwrap();
        assert_eq!(h.map_by, MapBy::Slot);
        // A 2x2 list is its own torus: host i (dimension 0 fastest) has coordinates
        // (i mod 2, i div 2); ranks go row-major (last dimension fastest), one per host.
        let names: Vec<&str> = h.hosts.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names, ["h0", "h2", "h1", "h3"]);
        assert!(h.hosts.iter().all(|x| x.slots == 1));
        assert_eq!(t.nranks(), 4);
        for (args, want) in [
            (vec!["--map", "torus:2x2", "prog"], "give them with --hosts"),
            (
                vec![
                    "--hosts", "h0,h1", "--map", "torus:2", "--map-by", "node", "p",
                ],
                "drop --map-by",
            ),
        ] {
            let a = parse(&args).unwrap();
            let mut place = a.on.resolve().unwrap();
            let e = torus_placement(&a, a.map.as_deref().unwrap(), &mut place).unwrap_err();
            assert!(e.contains(want), "{args:?}: {e}");
        }
        assert!(parse(&["--exclude", "f", "prog"]).is_err());
    }
}
