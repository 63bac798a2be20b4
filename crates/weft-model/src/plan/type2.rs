//! Type II (switch-reduced) aggregation trees (seed 001 §4; ALGORITHMS.md §4): root
//! selection, the physical tree, and the minimum-cost tree derived from it under per-switch
//! degree limits.
//!
//! Definitions used here. The physical tree T for members M is the union of the routes from
//! every member's switch to the root switch (the fabric's destination-based next hops, so the
//! union is a tree). A derived tree A keeps a subset of T's switches, always including the
//! root; every member and every kept non-root switch gets as parent a kept switch that is a
//! proper ancestor in T; a kept switch has at most K(sw) children in A. Cost(A) = kept
//! switches. Members are leaves: NICs do not aggregate in a type II tree.
//!
//! Minimum-cost derivation (our design; the paper's listing was lost): a dynamic programme
//! over T, bottom-up, on "pending" items — members or kept switches still waiting for a
//! parent. Every pending item below a switch has exactly the same remaining choices (the
//! kept ancestors of that switch), so a kept switch should absorb as many as it can:
//! `min(K, pending)`. `best[v][p]` is the fewest kept switches in v's subtree leaving `p`
//! items pending above v; children merge by min-plus convolution; the root must absorb the
//! rest. This is exact (tests compare it with brute force over all derivations), and costs
//! O(|T|·|M|) at worst. Which items a switch absorbs does not change the cost; we absorb the
//! shallowest first so that tall subtrees hang higher and A stays short.
//!
//! Pure code: no I/O, depends only on `fabric`.

use crate::fabric::{DistanceCache, Fabric};
use weft_core::{Error, ErrorKind, Result};

const NONE: u32 = u32::MAX;
const INF: u32 = u32::MAX;

/// A rooted tree of switches (local indices, root 0) with members attached to switches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhysicalTree {
    switches: Vec<u32>,
    parent: Vec<u32>,
    members: Vec<u32>,
    member_switch: Vec<u32>,
    max_hops: u32,
}

impl PhysicalTree {
    /// A tree from parent links over local switches `0..parent.len()` (`None` for exactly
    /// one root) and the local switch of every member. Switch ids are the local indices and
    /// member ids are `0..members`. Used by tests and by `from_fabric`.
    pub fn from_parents(parent: &[Option<u32>], member_switch: Vec<u32>) -> Result<Self> {
        let n = parent.len();
        let roots: Vec<usize> = (0..n).filter(|&i| parent[i].is_none()).collect();
        if roots.len() != 1 {
            return Err(invalid(format!(
                "physical tree: {} roots (need exactly one)",
                roots.len()
            )));
        }
        // Renumber breadth-first from the root so every parent has a smaller index than its
        // children (the invariant `physical_tree` also keeps; the feasibility pass needs it).
        let root = roots[0];
        let mut kids = vec![Vec::new(); n];
        for (i, p) in parent.iter().enumerate() {
            if let Some(p) = *p {
                if p as usize >= n {
                    return Err(invalid(format!("physical tree: parent {p} out of range")));
                }
                kids[p as usize].push(i);
            }
        }
        let mut order: Vec<usize> = vec![root];
        let mut head = 0;
        while head < order.len() {
            let v = order[head];
            head += 1;
            order.extend(kids[v].iter().copied());
        }
        if order.len() != n {
            return Err(invalid(
                "physical tree: parent links form a cycle or a second component".into(),
            ));
        }
        let mut local = vec![0u32; n];
        for (new, &old) in order.iter().enumerate() {
            local[old] = new as u32;
        }
        let mut new_parent = vec![NONE; n];
        for (old, p) in parent.iter().enumerate() {
            if let Some(p) = *p {
                if p as usize >= n {
                    return Err(invalid(format!("physical tree: parent {p} out of range")));
                }
                new_parent[local[old] as usize] = local[p as usize];
            }
        }
        let mut ms = Vec::with_capacity(member_switch.len());
        for &s in &member_switch {
            if s as usize >= n {
                return Err(invalid(format!(
                    "physical tree: member switch {s} out of range"
                )));
            }
            ms.push(local[s as usize]);
        }
        let tree = PhysicalTree {
            switches: order.iter().map(|&o| o as u32).collect(),
            parent: new_parent,
            members: (0..ms.len() as u32).collect(),
            member_switch: ms,
            max_hops: 0,
        };
        let depth = tree.depths()?;
        let max_hops = tree
            .member_switch
            .iter()
            .map(|&s| depth[s as usize] + 1)
            .max()
            .unwrap_or(0);
        Ok(PhysicalTree { max_hops, ..tree })
    }

    /// Number of switches in the tree.
    pub fn switch_count(&self) -> u32 {
        self.switches.len() as u32
    }

    /// The fabric switch id of local switch `i` (local 0 is the root).
    pub fn switch(&self, i: u32) -> u32 {
        self.switches[i as usize]
    }

    /// The parent (local index) of local switch `i`, `None` for the root.
    pub fn parent(&self, i: u32) -> Option<u32> {
        let p = self.parent[i as usize];
        (p != NONE).then_some(p)
    }

    /// Member endpoints in the order given.
    pub fn members(&self) -> &[u32] {
        &self.members
    }

    /// The local switch member `i` hangs off.
    pub fn member_switch(&self, i: u32) -> u32 {
        self.member_switch[i as usize]
    }

    /// Links from the root switch to the farthest member NIC.
    pub fn max_hops(&self) -> u32 {
        self.max_hops
    }

    /// Depth of each local switch below the root; errors on a cycle.
    fn depths(&self) -> Result<Vec<u32>> {
        let n = self.switches.len();
        let mut depth = vec![NONE; n];
        depth[0] = 0;
        for start in 0..n {
            let mut chain = Vec::new();
            let mut x = start;
            while depth[x] == NONE {
                chain.push(x);
                if chain.len() > n {
                    return Err(invalid("physical tree: parent links form a cycle".into()));
                }
                x = self.parent[x] as usize;
                if x == NONE as usize {
                    return Err(invalid(
                        "physical tree: a switch does not reach the root".into(),
                    ));
                }
            }
            let mut d = depth[x];
            for &c in chain.iter().rev() {
                d += 1;
                depth[c] = d;
            }
        }
        Ok(depth)
    }

    /// Children lists (local indices) in increasing order.
    fn children(&self) -> Vec<Vec<u32>> {
        let mut children = vec![Vec::new(); self.switches.len()];
        for (i, &p) in self.parent.iter().enumerate() {
            if p != NONE {
                children[p as usize].push(i as u32);
            }
        }
        children
    }

    /// Local switches in post-order (children before parents).
    fn post_order(&self, children: &[Vec<u32>]) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.switches.len());
        let mut stack = vec![(0u32, false)];
        while let Some((v, done)) = stack.pop() {
            if done {
                out.push(v);
            } else {
                stack.push((v, true));
                for &c in children[v as usize].iter().rev() {
                    stack.push((c, false));
                }
            }
        }
        out
    }

    /// The physical tree used as an aggregation tree as it is: every switch kept, parents
    /// unchanged.
    pub fn as_derived(&self) -> DerivedTree {
        let depth = self
            .depths()
            .unwrap_or_else(|_| vec![0; self.switches.len()]);
        DerivedTree {
            kept: vec![true; self.switches.len()],
            switch_parent: self.parent.clone(),
            member_parent: self.member_switch.clone(),
            height: self.max_hops_in_tree(&depth),
        }
    }

    fn max_hops_in_tree(&self, depth: &[u32]) -> u32 {
        self.member_switch
            .iter()
            .map(|&s| depth[s as usize] + 1)
            .max()
            .unwrap_or(0)
    }
}

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

/// A tree derived from a physical tree: which switches are kept and the parents in A.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DerivedTree {
    kept: Vec<bool>,
    switch_parent: Vec<u32>,
    member_parent: Vec<u32>,
    height: u32,
}

impl DerivedTree {
    /// Number of kept switches (the tree's cost in entries).
    pub fn cost(&self) -> u32 {
        self.kept.iter().filter(|&&k| k).count() as u32
    }

    /// Whether local switch `i` is kept.
    pub fn kept(&self, i: u32) -> bool {
        self.kept[i as usize]
    }

    /// Parent in A of a kept local switch (`None` for the root or a dropped switch).
    pub fn switch_parent(&self, i: u32) -> Option<u32> {
        let p = self.switch_parent[i as usize];
        (p != NONE && self.kept[i as usize]).then_some(p)
    }

    /// Parent switch (local) of member `i` in A.
    pub fn member_parent(&self, i: u32) -> u32 {
        self.member_parent[i as usize]
    }

    /// Edges on the longest root-to-member path of A.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Most children of a kept switch in A.
    pub fn max_children(&self) -> u32 {
        let mut count = vec![0u32; self.kept.len()];
        for &p in &self.member_parent {
            count[p as usize] += 1;
        }
        for i in 0..self.kept.len() {
            if let Some(p) = self.switch_parent(i as u32) {
                count[p as usize] += 1;
            }
        }
        count.into_iter().max().unwrap_or(0)
    }

    /// Checks that A is derived from `t` under `capacity`: parents are kept proper ancestors,
    /// the root is kept, degrees hold. Returns a message naming the first violation.
    pub fn check(&self, t: &PhysicalTree, capacity: &[u32]) -> std::result::Result<(), String> {
        if !self.kept[0] {
            return Err("root not kept".into());
        }
        let is_ancestor = |a: u32, mut x: u32| -> bool {
            while t.parent[x as usize] != NONE {
                x = t.parent[x as usize];
                if x == a {
                    return true;
                }
            }
            false
        };
        let mut count = vec![0u32; self.kept.len()];
        for (m, &p) in self.member_parent.iter().enumerate() {
            let s = t.member_switch[m];
            if !self.kept[p as usize] || !(p == s || is_ancestor(p, s)) {
                return Err(format!("member {m}: parent {p} is not a kept ancestor"));
            }
            count[p as usize] += 1;
        }
        for i in 1..self.kept.len() {
            if self.kept[i] {
                let p = self.switch_parent[i];
                if p == NONE || !self.kept[p as usize] || !is_ancestor(p, i as u32) {
                    return Err(format!("switch {i}: parent {p} is not a kept ancestor"));
                }
                count[p as usize] += 1;
            }
        }
        for (i, &c) in count.iter().enumerate() {
            if c > capacity[i] {
                return Err(format!(
                    "switch {i}: {c} children above its limit {}",
                    capacity[i]
                ));
            }
        }
        Ok(())
    }
}

fn min_plus(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = vec![INF; a.len() + b.len() - 1];
    for (i, &x) in a.iter().enumerate() {
        if x == INF {
            continue;
        }
        for (j, &y) in b.iter().enumerate() {
            if y != INF && x + y < out[i + j] {
                out[i + j] = x + y;
            }
        }
    }
    out
}

/// Whether any derived tree exists: keeping every usable switch that has something to absorb
/// leaves the fewest items pending at every level (`p ↦ max(p − K, 0) + 1` is monotone), so
/// it is feasible exactly when some derivation is. Linear time, one allocation: allocation
/// runs call this for every candidate root before the exact programme.
pub fn feasible(t: &PhysicalTree, capacity: &[u32]) -> bool {
    let n = t.switches.len();
    if capacity.len() != n || capacity[0] == 0 || t.members.is_empty() {
        return false;
    }
    let mut pending = vec![0u32; n];
    for &s in &t.member_switch {
        pending[s as usize] += 1;
    }
    // Parents have smaller indices than children, so reverse index order is bottom-up.
    for i in (1..n).rev() {
        let p = pending[i];
        let out = if capacity[i] > 0 && p > 0 {
            p.saturating_sub(capacity[i]) + 1
        } else {
            p
        };
        pending[t.parent[i] as usize] += out;
    }
    pending[0] <= capacity[0]
}

/// The minimum-cost tree derived from `t` when local switch `i` may have at most
/// `capacity[i]` children (0: the switch cannot be kept, e.g. no free entry). `None` when no
/// derived tree exists (root unusable or too little capacity).
pub fn min_cost_tree(t: &PhysicalTree, capacity: &[u32]) -> Option<DerivedTree> {
    let n = t.switches.len();
    if t.members.is_empty() || capacity.len() != n || capacity[0] == 0 {
        return None;
    }
    if !feasible(t, capacity) {
        return None;
    }
    let children = t.children();
    let order = t.post_order(&children);
    let mut members_at = vec![0u32; n];
    for &s in &t.member_switch {
        members_at[s as usize] += 1;
    }
    // best[v][p]: fewest kept switches in v's subtree leaving p pending items above v.
    let mut best: Vec<Vec<u32>> = vec![Vec::new(); n];
    // choice[v][q]: NONE if q pending comes from not keeping v, else the p absorbed from.
    let mut choice: Vec<Vec<u32>> = vec![Vec::new(); n];
    // The merge tables of each switch's children are rebuilt during reconstruction rather
    // than stored: most calls in an allocation run fail or succeed on the first pass, and
    // storing every prefix merge dominated the run time.
    let merged = |v: usize, upto: usize, best: &[Vec<u32>]| -> Vec<u32> {
        let mut g = vec![INF; members_at[v] as usize + 1];
        g[members_at[v] as usize] = 0;
        for &c in &children[v][..upto] {
            g = min_plus(&g, &best[c as usize]);
        }
        g
    };
    let mut g_root = Vec::new();
    for &v in &order {
        let v = v as usize;
        let g = merged(v, children[v].len(), &best);
        if v == 0 {
            g_root = g;
            break;
        }
        let mut f = g;
        let mut ch = vec![NONE; f.len()];
        let k = capacity[v];
        if k > 0 {
            let g = f.clone();
            for (p, &cost) in g.iter().enumerate().skip(1) {
                if cost == INF {
                    continue;
                }
                let q = p.saturating_sub(k as usize) + 1;
                if cost + 1 < f[q] {
                    f[q] = cost + 1;
                    ch[q] = p as u32;
                }
            }
        }
        best[v] = f;
        choice[v] = ch;
    }
    let k_root = capacity[0] as usize;
    let mut root_p = None;
    for (p, &cost) in g_root.iter().enumerate().take(k_root + 1) {
        if cost != INF && root_p.is_none_or(|(_, c)| cost < c) {
            root_p = Some((p, cost));
        }
    }
    let (root_p, _) = root_p?;

    // Top-down: which switches are kept.
    let mut kept = vec![false; n];
    kept[0] = true;
    let mut stack = vec![(0usize, root_p)];
    while let Some((v, p_in)) = stack.pop() {
        let mut p = p_in;
        let cs = &children[v];
        if cs.is_empty() {
            continue;
        }
        // Prefix merges of v's children, rebuilt once on this (successful) path.
        let mut prefixes = vec![merged(v, 0, &best)];
        for &c in cs {
            let next = min_plus(
                prefixes.last().map(Vec::as_slice).unwrap_or(&[]),
                &best[c as usize],
            );
            prefixes.push(next);
        }
        for i in (0..cs.len()).rev() {
            let (before, after) = (&prefixes[i], &prefixes[i + 1]);
            let c = cs[i] as usize;
            let fc = &best[c];
            let target = after[p];
            let mut found = None;
            for (b, &fb) in fc.iter().enumerate().take(p + 1) {
                let a = p - b;
                if a < before.len() && before[a] != INF && fb != INF && before[a] + fb == target {
                    found = Some((a, b));
                    break;
                }
            }
            let (a, b) = found?;
            let child_p = if choice[c][b] == NONE {
                b
            } else {
                kept[c] = true;
                choice[c][b] as usize
            };
            stack.push((c, child_p));
            p = a;
        }
    }

    // Bottom-up assignment with real items: (height, is_switch, id).
    let mut switch_parent = vec![NONE; n];
    let mut member_parent = vec![NONE; t.members.len()];
    let mut pending: Vec<Vec<(u32, bool, u32)>> = vec![Vec::new(); n];
    let mut member_lists = vec![Vec::new(); n];
    for (m, &s) in t.member_switch.iter().enumerate() {
        member_lists[s as usize].push(m as u32);
    }
    let mut root_height = 0;
    for &v in &order {
        let v = v as usize;
        let mut items: Vec<(u32, bool, u32)> =
            member_lists[v].iter().map(|&m| (0, false, m)).collect();
        for &c in &children[v] {
            items.append(&mut pending[c as usize]);
        }
        if kept[v] {
            items.sort_by_key(|&(h, _, _)| h);
            let take = items.len().min(capacity[v] as usize);
            let mut height = 0;
            for &(h, is_switch, id) in &items[..take] {
                height = height.max(h + 1);
                if is_switch {
                    switch_parent[id as usize] = v as u32;
                } else {
                    member_parent[id as usize] = v as u32;
                }
            }
            items.drain(..take);
            if v == 0 {
                if !items.is_empty() {
                    return None;
                }
                root_height = height;
            } else {
                items.push((height, true, v as u32));
            }
        }
        pending[v] = items;
    }
    Some(DerivedTree {
        kept,
        switch_parent,
        member_parent,
        height: root_height,
    })
}

/// The paper's lower bound on kept switches: s switches of degree ≤ `k` host all `members`
/// leaves and s − 1 switch children, so s·k ≥ members + s − 1.
pub fn cost_lower_bound(members: u32, k: u32) -> u32 {
    if members == 0 || k < 2 {
        return u32::from(members > 0);
    }
    // s·(k − 1) ≥ members − 1
    (members - 1).div_ceil(k - 1).max(1)
}

/// Root selection and physical trees on a fabric, with reusable scratch space.
#[derive(Debug)]
pub struct Type2Planner<'f> {
    fabric: &'f Fabric,
    cache: DistanceCache,
    max_dist: Vec<u16>,
    local: Vec<u32>,
    /// Next hop towards a root, per root, filled lazily: scanning a spine's hundred
    /// neighbours for every member dominated allocation runs.
    next_towards: std::collections::HashMap<u32, Vec<u32>>,
}

impl<'f> Type2Planner<'f> {
    /// A planner caching up to `cache_bytes` of distance rows.
    pub fn new(fabric: &'f Fabric, cache_bytes: usize) -> Self {
        Type2Planner {
            fabric,
            cache: DistanceCache::new(fabric, cache_bytes),
            max_dist: vec![0; fabric.switch_count() as usize],
            local: vec![NONE; fabric.switch_count() as usize],
            next_towards: std::collections::HashMap::new(),
        }
    }

    /// BFS rows computed so far.
    pub fn rows_computed(&self) -> u64 {
        self.cache.computed()
    }

    /// Root candidates for `members` (endpoints): the switches with the smallest maximum
    /// hop count to the members, least loaded first (`load[s]` = entries in use), then by
    /// id. Returns the hop count (switch to NIC) and the candidates.
    pub fn root_candidates(&mut self, members: &[u32], load: &[u32]) -> (u32, Vec<u32>) {
        self.root_candidates_within(members, load, 0)
    }

    /// Like `root_candidates`, but also admits switches whose maximum hop count exceeds the
    /// minimum by at most `slack_hops`, ordered by (hop count, load, id). A farther root lets
    /// a minimum-cost tree pass through a full switch (a core, say) without keeping it.
    /// Returns the minimum hop count (switch to NIC) and the candidates.
    pub fn root_candidates_within(
        &mut self,
        members: &[u32],
        load: &[u32],
        slack_hops: u32,
    ) -> (u32, Vec<u32>) {
        let mut member_switches: Vec<u32> = members
            .iter()
            .map(|&e| self.fabric.endpoint_switch(e))
            .collect();
        member_switches.sort_unstable();
        member_switches.dedup();
        self.max_dist.iter_mut().for_each(|d| *d = 0);
        for &s in &member_switches {
            let row = self.cache.row(self.fabric, s);
            for (m, &d) in self.max_dist.iter_mut().zip(row) {
                *m = (*m).max(d);
            }
        }
        let min = self.max_dist.iter().copied().min().unwrap_or(0);
        let limit = (min as u32).saturating_add(slack_hops);
        let mut candidates: Vec<u32> = (0..self.fabric.switch_count())
            .filter(|&s| (self.max_dist[s as usize] as u32) <= limit)
            .collect();
        candidates.sort_by_key(|&s| (self.max_dist[s as usize], load[s as usize], s));
        (min as u32 + 1, candidates)
    }

    /// The physical tree from `root` to `members` (endpoints) along the fabric's routes.
    pub fn physical_tree(&mut self, root: u32, members: &[u32]) -> PhysicalTree {
        let row = self.cache.row(self.fabric, root);
        // Bound the next-hop tables like the distance rows (4 bytes per switch per root).
        if self.next_towards.len() * self.fabric.switch_count() as usize > 64 << 20 {
            self.next_towards.clear();
        }
        let next = self
            .next_towards
            .entry(root)
            .or_insert_with(|| vec![NONE; self.fabric.switch_count() as usize]);
        let mut switches = vec![root];
        let mut parent = vec![NONE];
        self.local[root as usize] = 0;
        let mut member_switch = Vec::with_capacity(members.len());
        let mut chain = Vec::new();
        let mut max_hops = 0;
        for &e in members {
            let s = self.fabric.endpoint_switch(e);
            max_hops = max_hops.max(row[s as usize] as u32 + 1);
            let mut x = s;
            chain.clear();
            while self.local[x as usize] == NONE {
                chain.push(x);
                let mut hop = next[x as usize];
                if hop == NONE {
                    match self.fabric.next_hop(x, row, root as u64) {
                        Some(n) => {
                            next[x as usize] = n;
                            hop = n;
                        }
                        None => break,
                    }
                }
                x = hop;
            }
            let mut above = self.local[x as usize];
            for &c in chain.iter().rev() {
                let id = switches.len() as u32;
                self.local[c as usize] = id;
                switches.push(c);
                parent.push(above);
                above = id;
            }
            member_switch.push(self.local[s as usize]);
        }
        for &s in &switches {
            self.local[s as usize] = NONE;
        }
        PhysicalTree {
            switches,
            parent,
            members: members.to_vec(),
            member_switch,
            max_hops,
        }
    }
}
