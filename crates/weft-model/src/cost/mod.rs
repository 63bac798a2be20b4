//! cost (under construction).
