//! `weft run` inside a Slurm allocation: the allocation's hosts and slots from
//! `SLURM_JOB_NODELIST` (a hostlist such as `n[01-04,07]`) and `SLURM_TASKS_PER_NODE` (such
//! as `2(x3),1`), and the launcher template that starts one agent per host as a job step
//! (`srun`), not through ssh. Pure parsing apart from the environment lookup the caller
//! passes in.

use crate::place::HostSlots;
use weft_core::{Error, ErrorKind, Result};

/// The launcher template of agents inside an allocation: one task on one named node, as a
/// step that may share the allocation's CPUs with the job's other steps, without a PMI
/// (the agent and its ranks use weft's own bootstrap).
pub const SRUN_TEMPLATE: &str =
    "srun --nodes=1 --ntasks=1 --nodelist={host} --overlap --oversubscribe --mpi=none --quiet --kill-on-bad-exit=0";

/// The Slurm allocation this process runs in, if `SLURM_JOB_ID` says it runs in one: its
/// hosts with their task counts. A node list or task list that does not parse, or that
/// disagree in length, is an error naming the variable.
pub fn allocation(var: &dyn Fn(&str) -> Option<String>) -> Result<Option<Vec<HostSlots>>> {
    let set = |n: &str| var(n).filter(|v| !v.trim().is_empty());
    if set("SLURM_JOB_ID").is_none() {
        return Ok(None);
    }
    let list = set("SLURM_JOB_NODELIST")
        .or_else(|| set("SLURM_NODELIST"))
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Config,
                "SLURM_JOB_ID is set but SLURM_JOB_NODELIST is not: cannot tell the allocation's nodes",
            )
        })?;
    let hosts =
        expand_hostlist(&list).map_err(|e| e.context(format!("SLURM_JOB_NODELIST={list:?}")))?;
    let counts = match set("SLURM_TASKS_PER_NODE") {
        Some(t) => {
            tasks_per_node(&t).map_err(|e| e.context(format!("SLURM_TASKS_PER_NODE={t:?}")))?
        }
        None => vec![1; hosts.len()],
    };
    if counts.len() != hosts.len() {
        return Err(Error::new(
            ErrorKind::Config,
            format!(
                "SLURM_JOB_NODELIST={list:?} names {} nodes but SLURM_TASKS_PER_NODE gives {} counts",
                hosts.len(),
                counts.len()
            ),
        ));
    }
    Ok(Some(
        hosts
            .into_iter()
            .zip(counts)
            .map(|(name, slots)| HostSlots { name, slots })
            .collect(),
    ))
}

/// Expands a Slurm hostlist: comma-separated names, each with bracketed ranges and lists
/// (`n[01-04,07]`, `rack[1-2]-n[1-3]`); numbers keep the width of the range's first bound.
pub fn expand_hostlist(text: &str) -> Result<Vec<String>> {
    let bad = |why: &str| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("hostlist {text:?}: {why}"),
        )
    };
    let mut out = Vec::new();
    // Split on commas outside brackets.
    let mut depth = 0i32;
    let mut start = 0;
    let mut items = Vec::new();
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err(bad("brackets do not match (or nest)"));
        }
    }
    if depth != 0 {
        return Err(bad("a '[' is not closed"));
    }
    items.push(&text[start..]);
    for item in items {
        let item = item.trim();
        if item.is_empty() {
            return Err(bad("an empty name"));
        }
        expand_item(item, &mut out).map_err(|why| bad(&why))?;
    }
    if out.len() > 1 << 20 {
        return Err(bad("more than a million hosts"));
    }
    Ok(out)
}

/// Expands one name with zero or more bracket groups into `out`.
fn expand_item(item: &str, out: &mut Vec<String>) -> std::result::Result<(), String> {
    for name in expand_groups(item)? {
        check_name(&name)?;
        out.push(name);
    }
    Ok(())
}

/// Every string `text` stands for, its first bracket group expanded and the rest in turn.
fn expand_groups(text: &str) -> std::result::Result<Vec<String>, String> {
    let Some(open) = text.find('[') else {
        if text.contains(']') {
            return Err(format!("stray ']' in {text:?}"));
        }
        return Ok(vec![text.to_owned()]);
    };
    let close = text[open..]
        .find(']')
        .map(|c| open + c)
        .ok_or_else(|| format!("'[' without ']' in {text:?}"))?;
    let (prefix, body) = (&text[..open], &text[open + 1..close]);
    if prefix.contains(']') {
        return Err(format!("stray ']' in {text:?}"));
    }
    let tails = expand_groups(&text[close + 1..])?;
    let mut out = Vec::new();
    for part in body.split(',') {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let (lo, hi) = (lo.trim(), hi.trim());
        let number = |s: &str| {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!("{part:?} in {text:?} is not a number or range"));
            }
            s.parse::<u64>()
                .map_err(|_| format!("{s:?} in {text:?} is too large"))
        };
        let (a, b) = (number(lo)?, number(hi)?);
        if a > b {
            return Err(format!("range {part:?} in {text:?} goes down"));
        }
        if (b - a + 1).saturating_mul(tails.len() as u64) + out.len() as u64 > 1 << 20 {
            return Err(format!("{text:?} names more than a million hosts"));
        }
        for n in a..=b {
            for t in &tails {
                out.push(format!("{prefix}{n:0width$}{t}", width = lo.len()));
            }
        }
    }
    Ok(out)
}

/// A host name as the launcher template may carry it.
fn check_name(name: &str) -> std::result::Result<(), String> {
    if name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        Ok(())
    } else {
        Err(format!("{name:?} is not a host name"))
    }
}

/// Expands `SLURM_TASKS_PER_NODE`: comma-separated counts, `N(xK)` standing for K nodes of N.
pub fn tasks_per_node(text: &str) -> Result<Vec<u32>> {
    let bad = |why: String| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("tasks per node {text:?}: {why}"),
        )
    };
    let mut out = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        let (count, times) = match item.split_once('(') {
            Some((c, r)) => {
                let k = r
                    .strip_prefix('x')
                    .and_then(|r| r.strip_suffix(')'))
                    .ok_or_else(|| bad(format!("{item:?} is not N or N(xK)")))?;
                (c, k)
            }
            None => (item, "1"),
        };
        let n: u32 = count
            .trim()
            .parse()
            .map_err(|_| bad(format!("{count:?} is not a number of tasks")))?;
        let k: u32 = times
            .trim()
            .parse()
            .map_err(|_| bad(format!("{times:?} is not a number of nodes")))?;
        if n == 0 || k == 0 {
            return Err(bad(format!("{item:?} counts zero")));
        }
        if out.len() + k as usize > 1 << 20 {
            return Err(bad("more than a million nodes".into()));
        }
        out.extend(std::iter::repeat_n(n, k as usize));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(s: &str) -> Vec<String> {
        expand_hostlist(s).unwrap()
    }

    #[test]
    fn hostlists_expand_ranges_lists_and_widths() {
        assert_eq!(h("vm"), ["vm"]);
        assert_eq!(h("a,b"), ["a", "b"]);
        assert_eq!(h("n[01-04,07]"), ["n01", "n02", "n03", "n04", "n07"]);
        assert_eq!(h("n[8-11]"), ["n8", "n9", "n10", "n11"]);
        assert_eq!(h("x,n[1-2],y.z"), ["x", "n1", "n2", "y.z"]);
        assert_eq!(
            h("rack[1-2]-n[1-2]"),
            ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]
        );
        assert_eq!(h("gpu[005]"), ["gpu005"]);
    }

    #[test]
    fn bad_hostlists_are_errors_naming_the_list() {
        for bad in [
            "",
            "n[1-2",
            "n1-2]",
            "n[]",
            "n[a-b]",
            "n[3-1]",
            "n[1-2]]",
            "n[[1]]",
            "a,,b",
            "n[1-2],",
            "bad name",
            "n[1-99999999]",
        ] {
            let e = expand_hostlist(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad}");
            assert!(e.message().contains("hostlist"), "{bad}: {e}");
        }
    }

    #[test]
    fn tasks_per_node_expand_repeats() {
        assert_eq!(tasks_per_node("2(x3),1").unwrap(), [2, 2, 2, 1]);
        assert_eq!(tasks_per_node("4").unwrap(), [4]);
        assert_eq!(tasks_per_node("1,3(x2)").unwrap(), [1, 3, 3]);
        for bad in ["", "0", "2(x0)", "2(3)", "x", "2(x3", "-1"] {
            assert!(tasks_per_node(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_allocation_comes_from_the_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |n: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == n)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(allocation(&env(&[])).unwrap(), None);
        let a = allocation(&env(&[
            ("SLURM_JOB_ID", "12"),
            ("SLURM_JOB_NODELIST", "n[1-3]"),
            ("SLURM_TASKS_PER_NODE", "2(x2),1"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            a,
            [("n1", 2), ("n2", 2), ("n3", 1)]
                .iter()
                .map(|&(n, s)| HostSlots {
                    name: n.into(),
                    slots: s
                })
                .collect::<Vec<_>>()
        );
        let e = allocation(&env(&[
            ("SLURM_JOB_ID", "12"),
            ("SLURM_JOB_NODELIST", "n[1-3]"),
            ("SLURM_TASKS_PER_NODE", "2(x2)"),
        ]))
        .unwrap_err();
        assert!(
            e.message()
                .contains("names 3 nodes but SLURM_TASKS_PER_NODE gives 2"),
            "{e}"
        );
        let e = allocation(&env(&[
            ("SLURM_JOB_ID", "12"),
            ("SLURM_JOB_NODELIST", "n[1-"),
        ]))
        .unwrap_err();
        assert!(e.message().contains("SLURM_JOB_NODELIST=\"n[1-\""), "{e}");
        let e = allocation(&env(&[("SLURM_JOB_ID", "12")])).unwrap_err();
        assert!(e.message().contains("SLURM_JOB_NODELIST is not"), "{e}");
    }
}
