//! Process topologies beyond the Cartesian one: graph and distributed graph communicators
//! (MPI-4.1 §8.5) and the neighborhood collectives on every topology (§8.6).
