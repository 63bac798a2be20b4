//! Collective operations (being written).
