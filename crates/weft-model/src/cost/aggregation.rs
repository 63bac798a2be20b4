//! The aggregation-tree cost model and its radix choice (seed 001 §2.2, §3.1; ALGORITHMS.md
//! §3): `F(k) = (a + b·k) · log_k P`, minimised where `k·(ln k − 1) = a/b`, and the range of
//! radices whose cost stays within ε of the minimum (the paper's Table 2).
//!
//! Our reading of §2.2 (the extracted text lost the formulas): aggregating one level of a
//! tree costs the link time of one unicast path, `hops × link latency`, once per level (all
//! children send in parallel), plus, at the parent, for each of its k children's packets the
//! matching time θ, the store-and-forward time and the reduction time S·γ of an S-byte
//! packet. So `a = link_latency × hops_per_level` and `b = θ + (store_forward + γ) × S`. The
//! paper's "per aggregation packet" wording puts θ in b (per child), not in a; with the
//! paper's a = 1.12 µs, b = 0.01 µs this means hardware matching of about 10 ns per packet.
//!
//! Pure arithmetic over `weft-core` errors; no I/O.

use serde::{Deserialize, Serialize};
use std::fmt::Write;
use weft_core::{bail, units::format_bytes, Result};

/// The paper's tolerance for "about as fast as the optimum": 0.1 µs.
pub const DEFAULT_EPSILON_US: f64 = 0.1;

/// `F(k) = (a + b·k) · log_k P` in µs: the modelled aggregation time of a k-ary tree over
/// `procs` processes. 0 for a single process; infinite for `k < 2` (no such tree).
pub fn f_us(a_us: f64, b_us: f64, procs: u32, k: u32) -> f64 {
    if procs <= 1 {
        return 0.0;
    }
    if k < 2 {
        return f64::INFINITY;
    }
    (a_us + b_us * k as f64) * (procs as f64).ln() / (k as f64).ln()
}

/// The radix that minimises `F(k)` and the range of radices within ε of it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RadixChoice {
    /// Integer radix with the lowest `F(k)` (ties: the smaller radix).
    pub k_opt: u32,
    /// `F(k_opt)` in µs.
    pub f_opt_us: f64,
    /// Smallest radix with `F(k) − F(k_opt) ≤ ε`.
    pub k_min: u32,
    /// Largest radix with `F(k) − F(k_opt) ≤ ε`.
    pub k_max: u32,
}

/// Solves `k·(ln k − 1) = c` for `c ≥ 0` (the left side increases for k > 1, so the root is
/// unique and at least e).
fn stationary_k(c: f64) -> f64 {
    let g = |k: f64| k * (k.ln() - 1.0);
    let mut lo = std::f64::consts::E;
    let mut hi = lo * 2.0;
    while g(hi) < c && hi < 1e300 {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if g(mid) < c {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// [`optimal_radix_eps`] with the paper's ε of 0.1 µs.
pub fn optimal_radix(a_us: f64, b_us: f64, procs: u32) -> RadixChoice {
    optimal_radix_eps(a_us, b_us, procs, DEFAULT_EPSILON_US)
}

/// The optimal radix for costs `a_us`, `b_us` over `procs` processes, with the widest range
/// of radices (containing it) whose `F` is within `eps_us` of the optimum. Invalid input
/// (negative or non-finite numbers, no process) gives `k = 2` with `f_opt_us = NaN`; use
/// [`checked_optimal_radix`] to get the error instead.
pub fn optimal_radix_eps(a_us: f64, b_us: f64, procs: u32, eps_us: f64) -> RadixChoice {
    checked_optimal_radix(a_us, b_us, procs, eps_us).unwrap_or(RadixChoice {
        k_opt: 2,
        f_opt_us: f64::NAN,
        k_min: 2,
        k_max: 2,
    })
}

/// [`optimal_radix_eps`] that reports invalid input as an `InvalidArgument` error.
pub fn checked_optimal_radix(a_us: f64, b_us: f64, procs: u32, eps_us: f64) -> Result<RadixChoice> {
    for (name, v) in [("a_us", a_us), ("b_us", b_us), ("eps_us", eps_us)] {
        if !v.is_finite() || v < 0.0 {
            bail!(
                InvalidArgument,
                "radix choice: {name} = {v} (need a finite value >= 0)"
            );
        }
    }
    if procs == 0 {
        bail!(
            InvalidArgument,
            "radix choice: procs = 0 (need at least one process)"
        );
    }
    // A tree needs k >= 2; with at most 2 processes, 2 is the only useful radix.
    let top = procs.max(2);
    let f = |k: u32| f_us(a_us, b_us, procs, k);
    let k_opt = if procs <= 2 {
        2
    } else if b_us == 0.0 {
        // F only falls as k grows: one level with every process a child of the root.
        top
    } else {
        let k_real = stationary_k(a_us / b_us);
        let lo = (k_real.floor() as u64).clamp(2, top as u64) as u32;
        let hi = (k_real.ceil() as u64).clamp(2, top as u64) as u32;
        if f(hi) < f(lo) {
            hi
        } else {
            lo
        }
    };
    let f_opt = f(k_opt);
    let within = |k: u32| f(k) - f_opt <= eps_us;
    // F falls up to k_opt and rises after it, so each side is one interval: bisect.
    let (mut lo, mut hi) = (2u32, k_opt);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if within(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let k_min = lo;
    let (mut lo, mut hi) = (k_opt, top);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if within(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Ok(RadixChoice {
        k_opt,
        f_opt_us: f_opt,
        k_min,
        k_max: lo,
    })
}

/// Machine parameters of the aggregation model (seed 001 Table 1), per aggregation packet.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AggregationParams {
    /// Matching time of one aggregation packet at the receiving node (θ), µs.
    pub theta_us: f64,
    /// Store-and-forward time per byte of a packet, µs.
    pub store_forward_us_per_byte: f64,
    /// Reduction time per byte (γ), µs.
    pub gamma_us_per_byte: f64,
    /// Latency of one link (l), µs.
    pub link_latency_us: f64,
    /// Links on the unicast path between a child and its parent (δ).
    pub hops_per_level: f64,
}

/// One row of the radix table: the choice for one packet size.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RadixRow {
    /// Aggregation packet size.
    pub bytes: u64,
    /// Per-level fixed cost a, µs.
    pub a_us: f64,
    /// Per-child cost b, µs.
    pub b_us: f64,
    /// Optimal radix and its ε-range.
    pub choice: RadixChoice,
}

impl AggregationParams {
    /// `(a, b)` in µs for packets of `bytes` (see the module notes for the reading):
    /// `a = link_latency × hops_per_level`, `b = θ + (store_forward + γ) × bytes`.
    pub fn a_b_for_bytes(&self, bytes: u64) -> (f64, f64) {
        let a = self.link_latency_us * self.hops_per_level;
        let b = self.theta_us
            + (self.store_forward_us_per_byte + self.gamma_us_per_byte) * bytes as f64;
        (a, b)
    }

    /// Checks every parameter is finite and non-negative, naming the first that is not.
    pub fn validate(&self) -> Result<()> {
        for (name, v) in [
            ("theta_us", self.theta_us),
            ("store_forward_us_per_byte", self.store_forward_us_per_byte),
            ("gamma_us_per_byte", self.gamma_us_per_byte),
            ("link_latency_us", self.link_latency_us),
            ("hops_per_level", self.hops_per_level),
        ] {
            if !v.is_finite() || v < 0.0 {
                bail!(
                    InvalidArgument,
                    "aggregation parameters: {name} = {v} (need a finite value >= 0)"
                );
            }
        }
        Ok(())
    }

    /// The radix table for `weft plan radix-table` (like the paper's Table 2): for each
    /// packet size, a and b, the optimal radix and the radices within `eps_us` of it.
    pub fn radix_table(&self, procs: u32, sizes: &[u64], eps_us: f64) -> Result<Vec<RadixRow>> {
        self.validate()?;
        sizes
            .iter()
            .map(|&bytes| {
                let (a_us, b_us) = self.a_b_for_bytes(bytes);
                Ok(RadixRow {
                    bytes,
                    a_us,
                    b_us,
                    choice: checked_optimal_radix(a_us, b_us, procs, eps_us)?,
                })
            })
            .collect()
    }
}

/// Prints a radix table as aligned text columns.
pub fn format_radix_table(rows: &[RadixRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>8} {:>9} {:>9} {:>6} {:>10} {:>6} {:>6}",
        "bytes", "a_us", "b_us", "k_opt", "F_us", "k_min", "k_max"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:>8} {:>9.4} {:>9.4} {:>6} {:>10.4} {:>6} {:>6}",
            format_bytes(r.bytes),
            r.a_us,
            r.b_us,
            r.choice.k_opt,
            r.choice.f_opt_us,
            r.choice.k_min,
            r.choice.k_max
        );
    }
    out
}
