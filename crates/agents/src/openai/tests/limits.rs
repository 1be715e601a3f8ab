//! The `openai` driver under a service's limits and the task's bound: a short `Retry-After`
//! is waited out, a long one or a spent quota is [`Error::Limited`] at once, a 429 that does
//! not pass is one after the tries, and a stream past the task's bound is closed with
//! [`Error::OverBound`].

use super::*;
use tlv4_core::error::Error;

fn limited(r: Result<DriverOutput>) -> (Option<u64>, String) {
    match r {
        Err(Error::Limited {
            agent,
            until_ms,
            detail,
        }) => {
            assert_eq!(agent, "local");
            (until_ms, detail)
        }
        Err(e) => panic!("expected a limit, got the error {e}"),
        Ok(out) => panic!("expected a limit, got {:?}", out.transcript),
    }
}

#[test]
fn a_long_retry_after_is_a_limit_not_a_wait() {
    let work = tempfile::tempdir().unwrap();
    let (_d, input) = writer_input();
    let slow = "{\"error\": {\"message\": \"Rate limit reached\", \"type\": \"requests\"}}";
    let server = Server::start(vec![
        Step::Refused(429, "3600".into(), slow.into()),
        ok(DOCUMENT_ANSWER),
    ]);
    let s = spec(&server.url(), "20s", &[]);
    let began = Instant::now();
    let now = tlv4_core::clock::now_ms();
    let (until, detail) = limited(driver(&s, work.path()).run(&input, &ctx(work.path())));
    let until = until.unwrap();
    assert!(
        until >= now + 3_600_000 && until < now + 3_610_000,
        "{until} vs {now}"
    );
    assert!(detail.contains("HTTP 429: Rate limit reached"), "{detail}");
    // Not waited for, not repeated.
    assert!(began.elapsed() < Duration::from_secs(5));
    assert_eq!(server.seen().len(), 1);

    // The same as an HTTP date, and from an overloaded server (529).
    let date = jiff::Timestamp::from_millisecond(i64::try_from(now).unwrap() + 7_200_000)
        .unwrap()
        .strftime("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    let server = Server::start(vec![Step::Refused(
        529,
        date,
        "{\"error\": {\"message\": \"Overloaded\"}}".into(),
    )]);
    let s = spec(&server.url(), "20s", &[]);
    let (until, detail) = limited(driver(&s, work.path()).run(&input, &ctx(work.path())));
    assert!(
        until.unwrap().abs_diff(now + 7_200_000) < 10_000,
        "{until:?}"
    );
    assert!(detail.contains("HTTP 529: Overloaded"), "{detail}");
}

#[test]
fn a_spent_quota_is_a_limit_at_once() {
    let work = tempfile::tempdir().unwrap();
    let (_d, input) = writer_input();
    let spent = "{\"error\": {\"message\": \"You exceeded your current quota, please check your \
                 plan and billing details.\", \"type\": \"insufficient_quota\", \"param\": null, \
                 \"code\": \"insufficient_quota\"}}";
    let server = Server::start(vec![Step::Http(429, spent.into()), ok(DOCUMENT_ANSWER)]);
    let s = spec(&server.url(), "20s", &[]);
    let (until, detail) = limited(driver(&s, work.path()).run(&input, &ctx(work.path())));
    assert_eq!(until, None);
    assert!(detail.contains("exceeded your current quota"), "{detail}");
    assert_eq!(server.seen().len(), 1);
    // With a Retry-After, that is the reset.
    let server = Server::start(vec![Step::Refused(429, "5".into(), spent.into())]);
    let s = spec(&server.url(), "20s", &[]);
    let now = tlv4_core::clock::now_ms();
    let (until, _) = limited(driver(&s, work.path()).run(&input, &ctx(work.path())));
    assert!(until.unwrap().abs_diff(now + 5000) < 3000, "{until:?}");
}

#[test]
fn a_rate_limit_still_there_after_the_tries() {
    let work = tempfile::tempdir().unwrap();
    let (_d, input) = writer_input();
    let slow = "{\"error\": {\"message\": \"Rate limit reached\", \"type\": \"requests\"}}";
    let server = Server::start((0..4).map(|_| Step::Http(429, slow.to_owned())).collect());
    let s = spec(&server.url(), "20s", &[]);
    let (until, detail) = limited(driver(&s, work.path()).run(&input, &ctx(work.path())));
    assert_eq!(until, None);
    assert!(
        detail.contains("HTTP 429: Rate limit reached (still, after the tries)"),
        "{detail}"
    );
    assert_eq!(server.seen().len(), 3);
    // A short wait the server asks for is waited out, as before (the test backoff is 10 ms).
    let server = Server::start(vec![
        Step::Refused(429, "1".into(), slow.into()),
        ok(DOCUMENT_ANSWER),
    ]);
    let s = spec(&server.url(), "20s", &[]);
    let began = Instant::now();
    let out = driver(&s, work.path())
        .run(&input, &ctx(work.path()))
        .unwrap();
    assert_eq!(out.output.outcome, Outcome::Completed);
    assert!(began.elapsed() >= Duration::from_millis(900));
    // A server error that does not pass stays a failure.
    let server = Server::start(
        (0..4)
            .map(|_| Step::Http(503, "{\"error\": \"down\"}".into()))
            .collect(),
    );
    let s = spec(&server.url(), "20s", &[]);
    let out = driver(&s, work.path())
        .run(&input, &ctx(work.path()))
        .unwrap();
    assert!(failure(&out).contains("HTTP 503 (after 3 tries)"));
}

#[test]
fn a_stream_past_the_tasks_bound_is_closed() {
    let forever = Step::Sse(vec!["Let me think. ".into()], Tail::Forever);
    let server = Server::start(vec![forever, ok(DOCUMENT_ANSWER)]);
    let work = tempfile::tempdir().unwrap();
    let run_dir = work.path().join("run");
    let (_d, input) = writer_input();
    let s = spec(&server.url(), "20s", &[]);
    let mut c = ctx(work.path());
    c.meter = Meter::bounded(Some(1000));
    c.run_dir = Some(run_dir.clone());
    match driver(&s, work.path()).run(&input, &c) {
        Err(Error::OverBound { agent, detail }) => {
            assert_eq!(agent, "local");
            assert_eq!(detail, "1,001 tokens counted, bound 1,000");
        }
        Err(e) => panic!("{e}"),
        Ok(out) => panic!("{:?}", out.transcript),
    }
    assert_eq!(c.meter.read(), 1001);
    // One request: no other answer was asked for.
    assert_eq!(server.seen().len(), 1);
    let transcript = std::fs::read_to_string(run_dir.join("transcript.txt")).unwrap();
    assert!(
        transcript.contains("past the task's bound, the stream closed by git-tlv4"),
        "{transcript}"
    );
    // A meter already over its bound asks for nothing.
    let server = Server::start(vec![ok(DOCUMENT_ANSWER)]);
    let s = spec(&server.url(), "20s", &[]);
    let mut c = ctx(work.path());
    c.meter = Meter::bounded(Some(10));
    c.meter.add(11);
    assert!(matches!(
        driver(&s, work.path()).run(&input, &c),
        Err(Error::OverBound { .. })
    ));
    assert!(server.seen().is_empty());
}
