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
