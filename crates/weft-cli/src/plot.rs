//! PNG plots (being written).
