//! `weft info --mpi` and `weft info --transports` through the real binary.

use std::process::Command;

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

fn info(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let out = Command::new(WEFT)
        .arg("info")
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn mpi_lists_every_abi_function_with_its_status() {
    let (ok, out, err) = info(&["--mpi"], &[]);
    assert!(ok, "{err}");
    let has = |line: &str| out.lines().any(|l| l == line);
    assert!(has("yes MPI_Send"), "{out}");
    assert!(has("yes MPI_Ssend"), "{out}");
    assert!(has("yes MPI_Iallreduce"), "{out}");
    assert!(has("yes MPI_Win_create"), "{out}");
    assert!(has("yes MPI_Comm_spawn"), "{out}");
    assert!(has("yes MPI_Comm_spawn_multiple"), "{out}");
    assert!(has("yes MPI_File_open"), "{out}");
    assert!(has("yes MPI_File_iread_at_all_c"), "{out}");
    let io = out.lines().filter(|l| {
        (l.starts_with("yes ") || l.starts_with(" no "))
            && (l[4..].starts_with("MPI_File_") || l[4..].starts_with("MPI_Register_datarep"))
    });
    let (io_rows, io_yes) = io.fold((0, 0), |(n, y), l| (n + 1, y + l.starts_with("yes") as u32));
    let io_line = format!(
        "  chapter 14, I/O (MPI_File_*, MPI_Register_datarep*): {io_yes} of {io_rows} implemented"
    );
    assert!(has(&io_line), "{io_line}\n{out}");
    assert_eq!(
        io_yes, io_rows,
        "a chapter-14 function is not implemented:\n{out}"
    );
    let rows = out
        .lines()
        .filter(|l| l.starts_with("yes ") || l.starts_with(" no "))
        .count();
    let header = out.lines().next().unwrap();
    assert!(header.contains(&format!("of {rows} functions")), "{header}");
}

#[test]
fn transports_scores_lanes_and_honours_forcing() {
    let (ok, out, err) = info(&["--transports"], &[]);
    assert!(ok, "{err}");
    let same = out.split("peer on another node").next().unwrap();
    assert!(
        same.lines()
            .any(|l| l.trim_start().starts_with("shm") && l.contains("CHOSEN")),
        "{out}"
    );
    let (ok, out, err) = info(&["--transports"], &[("WEFT_TRANSPORTS", "tcp")]);
    assert!(ok, "{err}");
    let same = out.split("peer on another node").next().unwrap();
    assert!(
        !same
            .lines()
            .any(|l| l.trim_start().starts_with("shm") && l.contains("CHOSEN")),
        "{out}"
    );
    assert!(
        same.lines()
            .any(|l| l.trim_start().starts_with("tcp") && l.contains("CHOSEN")),
        "{out}"
    );
}

#[test]
fn knobs_never_print_the_job_secret() {
    let secret = "5eb7c0ffee5eb7c0ffee5eb7c0ffee5e";
    let (ok, out, err) = info(&["--knobs"], &[("WEFT_JOB_SECRET", secret)]);
    assert!(ok, "{err}");
    assert!(!out.contains(secret) && !err.contains(secret), "{out}{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("WEFT_JOB_SECRET") && l.contains("(hidden)")),
        "{out}"
    );
}

#[test]
fn info_says_which_bootstrap_a_rank_would_use_and_why() {
    let boot = |env: &[(&str, &str)]| {
        let (ok, out, err) = info(&[], env);
        assert!(ok, "{err}");
        out.lines()
            .skip_while(|l| !l.starts_with("bootstrap:"))
            .take(2)
            .collect::<Vec<_>>()
            .join("\n")
    };
    // The test itself may run under a launcher: clear what would decide.
    let clear = [
        ("WEFT_BOOT_ADDR", ""),
        ("PMIX_NAMESPACE", ""),
        ("PMI_FD", ""),
        ("PMI_PORT", ""),
        ("PMI_JOBID", ""),
        ("SLURM_STEP_NUM_TASKS", ""),
    ];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut v: Vec<(&str, &str)> = clear.to_vec();
        v.extend_from_slice(extra);
        boot(&v)
    };
    let b = with(&[]);
    assert!(
        b.starts_with("bootstrap:   single (no launcher variables"),
        "{b}"
    );
    let b = with(&[
        ("PMIX_NAMESPACE", "slurm.pmix.9.0"),
        ("WEFT_PMIX_LIBRARY", "/nonexistent/libpmix.so.2"),
    ]);
    assert!(
        b.contains("bootstrap:   pmix (PMIX_NAMESPACE=slurm.pmix.9.0 is set"),
        "{b}"
    );
    assert!(
        b.contains("/nonexistent/libpmix.so.2 cannot be loaded"),
        "{b}"
    );
    let b = with(&[("PMI_FD", "5"), ("PMI_JOBID", "4.0")]);
    assert!(
        b.starts_with("bootstrap:   pmi2 (PMI_FD=5 and PMI_JOBID=4.0"),
        "{b}"
    );
    let b = with(&[("PMI_FD", "5")]);
    assert!(
        b.starts_with("bootstrap:   pmi1 (PMI_FD=5 is set without PMI_JOBID"),
        "{b}"
    );
    let b = with(&[("PMI_FD", "5"), ("PMI_JOBID", "4.0"), ("WEFT_BOOT", "pmi1")]);
    assert!(
        b.starts_with("bootstrap:   pmi1 (WEFT_BOOT=pmi1 names it)"),
        "{b}"
    );
    let b = with(&[("SLURM_STEP_NUM_TASKS", "4")]);
    assert!(b.contains("srun --mpi=pmix or --mpi=pmi2"), "{b}");
}

/// `weft info` and `weft --version` print the build: version, commit, compiler, profile,
/// target, features and transports, like ompi_info's header.
#[test]
fn info_and_version_print_the_build() {
    let (ok, out, err) = info(&[], &[]);
    assert!(ok, "{err}");
    let (ok2, version, _) = {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_weft"))
            .arg("--version")
            .output()
            .unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            (),
        )
    };
    assert!(ok2);
    assert!(
        version.starts_with(&format!("weft {}", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
    for text in [&out, &version] {
        for field in [
            "commit",
            "compiler",
            "profile",
            "target",
            "features",
            "transports",
        ] {
            let line = text
                .lines()
                .find(|l| l.starts_with(field))
                .unwrap_or_else(|| panic!("no {field} line in:\n{text}"));
            assert!(line.len() > field.len() + 2, "{line}");
        }
        assert!(text.contains("rustc "), "{text}");
        let transports = text
            .lines()
            .find(|l| l.starts_with("transports"))
            .expect("transports line");
        assert!(
            transports.contains("shm") && transports.contains("tcp"),
            "{transports}"
        );
    }
}
