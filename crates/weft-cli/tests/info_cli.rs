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
    assert!(has(" no MPI_Win_create"), "{out}");
    let rows = out.lines().skip(1).count();
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
        assert!(text.contains("shm, tcp"), "{text}");
    }
}
