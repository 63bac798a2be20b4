//! The PMI-1 and PMI-2 clients against a PMI server written here from the protocols'
//! descriptions (one thread per rank, socket pairs standing for the launcher's `PMI_FD`):
//! start-up, put/fence/get among several ranks, the fall-back from PMI-2 to PMI-1, and
//! every kind of bad server (wrong answers, garbage, silence, a closed connection, rank and
//! size that disagree, a node map that does not parse), each a one-line error in bounded
//! time.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::IntoRawFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};
use weft_boot::select::connect;
use weft_boot::{Backend, Boot};
use weft_core::ErrorKind;

/// What the fake server speaks.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Speaks {
    Both,
    V1Only,
    /// PMI-2 the way Hydra serves it: a fence answers at once; a get of a key nobody put
    /// waits until every rank has fenced as often as the asker.
    HydraLike,
    /// MPICH 5.0's Hydra: as HydraLike, but a key nobody put is answered with a bare
    /// `rc=1` (no `found=FALSE`).
    Hydra5Like,
}

impl Speaks {
    fn like_hydra(self) -> bool {
        matches!(self, Speaks::HydraLike | Speaks::Hydra5Like)
    }
}

/// One reply of the fake server: a PMI-1 line or a PMI-2 body (the framing is added).
fn v2_frame(body: &str) -> Vec<u8> {
    let mut out = format!("{:<6}", body.len()).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

fn v1_pairs(line: &str) -> HashMap<String, String> {
    line.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn v2_pairs(body: &str) -> HashMap<String, String> {
    // Test values never contain ';'.
    body.split(';')
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

struct Server {
    kvs: Mutex<HashMap<String, String>>,
    fence: Barrier,
    size: u32,
    speaks: Speaks,
    mapping: String,
    aborts: Mutex<Vec<String>>,
    /// Fences each rank has entered (HydraLike).
    epochs: Mutex<Vec<u32>>,
    fenced: std::sync::Condvar,
}

impl Server {
    fn new(size: u32, speaks: Speaks, mapping: &str) -> Arc<Server> {
        Arc::new(Server {
            kvs: Mutex::new(HashMap::new()),
            fence: Barrier::new(size as usize),
            size,
            speaks,
            mapping: mapping.to_owned(),
            aborts: Mutex::new(Vec::new()),
            epochs: Mutex::new(vec![0; size as usize]),
            fenced: std::sync::Condvar::new(),
        })
    }
}

impl Server {
    /// Serves one rank on `s` until it finalizes or closes.
    fn serve(self: &Arc<Self>, s: UnixStream, rank: u32) {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut w = s;
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let init = v1_pairs(&line);
        assert_eq!(init["cmd"], "init", "{line}");
        let v2 = init["pmi_version"] == "2" && self.speaks != Speaks::V1Only;
        if init["pmi_version"] == "2" && !v2 {
            w.write_all(b"cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1\n")
                .unwrap();
            line.clear();
            r.read_line(&mut line).unwrap();
            assert_eq!(v1_pairs(&line)["pmi_version"], "1", "{line}");
        }
        if v2 {
            w.write_all(b"cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n")
                .unwrap();
            self.serve_v2(&mut r, Arc::new(Mutex::new(w)), rank);
        } else {
            w.write_all(b"cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n")
                .unwrap();
            self.serve_v1(&mut r, Arc::new(Mutex::new(w)));
        }
    }

    /// Answers `reply` once every rank has entered the fence, from another thread: the
    /// reader goes on reading (an abort may come meanwhile).
    fn fence_then(self: &Arc<Self>, w: &Arc<Mutex<UnixStream>>, reply: Vec<u8>) {
        let (s, w) = (Arc::clone(self), Arc::clone(w));
        std::thread::spawn(move || {
            s.fence.wait();
            let _ = w.lock().unwrap().write_all(&reply);
        });
    }

    fn serve_v1(self: &Arc<Self>, r: &mut impl BufRead, w: Arc<Mutex<UnixStream>>) {
        loop {
            let mut line = String::new();
            if r.read_line(&mut line).unwrap() == 0 {
                return;
            }
            let m = v1_pairs(&line);
            let reply = match m["cmd"].as_str() {
                "get_maxes" => "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=32".into(),
                "get_my_kvsname" => "cmd=my_kvsname kvsname=kvs_fake_0".into(),
                "put" => {
                    assert_eq!(m["kvsname"], "kvs_fake_0");
                    self.kvs
                        .lock()
                        .unwrap()
                        .insert(m["key"].clone(), m["value"].clone());
                    "cmd=put_result rc=0 msg=success".into()
                }
                "get" if m["key"] == "PMI_process_mapping" => {
                    format!("cmd=get_result rc=0 msg=success value={}", self.mapping)
                }
                "get" => match self.kvs.lock().unwrap().get(&m["key"]) {
                    Some(v) => format!("cmd=get_result rc=0 msg=success value={v}"),
                    None => "cmd=get_result rc=-1 msg=key_not_found".into(),
                },
                "barrier_in" => {
                    self.fence_then(&w, b"cmd=barrier_out\n".to_vec());
                    continue;
                }
                "finalize" => {
                    w.lock().unwrap().write_all(b"cmd=finalize_ack\n").unwrap();
                    return;
                }
                "abort" => {
                    self.aborts.lock().unwrap().push(line.trim().to_owned());
                    continue;
                }
                other => panic!("fake PMI-1 server: unexpected {other}"),
            };
            w.lock()
                .unwrap()
                .write_all(format!("{reply}\n").as_bytes())
                .unwrap();
        }
    }

    fn serve_v2(self: &Arc<Self>, r: &mut impl Read, w: Arc<Mutex<UnixStream>>, rank: u32) {
        loop {
            let mut len = [0u8; 6];
            if r.read_exact(&mut len).is_err() {
                return;
            }
            let n: usize = std::str::from_utf8(&len).unwrap().trim().parse().unwrap();
            let mut body = vec![0u8; n];
            r.read_exact(&mut body).unwrap();
            let body = String::from_utf8(body).unwrap();
            let m = v2_pairs(&body);
            let reply = match m["cmd"].as_str() {
                "fullinit" => {
                    assert_eq!(m["pmirank"], rank.to_string());
                    assert_eq!(m["threaded"], "FALSE");
                    format!(
                        "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank={rank};size={};appnum=-1;debugged=FALSE;pmiverbose=FALSE;",
                        self.size
                    )
                }
                "job-getid" => "cmd=job-getid-response;rc=0;jobid=7.0;".into(),
                "info-getjobattr" => format!(
                    "cmd=info-getjobattr-response;rc=0;found=TRUE;value={};",
                    self.mapping
                ),
                "kvs-put" => {
                    self.kvs
                        .lock()
                        .unwrap()
                        .insert(m["key"].clone(), m["value"].clone());
                    "cmd=kvs-put-response;rc=0;".into()
                }
                "kvs-fence" if self.speaks.like_hydra() => {
                    self.epochs.lock().unwrap()[rank as usize] += 1;
                    self.fenced.notify_all();
                    "cmd=kvs-fence-response;rc=0;".into()
                }
                "kvs-fence" => {
                    self.fence_then(&w, v2_frame("cmd=kvs-fence-response;rc=0;"));
                    continue;
                }
                "kvs-get" => {
                    assert_eq!(m["jobid"], "7.0");
                    if self.speaks.like_hydra() && !self.kvs.lock().unwrap().contains_key(&m["key"])
                    {
                        let mut e = self.epochs.lock().unwrap();
                        let mine = e[rank as usize];
                        while e.iter().any(|&x| x < mine) {
                            e = self.fenced.wait(e).unwrap();
                        }
                    }
                    match self.kvs.lock().unwrap().get(&m["key"]) {
                        Some(v) => format!("cmd=kvs-get-response;rc=0;found=TRUE;value={v};"),
                        None if self.speaks == Speaks::Hydra5Like => {
                            "cmd=kvs-get-response;rc=1;".into()
                        }
                        None => "cmd=kvs-get-response;rc=0;found=FALSE;".into(),
                    }
                }
                "finalize" => {
                    let _ = w
                        .lock()
                        .unwrap()
                        .write_all(&v2_frame("cmd=finalize-response;rc=0;"));
                    return;
                }
                "abort" => {
                    self.aborts.lock().unwrap().push(body);
                    continue;
                }
                other => panic!("fake PMI-2 server: unexpected {other}"),
            };
            w.lock().unwrap().write_all(&v2_frame(&reply)).unwrap();
        }
    }
}

fn vars(v: Vec<(&str, String)>) -> impl Fn(&str) -> Option<String> {
    let v: Vec<(String, String)> = v.into_iter().map(|(a, b)| (a.to_owned(), b)).collect();
    move |n| v.iter().find(|(k, _)| k == n).map(|(_, x)| x.clone())
}

/// Runs a job of `size` ranks on the fake server; each rank puts a value (long enough to be
/// chunked under PMI-1's 32-byte limit), fences, reads everyone's and finalizes.
fn job(size: u32, speaks: Speaks, force: Option<&str>) -> (Vec<Backend>, Arc<Server>) {
    let server = Server::new(size, speaks, &format!("(vector,(0,{size},1))"));
    let ranks: Vec<_> = (0..size)
        .map(|rank| {
            let (client, srv_end) = UnixStream::pair().unwrap();
            let s = Arc::clone(&server);
            let serving = std::thread::spawn(move || s.serve(srv_end, rank));
            let force = force.map(str::to_owned);
            std::thread::spawn(move || {
                let mut v = vec![
                    ("PMI_FD", client.into_raw_fd().to_string()),
                    ("PMI_RANK", rank.to_string()),
                    ("PMI_SIZE", size.to_string()),
                    ("PMI_JOBID", "7.0".to_string()),
                ];
                if let Some(f) = force {
                    v.push(("WEFT_BOOT", f));
                }
                let b = connect(&vars(v), 0, None).unwrap().expect("a PMI session");
                let job = b.job().clone();
                assert_eq!((job.rank, job.size), (rank, size));
                assert_eq!(
                    job.node_of.as_deref(),
                    Some(&(0..size).collect::<Vec<_>>()[..])
                );
                let value = format!("rank {rank}; {}", "x".repeat(40 + rank as usize));
                b.put("card", value.as_bytes()).unwrap();
                b.fence(Duration::from_secs(20)).unwrap();
                let all = b
                    .get_all(
                        &(0..size).collect::<Vec<_>>(),
                        "card",
                        Duration::from_secs(5),
                    )
                    .unwrap();
                for (r, v) in all.iter().enumerate() {
                    let want = format!("rank {r}; {}", "x".repeat(40 + r));
                    assert_eq!(v, want.as_bytes());
                }
                let e = b.get(0, "never-put", Duration::from_secs(1)).unwrap_err();
                assert!(e.message().contains("has no value \"never-put\""), "{e}");
                b.finalize(Duration::from_secs(20)).unwrap();
                serving.join().unwrap();
                b.backend()
            })
        })
        .collect();
    let backends = ranks.into_iter().map(|t| t.join().unwrap()).collect();
    (backends, server)
}

#[test]
fn pmi2_and_pmi1_jobs_exchange_through_fences_at_1_2_3_and_7_ranks() {
    for n in [1, 2, 3, 7] {
        let (b, _) = job(n, Speaks::Both, None);
        assert!(b.iter().all(|&x| x == Backend::Pmi2), "{b:?}");
        let (b, _) = job(n, Speaks::Both, Some("pmi1"));
        assert!(b.iter().all(|&x| x == Backend::Pmi1), "{b:?}");
        for hydra in [Speaks::HydraLike, Speaks::Hydra5Like] {
            let (b, _) = job(n, hydra, None);
            assert!(b.iter().all(|&x| x == Backend::Pmi2), "{hydra:?}: {b:?}");
        }
    }
}

#[test]
fn a_server_that_declines_pmi2_gets_pmi1_unless_pmi2_was_asked_for() {
    let (b, _) = job(3, Speaks::V1Only, None);
    assert!(b.iter().all(|&x| x == Backend::Pmi1), "{b:?}");
    let (client, srv_end) = UnixStream::pair().unwrap();
    let t = std::thread::spawn(move || {
        let mut r = BufReader::new(srv_end.try_clone().unwrap());
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        (&srv_end)
            .write_all(b"cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1\n")
            .unwrap();
    });
    let e = connect(
        &vars(vec![
            ("PMI_FD", client.into_raw_fd().to_string()),
            ("WEFT_BOOT", "pmi2".into()),
        ]),
        0,
        None,
    )
    .err()
    .unwrap();
    t.join().unwrap();
    assert!(e.message().contains("does not speak PMI-2"), "{e}");
    assert!(e.message().contains("WEFT_BOOT=pmi1"), "{e}");
}

#[test]
fn abort_reaches_the_server_while_another_thread_waits_in_a_fence() {
    for force in [None, Some("pmi1")] {
        // A job of two whose second rank comes late (the test plays it).
        let server = Server::new(2, Speaks::Both, "(vector,(0,1,2))");
        let (client, srv_end) = UnixStream::pair().unwrap();
        let s = Arc::clone(&server);
        std::thread::spawn(move || s.serve(srv_end, 0));
        let mut v = vec![
            ("PMI_FD", client.into_raw_fd().to_string()),
            ("PMI_RANK", "0".to_string()),
            ("PMI_SIZE", "2".to_string()),
            ("PMI_JOBID", "7.0".to_string()),
        ];
        if let Some(f) = force {
            v.push(("WEFT_BOOT", f.to_owned()));
        }
        let b: Arc<dyn Boot> = connect(&vars(v), 0, None).unwrap().unwrap();
        assert_eq!(b.job().node_of.as_deref(), Some(&[0, 0][..]));
        let waiter = {
            let b = Arc::clone(&b);
            std::thread::spawn(move || b.fence(Duration::from_secs(120)))
        };
        let before = server.aborts.lock().unwrap().len();
        // The fence waits for the rank that has not come; abort goes through meanwhile.
        let deadline = Instant::now() + Duration::from_secs(60);
        b.abort(3, "rank 1 died; ending").unwrap();
        while server.aborts.lock().unwrap().len() == before && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let got = server.aborts.lock().unwrap().last().cloned().unwrap();
        assert!(
            !waiter.is_finished(),
            "the abort must not wait for the fence to give up"
        );
        match force {
            None => assert!(
                got.contains("cmd=abort;isworld=TRUE;msg=exit code 3: rank 1 died, ending;"),
                "{got}"
            ),
            Some(_) => assert_eq!(got, "cmd=abort exitcode=3"),
        }
        // The second rank arrives after all: the fence completes.
        server.fence.wait();
        waiter.join().unwrap().unwrap();
    }
}

/// Starts a client on a server that answers the client's first request with `reply` (raw
/// bytes, after answering `init` as `init_reply` says), then reports the client's error.
fn bad_server(
    init_reply: &'static [u8],
    reply: Vec<u8>,
    extra: Vec<(&str, String)>,
) -> weft_core::Error {
    let (client, srv_end) = UnixStream::pair().unwrap();
    let t = std::thread::spawn(move || {
        let mut r = BufReader::new(srv_end.try_clone().unwrap());
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let mut w = &srv_end;
        w.write_all(init_reply).unwrap();
        if !reply.is_empty() {
            let mut buf = [0u8; 512];
            let _ = r.read(&mut buf);
            w.write_all(&reply).unwrap();
        }
        // Keep the connection open (silence) until the client gives up.
        let mut buf = [0u8; 512];
        while matches!(r.read(&mut buf), Ok(n) if n > 0) {}
    });
    let mut v = vec![
        ("PMI_FD", client.into_raw_fd().to_string()),
        ("PMI_RANK", "0".to_string()),
        ("PMI_SIZE", "2".to_string()),
        ("PMI_JOBID", "7.0".to_string()),
        ("WEFT_BOOT_CONNECT_TIMEOUT_MS", "300".to_string()),
    ];
    v.extend(extra);
    let t0 = Instant::now();
    let e = connect(&vars(v), 0, None)
        .err()
        .expect("the bad server must be refused");
    // Bounded by the 300 ms asked for: a client that ignored WEFT_BOOT_CONNECT_TIMEOUT_MS
    // would wait the 10 s default (the bound), however loaded the machine.
    assert!(
        t0.elapsed() < Duration::from_millis(weft_boot::knobs::BOOT_CONNECT_TIMEOUT_MS_DEFAULT),
        "bounded: {:?}",
        t0.elapsed()
    );
    assert!(!e.message().contains('\n'), "one line: {e}");
    t.join().unwrap();
    e
}

const V2_OK: &[u8] = b"cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n";
const V1_OK: &[u8] = b"cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n";

#[test]
fn bad_pmi_servers_are_one_line_errors_in_bounded_time() {
    let pmi1 = || vec![("WEFT_BOOT", "pmi1".to_string())];
    let raw = |b: &[u8]| b.to_vec();
    let v2 = |body: &str| v2_frame(body);
    /// What the server answers to init and next, extra variables, the error expected.
    type Case<'a> = (
        &'a [u8],
        Vec<u8>,
        Vec<(&'a str, String)>,
        ErrorKind,
        &'a str,
    );
    let cases: Vec<Case> = vec![
        // Silence after init.
        (
            V2_OK,
            vec![],
            vec![],
            ErrorKind::Timeout,
            "no answer from the PMI server in time",
        ),
        // Garbage instead of the init answer.
        (
            b"HTTP/1.1 400 Bad Request\n",
            vec![],
            vec![],
            ErrorKind::Protocol,
            "\"HTTP/1.1 400 Bad Request\" does not start with key=value",
        ),
        // A PMI-2 length field that is not a number.
        (
            V2_OK,
            raw(b"abcdef"),
            vec![],
            ErrorKind::Protocol,
            "length field \"abcdef\"",
        ),
        // The wrong command.
        (
            V2_OK,
            v2("cmd=kvs-put-response;rc=0;"),
            vec![],
            ErrorKind::Protocol,
            "where cmd=fullinit-response was expected",
        ),
        // A refused fullinit.
        (
            V2_OK,
            v2("cmd=fullinit-response;rc=14;errmsg=no such rank;"),
            vec![],
            ErrorKind::Protocol,
            "refused fullinit: rc=14 no such rank",
        ),
        // Rank and size that disagree with PMI_RANK/PMI_SIZE.
        (
            V2_OK,
            v2("cmd=fullinit-response;rc=0;pmi-version=2;rank=1;size=2;appnum=0;"),
            vec![],
            ErrorKind::Config,
            "says rank 1 but PMI_RANK=0",
        ),
        (
            V2_OK,
            v2("cmd=fullinit-response;rc=0;pmi-version=2;rank=0;size=3;appnum=0;"),
            vec![],
            ErrorKind::Config,
            "says size 3 but PMI_SIZE=2",
        ),
        // A rank that is not a number.
        (
            V2_OK,
            v2("cmd=fullinit-response;rc=0;rank=zero;size=2;"),
            vec![],
            ErrorKind::Protocol,
            "rank=\"zero\"",
        ),
        // A body longer than what was sent, then silence.
        (
            V2_OK,
            raw(b"90    cmd=fullinit-response;"),
            vec![],
            ErrorKind::Timeout,
            "awaiting cmd=fullinit-response",
        ),
        // PMI-1: maxes without the limits, a line that is not key=value, a refusal.
        (
            V1_OK,
            raw(b"cmd=maxes kvsname_max=256\n"),
            pmi1(),
            ErrorKind::Protocol,
            "lacks keylen_max=",
        ),
        (
            V1_OK,
            raw(b"hello there\n"),
            pmi1(),
            ErrorKind::Protocol,
            "does not start with key=value",
        ),
        (
            V1_OK,
            raw(b"cmd=maxes rc=-1 msg=no\n"),
            pmi1(),
            ErrorKind::Protocol,
            "refused get_maxes: rc=-1 no",
        ),
    ];
    for (init, reply, extra, kind, want) in cases {
        let e = bad_server(init, reply, extra);
        assert_eq!(e.kind(), kind, "{want}: {e}");
        assert!(e.message().contains(want), "wanted {want:?} in: {e}");
    }
}

#[test]
fn a_server_that_hangs_up_or_a_bad_node_map_is_an_error() {
    // The server closes the connection right after init.
    let (client, srv_end) = UnixStream::pair().unwrap();
    let t = std::thread::spawn(move || {
        let mut r = BufReader::new(srv_end.try_clone().unwrap());
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        (&srv_end).write_all(V2_OK).unwrap();
    });
    let e = connect(
        &vars(vec![("PMI_FD", client.into_raw_fd().to_string())]),
        0,
        None,
    )
    .err()
    .unwrap();
    t.join().unwrap();
    assert_eq!(e.kind(), ErrorKind::PeerDead, "{e}");
    // Closed before or after the client sent fullinit: either way the same words.
    assert!(
        e.message().contains("the PMI server closed the connection"),
        "{e}"
    );
    // A PMI_process_mapping that does not parse.
    let server = Server::new(1, Speaks::Both, "(vector,(0,1))");
    let (client, srv_end) = UnixStream::pair().unwrap();
    let s = Arc::clone(&server);
    std::thread::spawn(move || s.serve(srv_end, 0));
    let e = connect(
        &vars(vec![
            ("PMI_FD", client.into_raw_fd().to_string()),
            ("PMI_RANK", "0".into()),
            ("PMI_JOBID", "7.0".into()),
        ]),
        0,
        None,
    )
    .err()
    .unwrap();
    assert!(
        e.message()
            .contains("PMI_process_mapping \"(vector,(0,1))\""),
        "{e}"
    );
    // PMI-1 without PMI_RANK/PMI_SIZE (and no PMI_ID).
    let (client, srv_end) = UnixStream::pair().unwrap();
    let s = Arc::clone(&server);
    std::thread::spawn(move || s.serve(srv_end, 0));
    let e = connect(
        &vars(vec![
            ("PMI_FD", client.into_raw_fd().to_string()),
            ("WEFT_BOOT", "pmi1".into()),
        ]),
        0,
        None,
    )
    .err()
    .unwrap();
    assert!(
        e.message().contains("PMI_RANK and PMI_SIZE must be set"),
        "{e}"
    );
}

#[test]
fn a_fence_is_a_barrier_even_where_the_server_answers_it_at_once() {
    // Rank 1 enters the fence late; rank 0's fence must not return before it did. Hydra
    // answers kvs-fence at once, so the client completes it with a get of an absent key.
    for hydra in [Speaks::HydraLike, Speaks::Hydra5Like] {
        fence_is_a_barrier_on(hydra);
    }
}

fn fence_is_a_barrier_on(hydra: Speaks) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let server = Server::new(2, hydra, "(vector,(0,1,2))");
    let entered = Arc::new(AtomicBool::new(false));
    let ranks: Vec<_> = (0..2u32)
        .map(|rank| {
            let (client, srv_end) = UnixStream::pair().unwrap();
            let s = Arc::clone(&server);
            std::thread::spawn(move || s.serve(srv_end, rank));
            let entered = Arc::clone(&entered);
            std::thread::spawn(move || {
                let b = connect(
                    &vars(vec![
                        ("PMI_FD", client.into_raw_fd().to_string()),
                        ("PMI_RANK", rank.to_string()),
                        ("PMI_SIZE", "2".into()),
                        ("PMI_JOBID", "7.0".into()),
                    ]),
                    0,
                    None,
                )
                .unwrap()
                .unwrap();
                assert_eq!(b.backend(), Backend::Pmi2);
                if rank == 1 {
                    std::thread::sleep(Duration::from_millis(300));
                    entered.store(true, Ordering::SeqCst);
                }
                b.fence(Duration::from_secs(30)).unwrap();
                assert!(
                    entered.load(Ordering::SeqCst),
                    "rank {rank} left the fence before rank 1 entered it"
                );
                b.finalize(Duration::from_secs(30)).unwrap();
            })
        })
        .collect();
    for t in ranks {
        t.join().unwrap();
    }
}
