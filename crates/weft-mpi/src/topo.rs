//! Process topologies beyond the Cartesian one: graph and distributed graph communicators
//! (MPI-4.1 §8.5.3-8.5.4, §8.5.5 inquiry) and the neighborhood collectives on every topology
//! (§8.6), Cartesian included.
//!
//! Neighborhood collectives exchange point-to-point messages with the neighbors only: the
//! blocks a rank sends to one peer travel as one message, packed in the sender's neighbor
//! order, and the receiver unpacks them into its neighbor slots naming that peer in the
//! order MPI pairs them (§8.6: the k-th edge from a to b in a's destinations is the k-th
//! edge from a in b's sources; on a Cartesian grid the block from the -1 neighbor of a
//! dimension is what that neighbor sent to its +1 neighbor). Any datatype works (blocks are
//! packed). A call costs one message per distinct neighbor each way, whatever the size of
//! the communicator. The messages travel on a private duplicate of the topology
//! communicator ([`Neighborhood`], made when the topology is attached), so no program
//! receive can take them; the blocking and nonblocking calls all use tag 0 (every rank
//! posts a call's messages in call order, and a pair of ranks exchanges a message in every
//! call or in none, so they pair up in order), each persistent request a tag of its own
//! (its starts may come in different orders on different ranks). The nonblocking and
//! persistent forms are compound requests (compound.rs): the start posts the messages, the
//! completion unpacks. Buffers may be MPI_BOTTOM with types of absolute addresses.
//!
//! Depends on weft's communicators and datatype engine and on this crate's handle tables;
//! nothing in weft depends on it.

use crate::consts::*;
use crate::dtype::{map_of, put, user_view};
use crate::error::{err, finish, R};
use crate::icoll::Started;
use crate::stage::Unpack;
use crate::state::{state, State};
use std::ffi::{c_int, c_void};
use std::rc::Rc;
use weft::dtype::TypeMap;
use weft::raw::RawRequest;

/// The private context of a topology communicator's neighborhood collectives: a duplicate
/// of it, and how many persistent neighborhood requests it has had (their tags).
pub struct Neighborhood {
    comm: weft::Comm,
    persistent_inits: i32,
}

/// Gives topology communicator `h` its neighborhood context. Collective over `h` (every
/// caller of a topology constructor that gets `h` calls it, in the same place).
pub(crate) fn attach_neighborhood(s: &mut State, h: Handle) -> R<()> {
    let comm = s.comm(h)?.comm.dup()?;
    s.comm_mut(h)?.neighbor = Some(Neighborhood {
        comm,
        persistent_inits: 0,
    });
    Ok(())
}

/// The tag of a new persistent neighborhood request on `comm` (1, 2, ...: 0 is the other
/// calls'); every rank creates them in the same order (MPI-4.1 §8.8).
fn persistent_tag(comm: Handle) -> R<i32> {
    let s = state("persistent neighborhood collective")?;
    let nb = s
        .comm_mut(comm)?
        .neighbor
        .as_mut()
        .ok_or_else(no_neighborhood)?;
    nb.persistent_inits = nb.persistent_inits.checked_add(1).ok_or_else(|| {
        err(
            MPI_ERR_INTERN,
            "more than 2^31 persistent neighborhood requests on one communicator",
        )
    })?;
    Ok(nb.persistent_inits)
}

fn no_neighborhood() -> crate::error::MpiError {
    err(
        MPI_ERR_INTERN,
        "the topology communicator has no neighborhood context",
    )
}

/// A graph or distributed graph topology attached to a communicator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GraphTopo {
    /// MPI_Graph_create: the whole graph, as the `index` and `edges` arrays were given
    /// (node i's neighbors are `edges[index[i-1]..index[i]]`).
    Graph {
        index: Vec<c_int>,
        edges: Vec<c_int>,
    },
    /// MPI_Dist_graph_create(_adjacent): this rank's in- and out-neighbors in the order
    /// given, with their weights when the program gave weights.
    Dist {
        sources: Vec<c_int>,
        source_weights: Option<Vec<c_int>>,
        destinations: Vec<c_int>,
        dest_weights: Option<Vec<c_int>>,
    },
}

impl GraphTopo {
    /// The neighbors of `rank` in a graph topology (`edges[index[rank-1]..index[rank]]`).
    fn graph_neighbors<'a>(index: &[c_int], edges: &'a [c_int], rank: usize) -> &'a [c_int] {
        let lo = if rank == 0 {
            0
        } else {
            index[rank - 1] as usize
        };
        &edges[lo..index[rank] as usize]
    }
}

/// The neighbor lists a neighborhood collective of the calling rank uses: where receive
/// slot k comes from, where send slot k goes, and whether the pairing is the Cartesian one.
struct Neighbors {
    sources: Vec<c_int>,
    destinations: Vec<c_int>,
    cartesian: bool,
}

fn topology_neighbors(s: &State, comm: Handle) -> R<Neighbors> {
    let e = s.comm(comm)?;
    let me = e.comm.rank() as usize;
    if let Some((dims, periods)) = &e.cart {
        let n = crate::comm::cart_neighbors(dims, periods, me as c_int);
        return Ok(Neighbors {
            sources: n.clone(),
            destinations: n,
            cartesian: true,
        });
    }
    match &e.graph {
        Some(GraphTopo::Graph { index, edges }) => {
            let n = GraphTopo::graph_neighbors(index, edges, me).to_vec();
            Ok(Neighbors {
                sources: n.clone(),
                destinations: n,
                cartesian: false,
            })
        }
        Some(GraphTopo::Dist {
            sources,
            destinations,
            ..
        }) => Ok(Neighbors {
            sources: sources.clone(),
            destinations: destinations.clone(),
            cartesian: false,
        }),
        None => Err(err(
            MPI_ERR_TOPOLOGY,
            format!("communicator {comm:#x} has no process topology"),
        )),
    }
}

/// (in-degree, out-degree) of the calling rank in `comm`'s topology: the lengths of a
/// neighborhood collective's receive and send arrays.
pub(crate) fn degrees(s: &State, comm: Handle) -> R<(usize, usize)> {
    let n = topology_neighbors(s, comm)?;
    Ok((n.sources.len(), n.destinations.len()))
}

fn slice<'a, T>(n: usize, p: *const T, what: &str) -> R<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, format!("{what} is NULL")));
    }
    // SAFETY: the array holds n entries (the caller's MPI contract).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

fn degree(n: c_int, what: &str) -> R<usize> {
    usize::try_from(n).map_err(|_| err(MPI_ERR_ARG, format!("{what} {n} is negative")))
}

fn check_ranks(list: &[c_int], size: usize, what: &str) -> R<()> {
    match list.iter().find(|&&r| r < 0 || r as usize >= size) {
        Some(r) => Err(err(
            MPI_ERR_RANK,
            format!("{what} names rank {r}, outside 0..{size}"),
        )),
        None => Ok(()),
    }
}

/// Reads a weight array: `None` for MPI_UNWEIGHTED, empty for MPI_WEIGHTS_EMPTY.
fn weights(n: usize, p: *const c_int, what: &str) -> R<Option<Vec<c_int>>> {
    match p as usize {
        MPI_UNWEIGHTED_ADDR => Ok(None),
        MPI_WEIGHTS_EMPTY_ADDR if n == 0 => Ok(Some(Vec::new())),
        MPI_WEIGHTS_EMPTY_ADDR => Err(err(
            MPI_ERR_ARG,
            format!("{what} is MPI_WEIGHTS_EMPTY for {n} edges"),
        )),
        _ => Ok(Some(slice(n, p, what)?.to_vec())),
    }
}

fn intra(s: &State, comm: Handle, what: &str) -> R<weft::Comm> {
    let c = &s.comm(comm)?.comm;
    if c.is_inter() {
        return Err(err(
            MPI_ERR_COMM,
            format!("{what} needs an intracommunicator, not an intercommunicator"),
        ));
    }
    Ok(c.clone())
}

/// Whether every rank's arguments passed their local checks, learnt by all (one word per
/// rank, gathered) before the collective part of a creation: a bad argument on one rank
/// then fails the call on every rank instead of leaving the others waiting in it. The rank
/// with the bad argument reports its own error, the others name it.
fn agree<T>(c: &weft::Comm, local: R<T>) -> R<T> {
    let mut all = vec![0u32; c.size() as usize];
    let mine = [local.is_ok() as u32];
    // SAFETY: the request is waited for before the buffers go.
    crate::threads::coll_released(unsafe { c.iallgather(&mine, &mut all)? })?;
    let local = local?;
    match all.iter().position(|&ok| ok == 0) {
        Some(r) => Err(err(
            MPI_ERR_ARG,
            format!("rank {r} passed invalid arguments to the same call"),
        )),
        None => Ok(local),
    }
}

// ------------------------------------------------------------------- graph topology (§8.5.3)

/// Reads and checks the `index` and `edges` arrays of a graph of `nnodes` nodes on a
/// communicator of `size` ranks (MPI_Graph_create, MPI_Graph_map).
fn read_graph(
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    size: u32,
) -> R<(usize, Vec<c_int>, Vec<c_int>)> {
    let nodes = degree(nnodes, "nnodes")?;
    if nodes > size as usize {
        return Err(err(
            MPI_ERR_ARG,
            format!("nnodes {nnodes} exceeds communicator size {size}"),
        ));
    }
    let index = slice(nodes, index, "index")?.to_vec();
    if index.windows(2).any(|w| w[1] < w[0]) || index.first().is_some_and(|&x| x < 0) {
        return Err(err(
            MPI_ERR_ARG,
            format!("index {index:?} is not non-decreasing from 0"),
        ));
    }
    let nedges = index.last().copied().unwrap_or(0) as usize;
    let edges = slice(nedges, edges, "edges")?.to_vec();
    check_ranks(&edges, nodes, "edges")?;
    Ok((nodes, index, edges))
}

/// The split (color, key) that gives this process its node of a graph of `nodes` nodes:
/// with `reorder`, graph neighbours share a node where the members' nodes allow
/// (`weft::Comm::graph_order_by_node`: never more edges between nodes than the given
/// order); without, ranks keep their order. Ranks past the graph get MPI_UNDEFINED.
fn graph_place(
    c: &weft::Comm,
    nodes: usize,
    index: &[c_int],
    edges: &[c_int],
    reorder: bool,
) -> (i32, c_int) {
    let me = c.rank() as usize;
    let position = if reorder {
        let list: Vec<(u32, u32, u64)> = (0..nodes)
            .flat_map(|v| {
                GraphTopo::graph_neighbors(index, edges, v)
                    .iter()
                    .map(move |&n| (v as u32, n as u32, 1))
            })
            .collect();
        let order = c.graph_order_by_node(nodes, &list);
        order.rank_at.iter().position(|&r| r as usize == me)
    } else {
        (me < nodes).then_some(me)
    };
    match position {
        Some(p) => (0, p as c_int),
        None => (weft::UNDEFINED, MPI_UNDEFINED),
    }
}

/// MPI_Graph_create (MPI-4.1 §8.5.3): with `reorder`, processes take the graph's nodes so
/// that graph neighbours share a node where the members' nodes allow (never more edges
/// between nodes than the given order); without, ranks keep their order. Ranks at or above
/// `nnodes` get MPI_COMM_NULL.
#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_create(
    comm: Handle,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    reorder: c_int,
    newcomm: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Graph_create")?;
        let c = intra(s, comm, "a graph topology")?;
        let checked = (|| {
            if newcomm.is_null() {
                return Err(err(MPI_ERR_ARG, "newcomm is NULL"));
            }
            read_graph(nnodes, index, edges, c.size())
        })();
        let (nodes, index, edges) = agree(&c, checked)?;
        let (color, key) = graph_place(&c, nodes, &index, &edges, reorder != 0);
        let nc = crate::comm::split_of("MPI_Graph_create", comm, color, key)?;
        let s = state("MPI_Graph_create")?;
        let h = match nc {
            Some(nc) => s.add_comm(nc),
            None => MPI_COMM_NULL,
        };
        put!(newcomm, h)?;
        if h != MPI_COMM_NULL {
            s.comm_mut(h)?.graph = Some(GraphTopo::Graph { index, edges });
            attach_neighborhood(s, h)?;
        }
        Ok(())
    })();
    finish(comm, "MPI_Graph_create", r)
}

fn graph(s: &State, comm: Handle) -> R<(&[c_int], &[c_int])> {
    match &s.comm(comm)?.graph {
        Some(GraphTopo::Graph { index, edges }) => Ok((index, edges)),
        _ => Err(err(
            MPI_ERR_TOPOLOGY,
            format!("communicator {comm:#x} has no graph topology"),
        )),
    }
}

/// MPI_Graphdims_get (MPI-4.1 §8.5.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Graphdims_get(
    comm: Handle,
    nnodes: *mut c_int,
    nedges: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Graphdims_get")?;
        let (index, edges) = graph(s, comm)?;
        put!(nnodes, index.len() as c_int)?;
        put!(nedges, edges.len() as c_int)
    })();
    finish(comm, "MPI_Graphdims_get", r)
}

/// Copies up to `max` entries of `src` to `out` (MPI's inquiry calls truncate to the
/// caller's array).
fn fill(src: &[c_int], max: c_int, out: *mut c_int, what: &str) -> R<()> {
    let n = src.len().min(max.max(0) as usize);
    if n == 0 {
        return Ok(());
    }
    if out.is_null() {
        return Err(err(MPI_ERR_ARG, format!("{what} is NULL")));
    }
    // SAFETY: the caller's array holds `max` >= n entries.
    unsafe { std::slice::from_raw_parts_mut(out, n) }.copy_from_slice(&src[..n]);
    Ok(())
}

/// MPI_Graph_get (MPI-4.1 §8.5.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_get(
    comm: Handle,
    maxindex: c_int,
    maxedges: c_int,
    index: *mut c_int,
    edges: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Graph_get")?;
        let (i, e) = graph(s, comm)?;
        fill(i, maxindex, index, "index")?;
        fill(e, maxedges, edges, "edges")
    })();
    finish(comm, "MPI_Graph_get", r)
}

fn graph_rank(index: &[c_int], rank: c_int) -> R<usize> {
    if rank < 0 || rank as usize >= index.len() {
        return Err(err(
            MPI_ERR_RANK,
            format!(
                "rank {rank} is not a node of the graph (0..{})",
                index.len()
            ),
        ));
    }
    Ok(rank as usize)
}

/// MPI_Graph_neighbors_count (MPI-4.1 §8.5.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_neighbors_count(
    comm: Handle,
    rank: c_int,
    nneighbors: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Graph_neighbors_count")?;
        let (index, edges) = graph(s, comm)?;
        let n = GraphTopo::graph_neighbors(index, edges, graph_rank(index, rank)?).len();
        put!(nneighbors, n as c_int)
    })();
    finish(comm, "MPI_Graph_neighbors_count", r)
}

/// MPI_Graph_neighbors (MPI-4.1 §8.5.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_neighbors(
    comm: Handle,
    rank: c_int,
    maxneighbors: c_int,
    neighbors: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Graph_neighbors")?;
        let (index, edges) = graph(s, comm)?;
        let n = GraphTopo::graph_neighbors(index, edges, graph_rank(index, rank)?);
        fill(n, maxneighbors, neighbors, "neighbors")
    })();
    finish(comm, "MPI_Graph_neighbors", r)
}

/// MPI_Graph_map (MPI-4.1 §8.5.8): the placement MPI_Graph_create makes with `reorder`
/// (graph neighbours on one node where the members' nodes allow; MPI_UNDEFINED past the
/// graph).
#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_map(
    comm: Handle,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Graph_map")?;
        let c = intra(s, comm, "MPI_Graph_map")?;
        let (nodes, index, edges) = read_graph(nnodes, index, edges, c.size())?;
        let (_, key) = graph_place(&c, nodes, &index, &edges, true);
        put!(newrank, key)
    })();
    finish(comm, "MPI_Graph_map", r)
}

// ------------------------------------------------------- distributed graph topology (§8.5.4)

/// MPI_Dist_graph_create_adjacent (MPI-4.1 §8.5.4): every rank names its own in- and
/// out-neighbors; the new communicator has the same group in the same order, also with
/// `reorder` (permitted, not required): a distributed graph's edges stay with the processes
/// that named them, so renumbering ranks would move no traffic between nodes.
#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_create_adjacent(
    comm: Handle,
    indegree: c_int,
    sources: *const c_int,
    sourceweights: *const c_int,
    outdegree: c_int,
    destinations: *const c_int,
    destweights: *const c_int,
    _info: Handle,
    _reorder: c_int,
    newcomm: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Dist_graph_create_adjacent")?;
        let c = intra(s, comm, "a distributed graph topology")?;
        let size = c.size() as usize;
        let checked = (|| {
            if newcomm.is_null() {
                return Err(err(MPI_ERR_ARG, "comm_dist_graph is NULL"));
            }
            let (ni, no) = (
                degree(indegree, "indegree")?,
                degree(outdegree, "outdegree")?,
            );
            let sources = slice(ni, sources, "sources")?.to_vec();
            let destinations = slice(no, destinations, "destinations")?.to_vec();
            check_ranks(&sources, size, "sources")?;
            check_ranks(&destinations, size, "destinations")?;
            let source_weights = weights(ni, sourceweights, "sourceweights")?;
            let dest_weights = weights(no, destweights, "destweights")?;
            Ok((sources, source_weights, destinations, dest_weights))
        })();
        let (sources, source_weights, destinations, dest_weights) = agree(&c, checked)?;
        let d = crate::comm::dup_of("MPI_Dist_graph_create_adjacent", comm)?;
        let s = state("MPI_Dist_graph_create_adjacent")?;
        let h = s.add_comm(d);
        put!(newcomm, h)?;
        s.comm_mut(h)?.graph = Some(GraphTopo::Dist {
            sources,
            source_weights,
            destinations,
            dest_weights,
        });
        attach_neighborhood(s, h)
    })();
    finish(comm, "MPI_Dist_graph_create_adjacent", r)
}

/// MPI_Dist_graph_create (MPI-4.1 §8.5.4): any rank may name any edge; each edge is sent
/// to both of its ends (one alltoall of counts, one alltoallv of edges). Both ends order
/// their edges by (naming rank, position in its list), so several edges between the same
/// pair are paired in the same order on both sides. Ranks keep their order, also with
/// `reorder` (see MPI_Dist_graph_create_adjacent).
#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_create(
    comm: Handle,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    destinations: *const c_int,
    weights_in: *const c_int,
    _info: Handle,
    _reorder: c_int,
    newcomm: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Dist_graph_create")?;
        let c = intra(s, comm, "a distributed graph topology")?;
        let size = c.size() as usize;
        let checked = (|| {
            if newcomm.is_null() {
                return Err(err(MPI_ERR_ARG, "comm_dist_graph is NULL"));
            }
            let n = degree(n, "n")?;
            let srcs = slice(n, sources, "sources")?;
            let degs = slice(n, degrees, "degrees")?;
            check_ranks(srcs, size, "sources")?;
            if let Some(d) = degs.iter().find(|&&d| d < 0) {
                return Err(err(MPI_ERR_ARG, format!("degree {d} is negative")));
            }
            let total: usize = degs.iter().map(|&d| d as usize).sum();
            let dsts = slice(total, destinations, "destinations")?;
            check_ranks(dsts, size, "destinations")?;
            let w = weights(total, weights_in, "weights")?;
            Ok((srcs, degs, dsts, w))
        })();
        let (srcs, degs, dsts, w) = agree(&c, checked)?;
        // Weightedness must agree on every rank (MPI: all or none pass MPI_UNWEIGHTED).
        let weighted = w.is_some() as u32;
        let mut flags = vec![0u32; size];
        let mine = [weighted];
        // SAFETY: the request is waited for before the buffers go.
        crate::threads::coll_released(unsafe { c.iallgather(&mine, &mut flags)? })?;
        if flags.iter().any(|&f| f != weighted) {
            return Err(err(
                MPI_ERR_ARG,
                "some ranks passed MPI_UNWEIGHTED and others weights",
            ));
        }
        // Each edge as (to_source: 1 = an out-edge of the receiver, peer, weight) words to
        // each of its two ends; self-edges go twice to the same rank, once per role.
        let mut per: Vec<Vec<i32>> = vec![Vec::new(); size];
        let mut k = 0;
        for (i, &src) in srcs.iter().enumerate() {
            for _ in 0..degs[i] {
                let dst = dsts[k];
                let wt = w.as_ref().map_or(1, |w| w[k]);
                per[src as usize].extend_from_slice(&[1, dst, wt]);
                per[dst as usize].extend_from_slice(&[0, src, wt]);
                k += 1;
            }
        }
        let counts: Vec<u32> = per.iter().map(|v| v.len() as u32).collect();
        let mut rcounts = vec![0u32; size];
        // SAFETY: the request is waited for before the buffers go.
        crate::threads::coll_released(unsafe { c.ialltoall(&counts, &mut rcounts)? })?;
        let (mut sbuf, mut sc, mut sd) = (Vec::new(), vec![0usize; size], vec![0usize; size]);
        for p in 0..size {
            sd[p] = sbuf.len();
            sc[p] = per[p].len();
            sbuf.extend_from_slice(&per[p]);
        }
        let (mut rc, mut rd, mut rtotal) = (vec![0usize; size], vec![0usize; size], 0);
        for p in 0..size {
            rd[p] = rtotal;
            rc[p] = rcounts[p] as usize;
            rtotal += rc[p];
        }
        let mut rbuf = vec![0i32; rtotal];
        // SAFETY: the request is waited for before the buffers go.
        crate::threads::coll_released(unsafe {
            c.ialltoallv(&sbuf, &sc, &sd, &mut rbuf, &rc, &rd)?
        })?;
        let (mut ins, mut inw, mut outs, mut outw) = (vec![], vec![], vec![], vec![]);
        for e in rbuf.chunks_exact(3) {
            if e[0] == 1 {
                outs.push(e[1]);
                outw.push(e[2]);
            } else {
                ins.push(e[1]);
                inw.push(e[2]);
            }
        }
        let d = crate::comm::dup_of("MPI_Dist_graph_create", comm)?;
        let s = state("MPI_Dist_graph_create")?;
        let h = s.add_comm(d);
        put!(newcomm, h)?;
        s.comm_mut(h)?.graph = Some(GraphTopo::Dist {
            sources: ins,
            source_weights: w.as_ref().map(|_| inw),
            destinations: outs,
            dest_weights: w.as_ref().map(|_| outw),
        });
        attach_neighborhood(s, h)
    })();
    finish(comm, "MPI_Dist_graph_create", r)
}

fn dist(s: &State, comm: Handle) -> R<&GraphTopo> {
    match &s.comm(comm)?.graph {
        Some(g @ GraphTopo::Dist { .. }) => Ok(g),
        _ => Err(err(
            MPI_ERR_TOPOLOGY,
            format!("communicator {comm:#x} has no distributed graph topology"),
        )),
    }
}

/// MPI_Dist_graph_neighbors_count (MPI-4.1 §8.5.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_neighbors_count(
    comm: Handle,
    indegree: *mut c_int,
    outdegree: *mut c_int,
    weighted: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Dist_graph_neighbors_count")?;
        let GraphTopo::Dist {
            sources,
            destinations,
            source_weights,
            ..
        } = dist(s, comm)?
        else {
            unreachable!("dist() returns Dist only")
        };
        put!(indegree, sources.len() as c_int)?;
        put!(outdegree, destinations.len() as c_int)?;
        put!(weighted, source_weights.is_some() as c_int)
    })();
    finish(comm, "MPI_Dist_graph_neighbors_count", r)
}

/// MPI_Dist_graph_neighbors (MPI-4.1 §8.5.5): weights are written only for a weighted
/// graph and when the caller passes arrays for them.
#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_neighbors(
    comm: Handle,
    maxindegree: c_int,
    sources: *mut c_int,
    sourceweights: *mut c_int,
    maxoutdegree: c_int,
    destinations: *mut c_int,
    destweights: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Dist_graph_neighbors")?;
        let GraphTopo::Dist {
            sources: si,
            source_weights: sw,
            destinations: di,
            dest_weights: dw,
        } = dist(s, comm)?
        else {
            unreachable!("dist() returns Dist only")
        };
        fill(si, maxindegree, sources, "sources")?;
        fill(di, maxoutdegree, destinations, "destinations")?;
        let given =
            |p: *mut c_int| !matches!(p as usize, 0 | MPI_UNWEIGHTED_ADDR | MPI_WEIGHTS_EMPTY_ADDR);
        if let Some(sw) = sw {
            if given(sourceweights) {
                fill(sw, maxindegree, sourceweights, "sourceweights")?;
            }
        }
        if let Some(dw) = dw {
            if given(destweights) {
                fill(dw, maxoutdegree, destweights, "destweights")?;
            }
        }
        Ok(())
    })();
    finish(comm, "MPI_Dist_graph_neighbors", r)
}

/// The topology kind for MPI_Topo_test: MPI_CART, MPI_GRAPH, MPI_DIST_GRAPH or
/// MPI_UNDEFINED.
pub(crate) fn topo_kind(s: &State, comm: Handle) -> R<c_int> {
    let e = s.comm(comm)?;
    Ok(match (&e.cart, &e.graph) {
        (Some(_), _) => MPI_CART,
        (None, Some(GraphTopo::Graph { .. })) => MPI_GRAPH,
        (None, Some(GraphTopo::Dist { .. })) => MPI_DIST_GRAPH,
        (None, None) => MPI_UNDEFINED,
    })
}

// ------------------------------------------------------ neighborhood collectives (§8.6)

/// One block of a neighborhood collective: `count` items of `dt` at `buf`, or, when `buf`
/// is MPI_BOTTOM (NULL), at the absolute addresses of `dt` shifted by `shift` bytes (no
/// pointer is formed from NULL).
#[derive(Clone, Copy)]
struct Block {
    buf: *const c_void,
    shift: i64,
    count: i64,
    dt: Handle,
}

impl Block {
    /// The block's type map, shifted for a block at an offset from MPI_BOTTOM.
    fn map(&self) -> R<Rc<TypeMap>> {
        let map = map_of(self.dt)?;
        Ok(Rc::new(if self.shift != 0 {
            map.shifted(self.shift)?
        } else {
            map
        }))
    }
}

/// The blocks of one side, per neighbor slot, from the arguments' shapes.
enum Side<'a> {
    /// One block, the same for every slot (the send side of allgather).
    Same(Block),
    /// Slot k at `buf + k * count * extent`.
    Strided(Block),
    /// Slot k: `counts[k]` items at `buf + displs[k] * extent`.
    Varying {
        buf: *const c_void,
        counts: &'a [c_int],
        displs: &'a [c_int],
        dt: Handle,
    },
    /// Slot k: `counts[k]` items of `types[k]` at `buf + displs[k]` bytes.
    Typed {
        buf: *const c_void,
        counts: &'a [c_int],
        displs: &'a [isize],
        types: &'a [Handle],
    },
}

impl Side<'_> {
    fn block(&self, k: usize) -> R<Block> {
        // `bytes` past `buf`; from MPI_BOTTOM the offset shifts the type instead.
        let at = |buf: *const c_void, bytes: i64, count: i64, dt: Handle| {
            if buf.is_null() {
                Block {
                    buf,
                    shift: bytes,
                    count,
                    dt,
                }
            } else {
                Block {
                    buf: (buf as *const u8).wrapping_offset(bytes as isize) as *const c_void,
                    shift: 0,
                    count,
                    dt,
                }
            }
        };
        let b = match *self {
            Side::Same(b) => b,
            Side::Strided(b) => {
                let ext = map_of(b.dt)?.extent();
                at(b.buf, k as i64 * b.count * ext, b.count, b.dt)
            }
            Side::Varying {
                buf,
                counts,
                displs,
                dt,
            } => {
                let ext = map_of(dt)?.extent();
                at(buf, displs[k] as i64 * ext, counts[k] as i64, dt)
            }
            Side::Typed {
                buf,
                counts,
                displs,
                types,
            } => at(buf, displs[k] as i64, counts[k] as i64, types[k]),
        };
        if b.count < 0 {
            return Err(err(
                MPI_ERR_COUNT,
                format!("count {} for neighbor {k} is negative", b.count),
            ));
        }
        Ok(b)
    }
}

/// A neighborhood collective ready to run: the send blocks packed per peer in the sender's
/// slot order, and where each received block goes (MPI_PROC_NULL slots are skipped on both
/// sides: nothing is sent, the receive block is left as it is).
struct Exchange {
    /// The topology's neighborhood context.
    comm: weft::Comm,
    tag: i32,
    sbuf: Vec<u8>,
    /// One message per peer named in a send slot: (peer, offset, length) in `sbuf`.
    sends: Vec<(u32, usize, usize)>,
    /// One message per peer named in a receive slot: (peer, offset, length) in the packed
    /// receive buffer, whose size is `recv_bytes`.
    recvs: Vec<(u32, usize, usize)>,
    recv_bytes: usize,
    /// Per receive block: its type map, the user address (0 for MPI_BOTTOM), its count, and
    /// its offset and length in the packed receive buffer.
    blocks: Vec<(Rc<TypeMap>, usize, u64, usize, usize)>,
}

impl Exchange {
    /// Packs send slot k for `destinations[k]` and plans receive slot k from `sources[k]`.
    /// `sides` builds the two sides from the slot counts (in, out), which the v and w forms
    /// need to read their arrays.
    fn prepare<'a>(
        func: &str,
        comm: Handle,
        sides: impl FnOnce(usize, usize) -> R<(Side<'a>, Side<'a>)>,
    ) -> R<Exchange> {
        let s = state(func)?;
        let nb = topology_neighbors(s, comm)?;
        let (send, recv) = sides(nb.sources.len(), nb.destinations.len())?;
        let e = s.comm(comm)?;
        let n = e.comm.size() as usize;
        let c = e
            .neighbor
            .as_ref()
            .ok_or_else(no_neighborhood)?
            .comm
            .clone();
        let live = |r: c_int| (r >= 0).then_some(r as usize);
        // Send: for each peer, its slots' blocks in increasing slot order.
        let mut by_peer: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (k, &p) in nb.destinations.iter().enumerate() {
            if let Some(p) = live(p) {
                by_peer[p].push(k);
            }
        }
        let mut sbuf = Vec::new();
        let mut sends = Vec::new();
        for (p, slots) in by_peer.iter().enumerate() {
            if slots.is_empty() {
                continue;
            }
            let at = sbuf.len();
            for &k in slots {
                let b = send.block(k)?;
                let map = b.map()?;
                let len = map.packed_bytes(b.count as u64)? as usize;
                let at = sbuf.len();
                sbuf.resize(at + len, 0);
                if len > 0 {
                    // SAFETY: the block lies in the caller's send buffer (MPI contract).
                    let (src, origin, shifted) = unsafe { user_view(&map, b.buf, b.count as u64)? };
                    let m = shifted.as_ref().unwrap_or(&map);
                    m.pack(src, origin, b.count as u64, &mut sbuf[at..])?;
                }
            }
            sends.push((p as u32, at, sbuf.len() - at));
        }
        // Receive: from each peer, its blocks for my slots naming it, in the order the peer
        // packed them (its slot order: mine on a graph, mine with the direction flipped on
        // a Cartesian grid).
        let mut from_peer: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (k, &p) in nb.sources.iter().enumerate() {
            if let Some(p) = live(p) {
                from_peer[p].push(k);
            }
        }
        if nb.cartesian {
            for slots in &mut from_peer {
                slots.sort_unstable_by_key(|&k| k ^ 1);
            }
        }
        let mut total = 0;
        let (mut blocks, mut recvs) = (Vec::new(), Vec::new());
        for (p, slots) in from_peer.iter().enumerate() {
            if slots.is_empty() {
                continue;
            }
            let at = total;
            for &k in slots {
                let b = recv.block(k)?;
                let map = b.map()?;
                let len = map.packed_bytes(b.count as u64)? as usize;
                blocks.push((map, b.buf as usize, b.count as u64, total, len));
                total += len;
            }
            recvs.push((p as u32, at, total - at));
        }
        Ok(Exchange {
            comm: c,
            tag: 0,
            sbuf,
            sends,
            recvs,
            recv_bytes: total,
            blocks,
        })
    }

    /// The same exchange with the messages tagged `tag` (a persistent request's).
    fn tagged(self, tag: i32) -> Exchange {
        Exchange { tag, ..self }
    }

    /// Posts the receives into `rbuf` (the packed receive buffer), then the sends.
    ///
    /// # Safety
    /// `rbuf` holds `recv_bytes` bytes; it and `self.sbuf` stay alive and untouched until
    /// every returned request has completed or been dropped.
    unsafe fn post(&self, rbuf: *mut u8) -> R<(Vec<RawRequest>, Vec<RawRequest>)> {
        let c = &self.comm;
        let mut recvs = Vec::with_capacity(self.recvs.len());
        for &(p, at, len) in &self.recvs {
            // SAFETY: the caller's contract; `at + len <= recv_bytes` by construction.
            recvs.push(unsafe { c.raw_irecv(rbuf.add(at), len, p as i32, self.tag)? });
        }
        let mut sends = Vec::with_capacity(self.sends.len());
        for &(p, at, len) in &self.sends {
            // SAFETY: as above, in `sbuf`.
            sends.push(unsafe { c.raw_isend(self.sbuf.as_ptr().add(at), len, p, self.tag)? });
        }
        Ok((recvs, sends))
    }

    /// The receive buffer and the chain of unpacks from it into the user's blocks.
    fn receive_side(&self) -> (Vec<u8>, Option<Unpack>) {
        let rbuf = vec![0u8; self.recv_bytes];
        let base = rbuf.as_ptr() as usize;
        let mut unpack: Option<Unpack> = None;
        for (map, user, count, at, len) in &self.blocks {
            if *len == 0 {
                continue;
            }
            let u = Unpack::from_block(map.clone(), *user, *count, (base + at, *len));
            match unpack.as_mut() {
                Some(first) => first.then(u),
                None => unpack = Some(u),
            }
        }
        (rbuf, unpack)
    }

    /// Exchanges and unpacks before returning.
    fn run(self) -> R<()> {
        let (mut rbuf, unpack) = self.receive_side();
        // SAFETY: both buffers outlive the requests (dropped first: declared after them;
        // dropping one in flight cancels or finishes it).
        let (mut recvs, mut sends) = unsafe { self.post(rbuf.as_mut_ptr())? };
        for r in recvs.iter_mut().chain(sends.iter_mut()) {
            r.wait()?;
        }
        unpack.map_or(Ok(()), Unpack::run)
    }

    /// Starts the exchange as a compound request on `comm` whose final step unpacks; the
    /// step owns both buffers, so they outlive the messages.
    fn start(self, comm: Handle) -> R<Started> {
        let (mut rbuf, unpack) = self.receive_side();
        // SAFETY: the buffers' heap blocks move into the final step (moving a Vec does not
        // move its block), which the request keeps until every message has completed.
        let (recvs, sends) = unsafe { self.post(rbuf.as_mut_ptr())? };
        let s = state("neighborhood collective")?;
        let mut parts = Vec::with_capacity(recvs.len() + sends.len());
        for (r, recv) in recvs
            .into_iter()
            .map(|r| (r, true))
            .chain(sends.into_iter().map(|r| (r, false)))
        {
            parts.push(s.add_req(crate::state::ReqEntry::started(r, recv, comm)));
        }
        let sbuf = self.sbuf;
        let then: crate::compound::Then = Box::new(move |_: &mut State| {
            let _keep = (sbuf, rbuf);
            unpack.map_or(Ok(()), Unpack::run)
        });
        Ok(Started::compound(crate::compound::new(parts, Some(then))))
    }
}

fn block(buf: *const c_void, count: c_int, dt: Handle) -> Block {
    Block {
        buf,
        shift: 0,
        count: count as i64,
        dt,
    }
}

/// The neighborhood collectives, each blocking, nonblocking (MPI-4.1 §8.7: the request
/// completes when the exchange does and unpacks then) and persistent (§8.8: every MPI_Start
/// packs the send buffer again), each exported form a call of its `_as` form (named after
/// the three names) for the call `func` the user made. The six names share a line ending in
/// `;` so the build script sees the three exported ones as defined. `$body` prepares the
/// exchange from the arguments.
macro_rules! neighbor_fns {
    (
        $blocking:ident, $nonblocking:ident, $persistent:ident,
        $blocking_as:ident, $nonblocking_as:ident, $persistent_as:ident;
        ($($arg:ident: $ty:ty),*), |$func:ident| $body:expr
    ) => {
        #[doc = concat!("`", stringify!($blocking), "` (MPI-4.1 §8.6) on any process topology.")]
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $blocking($($arg: $ty,)* comm: Handle) -> c_int {
            // SAFETY: the caller's MPI contract, passed on.
            unsafe { $blocking_as(stringify!($blocking), $($arg,)* comm) }
        }

        #[doc = concat!("`", stringify!($blocking), "`'s work for the call `func` the user made (")]
        #[doc = concat!("`", stringify!($blocking), "` itself or a call built on it), which its")]
        #[doc = "errors name and whose handler they reach; runs the twin check and enters itself."]
        #[doc = ""]
        #[doc = "# Safety"]
        #[doc = concat!("`", stringify!($blocking), "`'s contract.")]
        #[inline(always)]
        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe fn $blocking_as(func: &str, $($arg: $ty,)* comm: Handle) -> c_int {
            let $func = func;
            if crate::threads::twins() {
                // The nonblocking twin's work, its errors named after this call.
                let start = move |request: *mut Handle| {
                    let r = crate::icoll::file($func, comm, request, || $body(comm)?.start(comm));
                    finish(comm, $func, r)
                };
                // SAFETY: the caller's MPI contract, forwarded to the twin; no status.
                return unsafe { crate::threads::by_twin($func, start, std::ptr::null_mut()) };
            }
            let _entered = crate::threads::enter_untwinned();
            let r: R<()> = $body(comm).and_then(Exchange::run);
            finish(comm, $func, r)
        }

        #[doc = concat!("`", stringify!($nonblocking), "` (MPI-4.1 §8.7).")]
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $nonblocking(
            $($arg: $ty,)*
            comm: Handle,
            request: *mut Handle,
        ) -> c_int {
            let _entered = crate::threads::enter();
            // SAFETY: the caller's MPI contract, passed on.
            unsafe { $nonblocking_as(stringify!($nonblocking), $($arg,)* comm, request) }
        }

        #[doc = concat!("`", stringify!($nonblocking), "`'s work for the call `func` the user made (")]
        #[doc = concat!("`", stringify!($nonblocking), "` itself or a call built on it), which its")]
        #[doc = "errors name and whose handler they reach; runs inside the caller's hold"]
        #[doc = "(crate::threads::enter)."]
        #[doc = ""]
        #[doc = "# Safety"]
        #[doc = concat!("`", stringify!($nonblocking), "`'s contract.")]
        #[inline(always)]
        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe fn $nonblocking_as(
            func: &str,
            $($arg: $ty,)*
            comm: Handle,
            request: *mut Handle,
        ) -> c_int {
            let $func = func;
            let r = crate::icoll::file($func, comm, request, || $body(comm)?.start(comm));
            finish(comm, $func, r)
        }

        #[doc = concat!("`", stringify!($persistent), "` (MPI-4.1 §8.8).")]
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $persistent(
            $($arg: $ty,)*
            comm: Handle,
            info: Handle,
            request: *mut Handle,
        ) -> c_int {
            let _entered = crate::threads::enter();
            // SAFETY: the caller's MPI contract, passed on.
            unsafe { $persistent_as(stringify!($persistent), $($arg,)* comm, info, request) }
        }

        #[doc = concat!("`", stringify!($persistent), "`'s work for the call `func` the user made (")]
        #[doc = concat!("`", stringify!($persistent), "` itself or a call built on it), which its")]
        #[doc = "errors name and whose handler they reach; runs inside the caller's hold"]
        #[doc = "(crate::threads::enter). Errors of a later start name the call that starts the"]
        #[doc = "request (MPI_Start or MPI_Startall, MPI-4.1 §3.9)."]
        #[doc = ""]
        #[doc = "# Safety"]
        #[doc = concat!("`", stringify!($persistent), "`'s contract.")]
        #[inline(always)]
        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe fn $persistent_as(
            func: &str,
            $($arg: $ty,)*
            comm: Handle,
            _info: Handle,
            request: *mut Handle,
        ) -> c_int {
            let $func = func;
            // Arguments are checked now (a bad one fails the init call, on every rank alike)
            // and read again at each start, as MPI lets the program change the buffers' data.
            let r = $body(comm).and_then(|_| {
                let tag = persistent_tag(comm)?;
                let restart: crate::icoll::Restart = Rc::new(move |start| {
                    // The body's errors at a start name the call that starts the request.
                    let $func = start;
                    $body(comm)?.tagged(tag).start(comm)
                });
                crate::icoll::file_persistent($func, comm, restart, request)
            });
            finish(comm, $func, r)
        }
    };
}

neighbor_fns!(
    MPI_Neighbor_allgather, MPI_Ineighbor_allgather, MPI_Neighbor_allgather_init, neighbor_allgather_as, ineighbor_allgather_as, neighbor_allgather_init_as;
    (sbuf: *const c_void, scount: c_int, sdt: Handle, rbuf: *mut c_void, rcount: c_int, rdt: Handle),
    |func| |comm: Handle| Exchange::prepare(func, comm, |_, _| {
        Ok((
            Side::Same(block(sbuf, scount, sdt)),
            Side::Strided(block(rbuf, rcount, rdt)),
        ))
    })
);

neighbor_fns!(
    MPI_Neighbor_allgatherv, MPI_Ineighbor_allgatherv, MPI_Neighbor_allgatherv_init, neighbor_allgatherv_as, ineighbor_allgatherv_as, neighbor_allgatherv_init_as;
    (
        sbuf: *const c_void,
        scount: c_int,
        sdt: Handle,
        rbuf: *mut c_void,
        rcounts: *const c_int,
        displs: *const c_int,
        rdt: Handle
    ),
    |func| |comm: Handle| {
        Exchange::prepare(func, comm, |ni, _| {
            Ok((
                Side::Same(block(sbuf, scount, sdt)),
                Side::Varying {
                    buf: rbuf,
                    counts: slice(ni, rcounts, "recvcounts")?,
                    displs: slice(ni, displs, "displs")?,
                    dt: rdt,
                },
            ))
        })
    }
);

neighbor_fns!(
    MPI_Neighbor_alltoall, MPI_Ineighbor_alltoall, MPI_Neighbor_alltoall_init, neighbor_alltoall_as, ineighbor_alltoall_as, neighbor_alltoall_init_as;
    (sbuf: *const c_void, scount: c_int, sdt: Handle, rbuf: *mut c_void, rcount: c_int, rdt: Handle),
    |func| |comm: Handle| Exchange::prepare(func, comm, |_, _| {
        Ok((
            Side::Strided(block(sbuf, scount, sdt)),
            Side::Strided(block(rbuf, rcount, rdt)),
        ))
    })
);

neighbor_fns!(
    MPI_Neighbor_alltoallv, MPI_Ineighbor_alltoallv, MPI_Neighbor_alltoallv_init, neighbor_alltoallv_as, ineighbor_alltoallv_as, neighbor_alltoallv_init_as;
    (
        sbuf: *const c_void,
        scounts: *const c_int,
        sdispls: *const c_int,
        sdt: Handle,
        rbuf: *mut c_void,
        rcounts: *const c_int,
        rdispls: *const c_int,
        rdt: Handle
    ),
    |func| |comm: Handle| {
        Exchange::prepare(func, comm, |ni, no| {
            Ok((
                Side::Varying {
                    buf: sbuf,
                    counts: slice(no, scounts, "sendcounts")?,
                    displs: slice(no, sdispls, "sdispls")?,
                    dt: sdt,
                },
                Side::Varying {
                    buf: rbuf,
                    counts: slice(ni, rcounts, "recvcounts")?,
                    displs: slice(ni, rdispls, "rdispls")?,
                    dt: rdt,
                },
            ))
        })
    }
);

neighbor_fns!(
    MPI_Neighbor_alltoallw, MPI_Ineighbor_alltoallw, MPI_Neighbor_alltoallw_init, neighbor_alltoallw_as, ineighbor_alltoallw_as, neighbor_alltoallw_init_as;
    (
        sbuf: *const c_void,
        scounts: *const c_int,
        sdispls: *const isize,
        stypes: *const Handle,
        rbuf: *mut c_void,
        rcounts: *const c_int,
        rdispls: *const isize,
        rtypes: *const Handle
    ),
    |func| |comm: Handle| {
        Exchange::prepare(func, comm, |ni, no| {
            Ok((
                Side::Typed {
                    buf: sbuf,
                    counts: slice(no, scounts, "sendcounts")?,
                    displs: slice(no, sdispls, "sdispls")?,
                    types: slice(no, stypes, "sendtypes")?,
                },
                Side::Typed {
                    buf: rbuf,
                    counts: slice(ni, rcounts, "recvcounts")?,
                    displs: slice(ni, rdispls, "rdispls")?,
                    types: slice(ni, rtypes, "recvtypes")?,
                },
            ))
        })
    }
);
