//! The C tests of libshmem: each program in tests/c is compiled against include/ and the
//! libshmem.so cargo just built, then run as real jobs through weft-launch at several PE
//! counts; results are asserted by the programs and by the output checked here.

mod common;

use common::*;
use std::process::Command;
use std::time::Duration;

#[test]
fn rma_program_at_1_to_4_pes() {
    let exe = compile("rma", "tests/c");
    for n in 1..=4 {
        let out = job(&exe, n, &[], &[]);
        assert_eq!(out.exit_code, 0, "{}", describe(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout.matches("rma ok").count(),
            n as usize,
            "{}",
            describe(&out)
        );
    }
    let _ = std::fs::remove_file(exe);
}

#[test]
fn collectives_and_signal_forms_at_1_to_4_pes() {
    let exe = compile("coll", "tests/c");
    for n in 1..=4 {
        let out = job(&exe, n, &[], &[]);
        assert_eq!(out.exit_code, 0, "{}", describe(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout.matches("coll ok").count(),
            n as usize,
            "{}",
            describe(&out)
        );
    }
    let _ = std::fs::remove_file(exe);
}

/// Every C11 type-generic routine, once per type of its table (with and without a context),
/// on globals and the heap; a generic that picked another type's routine does not compile.
#[test]
fn c11_generics_on_every_type_at_1_to_4_pes() {
    let exe = compile_with("c11", "tests/c", &["-std=c11", "-pedantic"]);
    for n in 1..=4 {
        // About a thousand barriers: 14 s at 4 PEs on 2 busy cores.
        let out = job_within(&exe, n, &[], &[], Duration::from_secs(900));
        assert_eq!(out.exit_code, 0, "{}", describe(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout.matches("c11 ok").count(),
            n as usize,
            "{}",
            describe(&out)
        );
    }
    let _ = std::fs::remove_file(exe);
}

/// The OpenSHMEM 1.5 rules weft broke before (zero-byte allocations, large alignments,
/// invalid teams, fair _any waits, shmem_ptr on own objects, heap size).
#[test]
fn conformance_rules_at_1_2_3_4_pes() {
    let exe = compile("conform", "tests/c");
    for n in 1..=4 {
        let out = job(&exe, n, &[], &[]);
        assert_eq!(out.exit_code, 0, "{}", describe(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout.matches("conform ok").count(),
            n as usize,
            "{}",
            describe(&out)
        );
    }
    let _ = std::fs::remove_file(exe);
}

/// split_2d, get_config, team_ptr, ctx_get_team, team contexts, pcontrol, deprecated sync.
#[test]
fn teams_and_contexts_at_1_2_3_4_7_pes() {
    let exe = compile("teams", "tests/c");
    for n in [1, 2, 3, 4, 7] {
        let out = job(&exe, n, &[], &[]);
        assert_eq!(out.exit_code, 0, "{}", describe(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout.matches("teams ok").count(),
            n as usize,
            "{}",
            describe(&out)
        );
    }
    let _ = std::fs::remove_file(exe);
}

/// Globals on one node: atomics, signals, locks, shmem_ptr (mapped: "globals ok (mapped)").
#[test]
fn globals_like_the_heap_at_1_2_3_4_pes() {
    let exe = compile("globals", "tests/c");
    for n in 1..=4 {
        let out = job(&exe, n, &[], &[]);
        assert_eq!(out.exit_code, 0, "{}", describe(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout.matches("globals ok (mapped)").count(),
            n as usize,
            "{}",
            describe(&out)
        );
    }
    // A PE that dies before shmem_init: the job ends, its globals file does not stay
    // (`job` checks /dev/shm).
    let out = job(&exe, 3, &["die"], &[]);
    assert_ne!(out.exit_code, 0, "{}", describe(&out));
    // With WEFT_SYMMETRIC_GLOBALS=cma an atomic on another PE's global is refused, naming
    // the knob.
    let out = job(&exe, 2, &["cma"], &[("WEFT_SYMMETRIC_GLOBALS", "cma")]);
    assert_ne!(out.exit_code, 0, "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("WEFT_SYMMETRIC_GLOBALS"),
        "{}",
        describe(&out)
    );
    let _ = std::fs::remove_file(exe);
}

#[test]
fn concurrent_threads_and_signal_ping_pong_at_1_2_3_pes() {
    let exe = compile("threads", "tests/c");
    for n in 1..=3 {
        let out = job(&exe, n, &[], &[]);
        assert_eq!(out.exit_code, 0, "{}", describe(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout.matches("threads ok").count(),
            n as usize,
            "{}",
            describe(&out)
        );
    }
    let _ = std::fs::remove_file(exe);
}

#[test]
fn lu_example_factorises_and_verifies_at_1_2_3_pes() {
    let exe = compile("lu", "examples");
    for n in 1..=3 {
        let out = job(&exe, n, &["96", "both"], &[]);
        assert_eq!(out.exit_code, 0, "{}", describe(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("verified=yes"), "{}", describe(&out));
    }
    let _ = std::fs::remove_file(exe);
}

#[test]
fn sync_engine_at_2_3_4_7_processes() {
    let exe = compile("sync", "tests/c");
    for n in [2, 3, 4, 7] {
        let out = job(&exe, n, &[], &[]);
        assert_eq!(out.exit_code, 0, "{}", describe(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout.matches("sync ok").count(),
            n as usize,
            "{}",
            describe(&out)
        );
    }
    let _ = std::fs::remove_file(exe);
}

#[test]
fn a_killed_process_ends_the_sync_wait() {
    let exe = compile("sync", "tests/c");
    // The survivors wait in a barrier that never completes: the dead PE ends the job (the
    // engine's death check or the launcher), never the timeout, which only catches a hang.
    let out = job_within(&exe, 3, &["die"], &[], Duration::from_secs(900));
    assert_ne!(out.exit_code, 0, "{}", describe(&out));
    assert_ne!(
        out.exit_code,
        124,
        "ended by the timeout: {}",
        describe(&out)
    );
    assert!(
        !out.failure.as_deref().unwrap_or("").contains("timed out"),
        "{}",
        describe(&out)
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("passed without"),
        "{}",
        describe(&out)
    );
    let _ = std::fs::remove_file(exe);
}

#[test]
fn bad_input_is_a_fatal_error_naming_pe_and_address() {
    let exe = compile("bad", "tests/c");
    for (case, needle) in [
        ("pe", "out of range"),
        ("addr", "not symmetric"),
        ("heap", "WEFT_SYMMETRIC_SIZE"),
    ] {
        let out = job(&exe, 2, &[case], &[]);
        assert_ne!(out.exit_code, 0, "{case}: {}", describe(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{case}: {}", describe(&out));
        assert!(err.contains("PE "), "{case}: {}", describe(&out));
        assert!(!String::from_utf8_lossy(&out.stdout).contains("not reached"));
    }
    let _ = std::fs::remove_file(exe);
}

/// OpenSHMEM's own variables: `SHMEM_SYMMETRIC_SIZE` sizes the heap (a fraction allowed, and
/// over `WEFT_SYMMETRIC_SIZE`), `SHMEM_INFO` prints the version and the variables once (PE
/// 0), and a bad size is an error at init naming the variable.
#[test]
fn shmem_environment_variables_size_the_heap_and_print_info() {
    let exe = compile("bad", "tests/c");
    let env = [
        ("SHMEM_SYMMETRIC_SIZE", "1.5M"),
        ("WEFT_SYMMETRIC_SIZE", "1G"),
        ("SHMEM_INFO", "yes"),
    ];
    // bad's "heap" case allocates 1 TiB: the error names the heap's size.
    let out = job(&exe, 2, &["heap"], &env);
    assert_ne!(out.exit_code, 0, "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("do not fit in the 1572864 bytes"),
        "{}",
        describe(&out)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.matches("OpenSHMEM 1.5, weft").count(),
        1,
        "{}",
        describe(&out)
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("SHMEM_SYMMETRIC_SIZE") && l.contains("1.5M")),
        "{}",
        describe(&out)
    );
    let out = job(&exe, 1, &["heap"], &[("SHMEM_SYMMETRIC_SIZE", "lots")]);
    assert_ne!(out.exit_code, 0, "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("SHMEM_SYMMETRIC_SIZE"),
        "{}",
        describe(&out)
    );
    let _ = std::fs::remove_file(exe);
}

/// The functions a header declares (not its inline ones), from the preprocessor's output:
/// every `name(` or `(name)(` that ends a declaration.
fn declared_functions(header: &str, std: &str) -> std::collections::BTreeSet<String> {
    let out = Command::new("cc")
        .args([std, "-E", "-P", "-I"])
        .arg(crate_dir().join("include"))
        .arg("-x")
        .arg("c")
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .unwrap()
                .write_all(format!("#include <{header}>\n").as_bytes())?;
            c.wait_with_output()
        })
        .expect("run cc -E");
    assert!(out.status.success(), "cc -E {header}");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    // Drop the bodies of inline functions.
    while let Some(at) = text.find("static inline") {
        let open = at + text[at..].find('{').unwrap();
        let mut depth = 0;
        let mut end = open;
        for (i, c) in text[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        text.replace_range(at..end, ";");
    }
    let mut names = std::collections::BTreeSet::new();
    for decl in text.split(';') {
        let decl = decl.trim();
        if decl.starts_with("typedef") || !decl.ends_with(')') {
            continue;
        }
        let Some(open) = decl.find('(') else { continue };
        let is_ident = |c: char| c.is_alphanumeric() || c == '_';
        let close = open + decl[open..].find(')').unwrap();
        let inner = decl[open + 1..close].trim().trim_start_matches('*');
        let name = if !inner.is_empty()
            && inner.chars().all(is_ident)
            && decl[close + 1..].trim_start().starts_with('(')
        {
            // `void (name)(...)`: the name in the first parentheses.
            inner
        } else {
            decl[..open]
                .trim_end()
                .rsplit(|c: char| !is_ident(c))
                .next()
                .unwrap()
        };
        if !name.is_empty() && !name.starts_with("__") {
            names.insert(name.to_string());
        }
    }
    names
}

/// Every function shmem.h, pshmem.h and weft/sync.h declare is exported by libshmem.so (the
/// headers cannot promise what the library lacks), with and without C11.
#[test]
fn every_declared_function_is_exported() {
    let nm = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(lib_dir().join("libshmem.so"))
        .output()
        .expect("run nm");
    assert!(nm.status.success());
    let exported: std::collections::HashSet<String> = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last().map(str::to_owned))
        .collect();
    for std in ["-std=c99", "-std=c11"] {
        let mut declared = 0;
        for header in ["shmem.h", "pshmem.h", "weft/sync.h"] {
            for name in declared_functions(header, std) {
                declared += 1;
                assert!(
                    exported.contains(&name),
                    "{header} ({std}) declares {name}, libshmem.so does not export it"
                );
            }
        }
        assert!(
            declared > 3000,
            "only {declared} declarations parsed ({std})"
        );
    }
}

/// The prototypes of every routine the library defines (written by build.rs from the same
/// tables as the routines) agree with the headers' declarations: compiled together, a
/// different parameter or return type is a conflicting declaration; and each header declares
/// exactly the routines the library defines under its names.
#[test]
fn headers_declare_what_the_library_defines_with_the_same_types() {
    let prototypes = include_str!(concat!(env!("OUT_DIR"), "/prototypes.h"));
    let dir = std::env::temp_dir().join(format!("weft-shmem-protos-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("protos.c");
    std::fs::write(&file, format!("#include <pshmem.h>\n{prototypes}")).unwrap();
    for std in ["-std=c99", "-std=c11"] {
        let out = Command::new("cc")
            .args([std, "-Wall", "-Werror", "-fsyntax-only", "-I"])
            .arg(crate_dir().join("include"))
            .arg(&file)
            .output()
            .expect("run cc");
        assert!(
            out.status.success(),
            "{std}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    let defined: std::collections::BTreeSet<String> = prototypes
        .lines()
        .filter_map(|l| {
            let open = l.find("(")?;
            let close = open + l[open..].find(')')?;
            Some(l[open + 1..close].to_string())
        })
        .collect();
    assert_eq!(
        defined.len(),
        weft_shmem_exports(),
        "one prototype per routine"
    );
    let declared: std::collections::BTreeSet<String> = declared_functions("pshmem.h", "-std=c99")
        .into_iter()
        .collect();
    let missing: Vec<_> = defined.difference(&declared).collect();
    assert!(missing.is_empty(), "defined, not declared: {missing:?}");
    let extra: Vec<_> = declared.difference(&defined).collect();
    assert!(extra.is_empty(), "declared, not defined: {extra:?}");
}

fn weft_shmem_exports() -> usize {
    shmem::EXPORTED_ROUTINES
}

#[test]
fn rma_across_two_nodes_at_2_and_4_pes() {
    let Some(weft) = skip_without_weft() else {
        return;
    };
    let exe = compile("rma_nodes", "tests/c");
    for hosts in ["a:1,b:1", "a:2,b:2"] {
        across_nodes(&weft, &exe, hosts, &[], "rma_nodes ok");
    }
    let _ = std::fs::remove_file(exe);
}

#[test]
fn collectives_and_signal_forms_across_two_nodes() {
    let Some(weft) = skip_without_weft() else {
        return;
    };
    let exe = compile("coll", "tests/c");
    for hosts in ["a:1,b:1", "a:2,b:2", "a:1,b:2"] {
        across_nodes(&weft, &exe, hosts, &[], "coll ok");
    }
    let _ = std::fs::remove_file(exe);
}

#[test]
fn globals_across_two_nodes() {
    let Some(weft) = skip_without_weft() else {
        return;
    };
    let exe = compile("globals", "tests/c");
    for hosts in ["a:1,b:1", "a:2,b:2"] {
        across_nodes(&weft, &exe, hosts, &[], "globals ok");
    }
    let _ = std::fs::remove_file(exe);
}

#[test]
fn job_wide_sync_engine_across_two_and_three_nodes() {
    let Some(weft) = skip_without_weft() else {
        return;
    };
    let exe = compile("sync_job", "tests/c");
    for (hosts, nodes) in [("a:1,b:1", "2"), ("a:2,b:2", "2"), ("a:1,b:2,c:1", "3")] {
        across_nodes(&weft, &exe, hosts, &[nodes], "sync_job ok");
    }
    // One node: the job-wide calls are the node's.
    let out = job(&exe, 3, &["1"], &[]);
    assert_eq!(out.exit_code, 0, "{}", describe(&out));
    let _ = std::fs::remove_file(exe);
}
