//! weft data path.
