//! The TCP transport between nodes. (Being written for issue 5.)
