//! Multi-process integration tests of weft; see tests/.
