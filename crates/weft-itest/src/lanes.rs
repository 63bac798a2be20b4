//! The lanes a multi-process test runs its jobs on, and the test-level override that forces
//! one on every job of a suite.
//!
//! `WEFT_TEST_LANES` names lanes (comma-separated): `shm+tcp` (shared memory inside a node,
//! weft's TCP between nodes: the default), `shm+ucx`, `tcp` (TCP between every pair, inside
//! a node too) and `ucx`. The lane matrix (`tests/lanes.rs`) runs each lane named. The suites
//! that start jobs of their own (this crate's `p2p`, weft-mpi's C programs, weft-shmem's) take
//! exactly one, [`forced`], and give every job its variables ([`with_forced_lane`]) ahead of
//! the test's own, so a test that chooses its transports itself keeps its choice. A UCX lane
//! runs over UCX's TCP transport (`UCX_TLS=tcp`), as between hosts without RDMA hardware,
//! and needs the suite built with its `ucx` feature.

/// The variable that names the lanes.
pub const VAR: &str = "WEFT_TEST_LANES";

/// One lane: its name, what a job's ranks are given, and the network transport every rank
/// then uses.
#[derive(Clone, Debug)]
pub struct Lane {
    pub name: &'static str,
    pub env: Vec<(String, String)>,
    pub network: &'static str,
}

/// The lane called `name`, or why there is none.
pub fn lane(name: &str) -> Result<Lane, String> {
    let (name, transports, network) = match name {
        "shm+tcp" => ("shm+tcp", "shm,tcp", "tcp"),
        "shm+ucx" => ("shm+ucx", "shm,ucx", "ucx"),
        "tcp" => ("tcp", "tcp", "tcp"),
        "ucx" => ("ucx", "ucx", "ucx"),
        other => {
            return Err(format!(
                "{VAR}: unknown lane {other:?} (shm+tcp, shm+ucx, tcp, ucx)"
            ))
        }
    };
    let mut env = vec![("WEFT_TRANSPORTS".to_string(), transports.to_string())];
    if network == "ucx" {
        env.push(("UCX_TLS".into(), "tcp".into()));
    }
    Ok(Lane { name, env, network })
}

/// The lanes `WEFT_TEST_LANES` names (empty when it is unset or blank).
#[allow(
    clippy::disallowed_methods,
    reason = "a marker of the test suite (WEFT_TEST_*), never a knob"
)]
pub fn named() -> Result<Vec<Lane>, String> {
    match std::env::var(VAR) {
        Ok(list) => list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(lane)
            .collect(),
        Err(_) => Ok(Vec::new()),
    }
}

/// The one lane `WEFT_TEST_LANES` forces on every job of a suite, None when it is unset.
/// Panics (failing the test, never skipping it) when it names an unknown lane, several
/// lanes, or a UCX lane in a suite built without its `ucx` feature (`ucx_built`).
pub fn forced(ucx_built: bool) -> Option<Lane> {
    let mut lanes = named().unwrap_or_else(|e| panic!("{e}"));
    assert!(
        lanes.len() <= 1,
        "{VAR} names {} lanes; a suite runs with one at a time",
        lanes.len()
    );
    let lane = lanes.pop()?;
    assert!(
        ucx_built || lane.network != "ucx",
        "{VAR}={} needs the suite built with its ucx feature (cargo test --features ucx)",
        lane.name
    );
    Some(lane)
}

/// A job's environment: the forced lane's variables (if any), then `env` (later entries
/// win, so a test's own choice of transports stays).
pub fn with_forced_lane(ucx_built: bool, env: Vec<(String, String)>) -> Vec<(String, String)> {
    match forced(ucx_built) {
        Some(lane) => lane.env.into_iter().chain(env).collect(),
        None => env,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_give_their_transports_and_unknown_ones_are_refused() {
        assert_eq!(lane("tcp").unwrap().env[0].1, "tcp");
        let ucx = lane("shm+ucx").unwrap();
        assert_eq!(ucx.network, "ucx");
        assert!(ucx.env.contains(&("UCX_TLS".into(), "tcp".into())));
        assert!(lane("verbs").unwrap_err().contains("unknown lane"));
    }
}
