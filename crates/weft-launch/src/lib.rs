//! Job launcher (placeholder until the launcher work lands).
