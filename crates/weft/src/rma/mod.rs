//! One-sided communication on the symmetric heap. (Being written for issue 7.)
