//! `weft aggd` as a real process: communicators get type II trees until the spine's
//! entries run out, then type I with the reason; release (and a connection's end) gives the
//! entries back; a wrong secret, bytes that are no handshake, a stranger holding a socket
//! open and a garbage frame are refused without disturbing an authenticated client; a key
//! file others may read is refused.

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use weft::agg::{Client, Grant};

/// Two leaves under one spine: node0 and node1 on leaf0, node2 and node3 on leaf1.
const FABRIC: &str = r#"
switches = [{ name = "spine" }, { name = "leaf0" }, { name = "leaf1" }]
links = [["spine", "leaf0"], ["spine", "leaf1"]]
endpoints = [
  { name = "node0", switch = "leaf0" }, { name = "node1", switch = "leaf0" },
  { name = "node2", switch = "leaf1" }, { name = "node3", switch = "leaf1" },
]
"#;
const KEY: &[u8] = b"aggd-test-secret-0123456789";
const WAIT: Duration = Duration::from_secs(120);

/// A scratch directory under the target directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("aggd-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn write(&self, name: &str, text: &str, mode: u32) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running manager, killed and reaped on drop.
struct Aggd {
    child: Child,
    addr: String,
}

impl Aggd {
    fn start(fabric: &Path, key: &Path, entries: u32) -> Aggd {
        let mut child = Command::new(env!("CARGO_BIN_EXE_weft"))
            .arg("aggd")
            .arg("--fabric")
            .arg(fabric)
            .arg("--key-file")
            .arg(key)
            .args(["--listen", "127.0.0.1:0", "--entries", &entries.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("weft aggd: listening on ")
            .unwrap_or_else(|| panic!("first line: {line:?}"))
            .to_string();
        Aggd { child, addr }
    }

    fn client(&self) -> Client {
        Client::connect(&self.addr, KEY, WAIT).unwrap()
    }
}

impl Drop for Aggd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn setup(name: &str, entries: u32) -> (Scratch, Aggd) {
    let s = Scratch::new(name);
    let fabric = s.write("fabric.toml", FABRIC, 0o644);
    let key = s.write("key", &weft_core::auth::encode_hex(KEY), 0o600);
    let d = Aggd::start(&fabric, &key, entries);
    (s, d)
}

fn hosts(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn is_type2(g: &Grant) -> bool {
    matches!(g, Grant::Type2(_))
}

#[test]
fn trees_until_the_spine_is_full_then_type1_then_release_gives_back() {
    let (_s, d) = setup("full", 2);
    let mut c = d.client();
    let all = hosts(&["node0", "node1", "node2", "node3"]);
    // Two communicators over both leaves take the spine's two entries.
    for comm in ["a", "b"] {
        let g = c.allocate(comm, &all).unwrap();
        let Grant::Type2(t) = &g else {
            panic!("{comm}: {g:?}")
        };
        assert_eq!(t.switches[0].name, "spine");
        assert_eq!(t.cost, 3);
        assert_eq!(t.member_switch.len(), 4);
    }
    // Spine and leaves are full: the third communicator falls back, saying why.
    match c.allocate("c", &all).unwrap() {
        Grant::Type1 { reason } => {
            assert!(reason.contains("2 entries per switch"), "{reason}")
        }
        g => panic!("c: {g:?}"),
    }
    let st = c.status().unwrap();
    assert_eq!((st.trees, st.entries_used, st.full_switches), (2, 6, 3));
    // Releasing one gives its entries back: the next request gets type II again.
    assert!(c.release("a").unwrap());
    assert!(!c.release("a").unwrap(), "a second release holds nothing");
    assert!(is_type2(&c.allocate("c", &all).unwrap()));
    // A name already holding a tree is refused by name.
    let e = c.allocate("c", &all).unwrap_err();
    assert!(e.to_string().contains("already holds"), "{e}");
    // Another connection's trees are its own: it cannot release this one's.
    let mut other = d.client();
    assert!(!other.release("b").unwrap());
    assert_eq!(other.status().unwrap().trees, 2);
}

#[test]
fn a_connection_that_ends_gives_its_entries_back() {
    let (_s, d) = setup("lease", 1);
    let mut watcher = d.client();
    {
        let mut job = d.client();
        let all = hosts(&["node0", "node1", "node2", "node3"]);
        assert!(is_type2(&job.allocate("w", &all).unwrap()));
        assert_eq!(watcher.status().unwrap().entries_used, 3);
        // With every switch full, another job falls back.
        assert!(!is_type2(
            &watcher.allocate("x", &hosts(&["node1", "node3"])).unwrap()
        ));
    }
    // The job's connection closed: the manager releases its tree (its connection thread
    // does it once it sees the end; wait for that, bounded only to catch a hang).
    let start = Instant::now();
    while watcher.status().unwrap().entries_used != 0 {
        assert!(start.elapsed() < WAIT, "entries never released");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(is_type2(
        &watcher.allocate("x", &hosts(&["node1", "node3"])).unwrap()
    ));
}

#[test]
fn strangers_and_garbage_are_refused_without_disturbing_others() {
    let (_s, d) = setup("refuse", 4);
    let mut good = d.client();
    assert!(is_type2(
        &good.allocate("g", &hosts(&["node0", "node3"])).unwrap()
    ));
    // A stranger holds a socket open without a word.
    let _silent = TcpStream::connect(&d.addr).unwrap();
    // Wrong secret: refused as such.
    let e = Client::connect(&d.addr, b"not-the-secret-at-all-0000", WAIT)
        .err()
        .expect("a wrong secret must be refused");
    assert_eq!(e.kind(), weft_core::ErrorKind::Auth, "{e}");
    // Bytes that are no handshake: the manager answers "refused" and closes.
    {
        let mut s = TcpStream::connect(&d.addr).unwrap();
        s.set_read_timeout(Some(WAIT)).unwrap();
        let mut greeting = [0u8; 8];
        s.read_exact(&mut greeting).unwrap();
        assert_eq!(&greeting, b"WEFTAGGD");
        let junk = [b'G'; 8 + 1 + weft_core::auth::NONCE_BYTES + weft_core::auth::PROOF_BYTES];
        let _ = s.write_all(&junk);
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        assert_eq!(rest.last(), Some(&0u8), "refusal byte: {rest:?}");
    }
    // An authenticated client that sends a frame too long, or one that is not JSON, gets
    // an error reply and is dropped.
    for (what, frame) in [
        ("oversize", (u32::MAX).to_le_bytes().to_vec()),
        ("garbage", {
            let mut f = 5u32.to_le_bytes().to_vec();
            f.extend_from_slice(b"hello");
            f
        }),
    ] {
        let mut s = TcpStream::connect(&d.addr).unwrap();
        s.set_read_timeout(Some(WAIT)).unwrap();
        weft::agg::client_handshake(&mut s, KEY, &d.addr).unwrap();
        s.write_all(&frame).unwrap();
        let reply = weft::agg::read_frame(&mut s)
            .unwrap()
            .expect("an error reply");
        let text = String::from_utf8_lossy(&reply).into_owned();
        assert!(text.contains("\"reply\":\"error\""), "{what}: {text}");
        assert_eq!(
            weft::agg::read_frame(&mut s).unwrap(),
            None,
            "{what}: then closed"
        );
    }
    // The good client is undisturbed and its tree is still held.
    let st = good.status().unwrap();
    assert_eq!(st.trees, 1);
    assert!(good.release("g").unwrap());
}

#[test]
fn a_key_file_others_may_read_is_refused() {
    let s = Scratch::new("mode");
    let fabric = s.write("fabric.toml", FABRIC, 0o644);
    let key = s.write("key", &weft_core::auth::encode_hex(KEY), 0o644);
    let out = Command::new(env!("CARGO_BIN_EXE_weft"))
        .arg("aggd")
        .arg("--fabric")
        .arg(&fabric)
        .arg("--key-file")
        .arg(&key)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("chmod 600"), "{err}");
}

#[test]
fn info_explain_says_which_tree_hosts_would_get_and_why() {
    let (s, d) = setup("explain", 1);
    let key = s.0.join("key");
    let explain = |hosts: &str, aggd: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_weft"))
            .args(["info", "--explain", "bcast", "-n", "2", "--ppn", "1"])
            .args(["--hosts", hosts])
            .env("WEFT_AGGD", aggd)
            .env("WEFT_AGGD_KEY_FILE", &key)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines()
            .find(|l| l.starts_with("aggregation tree: "))
            .unwrap_or_else(|| panic!("{text}"))
            .to_string()
    };
    let line = explain("node0,node2", &d.addr);
    assert!(line.contains("type II") && line.contains("spine"), "{line}");
    // It asked, described and released: a job holding every switch makes it fall back.
    let mut job = d.client();
    assert_eq!(job.status().unwrap().entries_used, 0);
    assert!(is_type2(
        &job.allocate("all", &hosts(&["node0", "node1", "node2", "node3"]))
            .unwrap()
    ));
    let line = explain("node0,node2", &d.addr);
    assert!(
        line.contains("type I (host trees)") && line.contains("1 entries per switch"),
        "{line}"
    );
    let line = explain("node0,elsewhere", &d.addr);
    assert!(line.contains("\"elsewhere\" is not an endpoint"), "{line}");
}
