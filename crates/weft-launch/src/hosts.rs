//! Multi-host jobs: the launcher side of `weft run --hosts`.
//!
//! The launcher hosts the bootstrap store and an agent port, both authenticated with the
//! job secret, on `--boot-addr` (default: only where the hosts need it, [`listen_ip`]). For each host it
//! runs the launcher template (`ssh {host}` by default) followed by `weft __agent ...`, and
//! writes the secret to the template's stdin — it never appears on a command line. Each
//! agent tries this machine's addresses in turn (non-loopback first) and connects to the
//! first that answers; the address it reached is the one its ranks get in `WEFT_BOOT_ADDR`,
//! so a host is always handed an address it has just shown it can reach. The agent then
//! starts its host's ranks ([`crate::agent`]) and relays their output and exits; the launcher
//! applies the single-host rules to the whole job: the first failing rank anywhere ends it
//! (its line names rank, host and signal), Stop reaches every agent, which kills, reaps and
//! cleans `/dev/shm` on its host (the launcher removes none itself: segments live on the
//! hosts, and its own machine is cleaned by its agent when it is one of them), and a lost
//! agent ends the job too.
//!
//! Depends on weft-core, weft-boot and libc; never on the runtime or the transports.

use crate::agent_port::AgentPort;
use crate::agent_wire::{FromAgent, RankStart, ToAgent, STDOUT};
use crate::cause::FirstCause;
use crate::job::{abort_ending, signal_ending, store_event, timeout_ending, Ending, TICK};
use crate::output::{RankLines, Sink, StreamKind};
use crate::place::place_on_hosts;
use crate::ranks::{peek_exit, reap, DRAIN_GRACE, TERM_GRACE};
use crate::signals::SignalWatch;
use crate::status::{failure_line_on_host, RankExit};
use crate::stdin::{read_stdin_chunks, StdinWindow};
use crate::{HostsSpec, JobOutcome, JobSpec, StdinTarget};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpStream};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_boot::auth::{encode_hex, new_secret};
use weft_boot::sock::NoSigPipe;
use weft_boot::wire::write_frame;
use weft_boot::{ServerEvent, TcpStoreServer};
use weft_core::{Error, ErrorKind, Result};

/// The launcher template used when none is given.
pub const DEFAULT_LAUNCHER: &str = "ssh {host}";
/// The launcher "template" that starts every host's agent directly on this machine (MPICH's
/// `-launcher fork`): each host is then a separate node of the job on one machine.
pub const FORK_LAUNCHER: &str = "fork";
/// How long every host's agent has to connect back once its template started.
const AGENT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// After Stop, how long agents get to kill, reap, drain and report.
const STOP_WAIT: Duration = Duration::from_millis(TERM_GRACE.as_millis() as u64 + 2500);
/// How long template processes get to exit by themselves once their agent finished.
const STOP_WRITE_TIMEOUT: Duration = Duration::from_millis(100);
const TEMPLATE_EXIT_WAIT: Duration = Duration::from_secs(1);
/// Exit code when a host's agent could not be started, never connected or was lost.
const HOST_FAILED: i32 = 255;

/// Parses `--boot-addr`: an IP address (any free port) or `IP:PORT`.
pub fn parse_boot_addr(text: &str) -> Result<SocketAddr> {
    let t = text.trim();
    if let Ok(sa) = t.parse::<SocketAddr>() {
        return Ok(sa);
    }
    if let Ok(ip) = t
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        return Ok(SocketAddr::new(ip, 0));
    }
    Err(Error::new(
        ErrorKind::InvalidArgument,
        format!("boot-addr: {text:?} is neither an IP address nor IP:PORT"),
    ))
}

/// The command that starts the agent of `host`: the template's words with `{host}` replaced
/// (a template without `{host}` runs the same command for every host, which fakes hosts on
/// one machine). Words are split on whitespace; no shell is involved.
pub fn expand_template(template: &str, host: &str) -> Result<Vec<String>> {
    let words: Vec<String> = template
        .split_whitespace()
        .map(|w| w.replace("{host}", host))
        .collect();
    if words.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("launcher: template {template:?} has no command"),
        ));
    }
    Ok(words)
}

/// Whether `name` names this machine: `localhost`, its host name (with or without the
/// domain), or one of its addresses. Such a host's agent is started directly, never through
/// the launcher template (no ssh to oneself), as Open MPI and MPICH do. Names are compared,
/// never resolved (a lookup could hang on a name server).
pub fn is_this_host(name: &str) -> bool {
    let n = name.trim().trim_start_matches('[').trim_end_matches(']');
    if n.eq_ignore_ascii_case("localhost") || n.eq_ignore_ascii_case("localhost.localdomain") {
        return true;
    }
    if let Ok(ip) = n.parse::<IpAddr>() {
        return ip.is_loopback() || local_addresses().contains(&ip);
    }
    let me = this_host_name();
    let short = |s: &str| s.split('.').next().unwrap_or_default().to_ascii_lowercase();
    !me.is_empty()
        && (n.eq_ignore_ascii_case(&me)
            || (!n.contains('.') && short(&me) == n.to_ascii_lowercase())
            || (!me.contains('.') && short(n) == me.to_ascii_lowercase()))
}

/// This machine's host name (`gethostname`), empty when it cannot be read.
fn this_host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into our buffer.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// This machine's IPv4 addresses, non-loopback first: the addresses an agent tries when no
/// `--boot-addr` was given.
pub fn local_addresses() -> Vec<IpAddr> {
    let mut found: Vec<Ipv4Addr> = Vec::new();
    // SAFETY: getifaddrs fills a list we only read and then free with freeifaddrs.
    unsafe {
        let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
        if libc::getifaddrs(&mut head) == 0 {
            let mut p = head;
            while !p.is_null() {
                let a = (*p).ifa_addr;
                let up = (*p).ifa_flags & libc::IFF_UP as libc::c_uint != 0;
                if up && !a.is_null() && i32::from((*a).sa_family) == libc::AF_INET {
                    let sin = &*(a as *const libc::sockaddr_in);
                    found.push(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)));
                }
                p = (*p).ifa_next;
            }
            libc::freeifaddrs(head);
        }
    }
    found.sort_by_key(|ip| ip.is_loopback());
    found.dedup();
    if found.is_empty() {
        found.push(Ipv4Addr::LOCALHOST);
    }
    found.into_iter().map(IpAddr::V4).collect()
}

/// Where the store and the agent port listen when no `--boot-addr` is given: only where
/// the hosts need it. Hosts named by an IP address reach the launcher through the address
/// this machine would use to reach them (asked of the routing table, nothing is sent);
/// hosts that are this machine ([`is_this_host`]) through loopback. When every host agrees on one
/// address, only that one listens; otherwise (names only DNS could tell, or hosts behind
/// different interfaces) every address does, and each agent finds one it reaches.
pub fn listen_ip<'a>(hosts: impl IntoIterator<Item = &'a str>) -> IpAddr {
    let any = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
    let mut chosen: Option<IpAddr> = None;
    for name in hosts {
        let ip = if is_this_host(name) {
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        } else if let Ok(dest) = name.trim_matches(['[', ']']).parse::<IpAddr>() {
            match route_source(dest) {
                Some(ip) => ip,
                None => return any,
            }
        } else {
            return any;
        };
        match chosen {
            None => chosen = Some(ip),
            Some(c) if c == ip => {}
            Some(_) => return any,
        }
    }
    chosen.unwrap_or(any)
}

/// The source address this machine uses to reach `dest` (a UDP socket's connect only asks
/// the routing table).
fn route_source(dest: IpAddr) -> Option<IpAddr> {
    let bind = match dest {
        IpAddr::V4(_) => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
        IpAddr::V6(_) => SocketAddr::new(IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED), 0),
    };
    let u = std::net::UdpSocket::bind(bind).ok()?;
    u.connect(SocketAddr::new(dest, 9)).ok()?;
    Some(u.local_addr().ok()?.ip())
}

/// What the job's threads tell its loop.
pub(crate) enum Event {
    Connected {
        host: usize,
        stream: TcpStream,
        local_ip: IpAddr,
    },
    Agent {
        host: usize,
        msg: FromAgent,
    },
    Lost {
        host: usize,
        reason: String,
    },
    HostLine {
        host: usize,
        line: String,
    },
    /// One of a template process's output pipes closed.
    HostPipeClosed,
    Store(ServerEvent),
    Refused(String),
    /// A chunk of the launcher's stdin; `None` at its end.
    Stdin(Option<Vec<u8>>),
}

struct HostState {
    name: String,
    ranks: Vec<u32>,
    /// The template's words for this host.
    words: Vec<String>,
    /// The same, as shown in messages.
    command: String,
    child: Option<u32>,
    child_exit: Option<RankExit>,
    child_reaped: bool,
    writer: Option<TcpStream>,
    connected: bool,
    finished: bool,
    lost: bool,
}

struct RankInfo {
    host: usize,
    exit: Option<RankExit>,
    /// Bytes of the launcher's stdin its agent wrote into its stdin pipe.
    stdin_taken: u64,
}

/// Forwards lines a template process writes (ssh's own errors, the agent's) to the loop.
fn spawn_line_reader(host: usize, pipe: impl Read + Send + 'static, tx: Sender<Event>) {
    let _ = std::thread::Builder::new()
        .name("weft-host-lines".into())
        .stack_size(256 << 10)
        .spawn(move || {
            for line in BufReader::new(pipe).split(b'\n') {
                let Ok(line) = line else { break };
                let line = String::from_utf8_lossy(&line).trim_end().to_owned();
                if tx.send(Event::HostLine { host, line }).is_err() {
                    return;
                }
            }
            let _ = tx.send(Event::HostPipeClosed);
        });
}

/// Starts the template of one host with the agent command after it; returns its pid.
fn spawn_template(
    host: usize,
    words: &[String],
    agent: &[OsString],
    secret_hex: &str,
    tx: &Sender<Event>,
) -> std::io::Result<u32> {
    // No template words: the agent runs here, started directly.
    let mut c = match words.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).args(agent);
            c
        }
        None => {
            let mut c = Command::new(&agent[0]);
            c.args(&agent[1..]);
            c
        }
    };
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(|| {
            // Own group: a terminal's Ctrl-C reaches only the launcher, which ends the job in
            // order; and the whole group can be killed at the end.
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Told when the launcher dies. SIGTERM, not SIGKILL: an agent started directly
            // (`ip netns exec` execs it) then still ends its ranks and cleans up, and ssh
            // exits, closing the agent's session. The agent also dies with its connection.
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGTERM as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = c.spawn()?;
    let pid = child.id();
    if let Some(mut stdin) = child.stdin.take() {
        // The secret goes through stdin (ssh carries it encrypted), never argv. A template
        // that exits at once makes this fail; its exit is reported by the loop.
        let _ = stdin.write_all(format!("{secret_hex}\n").as_bytes());
    }
    if let Some(o) = child.stdout.take() {
        spawn_line_reader(host, o, tx.clone());
    }
    if let Some(e) = child.stderr.take() {
        spawn_line_reader(host, e, tx.clone());
    }
    // Reaped by pid in the loop, like ranks.
    drop(child);
    Ok(pid)
}

/// Runs a multi-host job (called by [`crate::run_job`] once the id is made).
pub(crate) fn run_on_hosts(
    spec: &JobSpec,
    hs: &HostsSpec,
    job_id: String,
    started: Instant,
) -> Result<JobOutcome> {
    let placement = place_on_hosts(spec.nranks, &hs.hosts, hs.map_by)?;
    let bind = match &hs.boot_addr {
        Some(a) => parse_boot_addr(a)?,
        None => SocketAddr::new(listen_ip(hs.hosts.iter().map(|h| h.name.as_str())), 0),
    };
    spec.stdin.check(spec.nranks)?;
    let mut hosts: Vec<HostState> = Vec::new();
    // Agents started with srun run as steps of the allocation even on this machine (Slurm
    // accounts for them, confines them and ends them with the job).
    let job_steps = hs.launcher.split_whitespace().next() == Some("srun");
    for h in &hs.hosts {
        let here = is_this_host(&h.name) && !job_steps;
        let words = if hs.launcher.trim() == FORK_LAUNCHER || here {
            Vec::new()
        } else {
            expand_template(&hs.launcher, &h.name)?
        };
        hosts.push(HostState {
            name: h.name.clone(),
            ranks: placement
                .iter()
                .filter(|p| p.host.as_deref() == Some(h.name.as_str()))
                .map(|p| p.rank)
                .collect(),
            command: if words.is_empty() {
                "weft __agent (started here)".to_owned()
            } else {
                words.join(" ")
            },
            words,
            child: None,
            child_exit: None,
            child_reaped: false,
            writer: None,
            connected: false,
            finished: false,
            lost: false,
        });
    }
    let rank_info: Vec<RankInfo> = placement
        .iter()
        .map(|p| RankInfo {
            host: hosts
                .iter()
                .position(|h| Some(h.name.as_str()) == p.host.as_deref())
                .expect("placed on a listed host"),
            exit: None,
            stdin_taken: 0,
        })
        .collect();

    let secret = new_secret()?;
    let (tx, events) = channel();
    let store_tx = tx.clone();
    let store = TcpStoreServer::bind_with_events(
        &bind.to_string(),
        &secret,
        Arc::new(move |ev| {
            let _ = store_tx.send(Event::Store(ev));
        }),
    )?;
    let port = AgentPort::start(
        bind.ip(),
        secret.clone(),
        hosts.iter().map(|h| h.name.clone()).collect(),
        job_id.clone(),
        tx.clone(),
    )?;
    let candidates: Vec<String> = if bind.ip().is_unspecified() {
        local_addresses()
            .into_iter()
            .map(|ip| SocketAddr::new(ip, port.addr.port()).to_string())
            .collect()
    } else {
        vec![port.addr.to_string()]
    };
    let watch = SignalWatch::start();
    let mut job = MultiJob {
        hosts,
        ranks: rank_info,
        lines: RankLines::with_files(spec.nranks, spec.tag_output, spec.output_files.as_ref())?,
        sink: Sink::new(spec.output),
        events,
        watch,
        store_port: store.local_addr().port(),
        spec,
        env: crate::forwarded_env(launcher_env(), &spec.env),
        job_id: job_id.clone(),
        ended_connecting: false,
        open_pipes: 0,
        cause: FirstCause::default(),
        stdin_log: Vec::new(),
        stdin_done: false,
        stdin_hosts_waiting: 0,
        stdin_window: Arc::new(StdinWindow::new()),
    };
    job.stdin_hosts_waiting = job
        .hosts
        .iter()
        .filter(|h| h.ranks.iter().any(|&r| spec.stdin.includes(r)))
        .count();
    let secret_hex = encode_hex(&secret);
    let agent_args = |host: &str| -> Vec<OsString> {
        let mut v: Vec<OsString> = vec![hs.agent_program.clone().into_os_string()];
        v.extend(
            [
                "__agent",
                "--host",
                host,
                "--job",
                &job_id,
                "--connect",
                &candidates.join(","),
            ]
            .map(OsString::from),
        );
        v
    };
    let mut ending = None;
    for i in 0..job.hosts.len() {
        if job.hosts[i].ranks.is_empty() {
            continue;
        }
        let args = agent_args(&job.hosts[i].name);
        let words = job.hosts[i].words.clone();
        match spawn_template(i, &words, &args, &secret_hex, &tx) {
            Ok(pid) => {
                job.hosts[i].child = Some(pid);
                job.open_pipes += 2;
            }
            Err(e) => {
                let line = format!(
                    "weft: host {}: cannot run `{}`: {e}; ending job",
                    job.hosts[i].name, job.hosts[i].command
                );
                job.sink.launcher_line(&line);
                ending = Some(Ending {
                    exit_code: if e.kind() == std::io::ErrorKind::NotFound {
                        127
                    } else {
                        126
                    },
                    line: Some(line),
                });
                break;
            }
        }
    }
    if ending.is_none() && spec.stdin != StdinTarget::None {
        let stdin_tx = tx.clone();
        let window = job.stdin_window.clone();
        read_stdin_chunks(move |chunk| {
            let bytes = chunk.as_ref().map_or(0, Vec::len);
            let sent = stdin_tx.send(Event::Stdin(chunk)).is_ok();
            window.read_and_wait(bytes);
            sent
        });
    }
    drop(tx);
    let ending = match ending {
        Some(e) => e,
        None => job.watch_until_end(spec.timeout.map(|t| (started, t))),
    };
    // The stdin thread, if it waits for room, reads on into the closed channel and ends.
    job.stdin_window.taken_by_all(None);
    job.end_all();
    drop(port);
    drop(store);
    let MultiJob { sink, watch, .. } = job;
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

struct MultiJob<'a> {
    hosts: Vec<HostState>,
    ranks: Vec<RankInfo>,
    lines: RankLines,
    sink: Sink,
    events: Receiver<Event>,
    watch: SignalWatch,
    store_port: u16,
    spec: &'a JobSpec,
    /// What every remote rank's environment gets (see [`crate::forwarded_env`]).
    env: Vec<(String, String)>,
    job_id: String,
    /// Agents still connecting were terminated when the job ended.
    ended_connecting: bool,
    /// Output pipes of template processes not yet closed.
    open_pipes: usize,
    /// Aborts held until the death that caused them is seen ([`crate::cause`]).
    cause: FirstCause,
    /// The launcher's stdin read so far, kept for the hosts of reading ranks whose agents
    /// have not connected yet.
    stdin_log: Vec<Vec<u8>>,
    /// The launcher's stdin has ended.
    stdin_done: bool,
    /// Hosts of reading ranks whose agents have not connected yet.
    stdin_hosts_waiting: usize,
    /// Holds the stdin thread back while a reading rank is far behind.
    stdin_window: Arc<StdinWindow>,
}

impl MultiJob<'_> {
    fn running(&self) -> usize {
        self.ranks.iter().filter(|r| r.exit.is_none()).count()
    }

    /// Lets the stdin thread read on up to a window past the slowest reading rank still
    /// running on a host still connected.
    fn move_stdin_window(&self) {
        let slowest = (0..self.ranks.len() as u32)
            .filter(|&r| self.spec.stdin.includes(r))
            .map(|r| &self.ranks[r as usize])
            .filter(|r| r.exit.is_none() && !self.hosts[r.host].lost)
            .map(|r| r.stdin_taken)
            .min();
        self.stdin_window.taken_by_all(slowest);
    }

    fn end_with(&mut self, exit_code: i32, line: String) -> Ending {
        self.sink.launcher_line(&line);
        Ending {
            exit_code,
            line: Some(line),
        }
    }

    fn start_message(&self, host: usize, local_ip: IpAddr) -> ToAgent {
        let h = &self.hosts[host];
        let boot = SocketAddr::new(local_ip, self.store_port).to_string();
        let local_size = h.ranks.len().to_string();
        let ranks = h
            .ranks
            .iter()
            .enumerate()
            .map(|(local, &rank)| RankStart {
                rank,
                vars: [
                    ("WEFT_RANK".to_owned(), rank.to_string()),
                    ("WEFT_SIZE".to_owned(), self.spec.nranks.to_string()),
                    ("WEFT_LOCAL_RANK".to_owned(), local.to_string()),
                    ("WEFT_LOCAL_SIZE".to_owned(), local_size.clone()),
                    ("WEFT_NODE_ID".to_owned(), h.name.clone()),
                    ("WEFT_BOOT_ADDR".to_owned(), boot.clone()),
                    ("WEFT_JOB_ID".to_owned(), self.job_id.clone()),
                ]
                .into_iter()
                .chain(self.spec.vars_of(rank).iter().cloned())
                .collect(),
                stdin: self.spec.stdin.includes(rank),
            })
            .collect();
        ToAgent::Start {
            program: self.spec.program.as_os_str().as_bytes().to_vec(),
            args: self
                .spec
                .args
                .iter()
                .map(|a| a.as_bytes().to_vec())
                .collect(),
            env: self.env.clone(),
            ranks,
        }
    }

    /// Applies one event; returns the ending it causes (only when `may_end`).
    fn handle(&mut self, ev: Event, may_end: bool) -> Option<Ending> {
        match ev {
            Event::Connected {
                host,
                stream,
                local_ip,
            } => {
                let name = self.hosts[host].name.clone();
                if self.hosts[host].connected {
                    let _ = stream.shutdown(Shutdown::Both);
                    self.sink.launcher_line(&format!(
                        "weft: agent port: host {name} connected twice; dropped the second connection"
                    ));
                    return None;
                }
                self.hosts[host].connected = true;
                let msg = if may_end {
                    self.start_message(host, local_ip)
                } else {
                    ToAgent::Stop
                };
                if let Err(e) = write_frame(&mut NoSigPipe(&stream), &msg.encode()) {
                    self.hosts[host].lost = true;
                    if may_end {
                        return Some(self.end_with(
                            HOST_FAILED,
                            format!("weft: host {name}: cannot start its ranks: {e}; ending job"),
                        ));
                    }
                }
                self.hosts[host].writer = Some(stream);
                if may_end && self.reads_stdin(host) {
                    for i in 0..self.stdin_log.len() {
                        let data = self.stdin_log[i].clone();
                        self.send_input(host, data);
                    }
                    if self.stdin_done {
                        self.send_input(host, Vec::new());
                    }
                    self.stdin_hosts_waiting = self.stdin_hosts_waiting.saturating_sub(1);
                    if self.stdin_hosts_waiting == 0 {
                        self.stdin_log = Vec::new();
                    }
                }
                None
            }
            Event::Stdin(chunk) => {
                let data = match chunk {
                    Some(d) => d,
                    None => {
                        self.stdin_done = true;
                        Vec::new()
                    }
                };
                for h in 0..self.hosts.len() {
                    if self.hosts[h].writer.is_some() && self.reads_stdin(h) {
                        self.send_input(h, data.clone());
                    }
                }
                if self.stdin_hosts_waiting > 0 && !data.is_empty() {
                    self.stdin_log.push(data);
                }
                None
            }
            Event::Agent { host, msg } => self.agent_message(host, msg, may_end),
            Event::Lost { host, reason } => {
                let h = &mut self.hosts[host];
                h.lost = true;
                self.move_stdin_window();
                let h = &mut self.hosts[host];
                if !h.finished && may_end {
                    let line = format!(
                        "weft: host {}: lost its agent ({reason}); ending job",
                        h.name
                    );
                    return Some(self.end_with(HOST_FAILED, line));
                }
                None
            }
            Event::HostPipeClosed => {
                self.open_pipes = self.open_pipes.saturating_sub(1);
                None
            }
            Event::HostLine { host, line } => {
                if !line.is_empty() {
                    let name = &self.hosts[host].name;
                    self.sink
                        .launcher_line(&format!("weft: host {name}: {line}"));
                }
                None
            }
            Event::Store(ev) => {
                store_event(ev, may_end, &mut self.sink, &mut self.cause);
                None
            }
            // An agent ended while it was connecting shows up as a refusal; that one is ours.
            Event::Refused(_) if !may_end && self.ended_connecting => None,
            Event::Refused(line) => {
                self.sink.launcher_line(&line);
                None
            }
        }
    }

    /// Whether a rank of `host` reads the launcher's stdin.
    fn reads_stdin(&self, host: usize) -> bool {
        self.hosts[host]
            .ranks
            .iter()
            .any(|&r| self.spec.stdin.includes(r))
    }

    /// Sends `data` of the launcher's stdin (empty: its end) to every reading rank of `host`.
    /// A failed write is left to the connection's reader, which reports the host lost.
    fn send_input(&mut self, host: usize, data: Vec<u8>) {
        let stdin = self.spec.stdin;
        let h = &mut self.hosts[host];
        let Some(w) = h.writer.as_mut() else { return };
        for &rank in h.ranks.iter().filter(|&&r| stdin.includes(r)) {
            let msg = ToAgent::Input {
                rank,
                data: data.clone(),
            };
            if write_frame(w, &msg.encode()).is_err() {
                return;
            }
        }
    }

    fn agent_message(&mut self, host: usize, msg: FromAgent, may_end: bool) -> Option<Ending> {
        // A rank number is only believed from the agent of the host it was placed on.
        let mine = |rank: u32, ranks: &[RankInfo]| {
            ranks.get(rank as usize).is_some_and(|r| r.host == host)
        };
        match msg {
            FromAgent::Output { rank, stream, data } if mine(rank, &self.ranks) => {
                let kind = if stream == STDOUT {
                    StreamKind::Stdout
                } else {
                    StreamKind::Stderr
                };
                self.lines.push(rank, kind, &data, &mut self.sink);
                None
            }
            FromAgent::Exited {
                rank,
                pid,
                signal,
                value,
            } if mine(rank, &self.ranks) => {
                let r = &mut self.ranks[rank as usize];
                if r.exit.is_some() {
                    return None;
                }
                let exit = if signal {
                    RankExit::Signal(value)
                } else {
                    RankExit::Code(value)
                };
                r.exit = Some(exit);
                self.move_stdin_window();
                // A rank that asked to abort exits as a consequence; its abort is held.
                if may_end && self.cause.pick(&[(rank, exit)]).is_some() {
                    let line = failure_line_on_host(rank, &self.hosts[host].name, pid, exit);
                    return Some(self.end_with(exit.exit_code(), line));
                }
                None
            }
            FromAgent::NotStarted {
                rank,
                exit_code,
                message,
            } if may_end => {
                let code = if (1..=255).contains(&exit_code) {
                    exit_code
                } else {
                    126
                };
                let line = format!(
                    "weft: cannot start rank {rank} on host {}: {message}; ending job",
                    self.hosts[host].name
                );
                Some(self.end_with(code, line))
            }
            FromAgent::Finished { .. } => {
                self.hosts[host].finished = true;
                None
            }
            FromAgent::InputTaken { rank, bytes } if mine(rank, &self.ranks) => {
                self.ranks[rank as usize].stdin_taken += u64::from(bytes);
                self.move_stdin_window();
                None
            }
            // Started (pids are only used in the agent's own messages), repeated hellos and
            // ranks of other hosts change nothing.
            _ => None,
        }
    }

    fn watch_until_end(&mut self, timeout: Option<(Instant, Duration)>) -> Ending {
        let connect_deadline = Instant::now() + AGENT_CONNECT_TIMEOUT;
        loop {
            // While an abort is held, look again soon rather than after a full tick.
            let wait = if self.cause.holding() { TICK / 5 } else { TICK };
            if let Ok(ev) = self.events.recv_timeout(wait) {
                if let Some(e) = self.handle(ev, true) {
                    return e;
                }
                while let Ok(ev) = self.events.try_recv() {
                    if let Some(e) = self.handle(ev, true) {
                        return e;
                    }
                }
            }
            let running = self.running();
            if let Some(e) = signal_ending(&self.watch, running, &mut self.sink) {
                return e;
            }
            if let Some(e) = timeout_ending(timeout, running, &mut self.sink) {
                return e;
            }
            for i in 0..self.hosts.len() {
                let h = &mut self.hosts[i];
                let Some(pid) = h.child else { continue };
                if h.child_exit.is_none() {
                    h.child_exit = peek_exit(pid);
                    if let (Some(exit), false) = (h.child_exit, h.connected) {
                        // Its stderr (ssh's complaint) may still be in flight.
                        self.drain_lines();
                        let h = &self.hosts[i];
                        let how = match exit {
                            RankExit::Code(c) => format!("exited with code {c}"),
                            RankExit::Signal(s) => format!("was killed by signal {s}"),
                        };
                        let line = format!(
                            "weft: host {}: `{}` {how} before its agent connected; ending job",
                            h.name, h.command
                        );
                        return self.end_with(HOST_FAILED, line);
                    }
                }
            }
            if Instant::now() >= connect_deadline {
                if let Some(h) = self
                    .hosts
                    .iter()
                    .find(|h| h.child.is_some() && !h.connected)
                {
                    let line = format!(
                        "weft: host {}: its agent did not connect within {} s; ending job",
                        h.name,
                        AGENT_CONNECT_TIMEOUT.as_secs()
                    );
                    return self.end_with(HOST_FAILED, line);
                }
            }
            if let Some(e) = abort_ending(&self.cause, running == 0, &mut self.sink) {
                return e;
            }
            if running == 0 {
                return Ending {
                    exit_code: 0,
                    line: None,
                };
            }
        }
    }

    /// Passes on what template processes wrote until their pipes close (or a short while,
    /// should something they started keep a pipe open).
    fn drain_lines(&mut self) {
        let deadline = Instant::now() + DRAIN_GRACE;
        while self.open_pipes > 0 && Instant::now() < deadline {
            if let Ok(ev) = self.events.recv_timeout(TICK) {
                self.handle(ev, false);
            }
        }
        while let Ok(ev) = self.events.try_recv() {
            self.handle(ev, false);
        }
    }

    /// Stops every agent, waits for them to clean up, ends the template processes.
    fn end_all(&mut self) {
        for h in &mut self.hosts {
            if let Some(w) = &mut h.writer {
                // An agent that stopped reading must not hold us here: past the timeout the
                // host counts as lost and its template group is killed below.
                let _ = w.set_write_timeout(Some(STOP_WRITE_TIMEOUT));
                if write_frame(&mut NoSigPipe(w), &ToAgent::Stop.encode()).is_err() {
                    h.lost = true;
                }
            }
        }
        for h in &self.hosts {
            if let (Some(pid), false, None) = (h.child, h.connected, h.child_exit) {
                self.ended_connecting = true;
                // Still connecting: it has started nothing, so it can simply go.
                // SAFETY: the group of our own unreaped child (its pid is its group id).
                unsafe {
                    libc::kill(-(pid as libc::pid_t), libc::SIGTERM);
                }
            }
        }
        let deadline = Instant::now() + STOP_WAIT;
        let waiting = |hosts: &[HostState]| {
            hosts
                .iter()
                .any(|h| h.connected && h.child_exit.is_none() && !h.finished && !h.lost)
        };
        while waiting(&self.hosts) && Instant::now() < deadline {
            if let Ok(ev) = self.events.recv_timeout(TICK) {
                self.handle(ev, false);
            }
            for h in &mut self.hosts {
                if let (Some(pid), None) = (h.child, h.child_exit) {
                    h.child_exit = peek_exit(pid);
                }
            }
        }
        for h in &mut self.hosts {
            if let Some(w) = h.writer.take() {
                let _ = w.shutdown(Shutdown::Both);
            }
        }
        let deadline = Instant::now() + TEMPLATE_EXIT_WAIT;
        loop {
            let mut left = 0;
            for h in &mut self.hosts {
                if let (Some(pid), None) = (h.child, h.child_exit) {
                    h.child_exit = peek_exit(pid);
                    left += usize::from(h.child_exit.is_none());
                }
            }
            if left == 0 || Instant::now() >= deadline {
                break;
            }
            if let Ok(ev) = self.events.recv_timeout(TICK) {
                self.handle(ev, false);
            }
        }
        for h in &mut self.hosts {
            let Some(pid) = h.child else { continue };
            if !h.child_reaped {
                // SAFETY: the group of our own unreaped child (its pid is its group id).
                unsafe {
                    libc::kill(-(pid as libc::pid_t), libc::SIGKILL);
                }
                reap(pid);
                h.child_reaped = true;
            }
        }
        self.drain_lines();
        self.lines.finish_all(&mut self.sink);
    }
}

/// The launcher's whole environment (its variables that are text), which remote ranks get
/// as local ones inherit it ([`crate::forwarded_env`] says what goes).
#[allow(
    clippy::disallowed_methods,
    reason = "the launcher forwards its whole environment to remote ranks, as mpirun does"
)]
fn launcher_env() -> impl Iterator<Item = (String, String)> {
    std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ports_listen_only_where_the_hosts_need_them() {
        let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let any = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
        assert_eq!(listen_ip(["localhost"]), lo);
        assert_eq!(listen_ip(["127.0.0.1", "localhost"]), lo);
        let me = this_host_name();
        if !me.is_empty() {
            assert_eq!(listen_ip([me.as_str()]), lo);
        }
        // A name only DNS could tell: every address.
        assert_eq!(listen_ip(["node-17.cluster"]), any);
        assert_eq!(listen_ip(["localhost", "node-17.cluster"]), any);
        // This machine named by its own non-loopback address (if it has one): its agent
        // starts here, so loopback serves it.
        if let Some(ip) = local_addresses().into_iter().find(|ip| !ip.is_loopback()) {
            assert_eq!(listen_ip([ip.to_string().as_str()]), lo);
            assert_eq!(listen_ip([ip.to_string().as_str(), "localhost"]), lo);
        }
    }

    #[test]
    fn boot_addresses_templates_and_candidates() {
        assert_eq!(
            parse_boot_addr("10.1.2.3").unwrap(),
            "10.1.2.3:0".parse::<SocketAddr>().unwrap()
        );
        assert_eq!(parse_boot_addr(" 10.1.2.3:4000 ").unwrap().port(), 4000);
        assert_eq!(parse_boot_addr("[::1]:7").unwrap().port(), 7);
        assert!(parse_boot_addr("::1").unwrap().ip().is_loopback());
        let e = parse_boot_addr("head-node").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("\"head-node\""), "{e}");

        assert_eq!(
            expand_template("ssh -p 22 {host}", "n1").unwrap(),
            ["ssh", "-p", "22", "n1"]
        );
        assert_eq!(
            expand_template("ip netns exec {host}", "h").unwrap(),
            ["ip", "netns", "exec", "h"]
        );
        assert_eq!(
            expand_template("run-on --name={host}.lan", "a").unwrap(),
            ["run-on", "--name=a.lan"]
        );
        assert_eq!(expand_template("env", "a").unwrap(), ["env"]);
        assert!(expand_template("  ", "a")
            .unwrap_err()
            .message()
            .contains("no command"));

        let ips = local_addresses();
        assert!(!ips.is_empty());
        // Loopback last: a remote host can never reach it.
        let first_loopback = ips.iter().position(|ip| ip.is_loopback());
        if let Some(i) = first_loopback {
            assert!(ips[i..].iter().all(|ip| ip.is_loopback()), "{ips:?}");
        }
    }
}
