//! Type I vs type II, per message size (seed 001 §6.2.1; ALGORITHMS.md §4 last item).
//!
//! Type I: the radix model (`crate::cost`) turns the message size into the per-level link
//! cost a = l·δ and the per-child cost b = θ + (store-and-forward + γ)·S, and picks the
//! optimal radix k; we build the hierarchical k-nomial tree with that k on the real
//! placement and charge `T_I = radius·l + height·k·b` — F(k) = (a + b·k)·log_k P with the
//! placed tree's real radius and height in place of δ·log_k P and log_k P.
//!
//! Type II: the minimum-cost tree on the fabric (root by hop count, switch port counts as
//! degree limits). Packets travel the physical links once (`hops·l`); every level of A
//! handles up to its widest switch's children, each costing the switch's matching time plus
//! reducing S bytes on the switch ALU: `T_II = hops·l + height_A·children_max·(θ_sw + γ_sw·S)`.
//!
//! Small messages are link-bound and type II paths are short: type II wins. Large messages
//! are compute-bound and a switch reduces all its children's data serially: type I with a
//! small radix wins. The parameters are assumptions (defaults below), not measurements.
//! No I/O.

use super::links::{analyse_links, TreeShape};
use super::place::Placement;
use super::type2::{min_cost_tree, Type2Planner};
use crate::cost::{checked_optimal_radix, AggregationParams};
use crate::fabric::Fabric;
use weft_core::{Error, ErrorKind, Result};

/// NIC-side parameters chosen so that 8-byte packets reproduce the paper's barrier/bcast
/// costs a = 1.12 µs and b = 0.01 µs (§3.1): 4 links of 0.28 µs per level, 8 ns matching,
/// 0.1 ns/B store-and-forward (10 GB/s) and 0.15 ns/B reduction. Assumptions, not
/// measurements: the paper's Table 1 values were lost in extraction.
pub fn sunway_like_params() -> AggregationParams {
    AggregationParams {
        theta_us: 0.008,
        store_forward_us_per_byte: 0.0001,
        gamma_us_per_byte: 0.00015,
        link_latency_us: 0.28,
        hops_per_level: 4.0,
    }
}

/// Switch-side costs of type II aggregation, per child packet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SwitchCost {
    /// Matching time of one child packet in a switch, µs.
    pub theta_us: f64,
    /// Reduction cost per byte of one child packet on the switch ALU, µs.
    pub us_per_byte: f64,
}

impl Default for SwitchCost {
    /// The NIC's per-packet costs (8 ns matching, 0.15 ns/B reduction): type II then loses
    /// at large sizes only because one switch reduces many children one after another,
    /// where a type I tree of small radix spreads the work over many NICs.
    fn default() -> Self {
        SwitchCost {
            theta_us: 0.008,
            us_per_byte: 0.00015,
        }
    }
}

/// The modelled cost of both tree types at one message size.
#[derive(Clone, Debug, PartialEq)]
pub struct ChoiceRow {
    /// Message size per rank.
    pub bytes: u64,
    /// Radix the model picks for the type I tree.
    pub k: u32,
    /// Height of the type I tree.
    pub type1_height: u32,
    /// Radius (links) of the type I tree.
    pub type1_radius: u32,
    /// Modelled type I time, µs.
    pub type1_us: f64,
    /// Switches kept by the minimum-cost type II tree.
    pub type2_switches: u32,
    /// Height of the type II tree.
    pub type2_height: u32,
    /// Modelled type II time, µs.
    pub type2_us: f64,
    /// `true` when type II is cheaper.
    pub pick_type2: bool,
}

/// Evaluates both tree types for every size; also returns the crossover (the first size at
/// which the pick changes from type II to type I), if any.
pub fn choose(
    fabric: &Fabric,
    placement: &Placement,
    params: &AggregationParams,
    switch: &SwitchCost,
    sizes: &[u64],
    epsilon_us: f64,
) -> Result<(Vec<ChoiceRow>, Option<u64>)> {
    if sizes.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "sizes: no message size given".to_string(),
        ));
    }
    params.validate()?;
    let procs = placement.procs();
    let mut planner = Type2Planner::new(fabric, 64 << 20);
    let load = vec![0u32; fabric.switch_count() as usize];
    let (_, candidates) = planner.root_candidates(placement.endpoints(), &load);
    let physical = planner.physical_tree(candidates[0], placement.endpoints());
    let capacity: Vec<u32> = (0..physical.switch_count())
        .map(|i| fabric.switch_ports(physical.switch(i)))
        .collect();
    let derived = min_cost_tree(&physical, &capacity).ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidArgument,
            "fabric: no type II tree fits the switches' port counts".to_string(),
        )
    })?;
    let hops = physical.max_hops() as f64;
    let mut rows = Vec::with_capacity(sizes.len());
    let mut tree_cache: Vec<(u32, u32, u32)> = Vec::new();
    for &bytes in sizes {
        let (a_us, b_us) = params.a_b_for_bytes(bytes);
        let k = checked_optimal_radix(a_us, b_us, procs, epsilon_us)?.k_opt;
        let (height, radius) = match tree_cache.iter().find(|c| c.0 == k) {
            Some(&(_, h, r)) => (h, r),
            None => {
                let tree = TreeShape::Hier(k).build(fabric, placement)?;
                let r = analyse_links(fabric, placement, &tree)?;
                tree_cache.push((k, r.height, r.radius));
                (r.height, r.radius)
            }
        };
        let type1_us = radius as f64 * params.link_latency_us + height as f64 * k as f64 * b_us;
        let type2_us = hops * params.link_latency_us
            + derived.height() as f64
                * derived.max_children() as f64
                * (switch.theta_us + switch.us_per_byte * bytes as f64);
        rows.push(ChoiceRow {
            bytes,
            k,
            type1_height: height,
            type1_radius: radius,
            type1_us,
            type2_switches: derived.cost(),
            type2_height: derived.height(),
            type2_us,
            pick_type2: type2_us < type1_us,
        });
    }
    let crossover = rows
        .windows(2)
        .find(|w| w[0].pick_type2 && !w[1].pick_type2)
        .map(|w| w[1].bytes);
    Ok((rows, crossover))
}
