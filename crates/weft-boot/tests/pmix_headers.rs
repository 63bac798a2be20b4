//! The PMIx declarations weft writes by hand against the installed `pmix_common.h`: a C
//! program compiled with the headers (pkg-config `pmix`, Debian's libpmix-dev) prints every
//! size, offset and constant weft relies on, and each must equal weft's. Needs a C compiler
//! and libpmix-dev, so it is ignored by default; CI runs it with the launcher tests
//! (`cargo test -p weft-boot --test pmix_headers -- --include-ignored`). Without the headers
//! it fails, saying so; it never skips.

use std::process::Command;

#[test]
#[ignore = "needs libpmix-dev and cc (CI: scripts/ci-launchers.sh)"]
fn pmix_layout_matches_the_installed_headers() {
    let cflags = Command::new("pkg-config")
        .args(["--cflags", "pmix"])
        .output()
        .expect("pkg-config: install pkg-config and libpmix-dev");
    assert!(
        cflags.status.success(),
        "pkg-config --cflags pmix failed (install libpmix-dev): {}",
        String::from_utf8_lossy(&cflags.stderr)
    );
    let layout = weft_boot::pmix::layout();
    let mut c = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include <pmix_common.h>\nint main(void) {\n",
    );
    for (name, _) in &layout {
        c.push_str(&format!(
            "    printf(\"%s=%lu\\n\", \"{name}\", (unsigned long)({name}));\n"
        ));
    }
    c.push_str("    return 0;\n}\n");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("pmix-headers");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("layout.c");
    let exe = dir.join("layout");
    std::fs::write(&src, c).unwrap();
    let flags = String::from_utf8(cflags.stdout).unwrap();
    let cc = Command::new("cc")
        .args(flags.split_whitespace())
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("cc");
    assert!(
        cc.status.success(),
        "compiling against pmix_common.h:\n{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for (name, ours) in &layout {
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("{name} missing from {text}"));
        assert_eq!(
            line.parse::<usize>().unwrap(),
            *ours,
            "{name}: the headers say {line}, weft declares {ours}"
        );
    }
}
