//! Bootstrap of a weft job: how a rank learns who it is and exchanges addresses with the
//! others before any transport is up, whichever launcher started it.
//!
//! [`Boot`] is the interface the runtime uses; [`select`] picks a back end from the
//! environment: weft's own store ([`StoreBoot`] over a [`Store`]), PMIx ([`pmix`], the
//! library loaded at run time) or the PMI-2 and PMI-1 wire protocols ([`pmi`]). The store
//! itself: [`MemStore`] serves thread-per-rank tests in one process; [`TcpStoreServer`]
//! (hosted by the launcher) and [`TcpStoreClient`] (one per rank) serve real jobs over TCP,
//! every connection authenticated with the job's secret by a mutual challenge-response
//! ([`auth`]). This crate depends only on weft-core (and libc, and libloading for PMIx): it
//! knows nothing of transports, the runtime or how ranks are spawned.

pub mod auth;
mod boot;
mod client;
pub mod knobs;
mod mem;
pub mod pmi;
pub mod pmix;
pub mod select;
mod server;
pub mod sock;
mod table;
pub mod wire;

pub use boot::{Backend, Boot, JobInfo, StoreBoot};
pub use client::TcpStoreClient;
pub use mem::MemStore;
pub use server::{
    EventSink, ServerEvent, TcpStoreServer, HANDSHAKE_TIMEOUT, MAX_CONNECTIONS, REFUSALS_REPORTED,
    REFUSAL_REPORT_EVERY,
};
pub use table::AbortRecord;

use std::time::{Duration, Instant};
use weft_core::{Error, ErrorKind, Result};

/// Variables a launcher sets itself for each rank of the job it starts: who the rank is,
/// where its job's store is and the job's secret, the launcher's path, the rank's program
/// (a job of several) and its host's place in the job's torus. Never passed on from the
/// environment of whoever starts a job (a job started from inside a rank, `weft run` in a
/// script or MPI_Comm_spawn, must not inherit its parent's identity or secret); declared
/// here, the lowest layer that both the launcher and the runtime see.
pub const PER_RANK_VARS: &[&str] = &[
    "WEFT_RANK",
    "WEFT_SIZE",
    "WEFT_LOCAL_RANK",
    "WEFT_LOCAL_SIZE",
    "WEFT_NODE_ID",
    "WEFT_BOOT_ADDR",
    "WEFT_JOB_ID",
    "WEFT_JOB_SECRET",
    "WEFT_RUN_PROGRAM",
    "WEFT_APPNUM",
    weft_core::knob::TORUS_DIMS,
    weft_core::knob::TORUS_COORDS,
];

/// The key-value store ranks share during bootstrap.
pub trait Store: Send + Sync {
    /// Stores `value` under `key`, replacing any earlier value.
    fn put(&self, key: &str, value: &[u8]) -> Result<()>;
    /// Waits until `key` exists (or `timeout`), then returns its value.
    fn get(&self, key: &str, timeout: Duration) -> Result<Vec<u8>>;
    /// Returns when `count` callers have entered barrier `name` (or errors on timeout).
    /// A barrier name can be used again once it has completed.
    fn barrier(&self, name: &str, count: u32, timeout: Duration) -> Result<()>;
    /// Waits until every key of `keys` exists (or `timeout`, for all of them together), then
    /// returns their values in order. The TCP store answers in one round trip.
    fn get_many(&self, keys: &[String], timeout: Duration) -> Result<Vec<Vec<u8>>> {
        let deadline = Instant::now() + timeout;
        keys.iter()
            .map(|k| self.get(k, deadline.saturating_duration_since(Instant::now())))
            .collect()
    }
    /// Asks the launcher to end the job with `code`, printing `message` (MPI_Abort). The
    /// in-memory store only records it.
    fn abort(&self, code: i32, message: &str) -> Result<()>;
}

/// Connects to the job's store named by the environment the launcher sets:
/// `WEFT_BOOT_ADDR`, `WEFT_JOB_SECRET` (hex) and, for abort messages, `WEFT_RANK`.
/// Returns `None` when `WEFT_BOOT_ADDR` is unset (a singleton run without a launcher).
#[allow(
    clippy::disallowed_methods,
    reason = "the variables weft run sets for its ranks describe the job, they are not settings"
)]
pub fn client_from_env() -> Result<Option<TcpStoreClient>> {
    client_from_vars(|name| std::env::var(name).ok())
}

/// [`client_from_env`] over any variable lookup (tests pass a map).
pub fn client_from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<TcpStoreClient>> {
    let addr = match var("WEFT_BOOT_ADDR") {
        Some(a) if !a.trim().is_empty() => a.trim().to_owned(),
        _ => return Ok(None),
    };
    let secret_hex = var("WEFT_JOB_SECRET").ok_or_else(|| {
        Error::new(
            ErrorKind::Config,
            "WEFT_BOOT_ADDR is set but WEFT_JOB_SECRET is not (start ranks with weft run)",
        )
    })?;
    let secret = auth::decode_hex("WEFT_JOB_SECRET", &secret_hex)?;
    let rank = match var("WEFT_RANK") {
        Some(r) => Some(r.trim().parse::<u32>().map_err(|_| {
            Error::new(
                ErrorKind::Config,
                format!("WEFT_RANK={r:?}: expected a non-negative integer"),
            )
        })?),
        None => None,
    };
    let wait_ms = match var(knobs::BOOT_CONNECT_TIMEOUT_MS) {
        Some(v) => v.trim().parse::<u64>().map_err(|_| {
            Error::new(
                ErrorKind::Config,
                format!(
                    "{}={v:?}: expected a number of milliseconds",
                    knobs::BOOT_CONNECT_TIMEOUT_MS
                ),
            )
        })?,
        None => knobs::BOOT_CONNECT_TIMEOUT_MS_DEFAULT,
    };
    let deadline = Instant::now() + Duration::from_millis(wait_ms);
    let client = TcpStoreClient::connect_retry(&addr, &secret, deadline)?;
    Ok(Some(match rank {
        Some(r) => client.with_rank(r),
        None => client,
    }))
}
