//! The TCP store end to end on loopback: many concurrent clients, blocking gets that do not
//! hold up others, and every kind of unauthenticated or malformed connection refused and
//! logged while the store keeps serving.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use weft_boot::auth::new_secret;
use weft_boot::{
    client_from_vars, ServerEvent, Store, TcpStoreClient, TcpStoreServer, REFUSALS_REPORTED,
    REFUSAL_REPORT_EVERY,
};
use weft_core::ErrorKind;

fn server() -> (TcpStoreServer, Vec<u8>, Arc<Mutex<Vec<ServerEvent>>>) {
    let secret = new_secret().unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let s = TcpStoreServer::bind_with_events(
        "127.0.0.1:0",
        &secret,
        Arc::new(move |e| sink.lock().unwrap().push(e)),
    )
    .unwrap();
    (s, secret, events)
}

/// Waits until `pred` holds for the recorded events (they arrive from server threads).
fn wait_events(
    events: &Mutex<Vec<ServerEvent>>,
    pred: impl Fn(&[ServerEvent]) -> bool,
) -> Vec<ServerEvent> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ev = events.lock().unwrap().clone();
        if pred(&ev) || Instant::now() > deadline {
            return ev;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn refusals(ev: &[ServerEvent]) -> Vec<String> {
    ev.iter()
        .filter(|e| matches!(e, ServerEvent::Refused { .. }))
        .map(|e| e.to_string())
        .collect()
}

#[test]
fn ranks_exchange_values_and_meet_at_barriers() {
    let (srv, secret, events) = server();
    let addr = srv.local_addr().to_string();
    for n in [1u32, 2, 3, 4, 7] {
        let threads: Vec<_> = (0..n)
            .map(|r| {
                let addr = addr.clone();
                let secret = secret.clone();
                std::thread::spawn(move || {
                    let c = TcpStoreClient::connect(&addr, &secret)
                        .unwrap()
                        .with_rank(r);
                    c.put(&format!("n{n}/addr/{r}"), format!("rank{r}").as_bytes())
                        .unwrap();
                    c.barrier(&format!("n{n}/init"), n, Duration::from_secs(10))
                        .unwrap();
                    for p in 0..n {
                        let v = c.get(&format!("n{n}/addr/{p}"), Duration::ZERO).unwrap();
                        assert_eq!(v, format!("rank{p}").as_bytes());
                    }
                    // Reuse of the same barrier name.
                    c.barrier(&format!("n{n}/init"), n, Duration::from_secs(10))
                        .unwrap();
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
    assert!(
        events.lock().unwrap().is_empty(),
        "{:?}",
        events.lock().unwrap()
    );
}

#[test]
fn a_blocked_get_does_not_hold_up_other_clients() {
    let (srv, secret, _events) = server();
    let addr = srv.local_addr().to_string();
    let waiter = {
        let (addr, secret) = (addr.clone(), secret.clone());
        std::thread::spawn(move || {
            let c = TcpStoreClient::connect(&addr, &secret).unwrap();
            // Only the put below ends this get: its own timeout is a hang catcher.
            c.get("late", Duration::from_secs(300))
        })
    };
    // Most often the get waits in the server by now; when it does not yet, the requests
    // below only prove less (nothing here depends on the pause to pass).
    std::thread::sleep(Duration::from_millis(100));
    let c = TcpStoreClient::connect(&addr, &secret).unwrap();
    for i in 0..50 {
        c.put(&format!("k{i}"), &[i as u8]).unwrap();
        assert_eq!(c.get(&format!("k{i}"), Duration::ZERO).unwrap(), [i as u8]);
    }
    // Served while the get still waits: the get can only end by the put of "late" (or its
    // 300 s), so 100 requests held up behind it would find it finished.
    assert!(
        !waiter.is_finished(),
        "the waiting get ended before \"late\" was put: {:?}",
        waiter.join()
    );
    c.put("late", b"now").unwrap();
    let v = waiter
        .join()
        .unwrap()
        .expect("the put of \"late\" ends the get");
    assert_eq!(v, b"now");
    // A get that times out says so and names the key.
    let e = c.get("never", Duration::from_millis(50)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout);
    assert!(e.message().contains("\"never\""), "{e}");
    // The connection stays usable after a server-side timeout.
    assert_eq!(c.get("late", Duration::ZERO).unwrap(), b"now");
}

#[test]
fn wrong_secret_is_refused_and_logged() {
    let (srv, secret, events) = server();
    let addr = srv.local_addr().to_string();
    let wrong = new_secret().unwrap();
    let e = TcpStoreClient::connect(&addr, &wrong).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Auth, "{e}");
    assert!(e.message().contains("refused"), "{e}");
    let ev = wait_events(&events, |ev| !refusals(ev).is_empty());
    let lines = refusals(&ev);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("weft: bootstrap: refused connection from 127.0.0.1:")
            && lines[0].ends_with("wrong job secret"),
        "{}",
        lines[0]
    );
    // The right secret still works afterwards.
    let c = TcpStoreClient::connect(&addr, &secret).unwrap();
    c.put("a", b"b").unwrap();
}

#[test]
fn no_secret_garbage_and_short_proofs_are_refused() {
    let (srv, secret, events) = server();
    let addr = srv.local_addr();
    // 1. Connects, reads the greeting, sends nothing, closes.
    {
        let mut s = TcpStream::connect(addr).unwrap();
        let mut hello = [0u8; 41];
        s.read_exact(&mut hello).unwrap();
        assert_eq!(&hello[..8], b"WEFTBOOT");
    }
    // 2. Sends garbage as long as a proof: refused, then closed by the server.
    {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(&[0xAB; 73]).unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        // Greeting, then a single refusal byte, then end of stream.
        assert_eq!(rest.len(), 42, "{rest:?}");
        assert_eq!(rest[41], 0);
    }
    // 3. An HTTP request, then close: fewer bytes than a proof.
    {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
    }
    // 4. A frame-shaped oversized length where the proof belongs, then lots of bytes.
    {
        let mut s = TcpStream::connect(addr).unwrap();
        let mut junk = u32::MAX.to_be_bytes().to_vec();
        junk.extend_from_slice(&[7u8; 4096]);
        let _ = s.write_all(&junk);
    }
    let ev = wait_events(&events, |ev| refusals(ev).len() >= 4);
    let lines = refusals(&ev).join("\n");
    assert_eq!(refusals(&ev).len(), 4, "{lines}");
    assert!(
        lines.contains("closed without proving the job secret (no secret)"),
        "{lines}"
    );
    assert!(lines.contains("bad greeting"), "{lines}");
    assert!(lines.contains("sent 18 bytes then closed"), "{lines}");
    // Nothing refused was interpreted: the store is still empty and serving.
    let c = TcpStoreClient::connect(&addr.to_string(), &secret).unwrap();
    assert_eq!(
        c.get("anything", Duration::ZERO).unwrap_err().kind(),
        ErrorKind::Timeout
    );
    c.put("ok", b"1").unwrap();
    assert_eq!(c.get("ok", Duration::ZERO).unwrap(), b"1");
}

#[test]
fn a_silent_connection_is_refused_after_the_handshake_timeout() {
    let (srv, _secret, events) = server();
    srv.set_handshake_timeout(Duration::from_millis(200));
    let t0 = Instant::now();
    let mut s = TcpStream::connect(srv.local_addr()).unwrap();
    // A hang catcher: the server closes after its 200 ms.
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let mut got = Vec::new();
    // The server greets, waits, then closes on us (end of file, not our read timeout).
    let end = s.read_to_end(&mut got);
    assert!(
        end.is_ok(),
        "the server never closed the silent connection: {end:?}"
    );
    assert_eq!(got.len(), 41);
    // Never before its time; how much later depends on the machine's load.
    let waited = t0.elapsed();
    assert!(waited >= Duration::from_millis(200), "{waited:?}");
    let ev = wait_events(&events, |ev| !refusals(ev).is_empty());
    let lines = refusals(&ev);
    assert!(
        lines[0].ends_with("sent no proof of the job secret in time"),
        "{lines:?}"
    );
}

#[test]
fn abort_reaches_the_event_sink_with_the_rank() {
    let (srv, secret, events) = server();
    let c = TcpStoreClient::connect(&srv.local_addr().to_string(), &secret)
        .unwrap()
        .with_rank(2);
    c.abort(5, "out of memory").unwrap();
    let ev = events.lock().unwrap().clone();
    assert_eq!(ev.len(), 1, "{ev:?}");
    match &ev[0] {
        ServerEvent::Abort {
            rank,
            code,
            message,
            ..
        } => {
            assert_eq!(
                (*rank, *code, message.as_str()),
                (Some(2), 5, "out of memory")
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        ev[0].to_string(),
        "weft: rank 2 called abort with code 5: out of memory"
    );
    assert_eq!(srv.aborts().len(), 1);
}

#[test]
fn client_refuses_a_server_that_is_not_a_store() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let t = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let _ = s.write_all(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n and some more text here");
    });
    let e = TcpStoreClient::connect(&addr, &new_secret().unwrap()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(e.message().contains("not a weft bootstrap store"), "{e}");
    t.join().unwrap();
}

#[test]
fn dropping_the_server_unblocks_waiting_clients() {
    let (srv, secret, _events) = server();
    let addr = srv.local_addr().to_string();
    let c = TcpStoreClient::connect(&addr, &secret).unwrap();
    let t = std::thread::spawn(move || c.get("never", Duration::from_secs(300)));
    // The get may reach the server before or after the drop: PeerDead either way.
    std::thread::sleep(Duration::from_millis(100));
    drop(srv);
    let e = t.join().unwrap().unwrap_err();
    // Not noticing the server's end, the get would end by its 300 s as a Timeout.
    assert_eq!(e.kind(), ErrorKind::PeerDead, "{e}");
    assert!(TcpStream::connect(&addr).is_err(), "listener closed");
}

#[test]
fn client_from_vars_reads_the_launch_environment() {
    let (srv, secret, _events) = server();
    let mut vars: HashMap<&str, String> = HashMap::new();
    let lookup = |vars: &HashMap<&str, String>| {
        let v = vars.clone();
        client_from_vars(move |n| v.get(n).cloned())
    };
    assert!(
        lookup(&vars).unwrap().is_none(),
        "no WEFT_BOOT_ADDR: singleton"
    );
    vars.insert("WEFT_BOOT_ADDR", srv.local_addr().to_string());
    let e = lookup(&vars).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
    assert!(e.message().contains("WEFT_JOB_SECRET"), "{e}");
    vars.insert("WEFT_JOB_SECRET", "not hex".into());
    assert_eq!(lookup(&vars).unwrap_err().kind(), ErrorKind::Config);
    vars.insert("WEFT_JOB_SECRET", weft_boot::auth::encode_hex(&secret));
    vars.insert("WEFT_RANK", "x".into());
    assert!(lookup(&vars).unwrap_err().message().contains("WEFT_RANK"));
    vars.insert("WEFT_RANK", "3".into());
    let c = lookup(&vars).unwrap().unwrap();
    c.abort(9, "test").unwrap();
    assert_eq!(srv.aborts()[0].rank, Some(3));
}

#[test]
fn connecting_retries_until_the_deadline_then_names_the_address() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let vars: HashMap<&str, String> = [
        ("WEFT_BOOT_ADDR", addr.clone()),
        (
            "WEFT_JOB_SECRET",
            weft_boot::auth::encode_hex(&new_secret().unwrap()),
        ),
        ("WEFT_BOOT_CONNECT_TIMEOUT_MS", "300".to_owned()),
    ]
    .into_iter()
    .collect();
    let t0 = Instant::now();
    let e = client_from_vars(|n| vars.get(n).cloned()).unwrap_err();
    let waited = t0.elapsed();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.message().contains(&addr), "{e}");
    // Never before the 300 ms asked for; the upper bound is the default deadline (10 s),
    // which a client that ignored the variable would have waited.
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(10),
        "{waited:?}"
    );
    // A store that starts late is still reached within the deadline. The deadline is a
    // hang catcher (a store that starts 200 ms late may start seconds late on a loaded
    // machine); the first part above showed that it is kept.
    let secret = new_secret().unwrap();
    let vars2: HashMap<&str, String> = [
        ("WEFT_BOOT_ADDR", addr.clone()),
        ("WEFT_JOB_SECRET", weft_boot::auth::encode_hex(&secret)),
        ("WEFT_BOOT_CONNECT_TIMEOUT_MS", "600000".to_owned()),
    ]
    .into_iter()
    .collect();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let late = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        let srv = TcpStoreServer::bind(&addr, &secret).unwrap();
        let _ = done_rx.recv();
        drop(srv);
    });
    let c = client_from_vars(|n| vars2.get(n).cloned())
        .unwrap()
        .unwrap();
    c.put("x", b"y").unwrap();
    assert_eq!(c.get("x", Duration::ZERO).unwrap(), b"y");
    done_tx.send(()).unwrap();
    late.join().unwrap();
}

#[test]
fn a_flood_of_strangers_is_reported_throttled() {
    let (srv, _secret, events) = server();
    let addr = srv.local_addr();
    const STRANGERS: u64 = 500;
    for _ in 0..STRANGERS {
        // Connects and closes at once: each is refused ("closed without proving ...").
        drop(std::net::TcpStream::connect(addr).unwrap());
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while srv.refused_count() < STRANGERS && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(srv.refused_count(), STRANGERS);
    // The first 16 one by one, then the 256th: 17 lines for 500 refusals, not 500.
    let want = REFUSALS_REPORTED + STRANGERS / REFUSAL_REPORT_EVERY;
    // Connection threads report concurrently: wait for the last report to land.
    let lines = refusals(&wait_events(&events, |ev| {
        refusals(ev).len() as u64 >= want
    }));
    assert_eq!(lines.len() as u64, want, "{lines:#?}");
    assert!(
        lines[REFUSALS_REPORTED as usize - 1].contains("only every 256th is reported"),
        "{lines:#?}"
    );
    assert!(
        lines.last().unwrap().contains("(256 refused so far)"),
        "{lines:#?}"
    );
}
