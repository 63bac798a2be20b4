//! Build script of the weft command: embeds the C headers of weft-mpi and weft-shmem (every
//! file under their `include/` directories) and the wrapper scripts, so `weft install`
//! writes them from the binary alone, without the source tree.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut table = String::from("/// (path under include/, bytes) of every installed header.\npub static HEADERS: &[(&str, &[u8])] = &[\n");
    for crate_dir in ["weft-mpi", "weft-shmem"] {
        let inc = root.join(crate_dir).join("include");
        let mut files = Vec::new();
        files_under(&inc, &mut files);
        for f in files {
            println!("cargo:rerun-if-changed={}", f.display());
            let rel = f
                .strip_prefix(&inc)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let abs = f.canonicalize().unwrap();
            writeln!(
                table,
                "    ({rel:?}, include_bytes!({:?})),",
                abs.display().to_string()
            )
            .unwrap();
        }
    }
    table.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("headers.rs");
    std::fs::write(out, table).unwrap();
}
