//! Progress of the commands that run for more than a few seconds (`weft bench coll` and
//! `sync`, `weft plan experiment`), drawn by `indicatif` on stderr: a bar with the step under
//! way, the count and the elapsed time. Quiet when stderr is not a terminal (a script, a
//! pipe, CI) or the command prints JSON, so machine-read output never carries it; results
//! printed while it runs go above the bar ([`Progress::println`]).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// A progress bar of `total` steps, or nothing.
pub(crate) struct Progress(Option<ProgressBar>);

impl Progress {
    /// A bar for `what` with `total` steps; hidden when `quiet` or stderr is no terminal.
    pub(crate) fn new(what: &str, total: u64, quiet: bool) -> Progress {
        Progress::with_target(what, total, quiet || !std::io::stderr().is_terminal())
    }

    fn with_target(what: &str, total: u64, hidden: bool) -> Progress {
        if hidden {
            return Progress(None);
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        let style =
            ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(what.to_owned());
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        Progress(Some(bar))
    }

    /// Says which step is under way.
    pub(crate) fn start(&self, step: &str) {
        if let Some(b) = &self.0 {
            b.set_message(step.to_owned());
        }
    }

    /// One step done.
    pub(crate) fn done(&self) {
        if let Some(b) = &self.0 {
            b.inc(1);
        }
    }

    /// Prints `line` on stdout above the bar (plainly without one).
    pub(crate) fn println(&self, line: &str) {
        match &self.0 {
            Some(b) => b.suspend(|| println!("{line}")),
            None => println!("{line}"),
        }
    }

    /// Prints `line` on stderr above the bar (plainly without one): notes that must not mix
    /// with results on stdout.
    pub(crate) fn note(&self, line: &str) {
        match &self.0 {
            Some(b) => b.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    /// Whether a bar is drawn.
    #[cfg(test)]
    pub(crate) fn shown(&self) -> bool {
        self.0.is_some()
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(b) = self.0.take() {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_bars_do_nothing_and_shown_ones_count() {
        let quiet = Progress::new("x", 3, true);
        assert!(!quiet.shown());
        quiet.start("a");
        quiet.done();
        let bar = Progress::with_target("x", 3, false);
        assert!(bar.shown());
        bar.start("step one");
        bar.done();
        bar.done();
        let b = bar.0.as_ref().unwrap();
        assert_eq!((b.position(), b.length()), (2, Some(3)));
        assert_eq!(b.message(), "step one");
    }
}
