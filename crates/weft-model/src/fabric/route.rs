//! Shortest-path distances on the switch graph and deterministic unicast routes.
//!
//! Distances come from breadth-first search and are cached per source switch within a memory
//! budget, because the planner asks for the same rows (leaf switches, roots) again and again.
//! No I/O.

use super::{Fabric, Vertex};
use std::collections::VecDeque;

/// Distance value of a switch that cannot be reached.
pub const UNREACHABLE: u16 = u16::MAX;

impl Fabric {
    /// Hop counts from `source` to every switch (BFS), `UNREACHABLE` where there is no path.
    pub fn distances_from(&self, source: u32) -> Vec<u16> {
        let mut dist = vec![UNREACHABLE; self.switch_count() as usize];
        let mut queue = VecDeque::new();
        dist[source as usize] = 0;
        queue.push_back(source);
        while let Some(x) = queue.pop_front() {
            let d = dist[x as usize] + 1;
            for &n in self.neighbours(x) {
                if dist[n as usize] == UNREACHABLE {
                    dist[n as usize] = d;
                    queue.push_back(n);
                }
            }
        }
        dist
    }

    /// The next switch from `x` towards the switch whose distance row is `row`, following the
    /// module's tie-breaking rule with `key`. `None` when `x` is the target or unreachable.
    pub fn next_hop(&self, x: u32, row: &[u16], key: u64) -> Option<u32> {
        let d = row[x as usize];
        if d == 0 || d == UNREACHABLE {
            return None;
        }
        let closer = |n: &&u32| row[**n as usize] == d - 1;
        let count = self.neighbours(x).iter().filter(closer).count() as u64;
        let pick = (key % count) as usize;
        self.neighbours(x).iter().filter(closer).nth(pick).copied()
    }

    /// The switch path from switch `from` to the target of `row` (both included).
    pub fn switch_path(&self, from: u32, row: &[u16], key: u64) -> Vec<u32> {
        let mut path = vec![from];
        let mut x = from;
        while let Some(n) = self.next_hop(x, row, key) {
            path.push(n);
            x = n;
        }
        path
    }

    /// The unicast route from endpoint `src` to endpoint `dst` as a list of vertices, using
    /// `cache` for distance rows. Endpoints of one node talk through memory: the route is
    /// just `[src, dst]` with no fabric link, and `link_count` of it is 0.
    pub fn route(&self, src: u32, dst: u32, cache: &mut DistanceCache) -> Vec<Vertex> {
        if src == dst {
            return vec![Vertex::Endpoint(src)];
        }
        if self.endpoint_node(src) == self.endpoint_node(dst) {
            return vec![Vertex::Endpoint(src), Vertex::Endpoint(dst)];
        }
        let target = self.endpoint_switch(dst);
        let row = cache.row(self, target);
        let mut route = vec![Vertex::Endpoint(src)];
        route.extend(
            self.switch_path(self.endpoint_switch(src), row, dst as u64)
                .into_iter()
                .map(Vertex::Switch),
        );
        route.push(Vertex::Endpoint(dst));
        route
    }

    /// Fabric links a packet from `src` to `dst` crosses (0 inside a node).
    pub fn route_links(&self, src: u32, dst: u32, cache: &mut DistanceCache) -> u32 {
        if src == dst || self.endpoint_node(src) == self.endpoint_node(dst) {
            return 0;
        }
        let row = cache.row(self, self.endpoint_switch(dst));
        row[self.endpoint_switch(src) as usize] as u32 + 2
    }
}

/// Cached BFS rows, one per source switch, dropped wholesale when over budget (simple and
/// deterministic; the planner's access pattern reuses a small hot set).
#[derive(Debug)]
pub struct DistanceCache {
    rows: Vec<Option<Box<[u16]>>>,
    cached: usize,
    max_rows: usize,
    computed: u64,
}

impl DistanceCache {
    /// A cache for `fabric` holding at most `budget_bytes` of rows (at least one row).
    pub fn new(fabric: &Fabric, budget_bytes: usize) -> Self {
        let row_bytes = fabric.switch_count() as usize * 2;
        DistanceCache {
            rows: vec![None; fabric.switch_count() as usize],
            cached: 0,
            max_rows: (budget_bytes / row_bytes.max(1)).max(1),
            computed: 0,
        }
    }

    /// The distance row of `source`, computing it if needed.
    pub fn row(&mut self, fabric: &Fabric, source: u32) -> &[u16] {
        if self.rows[source as usize].is_none() {
            if self.cached >= self.max_rows {
                self.rows.iter_mut().for_each(|r| *r = None);
                self.cached = 0;
            }
            self.rows[source as usize] = Some(fabric.distances_from(source).into_boxed_slice());
            self.cached += 1;
            self.computed += 1;
        }
        self.rows[source as usize].as_deref().unwrap_or(&[])
    }

    /// Whether a row is cached (so callers can avoid evicting rows they hold indices into).
    pub fn has_row(&self, source: u32) -> bool {
        self.rows[source as usize].is_some()
    }

    /// How many BFS rows were computed so far (for `--timing`).
    pub fn computed(&self) -> u64 {
        self.computed
    }
}
