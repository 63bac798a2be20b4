//! A virtual torus on a physical torus with faulty nodes (seed 003: the K computer gives a
//! job a torus of the shape it asks for out of the healthy nodes, so that the job's torus
//! neighbours stay physically near).
//!
//! The physical machine is a torus of `dims` (every dimension wraps); some nodes are faulty
//! or excluded. A job asks for a virtual torus with as many dimensions (shorter requests are
//! padded with 1s). [`map_torus`] builds candidates and keeps the best by (largest dilation,
//! congestion, mean dilation):
//! - **dropped planes**: per dimension, keep `want` of the `dims` planes and drop the others,
//!   choosing each dropped plane greedily as the one that removes the most faults still inside
//!   the kept product (seed 003's fault hiding by skipping whole planes);
//! - **spread**: keep the planes `offset + floor(x·dims/want)` for every offset along each
//!   dimension, so that the slack (unused nodes) lies between the used ones, next to any
//!   fault.
//!
//! Faulty nodes a candidate still uses are then **repaired**: each takes the free healthy
//! node that minimises the summed distance to its already-placed virtual neighbours. Finally
//! a bounded **improvement** pass moves each virtual node whose edges stretch over more than
//! one hop to the free node that shortens them most.
//!
//! Dilation of a virtual edge is the torus (Manhattan, with wraparound) distance between the
//! two physical nodes; congestion is the largest number of virtual edges that cross one
//! directed physical link under dimension-ordered shortest-path routing. Pure; no I/O.

use weft_core::{Error, ErrorKind, Result};

/// A torus: the length of each dimension, every one wrapping around.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Torus {
    pub dims: Vec<u32>,
}

impl Torus {
    /// A torus of `dims` (each at least 1, at most 2^32 nodes in all).
    pub fn new(dims: &[u32]) -> Result<Torus> {
        if dims.is_empty() || dims.contains(&0) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("torus {}: every dimension must be at least 1", shape(dims)),
            ));
        }
        let nodes = dims.iter().try_fold(1u64, |a, &d| {
            let n = a * d as u64;
            (n <= u32::MAX as u64).then_some(n)
        });
        if nodes.is_none() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("torus {}: more than 2^32 nodes", shape(dims)),
            ));
        }
        Ok(Torus {
            dims: dims.to_vec(),
        })
    }

    /// Parses `XxYxZ` (any number of dimensions).
    pub fn parse(text: &str) -> Result<Torus> {
        let dims: std::result::Result<Vec<u32>, _> = text
            .trim()
            .split(['x', 'X'])
            .map(|d| d.trim().parse())
            .collect();
        match dims {
            Ok(d) => Torus::new(&d),
            Err(_) => Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("torus {text:?}: expected dimensions like 16x16x16"),
            )),
        }
    }

    /// Number of nodes.
    pub fn nodes(&self) -> u32 {
        self.dims.iter().product()
    }

    /// Coordinates of node `index` (dimension 0 varies fastest).
    pub fn coord(&self, mut index: u32) -> Vec<u32> {
        self.dims
            .iter()
            .map(|&d| {
                let c = index % d;
                index /= d;
                c
            })
            .collect()
    }

    /// Index of the node at `coord`.
    pub fn index(&self, coord: &[u32]) -> u32 {
        coord
            .iter()
            .zip(&self.dims)
            .rev()
            .fold(0, |a, (&c, &d)| a * d + c)
    }

    /// Calls `visit` once for every node exactly `r` hops from `center` (none when `r`
    /// exceeds [`Torus::radius`]).
    pub fn ring(&self, center: u32, r: u32, visit: &mut impl FnMut(u32)) {
        fn go(
            dims: &[u32],
            at: &[u32],
            stride: u32,
            base: u32,
            left: u32,
            visit: &mut impl FnMut(u32),
        ) {
            let Some((&d, rest)) = dims.split_first() else {
                if left == 0 {
                    visit(base);
                }
                return;
            };
            let (c, at) = (at[0], &at[1..]);
            let next = stride * d;
            for k in 0..=left.min(d / 2) {
                let up = (c + k) % d;
                go(rest, at, next, base + up * stride, left - k, visit);
                let down = (c + d - k) % d;
                if down != up {
                    go(rest, at, next, base + down * stride, left - k, visit);
                }
            }
        }
        go(&self.dims, &self.coord(center), 1, 0, r, visit);
    }

    /// The most hops between two nodes.
    pub fn radius(&self) -> u32 {
        self.dims.iter().map(|&d| d / 2).sum()
    }

    /// Hops between nodes `a` and `b`: per dimension the shorter way round.
    pub fn distance(&self, a: u32, b: u32) -> u32 {
        let (mut a, mut b) = (a, b);
        let mut hops = 0;
        for &d in &self.dims {
            let (ca, cb) = (a % d, b % d);
            let diff = ca.abs_diff(cb);
            hops += diff.min(d - diff);
            a /= d;
            b /= d;
        }
        hops
    }
}

/// `16x16x16`.
pub fn shape(dims: &[u32]) -> String {
    dims.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join("x")
}

/// How good a mapping is.
#[derive(Clone, Debug, PartialEq)]
pub struct MapReport {
    /// Virtual torus edges (each neighbour pair once).
    pub edges: u64,
    /// The most hops one virtual edge takes.
    pub max_dilation: u32,
    /// Mean hops per virtual edge.
    pub mean_dilation: f64,
    /// The most virtual edges crossing one directed physical link.
    pub congestion: u32,
    /// Faulty nodes the chosen candidate hit before repair.
    pub repaired: u32,
    /// Which candidate won: `dropped planes` or `spread +o1,o2,..`.
    pub strategy: String,
}

/// A virtual torus placed on healthy physical nodes.
#[derive(Clone, Debug)]
pub struct TorusMap {
    /// The virtual torus (padded to the physical torus's dimensions).
    pub virtual_torus: Torus,
    /// Physical node of each virtual node (virtual index order, dimension 0 fastest).
    pub node_of: Vec<u32>,
    pub report: MapReport,
}

/// Maps a virtual torus of `want` onto the healthy nodes of `physical` (`faulty[i]`: node
/// `i` may not be used). Errors when the request has more dimensions than the machine, a
/// dimension longer than the machine's, or more nodes than are healthy.
pub fn map_torus(physical: &Torus, faulty: &[bool], want: &[u32]) -> Result<TorusMap> {
    let n = physical.nodes() as usize;
    if faulty.len() != n {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "{} fault flags for a {} torus of {n} nodes",
                faulty.len(),
                shape(&physical.dims)
            ),
        ));
    }
    if want.len() > physical.dims.len() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "a {}-dimensional torus {} cannot be laid on the {}-dimensional {}",
                want.len(),
                shape(want),
                physical.dims.len(),
                shape(&physical.dims)
            ),
        ));
    }
    let mut want = want.to_vec();
    want.resize(physical.dims.len(), 1);
    let virt = Torus::new(&want)?;
    // Virtual dimension i runs along physical dimension axes[i]: every order in which each
    // virtual dimension fits, once per distinct resulting shape.
    let mut orders: Vec<(Vec<usize>, Vec<u32>)> = Vec::new();
    for axes in permutations(want.len()) {
        let mut along = vec![1u32; want.len()];
        for (i, &a) in axes.iter().enumerate() {
            along[a] = want[i];
        }
        let fits = along.iter().zip(&physical.dims).all(|(w, p)| w <= p);
        if fits && !orders.iter().any(|(_, a)| *a == along) {
            orders.push((axes, along));
        }
    }
    if orders.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "{} does not fit in {} in any order of its dimensions (each must be at most \
                 as long as the machine's dimension it runs along)",
                shape(&want),
                shape(&physical.dims)
            ),
        ));
    }
    let healthy = faulty.iter().filter(|&&f| !f).count();
    if (virt.nodes() as usize) > healthy {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "{} needs {} nodes; the {} machine has {healthy} healthy of {n}",
                shape(&want),
                virt.nodes(),
                shape(&physical.dims)
            ),
        ));
    }
    let edges = virtual_edges(&virt);
    let mut best: Option<TorusMap> = None;
    for (axes, along) in &orders {
        let identity = axes.iter().enumerate().all(|(i, &a)| i == a);
        for (strategy, planes) in candidates(physical, faulty, along) {
            let (node_of, repaired) = place(physical, faulty, &virt, axes, &planes, &edges);
            let strategy = if identity {
                strategy
            } else {
                let a: Vec<String> = axes.iter().map(usize::to_string).collect();
                format!("{strategy}, axes {}", a.join(","))
            };
            let report = measure(physical, &edges, &node_of, repaired, strategy);
            let better = match &best {
                None => true,
                Some(b) => rank_key(&report) < rank_key(&b.report),
            };
            if better {
                best = Some(TorusMap {
                    virtual_torus: virt.clone(),
                    node_of,
                    report,
                });
            }
        }
    }
    let mut best = best.expect("at least one candidate");
    let mut moved = best.node_of.clone();
    if improve(physical, faulty, &virt, &edges, &mut moved) {
        let report = measure(
            physical,
            &edges,
            &moved,
            best.report.repaired,
            format!("{}, improved", best.report.strategy),
        );
        // The pass lowers squared hops, which can lengthen the longest edge: kept only
        // when the whole map is better by the same order as the candidates.
        if rank_key(&report) < rank_key(&best.report) {
            best.node_of = moved;
            best.report = report;
        }
    }
    Ok(best)
}

/// Every order of `0..n`, the identity first.
fn permutations(n: usize) -> Vec<Vec<usize>> {
    fn go(left: &mut Vec<usize>, acc: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if left.is_empty() {
            out.push(acc.clone());
            return;
        }
        for i in 0..left.len() {
            let x = left.remove(i);
            acc.push(x);
            go(left, acc, out);
            acc.pop();
            left.insert(i, x);
        }
    }
    let mut out = Vec::new();
    go(&mut (0..n).collect(), &mut Vec::new(), &mut out);
    out
}

fn rank_key(r: &MapReport) -> (u32, u32, u64) {
    (
        r.max_dilation,
        r.congestion,
        (r.mean_dilation * 1e6).round() as u64,
    )
}

/// Each virtual neighbour pair once: (a, b) with b one step up from a in some dimension
/// (the wraparound edge only where the dimension is longer than 2).
pub fn virtual_edges(virt: &Torus) -> Vec<(u32, u32)> {
    let mut edges = Vec::new();
    for v in 0..virt.nodes() {
        let c = virt.coord(v);
        for (i, &d) in virt.dims.iter().enumerate() {
            if d < 2 || (d == 2 && c[i] == 1) {
                continue;
            }
            let mut up = c.clone();
            up[i] = (c[i] + 1) % d;
            edges.push((v, virt.index(&up)));
        }
    }
    edges
}

/// The candidates: kept physical planes per dimension, with the strategy's name.
fn candidates(physical: &Torus, faulty: &[bool], want: &[u32]) -> Vec<(String, Vec<Vec<u32>>)> {
    let mut out = vec![(
        "dropped planes".to_string(),
        dropped_planes(physical, faulty, want),
    )];
    // Spread with each offset per dimension, dimensions independently: the offsets that
    // hit the fewest faults in the product win (ties: the lowest offsets).
    let spread = |i: usize, o: u32| -> Vec<u32> {
        let (p, w) = (physical.dims[i] as u64, want[i] as u64);
        (0..w)
            .map(|x| ((o as u64 + x * p / w) % p) as u32)
            .collect()
    };
    let mut offsets = vec![0u32; want.len()];
    for _round in 0..2 {
        for i in 0..want.len() {
            let mut best = (u64::MAX, 0);
            let span = if want[i] == physical.dims[i] {
                1
            } else {
                physical.dims[i]
            };
            for o in 0..span {
                let mut planes: Vec<Vec<u32>> =
                    (0..want.len()).map(|j| spread(j, offsets[j])).collect();
                planes[i] = spread(i, o);
                let hits = faults_inside(physical, faulty, &planes);
                if hits < best.0 {
                    best = (hits, o);
                }
            }
            offsets[i] = best.1;
        }
    }
    let planes = (0..want.len()).map(|j| spread(j, offsets[j])).collect();
    let name = format!(
        "spread +{}",
        offsets
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",")
    );
    out.push((name, planes));
    out
}

/// Faulty nodes inside the product of `planes`.
fn faults_inside(physical: &Torus, faulty: &[bool], planes: &[Vec<u32>]) -> u64 {
    let kept: Vec<Vec<bool>> = planes
        .iter()
        .zip(&physical.dims)
        .map(|(p, &d)| {
            let mut k = vec![false; d as usize];
            for &c in p {
                k[c as usize] = true;
            }
            k
        })
        .collect();
    (0..physical.nodes())
        .filter(|&i| faulty[i as usize])
        .filter(|&i| {
            physical
                .coord(i)
                .iter()
                .enumerate()
                .all(|(d, &c)| kept[d][c as usize])
        })
        .count() as u64
}

/// Drops planes one at a time, each the plane (of a dimension with planes to spare) holding
/// the most faults still inside the kept product; ties drop the plane whose neighbours are
/// kept (so dropped planes spread out) and then the lowest.
fn dropped_planes(physical: &Torus, faulty: &[bool], want: &[u32]) -> Vec<Vec<u32>> {
    let dims = &physical.dims;
    let mut kept: Vec<Vec<bool>> = dims.iter().map(|&d| vec![true; d as usize]).collect();
    let faults: Vec<Vec<u32>> = (0..physical.nodes())
        .filter(|&i| faulty[i as usize])
        .map(|i| physical.coord(i))
        .collect();
    loop {
        let mut best: Option<(u64, u32, usize, u32)> = None; // (faults, spread, dim, plane)
        for (d, &len) in dims.iter().enumerate() {
            let kept_now = kept[d].iter().filter(|&&k| k).count() as u32;
            if kept_now <= want[d] {
                continue;
            }
            for plane in 0..len {
                if !kept[d][plane as usize] {
                    continue;
                }
                let hits = faults
                    .iter()
                    .filter(|c| c[d] == plane)
                    .filter(|c| c.iter().enumerate().all(|(e, &x)| kept[e][x as usize]))
                    .count() as u64;
                let left = kept[d][((plane + len - 1) % len) as usize] as u32;
                let right = kept[d][((plane + 1) % len) as usize] as u32;
                let key = (hits, left + right, d, plane);
                let better = match best {
                    None => true,
                    Some((h, s, _, _)) => (hits, left + right) > (h, s),
                };
                if better {
                    best = Some(key);
                }
            }
        }
        match best {
            Some((_, _, d, plane)) => kept[d][plane as usize] = false,
            None => break,
        }
    }
    kept.iter()
        .map(|k| (0..k.len() as u32).filter(|&c| k[c as usize]).collect())
        .collect()
}

/// Places the virtual torus on the product of `planes` (virtual dimension i along physical
/// dimension `axes[i]`), then moves each virtual node that landed on a faulty node to the
/// free healthy node nearest its placed neighbours (least summed hops to them; ties: nearest
/// the faulty node, then the lowest index). Returns the placement and how many nodes were
/// repaired.
///
/// The search walks rings of growing radius r around the faulty node t and stops once no
/// node that far can win: with k placed neighbours w, a node p r hops from t is at least
/// `k·r − Σ hops(t, w)` hops from them in all (triangle inequality), so the answer is the
/// one an exhaustive scan gives, found after looking at the nodes near t only.
fn place(
    physical: &Torus,
    faulty: &[bool],
    virt: &Torus,
    axes: &[usize],
    planes: &[Vec<u32>],
    edges: &[(u32, u32)],
) -> (Vec<u32>, u32) {
    let n = physical.nodes() as usize;
    let mut used = vec![false; n];
    let mut node_of: Vec<u32> = (0..virt.nodes())
        .map(|v| {
            let mut c = vec![0u32; physical.dims.len()];
            for (i, &x) in virt.coord(v).iter().enumerate() {
                c[axes[i]] = planes[axes[i]][x as usize];
            }
            physical.index(&c)
        })
        .collect();
    let broken: Vec<u32> = (0..virt.nodes())
        .filter(|&v| faulty[node_of[v as usize] as usize])
        .collect();
    for &p in &node_of {
        if !faulty[p as usize] {
            used[p as usize] = true;
        }
    }
    let neighbours = neighbour_lists(virt.nodes() as usize, edges);
    let mut placed: Vec<bool> = (0..virt.nodes())
        .map(|v| !faulty[node_of[v as usize] as usize])
        .collect();
    for &v in &broken {
        let target = node_of[v as usize];
        let near: Vec<u32> = neighbours[v as usize]
            .iter()
            .filter(|&&w| placed[w as usize])
            .map(|&w| node_of[w as usize])
            .collect();
        let k = near.len() as u64;
        let spread: u64 = near
            .iter()
            .map(|&q| physical.distance(target, q) as u64)
            .sum();
        let mut best: Option<(u64, u32, u32)> = None; // (cost, distance to target, node)
        for r in 0..=physical.radius() {
            let bound = (k * r as u64).saturating_sub(spread);
            if best.is_some_and(|b| (bound, r) > (b.0, b.1)) {
                break;
            }
            physical.ring(target, r, &mut |p| {
                if used[p as usize] || faulty[p as usize] {
                    return;
                }
                let cost: u64 = near.iter().map(|&q| physical.distance(p, q) as u64).sum();
                let key = (cost, r, p);
                if best.is_none_or(|b| key < b) {
                    best = Some(key);
                }
            });
        }
        let (_, _, p) = best.expect("enough healthy nodes (checked)");
        node_of[v as usize] = p;
        used[p as usize] = true;
        placed[v as usize] = true;
    }
    (node_of, broken.len() as u32)
}

fn neighbour_lists(nodes: usize, edges: &[(u32, u32)]) -> Vec<Vec<u32>> {
    let mut nb = vec![Vec::new(); nodes];
    for &(a, b) in edges {
        nb[a as usize].push(b);
        nb[b as usize].push(a);
    }
    nb
}

/// Up to three passes: a virtual node with an edge longer than one hop moves to the free
/// healthy node that lowers the sum of its edges' squared hops most (ties: the lowest
/// index). True when anything moved.
///
/// As in [`place`], the search walks rings around the node's place and stops once no node
/// that far can do better: with k neighbours w at summed hops C from here, a node r hops
/// away has summed squared hops of at least `max(0, k·r − C)² / k`.
fn improve(
    physical: &Torus,
    faulty: &[bool],
    virt: &Torus,
    edges: &[(u32, u32)],
    node_of: &mut [u32],
) -> bool {
    let neighbours = neighbour_lists(virt.nodes() as usize, edges);
    let mut used = vec![false; physical.nodes() as usize];
    for &p in node_of.iter() {
        used[p as usize] = true;
    }
    let cost = |v: usize, p: u32, node_of: &[u32]| -> u64 {
        neighbours[v]
            .iter()
            .map(|&w| {
                let h = physical.distance(p, node_of[w as usize]) as u64;
                h * h
            })
            .sum()
    };
    let mut moved = false;
    for _pass in 0..3 {
        let mut moved_now = false;
        for v in 0..node_of.len() {
            let here = node_of[v];
            let stretched = neighbours[v]
                .iter()
                .any(|&w| physical.distance(here, node_of[w as usize]) > 1);
            if !stretched {
                continue;
            }
            let now = cost(v, here, node_of);
            let k = neighbours[v].len() as u64;
            let spread: u64 = neighbours[v]
                .iter()
                .map(|&w| physical.distance(here, node_of[w as usize]) as u64)
                .sum();
            // The least (cost, node) below `now`; `here` when none.
            let mut best = (now, here);
            for r in 1..=physical.radius() {
                let hops = (k * r as u64).saturating_sub(spread);
                let least = hops * hops / k;
                if least > best.0 || least >= now {
                    break;
                }
                let node_of = &*node_of;
                physical.ring(here, r, &mut |p| {
                    if used[p as usize] || faulty[p as usize] {
                        return;
                    }
                    let c = cost(v, p, node_of);
                    if c < now && (c, p) < best {
                        best = (c, p);
                    }
                });
            }
            if best.1 != here {
                used[here as usize] = false;
                used[best.1 as usize] = true;
                node_of[v] = best.1;
                moved_now = true;
            }
        }
        moved |= moved_now;
        if !moved_now {
            break;
        }
    }
    moved
}

/// Dilation and congestion of `node_of` over the virtual `edges`.
pub fn measure(
    physical: &Torus,
    edges: &[(u32, u32)],
    node_of: &[u32],
    repaired: u32,
    strategy: String,
) -> MapReport {
    let dims = physical.dims.len();
    let mut load = vec![0u32; physical.nodes() as usize * dims * 2];
    let (mut max, mut sum) = (0u32, 0u64);
    for &(a, b) in edges {
        let (pa, pb) = (node_of[a as usize], node_of[b as usize]);
        let h = physical.distance(pa, pb);
        max = max.max(h);
        sum += h as u64;
        // Dimension-ordered routing, the shorter way round (ties: upwards).
        let mut at = physical.coord(pa);
        let to = physical.coord(pb);
        for d in 0..dims {
            let len = physical.dims[d];
            let up = (to[d] + len - at[d]) % len;
            let (steps, dir) = if up <= len - up {
                (up, 0)
            } else {
                (len - up, 1)
            };
            for _ in 0..steps {
                let node = physical.index(&at) as usize;
                load[(node * dims + d) * 2 + dir] += 1;
                at[d] = if dir == 0 {
                    (at[d] + 1) % len
                } else {
                    (at[d] + len - 1) % len
                };
            }
        }
    }
    MapReport {
        edges: edges.len() as u64,
        max_dilation: max,
        mean_dilation: if edges.is_empty() {
            0.0
        } else {
            sum as f64 / edges.len() as f64
        },
        congestion: load.iter().copied().max().unwrap_or(0),
        repaired,
        strategy,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(physical: &Torus, faulty: &[bool], m: &TorusMap) {
        let mut seen = std::collections::HashSet::new();
        for &p in &m.node_of {
            assert!(!faulty[p as usize], "uses faulty node {p}");
            assert!(seen.insert(p), "uses node {p} twice");
        }
        assert_eq!(m.node_of.len() as u32, m.virtual_torus.nodes());
        let edges = virtual_edges(&m.virtual_torus);
        let again = measure(physical, &edges, &m.node_of, 0, String::new());
        assert_eq!(again.max_dilation, m.report.max_dilation);
        assert_eq!(again.congestion, m.report.congestion);
    }

    #[test]
    fn coordinates_and_distances_wrap() {
        let t = Torus::new(&[4, 3, 2]).unwrap();
        for i in 0..t.nodes() {
            assert_eq!(t.index(&t.coord(i)), i);
        }
        assert_eq!(t.distance(t.index(&[0, 0, 0]), t.index(&[3, 0, 0])), 1);
        assert_eq!(t.distance(t.index(&[0, 0, 0]), t.index(&[2, 1, 1])), 4);
        assert_eq!(Torus::parse("16x16x16").unwrap().nodes(), 4096);
        assert!(Torus::parse("4xx4").is_err());
        assert!(Torus::new(&[4, 0]).is_err());
    }

    #[test]
    fn rings_visit_every_node_once_at_its_distance() {
        for dims in [
            vec![1u32],
            vec![2],
            vec![5],
            vec![4, 3, 2],
            vec![6, 5],
            vec![2, 2, 7],
        ] {
            let t = Torus::new(&dims).unwrap();
            for center in 0..t.nodes() {
                let mut seen = vec![0u32; t.nodes() as usize];
                for r in 0..=t.radius() + 1 {
                    t.ring(center, r, &mut |p| {
                        assert_eq!(t.distance(center, p), r, "{dims:?} {center} {p}");
                        seen[p as usize] += 1;
                    });
                }
                assert!(seen.iter().all(|&k| k == 1), "{dims:?} {center}: {seen:?}");
            }
        }
    }

    #[test]
    fn a_healthy_machine_of_the_asked_shape_maps_one_to_one() {
        let t = Torus::new(&[4, 4, 3]).unwrap();
        let m = map_torus(&t, &[false; 48], &[4, 4, 3]).unwrap();
        check(&t, &[false; 48], &m);
        assert_eq!((m.report.max_dilation, m.report.congestion), (1, 1));
        assert_eq!(m.report.repaired, 0);
        // 4x4 edges: 2 per node in each dimension longer than 2; 3 wraps too.
        assert_eq!(m.report.edges, 48 * 3);
    }

    /// Every placement of one and of two faults on small tori: the map is valid, its report
    /// is right, and a dimension left with spare planes hides the faults completely.
    #[test]
    fn every_one_and_two_fault_pattern_on_small_tori() {
        for (dims, want) in [
            (vec![4u32, 4], vec![3u32, 4]),
            (vec![5, 4], vec![4, 4]),
            (vec![4, 3, 3], vec![3, 3, 3]),
            (vec![4, 4], vec![3, 3]),
        ] {
            let t = Torus::new(&dims).unwrap();
            let n = t.nodes() as usize;
            for a in 0..n {
                for b in a..n {
                    let mut faulty = vec![false; n];
                    faulty[a] = true;
                    faulty[b] = true;
                    let m = map_torus(&t, &faulty, &want).unwrap();
                    check(&t, &faulty, &m);
                    let same_plane_0 = t.coord(a as u32)[0] == t.coord(b as u32)[0];
                    let spare0 = dims[0] - want[0];
                    if a == b || (spare0 >= 1 && same_plane_0) || spare0 >= 2 {
                        // Dropping planes of dimension 0 removes them: no repair, and a
                        // dropped plane stretches an edge by one hop at most per plane.
                        assert!(
                            m.report.max_dilation <= 1 + spare0,
                            "{dims:?} {want:?} faults {a},{b}: {:?}",
                            m.report
                        );
                    }
                    assert!(
                        m.report.max_dilation <= 4,
                        "{dims:?} {want:?} faults {a},{b}: {:?}",
                        m.report
                    );
                }
            }
        }
    }

    /// Against every assignment on a tiny torus: the heuristic's largest dilation is the
    /// optimum.
    #[test]
    fn the_largest_dilation_matches_brute_force_on_tiny_tori() {
        let t = Torus::new(&[3, 3]).unwrap();
        let virt = Torus::new(&[2, 3]).unwrap();
        let edges = virtual_edges(&virt);
        for fault in 0..9usize {
            let mut faulty = vec![false; 9];
            faulty[fault] = true;
            faulty[(fault * 5 + 3) % 9] = true;
            let healthy: Vec<u32> = (0..9).filter(|&i| !faulty[i as usize]).collect();
            let mut best = u32::MAX;
            permutations(&healthy, 6, &mut Vec::new(), &mut |p| {
                let r = measure(&t, &edges, p, 0, String::new());
                best = best.min(r.max_dilation);
            });
            let m = map_torus(&t, &faulty, &[2, 3]).unwrap();
            check(&t, &faulty, &m);
            assert_eq!(m.report.max_dilation, best, "faults {faulty:?}");
        }
    }

    fn permutations(items: &[u32], k: usize, acc: &mut Vec<u32>, f: &mut impl FnMut(&[u32])) {
        if acc.len() == k {
            f(acc);
            return;
        }
        for &x in items {
            if !acc.contains(&x) {
                acc.push(x);
                permutations(items, k, acc, f);
                acc.pop();
            }
        }
    }

    #[test]
    fn bad_requests_are_errors_that_say_why() {
        let t = Torus::new(&[4, 4]).unwrap();
        let mut faulty = vec![false; 16];
        faulty[0] = true;
        let e = map_torus(&t, &faulty, &[4, 4]).unwrap_err();
        assert!(e.message().contains("15 healthy of 16"), "{e}");
        let e = map_torus(&t, &faulty, &[5, 2]).unwrap_err();
        assert!(e.message().contains("does not fit in 4x4"), "{e}");
        let e = map_torus(&t, &faulty, &[2, 2, 2]).unwrap_err();
        assert!(e.message().contains("3-dimensional"), "{e}");
        assert!(map_torus(&t, &[false; 3], &[2]).is_err());
    }
}
