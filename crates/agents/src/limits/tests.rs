//! The limits of each CLI, in the words the services print.

use super::*;

/// `2026-12-07T19:00:00Z`, a Monday.
const NOW: u64 = 1_796_670_000_000;

fn ms(rfc3339: &str) -> u64 {
    tlv4_core::clock::parse_rfc3339_ms(rfc3339).unwrap()
}

fn limit(cli: &str, text: &str) -> Limit {
    recognise_at(cli, text, NOW).unwrap_or_else(|| panic!("{cli}: not a limit: {text}"))
}

#[test]
fn now_is_what_the_tests_think() {
    assert_eq!(
        tlv4_core::clock::rfc3339_ms(NOW),
        "2026-12-07T19:00:00.000Z"
    );
}

#[test]
fn claude_usage_limits_and_their_resets() {
    let l = limit("claude", "Claude AI usage limit reached|1797000000");
    assert_eq!(l.kind, Kind::Usage);
    assert_eq!(l.until_ms, Some(1_797_000_000_000));
    assert_eq!(l.detail, "Claude AI usage limit reached|1797000000");
    // A reset already past: the service still refuses, or the message was read a moment
    // late. It is tried again after a short grace.
    let l = limit("claude", "Claude AI usage limit reached|1755615600");
    assert_eq!(l.until_ms, Some(NOW + super::PAST_RESET_GRACE_MS));

    // A clock time in a named zone: the next 5pm in Warsaw (UTC+1 in December).
    let l = limit(
        "claude",
        "Claude usage limit reached. Your limit will reset at 5pm (Europe/Warsaw).",
    );
    assert_eq!(l.until_ms, Some(ms("2026-12-08T16:00:00Z")));

    // Already past today in Auckland (UTC+13): tomorrow's 2pm there.
    let l = limit(
        "claude",
        "5-hour limit reached · resets 2pm (Pacific/Auckland) · /upgrade to Max 20x or turn on /extra-usage",
    );
    assert_eq!(l.kind, Kind::Usage);
    assert_eq!(l.until_ms, Some(ms("2026-12-08T01:00:00Z")));

    let l = limit(
        "claude",
        "You’ve hit your session limit · resets 5:20am (America/Denver)\n     /usage-credits to finish what you’re working on.",
    );
    assert_eq!(l.until_ms, Some(ms("2026-12-08T12:20:00Z")));
    assert_eq!(
        l.detail,
        "You've hit your session limit · resets 5:20am (America/Denver)"
    );

    // No zone: UTC; later today.
    let l = limit(
        "claude",
        "You’ve hit your limit for Claude messages. Limits will reset at 9:30 PM.",
    );
    assert_eq!(l.until_ms, Some(ms("2026-12-07T21:30:00Z")));

    // A date: this year's if still to come, else next year's.
    let l = limit(
        "claude",
        "You've hit your weekly limit · resets Dec 15 at 7pm",
    );
    assert_eq!(l.until_ms, Some(ms("2026-12-15T19:00:00Z")));
    let l = limit(
        "claude",
        "You've hit your weekly limit · resets Sep 15 at 7pm",
    );
    assert_eq!(l.until_ms, Some(ms("2027-09-15T19:00:00Z")));
    let l = limit(
        "claude",
        "Weekly limit reached · resets Jan 12, 10:59am (America/New_York)",
    );
    assert_eq!(l.until_ms, Some(ms("2027-01-12T15:59:00Z")));

    // A zone the system does not know: UTC.
    let l = limit(
        "claude",
        "Weekly limit reached · resets 10am (Mars/Olympus)",
    );
    assert_eq!(l.until_ms, Some(ms("2026-12-08T10:00:00Z")));
}

#[test]
fn claude_rate_limits_pass_and_other_errors_are_no_limit() {
    let l = limit("claude", "API Error: Rate limit reached");
    assert_eq!(l.kind, Kind::Rate);
    assert_eq!(l.until_ms, None);
    assert!(l.passing(NOW));
    let l = limit(
        "claude",
        r#"API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your account's rate limit. Please try again later."}}"#,
    );
    assert_eq!(l.kind, Kind::Rate);
    for other in [
        r#"API Error: 400 {"type":"error","error":{"type":"invalid_request_error","message":"model: not found"}}"#,
        "Unable to connect to API (ConnectionRefused)",
        "prompt of 4290 bytes",
        "",
    ] {
        assert_eq!(recognise_at("claude", other, NOW), None, "{other}");
    }
}

#[test]
fn codex_usage_limits_and_their_resets() {
    let l = limit(
        "codex",
        "You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again in 4 days 6 hours 37 minutes.",
    );
    assert_eq!(l.kind, Kind::Usage);
    assert_eq!(l.until_ms, Some(NOW + ((4 * 24 + 6) * 60 + 37) * 60_000));
    assert!(!l.passing(NOW));
    let l = limit(
        "codex",
        "You've hit your usage limit. To get more access now, send a request to your admin or try again at 12:16 PM.",
    );
    assert_eq!(l.until_ms, Some(ms("2026-12-08T12:16:00Z")));
    let l = limit(
        "codex",
        "You've hit your usage limit. Visit https://chatgpt.com/codex/settings/usage to purchase more credits or try again at Apr 28th, 2027 10:03 PM.",
    );
    assert_eq!(l.until_ms, Some(ms("2027-04-28T22:03:00Z")));
    let l = limit(
        "codex",
        r#"unexpected status 429: {"type":"error","error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"plus","resets_at":1797936568,"resets_in_seconds":13872}}"#,
    );
    assert_eq!(l.kind, Kind::Usage);
    assert_eq!(l.until_ms, Some(1_797_936_568_000));
    let l = limit(
        "codex",
        "ERROR: Quota exceeded. Check your plan and billing details.",
    );
    assert_eq!((l.kind, l.until_ms), (Kind::Usage, None));
    let l = limit(
        "codex",
        "exceeded retry limit, last status: 429 Too Many Requests",
    );
    assert_eq!(l.kind, Kind::Rate);
    assert_eq!(
        recognise_at(
            "codex",
            "unexpected status 400 Bad Request: {\"error\":{\"message\":\"model not found\"}}",
            NOW
        ),
        None
    );
}

#[test]
fn gemini_quotas_and_rate_limits() {
    let l = limit(
        "gemini",
        "[API Error: You have exhausted your daily quota on this model.]",
    );
    assert_eq!((l.kind, l.until_ms), (Kind::Usage, None));
    let l = limit(
        "gemini",
        "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. Please retry in 43.5s.",
    );
    assert_eq!(l.kind, Kind::Usage);
    assert_eq!(l.until_ms, Some(NOW + 43_500));
    let l = limit(
        "gemini",
        "Quota exceeded for quota metric 'Gemini 2.5 Pro Requests' and limit 'Gemini 2.5 Pro Requests per day per user per tier' of service 'cloudcode-pa.googleapis.com'",
    );
    assert_eq!(l.kind, Kind::Usage);
    let l = limit(
        "gemini",
        "[API Error: {\"error\":{\"code\":429,\"message\":\"Resource has been exhausted (e.g. check quota).\",\"status\":\"RESOURCE_EXHAUSTED\"}}]",
    );
    assert_eq!((l.kind, l.until_ms), (Kind::Rate, None));
    assert!(l.passing(NOW));
    assert_eq!(
        recognise_at(
            "gemini",
            "[API Error: 400 Bad Request: model not found]",
            NOW
        ),
        None
    );
}

#[test]
fn qwen_and_openai_compatible_quotas() {
    let l = limit("qwen", "[API Error: 429 Free allocated quota exceeded.]");
    assert_eq!((l.kind, l.until_ms), (Kind::Usage, None));
    let l = limit(
        "qwen",
        "Allocated quota exceeded, please increase your quota limit. For details, see: https://help.aliyun.com/zh/model-studio/error-code#token-limit",
    );
    assert_eq!(l.kind, Kind::Usage);
    let l = limit("qwen", "[API Error: 429 status code (no body)]");
    assert_eq!(l.kind, Kind::Rate);
    assert_eq!(
        recognise_at(
            "qwen",
            "[API Error: Connection error. (cause: fetch failed)]",
            NOW
        ),
        None
    );
    let l = limit(
        "opencode",
        r#"{"error": {"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota", "code": "insufficient_quota"}}"#,
    );
    assert_eq!(l.kind, Kind::Usage);
    // An unknown CLI has no table.
    assert_eq!(recognise_at("command", "usage limit reached", NOW), None);
}

#[test]
fn waits_and_times_in_every_form() {
    assert_eq!(duration_ms("2 hours 30 minutes."), Some(9_000_000));
    assert_eq!(
        duration_ms("4 days 2 hours"),
        Some((4 * 24 + 2) * 3_600_000)
    );
    assert_eq!(duration_ms("2h30m"), Some(9_000_000));
    assert_eq!(duration_ms("37s"), Some(37_000));
    assert_eq!(
        duration_ms("1 hour, 5 minutes and 3 seconds"),
        Some(3_903_000)
    );
    assert_eq!(duration_ms("a while"), None);
    assert_eq!(
        reset_at("limit reached; resets at 2026-12-09T08:00:00Z.", NOW),
        Some(ms("2026-12-09T08:00:00Z"))
    );
    assert_eq!(
        reset_at("reset at 15:00 (Europe/Berlin)", NOW),
        Some(ms("2026-12-08T14:00:00Z"))
    );
    assert_eq!(
        reset_at("resets 12am", NOW),
        Some(ms("2026-12-08T00:00:00Z"))
    );
    assert_eq!(reset_at("resets_in_seconds: 90", NOW), Some(NOW + 90_000));
    assert_eq!(
        reset_at(
            r#"{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "43s"}"#,
            NOW
        ),
        Some(NOW + 43_000)
    );
    assert_eq!(reset_at("usage limit reached", NOW), None);
    assert_eq!(reset_at("resets whenever", NOW), None);
    assert_eq!(retry_after_ms("120", NOW), Some(120_000));
    assert_eq!(
        retry_after_ms("Tue, 08 Dec 2026 19:00:00 GMT", NOW),
        Some(24 * 3_600_000)
    );
    assert_eq!(retry_after_ms("soon", NOW), None);
}

#[test]
fn a_limit_becomes_the_error_the_coordinator_waits_on() {
    let l = limit("claude", "Claude AI usage limit reached|1797000000");
    match l.error("claude1") {
        Error::Limited {
            agent,
            until_ms,
            detail,
        } => {
            assert_eq!(agent, "claude1");
            assert_eq!(until_ms, Some(1_797_000_000_000));
            assert!(detail.contains("usage limit reached"));
        }
        e => panic!("{e:?}"),
    }
    // A rate limit that asks for more than a minute is not waited out inline.
    let l = Limit {
        kind: Kind::Rate,
        until_ms: Some(NOW + SHORT_WAIT_MS + 1),
        detail: String::new(),
    };
    assert!(!l.passing(NOW));
}

#[test]
fn a_service_that_failed_is_told_from_a_bad_request() {
    use super::service_failure;
    assert!(service_failure(
        "API Error: Unable to connect to API (ConnectionRefused)"
    ));
    assert!(service_failure(
        "API Error: 500 {\"type\":\"error\",\"error\":{\"type\":\"api_error\"}}"
    ));
    assert!(service_failure("[API Error: Connection error.]"));
    assert!(service_failure(
        "API Error: 529 {\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}"
    ));
    assert!(service_failure("unexpected status 503 Service Unavailable"));
    assert!(service_failure("HTTP 502 from the endpoint"));
    assert!(!service_failure(
        "API Error: 400 {\"type\":\"invalid_request_error\",\"message\":\"model: not found\"}"
    ));
    assert!(!service_failure("the answer was not JSON"));
    assert!(!service_failure("HTTP 404 not found"));
}
