//! Build script of weft-mpi: sets the shared library's soname (`libmpi_abi.so.1`, as the
//! standard ABI names it) and generates, from `abi_functions.txt`, one exported function for
//! every standard ABI name that `src/` does not define. Those report
//! MPI_ERR_UNSUPPORTED_OPERATION through the error handler. It also emits the list of names
//! that are implemented, for `weft info --mpi`. A function counts as defined when a line
//! holds `extern "C" fn MPI_Name`, or is a row `MPI_Name, ...;` of a macro table (its bare
//! `MPI_` identifiers).

#![allow(
    clippy::disallowed_methods,
    reason = "a build script's inputs are the variables cargo sets"
)]

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpi_abi.so.1");
    println!("cargo:rerun-if-changed=abi_functions.txt");
    println!("cargo:rerun-if-changed=src");
    let names = std::fs::read_to_string("abi_functions.txt").expect("read abi_functions.txt");
    let wanted: BTreeSet<&str> = names
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let mut defined = BTreeSet::new();
    for entry in std::fs::read_dir("src").expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.extension().is_some_and(|e| e == "rs") {
            // Every file, not only the directory: a directory's time changes only when files
            // are added or removed, and an edit can add or remove a function.
            println!("cargo:rerun-if-changed={}", path.display());
            let text = std::fs::read_to_string(&path).expect("read source");
            for line in text.lines() {
                // A row of a macro table that generates functions: a line of comma-separated
                // items ending in `;` whose bare `MPI_` identifiers are function names.
                let t = line.trim();
                if t.starts_with("MPI_") && t.ends_with(';') {
                    for item in t.trim_end_matches(';').split(',') {
                        let item = item.trim();
                        if item.starts_with("MPI_")
                            && item.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                        {
                            defined.insert(item.to_string());
                        }
                    }
                }
                if let Some(pos) = line.find("extern \"C\" fn MPI_") {
                    let rest = &line[pos + "extern \"C\" fn ".len()..];
                    let end = rest
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(rest.len());
                    defined.insert(rest[..end].to_string());
                }
            }
        }
    }
    let mut out = String::new();
    out.push_str("/// Standard ABI functions weft implements, sorted.\n");
    out.push_str("pub static IMPLEMENTED: &[&str] = &[\n");
    for n in wanted.iter().filter(|n| defined.contains(**n)) {
        writeln!(out, "    \"{n}\",").unwrap();
    }
    out.push_str("];\n\n/// Standard ABI functions exported but not implemented yet, sorted.\n");
    out.push_str("pub static UNSUPPORTED: &[&str] = &[\n");
    for n in wanted.iter().filter(|n| !defined.contains(**n)) {
        writeln!(out, "    \"{n}\",").unwrap();
    }
    out.push_str("];\n\n");
    // Each stub reports through the handler MPI names for its function (MPI-4.1 §9.3): the
    // handler of its communicator argument (read from the C prototype: the stub declares the
    // arguments up to it, all register- or stack-word sized), MPI_ERRORS_RETURN for file
    // functions (the default of files, and of MPI_FILE_NULL), else MPI_COMM_WORLD's.
    println!("cargo:rerun-if-changed=include/mpi_proto.h");
    let protos = std::fs::read_to_string("include/mpi_proto.h").expect("read mpi_proto.h");
    for n in wanted.iter().filter(|n| !defined.contains(**n)) {
        let comm_arg = comm_argument(&protos, n);
        let body = if n.starts_with("MPI_File_") || *n == "MPI_Register_datarep" {
            format!("crate::error::unsupported_returning(\"{n}\")")
        } else if let Some(k) = comm_arg {
            format!("crate::error::unsupported_on(_a{k}, \"{n}\")")
        } else {
            format!("crate::error::unsupported(\"{n}\")")
        };
        let params: Vec<String> = (0..comm_arg.map_or(0, |k| k + 1))
            .map(|i| format!("_a{i}: usize"))
            .collect();
        writeln!(
            out,
            "/// Not implemented by weft yet: reports MPI_ERR_UNSUPPORTED_OPERATION.\n\
             #[no_mangle]\npub(crate) extern \"C\" fn {n}({}) -> std::os::raw::c_int {{\n    \
             let _entered = crate::threads::enter();\n    {body}\n}}\n",
            params.join(", ")
        )
        .unwrap();
    }
    let dest = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("abi_stubs.rs");
    std::fs::write(dest, out).expect("write abi_stubs.rs");
}

/// The position of the first `MPI_Comm` argument (by value) of `name`'s C prototype.
fn comm_argument(protos: &str, name: &str) -> Option<usize> {
    let head = format!(" {name}(");
    let line = protos.lines().find(|l| l.contains(&head))?;
    let args = &line[line.find(&head)? + head.len()..line.rfind(')')?];
    args.split(',')
        .position(|a| a.trim().starts_with("MPI_Comm ") && !a.contains('*'))
}
