//! `weft run --map torus:XxYxZ[@AxBxC] [--exclude FILE]`: the job's ranks on a virtual torus
//! laid over the healthy hosts of a physical torus (seed 003: the K computer hands a job a
//! torus of the shape it asks for out of the healthy nodes, hiding the faulty ones).
//!
//! **The physical torus** is the host list (`--hosts`, `--hostfile` or the Slurm allocation)
//! in its order: host `i` is node `i` of the machine's torus `AxBxC`, dimension 0 fastest,
//! as `weft plan map --torus AxBxC` numbers nodes, so the two commands agree on a machine,
//! a job shape and an exclude list. Without `@AxBxC` the machine is the job's own shape (then
//! the list must have exactly `X·Y·Z` hosts and nothing can be excluded).
//!
//! **Excluded hosts** (`--exclude FILE`): one a line, a host name of the list, or the node's
//! index or coordinates `x,y,z` (as `weft plan map --exclude` takes them; a name of the list
//! wins over an index); `#` starts a comment. A name that is not a host of the list is an
//! error, never ignored.
//!
//! **Placement**: `weft_model::mapping::map_torus` chooses the healthy host of each virtual
//! coordinate (its dilation and congestion are reported). Ranks follow the virtual torus in
//! MPI's row-major order (the last dimension fastest): host `k` of the job has the virtual
//! coordinates of position `k` of a Cartesian grid of dims `X,Y,Z` and runs ranks
//! `k·ppn .. k·ppn+ppn-1`. So `MPI_Cart_create(dims = X,Y,Z)` (with or without reorder:
//! with one rank per host every order cuts every edge and the given one stays) puts each
//! rank at its host's virtual coordinates. With `ppn` ranks per host, the reorder
//! (`weft_model::mapping::cart`) lays one host's ranks per block, blocks in row-major order
//! and hosts in the order of their lowest rank, which is the virtual torus's: a block shape
//! `a×b×c` of a grid `X·a × Y·b × Z·c` puts host `k`'s block at the host's virtual
//! coordinates; each rank's weft reads the torus from [`TORUS_DIMS_VAR`] and counts a grid
//! edge between hosts by its hops on it, so among shapes that cut as many edges the one whose
//! grid of blocks is the torus wins. The rank order is the one source of
//! truth both use. Each rank also gets its coordinates in [`TORUS_COORDS_VAR`] and the shape
//! in [`TORUS_DIMS_VAR`].
//!
//! Pure: parses and places; the caller reads the exclude file and starts the job.

use crate::place::HostSlots;
use weft_core::{Error, ErrorKind, Result};
use weft_model::mapping::torus::shape;
use weft_model::mapping::{map_torus, MapReport, Torus};

/// Variable each rank of a `--map` job gets: the job's virtual torus, `XxYxZ` (declared in
/// weft-core's knob registry).
pub const TORUS_DIMS_VAR: &str = weft_core::knob::TORUS_DIMS;
/// Variable each rank of a `--map` job gets: its host's virtual coordinates, `x,y,z`.
pub const TORUS_COORDS_VAR: &str = weft_core::knob::TORUS_COORDS;

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

/// A parsed `--map torus:XxYxZ[@AxBxC]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TorusRequest {
    /// The job's virtual torus.
    pub job: Vec<u32>,
    /// The machine's torus, when given after `@`.
    pub machine: Option<Vec<u32>>,
}

impl TorusRequest {
    /// Parses `torus:XxYxZ` or `torus:XxYxZ@AxBxC`.
    pub fn parse(text: &str) -> Result<TorusRequest> {
        let Some(rest) = text.trim().strip_prefix("torus:") else {
            return Err(invalid(format!(
                "--map {text:?}: expected torus:XxYxZ or torus:XxYxZ@AxBxC (the machine's shape)"
            )));
        };
        let dims = |t: &str| -> Result<Vec<u32>> {
            Torus::parse(t)
                .map(|t| t.dims)
                .map_err(|e| invalid(format!("--map {text:?}: {}", e.message())))
        };
        let (job, machine) = match rest.split_once('@') {
            Some((j, m)) => (dims(j)?, Some(dims(m)?)),
            None => (dims(rest)?, None),
        };
        Ok(TorusRequest { job, machine })
    }
}

/// One host of a `--map` job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TorusHost {
    /// Its name in the host list.
    pub name: String,
    /// Its node in the machine's torus (its index in the host list).
    pub node: u32,
    /// Its virtual coordinates, one per dimension of the job's torus.
    pub coords: Vec<u32>,
    /// Its coordinates in the machine's torus.
    pub physical: Vec<u32>,
}

/// Where a `--map` job runs.
#[derive(Clone, Debug)]
pub struct TorusPlacement {
    /// The job's virtual torus, as asked.
    pub job: Vec<u32>,
    /// The machine's torus.
    pub machine: Vec<u32>,
    /// The job's hosts in rank order (virtual coordinates in row-major order).
    pub hosts: Vec<TorusHost>,
    /// Ranks on each host.
    pub ranks_per_host: u32,
    /// Names of the hosts left out by the exclude list.
    pub excluded: Vec<String>,
    /// Dilation and congestion of the virtual torus's edges on the machine's links.
    pub report: MapReport,
}

/// The hosts (indices into `hosts`) that an exclude file's `text` names, in file order
/// without repeats; `file` names the file in errors.
pub fn excluded_hosts(
    text: &str,
    file: &str,
    hosts: &[HostSlots],
    machine: &[u32],
) -> Result<Vec<usize>> {
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let bad = |why: String| invalid(format!("--exclude {file}:{}: {line:?}: {why}", n + 1));
        let numbers = line
            .chars()
            .all(|c| c.is_ascii_digit() || c == ',' || c.is_whitespace());
        let index = match hosts.iter().position(|h| h.name == line) {
            Some(i) => i,
            None if numbers => {
                let fields: std::result::Result<Vec<u32>, _> =
                    line.split(',').map(|f| f.trim().parse::<u32>()).collect();
                let fields =
                    fields.map_err(|_| bad("not a host name, node index or x,y,z".into()))?;
                let t = Torus::new(machine)?;
                let inside = match fields[..] {
                    [i] => i < t.nodes(),
                    _ => {
                        fields.len() == machine.len()
                            && fields.iter().zip(machine).all(|(c, d)| c < d)
                    }
                };
                if !inside {
                    return Err(bad(format!("not a node of the {} machine", shape(machine))));
                }
                match fields[..] {
                    [i] => i as usize,
                    _ => t.index(&fields) as usize,
                }
            }
            None => return Err(bad("not a host of the job's host list".into())),
        };
        if !out.contains(&index) {
            out.push(index);
        }
    }
    Ok(out)
}

/// Coordinates of position `k` of a grid of `dims` in row-major order (the last dimension
/// fastest, as MPI numbers Cartesian ranks).
fn row_major(mut k: u32, dims: &[u32]) -> Vec<u32> {
    let mut c = vec![0u32; dims.len()];
    for (x, &d) in c.iter_mut().zip(dims).rev() {
        *x = k % d;
        k /= d;
    }
    c
}

/// Places a `--map` job: `request` on `hosts` (the machine's nodes in order) without the
/// hosts at `excluded` (indices), `nranks` ranks (`None`: as many per host as the job's
/// hosts all have slots). Every refusal is one line saying what does not fit.
pub fn place_on_torus(
    request: &TorusRequest,
    hosts: &[HostSlots],
    excluded: &[usize],
    nranks: Option<u32>,
) -> Result<TorusPlacement> {
    let job = &request.job;
    let machine = request.machine.clone().unwrap_or_else(|| job.clone());
    let physical = Torus::new(&machine)?;
    let asked = |m: &str| format!("--map torus:{}: {m}", shape(job));
    if hosts.len() as u64 != physical.nodes() as u64 {
        let how = if request.machine.is_some() {
            format!(
                "the {} machine has {} nodes",
                shape(&machine),
                physical.nodes()
            )
        } else {
            format!(
                "a {} torus is {} hosts; give the machine's shape as torus:{}@AxBxC (the \
                 hosts in order are its nodes, dimension 0 fastest)",
                shape(job),
                physical.nodes(),
                shape(job)
            )
        };
        return Err(invalid(asked(&format!(
            "{} hosts are listed, but {how}",
            hosts.len()
        ))));
    }
    let mut faulty = vec![false; hosts.len()];
    for &i in excluded {
        faulty[i] = true;
    }
    let map = map_torus(&physical, &faulty, job).map_err(|e| invalid(asked(e.message())))?;
    let cells: u32 = job.iter().product();
    let placed: Vec<TorusHost> = (0..cells)
        .map(|k| {
            let coords = row_major(k, job);
            let mut padded = coords.clone();
            padded.resize(map.virtual_torus.dims.len(), 0);
            let node = map.node_of[map.virtual_torus.index(&padded) as usize];
            TorusHost {
                name: hosts[node as usize].name.clone(),
                node,
                coords,
                physical: physical.coord(node),
            }
        })
        .collect();
    let fewest = placed
        .iter()
        .map(|h| (hosts[h.node as usize].slots, &h.name))
        .min()
        .expect("a torus has at least one node");
    let ranks_per_host = match nranks {
        None => fewest.0,
        Some(n) if n % cells != 0 => {
            return Err(invalid(asked(&format!(
                "-n {n}: the job's {cells} hosts take a multiple of {cells} ranks (the same \
                 number on each)"
            ))))
        }
        Some(n) if n / cells > fewest.0 => {
            return Err(invalid(asked(&format!(
                "-n {n}: {} ranks per host exceed the {} slots of host {}",
                n / cells,
                fewest.0,
                fewest.1
            ))))
        }
        Some(n) => n / cells,
    };
    Ok(TorusPlacement {
        job: job.clone(),
        machine,
        hosts: placed,
        ranks_per_host,
        excluded: excluded.iter().map(|&i| hosts[i].name.clone()).collect(),
        report: map.report,
    })
}

fn joined(c: &[u32]) -> String {
    c.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

impl TorusPlacement {
    /// Ranks of the job.
    pub fn nranks(&self) -> u32 {
        self.hosts.len() as u32 * self.ranks_per_host
    }

    /// The job's hosts in rank order, each with [`Self::ranks_per_host`] slots: filled slot
    /// by slot ([`crate::MapBy::Slot`]) they give the rank order of the virtual torus.
    pub fn host_slots(&self) -> Vec<HostSlots> {
        self.hosts
            .iter()
            .map(|h| HostSlots {
                name: h.name.clone(),
                slots: self.ranks_per_host,
            })
            .collect()
    }

    /// Each rank's own variables (index: rank): [`TORUS_DIMS_VAR`] and
    /// [`TORUS_COORDS_VAR`].
    pub fn rank_env(&self) -> Vec<Vec<(String, String)>> {
        let dims = shape(&self.job);
        self.hosts
            .iter()
            .flat_map(|h| {
                let vars = vec![
                    (TORUS_DIMS_VAR.to_owned(), dims.clone()),
                    (TORUS_COORDS_VAR.to_owned(), joined(&h.coords)),
                ];
                std::iter::repeat_n(vars, self.ranks_per_host as usize)
            })
            .collect()
    }

    /// One line: the job's torus, the machine, what was left out, dilation and congestion
    /// (as `weft plan map` reports them).
    pub fn summary(&self) -> String {
        let r = &self.report;
        format!(
            "map torus:{} on the {} machine ({} hosts, {} excluded, {} per host): \
             dilation max {} mean {:.3}, congestion {}, {} ({} repaired)",
            shape(&self.job),
            shape(&self.machine),
            self.machine.iter().product::<u32>(),
            self.excluded.len(),
            match self.ranks_per_host {
                1 => "1 rank".to_string(),
                n => format!("{n} ranks"),
            },
            r.max_dilation,
            r.mean_dilation,
            r.congestion,
            r.strategy,
            r.repaired
        )
    }

    /// One line per host: its ranks, virtual and physical coordinates.
    pub fn host_lines(&self) -> Vec<String> {
        self.hosts
            .iter()
            .enumerate()
            .map(|(k, h)| {
                let first = k as u32 * self.ranks_per_host;
                let ranks = if self.ranks_per_host == 1 {
                    format!("rank {first}")
                } else {
                    format!("ranks {first}-{}", first + self.ranks_per_host - 1)
                };
                format!(
                    "map {ranks} on host {} (node {}): virtual ({}) physical ({})",
                    h.name,
                    h.node,
                    joined(&h.coords),
                    joined(&h.physical)
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(n: usize, slots: u32) -> Vec<HostSlots> {
        (0..n)
            .map(|i| HostSlots {
                name: format!("h{i}"),
                slots,
            })
            .collect()
    }

    #[test]
    fn requests_parse_and_refuse_clearly() {
        assert_eq!(
            TorusRequest::parse("torus:4x2x2").unwrap(),
            TorusRequest {
                job: vec![4, 2, 2],
                machine: None
            }
        );
        assert_eq!(
            TorusRequest::parse(" torus:2x2@3x2 ").unwrap(),
            TorusRequest {
                job: vec![2, 2],
                machine: Some(vec![3, 2])
            }
        );
        for (bad, want) in [
            ("4x2x2", "expected torus:XxYxZ"),
            ("ring:4", "expected torus:XxYxZ"),
            ("torus:4xx2", "expected dimensions like 16x16x16"),
            ("torus:4x0", "at least 1"),
            ("torus:2x2@", "expected dimensions"),
            ("torus:", "expected dimensions"),
        ] {
            let e = TorusRequest::parse(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            assert!(e.message().contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn exclude_files_name_hosts_or_coordinates() {
        let h = hosts(6, 1);
        let x = excluded_hosts("# faulty\nh4\n\n1,0  # node 1\nh4\n5\n", "f", &h, &[3, 2]).unwrap();
        assert_eq!(x, [4, 1, 5]);
        for (text, want) in [
            ("h9\n", "f:1: \"h9\": not a host of the job's host list"),
            ("ok\n", "not a host"),
            ("h0\n3,0\n", "f:2: \"3,0\": not a node of the 3x2 machine"),
            ("1,0,0\n", "not a node of the 3x2 machine"),
            ("a,b\n", "not a host of the job's host list"),
            ("1,,0\n", "not a host name, node index or x,y,z"),
            ("6\n", "not a node of the 3x2 machine"),
        ] {
            let e = excluded_hosts(text, "f", &h, &[3, 2]).unwrap_err();
            assert!(e.message().contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn ranks_follow_the_virtual_torus_row_major_on_healthy_hosts() {
        // A 3x2 machine (hosts h0..h5, dimension 0 fastest) without h1 and h4: a 2x2 job.
        let h = hosts(6, 2);
        let req = TorusRequest::parse("torus:2x2@3x2").unwrap();
        let p = place_on_torus(&req, &h, &[1, 4], Some(8)).unwrap();
        assert_eq!((p.ranks_per_host, p.nranks()), (2, 8));
        assert_eq!(p.excluded, ["h1", "h4"]);
        let names: Vec<&str> = p.hosts.iter().map(|h| h.name.as_str()).collect();
        assert!(
            !names.contains(&"h1") && !names.contains(&"h4"),
            "{names:?}"
        );
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 4, "{names:?}");
        // Row-major virtual order, and each host where the model put it.
        let coords: Vec<Vec<u32>> = p.hosts.iter().map(|h| h.coords.clone()).collect();
        assert_eq!(coords, [[0, 0], [0, 1], [1, 0], [1, 1]]);
        let physical = Torus::new(&[3, 2]).unwrap();
        for host in &p.hosts {
            assert_eq!(host.name, format!("h{}", host.node));
            assert_eq!(host.physical, physical.coord(host.node));
        }
        // Hiding two faults of a 3x2 torus (dropping the plane x=1) keeps every virtual
        // edge one hop long.
        assert_eq!(p.report.max_dilation, 1, "{:?}", p.report);
        // Ranks: two per host, consecutive, with the host's coordinates.
        let env = p.rank_env();
        assert_eq!(env.len(), 8);
        for (rank, vars) in env.iter().enumerate() {
            let host = &p.hosts[rank / 2];
            assert_eq!(
                vars,
                &[
                    (TORUS_DIMS_VAR.to_owned(), "2x2".to_owned()),
                    (TORUS_COORDS_VAR.to_owned(), joined(&host.coords)),
                ]
            );
        }
        let slots = p.host_slots();
        assert!(slots.iter().all(|s| s.slots == 2));
        let placed = crate::place::place_on_hosts(8, &slots, crate::MapBy::Slot).unwrap();
        for r in &placed {
            assert_eq!(
                r.host.as_deref(),
                Some(p.hosts[r.rank as usize / 2].name.as_str())
            );
        }
        assert!(p.summary().contains("dilation max 1"), "{}", p.summary());
        assert_eq!(p.host_lines().len(), 4);
        assert!(
            p.host_lines()[3].starts_with("map ranks 6-7 on host"),
            "{:?}",
            p.host_lines()
        );
    }

    #[test]
    fn a_machine_of_the_job_s_own_shape_maps_straight() {
        // Without @: host i is node i of the 3x2 torus; virtual = physical coordinates.
        let h = hosts(6, 1);
        let p = place_on_torus(&TorusRequest::parse("torus:3x2").unwrap(), &h, &[], None).unwrap();
        assert_eq!(p.ranks_per_host, 1);
        for host in &p.hosts {
            assert_eq!(host.coords, host.physical, "{host:?}");
        }
        assert_eq!((p.report.max_dilation, p.report.congestion), (1, 1));
    }

    #[test]
    fn every_small_machine_with_faults_gives_a_placement_on_healthy_hosts() {
        // Exhaustive over the fault sets of a 4x3 machine that leave room for a 3x2 job.
        let h = hosts(12, 1);
        let req = TorusRequest::parse("torus:3x2@4x3").unwrap();
        for mask in 0u32..(1 << 12) {
            let bad: Vec<usize> = (0..12).filter(|&i| mask & (1 << i) != 0).collect();
            let r = place_on_torus(&req, &h, &bad, None);
            if bad.len() > 6 {
                assert!(r.is_err(), "{bad:?}");
                continue;
            }
            let p = r.unwrap();
            let mut nodes: Vec<u32> = p.hosts.iter().map(|h| h.node).collect();
            assert!(
                nodes.iter().all(|n| !bad.contains(&(*n as usize))),
                "{bad:?}"
            );
            nodes.sort_unstable();
            nodes.dedup();
            assert_eq!(nodes.len(), 6, "{bad:?}");
            // The report is the model's, measured on the hosts actually used.
            let physical = Torus::new(&[4, 3]).unwrap();
            let at = |c: &[u32]| {
                p.hosts
                    .iter()
                    .find(|h| h.coords == c)
                    .map(|h| h.node)
                    .unwrap()
            };
            let mut longest = 0;
            for x in 0..3u32 {
                for y in 0..2u32 {
                    longest = longest
                        .max(physical.distance(at(&[x, y]), at(&[(x + 1) % 3, y])))
                        .max(physical.distance(at(&[x, y]), at(&[x, (y + 1) % 2])));
                }
            }
            assert_eq!(longest, p.report.max_dilation, "{bad:?}");
        }
    }

    #[test]
    fn what_does_not_fit_is_one_clear_line() {
        let h = hosts(6, 2);
        let req = |t: &str| TorusRequest::parse(t).unwrap();
        for (request, bad, n, want) in [
            ("torus:2x2", vec![], None, "6 hosts are listed, but a 2x2 torus is 4 hosts; give the machine's shape as torus:2x2@AxBxC"),
            ("torus:2x2@2x2", vec![], None, "6 hosts are listed, but the 2x2 machine has 4 nodes"),
            ("torus:3x2@3x2", vec![0], None, "needs 6 nodes; the 3x2 machine has 5 healthy of 6"),
            ("torus:4x2@3x2", vec![], None, "does not fit in 3x2"),
            ("torus:2x2x2@3x2", vec![], None, "cannot be laid on the 2-dimensional"),
            ("torus:2x2@3x2", vec![], Some(6), "-n 6: the job's 4 hosts take a multiple of 4 ranks"),
            ("torus:2x2@3x2", vec![], Some(12), "-n 12: 3 ranks per host exceed the 2 slots of host"),
        ] {
            let e = place_on_torus(&req(request), &h, &bad, n).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            let m = e.message();
            assert!(m.contains(want) && !m.contains('\n'), "{request} {bad:?}: {m}");
        }
    }
}
