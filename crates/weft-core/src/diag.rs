//! Diagnostic lines on stderr, each in one `write`.
//!
//! Rust's stderr is unbuffered and `eprintln!` writes a formatted line piece by piece, so a
//! process killed mid-line (a rank ended by the launcher right after it reported a dead
//! peer) leaves a cut line such as `weft: rank ` in the job's output. [`eprint_line`] and
//! the [`diag!`](crate::diag!) macro format the whole line first and hand it to the kernel
//! in one call: a line is either all there or absent. Depends on std only.

use std::io::Write;

/// Writes `line` and a newline to stderr in one write (errors are ignored: there is nowhere
/// else to report them).
pub fn eprint_line(line: &str) {
    let mut buf = Vec::with_capacity(line.len() + 1);
    buf.extend_from_slice(line.as_bytes());
    buf.push(b'\n');
    let _ = std::io::stderr().lock().write_all(&buf);
}

/// `eprintln!` whose line reaches stderr in one write ([`eprint_line`]).
#[macro_export]
macro_rules! diag {
    ($($arg:tt)*) => {
        $crate::diag::eprint_line(&::std::format!($($arg)*))
    };
}
