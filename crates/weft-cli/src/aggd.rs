//! `weft aggd`: the aggregation manager (docs/aggd.md). It holds a fabric and each switch's
//! free aggregation entries (`weft_model::plan::EntryPool`) and answers authenticated
//! requests over TCP (`weft::agg` is the protocol): a tree for a communicator (type II
//! within the entry limits, or type I with the reason), release, status.
//!
//! One thread per connection. A connection must prove the secret within
//! [`HANDSHAKE_TIMEOUT`], and at most [`MAX_CONNECTIONS`] are served at once (more are
//! closed at once with a line on stderr), so a stranger holding sockets open cannot starve
//! the jobs; refusal lines are throttled (`weft_core::handshake::RefusalLog`) so a flood of
//! strangers cannot flood the manager's output. A frame that is too long or not a request gets an error reply and the
//! connection is dropped; others are not disturbed. Trees are named per connection and
//! released when it ends.

use crate::plan::fabric::FabricOpts;
use std::collections::HashSet;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use weft::agg::{read_frame, server_handshake, write_frame, Refusal, RefusalLog, Reply, Request};
use weft_core::{Error, ErrorKind, Result};
use weft_model::plan::{AllocConfig, EntryPool, Method};

/// How long a new connection has to prove the secret.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the rest of a frame may take once its length arrived.
const FRAME_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once.
const MAX_CONNECTIONS: usize = 256;

/// Arguments of `weft aggd`.
#[derive(clap::Args)]
pub(crate) struct AggdArgs {
    #[command(flatten)]
    fabric: FabricOpts,
    /// Address to listen on (port 0: any free port; the address is printed).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: String,
    /// File holding the shared secret in hex (at least 16 bytes); must not be readable or
    /// writable by group or others.
    #[arg(long)]
    key_file: PathBuf,
    /// Aggregation entries per switch.
    #[arg(long, default_value_t = 8)]
    entries: u32,
    /// Most children of a switch in a tree (default: the switch's port count).
    #[arg(long)]
    degree: Option<u32>,
    /// physical or mincost.
    #[arg(long, default_value = "mincost")]
    method: String,
}

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

pub(crate) fn run(args: AggdArgs) -> i32 {
    match serve(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("weft aggd: {e}");
            2
        }
    }
}

fn serve(args: AggdArgs) -> Result<()> {
    let key = weft::agg::read_key_file(&args.key_file)?;
    if let Some(d) = args.degree {
        crate::plan::check_degree(d)?;
    }
    if args.entries == 0 {
        return Err(invalid("--entries: must be at least 1".into()));
    }
    let method = Method::parse(&args.method)?;
    let fabric = args.fabric.load()?;
    let pool = Arc::new(Mutex::new(EntryPool::new(
        fabric,
        AllocConfig::new(args.entries, args.degree, method),
    )));
    let listener = TcpListener::bind(&args.listen)
        .map_err(|e| Error::io(format!("listening on {}", args.listen), e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io("listening address", e))?;
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "weft aggd: listening on {addr}");
        let _ = out.flush();
    }
    let key: Arc<[u8]> = key.into();
    let active = Arc::new(AtomicUsize::new(0));
    let refusals = Arc::new(RefusalLog::new());
    let next_id = AtomicU64::new(0);
    for conn in listener.incoming() {
        let stream = match conn {
            Ok(s) => s,
            Err(e) => {
                eprintln!("weft aggd: accept: {e}");
                continue;
            }
        };
        let peer = stream
            .peer_addr()
            .map_or_else(|_| "?".to_string(), |a| a.to_string());
        if active.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            active.fetch_sub(1, Ordering::AcqRel);
            if let Some(why) = refusals.refuse(format!("{MAX_CONNECTIONS} connections already")) {
                eprintln!("weft aggd: {peer}: closed: {why}");
            }
            continue;
        }
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        let (pool, key, active, refusals) =
            (pool.clone(), key.clone(), active.clone(), refusals.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("aggd-{id}"))
            .spawn(move || {
                connection(stream, id, &peer, &key, &pool, &refusals);
                active.fetch_sub(1, Ordering::AcqRel);
            });
        if let Err(e) = spawned {
            eprintln!("weft aggd: no thread for a connection: {e}");
        }
    }
    Ok(())
}

/// Serves one connection; releases its trees when it ends. A connection that does not prove
/// the secret is reported through `refusals` (throttled).
fn connection(
    mut stream: TcpStream,
    id: u64,
    peer: &str,
    key: &[u8],
    pool: &Mutex<EntryPool>,
    refusals: &RefusalLog,
) {
    let _ = stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT));
    let _ = stream.set_write_timeout(Some(HANDSHAKE_TIMEOUT));
    let _ = stream.set_nodelay(true);
    if let Err(Refusal(why)) = server_handshake(&mut stream, key) {
        if let Some(why) = refusals.refuse(why) {
            eprintln!("weft aggd: {peer}: refused: {why}");
        }
        return;
    }
    let mut held: HashSet<String> = HashSet::new();
    let prefix = format!("{id}/");
    loop {
        // An authenticated client may keep its lease open as long as it likes; once a frame
        // begins, the rest must come in time.
        let _ = stream.set_read_timeout(None);
        let frame = {
            let mut timed = FrameReader {
                stream: &mut stream,
                started: false,
            };
            read_frame(&mut timed)
        };
        let body = match frame {
            Ok(Some(b)) => b,
            Ok(None) => break,
            Err(e) => {
                let _ = reply(
                    &mut stream,
                    &Reply::Error {
                        message: e.message().to_string(),
                    },
                );
                eprintln!("weft aggd: {peer}: dropped: {}", e.message());
                break;
            }
        };
        let request: Request = match serde_json::from_slice(&body) {
            Ok(r) => r,
            Err(e) => {
                let message = format!("not a request: {e}");
                let _ = reply(
                    &mut stream,
                    &Reply::Error {
                        message: message.clone(),
                    },
                );
                eprintln!("weft aggd: {peer}: dropped: {message}");
                break;
            }
        };
        let answer = {
            let mut pool = pool.lock().unwrap_or_else(|p| p.into_inner());
            match request {
                Request::Allocate { comm, hosts } => {
                    match pool.allocate(&format!("{prefix}{comm}"), &hosts) {
                        Ok(grant) => {
                            if matches!(grant, weft_model::plan::Grant::Type2(_)) {
                                held.insert(comm);
                            }
                            Reply::Tree { grant }
                        }
                        Err(message) => Reply::Error { message },
                    }
                }
                Request::Release { comm } => {
                    held.remove(&comm);
                    Reply::Released {
                        held: pool.release(&format!("{prefix}{comm}")),
                    }
                }
                Request::Status => Reply::Status {
                    status: pool.status(),
                },
            }
        };
        if reply(&mut stream, &answer).is_err() {
            break;
        }
    }
    let mut pool = pool.lock().unwrap_or_else(|p| p.into_inner());
    for comm in held {
        pool.release(&format!("{prefix}{comm}"));
    }
}

fn reply(stream: &mut TcpStream, answer: &Reply) -> Result<()> {
    let body = serde_json::to_vec(answer)
        .map_err(|e| Error::new(ErrorKind::Protocol, format!("encoding a reply: {e}")))?;
    write_frame(stream, &body)
}

/// Reads from the stream, turning on [`FRAME_TIMEOUT`] once a frame's first byte arrived.
struct FrameReader<'s> {
    stream: &'s mut TcpStream,
    started: bool,
}

impl std::io::Read for FrameReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.stream.read(buf)?;
        if !self.started && n > 0 {
            self.started = true;
            self.stream.set_read_timeout(Some(FRAME_TIMEOUT))?;
        }
        Ok(n)
    }
}
