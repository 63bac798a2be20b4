//! What this build of weft is: version, commit, compiler, profile, target, features and the
//! transports the runtime offers, for `weft --version`, `weft info` and `mpiexec --version`
//! (recorded by build.rs).

/// The lines describing the build, one `name: value` each.
pub(crate) fn lines() -> Vec<(&'static str, String)> {
    let transports: Vec<&str> = weft::Config::from_vars(&[])
        .map(|c| c.transports.iter().map(|t| t.name()).collect())
        .unwrap_or_default();
    vec![
        ("version", env!("CARGO_PKG_VERSION").to_owned()),
        ("commit", env!("BUILD_INFO_COMMIT").to_owned()),
        ("compiler", env!("BUILD_INFO_COMPILER").to_owned()),
        ("profile", env!("BUILD_INFO_PROFILE").to_owned()),
        ("target", env!("BUILD_INFO_TARGET").to_owned()),
        ("features", env!("BUILD_INFO_FEATURES").to_owned()),
        ("transports", transports.join(", ")),
        (
            "MPI",
            "MPI 5.0 standard ABI (libmpi_abi.so.1), OpenSHMEM 1.5 subset (libshmem.so)".to_owned(),
        ),
    ]
}

/// `weft --version`: the version, then the build's lines.
pub(crate) fn long_version() -> String {
    let mut s = String::from(env!("CARGO_PKG_VERSION"));
    for (name, value) in lines().into_iter().skip(1) {
        s.push_str(&format!("\n{name:<11} {value}"));
    }
    s
}
