//! The plans of a call as the schedule simulator (`weft_model::sim`, `weft sim`) reads
//! them: the very plan the runtime would run on rank r of a job of a given shape, built by
//! the chosen algorithm's row of the table, turned into the simulator's program (message
//! sizes and peers, local work in bytes, node-wide arrivals). Read-only: nothing here
//! touches an engine, a communicator or a buffer.

use super::algo::{self, Call};
use super::schedule::Action;
use super::select::{Algorithm, Choice, Restriction};
use super::Coll;
use weft_core::Result;
use weft_model::sim::{Op, Program};
use weft_model::tree::GroupLevels;
use weft_model::tree::Tree;

/// The shape of a simulated call: equal blocks, a commutative reduction of 8-byte
/// elements, ranks placed `ppn` to a node in order.
#[derive(Clone, Debug)]
pub struct SimCall {
    /// Ranks in the communicator.
    pub size: u32,
    /// Ranks per node.
    pub ppn: u32,
    /// Bytes per rank as the selector counts them (the whole buffer of bcast, reduce and
    /// allreduce; one rank's block of gather, scatter, allgather and alltoall).
    pub bytes: usize,
    /// The root of rooted collectives.
    pub root: u32,
    /// Network rails between nodes.
    pub rails: u32,
    /// Bytes of the node's collective area (`WEFT_SHM_COLL_BYTES`, 4 MiB by default).
    pub area_bytes: usize,
    /// Node of each rank (one group level), every rank's block, and the halving order (made
    /// once).
    levels: Option<GroupLevels>,
    blocks: Vec<(usize, usize)>,
    near_first: bool,
}

impl SimCall {
    /// A call of `bytes` per rank on `size` ranks, `ppn` to a node.
    pub fn new(
        size: u32,
        ppn: u32,
        bytes: usize,
        root: u32,
        rails: u32,
        area_bytes: usize,
    ) -> Self {
        let nodes: Vec<u32> = (0..size).map(|r| r / ppn.max(1)).collect();
        let near_first = size >= 4 && algo::allreduce::rabenseifner::pairs_near_first(&nodes);
        SimCall {
            size,
            ppn: ppn.max(1),
            bytes,
            root,
            rails,
            area_bytes,
            blocks: (0..size as usize).map(|i| (i * bytes, bytes)).collect(),
            levels: GroupLevels::new(vec![nodes]).ok(),
            near_first,
        }
    }
}

/// Bytes of one slot of a node's collective area of `area_bytes` shared by `local` ranks:
/// the area's own geometry (`weft_transport::shm::coll`): a header line per rank rounded to
/// a page, then two halves of `local + 1` slots, each a multiple of 64 bytes.
pub fn area_slot_bytes(area_bytes: usize, local: u32) -> usize {
    let n = local as usize;
    let slots_offset = ((1 + n) * 64).next_multiple_of(4096);
    (area_bytes.saturating_sub(slots_offset) / (2 * (n + 1))) & !63
}

/// The programs of one simulated call, rank by rank: what the ranks share (the
/// hierarchical tree) is built once, then each rank's plan by the chosen row's builder, as the
/// runtime would build it.
pub struct SimPlans<'a> {
    coll: Coll,
    choice: &'a Choice,
    call: &'a SimCall,
    hier_tree: Option<Tree>,
}

impl<'a> SimPlans<'a> {
    /// The plans of `coll` by `choice` on a call of shape `call`.
    pub fn new(coll: Coll, choice: &'a Choice, call: &'a SimCall) -> Result<Self> {
        let hier_tree = match (&call.levels, choice.algo.hierarchical) {
            (Some(levels), true) => {
                // The hierarchical allreduce reduces to rank 0 and broadcasts from it.
                let root = if coll == Coll::Allreduce {
                    0
                } else {
                    call.root
                };
                Some(algo::bcast::hier_knomial::tree(levels, choice.radix, root)?)
            }
            _ => None,
        };
        Ok(SimPlans {
            coll,
            choice,
            call,
            hier_tree,
        })
    }

    /// The program rank `rank` runs.
    pub fn rank(&self, rank: u32) -> Result<Program> {
        program(
            self.coll,
            self.choice,
            self.call,
            self.hier_tree.as_ref(),
            rank,
        )
    }
}

/// The program rank `rank` runs for `coll` by `choice` on a call of shape `call` (the plan
/// the row's builder makes for it, as the runtime would build it). For many ranks of one
/// call, [`SimPlans`] builds what they share once.
pub fn rank_program(coll: Coll, choice: &Choice, call: &SimCall, rank: u32) -> Result<Program> {
    program(coll, choice, call, None, rank)
}

fn program(
    coll: Coll,
    choice: &Choice,
    call: &SimCall,
    hier_tree: Option<&Tree>,
    rank: u32,
) -> Result<Program> {
    let a: &Algorithm = choice.algo;
    let blocks = &call.blocks[..];
    let (send_blocks, recv_blocks): (&[_], &[_]) = match coll {
        Coll::Gatherv | Coll::Allgatherv => (&[], blocks),
        Coll::Scatterv | Coll::ReduceScatter => (blocks, &[]),
        Coll::Alltoallv => (blocks, blocks),
        _ => (&[], &[]),
    };
    let c = Call {
        rank,
        size: call.size,
        radix: choice.radix,
        root: call.root,
        bytes: call.bytes,
        elem_bytes: 8,
        commutative: true,
        slot_bytes: if a.needs(Restriction::SharedMemory) {
            area_slot_bytes(call.area_bytes, call.size)
        } else {
            0
        },
        near_first: call.near_first,
        rails: call.rails,
        levels: call.levels.as_ref().filter(|_| a.hierarchical),
        hier_tree,
        send_blocks,
        recv_blocks,
    };
    let plan = (a.plan)(&c)?;
    let mut p = Program::new();
    for step in plan.each_step() {
        p.step();
        for act in step {
            let op = match *act {
                Action::Send { peer, src, .. } => Op::Send {
                    peer,
                    bytes: src.len as u64,
                },
                Action::Recv { peer, dst } => Op::Recv {
                    peer,
                    bytes: dst.len as u64,
                },
                Action::Copy { src, .. }
                | Action::ShmWrite { src, .. }
                | Action::ShmRead { dst: src, .. } => Op::Copy {
                    bytes: src.len as u64,
                },
                Action::CopyAfterPosting { src, .. } => Op::CopyAfterPosting {
                    bytes: src.len as u64,
                },
                Action::Reduce { src, .. } | Action::ReduceInto { a: src, .. } => Op::Reduce {
                    bytes: src.len as u64,
                },
                Action::CmaRead { dst: r, .. } | Action::CmaWrite { src: r, .. } => Op::Cma {
                    bytes: r.len as u64,
                },
                Action::ShmArrive | Action::ShmLeaderBarrier => Op::Arrive,
                Action::ShmPublishBuffers
                | Action::ShmWriteHeader { .. }
                | Action::ShmCheckHeaders { .. } => Op::Header,
                // Rounds owed to the node: none when every rank has the same blocks.
                Action::ShmArrivePad => continue,
            };
            p.push(op);
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::select::{algorithms, CallTraits, Tuning};

    #[test]
    fn a_program_has_the_plans_messages() {
        let a = algorithms(Coll::Allreduce)
            .iter()
            .find(|a| a.name == "ring")
            .unwrap();
        let t = Tuning::from_vars(&[("WEFT_ALLREDUCE_ALGO", "ring")]).unwrap();
        let traits = CallTraits {
            commutative: true,
            shared_memory: false,
            blocking: true,
            cma: false,
            oversubscribed: false,
        };
        let choice = t.select(Coll::Allreduce, 4, 1, 4096, traits).unwrap();
        assert_eq!(choice.algo.name, a.name);
        let call = SimCall::new(4, 1, 4096, 0, 1, 4 << 20);
        let p = rank_program(Coll::Allreduce, &choice, &call, 1).unwrap();
        // 3 reduce-scatter rounds of two steps and 3 allgather rounds, 1024 B each.
        assert_eq!(p.step_count(), 9);
        assert_eq!(
            p.step_ops(0),
            &[
                Op::Recv {
                    peer: 0,
                    bytes: 1024
                },
                Op::Send {
                    peer: 2,
                    bytes: 1024
                }
            ]
        );
        assert_eq!(p.step_ops(1), &[Op::Reduce { bytes: 1024 }]);
    }

    /// The tree the hierarchical rows share in a simulation gives every rank the program
    /// it plans alone, for bcast and reduce at several roots and allreduce.
    #[test]
    fn shared_hierarchical_trees_give_each_ranks_own_program() {
        for coll in [Coll::Bcast, Coll::Reduce, Coll::Allreduce] {
            let var = format!("WEFT_{}_ALGO", format!("{coll:?}").to_uppercase());
            let t = Tuning::from_vars(&[(var.as_str(), "hier_knomial")]).unwrap();
            let traits = CallTraits {
                commutative: true,
                shared_memory: false,
                blocking: true,
                cma: false,
                oversubscribed: false,
            };
            let choice = t.select(coll, 11, 3, 4096, traits).unwrap();
            assert_eq!(choice.algo.name, "hier_knomial");
            for root in [0, 4, 10] {
                let call = SimCall::new(11, 3, 4096, root, 1, 4 << 20);
                let plans = SimPlans::new(coll, &choice, &call).unwrap();
                for r in 0..11 {
                    let alone = rank_program(coll, &choice, &call, r).unwrap();
                    assert!(alone.op_count() > 0, "{coll:?} root {root} rank {r}");
                    assert_eq!(
                        plans.rank(r).unwrap(),
                        alone,
                        "{coll:?} root {root} rank {r}"
                    );
                }
            }
        }
    }

    #[test]
    fn slots_split_the_area() {
        // 4 MiB for 2 ranks: a one-page header, then 6 slots.
        assert_eq!(area_slot_bytes(4 << 20, 2), (((4 << 20) - 4096) / 6) & !63);
        assert_eq!(area_slot_bytes(100, 2), 0);
    }
}
