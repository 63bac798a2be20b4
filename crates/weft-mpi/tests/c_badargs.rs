//! The bad-argument table of `docs/mpi-bad-arguments.md`, asserted row by row: the C program
//! `itest/c/badargs.c` calls one MPI function per row with one bad argument (with
//! MPI_ERRORS_RETURN, and a spawn on a communicator that returns while MPI_COMM_WORLD's
//! handler is still fatal) and prints the class it got; every row's "weft"
//! column must be what the program printed, and equal to the "standard" column.

use std::collections::BTreeMap;
use std::path::Path;

mod common;

/// The table's rows: id -> (weft's class, the standard's class).
fn table() -> BTreeMap<String, (String, String)> {
    let text = std::fs::read_to_string(common::repo_root().join("docs/mpi-bad-arguments.md"))
        .expect("docs/mpi-bad-arguments.md");
    let mut rows = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 5, "a row has 5 cells: {line}");
        let id = cells[0].trim_matches('`').to_owned();
        let weft = cells[3].trim_matches('`').to_owned();
        let standard = cells[4].trim_matches('`').to_owned();
        assert!(
            rows.insert(id.clone(), (weft, standard)).is_none(),
            "row {id} twice"
        );
    }
    rows
}

#[test]
fn every_bad_argument_returns_the_class_of_the_table() {
    let prefix = common::shared_prefix("mpi-prefix");
    let prog = common::build_c(prefix, "badargs");
    let out = common::run_c(Path::new(&prog), 2, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.exit_code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("ALL CASES DONE"), "{stdout}\n{stderr}");
    let got: BTreeMap<String, String> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("CASE "))
        .map(|l| {
            let (id, class) = l.split_once(' ').expect("CASE id class");
            (id.to_owned(), class.to_owned())
        })
        .collect();
    let rows = table();
    assert!(
        rows.len() >= 70,
        "the table has {} rows (at least 70)",
        rows.len()
    );
    let mut wrong = Vec::new();
    for (id, (weft, standard)) in &rows {
        match got.get(id) {
            None => wrong.push(format!("{id}: not run by badargs.c")),
            Some(c) if c != weft => {
                wrong.push(format!("{id}: weft returns {c}, the table says {weft}"))
            }
            Some(_) if weft != standard => wrong.push(format!(
                "{id}: weft returns {weft}, the standard asks for {standard}"
            )),
            Some(_) => {}
        }
    }
    for id in got.keys().filter(|id| !rows.contains_key(*id)) {
        wrong.push(format!("{id}: run by badargs.c but not in the table"));
    }
    assert!(
        wrong.is_empty(),
        "{}\n\noutput:\n{stdout}",
        wrong.join("\n")
    );
}
