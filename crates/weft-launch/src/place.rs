//! Rank placement: which host each rank runs on and its local rank there.
//!
//! Kept apart from spawning so that multi-host placement (`--hosts`, `--map-by`) can be added
//! without touching how one rank is started. Pure: no I/O.

/// Where one rank runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankPlacement {
    /// Rank in the job, `0..size`.
    pub rank: u32,
    /// Rank among the job's ranks on the same host.
    pub local_rank: u32,
    /// Number of the job's ranks on that host.
    pub local_size: u32,
    /// The host, `None` for the launcher's own.
    pub host: Option<String>,
}

/// Places `nranks` ranks all on the launcher's host.
pub fn place_on_this_host(nranks: u32) -> Vec<RankPlacement> {
    (0..nranks)
        .map(|rank| RankPlacement {
            rank,
            local_rank: rank,
            local_size: nranks,
            host: None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_placement_numbers_ranks_in_order() {
        let p = place_on_this_host(3);
        assert_eq!(p.len(), 3);
        for (i, r) in p.iter().enumerate() {
            assert_eq!(
                (r.rank, r.local_rank, r.local_size),
                (i as u32, i as u32, 3)
            );
            assert!(r.host.is_none());
        }
        assert!(place_on_this_host(0).is_empty());
    }
}
