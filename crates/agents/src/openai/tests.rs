//! The `openai` driver against a scripted server.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use super::config::*;
use super::http::*;
use super::patch::*;
use super::stream::*;
use super::*;
use crate::command::tests::{ctx, executor_input, failure, writer_input};
use crate::config::AgentSpec;
use crate::meter::Meter;
use crate::prompt::PROMPT_LIMIT;
use crate::prompt::RETRY_HEADING;
use serde_json::{Value, json};
use std::time::Instant;
use tlv4_core::testutil::git as hermetic_git;

mod limits;

/// What the scripted server does with one connection.
enum Step {
    /// Answers with this status and body.
    Http(u16, String),
    /// Answers 429 with `Retry-After: <seconds>`.
    Limited(u64),
    /// Answers this status with this `Retry-After` (none if empty) and body.
    Refused(u16, String, String),
    /// Reads the request and never answers.
    Hang,
    /// Reads the request and closes the connection.
    Close,
    /// Streams these content deltas as server-sent events, then goes on as `Tail` says.
    Sse(Vec<String>, Tail),
}

/// How a scripted stream goes on after its deltas.
enum Tail {
    /// A last chunk with `finish_reason` and `usage`, then `data: [DONE]`.
    Done(&'static str),
    /// Garbage deltas until the client hangs up.
    Forever,
}

/// One request the server read.
#[derive(Debug, Clone)]
struct Seen {
    line: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("a JSON request body")
    }

    fn user(&self) -> String {
        self.json()["messages"][1]["content"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

/// An HTTP server on 127.0.0.1 that answers one connection per step of its script, in
/// order, and records what it read.
struct Server {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
    /// How many garbage chunks each endless stream wrote before the client hung up.
    written: Arc<Mutex<Vec<u64>>>,
    _hold: mpsc::Sender<()>,
}

impl Server {
    fn start(script: Vec<Step>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (hold, released) = mpsc::channel::<()>();
        let (seen2, stop2) = (seen.clone(), stop.clone());
        let written = Arc::new(Mutex::new(Vec::new()));
        let written2 = written.clone();
        std::thread::spawn(move || {
            for step in script {
                let Ok((mut stream, _)) = listener.accept() else {
                    return;
                };
                if stop2.load(Ordering::SeqCst) {
                    return;
                }
                if let Some(req) = read_request(&stream) {
                    seen2.lock().unwrap().push(req);
                }
                match step {
                    Step::Http(status, body) => {
                        let _ = write!(
                            stream,
                            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n\
                                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        );
                    }
                    Step::Limited(secs) => {
                        let body = "{\"error\": \"slow down\"}";
                        let _ = write!(
                            stream,
                            "HTTP/1.1 429 X\r\nRetry-After: {secs}\r\nContent-Type: application/json\r\n\
                                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        );
                    }
                    Step::Refused(status, after, body) => {
                        let after = if after.is_empty() {
                            String::new()
                        } else {
                            format!("Retry-After: {after}\r\n")
                        };
                        let _ = write!(
                            stream,
                            "HTTP/1.1 {status} X\r\n{after}Content-Type: application/json\r\n\
                                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        );
                    }
                    // Until the test is over.
                    Step::Hang => {
                        let _ = released.recv_timeout(Duration::from_secs(30));
                    }
                    Step::Close => {}
                    Step::Sse(deltas, tail) => {
                        let _ = write!(
                            stream,
                            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                                 Cache-Control: no-cache\r\nConnection: close\r\n\r\n"
                        );
                        let chunk = |content: &str| {
                            let c = json!({"id": "c1", "object": "chat.completion.chunk",
                                    "model": "streamed-model",
                                    "choices": [{"index": 0, "delta": {"content": content},
                                                 "finish_reason": null}]});
                            format!("data: {c}\n\n")
                        };
                        let mut open = stream.write_all(b": ping\n\n").is_ok();
                        for d in &deltas {
                            open = open && stream.write_all(chunk(d).as_bytes()).is_ok();
                        }
                        match tail {
                            Tail::Done(finish) => {
                                let last = json!({"id": "c1", "model": "streamed-model",
                                        "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                                        "usage": {"prompt_tokens": 77, "completion_tokens": deltas.len()}});
                                let _ = write!(stream, "data: {last}\n\ndata: [DONE]\n\n");
                            }
                            Tail::Forever => {
                                let mut n = 0u64;
                                while open && n < 10_000_000 {
                                    n += 1;
                                    open = stream
                                        .write_all(chunk(&format!("GARBAGE{n} ")).as_bytes())
                                        .is_ok();
                                }
                                written2.lock().unwrap().push(n);
                            }
                        }
                    }
                }
            }
        });
        Server {
            addr,
            seen,
            stop,
            written,
            _hold: hold,
        }
    }

    fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes an accept that waits for a request that will not come.
        let _ = TcpStream::connect(self.addr);
    }
}

fn read_request(stream: &TcpStream) -> Option<Seen> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    let find = |name: &str| {
        headers
            .iter()
            .find(|(k, _): &&(String, String)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if let Some(n) = find("content-length").and_then(|n| n.parse::<usize>().ok()) {
        body.resize(n, 0);
        reader.read_exact(&mut body).ok()?;
    } else if find("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let n = usize::from_str_radix(size.trim(), 16).ok()?;
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk).ok()?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    }
    Some(Seen {
        line: line.trim_end().to_owned(),
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// A chat-completions response whose answer is `content`.
fn completion_body(content: &str, prompt_tokens: u64, completion_tokens: u64) -> String {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "test-model-q4",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop",
        }],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    })
    .to_string()
}

fn ok(content: &str) -> Step {
    Step::Http(200, completion_body(content, 120, 30))
}

const DOCUMENT_ANSWER: &str = "Here are the requirements.\n\n```json\n{\"summary\": \"wrote the \
        requirements\", \"state_update\": {\"key_findings\": [\"two goals\"], \"decisions\": \
        [\"REQ ids per goal, for traceability\"], \"verification\": \"self-validated\"}, \
        \"files\": {\"spec/requirements/_index.md\": \"# Requirements\\n\\n- REQ-001\\n\"}}\n```\n";

fn spec(url: &str, timeout: &str, env: &[(&str, &str)]) -> AgentSpec {
    AgentSpec {
        driver: "openai".into(),
        url: Some(url.into()),
        model: Some("test-model".into()),
        timeout: Some(timeout.into()),
        env: env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        ..AgentSpec::default()
    }
}

/// A driver for `spec` that sees no process environment and retries fast.
fn driver(spec: &AgentSpec, root: &Path) -> OpenAiDriver {
    OpenAiDriver::build("local", spec, root, |_| None)
        .unwrap()
        .with_retry(RetryPolicy {
            tries: 3,
            backoff: Duration::from_millis(10),
        })
}

#[test]
fn a_document_task_completes_with_files_state_and_usage() {
    let server = Server::start(vec![ok(DOCUMENT_ANSWER), ok(DOCUMENT_ANSWER)]);
    let work = tempfile::tempdir().unwrap();
    let run_dir = work.path().join("run");
    let (_d, input) = writer_input();
    let keyed = spec(&server.url(), "20s", &[(API_KEY_ENV, "sk-test")]);
    let mut c = ctx(work.path());
    c.run_dir = Some(run_dir.clone());
    let out = driver(&keyed, work.path()).run(&input, &c).unwrap();
    assert_eq!(
        out.output.outcome,
        Outcome::Completed,
        "{:?}",
        out.transcript
    );
    assert_eq!(out.output.summary, "wrote the requirements");
    assert_eq!(
        out.output.files,
        vec![(
            "spec/requirements/_index.md".to_owned(),
            b"# Requirements\n\n- REQ-001\n".to_vec()
        )]
    );
    let update = &out.output.state_update;
    assert_eq!(update.key_findings, vec!["two goals"]);
    assert_eq!(update.files_modified, vec!["spec/requirements/_index.md"]);
    assert_eq!(out.usage.input_tokens, 120);
    assert_eq!(out.usage.output_tokens, 30);
    assert_eq!(out.usage.model.as_deref(), Some("test-model-q4"));
    assert!(out.usage.seconds > 0.0);
    assert!(out.raw.contains("chat.completion"), "{}", out.raw);
    assert_eq!(
        std::fs::read_to_string(run_dir.join("prompt.md")).unwrap(),
        out.prompt
    );
    assert!(
        std::fs::read_to_string(run_dir.join("transcript.txt"))
            .unwrap()
            .contains("HTTP 200")
    );

    // The request: the endpoint, the model, the role as the system message, the task as
    // the user message, and the key.
    let req = &server.seen()[0];
    assert_eq!(req.line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(req.header("authorization"), Some("Bearer sk-test"));
    assert!(req.header("content-type").unwrap().contains("json"));
    let body = req.json();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["temperature"], 0);
    assert_eq!(body["messages"][0]["role"], "system");
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("You are the writer."), "{system}");
    assert_eq!(body["messages"][1]["role"], "user");
    let user = req.user();
    assert!(user.starts_with("# Your role: writer\n\nYour instructions are in the system"));
    assert!(
        user.contains("DRAFT-002") && user.contains("# Result"),
        "{user}"
    );
    assert!(user.contains("you cannot read or write files"));
    assert!(
        !user.contains("You are the writer."),
        "the role is sent once"
    );

    // No key anywhere: no Authorization header.
    let bare = spec(&server.url(), "20s", &[]);
    let out = driver(&bare, work.path())
        .run(&input, &ctx(work.path()))
        .unwrap();
    assert_eq!(out.output.outcome, Outcome::Completed);
    assert_eq!(server.seen()[1].header("authorization"), None);
}

#[test]
fn the_key_comes_from_the_agent_env_then_the_process_env() {
    let root = tempfile::tempdir().unwrap();
    let from_process = |k: &str| (k == API_KEY_ENV).then(|| "sk-process".to_owned());
    let bare = spec("http://127.0.0.1:9/v1", "20s", &[]);
    let d = OpenAiDriver::build("local", &bare, root.path(), from_process).unwrap();
    assert_eq!(d.api_key.as_deref(), Some("sk-process"));
    let keyed = spec(
        "http://127.0.0.1:9/v1/",
        "20s",
        &[(API_KEY_ENV, "sk-agent")],
    );
    let d = OpenAiDriver::build("local", &keyed, root.path(), from_process).unwrap();
    assert_eq!(d.api_key.as_deref(), Some("sk-agent"));
    assert_eq!(d.endpoint(), "http://127.0.0.1:9/v1/chat/completions");
    let d = OpenAiDriver::build("local", &bare, root.path(), |_| None).unwrap();
    assert_eq!(d.api_key, None);
}

#[test]
fn configuration_errors_name_the_agent() {
    let root = Path::new("/");
    let err = |spec: AgentSpec| match crate::command::driver_for(
        "mine",
        &spec,
        root,
        &crate::replay::NoRecordings,
    ) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    };
    let mut s = spec("http://127.0.0.1:9/v1", "20s", &[]);
    assert!(crate::command::driver_for("mine", &s, root, &crate::replay::NoRecordings).is_ok());
    s.url = None;
    assert!(err(s.clone()).contains("agent `mine`: the `openai` driver needs `url`"));
    s.url = Some("ftp://example.invalid/v1".into());
    let e = err(s.clone());
    assert!(
        e.contains("agent `mine`") && e.contains("http:// or https://"),
        "{e}"
    );
    s.url = Some("127.0.0.1:11434".into());
    assert!(err(s.clone()).contains("agent `mine`"));
    s.url = Some("http://127.0.0.1:9/v1".into());
    s.model = Some(" ".into());
    assert!(err(s.clone()).contains("agent `mine`: the `openai` driver needs `model`"));
    s.model = Some("m".into());
    s.timeout = Some("soon".into());
    assert!(err(s).contains("invalid duration `soon`"));
}

#[test]
fn an_invalid_result_is_sent_back_with_the_error() {
    let broken =
        "```json\n{\"summary\": \"x\", \"state_update\": {\"key_findings\": [\"a\",]}}\n```\n";
    let server = Server::start(vec![ok(broken), ok(DOCUMENT_ANSWER)]);
    let work = tempfile::tempdir().unwrap();
    let (_d, input) = writer_input();
    let s = spec(&server.url(), "20s", &[]);
    let out = driver(&s, work.path())
        .run(&input, &ctx(work.path()))
        .unwrap();
    assert_eq!(out.output.outcome, Outcome::Completed);
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert!(!seen[0].user().contains(RETRY_HEADING));
    let retry = seen[1].user();
    assert!(retry.contains(RETRY_HEADING), "{retry}");
    assert!(retry.contains("not valid JSON"), "{retry}");
    assert!(retry.contains("[\"a\",]"), "the previous answer is quoted");
    assert_eq!(out.usage.input_tokens, 240, "usage adds up over answers");
    assert!(out.prompt.contains(RETRY_HEADING));

    // Three broken answers fail the task, keeping the last body.
    let server = Server::start(vec![ok(broken), ok(broken), ok(broken), ok(broken)]);
    let s = spec(&server.url(), "20s", &[]);
    let out = driver(&s, work.path())
        .run(&input, &ctx(work.path()))
        .unwrap();
    let why = failure(&out);
    assert!(why.contains("agent `local` (openai)"), "{why}");
    assert!(
        why.contains("rejected 3 times") && why.contains("not valid JSON"),
        "{why}"
    );
    assert!(out.raw.contains("[\\\"a\\\",]"), "{}", out.raw);
    assert_eq!(server.seen().len(), 3);
}

#[test]
fn server_errors_and_rate_limits_are_retried() {
    let server = Server::start(vec![
        Step::Http(500, "{\"error\": \"loading model\"}".into()),
        Step::Close,
        ok(DOCUMENT_ANSWER),
    ]);
    let work = tempfile::tempdir().unwrap();
    let (_d, input) = writer_input();
    let s = spec(&server.url(), "20s", &[]);
    let out = driver(&s, work.path())
        .run(&input, &ctx(work.path()))
        .unwrap();
    assert_eq!(
        out.output.outcome,
        Outcome::Completed,
        "{:?}",
        out.transcript
    );
    assert_eq!(server.seen().len(), 3);
    assert!(out.transcript.unwrap().contains("HTTP 500"));

    // A rate limit that does not pass: see `limits::a_rate_limit_still_there_after_the_tries`.

    // A server that says how long to wait is waited for (the test backoff is 10 ms).
    let server = Server::start(vec![Step::Limited(1), ok(DOCUMENT_ANSWER)]);
    let s = spec(&server.url(), "20s", &[]);
    let began = std::time::Instant::now();
    let out = driver(&s, work.path())
        .run(&input, &ctx(work.path()))
        .unwrap();
    assert_eq!(out.output.outcome, Outcome::Completed);
    assert!(
        began.elapsed() >= Duration::from_millis(900),
        "{:?}",
        began.elapsed()
    );
}

#[test]
fn client_errors_fail_at_once_with_the_message() {
    let body = "{\"error\": {\"message\": \"model 'test-model' not found, try pulling it first\"}}";
    let server = Server::start(vec![Step::Http(400, body.into()), ok(DOCUMENT_ANSWER)]);
    let work = tempfile::tempdir().unwrap();
    let (_d, input) = writer_input();
    let s = spec(&server.url(), "20s", &[]);
    let out = driver(&s, work.path())
        .run(&input, &ctx(work.path()))
        .unwrap();
    let why = failure(&out);
    assert!(
        why.contains("answered HTTP 400: model 'test-model' not found"),
        "{why}"
    );
    assert!(!why.contains("tries"), "{why}");
    assert_eq!(server.seen().len(), 1);
    assert_eq!(out.raw, body);
}

#[test]
fn bodies_that_are_not_completions_fail_clearly() {
    let work = tempfile::tempdir().unwrap();
    let (_d, input) = writer_input();
    let run = |body: &str| {
        let server = Server::start(vec![Step::Http(200, body.into())]);
        let s = spec(&server.url(), "20s", &[]);
        let out = driver(&s, work.path())
            .run(&input, &ctx(work.path()))
            .unwrap();
        assert_eq!(server.seen().len(), 1);
        out
    };
    let html = "<html><body>502 Bad Gateway</body></html>";
    let out = run(html);
    let why = failure(&out);
    assert!(
        why.contains("not valid JSON") && why.contains("<html>"),
        "{why}"
    );
    assert_eq!(out.raw, html);
    let out = run("{\"object\": \"list\", \"data\": []}");
    assert!(
        failure(&out).contains("has no `choices`"),
        "{}",
        failure(&out)
    );
    let empty = json!({"choices": [{"message": {"content": null}, "finish_reason": "length"}]});
    let out = run(&empty.to_string());
    assert!(failure(&out).contains("no text (finish_reason: length)"));
}

#[test]
fn a_server_that_never_answers_times_out() {
    let server = Server::start(vec![Step::Hang, Step::Hang]);
    let work = tempfile::tempdir().unwrap();
    let (_d, input) = writer_input();
    let s = spec(&server.url(), "300ms", &[]);
    let started = Instant::now();
    let out = driver(&s, work.path())
        .run(&input, &ctx(work.path()))
        .unwrap();
    let why = failure(&out);
    assert!(why.contains("did not answer within 300ms"), "{why}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(server.seen().len(), 1, "a timeout is not repeated");
}

#[test]
fn a_refused_connection_is_retried_then_fails() {
    let addr = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let work = tempfile::tempdir().unwrap();
    let (_d, input) = writer_input();
    let s = spec(&format!("http://{addr}/v1"), "5s", &[]);
    let out = driver(&s, work.path())
        .run(&input, &ctx(work.path()))
        .unwrap();
    let why = failure(&out);
    assert!(
        why.contains("cannot reach") && why.contains("after 3 tries"),
        "{why}"
    );
}

/// `text` in pieces of `n` characters, as a server streams it.
fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

#[test]
fn every_request_carries_an_output_bound() {
    let work = tempfile::tempdir().unwrap();
    let (_d, input) = writer_input();
    let bound_of = |s: &AgentSpec| {
        let server = Server::start(vec![ok(DOCUMENT_ANSWER)]);
        let mut s = s.clone();
        s.url = Some(server.url());
        let out = driver(&s, work.path())
            .run(&input, &ctx(work.path()))
            .unwrap();
        assert_eq!(out.output.outcome, Outcome::Completed);
        let body = server.seen()[0].json();
        assert_eq!(body["stream"], true, "{body}");
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert!(body.get("max_completion_tokens").is_none());
        assert!(out.transcript.unwrap().contains("output bound"));
        body["max_tokens"].clone()
    };
    let mut s = spec("http://127.0.0.1:9/v1", "20s", &[]);
    assert_eq!(bound_of(&s), 8192, "a writer's default");
    s.context_tokens = Some(4096);
    assert_eq!(bound_of(&s), 2048, "at most half the context");
    s.max_output_tokens = Some(300);
    assert_eq!(bound_of(&s), 300, "configured");

    // Roles: documents and code get the most, opinions the least.
    let d = driver(&spec("http://127.0.0.1:9/v1", "20s", &[]), work.path());
    assert_eq!(d.output_bound(&Role::Planner), 8192);
    assert_eq!(d.output_bound(&Role::Executor), 8192);
    assert_eq!(d.output_bound(&Role::Analyst), 4096);
    assert_eq!(d.output_bound(&Role::Critic), 2048);
    assert_eq!(d.output_bound(&Role::Reviewer), 2048);
    assert_eq!(d.prompt_limit(&Role::Writer), PROMPT_LIMIT);

    // A bound that leaves no room for a prompt, or a zero, is refused when the driver is made.
    let mut bad = spec("http://127.0.0.1:9/v1", "20s", &[]);
    bad.context_tokens = Some(2048);
    bad.max_output_tokens = Some(2000);
    let e = OpenAiDriver::build("local", &bad, work.path(), |_| None)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("agent `local`: `max_output_tokens` (2000) leaves no room"),
        "{e}"
    );
    bad.max_output_tokens = Some(0);
    let e = OpenAiDriver::build("local", &bad, work.path(), |_| None)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("`max_output_tokens` must be a positive"), "{e}");
}

#[test]
fn a_server_that_wants_max_completion_tokens_gets_it() {
    let refusal = "{\"error\": {\"message\": \"Unsupported parameter: 'max_tokens' is not \
            supported with this model. Use 'max_completion_tokens' instead.\", \"type\": \
            \"invalid_request_error\", \"param\": \"max_tokens\", \"code\": \"unsupported_parameter\"}}";
    let server = Server::start(vec![Step::Http(400, refusal.into()), ok(DOCUMENT_ANSWER)]);
    let work = tempfile::tempdir().unwrap();
    let (_d, input) = writer_input();
    let s = spec(&server.url(), "20s", &[]);
    let out = driver(&s, work.path())
        .run(&input, &ctx(work.path()))
        .unwrap();
    assert_eq!(
        out.output.outcome,
        Outcome::Completed,
        "{:?}",
        out.transcript
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].json()["max_tokens"], 8192);
    assert_eq!(seen[1].json()["max_completion_tokens"], 8192);
    assert!(seen[1].json().get("max_tokens").is_none());
}

#[test]
fn a_server_that_cannot_stream_is_asked_for_a_plain_answer() {
    let refusal = "{\"error\": {\"message\": \"Unrecognized request argument supplied: \
            stream_options\", \"type\": \"invalid_request_error\"}}";
    let server = Server::start(vec![
        Step::Http(400, refusal.into()),
        ok(DOCUMENT_ANSWER),
        ok(DOCUMENT_ANSWER),
    ]);
    let work = tempfile::tempdir().unwrap();
    let (_d, input) = writer_input();
    let s = spec(&server.url(), "20s", &[]);
    let d = driver(&s, work.path());
    let out = d.run(&input, &ctx(work.path())).unwrap();
    assert_eq!(
        out.output.outcome,
        Outcome::Completed,
        "{:?}",
        out.transcript
    );
    let out = d.run(&input, &ctx(work.path())).unwrap();
    assert_eq!(out.output.outcome, Outcome::Completed);
    let seen = server.seen();
    assert_eq!(seen.len(), 3);
    assert!(refuses_streaming("'stream' is not supported"));
    assert!(!refuses_streaming("the upstream model is missing"));
    assert_eq!(seen[0].json()["stream"], true);
    for later in &seen[1..] {
        let body = later.json();
        assert_eq!(body["stream"], false, "{body}");
        assert!(body.get("stream_options").is_none());
        assert_eq!(body["max_tokens"], 8192, "the bound stays");
    }
}

#[test]
fn a_streamed_answer_is_assembled_and_the_rest_left_unread() {
    let server = Server::start(vec![
        Step::Sse(pieces(DOCUMENT_ANSWER, 5), Tail::Forever),
        Step::Sse(pieces(DOCUMENT_ANSWER, 3), Tail::Done("stop")),
    ]);
    let work = tempfile::tempdir().unwrap();
    let (_d, input) = writer_input();
    let s = spec(&server.url(), "20s", &[]);
    let mut c = ctx(work.path());
    c.meter = Meter::new();
    // Garbage after a complete result block: not waited for.
    let out = driver(&s, work.path()).run(&input, &c).unwrap();
    assert_eq!(
        out.output.outcome,
        Outcome::Completed,
        "{:?}",
        out.transcript
    );
    assert_eq!(out.output.summary, "wrote the requirements");
    assert_eq!(
        out.output.files,
        vec![(
            "spec/requirements/_index.md".to_owned(),
            b"# Requirements\n\n- REQ-001\n".to_vec()
        )]
    );
    // Read: the answer, then BOUND_SLACK + 1 garbage chunks, the last of which closes it.
    let n = pieces(DOCUMENT_ANSWER, 5).len() as u64 + BOUND_SLACK + 1;
    assert_eq!(c.meter.read(), n, "one token a chunk, counted as they came");
    assert_eq!(
        out.usage.output_tokens, n,
        "no usage came: the chunks are counted"
    );
    assert_eq!(out.usage.input_tokens, 0, "nothing is made up");
    assert_eq!(out.usage.model.as_deref(), Some("streamed-model"));
    assert_eq!(out.raw.matches("data: ").count() as u64, n, "{}", out.raw);
    assert!(
        out.raw.contains(&format!("GARBAGE{} ", BOUND_SLACK + 1)),
        "{}",
        out.raw
    );
    assert!(
        !out.raw.contains(&format!("GARBAGE{} ", BOUND_SLACK + 2)),
        "the raw record is what was read"
    );
    assert!(
        out.transcript
            .as_ref()
            .unwrap()
            .contains("result block complete, the stream closed by git-tlv4")
    );
    drop(out);
    // The server saw its client hang up.
    let written = loop {
        if let Some(w) = server.written.lock().unwrap().first().copied() {
            break w;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(written < 10_000_000, "{written}");

    // A stream that ends by itself, with usage in its last chunk.
    let out = driver(&s, work.path()).run(&input, &c).unwrap();
    assert_eq!(
        out.output.outcome,
        Outcome::Completed,
        "{:?}",
        out.transcript
    );
    assert_eq!(out.output.files.len(), 1);
    assert_eq!(out.usage.input_tokens, 77);
    assert_eq!(
        out.usage.output_tokens,
        pieces(DOCUMENT_ANSWER, 3).len() as u64
    );
}

#[test]
fn a_stream_that_never_ends_is_closed_at_the_bound() {
    let forever = || Step::Sse(vec!["Let me think. ".into()], Tail::Forever);
    let server = Server::start(vec![forever(), forever(), forever(), forever()]);
    let work = tempfile::tempdir().unwrap();
    let (_d, input) = writer_input();
    let mut s = spec(&server.url(), "20s", &[]);
    s.max_output_tokens = Some(50);
    let mut c = ctx(work.path());
    c.meter = Meter::new();
    let out = driver(&s, work.path()).run(&input, &c).unwrap();
    let why = failure(&out);
    assert!(why.contains("rejected 3 times"), "{why}");
    assert!(
        why.contains("reached the output bound of 50 tokens before its result block began"),
        "{why}"
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 3, "one request per answer, no more");
    assert!(seen.iter().all(|r| r.json()["max_tokens"] == 50));
    assert!(
        seen[1].user().contains("output bound of 50 tokens"),
        "sent back with the problem"
    );
    // What arrived of the last answer, up to where it was closed.
    let chunks = 50 + BOUND_SLACK;
    assert_eq!(
        out.raw.matches("data: ").count() as u64,
        chunks,
        "{}",
        out.raw
    );
    assert!(out.raw.starts_with(": ping") && out.raw.contains("Let me think."));
    assert!(out.raw.contains(&format!("GARBAGE{} ", chunks - 1)));
    assert_eq!(c.meter.read(), 3 * chunks);
    assert_eq!(out.usage.output_tokens, 3 * chunks);
    assert!(
        out.transcript
            .unwrap()
            .contains("past the output bound, the stream closed by git-tlv4")
    );
}

#[test]
fn an_answer_cut_at_the_bound_is_sent_back_as_such() {
    let cut = Step::Http(
        200,
        json!({"choices": [{"message": {"content": "```json\n{\"summary\": \"x\", \"state"},
                                "finish_reason": "length"}],
                   "usage": {"prompt_tokens": 10, "completion_tokens": 2048}})
        .to_string(),
    );
    let server = Server::start(vec![cut, ok(DOCUMENT_ANSWER)]);
    let work = tempfile::tempdir().unwrap();
    let (_d, input) = writer_input();
    let s = spec(&server.url(), "20s", &[]);
    let out = driver(&s, work.path())
        .run(&input, &ctx(work.path()))
        .unwrap();
    assert_eq!(out.output.outcome, Outcome::Completed);
    let retry = server.seen()[1].user();
    assert!(
        retry
            .contains("reached the output bound of 8192 tokens before its result block was closed"),
        "{retry}"
    );
    assert!(
        retry.contains("not closed"),
        "the parser's words follow: {retry}"
    );
}

#[test]
fn a_prompt_too_long_for_the_context_fails_at_once() {
    let llama = "{\"error\":{\"code\":400,\"message\":\"the request exceeds the available \
            context size, try increasing it\",\"type\":\"exceed_context_size_error\",\
            \"n_prompt_tokens\":8287,\"n_ctx\":8192}}";
    let server = Server::start(vec![Step::Http(400, llama.into()), ok(DOCUMENT_ANSWER)]);
    let work = tempfile::tempdir().unwrap();
    let (_d, input) = writer_input();
    let s = spec(&server.url(), "20s", &[]);
    let out = driver(&s, work.path())
        .run(&input, &ctx(work.path()))
        .unwrap();
    let why = failure(&out);
    let seen = server.seen();
    assert_eq!(seen.len(), 1, "not sent again");
    let body = seen[0].json();
    let chars = body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .chars()
        .count()
        + body["messages"][1]["content"]
            .as_str()
            .unwrap()
            .chars()
            .count();
    assert!(why.starts_with("agent `local` (openai): the server refused the prompt as longer than the model's context"), "{why}");
    assert!(why.contains("exceeds the available context size"), "{why}");
    assert!(
            why.contains(&format!(
                "the prompt was {chars} characters, ~{} tokens estimated (8287 tokens as the server counted them)",
                chars.div_ceil(3)
            )),
            "{why}"
        );
    assert!(why.contains("the server's limit is 8192 tokens"), "{why}");
    assert!(
        why.contains("Set `context_tokens = 8192` under [agents.local]"),
        "{why}"
    );
    assert_eq!(out.raw, llama);

    // OpenAI's shape says it in words.
    let openai = "{\"error\": {\"message\": \"This model's maximum context length is 16,385 \
            tokens. However, your messages resulted in 20,017 tokens. Please reduce the length \
            of the messages.\", \"type\": \"invalid_request_error\", \"param\": \"messages\", \
            \"code\": \"context_length_exceeded\"}}";
    let server = Server::start(vec![Step::Http(400, openai.into()), ok(DOCUMENT_ANSWER)]);
    let mut s = spec(&server.url(), "20s", &[]);
    s.context_tokens = Some(32000);
    let out = driver(&s, work.path())
        .run(&input, &ctx(work.path()))
        .unwrap();
    let why = failure(&out);
    assert_eq!(server.seen().len(), 1);
    assert!(
        why.contains("(20017 tokens as the server counted them)"),
        "{why}"
    );
    assert!(why.contains("the server's limit is 16385 tokens"), "{why}");
    assert!(why.contains("`context_tokens` is 32000: lower it"), "{why}");
}

#[test]
fn prompts_fit_the_context_with_large_documents_summarised() {
    let (_d, code) = crate::prompt::tests::empty_code();
    let huge = format!(
        "# Requirements\n\n{}",
        "## REQ\n\nlong requirement text\n".repeat(20_000)
    );
    let input = crate::prompt::tests::input(
        "DRAFT-003",
        "writer",
        "PURPOSE: architecture\nCONTEXT:\n  - Upstream artifacts: DRAFT-002: spec/requirements/_index.md\nEXPECTED: spec/architecture/\n",
        &[
            ("spec/requirements/_index.md", &huge),
            ("wisdom/learnings.md", "# L\n\n- be brief\n"),
        ],
        code,
    );
    let server = Server::start(vec![ok(DOCUMENT_ANSWER)]);
    let work = tempfile::tempdir().unwrap();
    let mut s = spec(&server.url(), "20s", &[]);
    s.context_tokens = Some(8192);
    let d = driver(&s, work.path());
    let limit = d.prompt_limit(&Role::Writer);
    assert_eq!(limit, (8192 - 4096 - TEMPLATE_TOKENS as usize) * 3);
    let out = d.run(&input, &ctx(work.path())).unwrap();
    assert_eq!(
        out.output.outcome,
        Outcome::Completed,
        "{:?}",
        out.transcript
    );
    let body = server.seen()[0].json();
    let size = body["messages"][0]["content"].as_str().unwrap().len()
        + body["messages"][1]["content"].as_str().unwrap().len();
    assert!(size <= limit, "{size} > {limit}");
    assert_eq!(body["max_tokens"], 4096);
    let user = server.seen()[0].user();
    assert!(user.contains("- spec/requirements/_index.md ("), "{user}");
    assert!(user.contains("shown as a summary only"));
    let t = out.transcript.unwrap();
    assert!(
            t.contains(&format!(
                "summarised to fit (headings and first lines only): spec/requirements/_index.md ({} bytes)",
                huge.len()
            )),
            "{t}"
        );
    assert!(t.contains("context_tokens 8192"), "{t}");
    // An explicit budget wins.
    let mut s2 = s.clone();
    s2.prompt_budget = Some(3000);
    assert_eq!(driver(&s2, work.path()).prompt_limit(&Role::Writer), 9000);
}

/// A git repository with `hello.txt` committed, inside a directory that also holds
/// `outside.txt`.
fn repo() -> (tempfile::TempDir, PathBuf) {
    let top = tempfile::tempdir().unwrap();
    let repo = top.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    hermetic_git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("hello.txt"), "one\ntwo\nthree\n").unwrap();
    hermetic_git(&repo, &["add", "hello.txt"]);
    hermetic_git(&repo, &["commit", "-q", "-m", "init"]);
    std::fs::write(top.path().join("outside.txt"), "keep\n").unwrap();
    (top, repo)
}

fn code_answer(diff: &str, files: &[&str]) -> String {
    let files = serde_json::to_string(files).unwrap();
    format!(
        "The change.\n\n```diff\n{diff}```\n\n```json\n{{\"summary\": \"changed hello\", \
             \"state_update\": {{\"files_modified\": {files}, \"verification\": \
             \"self-validated\"}}}}\n```\n"
    )
}

const GOOD_DIFF: &str = "diff --git a/hello.txt b/hello.txt\n--- a/hello.txt\n+++ b/hello.txt\n\
        @@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n";

#[test]
fn a_code_task_applies_its_diff_in_the_workdir() {
    let (_top, repo) = repo();
    // The first diff has a wrong context line: it is sent back once with git's words.
    let stale = GOOD_DIFF.replace(" three\n", " four\n");
    let server = Server::start(vec![
        ok(&code_answer(&stale, &["hello.txt"])),
        ok(&code_answer(GOOD_DIFF, &[])),
    ]);
    let (_d, input) = executor_input();
    let s = spec(&server.url(), "20s", &[]);
    let out = driver(&s, &repo).run(&input, &ctx(&repo)).unwrap();
    assert_eq!(
        out.output.outcome,
        Outcome::Completed,
        "{:?}",
        out.transcript
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("hello.txt")).unwrap(),
        "one\nTWO\nthree\n"
    );
    assert!(out.output.files.is_empty());
    assert_eq!(out.output.state_update.files_modified, vec!["hello.txt"]);

    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    let first = seen[0].user();
    assert!(
        first.contains("# The code") && first.contains("## hello.txt"),
        "{first}"
    );
    assert!(first.contains("one\ntwo\nthree"), "the file is shown");
    assert!(first.contains("tagged `diff`") && first.contains("ONE unified diff"));
    assert!(first.find("# The code") < first.find("\n# Result\n"));
    let retry = seen[1].user();
    assert!(retry.contains(RETRY_HEADING), "{retry}");
    assert!(retry.contains("your diff does not apply"), "{retry}");
    assert!(retry.contains("patch failed: hello.txt"), "{retry}");
    assert!(out.transcript.unwrap().contains("applied: hello.txt"));
}

#[test]
fn a_code_task_without_a_diff() {
    let (_top, repo) = repo();
    let (_d, input) = executor_input();
    let no_diff = |files: &str| {
        format!(
            "```json\n{{\"summary\": \"nothing\", \"state_update\": {{\"files_modified\": \
                 {files}}}}}\n```\n"
        )
    };
    let listed = || ok(&no_diff("[\"hello.txt\"]"));
    let server = Server::start(vec![listed(), listed(), listed(), ok(&no_diff("[]"))]);
    let s = spec(&server.url(), "20s", &[]);
    // Sent back with the problem like any broken contract, then failed.
    let out = driver(&s, &repo).run(&input, &ctx(&repo)).unwrap();
    let f = failure(&out);
    assert!(
        f.contains("rejected 3 times") && f.contains("the answer carried no patch"),
        "{f}"
    );
    // Nothing to change is fine.
    let out = driver(&s, &repo).run(&input, &ctx(&repo)).unwrap();
    assert_eq!(out.output.outcome, Outcome::Completed);
    assert_eq!(
        std::fs::read_to_string(repo.join("hello.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );
}

#[test]
fn diffs_outside_the_tree_or_into_git_are_refused() {
    let (top, repo) = repo();
    let config_before = std::fs::read_to_string(repo.join(".git/config")).unwrap();
    let git_config = "diff --git a/.git/config b/.git/config\n--- a/.git/config\n\
            +++ b/.git/config\n@@ -1 +1,2 @@\n [core]\n+\thooksPath = /tmp/evil\n";
    let outside = "--- a/../outside.txt\n+++ b/../outside.txt\n@@ -1 +1 @@\n-keep\n+gone\n";
    let server = Server::start(vec![
        ok(&code_answer(git_config, &[".git/config"])),
        ok(&code_answer(outside, &["hello.txt"])),
        ok(&code_answer(GOOD_DIFF, &["hello.txt"])),
    ]);
    let (_d, input) = executor_input();
    let s = spec(&server.url(), "20s", &[]);
    let out = driver(&s, &repo).run(&input, &ctx(&repo)).unwrap();
    let why = failure(&out);
    assert!(why.contains("its change was not applied"), "{why}");
    assert!(why.contains("outside"), "{why}");
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "a refused diff is sent back once");
    let retry = seen[1].user();
    assert!(retry.contains("touches `.git/config`"), "{retry}");
    assert_eq!(
        std::fs::read_to_string(repo.join(".git/config")).unwrap(),
        config_before
    );
    assert_eq!(
        std::fs::read_to_string(top.path().join("outside.txt")).unwrap(),
        "keep\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("hello.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );

    // git refuses a path outside the tree by itself too.
    let file = top.path().join("outside.diff");
    std::fs::write(&file, outside).unwrap();
    assert!(git_apply(&repo, &file).is_err());
    assert_eq!(
        std::fs::read_to_string(top.path().join("outside.txt")).unwrap(),
        "keep\n"
    );
}

#[test]
fn refused_paths() {
    assert_eq!(refusal("src/lib.rs"), None);
    assert_eq!(refusal("docs/.gitignore"), None);
    assert!(refusal(".git/config").is_some());
    assert!(refusal("sub/.GIT/hooks/pre-commit").is_some());
    assert!(refusal(".git").is_some());
    assert!(refusal(".tlv4/sessions/x/session.toml").is_some());
    assert!(refusal("./.tlv4/x").is_some());
    assert!(refusal("../outside").is_some());
    assert!(refusal("a/../../b").is_some());
    assert!(refusal("/etc/passwd").is_some());
    assert_eq!(refusal("src/.tlv4/x"), None);
}

#[test]
fn patches_are_taken_from_diff_blocks() {
    let text = "Intro\n```rust\nfn main() {}\n```\n```diff\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n```\n\
                    ```patch\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-c\n+d\n```\n```json\n{}\n```\n";
    let patch = extract_patch(text).unwrap().unwrap();
    assert!(
        patch.starts_with("--- a/x\n") && patch.contains("+d\n"),
        "{patch}"
    );
    assert!(!patch.contains("fn main"));
    assert_eq!(extract_patch("```json\n{}\n```\n").unwrap(), None);
    assert!(extract_patch("```diff\n--- a/x\n+++ b/x\n").is_err());
}
