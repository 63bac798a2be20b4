//! weft programs started by the launchers clusters use: Slurm's `srun --mpi=pmix` and
//! `--mpi=pmi2`, an `sbatch` script, `weft run` inside an allocation, MPICH's Hydra
//! (`mpiexec.hydra`) and Open MPI's `mpirun`, with the bundled `ring` example and the MPI C
//! programs of `itest/c/` at 1, 2, 4 and 7 ranks; a rank that ends early under each of them
//! (the job ends, naming it, with its exit code where the launcher lets it through); bad
//! launcher setups as one-line errors; and no `/dev/shm` segment left behind.
//!
//! They need a running Slurm cluster (`SLURM_CONF`), MPICH's and Open MPI's launchers, so
//! they are ignored by default; CI runs them after `scripts/ci-launchers.sh` started
//! everything: `cargo test -p weft-mpi --test launchers -- --include-ignored`. Without what
//! they need they fail, saying so; they never skip. Every command runs under `timeout`.

#![allow(
    clippy::disallowed_methods,
    reason = "tests hand variables to the jobs they start and read the suite's markers"
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    /// The tag that names this job's segments (WEFT_JOB_ID).
    tag: String,
}

impl Run {
    fn ok(&self, what: &str) -> &Self {
        assert_eq!(
            self.code, 0,
            "{what}: exit {}\nstdout:\n{}\nstderr:\n{}",
            self.code, self.stdout, self.stderr
        );
        self
    }
}

/// Runs `cmd` (at most `limit` seconds, under coreutils' timeout) with a fresh
/// `WEFT_JOB_ID` tag and `env`; checks no segment of the tag is left in /dev/shm.
fn run(cmd: &[&str], env: &[(&str, &str)], limit: u64) -> Run {
    static N: AtomicU32 = AtomicU32::new(0);
    let tag = format!(
        "lt{}x{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    let out = Command::new("timeout")
        .args(["-k", "5", &limit.to_string()])
        .args(cmd)
        .env("WEFT_JOB_ID", &tag)
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let r = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        tag,
    };
    assert_ne!(r.code, 124, "{cmd:?} ran past {limit} s:\n{}", r.stderr);
    let left: Vec<String> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(&r.tag))
        .collect();
    assert!(left.is_empty(), "{cmd:?} left segments {left:?}");
    r
}

fn need(tool: &str) {
    let ok = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "{tool} is not installed: run scripts/ci-launchers.sh (as root)"
    );
}

fn need_slurm() {
    need("srun");
    assert!(
        std::env::var_os("SLURM_CONF").is_some() || Path::new("/etc/slurm/slurm.conf").exists(),
        "no Slurm cluster: run scripts/ci-launchers.sh and export the SLURM_CONF it prints"
    );
    let up = Command::new("timeout")
        .args(["10", "sinfo", "-h", "-o", "%t"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    assert!(
        up.lines()
            .any(|l| ["idle", "mix", "alloc"].contains(&l.trim())),
        "the Slurm node is not up (sinfo: {up:?}): run scripts/ci-launchers.sh"
    );
}

/// The ring example, built into this test's target directory.
fn ring() -> PathBuf {
    static RING: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    RING.get_or_init(|| {
        let profile = common::profile_dir();
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-q", "-p", "weft", "--example", "ring"]);
        if profile.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let st = cmd
            .env("CARGO_TARGET_DIR", profile.parent().unwrap())
            .current_dir(common::repo_root())
            .status()
            .unwrap();
        assert!(st.success(), "cargo build --example ring failed");
        profile.join("examples/ring")
    })
    .clone()
}

fn prefix() -> &'static Path {
    common::shared_prefix("launch-prefix")
}

/// A C program of itest/c (or bench/c) built with our mpicc.
/// A fresh, empty directory for launch_die's ready files (see itest/c/launch_die.c), under
/// the build's target directory: the checkout is visible on every node of the test
/// clusters, where each node has a /tmp of its own.
fn ready_dir() -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "launch-die-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn c_program(name: &str) -> PathBuf {
    common::build_c(prefix(), name)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The ring example's output says every rank got its block and the token went round.
fn ring_ok(r: &Run, n: usize, what: &str) {
    r.ok(what);
    assert_eq!(
        r.stdout.matches("data correct").count(),
        n,
        "{what}:\n{}\n{}",
        r.stdout,
        r.stderr
    );
    assert!(
        r.stdout
            .contains(&format!("token came back around {n} ranks")),
        "{what}:\n{}",
        r.stdout
    );
}

#[test]
#[ignore = "needs Slurm, mpiexec.hydra and mpirun.openmpi (scripts/ci-launchers.sh)"]
fn srun_starts_examples_and_mpi_programs_over_pmix_and_pmi2() {
    need_slurm();
    let ring = ring();
    let (p2p, coll) = (c_program("p2p"), c_program("coll"));
    for mpi in ["--mpi=pmix", "--mpi=pmi2"] {
        for n in [1, 2, 4, 7] {
            let np = n.to_string();
            let r = run(&["srun", mpi, "-O", "-n", &np, s(&ring)], &[], 120);
            ring_ok(&r, n, &format!("srun {mpi} -n {n} ring"));
        }
        for prog in [&p2p, &coll] {
            run(&["srun", mpi, "-O", "-n", "4", s(prog)], &[], 120)
                .ok(&format!("srun {mpi} -n 4 {}", prog.display()));
        }
    }
    // PMI-1 over Slurm's PMI-2 plugin, asked for by name.
    let r = run(
        &["srun", "--mpi=pmi2", "-O", "-n", "4", s(&ring)],
        &[("WEFT_BOOT", "pmi1")],
        120,
    );
    ring_ok(&r, 4, "srun --mpi=pmi2 -n 4 ring with WEFT_BOOT=pmi1");
}

#[test]
#[ignore = "needs Slurm, mpiexec.hydra and mpirun.openmpi (scripts/ci-launchers.sh)"]
fn an_sbatch_script_runs_steps_and_weft_run_uses_its_allocation() {
    need_slurm();
    let ring = ring();
    let p2p = c_program("p2p");
    let weft = prefix().join("bin/weft");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("sbatch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("job.sh");
    let out = dir.join("job.out");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nset -e\n\
             srun --mpi=pmix -n 4 {ring}\n\
             srun --mpi=pmi2 -n 4 {p2p} && echo p2p-pmi2-ok\n\
             {weft} run --tag-output sh -c 'echo rank=$WEFT_RANK step=$SLURM_STEP_ID'\n\
             {weft} run {ring}\n",
            ring = ring.display(),
            p2p = p2p.display(),
            weft = weft.display()
        ),
    )
    .unwrap();
    let r = run(
        &["sbatch", "-W", "-O", "-n", "4", "-o", s(&out), s(&script)],
        &[],
        240,
    );
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    assert_eq!(
        r.code, 0,
        "sbatch: {}\n{}\njob output:\n{text}",
        r.stdout, r.stderr
    );
    assert_eq!(text.matches("data correct").count(), 8, "{text}");
    assert!(text.contains("p2p-pmi2-ok"), "{text}");
    // weft run took the allocation's 4 tasks and started its agent as a job step.
    for rank in 0..4 {
        let line = text
            .lines()
            .find(|l| l.contains(&format!("rank={rank} ")))
            .unwrap_or_else(|| panic!("no line of rank {rank}:\n{text}"));
        assert!(
            !line.trim_end().ends_with("step="),
            "rank {rank} did not run in an srun step: {line}"
        );
    }
}

#[test]
#[ignore = "needs Slurm, mpiexec.hydra and mpirun.openmpi (scripts/ci-launchers.sh)"]
fn weft_run_inside_salloc_takes_the_allocation() {
    need_slurm();
    let ring = ring();
    let weft = prefix().join("bin/weft");
    let r = run(
        &[
            "salloc",
            "-n",
            "3",
            "-O",
            s(&weft),
            "run",
            "--tag-output",
            s(&ring),
        ],
        &[],
        120,
    );
    ring_ok(&r, 3, "salloc -n 3 weft run ring");
    assert!(r.stdout.contains("[2] "), "{}", r.stdout);
}

#[test]
#[ignore = "needs Slurm, mpiexec.hydra and mpirun.openmpi (scripts/ci-launchers.sh)"]
fn hydra_starts_mpi_programs_at_1_2_4_7() {
    need("mpiexec.hydra");
    hydra_runs_ring_p2p_and_coll("mpiexec.hydra");
}

/// MPICH 5's own Hydra (PyPI mpich, `MPICH_ABI_PREFIX` from scripts/ci-mpi-extras.sh's
/// env.sh): it speaks the same PMI-1 and PMI-2 but writes some values differently from
/// Debian's MPICH 4 Hydra (a one-rank job's PMI_process_mapping is `(vector,0)`).
#[test]
#[ignore = "needs PyPI mpich: MPICH_ABI_PREFIX from scripts/ci-mpi-extras.sh's env.sh"]
fn mpich5_hydra_starts_mpi_programs_at_1_2_4_7() {
    let prefix = std::env::var("MPICH_ABI_PREFIX")
        .expect("MPICH_ABI_PREFIX is not set: source the env.sh of scripts/ci-mpi-extras.sh");
    let hydra = Path::new(&prefix).join("bin/mpiexec.hydra");
    assert!(hydra.is_file(), "{} is missing", hydra.display());
    hydra_runs_ring_p2p_and_coll(s(&hydra));
}

/// `hydra -n N` starts the ring and the p2p and collective C programs at 1, 2, 4 and 7
/// ranks over PMI-1, then the ring at 4 over PMI-2 asked for by name.
fn hydra_runs_ring_p2p_and_coll(hydra: &str) {
    let ring = ring();
    let (p2p, coll) = (c_program("p2p"), c_program("coll"));
    for n in [1, 2, 4, 7] {
        let np = n.to_string();
        let r = run(&[hydra, "-n", &np, s(&ring)], &[], 120);
        ring_ok(&r, n, &format!("{hydra} -n {n} ring"));
        for prog in [&p2p, &coll] {
            run(&[hydra, "-n", &np, s(prog)], &[], 120)
                .ok(&format!("{hydra} -n {n} {}", prog.display()));
        }
    }
    let r = run(&[hydra, "-n", "4", s(&ring)], &[("WEFT_BOOT", "pmi2")], 120);
    ring_ok(&r, 4, &format!("{hydra} -n 4 ring with WEFT_BOOT=pmi2"));
}

fn mpirun(n: u32, prog: &Path, args: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "mpirun.openmpi",
        "--allow-run-as-root",
        "--oversubscribe",
        "-x",
        "WEFT_JOB_ID",
        "-x",
        "WEFT_BOOT",
        "-n",
    ]
    .iter()
    .map(|x| x.to_string())
    .collect();
    v.push(n.to_string());
    v.push(s(prog).to_owned());
    v.extend(args.iter().map(|a| a.to_string()));
    v
}

#[test]
#[ignore = "needs Slurm, mpiexec.hydra and mpirun.openmpi (scripts/ci-launchers.sh)"]
fn open_mpi_mpirun_starts_mpi_programs_at_1_2_4_7() {
    need("mpirun.openmpi");
    let ring = ring();
    let (p2p, coll) = (c_program("p2p"), c_program("coll"));
    for n in [1, 2, 4, 7] {
        let cmd = mpirun(n, &ring, &[]);
        let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
        ring_ok(
            &run(&cmd, &[("WEFT_BOOT", "auto")], 120),
            n as usize,
            &format!("mpirun -n {n} ring"),
        );
        for prog in [&p2p, &coll] {
            let cmd = mpirun(n, prog, &[]);
            let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
            run(&cmd, &[("WEFT_BOOT", "auto")], 120)
                .ok(&format!("mpirun -n {n} {}", prog.display()));
        }
    }
}

/// How a launcher reports a rank that ended early.
struct Expect {
    /// The job's exit code per mode (None: any failure code).
    exit: Option<i32>,
    kill: Option<i32>,
    abort: Option<i32>,
    /// The launcher does not end the job itself: weft's line must name the rank.
    weft_names_it: bool,
}

#[test]
#[ignore = "needs Slurm, mpiexec.hydra and mpirun.openmpi (scripts/ci-launchers.sh)"]
fn a_rank_ending_early_ends_the_job_under_every_launcher() {
    need_slurm();
    need("mpiexec.hydra");
    need("mpirun.openmpi");
    let die = c_program("launch_die");
    let launchers: Vec<(&str, Vec<String>, Expect)> = vec![
        (
            "srun --mpi=pmix",
            ["srun", "--mpi=pmix", "-O", "-n", "4"]
                .map(String::from)
                .to_vec(),
            // PMIx carries the code of the rank's exit or abort to srun.
            Expect {
                exit: Some(3),
                kill: None,
                abort: Some(7),
                weft_names_it: true,
            },
        ),
        (
            "srun --mpi=pmi2",
            ["srun", "--mpi=pmi2", "-O", "-n", "4"]
                .map(String::from)
                .to_vec(),
            // Slurm's PMI-2 abort kills the step with SIGKILL: srun says 137.
            Expect {
                exit: None,
                kill: None,
                abort: None,
                weft_names_it: true,
            },
        ),
        (
            "mpiexec.hydra",
            ["mpiexec.hydra", "-n", "4"].map(String::from).to_vec(),
            // Hydra ends the job itself and ORs the ranks' wait statuses (3 or 9).
            Expect {
                exit: None,
                kill: None,
                abort: Some(7),
                weft_names_it: false,
            },
        ),
        (
            "mpirun",
            mpirun(4, Path::new("."), &[])[..8].to_vec(),
            Expect {
                exit: Some(3),
                kill: Some(137),
                abort: Some(7),
                weft_names_it: false,
            },
        ),
    ];
    for (name, words, expect) in &launchers {
        for (mode, code) in [
            ("exit", expect.exit),
            ("kill", expect.kill),
            ("abort", expect.abort),
        ] {
            let mut cmd: Vec<&str> = words.iter().map(String::as_str).collect();
            let n4;
            if *name == "mpirun" {
                n4 = "4".to_string();
                cmd.push(&n4);
            }
            cmd.push(s(&die));
            cmd.push(mode);
            let ready = ready_dir();
            cmd.push(s(&ready));
            let r = run(&cmd, &[("WEFT_BOOT", "auto")], 90);
            let _ = std::fs::remove_dir_all(&ready);
            let what = format!(
                "{name} launch_die {mode}: exit {}\n{}\n{}",
                r.code, r.stdout, r.stderr
            );
            // Ended by the runtime or the launcher: the survivors sleep for 20 minutes, so
            // a job nobody ended runs into run()'s limit and fails there (exit 124).
            assert!(r.code != 0 && r.code != 99, "{what}");
            if let Some(c) = code {
                assert_eq!(r.code, c, "{what}");
            }
            if expect.weft_names_it && mode != "abort" {
                assert!(
                    r.stderr.contains("weft: rank 3 (pid ")
                        && r.stderr.contains("before finalize; ending the job"),
                    "{what}"
                );
            }
            if mode == "abort" {
                assert!(r.stderr.contains("rank 3 aborting with code 7"), "{what}");
            }
        }
    }
    // A job that finalizes properly is not ended by anybody.
    for (name, words, _) in &launchers {
        let mut cmd: Vec<&str> = words.iter().map(String::as_str).collect();
        let n4 = "4".to_string();
        if *name == "mpirun" {
            cmd.push(&n4);
        }
        cmd.push(s(&die));
        cmd.push("ok");
        run(&cmd, &[("WEFT_BOOT", "auto")], 90).ok(&format!("{name} launch_die ok"));
    }
}

#[test]
#[ignore = "needs Slurm, mpiexec.hydra and mpirun.openmpi (scripts/ci-launchers.sh)"]
fn bad_launcher_setups_are_one_line_errors() {
    need_slurm();
    let ring = ring();
    // srun without a PMI: every rank says so instead of running as a job of one.
    let r = run(&["srun", "--mpi=none", "-O", "-n", "2", s(&ring)], &[], 60);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("SLURM_STEP_NUM_TASKS=2 but no PMI")
            && r.stderr.contains("srun --mpi=pmix or --mpi=pmi2"),
        "{}",
        r.stderr
    );
    // A PMIx launcher without the library.
    let r = run(
        &["srun", "--mpi=pmix", "-O", "-n", "2", s(&ring)],
        &[("WEFT_PMIX_LIBRARY", "/nonexistent/libpmix.so.2")],
        60,
    );
    assert_ne!(r.code, 0);
    assert!(
        r.stderr
            .contains("/nonexistent/libpmix.so.2 cannot be loaded")
            && r.stderr.contains("PMIX_NAMESPACE=slurm.pmix."),
        "{}",
        r.stderr
    );
    // PMI-2 asked for under Hydra... works; PMIx asked for where there is none.
    let r = run(
        &["srun", "--mpi=pmi2", "-O", "-n", "2", s(&ring)],
        &[("WEFT_BOOT", "pmix")],
        60,
    );
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("WEFT_BOOT=pmix"), "{}", r.stderr);
}

/// The two-node cluster of `scripts/ci-slurm.sh start2`: slurmds `wsn1` and `wsn2`, each in
/// its own network and UTS namespace, so a job spanning them talks TCP between its nodes.
fn slurm2() -> String {
    let conf = std::env::var("WEFT_TEST_SLURM2_CONF").unwrap_or_default();
    assert!(
        !conf.is_empty() && Path::new(&conf).exists(),
        "no two-node cluster: run scripts/ci-launchers.sh and export the WEFT_TEST_SLURM2_CONF it prints"
    );
    conf
}

#[test]
#[ignore = "needs Slurm, mpiexec.hydra and mpirun.openmpi (scripts/ci-launchers.sh)"]
fn srun_spans_two_namespace_nodes_and_weft_talks_tcp_between_them() {
    let conf = slurm2();
    let env = [("SLURM_CONF", conf.as_str())];
    let ring = ring();
    let p2p = c_program("p2p");
    for mpi in ["--mpi=pmix", "--mpi=pmi2"] {
        let r = run(
            &["srun", mpi, "-N", "2", "-n", "4", "-O", s(&ring)],
            &env,
            120,
        );
        let what = format!("srun {mpi} -N 2 -n 4 ring");
        ring_ok(&r, 4, &what);
        // Block placement: ranks 0-1 on wsn1, 2-3 on wsn2; rank 2 receives from rank 1 over
        // TCP, the only way between the namespaces.
        for (rank, node, local) in [
            (0, "wsn1", 0),
            (1, "wsn1", 1),
            (2, "wsn2", 0),
            (3, "wsn2", 1),
        ] {
            assert!(
                r.stdout
                    .contains(&format!("rank {rank} of 4 on {node} (local {local} of 2)")),
                "{what}:\n{}",
                r.stdout
            );
        }
        run(
            &["srun", mpi, "-N", "2", "-n", "4", "-O", s(&p2p)],
            &env,
            120,
        )
        .ok(&format!("srun {mpi} -N 2 -n 4 p2p"));
    }
    // weft run inside a two-node allocation: an agent per node, started with srun.
    let weft = prefix().join("bin/weft");
    let r = run(
        &[
            "salloc",
            "-N",
            "2",
            "-n",
            "4",
            "-O",
            s(&weft),
            "run",
            s(&ring),
        ],
        &env,
        120,
    );
    ring_ok(&r, 4, "salloc -N 2 weft run ring");
    assert!(
        r.stdout.contains(" on wsn1 ") && r.stdout.contains(" on wsn2 "),
        "{}",
        r.stdout
    );
    // A rank ending early on the second node ends the whole job with its code.
    let die = c_program("launch_die");
    let ready = ready_dir();
    let r = run(
        &[
            "srun",
            "--mpi=pmix",
            "-N",
            "2",
            "-n",
            "4",
            "-O",
            s(&die),
            "exit",
            s(&ready),
        ],
        &env,
        90,
    );
    let _ = std::fs::remove_dir_all(&ready);
    assert_eq!(r.code, 3, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("weft: rank 3 (pid ") && r.stderr.contains("on wsn2) exited with code 3"),
        "{}",
        r.stderr
    );
}
