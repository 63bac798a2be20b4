//! Communicators: the world, self, dup, split and free, with context ids that keep traffic on
//! different communicators apart, and rank translation.
//!
//! Context ids: every communicator has a pair `(ctx, ctx + 1)`, the first for point-to-point
//! traffic, the second for the internal traffic of collectives. World uses 0/1, self 2/3. A
//! new communicator takes the maximum of its members' next free id (each process's own
//! counter), so no process ever sees two of its communicators share an id.

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
}

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
        self.check()?;
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
        other.check()?;
        let w = self.world_rank(rank)?;
        Ok(other
            .data
            .members
            .iter()
            .position(|&m| m == w)
            .map(|p| p as Rank))
    }

    pub(crate) fn check(&self) -> Result<()> {
        if self.data.freed.get() {
            return Err(Error::new(
                ErrorKind::InvalidComm,
                format!(
                    "communicator {} (context {}) was freed",
                    self.data.name, self.data.ctx
                ),
            ));
        }
        Ok(())
    }

    /// Frees the communicator: every handle to it becomes invalid. Freeing twice is an error.
    pub fn free(&self) -> Result<()> {
        self.check()?;
        if self.data.ctx < 4 {
            return Err(Error::new(
                ErrorKind::InvalidComm,
                format!("communicator {} cannot be freed", self.data.name),
            ));
        }
        self.data.freed.set(true);
        Ok(())
    }

    /// A new communicator with the same members and a new context (MPI_Comm_dup). Collective.
    pub fn dup(&self) -> Result<Comm> {
        self.check()?;
        let next = self.engine.borrow().next_ctx();
        let all = self.allgather_words(&[next])?;
        let ctx = all.iter().copied().max().unwrap_or(next);
        self.engine.borrow_mut().set_next_ctx(ctx + 2);
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
        self.check()?;
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
        let next = self.engine.borrow().next_ctx();
        let all = self.allgather_words(&[color as u32, key as u32, next])?;
        let ctx = all.chunks(3).map(|c| c[2]).max().unwrap_or(next);
        self.engine.borrow_mut().set_next_ctx(ctx + 2);
        if color == UNDEFINED {
            return Ok(None);
        }
        let mut group: Vec<(i32, u32)> = all
            .chunks(3)
            .enumerate()
            .filter(|(_, c)| c[0] as i32 == color)
            .map(|(r, c)| (c[1] as i32, r as u32))
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
        Ok(Some(Comm::new(
            self.engine.clone(),
            ctx,
            rank,
            members,
            format!("split of {} (color {color})", self.data.name),
        )))
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
        self.check()?;
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
        Ok(c.map(|c| c.renamed(format!("create from {}", self.data.name))))
    }

    /// Splits into one communicator per node, ordered by `key` then rank
    /// (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED). Collective.
    pub fn split_shared(&self, key: i32) -> Result<Comm> {
        self.check()?;
        let me = self.data.members[self.data.rank as usize];
        let node = self.engine.borrow().node_of()[me as usize] as i32;
        let c = self
            .split(node, key)?
            .expect("a node color is never UNDEFINED");
        Ok(c.renamed(format!("shared split of {}", self.data.name)))
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
        // Every member's next free context id, maximised around the group's ring.
        let n = group.len();
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
        self.engine.borrow_mut().set_next_ctx(max + 2);
        Ok(Comm::new(
            self.engine.clone(),
            max,
            pos as u32,
            group.iter().copied().collect(),
            format!("group of {}", self.data.name),
        ))
    }
}
