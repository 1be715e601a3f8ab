use super::*;

/// Runs `sh -c script` confined by `policy` (without the reaper) and returns its exit
/// code and its output.
fn confined(policy: &Policy, script: &str) -> (i32, String) {
    use std::os::unix::process::CommandExt;
    let prepared = policy.prepare().unwrap();
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.args(["-c", script]);
    // SAFETY: `apply` is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || prepared.apply());
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn writes_go_only_where_the_policy_allows() {
    if level() == Level::None {
        eprintln!("skipped: no Landlock here");
        return;
    }
    let allowed = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let policy = Policy {
        write: vec![allowed.path().to_path_buf()],
        read: None,
        connect: None,
        unix_sockets: true,
        contain: false,
    };
    let script = format!(
        "echo ok > {a}/in && echo no > {o}/out; test -f {a}/in && ! test -f {o}/out && cat {o}/../../etc/hostname >/dev/null 2>&1; echo done > /dev/null",
        a = allowed.path().display(),
        o = other.path().display()
    );
    let (code, out) = confined(&policy, &script);
    assert!(allowed.path().join("in").exists(), "{out}");
    assert!(!other.path().join("out").exists(), "{out}");
    let _ = code;
}

#[test]
fn reads_follow_the_allow_list_when_there_is_one() {
    if level() == Level::None {
        eprintln!("skipped: no Landlock here");
        return;
    }
    let secret = tempfile::tempdir().unwrap();
    std::fs::write(secret.path().join("key"), "secret").unwrap();
    let work = tempfile::tempdir().unwrap();
    let policy = Policy {
        write: vec![work.path().to_path_buf()],
        read: Some(Vec::new()),
        connect: None,
        unix_sockets: true,
        contain: false,
    };
    let (code, out) = confined(&policy, &format!("cat {}/key", secret.path().display()));
    assert_ne!(code, 0, "{out}");
    assert!(!out.contains("secret"), "{out}");
    let (code, out) = confined(&policy, "cat /etc/hostname >/dev/null && echo read");
    assert_eq!((code, out.trim()), (0, "read"));
}

#[test]
fn unix_sockets_are_refused_to_agents_and_socketpairs_are_not() {
    let policy = Policy {
        write: vec![],
        read: None,
        connect: None,
        unix_sockets: false,
        contain: false,
    };
    let probe = "import socket\ntry:\n    socket.socket(socket.AF_UNIX)\n    print('made')\nexcept OSError as e:\n    print('refused', e.errno)\na, b = socket.socketpair()\nprint('pair')\n";
    let (code, out) = confined(&policy, &format!("python3 -c \"{probe}\""));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("refused 13") && out.contains("pair"), "{out}");
}

#[test]
fn tcp_connects_only_to_the_allowed_ports() {
    if !matches!(level(), Level::Full(_)) && !matches!(level(), Level::Partial(a) if a >= 4) {
        eprintln!("skipped: no Landlock TCP rules here");
        return;
    }
    let open = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (p1, p2) = (
        open.local_addr().unwrap().port(),
        closed.local_addr().unwrap().port(),
    );
    let policy = Policy {
        write: vec![],
        read: None,
        connect: Some(vec![p1]),
        unix_sockets: true,
        contain: false,
    };
    let probe = format!(
        "import socket\nfor p in ({p1}, {p2}):\n    try:\n        socket.create_connection(('127.0.0.1', p), timeout=2)\n        print(p, 'connected')\n    except OSError as e:\n        print(p, 'refused', e.errno)\n"
    );
    let (_, out) = confined(&policy, &format!("python3 -c \"{probe}\""));
    assert!(out.contains(&format!("{p1} connected")), "{out}");
    assert!(out.contains(&format!("{p2} refused 13")), "{out}");
}

#[test]
fn the_ports_an_agent_may_reach_are_those_its_urls_name() {
    assert_eq!(url_port("http://127.0.0.1:8080/v1"), Some(8080));
    assert_eq!(url_port("https://api.example.com/v1"), Some(443));
    assert_eq!(url_port("http://user:pw@host/x"), Some(80));
    assert_eq!(url_port("http://[::1]:9000/"), Some(9000));
    assert_eq!(url_port("not a url"), None);
    assert_eq!(url_port("ftp://host:21"), None);
}

#[test]
fn refusals_are_found_in_output_and_in_json_strings_outside_the_checkout_only() {
    let checkout = Path::new("/work/checkout");
    let text = "running tests\n\
        sh: 1: cannot create /home/u/.bashrc: Permission denied\n\
        {\"type\":\"item.completed\",\"item\":{\"aggregated_output\":\"ok\\ntouch: cannot touch '/tmp/x': Permission denied\\n\"}}\n\
        PermissionError: [Errno 13] Permission denied: '/work/checkout/ro.txt'\n\
        OSError: [Errno 1] Operation not permitted: '/etc/hosts'\n\
        sh: 1: cannot create /home/u/.bashrc: Permission denied\n\
        Permission denied (no path)\n\
        all good\n";
    let found = refusals(text, &[checkout]);
    assert_eq!(
        found,
        vec![
            "sh: 1: cannot create /home/u/.bashrc: Permission denied",
            "touch: cannot touch '/tmp/x': Permission denied",
            "OSError: [Errno 1] Operation not permitted: '/etc/hosts'",
        ],
        "{found:?}"
    );
    assert!(refusals("all passed\n", &[checkout]).is_empty());
}
