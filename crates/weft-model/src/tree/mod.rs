//! tree (under construction).
