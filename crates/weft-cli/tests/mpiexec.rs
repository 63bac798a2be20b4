//! `mpiexec` (the wrapper script of crates/weft-mpi/bin, running `weft mpiexec`) end to end
//! with the options job scripts pass: host files in both formats, ranks per node, mapping,
//! environment to every host, stdin, output files, local hosts started without ssh,
//! launchers, and refusals. Other hosts are faked with a stand-in for ssh (`fakessh HOST
//! COMMAND...`, a script that runs COMMAND here with an empty environment, as after an ssh
//! login) or `-launcher fork`; no root needed. The ranks are `/bin/sh` scripts printing what
//! they saw (MPI programs under mpiexec are the newcomer script's, scripts/newcomer.sh).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

fn mpiexec_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../weft-mpi/bin/mpiexec")
}

/// A folder of this test's own, removed first.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("weft-mpiexec-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The ssh stand-in: `fakessh HOST COMMAND...` runs COMMAND here with only PATH set, and
/// records the host it was asked for in `DIR/hosts`.
fn fakessh(dir: &Path) -> PathBuf {
    let p = dir.join("fakessh");
    std::fs::write(
        &p,
        format!(
            "#!/bin/sh\necho \"$1\" >> {}/hosts\nshift\nexec env -i PATH=\"$PATH\" \"$@\"\n",
            dir.display()
        ),
    )
    .unwrap();
    let mut perm = std::fs::metadata(&p).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&p, perm).unwrap();
    p
}

/// Runs `mpiexec ARGS` with `input` on its stdin.
fn mpiexec_with(args: &[&str], input: &[u8]) -> Output {
    let mut c = Command::new(mpiexec_script())
        .args(args)
        .env("WEFT_BIN", WEFT)
        .env("MPIEXEC_TEST_VAR", "from_launcher")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mpiexec");
    let mut stdin = c.stdin.take().unwrap();
    let data = input.to_vec();
    // A writer thread: a job that reads nothing must not block the test on a full pipe.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let out = c.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

fn mpiexec(args: &[&str]) -> Output {
    mpiexec_with(args, b"")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// stdout's lines, sorted (ranks print in any order), after checking the exit code is 0.
fn lines(out: &Output) -> Vec<String> {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let mut l: Vec<String> = text(&out.stdout).lines().map(str::to_owned).collect();
    l.sort();
    l
}

/// Each rank prints `rank node local_rank/local_size`.
const WHERE: &str = "echo $WEFT_RANK ${WEFT_NODE_ID:-here} $WEFT_LOCAL_RANK/$WEFT_LOCAL_SIZE";

#[test]
fn hostfiles_ranks_per_node_and_mapping_place_ranks() {
    let d = scratch("place");
    let ssh = fakessh(&d);
    let ssh = ssh.to_str().unwrap();
    // Open MPI's format, MPICH's format, and a node file listing a host once per slot.
    let files = [
        ("ompi", "# two nodes\nna slots=2\nnb slots=2 max_slots=4\n"),
        ("mpich", "na:2\nnb:2\n"),
        ("nodefile", "na\nna\nnb\nnb\n"),
    ];
    for (name, content) in files {
        let f = d.join(name);
        std::fs::write(&f, content).unwrap();
        let f = f.to_str().unwrap();
        let slot = lines(&mpiexec(&[
            "--hostfile",
            f,
            "-launcher-exec",
            ssh,
            "sh",
            "-c",
            WHERE,
        ]));
        assert_eq!(
            slot,
            ["0 na 0/2", "1 na 1/2", "2 nb 0/2", "3 nb 1/2"],
            "{name}: four ranks, one per slot, filled host by host"
        );
        let node = lines(&mpiexec(&[
            "-machinefile",
            f,
            "--map-by",
            "node",
            "-launcher-exec",
            ssh,
            "sh",
            "-c",
            WHERE,
        ]));
        assert_eq!(
            node,
            ["0 na 0/2", "1 nb 0/2", "2 na 1/2", "3 nb 1/2"],
            "{name}"
        );
    }
    let f = d.join("ompi");
    let f = f.to_str().unwrap();
    for per_node in [
        vec!["-ppn", "1"],
        vec!["--npernode", "1"],
        vec!["--map-by", "ppr:1:node"],
    ] {
        let mut args = vec!["-f", f];
        args.extend(&per_node);
        args.extend(["-launcher-exec", ssh, "sh", "-c", WHERE]);
        assert_eq!(
            lines(&mpiexec(&args)),
            ["0 na 0/1", "1 nb 0/1"],
            "{per_node:?}"
        );
    }
    let hosts = std::fs::read_to_string(d.join("hosts")).unwrap();
    assert!(hosts.lines().all(|h| h == "na" || h == "nb"), "{hosts}");
    // More ranks than slots: a usage error before anything starts.
    let out = mpiexec(&["-n", "5", "-f", f, "-launcher-exec", ssh, "true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("do not fit the 4 slots"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn this_machine_starts_without_ssh() {
    let d = scratch("local");
    let ssh = fakessh(&d);
    let ssh = ssh.to_str().unwrap();
    let mut hostname = [0u8; 256];
    // SAFETY: gethostname writes into our buffer.
    assert_eq!(unsafe { libc_gethostname(hostname.as_mut_ptr(), 256) }, 0);
    let end = hostname.iter().position(|&b| b == 0).unwrap();
    let me = std::str::from_utf8(&hostname[..end]).unwrap().to_owned();
    for hosts in [
        "localhost:3".to_owned(),
        format!("{me}:2,localhost"),
        "127.0.0.1:3".to_owned(),
    ] {
        let out = mpiexec(&["--host", &hosts, "-launcher-exec", ssh, "sh", "-c", WHERE]);
        assert_eq!(
            lines(&out),
            ["0 here 0/3", "1 here 1/3", "2 here 2/3"],
            "{hosts}: one node, started here"
        );
    }
    assert!(
        !d.join("hosts").exists(),
        "the launcher was used for this machine"
    );
    // This machine and another host: only the other goes through the launcher.
    let out = mpiexec(&[
        "--host",
        "localhost,nx",
        "-launcher-exec",
        ssh,
        "sh",
        "-c",
        WHERE,
    ]);
    assert_eq!(lines(&out), ["0 localhost 0/1", "1 nx 0/1"]);
    assert_eq!(std::fs::read_to_string(d.join("hosts")).unwrap(), "nx\n");
    std::fs::remove_dir_all(&d).unwrap();
}

extern "C" {
    #[link_name = "gethostname"]
    fn libc_gethostname(name: *mut u8, len: usize) -> i32;
}

#[test]
fn environment_reaches_every_host() {
    let d = scratch("env");
    let ssh = fakessh(&d);
    let script =
        "echo $WEFT_RANK ${A-unset} ${B-unset} ${MPIEXEC_TEST_VAR-unset} ${WEFT_BIND-unset}";
    for local in [true, false] {
        let mut args = vec![
            "-genv",
            "A",
            "one two",
            "-env",
            "B",
            "2",
            "--bind-to",
            "none",
        ];
        if local {
            args.extend(["-n", "2"]);
        } else {
            args.extend(["--host", "ea,eb", "-launcher-exec", ssh.to_str().unwrap()]);
        }
        args.extend(["sh", "-c", script]);
        let got = lines(&mpiexec(&args));
        // Remote ranks get what was named, not the launcher's other variables.
        let launcher_var = if local { "from_launcher" } else { "unset" };
        assert_eq!(
            got,
            (0..2)
                .map(|r| format!("{r} one two 2 {launcher_var} none"))
                .collect::<Vec<_>>(),
            "local {local}"
        );
        for pass in [
            &["-x", "MPIEXEC_TEST_VAR"][..],
            &["-genvlist", "MPIEXEC_TEST_VAR,A"],
            &["-genvall"],
        ] {
            let mut args: Vec<&str> = pass.to_vec();
            if !local {
                args.extend(["--host", "ea,eb", "-launcher-exec", ssh.to_str().unwrap()]);
            } else {
                args.extend(["-n", "2"]);
            }
            args.extend(["sh", "-c", "echo $WEFT_RANK ${MPIEXEC_TEST_VAR-unset}"]);
            assert_eq!(
                lines(&mpiexec(&args)),
                ["0 from_launcher", "1 from_launcher"],
                "{pass:?} local {local}"
            );
        }
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn stdin_goes_to_rank_0_all_or_one() {
    let d = scratch("stdin");
    let ssh = fakessh(&d);
    let ssh = ssh.to_str().unwrap();
    // Each rank counts the lines it read (a rank without input reads /dev/null: 0).
    let count = "echo $WEFT_RANK $(wc -l)";
    let input = b"a\nb\nc\n";
    for remote in [false, true] {
        let on: Vec<&str> = if remote {
            vec!["--host", "sa,sb:2", "-launcher-exec", ssh]
        } else {
            vec!["-n", "3"]
        };
        let run = |extra: &[&str]| {
            let mut a = on.clone();
            a.extend(extra);
            a.extend(["sh", "-c", count]);
            lines(&mpiexec_with(&a, input))
        };
        assert_eq!(
            run(&[]),
            ["0 3", "1 0", "2 0"],
            "default rank 0, remote {remote}"
        );
        assert_eq!(
            run(&["--stdin", "all"]),
            ["0 3", "1 3", "2 3"],
            "remote {remote}"
        );
        assert_eq!(
            run(&["--stdin", "2"]),
            ["0 0", "1 0", "2 3"],
            "remote {remote}"
        );
        assert_eq!(
            run(&["--stdin", "none"]),
            ["0 0", "1 0", "2 0"],
            "remote {remote}"
        );
    }
    // Large input reaches a remote rank whole, in order.
    let big: Vec<u8> = (0..200_000u32)
        .flat_map(|i| format!("{i}\n").into_bytes())
        .collect();
    let out = mpiexec_with(
        &["--host", "sa", "-launcher-exec", ssh, "sh", "-c", "cksum"],
        &big,
    );
    let want = Command::new("cksum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(&big)?;
            c.wait_with_output()
        })
        .unwrap();
    assert_eq!(lines(&out), [text(&want.stdout).trim().to_owned()]);
    let out = mpiexec(&["-n", "2", "--stdin", "2", "true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("rank 2 is not in a job of 2"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn output_files_and_tagged_lines() {
    let d = scratch("out");
    let dir = d.join("o");
    let dir_s = dir.to_str().unwrap();
    let script = "echo out$WEFT_RANK; echo err$WEFT_RANK >&2";
    let out = mpiexec(&[
        "-n",
        "3",
        "--output-filename",
        dir_s,
        "-l",
        "sh",
        "-c",
        script,
    ]);
    assert_eq!(
        lines(&out),
        ["[0] out0", "[1] out1", "[2] out2"],
        "copied, tagged"
    );
    for r in 0..3 {
        let rd = dir.join("1").join(format!("rank.{r}"));
        assert_eq!(
            std::fs::read_to_string(rd.join("stdout")).unwrap(),
            format!("out{r}\n")
        );
        assert_eq!(
            std::fs::read_to_string(rd.join("stderr")).unwrap(),
            format!("err{r}\n")
        );
    }
    let out = mpiexec(&[
        "-n",
        "2",
        "--output-filename",
        &format!("{dir_s}:nocopy,nojobid"),
        "sh",
        "-c",
        script,
    ]);
    assert_eq!(lines(&out), Vec::<String>::new(), "nocopy");
    assert!(!text(&out.stderr).contains("err"), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(dir.join("rank.1/stdout")).unwrap(),
        "out1\n"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn launchers_mca_help_version_and_refusals() {
    // fork: every host's agent on this machine, each a node of its own.
    let out = mpiexec(&["--host", "fa,fb", "-launcher", "fork", "sh", "-c", WHERE]);
    assert_eq!(lines(&out), ["0 fa 0/1", "1 fb 0/1"]);
    let out = mpiexec(&[
        "--mca",
        "btl",
        "self,vader",
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        "2",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(
        err.contains("--mca btl self,vader has no meaning for weft"),
        "{err}"
    );
    let help = mpiexec(&["--help"]);
    assert_eq!(help.status.code(), Some(0));
    for opt in [
        "--hostfile",
        "-ppn",
        "--map-by",
        "-genv",
        "--stdin",
        "--output-filename",
        "-launcher",
    ] {
        assert!(text(&help.stdout).contains(opt), "help lacks {opt}");
    }
    let v = mpiexec(&["--version"]);
    let v = text(&v.stdout);
    assert!(
        v.contains("mpiexec (weft)") && v.contains("commit") && v.contains("transports"),
        "{v}"
    );
    for (args, want) in [
        (vec!["-wdir", "/", "true"], "cd to the folder"),
        (vec!["--bind-to", "socket", "true"], "--bind-to core"),
        (vec!["-launcher", "slurm", "true"], "srun"),
        (vec!["-n", "1", "true", ":", "-n", "1", "true"], "MPMD"),
        (vec!["-frobnicate", "true"], "unknown option -frobnicate"),
    ] {
        let out = mpiexec(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let e = text(&out.stderr);
        assert!(
            e.starts_with("mpiexec: ") && e.contains(want),
            "{args:?}: {e}"
        );
        assert_eq!(e.lines().count(), 1, "one line: {e}");
    }
}

#[test]
fn weft_run_takes_np_and_names_unknown_options() {
    let out = Command::new(WEFT)
        .args(["run", "-np", "2", "sh", "-c", "echo $WEFT_SIZE"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(lines(&out), ["2", "2"]);
    let out = Command::new(WEFT)
        .args(["run", "-nq", "2", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = text(&out.stderr);
    assert!(e.contains("\"q\" is not a whole number"), "{e}");
    let out = Command::new(WEFT)
        .args(["run", "-np2x", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(WEFT)
        .args(["run", "-bogus", "true"])
        .output()
        .unwrap();
    assert!(
        text(&out.stderr).contains("unknown option -bogus"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn unknown_variables_are_warned_about_once_per_job() {
    let out = Command::new(WEFT)
        // The ranks are `weft info`, which reads the knobs as every rank does.
        .args([
            "run",
            "-n",
            "3",
            "-x",
            "WEFT_ALSO_NOT_A_KNOB=1",
            WEFT,
            "info",
        ])
        .env("WEFT_NOT_A_KNOB", "1")
        .env("WEFT_BIN", WEFT)
        .env("WEFT_MPICC_CC", "cc")
        .env("WEFT_SHMEM_LIB", "/x")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let e = text(&out.stderr);
    assert_eq!(
        e.matches("unknown variable WEFT_NOT_A_KNOB").count(),
        1,
        "{e}"
    );
    assert_eq!(
        e.matches("unknown variable WEFT_ALSO_NOT_A_KNOB").count(),
        1,
        "{e}"
    );
    assert_eq!(
        e.matches("warning").count(),
        2,
        "documented variables do not warn: {e}"
    );
}
