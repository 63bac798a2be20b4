//! A stranger cannot stop a multi-host job from starting: while it holds many silent
//! connections to the launcher's agent port, a slow launcher template (ssh-like, 2 s) starts
//! the agents, and the job still runs. The template is a script that records its arguments
//! (which name the agent port) and sleeps before it starts the agent; the test opens the
//! silent connections as soon as the port is known, so they are all there first. Hosts are
//! faked on this machine (the template runs every host's agent here; no root needed).

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const WEFT: &str = env!("CARGO_BIN_EXE_weft");
const STRANGERS: usize = 32;

fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!("weft-strangers-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The agent port's addresses from the recorded template arguments (`--connect a,b,...`).
fn agent_addresses(args: &str) -> Vec<SocketAddr> {
    let words: Vec<&str> = args.split_whitespace().collect();
    let i = words
        .iter()
        .position(|w| *w == "--connect")
        .expect("--connect");
    words[i + 1]
        .split(',')
        .map(|a| a.parse().unwrap())
        .collect()
}

#[test]
fn silent_strangers_on_the_agent_port_do_not_stop_a_slow_start() {
    let dir = scratch();
    let record = dir.join("args");
    let go = dir.join("go");
    let template = dir.join("slow-ssh");
    // The templates start their agents only once the test has connected every stranger
    // (it creates `go`): the agents always come after the strangers, whatever the load.
    std::fs::write(
        &template,
        format!(
            "#!/bin/sh\necho \"$@\" > {rec}.$$ && mv {rec}.$$ {rec}\n\
             until [ -e {go} ]; do sleep 0.01; done\nexec \"$@\"\n",
            rec = record.display(),
            go = go.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&template, std::fs::Permissions::from_mode(0o755)).unwrap();

    let job = Command::new(WEFT)
        .args([
            "run",
            "--hosts",
            "a:1,b:1",
            "--timeout",
            "600",
            "--launcher",
        ])
        .arg(&template)
        .args(["/bin/sh", "-c", "echo rank $WEFT_RANK ran"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first template records the port; the strangers connect (from 127.0.0.1, like
    // the agents) and say nothing while the templates wait.
    let deadline = Instant::now() + Duration::from_secs(120);
    let args = loop {
        if let Ok(a) = std::fs::read_to_string(&record) {
            break a;
        }
        assert!(Instant::now() < deadline, "the template never ran");
        std::thread::sleep(Duration::from_millis(10));
    };
    let addr = *agent_addresses(&args)
        .iter()
        .find(|a| a.ip().is_loopback())
        .unwrap_or(&agent_addresses(&args)[0]);
    let strangers: Vec<TcpStream> = (0..STRANGERS)
        .filter_map(|_| TcpStream::connect(addr).ok())
        .collect();
    assert_eq!(
        strangers.len(),
        STRANGERS,
        "the strangers could not connect"
    );
    std::fs::write(&go, b"").unwrap();

    let out = job.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let mut ran: Vec<&str> = stdout.lines().filter(|l| l.ends_with(" ran")).collect();
    ran.sort();
    assert_eq!(ran, ["rank 0 ran", "rank 1 ran"], "{stdout}\n{stderr}");
    // The strangers pushed out were told why, and the job's output says it (throttled).
    assert!(
        stderr.contains("too many pending connections from 127.0.0.1"),
        "{stderr}"
    );
    // A stranger still connected has been told it is refused (or is still pending).
    let mut told = 0;
    for mut s in strangers {
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let mut b = Vec::new();
        let _ = s.read_to_end(&mut b);
        if b.windows(8).any(|w| w == b"too many") {
            told += 1;
        }
    }
    assert!(told > 0, "no stranger was told why it was dropped");
    std::fs::remove_dir_all(&dir).unwrap();
}
