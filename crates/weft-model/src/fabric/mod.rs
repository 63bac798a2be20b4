//! fabric (under construction).
