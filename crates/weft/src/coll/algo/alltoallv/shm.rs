//! Shared-memory alltoallv on the node's collective area. Each rank's slot holds a header
//! (the call's tag, the rounds the rank takes, the bytes it sends each rank) and one
//! fixed-size piece per peer; a round copies the next piece of every block the rank sends
//! into its slot, arrives once, and copies the pieces meant for it out of every other
//! rank's slot (the next round writes the slots' other halves, so no arrival frees them).
//! Two copies per byte, one node-wide phase per round, no messages.
//!
//! Blocks differ per pair and no rank knows the others' counts, so the rounds differ by
//! rank: in the first round every rank reads every header, checks that what each peer sends
//! it is what it expects (a difference is the call's error, reported at its end), and pads
//! with empty arrivals up to the most rounds any rank takes, so every rank arrives equally
//! often. The choice of this algorithm is the node's, not the rank's (see
//! `select::Tuning::select`). The communicator must be the whole node (`SharedMemory`).

use crate::coll::schedule::{Buf, Plan, Region, Slot};
use weft_core::{Error, ErrorKind, Result};
use weft_model::cost::CollModel;

/// Bytes of the header at the start of each slot, for `size` ranks: tag, rounds and one
/// length per rank (u64 each), rounded up to a cache line.
fn header_bytes(size: usize) -> usize {
    (8 * (2 + size)).next_multiple_of(64)
}

/// Bytes of each peer's piece per round in slots of `slot_bytes` shared by `size` ranks, a
/// multiple of 64; None when the slot cannot give every peer 64 bytes after the header.
pub(crate) fn piece_bytes(size: u32, slot_bytes: usize) -> Option<usize> {
    let n = size as usize;
    let piece = (slot_bytes.checked_sub(header_bytes(n))? / n) & !63;
    (piece >= 64).then_some(piece)
}

/// Rank `rank`'s plan in slots of `slot_bytes` shared by `size` ranks: `send[j]` and
/// `recv[j]` are the (offset, length) in bytes of the block for and from rank j (the own
/// block's lengths agree). An error when the slots are too small for `size` ranks' pieces
/// (the same on every rank: one node, one area).
pub(crate) fn plan(
    rank: u32,
    size: u32,
    send: &[(usize, usize)],
    recv: &[(usize, usize)],
    slot_bytes: usize,
) -> Result<Plan> {
    let Some(piece) = piece_bytes(size, slot_bytes) else {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "alltoallv shm on rank {rank}: the node's collective area gives each rank \
                 {slot_bytes} bytes, too few for {size} ranks' 64-byte pieces (raise \
                 WEFT_SHM_COLL_BYTES)"
            ),
        ));
    };
    Ok(plan_in_pieces(rank, send, recv, piece))
}

/// [`plan`] with peers' pieces of `piece` bytes (from [`piece_bytes`]).
fn plan_in_pieces(
    rank: u32,
    send: &[(usize, usize)],
    recv: &[(usize, usize)],
    piece: usize,
) -> Plan {
    let mut p = Plan::new();
    let n = send.len();
    let r = rank as usize;
    p.step();
    p.copy(
        Region::new(Buf::Send, send[r].0, send[r].1),
        Region::new(Buf::Recv, recv[r].0, recv[r].1),
    );
    if n == 1 {
        return p;
    }
    let rounds = |len: usize| len.div_ceil(piece);
    let own = (0..n)
        .filter(|&j| j != r)
        .map(|j| rounds(send[j].1).max(rounds(recv[j].1)))
        .max()
        .unwrap_or(0)
        .max(1);
    // Header words (after the tag): own rounds, the bytes sent to each rank; then, for the
    // check only, the bytes expected from each rank.
    let mut words = Vec::with_capacity(1 + 2 * n);
    words.push(own as u64);
    words.extend(send.iter().map(|b| b.1 as u64));
    words.extend(recv.iter().map(|b| b.1 as u64));
    let first = p.words(&words);
    let header = header_bytes(n);
    for k in 0..own {
        let off = k * piece;
        let part = |len: usize| len.saturating_sub(off).min(piece);
        p.step();
        if k == 0 {
            p.shm_write_header(first, 1 + n as u32);
        }
        for j in (0..n).filter(|&j| j != r) {
            p.shm_write(
                Slot::Rank(rank),
                header + j * piece,
                Region::new(Buf::Send, send[j].0 + off, part(send[j].1)),
            );
        }
        p.shm_arrive();
        p.step();
        if k == 0 {
            p.shm_check_headers(first);
        }
        for j in (0..n).filter(|&j| j != r) {
            p.shm_read(
                Slot::Rank(j as u32),
                header + r * piece,
                Region::new(Buf::Recv, recv[j].0 + off, part(recv[j].1)),
            );
        }
    }
    p.step();
    p.shm_arrive_pad();
    p
}

/// As the equal-block area alltoall, on the average block.
pub(crate) fn cost(m: &CollModel) -> f64 {
    crate::coll::algo::alltoall::shm::cost(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_leave_room_for_the_header_and_stay_aligned() {
        assert_eq!(header_bytes(4), 64);
        assert_eq!(header_bytes(7), 128);
        // 4 ranks, 64 KiB slots: (65536 - 64) / 4 = 16368, down to 16320.
        assert_eq!(piece_bytes(4, 65536), Some(16320));
        assert_eq!(piece_bytes(4, 64 + 4 * 64), Some(64));
        assert_eq!(piece_bytes(4, 64 + 4 * 64 - 1), None);
        assert_eq!(piece_bytes(4, 32), None);
    }
}
