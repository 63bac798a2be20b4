//! What the end-to-end tests of one `weft` subcommand share: running it, and reading the
//! JSON it prints.

use std::process::{Command, Output};

/// `weft SUBCOMMAND ARGS...`, its exit status and output captured.
pub(crate) fn subcommand(name: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_weft"))
        .arg(name)
        .args(args)
        .output()
        .expect("run weft")
}

/// The JSON that `weft SUBCOMMAND ARGS...` prints on stdout; panics, with its stderr, when
/// the command fails.
pub(crate) fn subcommand_json(name: &str, args: &[&str]) -> serde_json::Value {
    let out = subcommand(name, args);
    assert!(
        out.status.success(),
        "weft {name} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}
