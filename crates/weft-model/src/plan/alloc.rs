//! Allocation experiments: communicator patterns and sequential type II tree creation under
//! a limited number of tree entries per switch (seed 001 §5).
//!
//! Communicators are created one after another. For each: order root candidates by
//! maximum hop count to the members, then load, then id (switches up to `root_slack_hops`
//! beyond the smallest hop count qualify), build the physical tree from the first candidate
//! whose own entries are not exhausted, and try to derive an aggregation tree: `physical` keeps every switch of
//! the physical tree and fails if one has no free entry; `mincost` derives the minimum-cost
//! tree where switches without a free entry may not be kept (children are lifted over them)
//! and fails if no derivation exists. On failure the next candidate root is tried (at most
//! `max_root_attempts` trees are built); when none works, the communicator falls back to a type I tree (counted as a failure). A created tree
//! consumes one entry on every switch it keeps. The degree limit applies to `mincost` and
//! defaults to each switch's port count (so a minimum-cost tree never needs more fan-out than
//! the physical tree had); a physical tree's fan-out is whatever the fabric gives it (the
//! paper's conventional method).
//!
//! Patterns rank contiguously (rank r on endpoint r): `grid2d:RxC` (rank = row·C + col; every
//! row and every column is a communicator), `grid3d:AxBxC` (rank = (a·B + b)·C + c; every
//! line along each axis), `random:COUNT,SIZE,SEED` (COUNT communicators of SIZE distinct
//! endpoints drawn from the whole fabric). Lines of one rank need no tree and are skipped.
//! No I/O.

use super::rng::SplitMix64;
use super::type2::{min_cost_tree, DerivedTree, PhysicalTree, Type2Planner};
use crate::fabric::Fabric;
use serde::Serialize;
use weft_core::{Error, ErrorKind, Result};

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

/// How a type II tree is made from the physical tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Keep the physical tree as it is.
    Physical,
    /// Derive the minimum-cost tree.
    Mincost,
}

impl Method {
    /// Parses `physical` or `mincost`.
    pub fn parse(text: &str) -> Result<Method> {
        match text.trim() {
            "physical" => Ok(Method::Physical),
            "mincost" => Ok(Method::Mincost),
            other => Err(invalid(format!(
                "method: unknown method {other:?} (expected physical or mincost)"
            ))),
        }
    }

    /// The method's name.
    pub fn name(self) -> &'static str {
        match self {
            Method::Physical => "physical",
            Method::Mincost => "mincost",
        }
    }
}

/// A communicator pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Rows and columns of an R×C grid.
    Grid2d(u32, u32),
    /// Lines along each axis of an A×B×C grid.
    Grid3d(u32, u32, u32),
    /// Random communicators: count, size, seed.
    Random(u32, u32, u64),
}

fn parse_dims(field: &str, text: &str, n: usize) -> Result<Vec<u32>> {
    let parts: Vec<&str> = text.split('x').collect();
    if parts.len() != n {
        return Err(invalid(format!(
            "pattern {field}:{text}: expected {n} sizes separated by 'x'"
        )));
    }
    parts
        .iter()
        .map(|p| match p.trim().parse::<u32>() {
            Ok(v) if v >= 1 => Ok(v),
            _ => Err(invalid(format!(
                "pattern {field}:{text}: size {p:?} is not a positive integer"
            ))),
        })
        .collect()
}

impl Pattern {
    /// Parses `grid2d:RxC`, `grid3d:AxBxC` or `random:COUNT,SIZE,SEED`.
    pub fn parse(text: &str) -> Result<Pattern> {
        let (kind, body) = text.trim().split_once(':').ok_or_else(|| {
            invalid(format!(
                "pattern {text:?}: expected grid2d:RxC, grid3d:AxBxC or random:COUNT,SIZE,SEED"
            ))
        })?;
        match kind {
            "grid2d" => {
                let d = parse_dims("grid2d", body, 2)?;
                Ok(Pattern::Grid2d(d[0], d[1]))
            }
            "grid3d" => {
                let d = parse_dims("grid3d", body, 3)?;
                Ok(Pattern::Grid3d(d[0], d[1], d[2]))
            }
            "random" => {
                let parts: Vec<&str> = body.split(',').map(str::trim).collect();
                if parts.len() != 3 {
                    return Err(invalid(format!(
                        "pattern random:{body}: expected COUNT,SIZE,SEED"
                    )));
                }
                let count: u32 = parts[0].parse().map_err(|_| {
                    invalid(format!(
                        "pattern random: COUNT {:?} is not an integer",
                        parts[0]
                    ))
                })?;
                let size: u32 = parts[1].parse().map_err(|_| {
                    invalid(format!(
                        "pattern random: SIZE {:?} is not an integer",
                        parts[1]
                    ))
                })?;
                let seed: u64 = parts[2].parse().map_err(|_| {
                    invalid(format!(
                        "pattern random: SEED {:?} is not an integer",
                        parts[2]
                    ))
                })?;
                if size < 2 {
                    return Err(invalid(format!(
                        "pattern random: SIZE {size} must be at least 2"
                    )));
                }
                // Memberships are materialised; keep a typo from exhausting memory.
                if count as u64 * size as u64 > 200_000_000 {
                    return Err(invalid(format!(
                        "pattern random: COUNT {count} × SIZE {size} memberships exceed the limit of 200000000"
                    )));
                }
                Ok(Pattern::Random(count, size, seed))
            }
            other => Err(invalid(format!(
                "pattern {text:?}: unknown pattern {other:?} (expected grid2d, grid3d or random)"
            ))),
        }
    }

    /// The pattern's communicators as endpoint lists (ranks placed contiguously).
    pub fn communicators(&self, fabric: &Fabric) -> Result<Vec<Vec<u32>>> {
        let endpoints = fabric.endpoint_count() as u64;
        let need = |procs: u64| -> Result<()> {
            if procs > endpoints {
                Err(invalid(format!(
                    "pattern: {procs} processes but the fabric has only {endpoints} endpoints"
                )))
            } else {
                Ok(())
            }
        };
        let mut comms = Vec::new();
        match *self {
            Pattern::Grid2d(r, c) => {
                need(r as u64 * c as u64)?;
                if c > 1 {
                    for row in 0..r {
                        comms.push((0..c).map(|col| row * c + col).collect());
                    }
                }
                if r > 1 {
                    for col in 0..c {
                        comms.push((0..r).map(|row| row * c + col).collect());
                    }
                }
            }
            Pattern::Grid3d(a, b, c) => {
                need(a as u64 * b as u64 * c as u64)?;
                let rank = |i: u32, j: u32, k: u32| (i * b + j) * c + k;
                if c > 1 {
                    for i in 0..a {
                        for j in 0..b {
                            comms.push((0..c).map(|k| rank(i, j, k)).collect());
                        }
                    }
                }
                if b > 1 {
                    for i in 0..a {
                        for k in 0..c {
                            comms.push((0..b).map(|j| rank(i, j, k)).collect());
                        }
                    }
                }
                if a > 1 {
                    for j in 0..b {
                        for k in 0..c {
                            comms.push((0..a).map(|i| rank(i, j, k)).collect());
                        }
                    }
                }
            }
            Pattern::Random(count, size, seed) => {
                need(size as u64)?;
                let mut rng = SplitMix64::new(seed);
                let n = endpoints as u32;
                for _ in 0..count {
                    // Rejection sampling of distinct endpoints: fast while size ≪ endpoints;
                    // a partial shuffle otherwise.
                    let members: Vec<u32> = if (size as u64) * 4 <= endpoints {
                        let mut chosen = std::collections::HashSet::with_capacity(size as usize);
                        let mut list = Vec::with_capacity(size as usize);
                        while list.len() < size as usize {
                            let e = rng.below(n as u64) as u32;
                            if chosen.insert(e) {
                                list.push(e);
                            }
                        }
                        list
                    } else {
                        let mut all: Vec<u32> = (0..n).collect();
                        for i in 0..size as usize {
                            let j = i + rng.below((n as usize - i) as u64) as usize;
                            all.swap(i, j);
                        }
                        all.truncate(size as usize);
                        all
                    };
                    comms.push(members);
                }
            }
        }
        Ok(comms)
    }
}

/// Settings of an allocation run.
#[derive(Clone, Copy, Debug)]
pub struct AllocConfig {
    /// Tree entries per switch.
    pub entries: u32,
    /// Children limit of a kept switch (mincost); `None`: the switch's port count.
    pub degree: Option<u32>,
    /// How trees are made.
    pub method: Method,
    /// Extra hops beyond the minimum a root may be from its farthest member.
    pub root_slack_hops: u32,
    /// Most physical trees built per communicator before giving up.
    pub max_root_attempts: u32,
}

impl AllocConfig {
    /// `entries` per switch, a degree limit (`None`: port counts), the method, and the
    /// default root search: up to 2 extra hops, at most 64 trees built per communicator.
    pub fn new(entries: u32, degree: Option<u32>, method: Method) -> Self {
        AllocConfig {
            entries,
            degree,
            method,
            root_slack_hops: 2,
            max_root_attempts: 64,
        }
    }
}

/// What an allocation run produced.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AllocReport {
    /// Communicators attempted.
    pub communicators: u64,
    /// Communicators that got no type II tree (fell back to type I).
    pub failures: u64,
    /// failures / communicators.
    pub failure_rate: f64,
    /// Entries consumed over all switches.
    pub entries_used: u64,
    /// Most entries consumed on one switch.
    pub peak_entries: u32,
    /// Switches that hold at least one entry.
    pub switches_touched: u32,
    /// Communicators whose first root candidate failed but a later one worked.
    pub later_roots: u64,
    /// BFS distance rows computed (for `--timing`).
    pub rows_computed: u64,
}

/// Creates one type II tree per communicator in order; see the module docs.
pub fn allocate(fabric: &Fabric, comms: &[Vec<u32>], config: AllocConfig) -> Result<AllocReport> {
    if let Some(d) = config.degree.filter(|&d| d < 2) {
        return Err(invalid(format!(
            "degree: {d} is below 2 (a switch must combine at least two children)"
        )));
    }
    if config.entries == 0 {
        return Err(invalid("entries: must be at least 1".into()));
    }
    for (i, c) in comms.iter().enumerate() {
        for &e in c {
            if e >= fabric.endpoint_count() {
                return Err(invalid(format!(
                    "communicator {i}: endpoint {e} outside the fabric's {} endpoints",
                    fabric.endpoint_count()
                )));
            }
        }
    }
    let mut used = vec![0u32; fabric.switch_count() as usize];
    // Rows for every member switch and a few roots fit easily: 512 MiB is far above what a
    // 100 000-endpoint fat tree needs (about 25 MiB) yet keeps a huge torus bounded.
    let mut planner = Type2Planner::new(fabric, 512 << 20);
    let mut failures = 0u64;
    let mut later_roots = 0u64;
    let mut capacity = Vec::new();
    for members in comms {
        if members.is_empty() {
            continue;
        }
        match type2_tree(fabric, &mut planner, members, &used, config, &mut capacity) {
            Ok(made) => {
                for &s in &made.kept_switches {
                    used[s as usize] += 1;
                }
                if made.attempt > 0 {
                    later_roots += 1;
                }
            }
            Err(_) => failures += 1,
        }
    }
    let communicators = comms.iter().filter(|c| !c.is_empty()).count() as u64;
    Ok(AllocReport {
        communicators,
        failures,
        failure_rate: if communicators == 0 {
            0.0
        } else {
            failures as f64 / communicators as f64
        },
        entries_used: used.iter().map(|&u| u as u64).sum(),
        peak_entries: used.iter().copied().max().unwrap_or(0),
        switches_touched: used.iter().filter(|&&u| u > 0).count() as u32,
        later_roots,
        rows_computed: planner.rows_computed(),
    })
}

/// A type II tree made for one communicator by [`type2_tree`].
#[derive(Clone, Debug)]
pub struct MadeTree {
    /// The physical tree it was derived from.
    pub physical: PhysicalTree,
    /// The derived tree (the physical tree itself for [`Method::Physical`]).
    pub derived: DerivedTree,
    /// Fabric ids of the switches the tree keeps (each consumes one entry).
    pub kept_switches: Vec<u32>,
    /// Index of the root candidate that worked (0: the first).
    pub attempt: u32,
}

/// Makes a type II tree for `members` (endpoints) with switches loaded as `used` (entries in
/// use per switch), by the rule of the module docs, without consuming anything: the caller
/// adds one entry on every switch of [`MadeTree::kept_switches`]. `Err` says why no tree
/// fits (the communicator falls back to type I). `capacity` is scratch space.
pub fn type2_tree(
    fabric: &Fabric,
    planner: &mut Type2Planner<'_>,
    members: &[u32],
    used: &[u32],
    config: AllocConfig,
    capacity: &mut Vec<u32>,
) -> std::result::Result<MadeTree, String> {
    let (_, candidates) = planner.root_candidates_within(members, used, config.root_slack_hops);
    let mut built = 0u32;
    let mut full_roots = 0u32;
    for (attempt, &root) in candidates.iter().enumerate() {
        // Both methods keep the root: a full root fails without building anything.
        if used[root as usize] >= config.entries {
            full_roots += 1;
            continue;
        }
        if built == config.max_root_attempts {
            break;
        }
        built += 1;
        let tree = planner.physical_tree(root, members);
        let n = tree.switch_count();
        let derived = match config.method {
            Method::Physical => (0..n)
                .all(|i| used[tree.switch(i) as usize] < config.entries)
                .then(|| tree.as_derived()),
            Method::Mincost => {
                capacity.clear();
                capacity.extend((0..n).map(|i| {
                    let s = tree.switch(i);
                    if used[s as usize] < config.entries {
                        config.degree.unwrap_or_else(|| fabric.switch_ports(s))
                    } else {
                        0
                    }
                }));
                min_cost_tree(&tree, capacity)
            }
        };
        if let Some(derived) = derived {
            let kept_switches = (0..n)
                .filter(|&i| derived.kept(i))
                .map(|i| tree.switch(i))
                .collect();
            return Ok(MadeTree {
                physical: tree,
                derived,
                kept_switches,
                attempt: attempt as u32,
            });
        }
    }
    Err(format!(
        "no type II tree within {} entries per switch: {} root candidates, {full_roots} \
         with no free entry, {built} trees built and none derivable from switches with free \
         entries",
        config.entries,
        candidates.len()
    ))
}
