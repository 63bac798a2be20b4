//! Rank mapping: where a job's processes go so that the neighbours its communication pattern
//! names stay physically near.
//!
//! - [`torus`]: a virtual torus of the requested shape on the healthy nodes of a physical
//!   torus with faulty or excluded nodes (seed 003's fault hiding), with its dilation and
//!   congestion;
//! - [`cart`]: which rank takes each position of a Cartesian grid so that grid neighbours
//!   share a node (`MPI_Cart_create` with `reorder`);
//! - [`graph`]: which rank takes each vertex of a (weighted) process graph so that few edges
//!   cross nodes (`MPI_Graph_create`, `MPI_Dist_graph_create(_adjacent)` with `reorder`).
//!
//! Pure model code: deterministic, no I/O.

pub mod cart;
pub mod graph;
pub mod torus;

pub use cart::{cart_order, cart_order_on, CartOrder};
pub use graph::{graph_order, GraphOrder};
pub use torus::{map_torus, MapReport, Torus, TorusMap};
