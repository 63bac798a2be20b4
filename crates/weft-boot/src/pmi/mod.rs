//! PMI-1 and PMI-2 clients, written from the protocols' descriptions (Flux RFC 13 for
//! PMI-1, MPICH's PMI-2 wire protocol as Slurm and Hydra serve it): [`Pmi1`] and [`Pmi2`]
//! speak to the server on the descriptor in `PMI_FD` (or the TCP address in `PMI_PORT`) and
//! share [`PmiBoot`], which maps weft's per-rank records onto the job's key-value space.
//!
//! Every wait is bounded: a request waits `request_timeout` for its answer, a fence the
//! caller's timeout. A reply of the wrong form is a protocol error quoting it.

mod conn;
pub mod mapping;
mod pmi1;
mod pmi2;
pub mod text;

pub(crate) use conn::Conn;
pub use pmi1::Pmi1;
pub(crate) use pmi2::Offer;
pub use pmi2::Pmi2;

use crate::boot::{Backend, Boot, JobInfo};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use text::{decode_value, encode_value};
use weft_core::{Error, ErrorKind, Result};

/// Prefix of every key weft puts, keeping clear of the reserved `PMI_` names.
const KEY_PREFIX: &str = "weft:";

/// One protocol's operations on the job's key-value space ([`Pmi1`], [`Pmi2`]).
pub trait Protocol: Send + Sync {
    /// Stores `value` (already encoded) under `key`.
    fn kvs_put(&self, key: &str, value: &str, deadline: Instant) -> Result<()>;
    /// Makes every rank's puts visible to all (collective).
    fn kvs_fence(&self, deadline: Instant) -> Result<()>;
    /// The value under `key`, `None` when the server has none.
    fn kvs_get(&self, key: &str, deadline: Instant) -> Result<Option<String>>;
    /// Asks the server to end the job; no answer is awaited.
    fn send_abort(&self, code: i32, message: &str, deadline: Instant) -> Result<()>;
    /// Closes the session.
    fn finish(&self, deadline: Instant) -> Result<()>;
    /// Longest key and value the server accepts.
    fn limits(&self) -> (usize, usize);
    /// The protocol's name for messages.
    fn name(&self) -> &'static str;
}

/// A rank's PMI session: the job as the server described it and the protocol to talk in.
pub struct PmiBoot<P> {
    proto: P,
    job: JobInfo,
    backend: Backend,
    request_timeout: Duration,
    /// Serialises requests (the protocols are lock-step).
    busy: Mutex<()>,
    finalized: AtomicBool,
}

impl<P: Protocol> PmiBoot<P> {
    pub(crate) fn new(
        proto: P,
        job: JobInfo,
        backend: Backend,
        request_timeout: Duration,
    ) -> PmiBoot<P> {
        PmiBoot {
            proto,
            job,
            backend,
            request_timeout,
            busy: Mutex::new(()),
            finalized: AtomicBool::new(false),
        }
    }

    fn key(&self, rank: u32, key: &str) -> Result<String> {
        let k = format!("{KEY_PREFIX}{key}/{rank}");
        let (max_key, _) = self.proto.limits();
        // Room for a chunk suffix (#NN).
        if k.len() + 4 > max_key {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{}: key {k:?} is longer than the server's limit of {max_key} bytes",
                    self.proto.name()
                ),
            ));
        }
        Ok(k)
    }

    fn request_deadline(&self) -> Instant {
        Instant::now() + self.request_timeout
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.busy.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<P: Protocol> Boot for PmiBoot<P> {
    fn backend(&self) -> Backend {
        self.backend
    }

    fn job(&self) -> &JobInfo {
        &self.job
    }

    fn put(&self, key: &str, value: &[u8]) -> Result<()> {
        let k = self.key(self.job.rank, key)?;
        let encoded = encode_value(value);
        let (_, max_value) = self.proto.limits();
        let _g = self.lock();
        let deadline = self.request_deadline();
        if encoded.len() <= max_value {
            return self.proto.kvs_put(&k, &encoded, deadline);
        }
        // Longer values go in chunks; the key itself names how many ('#' never starts an
        // encoded value).
        let chunks: Vec<&str> = encoded
            .as_bytes()
            .chunks(max_value.max(1))
            .map(|c| std::str::from_utf8(c).expect("encoded values are ASCII"))
            .collect();
        self.proto
            .kvs_put(&k, &format!("#{}", chunks.len()), deadline)?;
        for (i, c) in chunks.iter().enumerate() {
            self.proto.kvs_put(&format!("{k}#{}", i + 1), c, deadline)?;
        }
        Ok(())
    }

    fn fence(&self, timeout: Duration) -> Result<()> {
        let _g = self.lock();
        self.proto.kvs_fence(Instant::now() + timeout).map_err(|e| {
            e.context(format!(
                "rank {}: {} fence",
                self.job.rank,
                self.proto.name()
            ))
        })
    }

    fn get(&self, rank: u32, key: &str, _timeout: Duration) -> Result<Vec<u8>> {
        let k = self.key(rank, key)?;
        let _g = self.lock();
        let deadline = self.request_deadline();
        let missing = || {
            Error::new(
                ErrorKind::Protocol,
                format!(
                    "{}: rank {rank} has no value {key:?} after the fence (did every rank start the same program?)",
                    self.proto.name()
                ),
            )
        };
        let first = self.proto.kvs_get(&k, deadline)?.ok_or_else(missing)?;
        let text = match first.strip_prefix('#') {
            None => first,
            Some(n) => {
                let n: usize = n.parse().map_err(|_| {
                    Error::new(
                        ErrorKind::Protocol,
                        format!("{}: value of {k:?} is {first:?}", self.proto.name()),
                    )
                })?;
                let mut all = String::new();
                for i in 1..=n {
                    all.push_str(
                        &self
                            .proto
                            .kvs_get(&format!("{k}#{i}"), deadline)?
                            .ok_or_else(missing)?,
                    );
                }
                all
            }
        };
        decode_value(&text)
            .map_err(|e| e.context(format!("{}: rank {rank}'s {key:?}", self.proto.name())))
    }

    fn abort(&self, code: i32, message: &str) -> Result<()> {
        // Not under the request lock: another thread may be waiting in a fence.
        self.proto
            .send_abort(code, message, Instant::now() + Duration::from_secs(5))
    }

    fn finalize(&self, timeout: Duration) -> Result<()> {
        if self.finalized.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let _g = self.lock();
        let deadline = Instant::now() + timeout;
        self.proto
            .kvs_fence(deadline)
            .and_then(|_| self.proto.finish(deadline))
            .map_err(|e| {
                e.context(format!(
                    "rank {}: {} finalize",
                    self.job.rank,
                    self.proto.name()
                ))
            })
    }
}

/// The environment variable `name` as an unsigned number, `None` when unset; a malformed
/// value is an error naming it.
pub(crate) fn env_uint(var: &dyn Fn(&str) -> Option<String>, name: &str) -> Result<Option<u32>> {
    match var(name) {
        None => Ok(None),
        Some(t) => t.trim().parse::<u32>().map(Some).map_err(|_| {
            Error::new(
                ErrorKind::Config,
                format!("{name}={t:?}: expected a non-negative integer"),
            )
        }),
    }
}

/// Checks that the rank and size a server reported agree with the environment's.
pub(crate) fn agree(
    var: &dyn Fn(&str) -> Option<String>,
    source: &str,
    rank: u32,
    size: u32,
) -> Result<()> {
    for (name, got) in [("PMI_RANK", rank), ("PMI_SIZE", size)] {
        if let Some(env) = env_uint(var, name)? {
            if env != got {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!(
                        "{source} says {} {got} but {name}={env}: the launcher's sources disagree",
                        if name == "PMI_RANK" { "rank" } else { "size" }
                    ),
                ));
            }
        }
    }
    Ok(())
}
