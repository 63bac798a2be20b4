//! `weft mpiexec` (what the `mpiexec` and `mpirun` wrappers run): the options job scripts
//! written for Open MPI and MPICH's Hydra pass, each mapped onto `weft run`, or refused with
//! a line saying what to use instead. The mapping is [`translate`]: it turns the command line
//! into `weft run` arguments, which then go through `weft run`'s own parser and checks.
//!
//! Parsed by hand from the table [`OPTIONS`]: these launchers spell long options with one
//! dash (`-np`, `-genv NAME VALUE`, `-ppn`), which no argument parser crate accepts next to
//! short clusters, and some take two values.

use std::ffi::OsString;

/// What an option does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Act {
    /// `weft run`'s option with the value.
    Pass(&'static str),
    /// `weft run`'s flag.
    Flag(&'static str),
    /// Accepted and meaningless for weft (weft's behaviour already is what it asks).
    Accept,
    /// `-genv NAME VALUE`: two values.
    Genv,
    /// `-x NAME[=VALUE]`.
    Export,
    /// Every variable of this environment to every rank.
    EnvAll,
    /// `-genvlist a,b`.
    EnvList,
    /// `--map-by`.
    MapBy,
    /// `--bind-to`.
    BindTo,
    /// `--output-filename DIR[:nocopy,nojobid]`.
    OutputFilename,
    /// `-launcher NAME`.
    Launcher,
    /// `-launcher-exec PATH`.
    LauncherExec,
    /// `--mca KEY VALUE`: two values, a warning.
    Mca,
    /// Refused: the value is the line saying what to use instead; `true` when it takes a
    /// value.
    Refuse(&'static str, bool),
    Help,
    Version,
}

/// Every option accepted, with its spellings.
const OPTIONS: &[(&[&str], Act)] = &[
    (&["-n", "-np", "--n", "--np", "-c"], Act::Pass("-n")),
    (
        &["-ppn", "--ppn", "-npernode", "--npernode", "-N", "-perhost"],
        Act::Pass("--ppn"),
    ),
    (
        &[
            "--hostfile",
            "-hostfile",
            "--machinefile",
            "-machinefile",
            "-f",
            "--default-hostfile",
        ],
        Act::Pass("--hostfile"),
    ),
    (
        &["--host", "-host", "--hosts", "-hosts", "-H"],
        Act::Pass("--hosts"),
    ),
    (&["--map-by", "-map-by"], Act::MapBy),
    (&["--bynode", "-bynode", "-rr"], Act::Flag("--map-by=node")),
    (&["--byslot", "-byslot"], Act::Flag("--map-by=slot")),
    (&["--bind-to", "-bind-to", "-binding"], Act::BindTo),
    (
        &["--report-bindings", "-report-bindings"],
        Act::Flag("--report-bindings"),
    ),
    (&["-genv", "-env"], Act::Genv),
    (&["-x"], Act::Export),
    (&["-genvall", "-envall"], Act::EnvAll),
    (&["-genvlist", "-envlist"], Act::EnvList),
    (&["-genvnone", "-envnone"], Act::Accept),
    (
        &[
            "--allow-run-as-root",
            "-allow-run-as-root",
            "--oversubscribe",
            "-oversubscribe",
        ],
        Act::Accept,
    ),
    (
        &["-l", "-prepend-rank", "--tag-output", "-tag-output"],
        Act::Flag("--tag-output"),
    ),
    (
        &[
            "--output-filename",
            "-output-filename",
            "--output-directory",
            "-output-directory",
        ],
        Act::OutputFilename,
    ),
    (&["-launcher", "--launcher", "-bootstrap"], Act::Launcher),
    (
        &["-launcher-exec", "--launcher-exec", "-bootstrap-exec"],
        Act::LauncherExec,
    ),
    (&["--mca", "-mca", "--gmca", "-gmca"], Act::Mca),
    (&["--timeout", "-timeout"], Act::Pass("--timeout")),
    (&["--stdin", "-stdin"], Act::Pass("--stdin")),
    (&["--boot-addr"], Act::Pass("--boot-addr")),
    (&["--help", "-help", "-h"], Act::Help),
    (&["--version", "-version", "-V", "-info"], Act::Version),
    (
        &["-wdir", "--wdir", "-cwd"],
        Act::Refuse(
            "weft starts the ranks in the folder mpiexec runs in: cd to the folder first",
            true,
        ),
    ),
    (
        &["-outfile-pattern", "-errfile-pattern", "-outfile", "-errfile"],
        Act::Refuse(
            "use --output-filename DIR (each rank's stdout and stderr in DIR/1/rank.N/)",
            true,
        ),
    ),
    (
        &["--prefix", "-prefix"],
        Act::Refuse(
            "weft runs the weft binary next to mpiexec (or $WEFT_BIN) at the same path on every host",
            true,
        ),
    ),
    (
        &["-configfile", "--app", "-app"],
        Act::Refuse(
            "weft starts one program per job: give it on the command line",
            true,
        ),
    ),
];

/// Looks an option up; also splits `--opt=value`.
fn lookup(token: &str) -> Option<(Act, Option<&str>)> {
    let (name, inline) = match token.split_once('=') {
        Some((n, v)) if n.starts_with("--") => (n, Some(v)),
        _ => (token, None),
    };
    OPTIONS
        .iter()
        .find(|(names, _)| names.contains(&name))
        .map(|(_, act)| (*act, inline))
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Run `weft run` with these arguments (after its name), printing the warnings first.
    Run {
        /// The `weft run` arguments.
        args: Vec<OsString>,
        /// Lines to print on stderr before starting (options accepted with no meaning).
        warnings: Vec<String>,
    },
    /// Print the help.
    Help,
    /// Print the version and build.
    Version,
}

/// The `-launcher` names weft understands: the template each stands for.
fn launcher_template(name: &str, exec: Option<&str>) -> Result<String, String> {
    match (name, exec) {
        ("ssh" | "rsh", Some(path)) => Ok(format!("{path} {{host}}")),
        ("ssh", None) => Ok("ssh {host}".into()),
        ("rsh", None) => Ok("rsh {host}".into()),
        ("fork", _) => Ok(weft_launch::FORK_LAUNCHER.into()),
        ("slurm", _) => Err(
            "-launcher slurm: this build of weft cannot start its agents with srun; inside an \
             allocation list its nodes with --hostfile (scontrol show hostnames) and keep ssh, \
             or start an MPI program of weft's with srun directly"
                .into(),
        ),
        (other, _) => Err(format!(
            "-launcher {other}: weft starts hosts with ssh, rsh (or -launcher-exec PATH, any \
             command taking the host name first) or fork (every host on this machine)"
        )),
    }
}

/// Turns an mpiexec command line (without the program name `mpiexec`) into a [`Plan`].
/// `env` is this process's environment (for `-genvall`). Errors are the one line to print.
pub(crate) fn translate(argv: &[OsString], env: &[(String, String)]) -> Result<Plan, String> {
    let mut out: Vec<OsString> = Vec::new();
    let mut warnings = Vec::new();
    let mut launcher: Option<String> = None;
    let mut launcher_exec: Option<String> = None;
    let mut i = 0;
    let text = |i: usize| -> Result<String, String> {
        argv.get(i)
            .map(|a| a.to_string_lossy().into_owned())
            .ok_or_else(|| "missing value".to_string())
    };
    while i < argv.len() {
        let token = argv[i].to_string_lossy().into_owned();
        if token == "--" {
            i += 1;
            break;
        }
        if !token.starts_with('-') || token == "-" {
            break;
        }
        let Some((act, inline)) = lookup(&token) else {
            return Err(format!(
                "unknown option {token} (mpiexec --help lists the options weft accepts)"
            ));
        };
        let name = token.split('=').next().unwrap_or_default().to_owned();
        // The value of a one-value option: inline (`--opt=v`) or the next argument.
        let value = |i: &mut usize| -> Result<String, String> {
            if let Some(v) = inline {
                return Ok(v.to_owned());
            }
            *i += 1;
            text(*i).map_err(|_| format!("{name} needs a value"))
        };
        match act {
            Act::Pass(to) => {
                let v = value(&mut i)?;
                out.push(to.into());
                out.push(v.into());
            }
            Act::Flag(to) => out.push(to.into()),
            Act::Accept => {}
            Act::Genv => {
                let n = value(&mut i)?;
                i += 1;
                let v = text(i).map_err(|_| format!("{name} needs a name and a value"))?;
                out.push("-x".into());
                out.push(format!("{n}={v}").into());
            }
            Act::Export => {
                let v = value(&mut i)?;
                out.push("-x".into());
                out.push(v.into());
            }
            Act::EnvAll => {
                for (k, _) in env {
                    if !weft_launch::PER_RANK_VARS.contains(&k.as_str()) && is_var_name(k) {
                        out.push("-x".into());
                        out.push(k.into());
                    }
                }
            }
            Act::EnvList => {
                // The listed variables this environment has (as Hydra passes them).
                let list = value(&mut i)?;
                let set = |k: &&str| env.iter().any(|(e, _)| e == k);
                for k in list.split(',').filter(|k| !k.is_empty()).filter(set) {
                    out.push("-x".into());
                    out.push(k.into());
                }
            }
            Act::MapBy => {
                let v = value(&mut i)?;
                let how = v.split(':').next().unwrap_or_default().to_ascii_lowercase();
                match how.as_str() {
                    "slot" | "node" if !v.contains(':') => {}
                    "ppr" => {}
                    "torus" => {
                        return Err(format!(
                            "--map-by {v}: mpiexec has no spelling for a virtual torus of \
                             healthy hosts; use weft run --map torus:XxYxZ[@AxBxC] \
                             [--exclude FILE]"
                        ))
                    }
                    _ => {
                        return Err(format!(
                            "--map-by {v}: weft maps ranks by slot, by node or ppr:N:node (pin \
                             them to cores with --bind-to core)"
                        ))
                    }
                }
                out.push("--map-by".into());
                out.push(v.to_ascii_lowercase().into());
            }
            Act::BindTo => {
                let v = value(&mut i)?;
                // Open MPI's qualifiers (core:overload-allowed) change nothing here.
                let what = v.split(':').next().unwrap_or_default().to_ascii_lowercase();
                if what != "core" && what != "none" {
                    return Err(format!(
                        "{name} {v}: weft binds each rank to one core or not at all: use \
                         --bind-to core or --bind-to none"
                    ));
                }
                out.push("--bind-to".into());
                out.push(what.into());
            }
            Act::OutputFilename => {
                let v = value(&mut i)?;
                let (dir, mods) = match v.rsplit_once(':') {
                    Some((d, m)) if !d.is_empty() => (d.to_owned(), m.to_owned()),
                    _ => (v.clone(), String::new()),
                };
                let (mut nocopy, mut nojobid) = (false, false);
                for m in mods.split(',').filter(|m| !m.is_empty()) {
                    match m {
                        "nocopy" => nocopy = true,
                        "nojobid" => nojobid = true,
                        other => {
                            return Err(format!(
                                "{name} {v}: {other:?} is neither nocopy nor nojobid"
                            ))
                        }
                    }
                }
                // Open MPI's layout: DIR/<job>/rank.N/{stdout,stderr}, the job being 1.
                let dir = if nojobid { dir } else { format!("{dir}/1") };
                out.push("--output-dir".into());
                out.push(dir.into());
                if nocopy {
                    out.push("--output-nocopy".into());
                }
            }
            Act::Launcher => launcher = Some(value(&mut i)?),
            Act::LauncherExec => launcher_exec = Some(value(&mut i)?),
            Act::Mca => {
                let key = value(&mut i)?;
                i += 1;
                let v = text(i).map_err(|_| format!("{name} needs a key and a value"))?;
                if key == "plm_rsh_agent" || key == "orte_rsh_agent" {
                    // Open MPI's way of naming the remote shell.
                    launcher_exec = Some(v);
                    launcher.get_or_insert_with(|| "ssh".into());
                } else {
                    warnings.push(format!(
                        "mpiexec: warning: {name} {key} {v} has no meaning for weft and is \
                         ignored (weft's settings are WEFT_* variables: weft info --knobs)"
                    ));
                }
            }
            Act::Refuse(line, takes_value) => {
                if takes_value {
                    value(&mut i)?;
                }
                return Err(format!("{name} is not supported: {line}"));
            }
            Act::Help => return Ok(Plan::Help),
            Act::Version => return Ok(Plan::Version),
        }
        i += 1;
    }
    let program = &argv[i.min(argv.len())..];
    if program.is_empty() {
        return Err("no program given (mpiexec [options] program [args...]; see --help)".into());
    }
    if program.iter().any(|a| a == ":") {
        return Err(
            "several programs separated by ':' (MPMD) are not supported: weft starts one \
             program per job"
                .into(),
        );
    }
    match (launcher, launcher_exec) {
        (Some(l), exec) => {
            out.push("--launcher".into());
            out.push(launcher_template(&l, exec.as_deref())?.into());
        }
        (None, Some(exec)) => {
            out.push("--launcher".into());
            out.push(format!("{exec} {{host}}").into());
        }
        (None, None) => {}
    }
    out.push("--".into());
    out.extend(program.iter().cloned());
    Ok(Plan::Run {
        args: out,
        warnings,
    })
}

fn is_var_name(k: &str) -> bool {
    k.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The help `mpiexec --help` prints.
pub(crate) const HELP: &str = "\
usage: mpiexec [options] program [args...]     (weft's mpiexec: runs `weft run`)

  -n N, -np N, -c N              number of ranks (default: one per slot of the hosts, else 1)
  --host H, -hosts H, -H H       hosts NAME[:SLOTS],...; this machine's names start locally
  --hostfile F, -f F, -machinefile F
                                 hosts from a file: NAME, NAME slots=N (Open MPI), NAME:N (MPICH)
  -ppn N, --npernode N, -N N     N ranks per host
  --map-by slot|node|ppr:N:node  fill hosts in turn (slot), round robin (node), N per node
  --bynode, -rr, --byslot        --map-by node / slot
  --bind-to core|none            pin each rank to a core (WEFT_BIND), or not
  --report-bindings              each rank prints where it is bound
  -x NAME[=VALUE], -genv NAME VALUE, -env NAME VALUE
                                 give every rank on every host this variable
  -genvall, -genvlist A,B        every variable of this environment / the ones named
  --stdin RANK|all|none          who reads mpiexec's stdin (default rank 0)
  -l, -prepend-rank, --tag-output
                                 prefix every output line with [rank]
  --output-filename DIR[:nocopy,nojobid]
                                 also write each rank's output to DIR/1/rank.N/stdout, stderr
  -launcher ssh|rsh|fork, -launcher-exec PATH
                                 how agents start on other hosts (default ssh)
  --timeout SECS                 end the job after SECS seconds (exit 124)
  --mca KEY VALUE                accepted with a warning (no meaning for weft); plm_rsh_agent
                                 names the remote shell
  --oversubscribe, --allow-run-as-root, -genvnone
                                 accepted (weft already behaves so)
  --help, --version

Anything else is refused with a line saying what to use. weft's own settings are WEFT_*
variables (weft info --knobs); `weft run --help` shows the launcher's options.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    fn run_args(v: &[&str]) -> Vec<String> {
        match translate(
            &os(v),
            &[
                ("HOME".into(), "/h".into()),
                ("WEFT_RANK".into(), "1".into()),
            ],
        )
        .unwrap()
        {
            Plan::Run { args, .. } => args
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            other => panic!("{other:?}"),
        }
    }

    fn error(v: &[&str]) -> String {
        translate(&os(v), &[]).unwrap_err()
    }

    #[test]
    fn job_script_options_map_onto_weft_run() {
        assert_eq!(
            run_args(&[
                "-np",
                "4",
                "--hostfile",
                "hf",
                "-ppn",
                "2",
                "./a",
                "-n",
                "9"
            ]),
            [
                "-n",
                "4",
                "--hostfile",
                "hf",
                "--ppn",
                "2",
                "--",
                "./a",
                "-n",
                "9"
            ]
        );
        assert_eq!(
            run_args(&[
                "--map-by",
                "ppr:2:node",
                "--bind-to",
                "core:overload-allowed",
                "a"
            ]),
            ["--map-by", "ppr:2:node", "--bind-to", "core", "--", "a"]
        );
        assert_eq!(
            run_args(&[
                "-genv",
                "A",
                "1 2",
                "-x",
                "B=3",
                "-genvlist",
                "C,HOME",
                "-genvall",
                "a"
            ]),
            ["-x", "A=1 2", "-x", "B=3", "-x", "HOME", "-x", "HOME", "--", "a"]
        );
        assert_eq!(
            run_args(&["--output-filename", "out", "-l", "--report-bindings", "a"]),
            [
                "--output-dir",
                "out/1",
                "--tag-output",
                "--report-bindings",
                "--",
                "a"
            ]
        );
        assert_eq!(
            run_args(&["--output-filename=o:nocopy,nojobid", "a"]),
            ["--output-dir", "o", "--output-nocopy", "--", "a"]
        );
        assert_eq!(
            run_args(&[
                "-launcher",
                "ssh",
                "-launcher-exec",
                "/x/myssh",
                "--host",
                "a,b",
                "p"
            ]),
            ["--hosts", "a,b", "--launcher", "/x/myssh {host}", "--", "p"]
        );
        assert_eq!(
            run_args(&["--mca", "plm_rsh_agent", "rsh", "-H", "a", "p"]),
            ["--hosts", "a", "--launcher", "rsh {host}", "--", "p"]
        );
        assert_eq!(
            run_args(&[
                "-launcher",
                "fork",
                "--allow-run-as-root",
                "--oversubscribe",
                "p"
            ]),
            ["--launcher", "fork", "--", "p"]
        );
        assert_eq!(
            run_args(&["--stdin", "all", "--", "-weird"]),
            ["--stdin", "all", "--", "-weird"]
        );
        match translate(&os(&["--mca", "btl", "self,vader", "p"]), &[]).unwrap() {
            Plan::Run { warnings, .. } => {
                assert!(
                    warnings[0].contains("--mca btl self,vader has no meaning"),
                    "{warnings:?}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(translate(&os(&["--help"]), &[]).unwrap(), Plan::Help);
        assert_eq!(translate(&os(&["-V", "p"]), &[]).unwrap(), Plan::Version);
    }

    #[test]
    fn what_weft_cannot_do_is_refused_with_what_to_use() {
        for (args, want) in [
            (vec!["-foo", "p"], "unknown option -foo"),
            (
                vec!["--bind-to", "socket", "p"],
                "use --bind-to core or --bind-to none",
            ),
            (
                vec!["--map-by", "core", "p"],
                "by slot, by node or ppr:N:node",
            ),
            (
                vec!["--map-by", "torus:2x2", "p"],
                "use weft run --map torus:XxYxZ",
            ),
            (vec!["-launcher", "slurm", "p"], "srun"),
            (vec!["-launcher", "pbsdsh", "p"], "ssh, rsh"),
            (vec!["-wdir", "/x", "p"], "cd to the folder"),
            (vec!["-outfile-pattern", "x", "p"], "--output-filename"),
            (vec!["-n", "2", "a", ":", "-n", "1", "b"], "MPMD"),
            (vec!["-n"], "-n needs a value"),
            (vec!["-genv", "A"], "needs a name and a value"),
            (vec!["-n", "2"], "no program given"),
            (
                vec!["--output-filename", "d:copy", "p"],
                "neither nocopy nor nojobid",
            ),
        ] {
            let e = error(&args);
            assert!(e.contains(want), "{args:?}: {e}");
        }
    }
}
