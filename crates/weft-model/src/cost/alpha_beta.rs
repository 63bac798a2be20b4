//! The Hockney (alpha-beta) model of one lane: a message of n bytes takes
//! `latency + n · time per byte`. Pure arithmetic; depends on nothing.

use serde::{Deserialize, Serialize};

/// One lane's cost: fixed latency plus a time per byte (the inverse bandwidth).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AlphaBeta {
    /// Start-up time of one message, in nanoseconds (alpha).
    pub latency_ns: f64,
    /// Time per byte, in nanoseconds (beta = 1 / bandwidth).
    pub ns_per_byte: f64,
}

impl AlphaBeta {
    /// A lane from its latency and bandwidth in bytes per second.
    pub fn from_bandwidth(latency_ns: f64, bandwidth_bytes_per_s: f64) -> AlphaBeta {
        AlphaBeta {
            latency_ns,
            ns_per_byte: 1e9 / bandwidth_bytes_per_s,
        }
    }

    /// Time to move one message of `bytes`, in nanoseconds.
    pub fn time_ns(&self, bytes: u64) -> f64 {
        self.latency_ns + self.ns_per_byte * bytes as f64
    }

    /// Time to move `bytes` as part of a message already started (no latency), in
    /// nanoseconds; used for fractional shares of a buffer.
    pub fn bytes_ns(&self, bytes: f64) -> f64 {
        self.ns_per_byte * bytes
    }

    /// Bandwidth in bytes per second (infinite for a zero time per byte).
    pub fn bandwidth_bytes_per_s(&self) -> f64 {
        1e9 / self.ns_per_byte
    }
}
