//! Communicators: the world, self, dup, split and free, with context ids that keep traffic on
//! different communicators apart, and rank translation.
//!
//! Context ids: every communicator has a pair `(ctx, ctx + 1)`, the first for point-to-point
//! traffic, the second for the internal traffic of collectives. World uses 0/1, self 2/3. A
//! new communicator takes the maximum of its members' next free id (each process's own
//! counter), so no process ever sees two of its communicators share an id. A nonblocking
//! duplication ([`Comm::idup`]) cannot hold its process's counter while it runs: it reserves
//! ids, agrees on the maximum over a nonblocking exchange advanced by progress, and confirms
//! in a second round that no other creation of any member took the winner (see `IdupState`).
//!
//! Intercommunicators (MPI-4.1 §7.6) join two disjoint groups: point-to-point ranks name the
//! remote group, the local group keeps an intracommunicator of its own for the local phases
//! of collectives, and a "bridge" context carries the traffic between the groups that
//! collectives and communicator creation need, apart from the program's messages. An
//! intercommunicator takes six context ids (its pair, the local pair, the bridge pair),
//! agreed by both groups through their leaders (local rank 0). The collectives of [`crate::coll`]
//! are for intracommunicators only: `check` rejects intercommunicators there.

use crate::engine::Engine;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use weft_core::{Error, ErrorKind, Rank, Result};

/// Tag of the internal allgather that creates communicators (on the collective context).
const TAG_COMM_CREATE: i32 = 0x7fff_0001;

/// Color that leaves the caller out of every new communicator in [`Comm::split`].
pub const UNDEFINED: i32 = -32766;

pub(crate) struct CommData {
    pub(crate) ctx: u32,
    pub(crate) rank: u32,
    /// World rank of each member, in communicator rank order.
    pub(crate) members: Rc<[u32]>,
    pub(crate) freed: Cell<bool>,
    pub(crate) name: String,
    /// Collectives started on this communicator (folded into their tags, so several
    /// nonblocking collectives can be outstanding at once).
    pub(crate) coll_seq: Cell<u32>,
    /// Call numbers of persistent collectives, counted apart from `coll_seq` and marked
    /// with [`crate::coll::PERSISTENT_SEQ`] (see [`Comm::reserve_coll_seq`]).
    pub(crate) coll_persistent_seq: Cell<u32>,
    /// Call numbers of nonblocking collectives, counted apart from the blocking ones and
    /// marked with [`crate::coll::NONBLOCKING_SEQ`] (see `coll::request::next_seq`).
    pub(crate) coll_nb_seq: Cell<u32>,
    /// Nonblocking duplications started on this communicator (their tags carry it).
    pub(crate) idup_seq: Cell<u32>,
    /// Ranks per node for collective selection and the tuning generation it was computed
    /// under (see `Comm::coll_ppn`), so calls do not recompute it.
    pub(crate) coll_ppn: Cell<Option<(u64, u32)>>,
    /// `Comm::coll_shm_slot_bytes` once computed (the segment does not change under a
    /// communicator).
    pub(crate) coll_slot_bytes: std::cell::OnceCell<Option<usize>>,
    /// `Comm::coll_near_first` and the tuning generation it was computed under.
    pub(crate) coll_near_first: Cell<Option<(u64, bool)>>,
    /// Set on intercommunicators: the remote group and the local group's own communicator.
    pub(crate) inter: Option<InterData>,
    /// The aggregation tree the manager gave this communicator (`crate::agg`).
    pub(crate) agg: RefCell<crate::agg::CommTree>,
}

/// What an intercommunicator has beyond an intracommunicator.
pub(crate) struct InterData {
    /// World rank of each member of the remote group, in its rank order. Point-to-point
    /// ranks index this.
    pub(crate) remote: Rc<[u32]>,
    /// The local group as an intracommunicator with its own context pair.
    pub(crate) local: Comm,
    /// Context of the traffic between the groups for collectives and creation.
    pub(crate) bridge_ctx: u32,
}

/// Context ids an intercommunicator takes: its own pair, the local pair, the bridge pair.
const INTER_CTX_IDS: u32 = 6;

/// A communicator: a group of ranks and a private context for their messages.
///
/// Cloning gives another handle to the same communicator; [`Comm::free`] invalidates all
/// handles, and any later use returns an `InvalidComm` error.
#[derive(Clone)]
pub struct Comm {
    pub(crate) engine: Rc<RefCell<Engine>>,
    pub(crate) data: Rc<CommData>,
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Comm({}, rank {} of {}, ctx {})",
            self.data.name,
            self.data.rank,
            self.size(),
            self.data.ctx
        )
    }
}

impl Comm {
    pub(crate) fn new(
        engine: Rc<RefCell<Engine>>,
        ctx: u32,
        rank: u32,
        members: Rc<[u32]>,
        name: String,
    ) -> Comm {
        Comm {
            engine,
            data: Rc::new(CommData {
                ctx,
                rank,
                members,
                freed: Cell::new(false),
                name,
                coll_seq: Cell::new(0),
                coll_persistent_seq: Cell::new(0),
                coll_nb_seq: Cell::new(0),
                idup_seq: Cell::new(0),
                coll_ppn: Cell::new(None),
                coll_slot_bytes: std::cell::OnceCell::new(),
                coll_near_first: Cell::new(None),
                inter: None,
                agg: RefCell::new(crate::agg::CommTree::not_asked()),
            }),
        }
    }

    /// An intercommunicator on contexts `ctx..ctx + 6` whose local group is `members` (the
    /// caller at `rank`) and remote group `remote`.
    fn new_inter(
        engine: Rc<RefCell<Engine>>,
        ctx: u32,
        rank: u32,
        members: Rc<[u32]>,
        remote: Rc<[u32]>,
        name: String,
    ) -> Comm {
        let local = Comm::new(
            engine.clone(),
            ctx + 2,
            rank,
            members.clone(),
            format!("local group of {name}"),
        );
        Comm {
            engine,
            data: Rc::new(CommData {
                ctx,
                rank,
                members,
                freed: Cell::new(false),
                name,
                coll_seq: Cell::new(0),
                coll_persistent_seq: Cell::new(0),
                coll_nb_seq: Cell::new(0),
                idup_seq: Cell::new(0),
                coll_ppn: Cell::new(None),
                coll_slot_bytes: std::cell::OnceCell::new(),
                coll_near_first: Cell::new(None),
                inter: Some(InterData {
                    remote,
                    local,
                    bridge_ctx: ctx + 4,
                }),
                agg: RefCell::new(crate::agg::CommTree::not_asked()),
            }),
        }
    }

    /// This process's rank in the communicator.
    pub fn rank(&self) -> Rank {
        self.data.rank
    }

    /// Number of ranks in the communicator.
    pub fn size(&self) -> u32 {
        self.data.members.len() as u32
    }

    /// A short name for messages (`world`, `self`, `dup of world`, ...).
    pub fn name(&self) -> &str {
        &self.data.name
    }

    /// Context id of the communicator's point-to-point traffic.
    pub fn context_id(&self) -> u32 {
        self.data.ctx
    }

    /// World rank of member `rank`.
    pub fn world_rank(&self, rank: Rank) -> Result<u32> {
        self.check_open()?;
        self.data
            .members
            .get(rank as usize)
            .copied()
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidRank,
                    format!(
                        "rank {rank} is not in communicator {} of size {}",
                        self.name(),
                        self.size()
                    ),
                )
            })
    }

    /// The rank in `other` of this communicator's member `rank`, or `None` when that process is
    /// not a member of `other` (MPI_Group_translate_ranks).
    pub fn translate_rank(&self, rank: Rank, other: &Comm) -> Result<Option<Rank>> {
        other.check_open()?;
        let w = self.world_rank(rank)?;
        Ok(other
            .data
            .members
            .iter()
            .position(|&m| m == w)
            .map(|p| p as Rank))
    }

    /// Checks that the communicator is usable as an intracommunicator (collectives and the
    /// creation calls defined only there).
    #[inline]
    pub(crate) fn check(&self) -> Result<()> {
        if self.data.freed.get() || self.data.inter.is_some() {
            return Err(self.check_error());
        }
        Ok(())
    }

    /// What [`Comm::check`] reports (off the hot path).
    #[cold]
    #[inline(never)]
    fn check_error(&self) -> Error {
        if let Err(e) = self.check_open() {
            return e;
        }
        Error::new(
            ErrorKind::InvalidComm,
            format!(
                "communicator {} is an intercommunicator; this operation needs an \
                 intracommunicator",
                self.data.name
            ),
        )
    }

    /// Checks that the communicator was not freed.
    #[inline]
    pub(crate) fn check_open(&self) -> Result<()> {
        if self.data.freed.get() {
            return Err(self.freed_error());
        }
        Ok(())
    }

    /// What [`Comm::check_open`] reports (off the hot path).
    #[cold]
    #[inline(never)]
    fn freed_error(&self) -> Error {
        Error::new(
            ErrorKind::InvalidComm,
            format!(
                "communicator {} (context {}) was freed",
                self.data.name, self.data.ctx
            ),
        )
    }

    /// Frees the communicator: every handle to it becomes invalid. Freeing twice is an error.
    pub fn free(&self) -> Result<()> {
        self.check_open()?;
        if self.data.ctx < 4 {
            return Err(Error::new(
                ErrorKind::InvalidComm,
                format!("communicator {} cannot be freed", self.data.name),
            ));
        }
        self.data.freed.set(true);
        if let Some(i) = &self.data.inter {
            i.local.data.freed.set(true);
        }
        Ok(())
    }

    /// Which aggregation tree this communicator got from the manager (`WEFT_AGGD`,
    /// docs/aggd.md) and why: type II (the switches kept) or type I with the reason.
    pub fn aggregation_tree(&self) -> String {
        self.data.agg.borrow().explain.clone()
    }

    /// A new communicator with the same members and a new context (MPI_Comm_dup). Collective.
    pub fn dup(&self) -> Result<Comm> {
        if self.is_inter() {
            return self.inter_dup();
        }
        self.check()?;
        let _creating = Creating::new(&self.engine);
        let next = self.engine.borrow().next_ctx();
        let all = self.allgather_words(&[next])?;
        let ctx = all.iter().copied().max().unwrap_or(next);
        self.engine.borrow_mut().take_ctx(ctx, 2);
        Ok(Comm::new(
            self.engine.clone(),
            ctx,
            self.data.rank,
            self.data.members.clone(),
            format!("dup of {}", self.data.name),
        ))
    }

    /// Splits the communicator by `color` (MPI_Comm_split): ranks with the same color form a new
    /// communicator, ordered by `key` and then by their rank here. A negative color
    /// ([`UNDEFINED`]) leaves the caller out; it gets `None`. Collective.
    pub fn split(&self, color: i32, key: i32) -> Result<Option<Comm>> {
        self.check_open()?;
        if color < 0 && color != UNDEFINED {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "rank {} split of {}: color {color} is negative and not UNDEFINED",
                    self.rank(),
                    self.name()
                ),
            ));
        }
        if self.is_inter() {
            return self.inter_split(color, key);
        }
        let _creating = Creating::new(&self.engine);
        let next = self.engine.borrow().next_ctx();
        let all = self.allgather_words(&[color as u32, key as u32, next])?;
        let ctx = all.chunks(3).map(|c| c[2]).max().unwrap_or(next);
        self.engine.borrow_mut().take_ctx(ctx, 2);
        let colors_keys: Vec<(i32, i32)> =
            all.chunks(3).map(|c| (c[0] as i32, c[1] as i32)).collect();
        Ok(self.split_outcome(ctx, &colors_keys))
    }

    /// The communicator [`Comm::split`] makes, from what the split's agreement found out
    /// some other way: `colors_keys` holds every member's color and key in rank order (this
    /// member's at its rank), and the new communicator takes the contexts of `fresh`, a
    /// duplicate of this intracommunicator made for the split (every member passes its
    /// duplicate from the same [`Comm::idup`]; `fresh` must not be used afterwards). For
    /// callers that gather the colors and make the context without blocking (the MPI layer
    /// under MPI_THREAD_MULTIPLE, whose threads must not wait inside the engine).
    pub fn split_from(&self, fresh: Comm, colors_keys: &[(i32, i32)]) -> Result<Option<Comm>> {
        self.check_open()?;
        let bad = |what: String| {
            Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("rank {} split of {}: {what}", self.rank(), self.name()),
            ))
        };
        if self.is_inter() || fresh.is_inter() {
            return bad("split_from takes intracommunicators only".into());
        }
        if colors_keys.len() != self.size() as usize
            || fresh.data.members != self.data.members
            || fresh.data.rank != self.data.rank
        {
            return bad(format!(
                "{} colors for {} members, or {} is not a duplicate",
                colors_keys.len(),
                self.size(),
                fresh.name()
            ));
        }
        Ok(self.split_outcome(fresh.data.ctx, colors_keys))
    }

    /// This member's communicator of a split on context `ctx` where member `r` passed
    /// `colors_keys[r]`; `None` if its color is [`UNDEFINED`].
    fn split_outcome(&self, ctx: u32, colors_keys: &[(i32, i32)]) -> Option<Comm> {
        let color = colors_keys[self.data.rank as usize].0;
        if color == UNDEFINED {
            return None;
        }
        let mut group: Vec<(i32, u32)> = colors_keys
            .iter()
            .enumerate()
            .filter(|(_, c)| c.0 == color)
            .map(|(r, c)| (c.1, r as u32))
            .collect();
        group.sort();
        let members: Rc<[u32]> = group
            .iter()
            .map(|&(_, r)| self.data.members[r as usize])
            .collect();
        let rank = group
            .iter()
            .position(|&(_, r)| r == self.data.rank)
            .expect("caller is in its own color") as u32;
        Some(Comm::new(
            self.engine.clone(),
            ctx,
            rank,
            members,
            format!("split of {} (color {color})", self.data.name),
        ))
    }

    /// Every member's `words`, concatenated in rank order, exchanged around a ring on the
    /// collective context. Used to create communicators; all members pass equally many words.
    pub(crate) fn allgather_words(&self, words: &[u32]) -> Result<Vec<u32>> {
        let n = self.size() as usize;
        let k = words.len();
        let me = self.data.rank as usize;
        let mut all = vec![0u32; n * k];
        all[me * k..(me + 1) * k].copy_from_slice(words);
        if n == 1 {
            return Ok(all);
        }
        let right = ((me + 1) % n) as u32;
        let left = ((me + n - 1) % n) as u32;
        let ctx = self.data.ctx + 1;
        let mut block = vec![0u32; k];
        for step in 0..n - 1 {
            let send_idx = (me + n - step) % n;
            let recv_idx = (me + n - step - 1) % n;
            self.sendrecv_ctx(
                bytemuck::cast_slice(&all[send_idx * k..(send_idx + 1) * k]),
                right,
                bytemuck::cast_slice_mut(&mut block),
                left,
                TAG_COMM_CREATE,
                ctx,
            )?;
            all[recv_idx * k..(recv_idx + 1) * k].copy_from_slice(&block);
        }
        Ok(all)
    }
}

/// Groups and communicator creation from groups (MPI-4.1 §7.3-7.4), for the C interface.
impl Comm {
    /// World rank of every member, in rank order (the communicator's group).
    pub fn members(&self) -> &[u32] {
        &self.data.members
    }

    /// A new communicator of the members listed in `group` (world ranks, in their new rank
    /// order); members of this communicator not listed get `None` (MPI_Comm_create). Every
    /// member must pass the same group, whose ranks must all belong here. Collective.
    pub fn create(&self, group: &[u32]) -> Result<Option<Comm>> {
        self.check_open()?;
        for &w in group {
            if !self.data.members.contains(&w) {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "rank {} create from {}: world rank {w} of the group is not a member",
                        self.rank(),
                        self.name()
                    ),
                ));
            }
        }
        let me = self.data.members[self.data.rank as usize];
        let (color, key) = match group.iter().position(|&w| w == me) {
            Some(p) => (0, p as i32),
            None => (UNDEFINED, 0),
        };
        let c = self.split(color, key)?;
        if self.is_inter() {
            return Ok(c);
        }
        Ok(c.map(|c| c.renamed(format!("create from {}", self.data.name))))
    }

    /// Splits into one communicator per node, ordered by `key` then rank
    /// (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED). Collective.
    pub fn split_shared(&self, key: i32) -> Result<Comm> {
        self.check()?;
        let c = self
            .split(self.node_color(), key)?
            .expect("a node color is never UNDEFINED");
        Ok(c.renamed(format!("shared split of {}", self.data.name)))
    }

    /// The color of this process's node, for splits by node (MPI_COMM_TYPE_SHARED; on an
    /// intercommunicator, [`Comm::split`] with it pairs each node's local and remote
    /// members).
    pub fn node_color(&self) -> i32 {
        let me = self.data.members[self.data.rank as usize];
        self.engine.borrow().node_of()[me as usize] as i32
    }

    /// The node of each member, by rank of this communicator.
    fn member_nodes(&self) -> Vec<u32> {
        let e = self.engine.borrow();
        let node = e.node_of();
        self.data
            .members
            .iter()
            .map(|&w| node[w as usize])
            .collect()
    }

    /// This member's position in a Cartesian grid of `dims` (`periods` per dimension) laid
    /// over the first `dims.iter().product()` members so that grid neighbours share a node
    /// and, on the job's torus of nodes (`weft run --map`), nodes that hold neighbours are
    /// near on it (`weft_model::mapping::cart`; never more hops between nodes than the
    /// identity order), or `None` when the grid leaves this member out.
    pub fn cart_position_by_node(&self, dims: &[u32], periods: &[bool]) -> Option<u32> {
        let nodes = self.member_nodes();
        let torus = self.engine.borrow().node_torus().cloned();
        let order = match torus.filter(|t| nodes.iter().all(|&n| n < t.nodes())) {
            Some(t) => {
                let hops = |a: u32, b: u32| u64::from(t.distance(a, b));
                weft_model::mapping::cart_order_on(dims, periods, &nodes, &hops)
            }
            None => weft_model::mapping::cart_order(dims, periods, &nodes),
        };
        order
            .rank_at
            .iter()
            .position(|&r| r == self.data.rank)
            .map(|p| p as u32)
    }

    /// The ranks of a graph of `vertices` vertices and weighted `edges` (vertex a, vertex b,
    /// weight) laid over the first `vertices` members so that few edges join members of
    /// different nodes (`weft_model::mapping::graph`; never a larger cut than the identity
    /// order): `rank_at[vertex]` is the member (rank of this communicator) that takes it.
    /// Every member computing it from the same graph gets the same order.
    pub fn graph_order_by_node(
        &self,
        vertices: usize,
        edges: &[(u32, u32, u64)],
    ) -> weft_model::mapping::GraphOrder {
        weft_model::mapping::graph_order(vertices, edges, &self.member_nodes())
    }

    /// Whether every member runs on this process's node.
    pub fn members_share_a_node(&self) -> bool {
        let e = self.engine.borrow();
        let node = e.node_of();
        let me = node[self.data.members[self.data.rank as usize] as usize];
        self.data.members.iter().all(|&w| node[w as usize] == me)
    }

    fn renamed(self, name: String) -> Comm {
        let d = &self.data;
        Comm::new(self.engine.clone(), d.ctx, d.rank, d.members.clone(), name)
    }
}

/// Tag of the context agreement of [`Comm::create_group`] (on the collective context); the
/// caller's tag goes in the low bits so concurrent creations on overlapping groups stay apart.
const TAG_CREATE_GROUP: i32 = 0x7ff0_0000;

impl Comm {
    /// A new communicator of the members listed in `group` (world ranks, in their new rank
    /// order), created by those members only (MPI_Comm_create_group): the others of this
    /// communicator take no part. `tag` tells apart concurrent creations. Collective over
    /// the group; the caller must be in it.
    pub fn create_group(&self, group: &[u32], tag: i32) -> Result<Comm> {
        let (pos, in_self) = self.group_positions(group)?;
        // Every member's next free context id, maximised around the group's ring.
        let n = group.len();
        let _creating = Creating::new(&self.engine);
        let mut max = self.engine.borrow().next_ctx();
        if n > 1 {
            let right = in_self[(pos + 1) % n];
            let left = in_self[(pos + n - 1) % n];
            let tag = TAG_CREATE_GROUP | (tag & 0xffff);
            for _ in 0..n - 1 {
                let mut got = [0u32];
                self.sendrecv_ctx(
                    bytemuck::cast_slice(&[max]),
                    right,
                    bytemuck::cast_slice_mut(&mut got),
                    left,
                    tag,
                    self.data.ctx + 1,
                )?;
                max = max.max(got[0]);
            }
        }
        self.engine.borrow_mut().take_ctx(max, 2);
        Ok(Comm::new(
            self.engine.clone(),
            max,
            pos as u32,
            group.iter().copied().collect(),
            format!("group of {}", self.data.name),
        ))
    }

    /// The caller's place in `group` (world ranks) and each member's rank here, for a
    /// creation by the group's members only; an error if the caller or a member is not in
    /// this communicator.
    fn group_positions(&self, group: &[u32]) -> Result<(usize, Vec<u32>)> {
        self.check()?;
        let me = self.data.members[self.data.rank as usize];
        let Some(pos) = group.iter().position(|&w| w == me) else {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "rank {} create_group on {}: the caller is not in the group",
                    self.rank(),
                    self.name()
                ),
            ));
        };
        let mut in_self = Vec::with_capacity(group.len());
        for &w in group {
            match self.data.members.iter().position(|&m| m == w) {
                Some(r) => in_self.push(r as u32),
                None => {
                    return Err(Error::new(
                        ErrorKind::InvalidArgument,
                        format!(
                        "rank {} create_group on {}: world rank {w} of the group is not a member",
                        self.rank(),
                        self.name()
                    ),
                    ))
                }
            }
        }
        Ok((pos, in_self))
    }

    /// Starts [`Comm::create_group`] without blocking: the members of `group` agree on the
    /// new context as [`Comm::idup`] does (over this communicator's collective context, on
    /// tags of their own that carry `tag`), advanced by this process's progress; the
    /// request's [`DupRequest::test`] or [`DupRequest::wait`] returns the new communicator.
    /// Concurrent creations on overlapping groups of one communicator need distinct tags
    /// (as MPI_Comm_create_group's contract says).
    pub fn icreate_group(&self, group: &[u32], tag: i32) -> Result<DupRequest> {
        self.iagree_group(group, TAG_IDUP_GROUP, tag, 2)
    }

    /// An agreement of `group`'s members (world ranks, members of this communicator) on
    /// `width` fresh context ids, on the tags of `marker` and `tag` (see [`TAG_IDUP`]).
    fn iagree_group(&self, group: &[u32], marker: i32, tag: i32, width: u32) -> Result<DupRequest> {
        let (pos, in_self) = self.group_positions(group)?;
        let d = &self.data;
        let parts: Vec<AgreePeer> = in_self
            .iter()
            .map(|&r| AgreePeer {
                world: d.members[r as usize],
                ctx: d.ctx + 1,
                me_as_src: d.rank,
                them_as_src: r as i32,
                peers: d.members.clone(),
            })
            .collect();
        let tag_base = TAG_IDUP | marker | ((tag & 0xffff) << 8);
        let made = Some((group.iter().copied().collect::<Rc<[u32]>>(), pos as u32));
        Ok(self.start_agreement(parts, pos, width, tag_base, tag as u32, made))
    }

    /// Starts agreeing on the contexts of an intercommunicator between the disjoint groups
    /// `local` (this communicator's members, the caller among them) and `remote` (world
    /// ranks), without blocking: every member of both groups starts it with the same `tag`
    /// (each passing its own group as `local`), over the collective context of `world`
    /// (which holds them all). [`Comm::intercomm_from`] then makes the intercommunicator
    /// from what the request returns. For callers that must not block while the groups
    /// agree (the MPI layer under MPI_THREAD_MULTIPLE); [`Comm::intercomm_create`] blocks.
    pub fn iagree_intercomm(&self, world: &Comm, remote: &[u32], tag: i32) -> Result<DupRequest> {
        self.check()?;
        let mut both: Vec<u32> = self.data.members.iter().chain(remote).copied().collect();
        both.sort_unstable();
        world.iagree_group(&both, TAG_IDUP_INTER, tag, INTER_CTX_IDS)
    }

    /// [`Comm::iagree_intercomm`] for the groups of a port or a join (MPI_Comm_accept,
    /// _connect, _join): the same agreement on tags of their own, so it never meets an
    /// MPI_Intercomm_create's agreement that carries the same `tag`. Concurrent
    /// agreements between the same processes need distinct tags (bits 0-15 count).
    pub fn iagree_port_intercomm(
        &self,
        world: &Comm,
        remote: &[u32],
        tag: i32,
    ) -> Result<DupRequest> {
        self.check()?;
        let mut both: Vec<u32> = self.data.members.iter().chain(remote).copied().collect();
        both.sort_unstable();
        world.iagree_group(&both, TAG_IDUP_PORT, tag, INTER_CTX_IDS)
    }

    /// An error unless no world rank of `remote` is a member of this communicator (the two
    /// groups of an intercommunicator are disjoint).
    fn disjoint_from(&self, remote: &[u32]) -> Result<()> {
        match remote.iter().find(|w| self.data.members.contains(w)) {
            Some(w) => Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "rank {} intercomm_create: world rank {w} is in both groups (they must be \
                     disjoint)",
                    self.rank()
                ),
            )),
            None => Ok(()),
        }
    }

    /// The intercommunicator between this communicator's members and `remote` (world ranks)
    /// on the contexts `agreed` (what the request of [`Comm::iagree_intercomm`] returned:
    /// it must not be used otherwise).
    pub fn intercomm_from(&self, agreed: Comm, remote: &[u32]) -> Result<Comm> {
        self.check()?;
        self.disjoint_from(remote)?;
        Ok(Comm::new_inter(
            self.engine.clone(),
            agreed.data.ctx,
            self.data.rank,
            self.data.members.clone(),
            remote.iter().copied().collect(),
            format!("intercomm of {}", self.data.name),
        ))
    }
}

/// Tags of intercommunicator creation: the leaders' exchange (on the bridge context) and the
/// broadcast of its outcome in the local group (on the local collective context). Both lie
/// above every collective tag, like [`TAG_COMM_CREATE`].
const TAG_INTER_EXCHANGE: i32 = 0x7fff_0002;
const TAG_LOCAL_BCAST: i32 = 0x7fff_0003;

/// Intercommunicators (MPI-4.1 §7.6): creation from two groups, merging, and what the C
/// interface needs to build collectives from the local group and the bridge.
impl Comm {
    /// Takes the call number of a persistent collective at its init call: MPI-4.1 §6.13
    /// matches persistent collectives in the order of their init calls, whatever order the
    /// ranks start them in. Pass it to [`Comm::with_coll_seq`] at each start.
    ///
    /// Persistent numbers are counted apart from the running count of other collectives and
    /// carry [`crate::coll::PERSISTENT_SEQ`], which puts them in a tag space of their own: a
    /// persistent start never shares a tag (or a disagreement check) with an ordinary call,
    /// whatever the orders the ranks start them in.
    pub fn reserve_coll_seq(&self) -> u32 {
        use crate::coll::PERSISTENT_SEQ;
        let n = self.data.coll_persistent_seq.get();
        self.data
            .coll_persistent_seq
            .set(n.wrapping_add(1) & !PERSISTENT_SEQ);
        n | PERSISTENT_SEQ
    }

    /// Runs `start`, which starts one collective, with call number `seq` (from
    /// [`Comm::reserve_coll_seq`]) instead of the next one; later collectives keep counting
    /// where they were.
    pub fn with_coll_seq<T>(&self, seq: u32, start: impl FnOnce() -> T) -> T {
        let saved = self.data.coll_seq.get();
        self.data.coll_seq.set(seq);
        let r = start();
        self.data.coll_seq.set(saved);
        r
    }

    /// Whether this is an intercommunicator (MPI_Comm_test_inter).
    pub fn is_inter(&self) -> bool {
        self.data.inter.is_some()
    }

    fn inter_data(&self, op: &str) -> Result<&InterData> {
        self.check_open()?;
        self.data.inter.as_ref().ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidComm,
                format!(
                    "rank {} {op}: communicator {} is not an intercommunicator",
                    self.rank(),
                    self.name()
                ),
            )
        })
    }

    /// The ranks point-to-point operations address: the remote group of an
    /// intercommunicator, the members of an intracommunicator.
    pub(crate) fn peers(&self) -> &Rc<[u32]> {
        match &self.data.inter {
            Some(i) => &i.remote,
            None => &self.data.members,
        }
    }

    /// Number of ranks point-to-point operations address: the remote group's size on an
    /// intercommunicator, the communicator's size otherwise.
    pub fn peer_size(&self) -> u32 {
        self.peers().len() as u32
    }

    /// Number of ranks in the remote group (MPI_Comm_remote_size).
    pub fn remote_size(&self) -> Result<u32> {
        Ok(self.inter_data("remote_size")?.remote.len() as u32)
    }

    /// World rank of every member of the remote group, in its rank order
    /// (MPI_Comm_remote_group).
    pub fn remote_members(&self) -> Result<&[u32]> {
        Ok(&self.inter_data("remote_members")?.remote)
    }

    /// The local group of an intercommunicator as an intracommunicator of its own (own
    /// contexts): collectives on the intercommunicator run their local phases there.
    pub fn local_comm(&self) -> Result<&Comm> {
        Ok(&self.inter_data("local_comm")?.local)
    }

    /// The same intercommunicator on its bridge context: point-to-point between the groups
    /// that never meets the program's messages on the intercommunicator itself. Collectives
    /// on intercommunicators move their data between the groups through it.
    pub fn bridge(&self) -> Result<Comm> {
        let d = self.inter_data("bridge")?;
        Ok(Comm {
            engine: self.engine.clone(),
            data: Rc::new(CommData {
                ctx: d.bridge_ctx,
                rank: self.data.rank,
                members: self.data.members.clone(),
                freed: Cell::new(false),
                name: format!("bridge of {}", self.data.name),
                coll_seq: Cell::new(0),
                coll_persistent_seq: Cell::new(0),
                coll_nb_seq: Cell::new(0),
                idup_seq: Cell::new(0),
                coll_ppn: Cell::new(None),
                coll_slot_bytes: std::cell::OnceCell::new(),
                coll_near_first: Cell::new(None),
                inter: Some(InterData {
                    remote: d.remote.clone(),
                    local: d.local.clone(),
                    bridge_ctx: d.bridge_ctx,
                }),
                agg: RefCell::new(crate::agg::CommTree::not_asked()),
            }),
        })
    }

    /// Exchanges `words` with rank `peer` on context `ctx` (lengths first, then the words);
    /// returns the peer's words. Both sides call it.
    fn exchange_words(&self, ctx: u32, peer: u32, tag: i32, words: &[u32]) -> Result<Vec<u32>> {
        let mut n = [0u32];
        self.sendrecv_bytes(
            bytemuck::cast_slice(&[words.len() as u32]),
            peer,
            tag,
            bytemuck::cast_slice_mut(&mut n),
            peer as i32,
            tag,
            ctx,
        )?;
        let mut theirs = vec![0u32; n[0] as usize];
        self.sendrecv_bytes(
            bytemuck::cast_slice(words),
            peer,
            tag,
            bytemuck::cast_slice_mut(&mut theirs),
            peer as i32,
            tag,
            ctx,
        )?;
        Ok(theirs)
    }

    /// `words` of `root` at every member of this intracommunicator (root sends to each in
    /// turn, on the collective context; creation only, so simplicity beats speed).
    fn bcast_words(&self, root: u32, words: Vec<u32>) -> Result<Vec<u32>> {
        let ctx = self.data.ctx + 1;
        if self.data.rank == root {
            for r in (0..self.size()).filter(|&r| r != root) {
                let len = [words.len() as u32];
                self.send_ctx(bytemuck::cast_slice(&len), r, TAG_LOCAL_BCAST, ctx, false)?;
                self.send_ctx(bytemuck::cast_slice(&words), r, TAG_LOCAL_BCAST, ctx, false)?;
            }
            return Ok(words);
        }
        let mut n = [0u32];
        self.recv_ctx(
            bytemuck::cast_slice_mut(&mut n),
            root as i32,
            TAG_LOCAL_BCAST,
            ctx,
        )?;
        let mut words = vec![0u32; n[0] as usize];
        self.recv_ctx(
            bytemuck::cast_slice_mut(&mut words),
            root as i32,
            TAG_LOCAL_BCAST,
            ctx,
        )?;
        Ok(words)
    }

    /// Agrees with the remote group on the first of six fresh context ids, and hands every
    /// member the remote leader's `words` (the local leader's are sent). Collective over both
    /// groups.
    fn inter_agree(&self, words: &[u32]) -> Result<(u32, Vec<u32>)> {
        let d = self.inter_data("create")?;
        let _creating = Creating::new(&self.engine);
        let next = self.engine.borrow().next_ctx();
        let max = d
            .local
            .allgather_words(&[next])?
            .into_iter()
            .max()
            .unwrap_or(next);
        let out = if d.local.rank() == 0 {
            let mut mine = Vec::with_capacity(words.len() + 1);
            mine.push(max);
            mine.extend_from_slice(words);
            let mut theirs = self.exchange_words(d.bridge_ctx, 0, TAG_INTER_EXCHANGE, &mine)?;
            if theirs.is_empty() {
                return Err(Error::new(
                    ErrorKind::Internal,
                    "the remote leader sent no context id",
                ));
            }
            theirs[0] = theirs[0].max(max);
            theirs
        } else {
            Vec::new()
        };
        let v = d.local.bcast_words(0, out)?;
        self.engine.borrow_mut().take_ctx(v[0], INTER_CTX_IDS);
        Ok((v[0], v[1..].to_vec()))
    }

    /// An intercommunicator joining this communicator's members (the local group) with the
    /// group whose leader is `remote_leader` in `peer` (MPI_Intercomm_create). The leaders,
    /// rank `local_leader` here, talk over `peer` with `tag`; the groups must be disjoint.
    /// Collective over both groups.
    pub fn intercomm_create(
        &self,
        local_leader: u32,
        peer: &Comm,
        remote_leader: u32,
        tag: i32,
    ) -> Result<Comm> {
        self.intercomm_traded(local_leader, |mine| {
            peer.check_open()?;
            // The groups' world ranks must name the processes of one engine: a peer in
            // another weft instance (a spawn's universe, `crate::port`) numbers them its own way.
            if !Rc::ptr_eq(&self.engine, &peer.engine) {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    "intercomm_create: the peer communicator is of another weft instance (a \
                     spawn's parents and children meet only through their intercommunicator)",
                ));
            }
            peer.check_send_tag(tag, "intercomm_create")?;
            peer.exchange_words(peer.data.ctx, remote_leader, tag, mine)
        })
    }

    /// An intercommunicator joining this communicator's members (the local group) with a
    /// group whose leader this group's leader, rank `local_leader`, reaches through `trade`
    /// (for [`Comm::intercomm_create`], over the peer communicator; the MPI layer's ports
    /// and joins agree through [`Comm::iagree_port_intercomm`] instead, so they never block
    /// with a lock held). Only the leader calls `trade`, with this group's words (its first
    /// free context id, then its members' world ranks); it returns the remote group's. The
    /// groups must be disjoint ranks of this world. Collective over this communicator.
    pub fn intercomm_traded(
        &self,
        local_leader: u32,
        trade: impl FnOnce(&[u32]) -> Result<Vec<u32>>,
    ) -> Result<Comm> {
        self.check()?;
        if local_leader >= self.size() {
            return Err(Error::new(
                ErrorKind::InvalidRank,
                format!(
                    "rank {} intercomm_create: local leader {local_leader} is not a rank of {} \
                     (size {})",
                    self.rank(),
                    self.name(),
                    self.size()
                ),
            ));
        }
        let _creating = Creating::new(&self.engine);
        let next = self.engine.borrow().next_ctx();
        let max = self
            .allgather_words(&[next])?
            .into_iter()
            .max()
            .unwrap_or(next);
        let mut failure = None;
        let out = if self.data.rank == local_leader {
            match self.leader_exchange(max, trade) {
                Ok(v) => v,
                Err(e) => {
                    failure = Some(e);
                    Vec::new()
                }
            }
        } else {
            Vec::new()
        };
        // An empty outcome tells the others that the leader failed, so they do not wait
        // for a remote group that will never come.
        let v = self.bcast_words(local_leader, out)?;
        if let Some(e) = failure {
            return Err(e);
        }
        if v.is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "rank {} intercomm_create: the local leader (rank {local_leader}) failed to \
                     reach the remote leader",
                    self.rank()
                ),
            ));
        }
        self.engine.borrow_mut().take_ctx(v[0], INTER_CTX_IDS);
        Ok(Comm::new_inter(
            self.engine.clone(),
            v[0],
            self.data.rank,
            self.data.members.clone(),
            v[1..].iter().copied().collect(),
            format!("intercomm of {}", self.data.name),
        ))
    }

    /// The local leader's part of [`Comm::intercomm_traded`]: trades (first free context
    /// id, members) with the remote leader; returns (agreed context id, remote members).
    fn leader_exchange(
        &self,
        max: u32,
        trade: impl FnOnce(&[u32]) -> Result<Vec<u32>>,
    ) -> Result<Vec<u32>> {
        let mut mine = Vec::with_capacity(self.data.members.len() + 1);
        mine.push(max);
        mine.extend_from_slice(&self.data.members);
        let mut theirs = trade(&mine)?;
        if theirs.len() < 2 {
            return Err(Error::new(
                ErrorKind::Internal,
                "intercomm_create: the remote leader sent an empty group",
            ));
        }
        let world = self.engine.borrow().world_size();
        if let Some(w) = theirs[1..].iter().find(|&&w| w >= world) {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!("intercomm_create: the remote leader named world rank {w} of {world}"),
            ));
        }
        let mut seen = theirs[1..].to_vec();
        seen.sort_unstable();
        if let Some(w) = seen.windows(2).find(|p| p[0] == p[1]) {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!(
                    "intercomm_create: the remote leader named world rank {} twice",
                    w[0]
                ),
            ));
        }
        self.disjoint_from(&theirs[1..])?;
        theirs[0] = theirs[0].max(max);
        Ok(theirs)
    }

    /// An intracommunicator of both groups (MPI_Intercomm_merge): the group that passes
    /// `high == false` comes first; when both pass the same, the group holding the lower
    /// world rank among the leaders does. Collective over both groups.
    pub fn merge(&self, high: bool) -> Result<Comm> {
        let (ctx, theirs) = self.inter_agree(&[high as u32])?;
        let remote_high = theirs.first().is_some_and(|&h| h != 0);
        self.merge_on(ctx, high, remote_high)
    }

    /// The communicator [`Comm::merge`] makes, from what its agreement found out some other
    /// way: the remote group's `remote_high`, and `fresh`, a duplicate of this
    /// intercommunicator made for the merge by every member of both groups (from the same
    /// [`Comm::idup`]; it must not be used afterwards), whose contexts the new communicator
    /// takes. For callers that must not block (the MPI layer under MPI_THREAD_MULTIPLE).
    pub fn merge_from(&self, fresh: Comm, high: bool, remote_high: bool) -> Result<Comm> {
        self.inter_data("merge")?;
        if fresh.data.members != self.data.members || !fresh.is_inter() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "rank {} merge of {}: {} is not a duplicate",
                    self.rank(),
                    self.name(),
                    fresh.name()
                ),
            ));
        }
        self.merge_on(fresh.data.ctx, high, remote_high)
    }

    fn merge_on(&self, ctx: u32, high: bool, remote_high: bool) -> Result<Comm> {
        let d = self.inter_data("merge")?;
        let local_first = if high != remote_high {
            !high
        } else {
            self.data.members[0] < d.remote[0]
        };
        let (first, second) = if local_first {
            (&self.data.members, &d.remote)
        } else {
            (&d.remote, &self.data.members)
        };
        let members: Rc<[u32]> = first.iter().chain(second.iter()).copied().collect();
        let rank = if local_first {
            self.data.rank
        } else {
            d.remote.len() as u32 + self.data.rank
        };
        Ok(Comm::new(
            self.engine.clone(),
            ctx,
            rank,
            members,
            format!("merge of {}", self.data.name),
        ))
    }

    fn inter_dup(&self) -> Result<Comm> {
        let (ctx, _) = self.inter_agree(&[])?;
        let d = self.inter_data("dup")?;
        Ok(Comm::new_inter(
            self.engine.clone(),
            ctx,
            self.data.rank,
            self.data.members.clone(),
            d.remote.clone(),
            format!("dup of {}", self.data.name),
        ))
    }

    /// MPI_Comm_split on an intercommunicator: the local processes of one color face the
    /// remote processes of the same color; a color without remote processes gives `None`.
    fn inter_split(&self, color: i32, key: i32) -> Result<Option<Comm>> {
        let d = self.inter_data("split")?;
        let local_all = d.local.allgather_words(&[color as u32, key as u32])?;
        let (ctx, remote_all) = self.inter_agree(&local_all)?;
        let d = self.inter_data("split")?;
        if remote_all.len() != 2 * d.remote.len() {
            return Err(Error::new(
                ErrorKind::Internal,
                format!(
                    "split of {}: the remote leader sent {} words for {} ranks",
                    self.name(),
                    remote_all.len(),
                    d.remote.len()
                ),
            ));
        }
        self.inter_split_outcome(ctx, color, &local_all, &remote_all)
    }

    /// The communicator [`Comm::split`] makes on an intercommunicator, from what the split's
    /// agreement found out some other way: every local member's color and key
    /// (`local_all`, in local rank order, this member's at its rank) and every remote
    /// member's (`remote_all`), and `fresh`, a duplicate of this intercommunicator made for
    /// the split by both groups (from the same [`Comm::idup`]; it must not be used
    /// afterwards), whose contexts the new communicator takes. For callers that must not
    /// block (the MPI layer under MPI_THREAD_MULTIPLE).
    pub fn inter_split_from(
        &self,
        fresh: Comm,
        local_all: &[(i32, i32)],
        remote_all: &[(i32, i32)],
    ) -> Result<Option<Comm>> {
        let d = self.inter_data("split")?;
        if fresh.data.members != self.data.members
            || !fresh.is_inter()
            || local_all.len() != self.data.members.len()
            || remote_all.len() != d.remote.len()
        {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "rank {} split of {}: {} local and {} remote colors, or {} is not a duplicate",
                    self.rank(),
                    self.name(),
                    local_all.len(),
                    remote_all.len(),
                    fresh.name()
                ),
            ));
        }
        let words = |all: &[(i32, i32)]| -> Vec<u32> {
            all.iter()
                .flat_map(|&(c, k)| [c as u32, k as u32])
                .collect()
        };
        let color = local_all[self.data.rank as usize].0;
        self.inter_split_outcome(fresh.data.ctx, color, &words(local_all), &words(remote_all))
    }

    /// This member's intercommunicator of a split on contexts `ctx..ctx + 6`, from every
    /// local and remote member's color and key (two words each, in rank order).
    fn inter_split_outcome(
        &self,
        ctx: u32,
        color: i32,
        local_all: &[u32],
        remote_all: &[u32],
    ) -> Result<Option<Comm>> {
        let d = self.inter_data("split")?;
        if color == UNDEFINED {
            return Ok(None);
        }
        let pick = |all: &[u32], members: &[u32]| -> Vec<u32> {
            let mut g: Vec<(i32, usize)> = all
                .chunks(2)
                .enumerate()
                .filter(|(_, c)| c[0] as i32 == color)
                .map(|(r, c)| (c[1] as i32, r))
                .collect();
            g.sort();
            g.iter().map(|&(_, r)| members[r]).collect()
        };
        let local = pick(local_all, &self.data.members);
        let remote = pick(remote_all, &d.remote);
        if remote.is_empty() {
            return Ok(None);
        }
        let me = self.data.members[self.data.rank as usize];
        let rank = local
            .iter()
            .position(|&w| w == me)
            .expect("caller is in its own color") as u32;
        Ok(Some(Comm::new_inter(
            self.engine.clone(),
            ctx,
            rank,
            local.into(),
            remote.into(),
            format!("split of {} (color {color})", self.data.name),
        )))
    }
}

/// Marks a blocking communicator creation for its whole life: nonblocking duplications take
/// no decision on context ids meanwhile (see [`Comm::idup`]).
struct Creating(Rc<RefCell<Engine>>);

impl Creating {
    fn new(engine: &Rc<RefCell<Engine>>) -> Creating {
        engine.borrow_mut().begin_creation();
        Creating(engine.clone())
    }
}

impl Drop for Creating {
    fn drop(&mut self) {
        self.0.borrow_mut().end_creation();
    }
}

/// Tags of the nonblocking context-id agreement on the collective context: above every
/// collective tag (below 2^30) and below communicator creation's; bits 8-23 hold the
/// duplication's number on its communicator, bits 0-7 the message's step.
const TAG_IDUP: i32 = 0x6000_0000;
/// Marks the agreement of [`Comm::icreate_group`], whose bits 8-23 hold the caller's tag.
const TAG_IDUP_GROUP: i32 = 0x0100_0000;
/// Marks the agreement of [`Comm::iagree_intercomm`], whose bits 8-23 hold the caller's tag.
const TAG_IDUP_INTER: i32 = 0x0200_0000;
/// Marks the agreement of [`Comm::iagree_port_intercomm`], whose bits 8-23 hold its tag.
const TAG_IDUP_PORT: i32 = 0x0300_0000;

/// One participant of a duplication's agreement: where its messages go and how they arrive.
#[derive(Clone)]
pub(crate) struct AgreePeer {
    world: u32,
    /// Context both directions use with this participant.
    ctx: u32,
    /// This process's rank as the participant sees it on `ctx`.
    me_as_src: u32,
    /// The participant's rank as this process sees it on `ctx`.
    them_as_src: i32,
    /// World ranks of the ranks on `ctx` (the receive's view of its sources).
    peers: Rc<[u32]>,
}

/// A nonblocking duplication's agreement on a context id (MPI-4.1 §7.4.2 MPI_Comm_idup),
/// advanced by every progress call of this process (`Engine::advance_idups`).
///
/// Rounds of a dissemination allreduce(MAX) (ceil(log2 n) steps, one message each way per
/// step) over the participants alternate:
/// - a proposal round: every participant proposes the first of `width` ids it reserved
///   (`Engine::reserve_ctx`: no other creation on its process can take them); the maximum
///   is the candidate. Each participant checks whether the candidate overlaps ids its
///   process took since its oldest duplication in flight started (other duplications'
///   proposals and candidates, blocking creations: `Engine::ctx_overlaps`), then takes it;
/// - a confirmation round: the maximum of the "taken here" flags. Zero: the candidate is
///   the new context on every participant. Otherwise a new proposal round starts.
///
/// The checks (and new proposals) wait while a blocking creation of this process is between
/// reading and setting its next free id ([`Engine::creating`]), so the two never take the
/// same id.
pub(crate) struct IdupState {
    parts: Vec<AgreePeer>,
    me: usize,
    width: u32,
    /// The agreement's tags less the step (see [`TAG_IDUP`]).
    tag_base: i32,
    /// Messages sent so far (low tag bits); equal on every participant at each step.
    step_no: u32,
    proposal: u32,
    candidate: u32,
    confirming: bool,
    /// Distance of the current dissemination step.
    dist: usize,
    /// Proposal rounds after the first, and what makes this process's gaps differ from
    /// the other participants' (its world rank and the duplication's number).
    attempt: u32,
    salt: u64,
    value: u32,
    /// Boxed so the engine's pointers into them survive moves of the state.
    sbuf: Box<[u32; 1]>,
    rbuf: Box<[u32; 1]>,
    send: Option<crate::engine::ReqId>,
    recv: Option<crate::engine::ReqId>,
    /// The agreed first context id, or why the agreement failed.
    pub(crate) outcome: Option<Result<u32>>,
}

impl IdupState {
    /// Whether the engine still holds pointers into this state's buffers.
    pub(crate) fn in_flight(&self) -> bool {
        self.send.is_some() || self.recv.is_some()
    }

    /// Advances the agreement as far as it can go without waiting; true if anything moved.
    pub(crate) fn step(&mut self, e: &mut Engine) -> bool {
        if self.outcome.is_some() {
            // Only a failed or dropped agreement's leftover messages remain.
            return self.reap(e);
        }
        match self.advance(e) {
            Ok(moved) => moved,
            Err(x) => {
                self.abandon(e);
                self.outcome = Some(Err(x));
                true
            }
        }
    }

    /// Frees this state's finished requests; true if any.
    fn reap(&mut self, e: &mut Engine) -> bool {
        let mut moved = false;
        for id in [&mut self.send, &mut self.recv] {
            if let Some(r) = id.filter(|&r| e.is_done(r)) {
                e.free_req(r);
                *id = None;
                moved = true;
            }
        }
        moved
    }

    /// Stops the agreement: a receive not matched yet is cancelled; a send keeps going until
    /// it is done (its buffer lives as long as this state).
    pub(crate) fn abandon(&mut self, e: &mut Engine) {
        if let Some(r) = self.recv {
            e.cancel_recv(r);
        }
        self.reap(e);
    }

    fn advance(&mut self, e: &mut Engine) -> Result<bool> {
        let mut moved = false;
        loop {
            if self.send.is_some_and(|r| !e.is_done(r)) || self.recv.is_some_and(|r| !e.is_done(r))
            {
                return Ok(moved);
            }
            if let Some(r) = self.send.take() {
                let out = e.outcome(r);
                e.free_req(r);
                out?;
            }
            if let Some(r) = self.recv.take() {
                let out = e.outcome(r);
                e.free_req(r);
                out?;
                self.value = self.value.max(self.rbuf[0]);
                self.dist *= 2;
                moved = true;
            }
            let n = self.parts.len();
            if self.dist < n {
                self.post(e)?;
                moved = true;
                continue;
            }
            // A round is complete: `value` is the maximum over every participant.
            if e.creating() {
                return Ok(moved);
            }
            if !self.confirming {
                let m = self.value;
                let own = (self.proposal, self.proposal + self.width);
                let taken = e.ctx_overlaps(m, self.width, own);
                e.take_ctx(m, self.width);
                self.candidate = m;
                self.value = taken as u32;
                self.confirming = true;
            } else if self.value == 0 {
                self.outcome = Some(Ok(self.candidate));
                return Ok(true);
            } else {
                // Another duplication of some participant's process wanted the candidate
                // too. Proposals spaced by a pseudo-random gap keep two duplications that
                // run into each other from doing so again in lockstep.
                self.attempt += 1;
                let gap = (splitmix(self.salt ^ u64::from(self.attempt)) % 8) as u32;
                self.proposal = e.reserve_ctx(self.width, gap * self.width);
                self.value = self.proposal;
                self.confirming = false;
            }
            self.dist = 1;
            moved = true;
        }
    }

    /// Posts the current step's send and receive.
    fn post(&mut self, e: &mut Engine) -> Result<()> {
        let n = self.parts.len();
        let to = &self.parts[(self.me + self.dist) % n];
        let from = &self.parts[(self.me + n - self.dist) % n];
        let tag = self.tag_base | (self.step_no & 0xff) as i32;
        self.step_no = self.step_no.wrapping_add(1);
        self.sbuf[0] = self.value;
        let pattern = crate::matching::Pattern {
            ctx: from.ctx,
            src: from.them_as_src,
            tag,
        };
        self.recv = Some(e.start_recv(
            weft_transport::buf::RawBufMut::new(bytemuck::cast_slice_mut(&mut self.rbuf[..])),
            pattern,
            Some(from.world),
            &from.peers,
        )?);
        self.send = e.start_send_mode(
            weft_transport::buf::RawBuf::new(bytemuck::cast_slice(&self.sbuf[..])),
            to.world,
            to.me_as_src,
            to.ctx,
            tag,
            false,
            false,
        )?;
        Ok(())
    }
}

/// SplitMix64's finaliser: a well-mixed 64-bit value of `x`.
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A nonblocking duplication started by [`Comm::idup`]; the new communicator exists once
/// [`DupRequest::test`] or [`DupRequest::wait`] returns it.
pub struct DupRequest {
    parent: Comm,
    key: u64,
    taken: bool,
    /// For [`Comm::icreate_group`]: the new communicator's members (world ranks) and the
    /// caller's rank among them; `None` for a duplicate.
    made: Option<(Rc<[u32]>, u32)>,
}

impl std::fmt::Debug for DupRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DupRequest(of {}, key {})",
            self.parent.data.name, self.key
        )
    }
}

impl Comm {
    /// Starts duplicating this communicator (MPI_Comm_idup, MPI-4.1 §7.4.2): returns at once;
    /// the agreement on the new context runs on this process's progress (any weft call that
    /// polls, a blocking receive included), so ranks may call it at different times and
    /// communicate meanwhile. Several duplications may be in flight, on one communicator or
    /// on overlapping ones; every member must start the duplications of one communicator in
    /// the same order. Works on intercommunicators too (both groups take part).
    ///
    /// A peer that dies makes the request fail (with the engine's error for that peer).
    /// Known limit: the agreement takes no decision while a blocking creation (dup, split,
    /// create_group, intercomm creation) runs on this process, so a program that blocks in
    /// such a creation until a peer's duplication has completed waits forever. Dropping the
    /// request before it completes is erroneous: this rank stops taking part, so its peers'
    /// duplication never completes (MPI's layer refuses to free or cancel it).
    pub fn idup(&self) -> Result<DupRequest> {
        self.check_open()?;
        let seq = self.data.idup_seq.get();
        self.data.idup_seq.set(seq.wrapping_add(1));
        let (parts, me, width) = self.agree_parts()?;
        let tag_base = TAG_IDUP | ((seq & 0xffff) << 8) as i32;
        let salt_seq = seq ^ (self.data.ctx << 16);
        Ok(self.start_agreement(parts, me, width, tag_base, salt_seq, None))
    }

    /// Starts an agreement on `width` context ids among `parts` (this process at `me`) on
    /// the tags of `tag_base`; `made` as [`DupRequest`] holds it.
    fn start_agreement(
        &self,
        parts: Vec<AgreePeer>,
        me: usize,
        width: u32,
        tag_base: i32,
        salt_seq: u32,
        made: Option<(Rc<[u32]>, u32)>,
    ) -> DupRequest {
        let mut e = self.engine.borrow_mut();
        let proposal = e.reserve_ctx(width, 0);
        let salt = (u64::from(parts[me].world) << 32) ^ u64::from(salt_seq);
        let state = IdupState {
            attempt: 0,
            salt,
            parts,
            me,
            width,
            tag_base,
            step_no: 0,
            proposal,
            candidate: 0,
            confirming: false,
            dist: 1,
            value: proposal,
            sbuf: Box::new([0]),
            rbuf: Box::new([0]),
            send: None,
            recv: None,
            outcome: None,
        };
        let key = e.add_idup(state);
        // The first step's messages leave now: a peer blocked elsewhere can receive them.
        e.progress();
        drop(e);
        DupRequest {
            parent: self.clone(),
            key,
            taken: false,
            made,
        }
    }

    /// The participants of an agreement over this communicator (both groups of an
    /// intercommunicator, the group whose leader has the lower world rank first), this
    /// process's index among them and the number of context ids the new one takes.
    fn agree_parts(&self) -> Result<(Vec<AgreePeer>, usize, u32)> {
        let d = &self.data;
        let group = |members: &Rc<[u32]>, ctx: u32| -> Vec<AgreePeer> {
            (0..members.len())
                .map(|j| AgreePeer {
                    world: members[j],
                    ctx,
                    me_as_src: d.rank,
                    them_as_src: j as i32,
                    peers: members.clone(),
                })
                .collect()
        };
        let Some(i) = &d.inter else {
            return Ok((group(&d.members, d.ctx + 1), d.rank as usize, 2));
        };
        let local = group(&d.members, i.local.data.ctx + 1);
        let remote = group(&i.remote, i.bridge_ctx);
        if d.members.first() < i.remote.first() {
            let mut parts = local;
            parts.extend(remote);
            Ok((parts, d.rank as usize, INTER_CTX_IDS))
        } else {
            let mut parts = remote;
            parts.extend(local);
            Ok((parts, i.remote.len() + d.rank as usize, INTER_CTX_IDS))
        }
    }

    /// The duplicate on context `ctx` (agreed by an idup).
    fn dup_on(&self, ctx: u32) -> Comm {
        let name = format!("dup of {}", self.data.name);
        match &self.data.inter {
            None => Comm::new(
                self.engine.clone(),
                ctx,
                self.data.rank,
                self.data.members.clone(),
                name,
            ),
            Some(i) => Comm::new_inter(
                self.engine.clone(),
                ctx,
                self.data.rank,
                self.data.members.clone(),
                i.remote.clone(),
                name,
            ),
        }
    }
}

impl DupRequest {
    /// Polls once; the new communicator once the agreement is done (`Ok(None)` before). After
    /// an error or a returned communicator, the request is finished: later calls are errors.
    pub fn test(&mut self) -> Result<Option<Comm>> {
        if self.taken {
            return Err(Error::new(
                ErrorKind::InvalidRequest,
                format!(
                    "idup of {}: the request has already completed",
                    self.parent.name()
                ),
            ));
        }
        let mut e = self.parent.engine.borrow_mut();
        if !e.idup_finished(self.key) {
            e.progress();
        }
        let out = e.take_idup(self.key);
        drop(e);
        match out {
            None => Ok(None),
            Some(r) => {
                self.taken = true;
                r.map(|ctx| {
                    Some(match &self.made {
                        None => self.parent.dup_on(ctx),
                        Some((members, rank)) => Comm::new(
                            self.parent.engine.clone(),
                            ctx,
                            *rank,
                            members.clone(),
                            format!("group of {}", self.parent.data.name),
                        ),
                    })
                })
            }
        }
    }

    /// Whether the agreement is done (test or wait then returns at once); does not poll.
    pub fn is_done(&self) -> bool {
        self.taken || self.parent.engine.borrow().idup_finished(self.key)
    }

    /// Waits for the agreement and returns the new communicator (finishing the request as
    /// `test` does).
    pub fn wait(&mut self) -> Result<Comm> {
        loop {
            if let Some(c) = self.test()? {
                return Ok(c);
            }
            let key = self.key;
            self.parent
                .engine
                .borrow_mut()
                .wait_until(|e| e.idup_finished(key));
        }
    }
}

impl Drop for DupRequest {
    fn drop(&mut self) {
        if !self.taken {
            if let Ok(mut e) = self.parent.engine.try_borrow_mut() {
                e.drop_idup(self.key);
            }
        }
    }
}
