//! `weft run -n N [--tag-output] [--timeout SECS] [--] PROGRAM ARGS...`: parses and checks
//! the command line, then hands the job to weft-launch and returns its exit code.
//!
//! Only argument handling lives here; everything about processes is in weft-launch.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;
use weft_launch::{run_job, JobSpec, OutputMode};

/// Exit code when the launcher itself fails (no socket, no random source).
const LAUNCHER_FAILED: i32 = 1;

/// Arguments of `weft run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Number of ranks to start (at least 1).
    #[arg(short = 'n', long = "np", value_name = "N", default_value_t = 1, value_parser = parse_nranks)]
    pub nranks: u32,
    /// Prefix every output line with `[rank] `.
    #[arg(long)]
    pub tag_output: bool,
    /// End the job with exit code 124 when it runs longer than SECS seconds (may be
    /// fractional, e.g. 0.5).
    #[arg(long, value_name = "SECS", value_parser = parse_timeout)]
    pub timeout: Option<Duration>,
    /// The program every rank runs, then its arguments.
    #[arg(
        value_name = "PROGRAM",
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub command: Vec<OsString>,
}

fn parse_nranks(s: &str) -> Result<u32, String> {
    let n: u32 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a whole number of ranks"))?;
    if n == 0 {
        return Err("the number of ranks must be at least 1".into());
    }
    Ok(n)
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!(
            "{s:?}: the timeout must be a positive number of seconds"
        ));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| format!("{s:?}: timeout out of range"))
}

/// Runs `weft run`; returns the process exit code.
pub fn run(args: RunArgs) -> i32 {
    let mut command = args.command.into_iter();
    let Some(program) = command.next() else {
        eprintln!("weft run: no program given");
        return 2;
    };
    let spec = JobSpec {
        nranks: args.nranks,
        program: PathBuf::from(program),
        args: command.collect(),
        tag_output: args.tag_output,
        timeout: args.timeout,
        env: Vec::new(),
        output: OutputMode::Inherit,
    };
    match run_job(&spec) {
        Ok(outcome) => outcome.exit_code,
        Err(e) => {
            eprintln!("weft run: {e}");
            LAUNCHER_FAILED
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }

    fn parse(args: &[&str]) -> Result<RunArgs, String> {
        let mut v = vec!["weft-run"];
        v.extend_from_slice(args);
        Cli::try_parse_from(v)
            .map(|c| c.run)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn parses_ranks_timeout_and_program_arguments() {
        let a = parse(&[
            "-n",
            "4",
            "--tag-output",
            "--timeout",
            "2.5",
            "prog",
            "-x",
            "--y",
        ])
        .unwrap();
        assert_eq!(a.nranks, 4);
        assert!(a.tag_output);
        assert_eq!(a.timeout, Some(Duration::from_millis(2500)));
        assert_eq!(a.command, ["prog", "-x", "--y"]);
        let a = parse(&["--", "prog", "-n", "3"]).unwrap();
        assert_eq!(
            a.nranks, 1,
            "-n defaults to 1 and after -- belongs to the program"
        );
        assert_eq!(a.command, ["prog", "-n", "3"]);
    }

    #[test]
    fn bad_numbers_are_clear_errors() {
        let e = parse(&["-n", "0", "prog"]).unwrap_err();
        assert!(e.contains("at least 1"), "{e}");
        let e = parse(&["-n", "many", "prog"]).unwrap_err();
        assert!(e.contains("not a whole number"), "{e}");
        let e = parse(&["--timeout", "-1", "prog"]).unwrap_err();
        assert!(e.contains("positive"), "{e}");
        let e = parse(&["--timeout", "soon", "prog"]).unwrap_err();
        assert!(e.contains("not a number of seconds"), "{e}");
        assert!(parse(&["--timeout", "inf", "prog"]).is_err());
        assert!(parse(&["-n", "2"]).is_err(), "a program is required");
    }

    #[test]
    fn runs_a_job_and_returns_its_code() {
        let a = parse(&["-n", "2", "/bin/sh", "-c", "exit $((WEFT_RANK * 3))"]).unwrap();
        assert_eq!(run(a), 3);
        let a = parse(&["/no/such/program"]).unwrap();
        assert_eq!(run(a), 127);
    }
}
