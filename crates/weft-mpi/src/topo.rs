//! Process topologies beyond the Cartesian one: graph and distributed graph communicators
//! (MPI-4.1 §8.5) and the neighborhood collectives on every topology (§8.6).

use std::ffi::c_int;

/// A graph or distributed graph topology attached to a communicator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GraphTopo {
    /// MPI_Graph_create: the whole graph, as the `index` and `edges` arrays were given
    /// (node i's neighbors are `edges[index[i-1]..index[i]]`).
    Graph { index: Vec<c_int>, edges: Vec<c_int> },
    /// MPI_Dist_graph_create(_adjacent): this rank's in- and out-neighbors in the order
    /// given, with their weights when the program gave weights.
    Dist {
        sources: Vec<c_int>,
        source_weights: Option<Vec<c_int>>,
        destinations: Vec<c_int>,
        dest_weights: Option<Vec<c_int>>,
    },
}
