//! plan (under construction).
