//! Slot layouts behind the hierarchical k-nomial trees (seed 001 §3.3).
//!
//! A group owns a k-nomial slot space `[0, k^order)`; its ranks sit in slots, and a slot's
//! parent is the slot with its lowest non-zero base-k digit cleared, so a slot's depth is its
//! number of non-zero digits. Occupied slots are always *ancestor-closed* (an occupied slot's
//! parent is occupied); then an aligned block `[b, b + k^e)` (b a multiple of k^e) is free
//! exactly when its first slot is (the paper's "check the first slot of each block").
//!
//! Pure arithmetic over hash maps; no I/O and nothing outside this module's parent.

use super::knomial::{slot_depth, slot_parent};
use std::collections::HashMap;
use weft_core::{bail, Result};

/// One occupied slot of a group layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cell {
    /// Slot, relative to the group's first slot.
    pub slot: u64,
    /// The rank sitting there.
    pub rank: u32,
    /// How many occupied slots have this one as parent.
    pub children: u32,
}

/// A group's arrangement in its own slot space.
#[derive(Clone, Debug)]
pub(crate) struct GroupLayout {
    /// The slot space is `[0, k^order)`: the k-nomial order, the paper's tree "height".
    pub order: u32,
    /// Most non-zero digits of any occupied slot: edges on the longest path.
    pub height: u32,
    /// Occupied slots; `cells[0]` is slot 0 (the group's leader).
    pub cells: Vec<Cell>,
}

impl GroupLayout {
    /// A single rank: order 0, height 0.
    pub(super) fn single(rank: u32) -> GroupLayout {
        GroupLayout {
            order: 0,
            height: 0,
            cells: vec![Cell {
                slot: 0,
                rank,
                children: 0,
            }],
        }
    }

    /// The rank in slot 0.
    pub(super) fn leader(&self) -> u32 {
        self.cells[0].rank
    }
}

/// `k^e`, or an error when it leaves the u64 slot space.
pub(crate) fn pow(k: u64, e: u32) -> Result<u64> {
    let mut v = 1u64;
    for _ in 0..e {
        v = match v.checked_mul(k) {
            Some(x) => x,
            None => bail!(
                InvalidArgument,
                "hierarchical tree: slot space k^{e} with k = {k} exceeds 2^64 slots"
            ),
        };
    }
    Ok(v)
}

/// The paper's merge (Algorithm 2) of already laid-out parts: `parts[0]` keeps slot 0; the
/// others, largest block first, go to the lowest free aligned block of their size whose
/// first slot's parent is occupied and has room under `degree`, growing the space by a
/// factor of k when none is left. Always succeeds without a degree limit.
pub(crate) fn paper_merge(k: u64, mut parts: Vec<GroupLayout>, degree: u32) -> Result<GroupLayout> {
    if parts.len() == 1 {
        return Ok(parts.pop().expect("one part"));
    }
    parts[1..].sort_by(|a, b| {
        b.order
            .cmp(&a.order)
            .then(b.cells.len().cmp(&a.cells.len()))
            .then(a.leader().cmp(&b.leader()))
    });
    let total: usize = parts.iter().map(|p| p.cells.len()).sum();
    let mut children: HashMap<u64, u32> = HashMap::with_capacity(total);
    for c in &parts[0].cells {
        children.insert(c.slot, c.children);
    }
    let mut placed = vec![0u64];
    let mut order = parts[0].order;
    // Candidate blocks are visited once per block size: a block passed over stays unusable
    // (occupied, or its parent full, or its parent empty because an earlier block of the
    // same size was unusable; see the module notes).
    let mut cursor_order = u32::MAX;
    let mut cursor = 0u64;
    for part in &parts[1..] {
        if part.order != cursor_order {
            cursor_order = part.order;
            cursor = 0;
        }
        let block = pow(k, part.order)?;
        let slot = loop {
            let space = pow(k, order)?;
            let mut found = None;
            while let Some(b) = cursor.checked_mul(block).filter(|&b| b < space) {
                cursor += 1;
                if b == 0 || children.contains_key(&b) {
                    continue;
                }
                if children
                    .get(&slot_parent(b, k))
                    .is_some_and(|&d| d < degree)
                {
                    found = Some(b);
                    break;
                }
            }
            if let Some(b) = found {
                break b;
            }
            // Growing the space only adds children to slot 0 (every other slot's children
            // lie inside its own aligned block), so a full slot 0 means no order helps.
            if children.get(&0).copied().unwrap_or(0) >= degree {
                bail!(
                    InvalidArgument,
                    "hierarchical knomial: degree limit {degree} leaves no slot for the group \
                     led by rank {} (k = {k}; the root is full): raise the limit or lower k",
                    part.leader()
                );
            }
            order += 1;
        };
        for c in &part.cells {
            children.insert(slot + c.slot, c.children);
        }
        *children
            .get_mut(&slot_parent(slot, k))
            .expect("parent slot checked occupied") += 1;
        placed.push(slot);
    }
    let mut cells = Vec::with_capacity(total);
    let mut height = 0;
    for (part, &base) in parts.iter().zip(&placed) {
        for c in &part.cells {
            let slot = base + c.slot;
            height = height.max(slot_depth(slot, k));
            cells.push(Cell {
                slot,
                rank: c.rank,
                children: children[&slot],
            });
        }
    }
    Ok(GroupLayout {
        order,
        height,
        cells,
    })
}
