//! `PMI_process_mapping`: where a PMI server says each rank runs, so ranks learn their node
//! without exchanging anything.
//!
//! The value is `(vector,BLOCK,...)`, each block `(first_node,nodes,ranks_per_node)`: the
//! next ranks go `ranks_per_node` at a time to nodes `first_node`, `first_node + 1`, ... A
//! mapping shorter than the job repeats (a cyclic placement is written as one round). An
//! empty value means the server does not know, and so does a vector of one bare number
//! without blocks: MPICH 5.0's Hydra answers `(vector,0)` for a one-rank job. Pure; no I/O.

use weft_core::{Error, ErrorKind, Result};

/// The node index of each of `size` ranks from a `PMI_process_mapping` value, `None` when the
/// value is empty (unknown). A value that does not parse, or describes no rank, is an error
/// naming it.
pub fn node_of_ranks(mapping: &str, size: u32) -> Result<Option<Vec<u32>>> {
    let text = mapping.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let bad = |why: &str| {
        Error::new(
            ErrorKind::Protocol,
            format!(
                "PMI_process_mapping {:?}: {why} (expected (vector,(node,nodes,ranks_per_node),...))",
                super::text::shorten(text)
            ),
        )
    };
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let inner = compact
        .strip_prefix("(vector,")
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| bad("not a vector"))?;
    if !inner.is_empty() && inner.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(None);
    }
    let mut blocks = Vec::new();
    let mut rest = inner;
    while !rest.is_empty() {
        let body = rest
            .strip_prefix('(')
            .ok_or_else(|| bad("a block must start with '('"))?;
        let close = body.find(')').ok_or_else(|| bad("a block lacks ')'"))?;
        let nums: Vec<u32> = body[..close]
            .split(',')
            .map(|n| n.parse::<u32>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| bad("block fields must be non-negative integers"))?;
        let [first, nodes, ppn] = nums[..] else {
            return Err(bad("a block has three fields"));
        };
        first
            .checked_add(nodes)
            .ok_or_else(|| bad("node numbers overflow"))?;
        blocks.push((first, nodes, ppn));
        rest = &body[close + 1..];
        if let Some(r) = rest.strip_prefix(',') {
            rest = r;
            if rest.is_empty() {
                return Err(bad("a trailing ','"));
            }
        } else if !rest.is_empty() {
            return Err(bad("blocks must be separated by ','"));
        }
    }
    let per_round: u64 = blocks
        .iter()
        .map(|&(_, nodes, ppn)| nodes as u64 * ppn as u64)
        .sum();
    if per_round == 0 {
        return Err(bad("it places no rank"));
    }
    let mut node_of = Vec::with_capacity(size as usize);
    'fill: loop {
        for &(first, nodes, ppn) in &blocks {
            for node in first..first + nodes {
                for _ in 0..ppn {
                    if node_of.len() == size as usize {
                        break 'fill;
                    }
                    node_of.push(node);
                }
            }
        }
    }
    Ok(Some(node_of))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_cyclic_and_mixed_mappings() {
        let m = |s: &str, n| node_of_ranks(s, n).unwrap().unwrap();
        assert_eq!(m("(vector,(0,2,2))", 4), [0, 0, 1, 1]);
        assert_eq!(m("(vector,(0,2,1),(0,2,1))", 4), [0, 1, 0, 1]);
        assert_eq!(
            m("(vector,(0,2,2),(2,2,4))", 12),
            [0, 0, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]
        );
        // Cyclic written as one round repeats; a shorter job takes a prefix.
        assert_eq!(m("(vector,(0,3,1))", 7), [0, 1, 2, 0, 1, 2, 0]);
        assert_eq!(m("(vector,(0,1,4))", 3), [0, 0, 0]);
        assert_eq!(m(" (vector, (0,1,1) ) ", 1), [0]);
        assert_eq!(node_of_ranks("", 4).unwrap(), None);
        // MPICH 5.0's Hydra for a one-rank job: no blocks, so unknown.
        assert_eq!(node_of_ranks("(vector,0)", 1).unwrap(), None);
        assert_eq!(node_of_ranks("(vector, 12)", 3).unwrap(), None);
    }

    #[test]
    fn malformed_mappings_are_errors_naming_the_value() {
        for bad in [
            "vector",
            "(vector,)",
            "(vector,(0,1))",
            "(vector,(0,1,x))",
            "(vector,x)",
            "(vector,0,(0,1,1))",
            "(vector,(0,1,1)",
            "(vector,(0,1,1)(1,1,1))",
            "(vector,(0,1,1),)",
            "(vector,(0,0,4))",
            "(vector,(4294967295,2,1))",
        ] {
            let e = node_of_ranks(bad, 4).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Protocol, "{bad}");
            assert!(e.message().contains("PMI_process_mapping"), "{bad}: {e}");
        }
    }
}
