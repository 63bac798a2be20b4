//! weft's diagnostic log: the `log` facade, written by `env_logger` to stderr.
//!
//! Every weft crate logs through `log`'s macros with its module path as the target
//! (`weft::lanes`, `weft::coll::select`, `weft_transport::tcp`, `weft_boot::server`, ...).
//! What is shown comes from the `WEFT_LOG` knob, read once with the other knobs and handed to
//! [`init`]: `env_logger`'s filter syntax, a level (`debug`) or per-target levels
//! (`weft::lanes=debug,weft::coll=debug`). Unset, only warnings and errors are shown.
//!
//! What goes here and what does not:
//! - `debug`: the decisions a user may want explained — the lane each peer gets and why, the
//!   algorithm the selector picks for each new call shape, connections made and accepted,
//!   the bootstrap's events. All of them are made at setup or at a new shape, never per
//!   repeated call.
//! - `warn`/`error`: something went wrong that the program survives (a stranger's connection
//!   dropped, a rail not opened, a frame ignored).
//! - Not the log: what is the program's own output — the CLI's messages and errors, MPI's
//!   fatal error reports, the launcher's crash reports, a rank's abort line. Those are written
//!   with [`crate::diag!`] whatever `WEFT_LOG` says.
//!
//! Nothing is formatted on a hot path: a log call there would cost its level check only
//! (one relaxed atomic load), and weft puts none there.
//!
//! A line is `weft: rank R: LEVEL target: message` (`weft: pid P: ...` before the rank is
//! known, as in the launcher), written in one `write` like [`crate::diag!`]'s lines. Depends on
//! `log` and `env_logger` only.

use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};

/// This process's rank in its job, once known (`u32::MAX` until then).
static RANK: AtomicU32 = AtomicU32::new(u32::MAX);

/// The level shown when `WEFT_LOG` is unset or empty.
pub const DEFAULT_FILTER: &str = "warn";

/// The level names a filter may use, as `env_logger` spells them (any case).
const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

/// Checks a `WEFT_LOG` value before it is used, so that a typo is an error rather than a
/// filter that silently shows nothing (`env_logger` takes any unknown word for a target).
/// Accepted: comma-separated directives, each a level, a weft target (`weft`, `weft::lanes`,
/// `weft_transport::tcp`, ...) or `target=level`, optionally followed by `/text` (only lines
/// containing the text). Empty or blank: the default. The error names the bad directive and
/// what would be accepted.
pub fn check_filter(filter: &str) -> Result<(), String> {
    let directives = filter.split_once('/').map_or(filter, |(d, _)| d);
    for directive in directives
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
    {
        let is_level = |w: &str| LEVELS.iter().any(|l| l.eq_ignore_ascii_case(w.trim()));
        let is_target = |w: &str| {
            let w = w.trim();
            w.starts_with("weft")
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        };
        let ok = match directive.split_once('=') {
            Some((target, level)) => is_target(target) && is_level(level),
            None => is_level(directive) || is_target(directive),
        };
        if !ok {
            return Err(format!(
                "`{directive}` is not a level ({}), a weft target (weft, weft::lanes, \
                 weft_transport::tcp, ...) or target=level",
                LEVELS.join(", ")
            ));
        }
    }
    Ok(())
}

/// Installs the process's logger with `filter` (the `WEFT_LOG` knob's value, checked by
/// [`check_filter`]; `None` or empty: [`DEFAULT_FILTER`]). Only the first call of a process installs it (a second init of weft,
/// or another library holding its own copy of weft, keeps the first one's); later calls do
/// nothing, as does a call in a program that installed a `log` logger of its own.
pub fn init(filter: Option<&str>) {
    let filter = filter
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .unwrap_or(DEFAULT_FILTER);
    let _ = env_logger::Builder::new()
        .parse_filters(filter)
        .target(env_logger::Target::Stderr)
        .write_style(env_logger::WriteStyle::Never)
        .format(|out, record| {
            let rank = RANK.load(Ordering::Relaxed);
            let who = if rank == u32::MAX {
                format!("pid {}", std::process::id())
            } else {
                format!("rank {rank}")
            };
            writeln!(
                out,
                "weft: {who}: {} {}: {}",
                record.level(),
                record.target(),
                record.args()
            )
        })
        .try_init();
}

/// Names this process's rank in the lines it logs from now on.
pub fn set_rank(rank: u32) {
    RANK.store(rank, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_shows_warnings_and_hides_debug() {
        init(None);
        assert!(log::log_enabled!(target: "weft::lanes", log::Level::Warn));
        assert!(!log::log_enabled!(target: "weft::lanes", log::Level::Debug));
        // A second init (another weft in the process) keeps the first logger.
        init(Some("debug"));
        assert!(!log::log_enabled!(target: "weft::lanes", log::Level::Debug));
    }

    #[test]
    fn a_filter_is_levels_and_weft_targets() {
        for good in [
            "",
            " ",
            "debug",
            "DEBUG",
            "weft::lanes=debug,weft::coll=trace",
            "weft_transport::tcp",
            "info,weft::lanes=off",
            "debug/connect",
        ] {
            assert_eq!(check_filter(good), Ok(()), "{good:?}");
        }
        for bad in [
            "verbose",
            "debg",
            "weft::lanes=loud",
            "lanes=debug",
            "=debug",
            "weft=",
            "debug,x",
        ] {
            let err = check_filter(bad).expect_err(bad);
            assert!(err.contains("is not a level"), "{bad:?}: {err}");
        }
    }
}
