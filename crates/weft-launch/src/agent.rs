//! The host agent of a multi-host job (`weft __agent`): started on each host through the
//! launcher template, it reads the job secret from its stdin, connects back to the launcher
//! and proves the secret, starts that host's ranks, relays their output and exits, and on
//! `Stop` — or when its connection to the launcher breaks — ends them all, removes the job's
//! `/dev/shm` segments on its host and exits. It dies with its connection, and a SIGTERM,
//! SIGINT or SIGHUP (the launcher's death signal for agents it started directly) ends it the
//! same orderly way: a launcher that vanishes leaves nothing running.
//!
//! Depends on weft-core, weft-boot (handshake, frames) and the crate's rank handling; never
//! on the runtime.

use crate::agent_wire::{FromAgent, RankStart, ToAgent, STDERR, STDOUT};
use crate::job::TICK;
use crate::output::StreamKind;
use crate::place::RankPlacement;
use crate::ranks::{Chunk, RankSet};
use crate::shm::{remove_job_segments, sweep_stale_segments, SWEEP_MIN_AGE};
use crate::signals::SignalWatch;
use crate::spawn::{raise_open_files_limit, resolve_program, spawn_local_rank, RankCommand};
use crate::status::{signal_name, RankExit};
use crate::stdin::PipeFeeder;
use crate::StdinTarget;
use std::ffi::OsString;
use std::io::{BufRead, Read};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::time::{Duration, Instant};
use weft_boot::auth::{check_secret, client_handshake, decode_hex};
use weft_boot::sock::NoSigPipe;
use weft_boot::wire::{read_frame, write_frame};
use weft_core::{Error, ErrorKind, Result};

/// How long one candidate address of the launcher first gets to accept the connection
/// (doubled on each of the [`CONNECT_PASSES`] over the addresses that timed out).
const CONNECT_TIMEOUT: Duration = Duration::from_millis(1000);
/// Passes over the addresses that time out: 1 + 2 + 4 + 8 s at most.
const CONNECT_PASSES: usize = 4;
/// How long an agent keeps trying a launcher that turns it away before the secret is proven.
const RETRY_DEADLINE: Duration = Duration::from_secs(25);
/// First pause before such a retry (doubled each time, up to [`RETRY_MAX_PAUSE`]).
const RETRY_FIRST_PAUSE: Duration = Duration::from_millis(50);
const RETRY_MAX_PAUSE: Duration = Duration::from_secs(2);
/// How long the launcher has to send the ranks once the agent said hello.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Exit code of an agent that could not reach or lost its launcher (as ssh uses).
const AGENT_FAILED: i32 = 255;

/// What `weft __agent` is told on its command line (nothing secret).
#[derive(Clone, Debug)]
pub struct AgentConfig {
    /// The launcher's addresses to try, in order.
    pub connect: Vec<SocketAddr>,
    /// This host's name in the host list.
    pub host: String,
    /// The job id.
    pub job_id: String,
}

/// Runs the agent; returns its exit code. Its own problems go to stderr, which the launcher
/// forwards prefixed with the host name.
pub fn run_agent(cfg: &AgentConfig) -> i32 {
    match agent_main(cfg) {
        Ok(code) => code,
        Err(e) => {
            weft_core::diag!("weft agent: {e}");
            AGENT_FAILED
        }
    }
}

fn read_secret() -> Result<Vec<u8>> {
    let mut line = String::new();
    // Bounded: a secret is 64 hex digits; anything far longer is not one.
    std::io::stdin()
        .lock()
        .take(1024)
        .read_line(&mut line)
        .map_err(|e| Error::io("reading the job secret from stdin", e))?;
    if line.trim().is_empty() {
        return Err(Error::new(
            ErrorKind::Config,
            "no job secret on stdin (the agent is started by weft run)",
        ));
    }
    let secret = decode_hex("job secret on stdin", &line)?;
    check_secret(&secret)?;
    Ok(secret)
}

fn connect(cfg: &AgentConfig, secret: &[u8]) -> Result<TcpStream> {
    // An address that refuses or has no route gave a definite answer and is dropped; one
    // that times out may only have lost the first SYN (a link just brought up, a busy
    // machine; TCP resends it after about a second), so it is tried again, waiting longer.
    // A launcher that took the connection but turned it away before the secret was proven
    // (too many connections pending there: strangers may be holding the port) is tried
    // again after a pause that doubles, until RETRY_DEADLINE; a wrong secret is final.
    let deadline = Instant::now() + RETRY_DEADLINE;
    let mut pending: Vec<SocketAddr> = cfg.connect.clone();
    let mut failed: Vec<String> = Vec::new();
    let mut pause = RETRY_FIRST_PAUSE;
    loop {
        let mut turned_away: Vec<(SocketAddr, Error)> = Vec::new();
        let mut wait = CONNECT_TIMEOUT;
        for _ in 0..CONNECT_PASSES {
            let mut timed_out = Vec::new();
            for addr in &pending {
                match TcpStream::connect_timeout(addr, wait) {
                    Ok(s) => {
                        let _ = s.set_nodelay(true);
                        // A launcher host that vanishes (no FIN) must not leave us and our
                        // ranks running: keepalive breaks the link, the reader ends, the
                        // ranks end.
                        crate::keepalive::set_keepalive(&s);
                        s.set_read_timeout(Some(START_TIMEOUT))
                            .map_err(|e| Error::io("agent socket setup", e))?;
                        match client_handshake(&mut NoSigPipe(&s), secret, &addr.to_string()) {
                            Ok(()) => return Ok(s),
                            Err(e) if e.kind() == ErrorKind::Auth => return Err(e),
                            Err(e) => turned_away.push((*addr, e)),
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::TimedOut => timed_out.push(*addr),
                    Err(e) => failed.push(format!("{addr} ({e})")),
                }
            }
            if timed_out.is_empty() {
                break;
            }
            pending = timed_out;
            wait *= 2;
        }
        let timed_out = std::mem::take(&mut pending);
        if turned_away.is_empty() || Instant::now() + pause > deadline {
            failed.extend(
                timed_out
                    .iter()
                    .map(|a| format!("{a} (connection timed out)")),
            );
            failed.extend(turned_away.iter().map(|(_, e)| e.to_string()));
            return Err(Error::new(
                ErrorKind::Io,
                format!("cannot reach the launcher at any of: {}", failed.join(", ")),
            ));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(RETRY_MAX_PAUSE);
        pending = turned_away.into_iter().map(|(a, _)| a).collect();
    }
}

fn send(stream: &mut TcpStream, msg: &FromAgent) -> Result<()> {
    write_frame(&mut NoSigPipe(stream), &msg.encode())
}

fn agent_main(cfg: &AgentConfig) -> Result<i32> {
    let secret = read_secret()?;
    let mut stream = connect(cfg, &secret)?;
    send(
        &mut stream,
        &FromAgent::Hello {
            host: cfg.host.clone(),
            job_id: cfg.job_id.clone(),
        },
    )?;
    let start = match read_frame(&mut stream)? {
        Some(body) => ToAgent::decode(&body)?,
        // The launcher ended the job before this host was needed.
        None => return Ok(0),
    };
    let (program, args, env, ranks) = match start {
        ToAgent::Start {
            program,
            args,
            env,
            ranks,
        } => (program, args, env, ranks),
        ToAgent::Stop => {
            send(
                &mut stream,
                &FromAgent::Finished {
                    segments_removed: 0,
                },
            )?;
            return Ok(0);
        }
        ToAgent::Input { .. } => {
            return Err(Error::new(
                ErrorKind::Protocol,
                "the launcher sent input before starting any rank",
            ))
        }
    };
    stream
        .set_read_timeout(None)
        .map_err(|e| Error::io("agent socket setup", e))?;
    // What earlier jobs killed with SIGKILL could not remove on this host goes first.
    sweep_stale_segments(false, SWEEP_MIN_AGE);
    let commands = spawn_reader(&stream)?;
    let signals = SignalWatch::start();
    let (input_taken_tx, input_taken) = channel();
    let mut agent = Agent {
        stream,
        set: RankSet::default(),
        broken: false,
        feeders: Vec::new(),
        input_taken_tx,
        input_taken,
    };
    agent.start_ranks(program, args, env, &ranks, &encode_secret(&secret));
    let why = agent.watch(&commands, &signals);
    let mut out = Vec::new();
    agent.set.end_all(&mut |rank, kind, chunk| {
        if let Chunk::Data(d) = chunk {
            out.push(output_message(rank, kind, d));
        }
    });
    for m in &out {
        agent.send(m);
    }
    let removed = remove_job_segments(&cfg.job_id);
    match why {
        End::Stop => {
            agent.send(&FromAgent::Finished {
                segments_removed: removed as u32,
            });
            Ok(0)
        }
        End::Lost => Err(Error::new(
            ErrorKind::PeerDead,
            "lost the connection to the launcher; ended this host's ranks",
        )),
        End::Signal(sig) => Err(Error::new(
            ErrorKind::PeerDead,
            format!("received {}; ended this host's ranks", signal_name(sig)),
        )),
    }
}

fn encode_secret(secret: &[u8]) -> String {
    weft_boot::auth::encode_hex(secret)
}

fn output_message(rank: u32, kind: StreamKind, data: &[u8]) -> FromAgent {
    FromAgent::Output {
        rank,
        stream: match kind {
            StreamKind::Stdout => STDOUT,
            StreamKind::Stderr => STDERR,
        },
        data: data.to_vec(),
    }
}

/// Reads the launcher's messages on a thread; `None` means the connection ended or broke.
fn spawn_reader(stream: &TcpStream) -> Result<Receiver<Option<ToAgent>>> {
    let mut r = stream
        .try_clone()
        .map_err(|e| Error::io("agent socket clone", e))?;
    let (tx, rx) = channel();
    std::thread::Builder::new()
        .name("weft-agent-read".into())
        .spawn(move || loop {
            let msg = match read_frame(&mut r) {
                Ok(Some(body)) => ToAgent::decode(&body).ok(),
                _ => None,
            };
            let end = msg.is_none();
            if tx.send(msg).is_err() || end {
                return;
            }
        })
        .map_err(|e| Error::io("starting the agent's reader thread", e))?;
    Ok(rx)
}

/// Why the agent stops watching its ranks.
enum End {
    /// The launcher said so.
    Stop,
    /// The connection to the launcher ended.
    Lost,
    /// This signal came.
    Signal(i32),
}

struct Agent {
    stream: TcpStream,
    set: RankSet,
    /// The connection failed on a write; the launcher is gone.
    broken: bool,
    /// The stdin pipes of this host's ranks that read the launcher's stdin, by rank.
    feeders: Vec<(u32, PipeFeeder)>,
    /// Where the feeders report the bytes of input they wrote, as (rank, bytes)...
    input_taken_tx: Sender<(u32, usize)>,
    /// ...which the agent reports to the launcher.
    input_taken: Receiver<(u32, usize)>,
}

impl Agent {
    fn send(&mut self, msg: &FromAgent) {
        if !self.broken && send(&mut self.stream, msg).is_err() {
            self.broken = true;
        }
    }

    fn start_ranks(
        &mut self,
        program: Vec<u8>,
        args: Vec<Vec<u8>>,
        env: Vec<(String, String)>,
        ranks: &[RankStart],
        secret_hex: &str,
    ) {
        let program = PathBuf::from(OsString::from_vec(program));
        let path = env
            .iter()
            .rev()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| OsString::from(v))
            .or_else(crate::spawn::search_path);
        let first = ranks.first().map_or(0, |r| r.rank);
        let resolved = match resolve_program(&program, path.as_deref()) {
            Ok(p) => p,
            Err(nr) => {
                self.send(&FromAgent::NotStarted {
                    rank: first,
                    exit_code: nr.exit_code,
                    message: nr.message,
                });
                return;
            }
        };
        let open_files_soft_limit = match raise_open_files_limit(ranks.len() as u32) {
            Ok(l) => l,
            Err(e) => {
                self.send(&FromAgent::NotStarted {
                    rank: first,
                    exit_code: 126,
                    message: e.to_string(),
                });
                return;
            }
        };
        let cmd = RankCommand {
            program: resolved,
            arg0: program.into_os_string(),
            args: args.into_iter().map(OsString::from_vec).collect(),
            env,
            open_files_soft_limit,
            stdin: StdinTarget::None,
            wdir: None,
        };
        for r in ranks {
            let reads = if r.stdin {
                StdinTarget::Rank(r.rank)
            } else {
                StdinTarget::None
            };
            let cmd = RankCommand {
                stdin: reads,
                ..cmd.clone()
            };
            let mut vars = r.vars.clone();
            // Never sent over the network: the agent got it through the template's stdin.
            vars.push(("WEFT_JOB_SECRET".to_owned(), secret_hex.to_owned()));
            let place = RankPlacement {
                rank: r.rank,
                local_rank: 0,
                local_size: 0,
                host: None,
            };
            match spawn_local_rank(&cmd, &place, &vars) {
                Ok(mut p) => {
                    let (rank, pid) = (p.rank, p.pid);
                    if let Some(fd) = p.stdin.take() {
                        let feeder = PipeFeeder::start(
                            rank,
                            std::fs::File::from(fd),
                            self.input_taken_tx.clone(),
                        );
                        self.feeders.push((rank, feeder));
                    }
                    self.set.add(p);
                    self.send(&FromAgent::Started { rank, pid });
                }
                Err(e) => {
                    self.send(&FromAgent::NotStarted {
                        rank: r.rank,
                        exit_code: 126,
                        message: e.message().to_owned(),
                    });
                    return;
                }
            }
        }
    }

    /// Relays output and exits until the launcher says stop, is gone, or a signal comes.
    fn watch(&mut self, commands: &Receiver<Option<ToAgent>>, signals: &SignalWatch) -> End {
        loop {
            let mut out = Vec::new();
            self.set.pump(TICK, &mut |rank, kind, chunk| {
                if let Chunk::Data(d) = chunk {
                    out.push(output_message(rank, kind, d));
                }
            });
            for m in &out {
                self.send(m);
            }
            while let Ok((rank, bytes)) = self.input_taken.try_recv() {
                // A chunk is at most 64 KiB.
                let bytes = u32::try_from(bytes).unwrap_or(u32::MAX);
                self.send(&FromAgent::InputTaken { rank, bytes });
            }
            for i in self.set.check() {
                let r = &self.set.ranks[i];
                let (signal, value) = match r.exit.expect("checked ranks have exited") {
                    RankExit::Code(c) => (false, c),
                    RankExit::Signal(s) => (true, s),
                };
                let msg = FromAgent::Exited {
                    rank: r.rank,
                    pid: r.pid,
                    signal,
                    value,
                };
                self.send(&msg);
            }
            if self.broken {
                return End::Lost;
            }
            if let Some(sig) = signals.pending() {
                return End::Signal(sig);
            }
            // Every message waiting (input comes in many), then back to the ranks.
            loop {
                match commands.try_recv() {
                    Ok(Some(ToAgent::Stop)) => return End::Stop,
                    Ok(Some(ToAgent::Input { rank, data })) => {
                        if let Some(i) = self.feeders.iter().position(|(r, _)| *r == rank) {
                            let end = data.is_empty();
                            self.feeders[i].1.feed(data);
                            if end {
                                self.feeders.swap_remove(i);
                            }
                        }
                    }
                    // A second Start is a launcher bug; ignoring it keeps the ranks consistent.
                    Ok(Some(ToAgent::Start { .. })) => {}
                    Err(TryRecvError::Empty) => break,
                    Ok(None) | Err(TryRecvError::Disconnected) => return End::Lost,
                }
            }
        }
    }
}
