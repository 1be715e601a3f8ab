//! Time stamps for state files and message ids.

use std::sync::atomic::{AtomicU64, Ordering};

/// Now, in seconds since the epoch: `GIT_COMMITTER_DATE` when it is set (so a fixed clock
/// fixes every time stamp, as git does for commits), the system clock otherwise.
pub fn now_seconds() -> i64 {
    fixed().unwrap_or_else(|| jiff::Timestamp::now().as_second())
}

/// The time `GIT_COMMITTER_DATE` fixes, if it is set and parses.
pub fn fixed() -> Option<i64> {
    let value = std::env::var("GIT_COMMITTER_DATE").ok()?;
    gix::date::parse(&value, None).ok().map(|t| t.seconds)
}

/// A duration from zero to `max`, different from one call (and one process) to the next:
/// the jitter racers sleep so that they spread out.
pub fn jitter(max: std::time::Duration) -> std::time::Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let seed = u64::from(nanos ^ std::process::id().wrapping_mul(2_654_435_761));
    let max = u64::try_from(max.as_micros()).unwrap_or(u64::MAX);
    std::time::Duration::from_micros(seed % max.saturating_add(1))
}

/// Now, RFC 3339 in UTC with seconds precision.
pub fn now_rfc3339() -> String {
    rfc3339(now_seconds())
}

/// `seconds` since the epoch, RFC 3339 in UTC.
pub fn rfc3339(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

/// Now by the system clock, in milliseconds since the epoch: for waits (a usage limit's
/// reset), which a fixed `GIT_COMMITTER_DATE` must not stop.
pub fn now_ms() -> u64 {
    u64::try_from(jiff::Timestamp::now().as_millisecond()).unwrap_or(0)
}

/// `ms` milliseconds since the epoch, RFC 3339 in UTC with milliseconds.
pub fn rfc3339_ms(ms: u64) -> String {
    jiff::Timestamp::from_millisecond(i64::try_from(ms).unwrap_or(i64::MAX))
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
        .unwrap_or_default()
}

/// An RFC 3339 time (`2026-12-07T18:00:00Z`, with or without fractions or an offset) in
/// milliseconds since the epoch.
pub fn parse_rfc3339_ms(text: &str) -> Option<u64> {
    let t: jiff::Timestamp = text.trim().parse().ok()?;
    u64::try_from(t.as_millisecond()).ok()
}

/// Today's local date as `yyyymmdd`, for session ids.
pub fn today_compact() -> String {
    match fixed().and_then(|s| jiff::Timestamp::from_second(s).ok()) {
        Some(t) => t.strftime("%Y%m%d").to_string(),
        None => jiff::Zoned::now().strftime("%Y%m%d").to_string(),
    }
}

/// An id that sorts in sending order and is unique across processes:
/// `<unix nanos, 20 digits>-<pid>-<counter>`.
pub fn unique_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = jiff::Timestamp::now().as_nanosecond();
    format!(
        "{nanos:020}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}
