//! The example programs of the OpenSHMEM 1.5 specification (tests/spec, see its README),
//! compiled as the specification's Makefile does (`oshcc -Wall -O3`, here with `-std=c11`),
//! run at 2 and 4 PEs (3 and 4 for the two that need a PE 2) and checked against what the
//! specification says they print or how they exit.

mod common;

use common::*;
use std::collections::BTreeMap;
use weft_launch::JobOutcome;

/// Compiles tests/spec/`name`.c as the specification's Makefile does, with C11.
fn build(name: &str, extra: &[&str]) -> std::path::PathBuf {
    let mut flags = vec!["-std=c11", "-Wall", "-O3"];
    flags.extend_from_slice(extra);
    compile_sources(name, &[&format!("tests/spec/{name}.c")], &flags)
}

/// Each rank's lines.
fn by_rank(out: &JobOutcome) -> BTreeMap<u32, Vec<String>> {
    let mut m: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for (r, l) in rank_lines(out) {
        m.entry(r).or_default().push(l);
    }
    m
}

/// Runs `name` at each of `pes` and hands every successful run to `check(n, lines by rank)`.
fn run(name: &str, extra: &[&str], pes: &[u32], check: impl Fn(u32, &BTreeMap<u32, Vec<String>>)) {
    let exe = build(name, extra);
    for &n in pes {
        let out = job(&exe, n, &[], &[]);
        assert_eq!(out.exit_code, 0, "{name} at {n} PEs: {}", describe(&out));
        check(n, &by_rank(&out));
    }
    let _ = std::fs::remove_file(exe);
}

/// The lines of rank `r` (none when it printed nothing).
fn of(m: &BTreeMap<u32, Vec<String>>, r: u32) -> Vec<&str> {
    m.get(&r)
        .map_or(Vec::new(), |v| v.iter().map(String::as_str).collect())
}

const PES: &[u32] = &[2, 4];

#[test]
fn setup_and_query_examples() {
    run("hello-openshmem", &[], PES, |n, m| {
        for r in 0..n {
            assert_eq!(of(m, r), [format!("Hello from {r} of {n}")]);
        }
    });
    run("shmem_mype_example", &[], PES, |n, m| {
        for r in 0..n {
            assert_eq!(of(m, r), [format!("My PE id is: {r}")]);
        }
    });
    run("shmem_npes_example", &[], PES, |n, m| {
        for r in 0..n {
            assert_eq!(
                of(m, r),
                [format!("I am #{r} of {n} PEs executing this program")]
            );
        }
    });
    run("shmem_init_example", &[], PES, |n, m| {
        assert_eq!(of(m, 1), ["PE 1 targ=33 (expect 33)"]);
        for r in (0..n).filter(|&r| r != 1) {
            assert!(of(m, r).is_empty());
        }
    });
    for name in ["shmem_finalize_example", "shmem_g_example"] {
        run(name, &[], PES, |n, m| {
            assert_eq!(of(m, 0), ["0: y = 10101"]);
            for r in 1..n {
                assert_eq!(of(m, r), [format!("{r}: y = -1")]);
            }
        });
    }
    // Shared globals: PE 0 gets a pointer to PE 1's array and fills it.
    run("shmem_ptr_example", &[], PES, |_, m| {
        let mut want = vec!["bigd on PE 1 is:".to_string()];
        want.extend((1..=100).map(|i| format!(" {i}")));
        want.push(String::new());
        assert_eq!(of(m, 1), want);
        assert!(of(m, 0).is_empty(), "PE 0 could not use shmem_ptr");
    });
}

/// With no input.txt (the tests run in the crate directory, which has none), PE 0 ends the
/// whole program with EXIT_FAILURE, as the specification's example intends.
#[test]
fn global_exit_example_ends_every_pe() {
    let exe = build("shmem_global_exit_example", &[]);
    for n in [2, 4] {
        let out = job(&exe, n, &[], &[]);
        // Code 1 is PE 0's global exit ending the others; a job it failed to end would end
        // by the harness's timeout, code 124.
        assert_eq!(out.exit_code, 1, "{}", describe(&out));
    }
    let _ = std::fs::remove_file(exe);
}

#[test]
fn rma_examples() {
    run("shmem_put_example", &[], PES, |n, m| {
        for r in 0..n {
            let v = if r == 1 { 1 } else { 0 };
            assert_eq!(of(m, r), [format!("dest[0] on PE {r} is {v}")]);
        }
    });
    run("shmem_p_example", &[], PES, |_, m| {
        assert_eq!(of(m, 1), ["OK"]);
    });
    run("shmem_iput_example", &[], PES, |_, m| {
        assert_eq!(of(m, 1), ["dest on PE 1 is 1 3 5 7 9"]);
    });
    run("shmem_put_signal_example", &[], PES, |_, m| {
        assert!(m.is_empty());
    });
    run("writing_shmem_example", &[], PES, |n, m| {
        let values: String = (0..16).map(|i| format!("{i} \t")).collect();
        for r in 1..n {
            assert_eq!(of(m, r), [format!("dest on PE {r} is \t{values}")]);
        }
    });
    // These two put to PE 2.
    run("shmem_fence_example", &[], &[3, 4], |n, m| {
        for r in 0..n {
            let v = if r == 1 || r == 2 { 1 } else { 0 };
            assert_eq!(of(m, r), [format!("dest[0] on PE {r} is {v}")]);
        }
    });
    run("shmem_quiet_example", &[], &[3, 4], |_, m| {
        assert_eq!(of(m, 0), ["x: { 1, 2, 3 }", "y: 90"]);
    });
}

#[test]
fn atomic_examples() {
    run("shmem_atomic_add_example", &[], PES, |n, m| {
        for r in 0..n {
            let v = if r == 0 { 66 } else { 22 };
            assert_eq!(of(m, r), [format!("{r}: dst = {v}")]);
        }
    });
    run("shmem_atomic_fetch_add_example", &[], PES, |n, m| {
        for r in 0..n {
            let (old, dst) = match r {
                0 => (-1, 66),
                1 => (22, 22),
                _ => (-1, 22),
            };
            assert_eq!(of(m, r), [format!("{r}: old = {old}, dst = {dst}")]);
        }
    });
    run("shmem_atomic_fetch_inc_example", &[], PES, |n, m| {
        for r in 0..n {
            let (old, dst) = match r {
                0 => (22, 22),
                1 => (-1, 23),
                _ => (-1, 22),
            };
            assert_eq!(of(m, r), [format!("{r}: old = {old}, dst = {dst}")]);
        }
    });
    run("shmem_atomic_inc_example", &[], PES, |n, m| {
        for r in 0..n {
            let v = if r == 1 { 75 } else { 74 };
            assert_eq!(of(m, r), [format!("{r}: dst = {v}")]);
        }
    });
    run("shmem_atomic_compare_swap_example", &[], PES, |_, m| {
        let firsts: Vec<_> = m
            .values()
            .flatten()
            .filter(|l| l.ends_with(" was first"))
            .collect();
        assert_eq!(firsts.len(), 1, "{m:?}");
    });
    run("shmem_atomic_swap_example", &[], PES, |n, m| {
        for r in 0..n {
            if r % 2 == 1 {
                let swapped = (r + 1) % n;
                assert_eq!(of(m, r), [format!("{r}: dest = {r}, swapped = {swapped}")]);
            } else {
                assert!(of(m, r).is_empty());
            }
        }
    });
    // Undefined behaviour by the specification's rules (mixed atomicity domains, mixed
    // types on one location, a reduction racing with atomics, a local store racing with
    // atomics); weft's atomics are all CPU atomics: they complete.
    for name in [
        "amo_scenario_1",
        "amo_scenario_2",
        "amo_scenario_3",
        "amo_scenario_4",
    ] {
        run(name, &[], PES, |_, _| {});
    }
}

#[test]
fn collective_examples() {
    run("shmem_barrierall_example", &[], PES, |n, m| {
        for r in 0..n {
            assert_eq!(of(m, r), [format!("{r}: x = 4")]);
        }
    });
    run("shmem_syncall_example", &[], PES, |n, m| {
        for r in 0..n {
            assert_eq!(of(m, r), [format!("{r}: x = 4")]);
        }
    });
    // The even PEs put to each other before any synchronisation, so an even PE's own
    // store of 1000 + PE can land after its left even neighbour's 4 (the example races).
    run("shmem_barrier_example", &[], PES, |n, m| {
        for r in 0..n {
            let line = of(m, r);
            if r % 2 == 1 {
                assert_eq!(line, [format!("{r}: x = 10101")]);
            } else if n == 2 {
                assert_eq!(line, [format!("{r}: x = 4")]);
            } else {
                assert!(
                    line == [format!("{r}: x = 4")] || line == [format!("{r}: x = {}", 1000 + r)],
                    "{line:?}"
                );
            }
        }
    });
    run("shmem_broadcast_example", &[], PES, |n, m| {
        for r in 0..n {
            assert_eq!(of(m, r), [format!("{r}: 0, 1, 2, 3")]);
        }
    });
    run("shmem_collect_example", &[], PES, |n, m| {
        let total = n * (n + 1) / 2;
        let all: Vec<String> = (0..total).map(|i| i.to_string()).collect();
        for r in 0..n {
            assert_eq!(of(m, r), [format!("{r}: {}", all.join(", "))]);
        }
    });
    run("shmem_reduce_example", &[], PES, |_, m| {
        let l = of(m, 0);
        assert!(
            l.len() == 1
                && l[0].starts_with("found a total of ")
                && l[0].ends_with(" maximal random numbers"),
            "{l:?}"
        );
    });
    for name in ["shmem_alltoall_example", "shmem_alltoalls_example"] {
        // They print a line per wrong element.
        run(name, &[], PES, |_, m| assert!(m.is_empty(), "{m:?}"));
    }
    run("shmem_lock_example", &[], PES, |n, m| {
        let mut counts: Vec<u32> = (0..n)
            .map(|r| {
                let l = of(m, r);
                assert_eq!(l.len(), 1);
                l[0].rsplit(' ').next().unwrap().parse().unwrap()
            })
            .collect();
        counts.sort();
        assert_eq!(counts, (0..n).collect::<Vec<_>>());
    });
}

#[test]
fn team_and_context_examples() {
    for name in [
        "shmem_team_split_strided",
        "shmem_team_translate_pe",
        "shmem_team_context",
        "shmem_sync_example",
        "shmem_ctx_pipelined_reduce",
    ] {
        run(name, &[], PES, |_, m| assert!(m.is_empty(), "{m:?}"));
    }
    run("shmem_team_split_2D", &[], PES, |n, m| {
        // x is the largest divisor of npes up to its cube root rounded up: 2 PEs are
        // 2 x 1 x 1, 4 PEs 2 x 2 x 1.
        let (x, y, z) = if n == 2 { (2, 1, 1) } else { (2, 2, 1) };
        let mut lines = of(m, 0).into_iter();
        assert_eq!(
            lines.next(),
            Some(format!("xdim = {x}, ydim = {y}, zdim = {z}").as_str())
        );
        for pe in 0..n {
            let (px, py, pz) = (pe % x, (pe / x) % y, pe / (x * y));
            let want = format!("({px}, {py}, {pz}) is mype = {pe}");
            let got = if pe == 0 {
                lines.next().map(str::to_string)
            } else {
                of(m, pe).first().map(|s| s.to_string())
            };
            assert_eq!(got, Some(want));
        }
    });
    // OpenMP threads, each with its own context (atomics on a global of every PE).
    for name in ["shmem_ctx", "shmem_ctx_invalid"] {
        run(name, &["-fopenmp"], PES, |_, m| {
            assert!(m.is_empty(), "{m:?}")
        });
    }
}

#[test]
fn point_to_point_synchronization_examples() {
    for name in [
        "shmem_wait_until_all",
        "shmem_wait_until_any_all2all_sum",
        "shmem_wait_until_some_all2all_sum",
        "shmem_wait_until_any_vector",
        "shmem_test_any_example",
        "shmem_test_some_example",
    ] {
        run(name, &[], PES, |_, m| assert!(m.is_empty(), "{m:?}"));
    }
    run("shmem_test_example1", &[], PES, |n, m| {
        let l = of(m, 0);
        assert_eq!(l.len(), 1);
        let who: u32 = l[0]
            .strip_prefix("PE 0 observed first update from PE ")
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..n).contains(&who), "{l:?}");
    });
}

/// A fragment without main: it compiles.
#[test]
fn wait_fragment_compiles() {
    let obj = std::env::temp_dir().join(format!("weft-spec-wait3-{}.o", std::process::id()));
    let status = std::process::Command::new(crate_dir().join("bin/oshcc"))
        .env("WEFT_SHMEM_LIB", lib_dir())
        .args(["-std=c11", "-Wall", "-Werror", "-c", "-o"])
        .arg(&obj)
        .arg(crate_dir().join("tests/spec/shmem_wait3_example.c"))
        .status()
        .unwrap();
    assert!(status.success());
    let _ = std::fs::remove_file(obj);
}

/// The profiling example intercepts shmem_long_put and calls pshmem_long_put: linked into a
/// program, its shmem_long_put is the one the program calls (the program's own definition),
/// and the put still arrives through the name-shifted entry point.
#[test]
fn profiling_example_intercepts_a_put() {
    let exe = compile_sources(
        "pshmem",
        &["tests/spec/pshmem_example.c", "tests/c/pshmem_user.c"],
        &["-std=c11", "-Wall", "-O2"],
    );
    let nm = std::process::Command::new("nm").arg(&exe).output().unwrap();
    assert!(
        String::from_utf8_lossy(&nm.stdout)
            .lines()
            .any(|l| l.ends_with(" T shmem_long_put")),
        "the program defines shmem_long_put"
    );
    for n in [2, 4] {
        let out = job(&exe, n, &[], &[]);
        assert_eq!(out.exit_code, 0, "{}", describe(&out));
        let lines = rank_lines(&out);
        assert_eq!(
            lines.iter().filter(|(_, l)| l == "pshmem ok").count(),
            n as usize,
            "{}",
            describe(&out)
        );
    }
    let _ = std::fs::remove_file(exe);
}
