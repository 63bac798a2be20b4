//! One file per algorithm. Each builds a [`Plan`](super::schedule::Plan) for one rank from
//! the communicator's shape and the byte layout of the call; none touches buffers or the
//! engine, so every plan can be checked without running it. Restrictions (commutative
//! operation only, and so on) are declared by the collective that registers the algorithm.

pub(crate) mod bruck_allgather;
pub(crate) mod bruck_alltoall;
pub(crate) mod dissemination;
pub(crate) mod fanout_scan;
pub(crate) mod hierarchical;
pub(crate) mod knomial_allgather;
pub(crate) mod knomial_bcast;
pub(crate) mod knomial_gather;
pub(crate) mod knomial_reduce;
pub(crate) mod linear_alltoall;
pub(crate) mod linear_gather;
pub(crate) mod linear_scan;
pub(crate) mod linear_scatter;
pub(crate) mod pairwise;
pub(crate) mod rabenseifner;
pub(crate) mod recursive_doubling;
pub(crate) mod recursive_doubling_allgather;
pub(crate) mod recursive_halving;
pub(crate) mod ring_allgather;
pub(crate) mod ring_allreduce;
pub(crate) mod ring_reduce_scatter;
pub(crate) mod scatter_allgather_bcast;
pub(crate) mod shm;
pub(crate) mod shm_allgather;
pub(crate) mod shm_allgatherv;
pub(crate) mod shm_alltoall;
pub(crate) mod shm_alltoallv;
pub(crate) mod shm_direct_alltoall;
pub(crate) mod shm_direct_bcast;
pub(crate) mod shm_direct_combine;
pub(crate) mod shm_direct_gather;
pub(crate) mod shm_direct_reduce;
pub(crate) mod shm_direct_reduce_scatter;
pub(crate) mod shm_one_shot;
pub(crate) mod shm_reduce;
pub(crate) mod shm_reduce_scatter;

/// Splits `count` elements of `elem_bytes` into `parts` nearly equal chunks; returns each
/// chunk's byte offset and length (the first `count % parts` chunks get one more element).
pub(crate) fn chunks(count: usize, elem_bytes: usize, parts: usize) -> Vec<(usize, usize)> {
    let base = count / parts;
    let extra = count % parts;
    let mut off = 0;
    (0..parts)
        .map(|i| {
            let n = base + usize::from(i < extra);
            let c = (off * elem_bytes, n * elem_bytes);
            off += n;
            c
        })
        .collect()
}

/// `(a - b) mod n` for ranks.
pub(crate) fn sub(a: u32, b: u32, n: u32) -> u32 {
    ((a as u64 + n as u64 * 2 - (b % n) as u64) % n as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_buffer() {
        let c = chunks(10, 4, 3);
        assert_eq!(c, vec![(0, 16), (16, 12), (28, 12)]);
        assert_eq!(chunks(1, 8, 4).iter().map(|c| c.1).sum::<usize>(), 8);
        assert_eq!(sub(0, 3, 5), 2);
        assert_eq!(sub(4, 9, 5), 0);
    }
}
