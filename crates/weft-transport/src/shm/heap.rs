//! Symmetric heaps mapped by every rank of a node. (Being written for issue 7.)
