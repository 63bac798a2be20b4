//! Bootstrap key-value store of a weft job: how ranks exchange addresses and meet before any
//! transport is up.
//!
//! [`Store`] is the interface the runtime uses. [`MemStore`] serves thread-per-rank tests in
//! one process; [`TcpStoreServer`] (hosted by the launcher) and [`TcpStoreClient`] (one per
//! rank) serve real jobs over TCP, every connection authenticated with the job's secret by a
//! mutual challenge-response ([`auth`]). This crate depends only on weft-core: it knows
//! nothing of transports, the runtime or how ranks are spawned.

pub mod auth;
mod client;
pub mod knobs;
mod mem;
mod server;
pub mod sock;
mod table;
pub mod wire;

pub use client::TcpStoreClient;
pub use mem::MemStore;
pub use server::{
    EventSink, ServerEvent, TcpStoreServer, HANDSHAKE_TIMEOUT, MAX_CONNECTIONS, REFUSALS_REPORTED,
    REFUSAL_REPORT_EVERY,
};
pub use table::AbortRecord;

use std::time::{Duration, Instant};
use weft_core::{Error, ErrorKind, Result};

/// The key-value store ranks share during bootstrap.
pub trait Store: Send + Sync {
    /// Stores `value` under `key`, replacing any earlier value.
    fn put(&self, key: &str, value: &[u8]) -> Result<()>;
    /// Waits until `key` exists (or `timeout`), then returns its value.
    fn get(&self, key: &str, timeout: Duration) -> Result<Vec<u8>>;
    /// Returns when `count` callers have entered barrier `name` (or errors on timeout).
    /// A barrier name can be used again once it has completed.
    fn barrier(&self, name: &str, count: u32, timeout: Duration) -> Result<()>;
    /// Asks the launcher to end the job with `code`, printing `message` (MPI_Abort). The
    /// in-memory store only records it.
    fn abort(&self, code: i32, message: &str) -> Result<()>;
}

/// Connects to the job's store named by the environment the launcher sets:
/// `WEFT_BOOT_ADDR`, `WEFT_JOB_SECRET` (hex) and, for abort messages, `WEFT_RANK`.
/// Returns `None` when `WEFT_BOOT_ADDR` is unset (a singleton run without a launcher).
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
