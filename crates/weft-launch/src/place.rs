//! Rank placement: which host each rank runs on and its local rank there.
//!
//! Parses the `--hosts a:2,b:2` list and places ranks by node (round robin over the hosts)
//! or by slot (fill each host in turn). Kept apart from spawning so that how one rank is
//! started never depends on where the others go. Pure: no I/O.

use weft_core::{Error, ErrorKind, Result};

/// Where one rank runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankPlacement {
    /// Rank in the job, `0..size`.
    pub rank: u32,
    /// Rank among the job's ranks on the same host.
    pub local_rank: u32,
    /// Number of the job's ranks on that host.
    pub local_size: u32,
    /// The host, `None` for the launcher's own.
    pub host: Option<String>,
}

/// Places `nranks` ranks all on the launcher's host.
pub fn place_on_this_host(nranks: u32) -> Vec<RankPlacement> {
    (0..nranks)
        .map(|rank| RankPlacement {
            rank,
            local_rank: rank,
            local_size: nranks,
            host: None,
        })
        .collect()
}

/// One entry of a host list: a host name and how many ranks it may run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostSlots {
    /// The name handed to the launcher template (`{host}`) and given to its ranks as
    /// `WEFT_NODE_ID`.
    pub name: String,
    /// Ranks it may run, at least 1.
    pub slots: u32,
}

/// How ranks are spread over the hosts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MapBy {
    /// Round robin: rank 0 on the first host, rank 1 on the second, ... skipping full hosts.
    Node,
    /// Fill the first host's slots, then the second's, ...
    #[default]
    Slot,
}

impl MapBy {
    /// Parses `node` or `slot`.
    pub fn parse(text: &str) -> Result<MapBy> {
        match text.trim() {
            "node" => Ok(MapBy::Node),
            "slot" => Ok(MapBy::Slot),
            other => Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("map-by: {other:?} is neither \"node\" nor \"slot\""),
            )),
        }
    }
}

/// Parses `a:2,b:2,c` (a host without `:N` has one slot). Names must be non-empty, unique and
/// free of whitespace, quotes and shell metacharacters, since they are substituted into the
/// launcher template.
pub fn parse_hosts(text: &str) -> Result<Vec<HostSlots>> {
    let mut hosts: Vec<HostSlots> = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("hosts: empty entry in {text:?}"),
            ));
        }
        let (name, slots) = match item.rsplit_once(':') {
            Some((n, s)) => {
                let slots: u32 = s.trim().parse().map_err(|_| {
                    Error::new(
                        ErrorKind::InvalidArgument,
                        format!("hosts: {item:?}: {s:?} is not a whole number of slots"),
                    )
                })?;
                (n.trim(), slots)
            }
            None => (item, 1),
        };
        if slots == 0 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("hosts: {item:?}: a host needs at least 1 slot"),
            ));
        }
        let bad =
            |c: char| c.is_whitespace() || c.is_control() || "'\"`$;&|<>(){}\\*?!#~".contains(c);
        // A leading '-' would reach the launcher template (`ssh {host}`) as an option.
        if name.is_empty() || name.starts_with('-') || name.chars().any(bad) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("hosts: {name:?} is not a usable host name"),
            ));
        }
        if hosts.iter().any(|h| h.name == name) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("hosts: {name:?} is listed twice (give it more slots instead)"),
            ));
        }
        hosts.push(HostSlots {
            name: name.to_owned(),
            slots,
        });
    }
    Ok(hosts)
}

/// Parses a host file: one host per line as `NAME`, `NAME slots=N [max_slots=M]` (Open
/// MPI's format) or `NAME:N` (MPICH's); `#` starts a comment, blank lines are skipped. A host
/// without a count has one slot; a host listed again adds its slots, in the order hosts first
/// appear (a batch system's node file lists each host once per slot). Names are checked as in
/// [`parse_hosts`]; errors name the line.
pub fn parse_hostfile(text: &str) -> Result<Vec<HostSlots>> {
    let mut hosts: Vec<HostSlots> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let bad = |why: String| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("line {}: {line:?}: {why}", i + 1),
            )
        };
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or_default();
        let mut entry = first.to_owned();
        let mut max_slots = None;
        for w in words {
            let (key, value) = w
                .split_once('=')
                .ok_or_else(|| bad(format!("{w:?} is not KEY=VALUE")))?;
            let n: u32 = value
                .parse()
                .map_err(|_| bad(format!("{key}: {value:?} is not a whole number")))?;
            match key {
                "slots" if !first.contains(':') => entry = format!("{first}:{n}"),
                "slots" => return Err(bad("slots given twice".into())),
                "max_slots" | "max-slots" => max_slots = Some(n),
                other => {
                    return Err(bad(format!(
                        "{other:?} is not understood (slots=N and max_slots=N are)"
                    )))
                }
            }
        }
        let mut one = parse_hosts(&entry).map_err(|e| bad(e.message().to_owned()))?;
        let h = one.remove(0);
        if let Some(m) = max_slots {
            if h.slots > m {
                return Err(bad(format!("slots={} exceeds max_slots={m}", h.slots)));
            }
        }
        match hosts.iter_mut().find(|x| x.name == h.name) {
            Some(x) => x.slots = x.slots.saturating_add(h.slots),
            None => hosts.push(h),
        }
    }
    if hosts.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "no host in the file (only blank lines and comments)",
        ));
    }
    Ok(hosts)
}

/// Total slots of `hosts`, saturating.
pub fn total_slots(hosts: &[HostSlots]) -> u32 {
    hosts.iter().fold(0u32, |a, h| a.saturating_add(h.slots))
}

/// Places `nranks` ranks on `hosts` by `map_by`. Refuses more ranks than slots.
pub fn place_on_hosts(
    nranks: u32,
    hosts: &[HostSlots],
    map_by: MapBy,
) -> Result<Vec<RankPlacement>> {
    if hosts.is_empty() {
        return Err(Error::new(ErrorKind::InvalidArgument, "hosts: empty list"));
    }
    let slots = total_slots(hosts);
    if nranks > slots {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("nranks: {nranks} ranks do not fit the {slots} slots of the host list"),
        ));
    }
    let mut host_of: Vec<usize> = Vec::with_capacity(nranks as usize);
    let mut used = vec![0u32; hosts.len()];
    match map_by {
        MapBy::Slot => {
            for (i, h) in hosts.iter().enumerate() {
                while used[i] < h.slots && host_of.len() < nranks as usize {
                    used[i] += 1;
                    host_of.push(i);
                }
            }
        }
        MapBy::Node => {
            let mut i = 0;
            while host_of.len() < nranks as usize {
                if used[i] < hosts[i].slots {
                    used[i] += 1;
                    host_of.push(i);
                }
                i = (i + 1) % hosts.len();
            }
        }
    }
    let mut next_local = vec![0u32; hosts.len()];
    Ok(host_of
        .iter()
        .enumerate()
        .map(|(rank, &h)| {
            let local_rank = next_local[h];
            next_local[h] += 1;
            RankPlacement {
                rank: rank as u32,
                local_rank,
                local_size: used[h],
                host: Some(hosts[h].name.clone()),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_files_of_open_mpi_and_mpich() {
        let h = parse_hostfile(
            "# cluster\nn1 slots=4 max_slots=8\n\nn2:2   # MPICH\nn3\nn1\nn2 slots=1\n",
        )
        .unwrap();
        let got: Vec<(&str, u32)> = h.iter().map(|h| (h.name.as_str(), h.slots)).collect();
        assert_eq!(got, [("n1", 5), ("n2", 3), ("n3", 1)]);
        for (text, want) in [
            (
                "n1 slots=x\n",
                "line 1: \"n1 slots=x\": slots: \"x\" is not a whole number",
            ),
            ("ok\nn1 cpus=2\n", "line 2"),
            ("n1 slots\n", "not KEY=VALUE"),
            ("n1 slots=0\n", "at least 1 slot"),
            ("n1 slots=9 max_slots=2\n", "exceeds max_slots=2"),
            ("n1:2 slots=3\n", "slots given twice"),
            ("bad;name\n", "not a usable host name"),
            ("# nothing\n\n", "no host in the file"),
        ] {
            let e = parse_hostfile(text).unwrap_err();
            assert!(e.message().contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn local_placement_numbers_ranks_in_order() {
        let p = place_on_this_host(3);
        assert_eq!(p.len(), 3);
        for (i, r) in p.iter().enumerate() {
            assert_eq!(
                (r.rank, r.local_rank, r.local_size),
                (i as u32, i as u32, 3)
            );
            assert!(r.host.is_none());
        }
        assert!(place_on_this_host(0).is_empty());
    }

    fn summary(p: &[RankPlacement]) -> Vec<(String, u32, u32)> {
        p.iter()
            .map(|r| (r.host.clone().unwrap(), r.local_rank, r.local_size))
            .collect()
    }

    #[test]
    fn host_lists_parse_and_refuse_clearly() {
        let h = parse_hosts("a:2, b:3,c").unwrap();
        assert_eq!(
            h,
            [
                HostSlots {
                    name: "a".into(),
                    slots: 2
                },
                HostSlots {
                    name: "b".into(),
                    slots: 3
                },
                HostSlots {
                    name: "c".into(),
                    slots: 1
                },
            ]
        );
        assert_eq!(total_slots(&h), 6);
        for (bad, want) in [
            ("a:0", "at least 1 slot"),
            ("a:x", "not a whole number"),
            ("a,,b", "empty entry"),
            ("a b:2", "not a usable host name"),
            ("a;rm:1", "not a usable host name"),
            (":2", "not a usable host name"),
            ("-oProxyCommand=x:1", "not a usable host name"),
            ("a:1,a:2", "listed twice"),
        ] {
            let e = parse_hosts(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            assert!(e.message().contains(want), "{bad}: {e}");
        }
        assert_eq!(MapBy::parse("node").unwrap(), MapBy::Node);
        assert!(MapBy::parse("core").unwrap_err().message().contains("core"));
    }

    #[test]
    fn placement_by_slot_and_by_node() {
        let h = parse_hosts("a:2,b:3").unwrap();
        let by_slot = place_on_hosts(5, &h, MapBy::Slot).unwrap();
        assert_eq!(
            summary(&by_slot),
            [
                ("a".into(), 0, 2),
                ("a".into(), 1, 2),
                ("b".into(), 0, 3),
                ("b".into(), 1, 3),
                ("b".into(), 2, 3)
            ]
        );
        let by_node = place_on_hosts(5, &h, MapBy::Node).unwrap();
        assert_eq!(
            summary(&by_node),
            [
                ("a".into(), 0, 2),
                ("b".into(), 0, 3),
                ("a".into(), 1, 2),
                ("b".into(), 1, 3),
                ("b".into(), 2, 3)
            ]
        );
        // Fewer ranks than slots: local sizes count only the ranks placed.
        let few = place_on_hosts(3, &h, MapBy::Slot).unwrap();
        assert_eq!(
            summary(&few),
            [("a".into(), 0, 2), ("a".into(), 1, 2), ("b".into(), 0, 1)]
        );
        assert!(place_on_hosts(6, &h, MapBy::Node)
            .unwrap_err()
            .message()
            .contains("6 ranks do not fit the 5 slots"));
        assert!(place_on_hosts(1, &[], MapBy::Node).is_err());
    }
}
