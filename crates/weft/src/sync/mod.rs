//! The node synchronisation engine: full/empty words, locks, counter barrier and reduce. (Being written for issue 7.)
