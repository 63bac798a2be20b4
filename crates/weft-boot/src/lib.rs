//! Bootstrap key-value store (placeholder until the launcher work lands).
