//! The aggregation planner behind `weft plan`: rank placement on fabrics, type I tree link
//! analysis, type II trees (root selection, physical and minimum-cost trees), allocation
//! experiments, and the type I vs type II choice.
//!
//! Pure model code: no I/O, deterministic. Depends on `fabric`, `tree` and `cost`; never on
//! the runtime or the CLI.

pub mod alloc;
pub mod choose;
pub mod lease;
pub mod links;
pub mod place;
pub mod rng;
pub mod type2;

pub use alloc::{allocate, type2_tree, AllocConfig, AllocReport, MadeTree, Method, Pattern};
pub use choose::{choose, sunway_like_params, ChoiceRow, SwitchCost};
pub use lease::{EntryPool, Grant, PoolStatus, TreeSwitch, Type2Tree};
pub use links::{analyse_links, LinkReport, TreeShape};
pub use place::{PlaceMethod, Placement};
pub use type2::{
    cost_lower_bound, feasible, min_cost_tree, DerivedTree, PhysicalTree, Type2Planner,
};
