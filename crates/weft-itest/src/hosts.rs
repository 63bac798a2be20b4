//! Test hosts: network namespaces joined by veth pairs, made by `scripts/testhosts.sh`, so a
//! job's ranks on different hosts talk over real sockets between different network stacks
//! (`ip netns exec {host}` is the launcher template). Needs root and iproute2.

use std::path::PathBuf;
use std::process::Command;

/// The script that makes the hosts.
pub fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/testhosts.sh")
}

/// Namespace hosts for one test, removed (with their links) on drop.
pub struct Hosts {
    /// The hosts' names.
    pub names: Vec<String>,
    /// `A.B.C` of their subnet: the root namespace is `.1`, host i is `.(i + 2)`.
    pub net: String,
}

impl Hosts {
    /// `n` hosts with names unique to this process and `tag` (one letter) on subnet
    /// `net` (`A.B.C`). `Err` says why they could not be made (`skipped` when this machine
    /// cannot make namespaces: not root, or no iproute2).
    pub fn up(tag: char, n: usize, net: &str) -> Result<Hosts, String> {
        Hosts::up_with(tag, n, net, &[])
    }

    /// Like [`Hosts::up`] with more options for testhosts.sh (`--rails K`, `--shape ...`).
    pub fn up_with(tag: char, n: usize, net: &str, options: &[&str]) -> Result<Hosts, String> {
        let pid = std::process::id();
        let names: Vec<String> = (0..n)
            .map(|i| format!("wl{:05}{tag}{i}", pid % 100_000))
            .collect();
        let out = Command::new("bash")
            .arg(script())
            .args(["up", "--net", net])
            .args(options)
            .args(&names)
            .output()
            .map_err(|e| format!("running testhosts.sh: {e}"))?;
        if out.status.code() == Some(77) {
            return Err(format!(
                "skipped: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        if !out.status.success() {
            return Err(format!(
                "testhosts.sh up: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(Hosts {
            names,
            net: net.to_string(),
        })
    }

    /// The hosts with `slots` slots each, as `weft_launch` takes them.
    pub fn slots(&self, slots: u32) -> Vec<weft_launch::HostSlots> {
        self.names
            .iter()
            .map(|n| weft_launch::HostSlots {
                name: n.clone(),
                slots,
            })
            .collect()
    }

    /// The root namespace's address, which every host reaches.
    pub fn root_ip(&self) -> String {
        format!("{}.1", self.net)
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .args(["down", "--rails", "4"])
            .args(&self.names)
            .status();
    }
}
