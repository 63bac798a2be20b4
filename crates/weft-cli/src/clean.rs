//! `weft clean`: removes the shared-memory segments that jobs which are gone left in
//! `/dev/shm` — what a crash of every process of a node (or a launcher killed with SIGKILL)
//! leaves. Only this user's `weft-*` entries that no live process maps or has open are
//! taken (see `weft_launch::sweep_stale_segments`); `--dry-run` only lists them.

use clap::Args;
use std::time::Duration;

/// Arguments of `weft clean`.
#[derive(Args)]
pub(crate) struct CleanArgs {
    /// List what would be removed, remove nothing.
    #[arg(long)]
    dry_run: bool,
}

/// Runs `weft clean`; returns the exit code (1 when a stale segment could not be removed).
pub(crate) fn run(a: CleanArgs) -> i32 {
    let stale = weft_launch::sweep_stale_segments(a.dry_run, Duration::ZERO);
    let mut failed = 0;
    for s in &stale {
        let what = match (a.dry_run, s.removed) {
            (true, _) => "would remove",
            (false, true) => "removed",
            (false, false) => {
                failed += 1;
                "could not remove"
            }
        };
        println!("{what} {} ({} bytes)", s.path.display(), s.bytes);
    }
    let bytes: u64 = stale.iter().map(|s| s.bytes).sum();
    let verb = if a.dry_run {
        "stale (dry run)"
    } else {
        "stale"
    };
    println!(
        "{} {verb} weft segment{} ({bytes} bytes); segments of running jobs are left alone",
        stale.len(),
        if stale.len() == 1 { "" } else { "s" }
    );
    i32::from(failed > 0)
}
