//! Usage limits and rate limits: an agent's service that refuses work for now is a task that
//! waits, not one that failed. Each CLI words its limits its own way, in its own place (a
//! result object's text, an error event, stderr); its preset says where a failed run put its
//! error ([`super::command::Cli::failure_text`]) and this module recognises there, from one
//! table per CLI, whether that error is a limit ([`recognise`]) and when it resets
//! ([`reset_at`]).
//!
//! Two kinds: a *usage* limit (a plan's 5-hour or weekly allowance, a quota, a spent balance)
//! passes only at its reset, so the run is not repeated and the driver answers
//! [`Error::Limited`]; a *rate* limit (HTTP 429, "rate limit reached") usually passes in
//! seconds, so the run is repeated after a pause as before — and if it is still refused after
//! the tries, or the service asks for a wait longer than [`SHORT_WAIT_MS`], the driver answers
//! [`Error::Limited`] too.
//!
//! Reset times are read as the services write them: an epoch after a `|` (Claude's older
//! `Claude AI usage limit reached|1735689600`), `resets_at`/`resets_in_seconds` fields, an
//! RFC 3339 time, a wait ("try again in 4 days 2 hours 9 minutes", "Please retry in 37.5s"),
//! or a clock time ("resets 3pm (Europe/Berlin)", "reset at 9:30 AM", "resets Jan 12, 10:59am
//! (America/New_York)", "try again at Apr 28th, 2026 10:03 PM"): the next such moment in the
//! named zone, or in UTC when the message names none (or one the system does not know). A
//! message that gives no reset leaves it unknown.

use tlv4_core::error::Error;
use tlv4_core::text::excerpt;

/// The longest wait a rate limit may ask for and still be waited out inline (the request or
/// the run repeated after it); a longer one is a limit the task waits for.
pub const SHORT_WAIT_MS: u64 = 60_000;

/// What kind of limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An allowance or a quota: it passes at its reset.
    Usage,
    /// A rate limit: it usually passes in seconds.
    Rate,
}

/// A limit a service reported.
#[derive(Debug, Clone, PartialEq)]
pub struct Limit {
    /// Usage or rate.
    pub kind: Kind,
    /// When it resets, in milliseconds since the epoch, if the service said.
    pub until_ms: Option<u64>,
    /// What the service said, one line.
    pub detail: String,
}

impl Limit {
    /// Whether the refused run is worth repeating after a short pause: a rate limit that
    /// names no reset, or one within [`SHORT_WAIT_MS`] of `now_ms`.
    pub fn passing(&self, now_ms: u64) -> bool {
        self.kind == Kind::Rate
            && self
                .until_ms
                .is_none_or(|u| u.saturating_sub(now_ms) <= SHORT_WAIT_MS)
    }

    /// The error a driver of agent `agent` answers with.
    pub fn error(self, agent: &str) -> Error {
        Error::Limited {
            agent: agent.to_owned(),
            until_ms: self.until_ms,
            detail: self.detail,
        }
    }
}

/// What a service's words mean: lower-case phrases, most specific first.
type Table = &'static [(&'static str, Kind)];

/// Claude Code. Seen: "Claude AI usage limit reached|1755615600", "Claude usage limit reached.
/// Your limit will reset at 5pm (Europe/Warsaw).", "5-hour limit reached · resets 2pm
/// (Pacific/Auckland) · /upgrade to Max 20x or turn on /extra-usage", "Weekly limit reached ·
/// resets 10am (Asia/Seoul)", "You've hit your session limit · resets 5:20am
/// (America/Denver)", "You've hit your weekly limit · resets Sep 15 at 7pm", "You've hit your
/// limit for Claude messages. Limits will reset at 9:30 AM.", and for a rate limit "API
/// Error: Rate limit reached" or "rate_limit_error" with `api_error_status` 429.
const CLAUDE: Table = &[
    ("usage limit reached", Kind::Usage),
    ("hour limit reached", Kind::Usage),
    ("weekly limit reached", Kind::Usage),
    ("limit reached ·", Kind::Usage),
    ("limit reached ∙", Kind::Usage),
    ("you've hit your", Kind::Usage),
    ("limits will reset", Kind::Usage),
    ("limit will reset", Kind::Usage),
    ("credit balance is too low", Kind::Usage),
    ("rate limit", Kind::Rate),
    ("rate_limit_error", Kind::Rate),
    ("429", Kind::Rate),
];

/// Codex. Seen: "You've hit your usage limit. Upgrade to Pro
/// (https://openai.com/chatgpt/pricing) or try again in 4 days 6 hours 37 minutes.", "You've
/// hit your usage limit. To get more access now, send a request to your admin or try again at
/// 12:16 PM.", "… try again at Apr 28th, 2026 10:03 PM.", the service's body
/// `{"type":"usage_limit_reached","message":"The usage limit has been reached",…,
/// "resets_at":1777936568,"resets_in_seconds":13872}`, "Quota exceeded. Check your plan and
/// billing details.", and the API's "You exceeded your current quota" (`insufficient_quota`).
const CODEX: Table = &[
    ("usage limit", Kind::Usage),
    ("usage_limit_reached", Kind::Usage),
    ("insufficient_quota", Kind::Usage),
    ("exceeded your current quota", Kind::Usage),
    ("quota exceeded", Kind::Usage),
    ("rate limit", Kind::Rate),
    ("too many requests", Kind::Rate),
    ("429", Kind::Rate),
];

/// Gemini CLI. Seen: "[API Error: You have exhausted your daily quota on this model.]",
/// "You exceeded your current quota, please check your plan and billing details. … Please
/// retry in 43.1s.", "Quota exceeded for quota metric 'Gemini 2.5 Pro Requests' and limit
/// 'Gemini 2.5 Pro Requests per day per user per tier' …", "You've hit your daily limit of
/// requests with Gemini 2.5 Pro", and for a rate limit "Resource has been exhausted (e.g.
/// check quota)." / "Resource exhausted. Please try again later." with status
/// `RESOURCE_EXHAUSTED`, code 429 (exit 429 & 0xFF = 173).
const GEMINI: Table = &[
    ("daily quota", Kind::Usage),
    ("daily limit", Kind::Usage),
    ("exhausted your", Kind::Usage),
    ("per day", Kind::Usage),
    ("exceeded your current quota", Kind::Usage),
    ("resource_exhausted", Kind::Rate),
    ("resource exhausted", Kind::Rate),
    ("resource has been exhausted", Kind::Rate),
    ("quota exceeded", Kind::Rate),
    ("rate limit", Kind::Rate),
    ("too many requests", Kind::Rate),
    ("429", Kind::Rate),
];

/// Qwen Code (its `[API Error: …]` result text). Seen: "[API Error: 429 Free allocated quota
/// exceeded.]", "Allocated quota exceeded, please increase your quota limit.", the
/// OpenAI-compatible "You exceeded your current quota" (`insufficient_quota`), and for a rate
/// limit "[API Error: 429 status code (no body)]", "429 Too Many Requests".
const QWEN: Table = &[
    ("quota exceeded", Kind::Usage),
    ("insufficient_quota", Kind::Usage),
    ("exceeded your current quota", Kind::Usage),
    ("quota has been exhausted", Kind::Usage),
    ("rate limit", Kind::Rate),
    ("too many requests", Kind::Rate),
    ("429", Kind::Rate),
];

/// OpenCode and OpenAI-compatible endpoints: OpenAI's `insufficient_quota` ("You exceeded
/// your current quota, please check your plan and billing details."), and HTTP 429.
const OPENAI: Table = &[
    ("insufficient_quota", Kind::Usage),
    ("exceeded your current quota", Kind::Usage),
    ("quota exceeded", Kind::Usage),
    ("usage limit", Kind::Usage),
    ("billing_hard_limit_reached", Kind::Usage),
    ("rate limit", Kind::Rate),
    ("rate_limit_exceeded", Kind::Rate),
    ("too many requests", Kind::Rate),
    ("429", Kind::Rate),
];

fn table(cli: &str) -> Table {
    match cli {
        "claude" => CLAUDE,
        "codex" => CODEX,
        "gemini" => GEMINI,
        "qwen" => QWEN,
        "opencode" | "openai" | "aider" => OPENAI,
        _ => &[],
    }
}

/// What a CLI says when its service, not the agent, failed: it could not be reached, or it
/// answered with a server error (Claude Code's `Unable to connect to API (ConnectionRefused)`
/// and `API Error: 500 …`, Qwen's `[API Error: Connection error.]`, an `overloaded_error`, a
/// `503 Service Unavailable`). Such a run goes to the next agent of its role's fail-over list;
/// a bad request (400), a refused tool or a bad answer does not.
const SERVICE_FAILURES: [&str; 12] = [
    "unable to connect",
    "connection refused",
    "connectionrefused",
    "connection error",
    "econnrefused",
    "econnreset",
    "network error",
    "service unavailable",
    "internal server error",
    "overloaded",
    "bad gateway",
    "gateway timeout",
];

/// How long after now a limit whose announced reset has already passed is tried again.
pub const PAST_RESET_GRACE_MS: u64 = 60_000;

/// Whether `text` (the error a failed run reported, no limit) says its service failed:
/// one of [`SERVICE_FAILURES`], or an HTTP status of 500–599 after `api error` or `http`.
pub fn service_failure(text: &str) -> bool {
    let normal = normalise(text).to_lowercase();
    if SERVICE_FAILURES.iter().any(|p| normal.contains(p)) {
        return true;
    }
    ["api error: ", "api error ", "http "].iter().any(|lead| {
        normal.match_indices(lead).any(|(i, _)| {
            let rest = &normal[i + lead.len()..];
            let code: String = rest.chars().take_while(char::is_ascii_digit).collect();
            code.len() == 3 && code.starts_with('5')
        })
    })
}

/// Whether `text` (the error a run of CLI `cli` reported) is a limit, and which, with its
/// reset as of now.
pub fn recognise(cli: &str, text: &str) -> Option<Limit> {
    recognise_at(cli, text, tlv4_core::clock::now_ms())
}

/// [`recognise`] as of `now_ms`.
pub fn recognise_at(cli: &str, text: &str, now_ms: u64) -> Option<Limit> {
    let normal = normalise(text);
    let (at, kind) = table(cli)
        .iter()
        .find_map(|(phrase, kind)| find_phrase(&normal, phrase).map(|at| (at, *kind)))?;
    // The line that says it.
    let start = normal[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = normal[at..].find('\n').map_or(normal.len(), |i| at + i);
    let line = normal[start..end]
        .trim()
        .trim_start_matches(['■', '✕', '⎿', '●', ' '])
        .trim();
    Some(Limit {
        kind,
        // A reset already past (a service that still refuses after it, or a message read a
        // moment after its reset) is tried again after a short grace, not at once in a loop
        // and not as late as an unknown reset.
        until_ms: reset_at(&normal, now_ms).map(|u| {
            if u > now_ms {
                u
            } else {
                now_ms + PAST_RESET_GRACE_MS
            }
        }),
        detail: excerpt(line, 300),
    })
}

/// `text` with typographic apostrophes made plain, so that one table serves both.
fn normalise(text: &str) -> String {
    text.replace(['\u{2019}', '\u{2018}'], "'")
}

/// Where `phrase` (lower case) is in `text`, case aside; a number matches only as a whole one.
fn find_phrase(text: &str, phrase: &str) -> Option<usize> {
    let lower = text.to_lowercase();
    // Lower-casing may change lengths outside ASCII; positions are only used when it did not.
    let same = lower.len() == text.len();
    let numeric = phrase.chars().all(|c| c.is_ascii_digit());
    let mut from = 0;
    while let Some(i) = lower[from..].find(phrase) {
        let at = from + i;
        let end = at + phrase.len();
        let digit = |s: &str| s.chars().next().is_some_and(|c| c.is_ascii_digit());
        let whole = !numeric
            || (!digit(&lower[end..])
                && !lower[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_ascii_digit()));
        if whole {
            return Some(if same { at } else { 0 });
        }
        from = end;
    }
    None
}

/// When a limit resets, as far as `text` says, as of `now_ms`.
pub fn reset_at(text: &str, now_ms: u64) -> Option<u64> {
    epoch_after_bar(text)
        .or_else(|| field_number(text, "resets_at").map(epoch_ms))
        .or_else(|| {
            field_number(text, "resets_in_seconds")
                .map(|s| now_ms.saturating_add(s.saturating_mul(1000)))
        })
        .or_else(|| rfc3339_in(text))
        .or_else(|| wait_in(text).map(|ms| now_ms.saturating_add(ms)))
        .or_else(|| clock_in(text, now_ms))
}

/// Seconds or milliseconds since the epoch, as milliseconds.
fn epoch_ms(n: u64) -> u64 {
    if n < 100_000_000_000 { n * 1000 } else { n }
}

/// `…reached|1735689600`: the epoch after a `|`.
fn epoch_after_bar(text: &str) -> Option<u64> {
    text.match_indices('|').find_map(|(i, _)| {
        let digits: String = text[i + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        (digits.len() >= 9 && digits.len() <= 13)
            .then(|| digits.parse().ok().map(epoch_ms))
            .flatten()
    })
}

/// The number after `key` (`"key":123`, `key: 123`, `key=123`).
fn field_number(text: &str, key: &str) -> Option<u64> {
    let at = text.find(key)? + key.len();
    let rest = text[at..].trim_start_matches(['"', '\'', ':', '=', ' ', '\\']);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The first RFC 3339 time in `text`.
fn rfc3339_in(text: &str) -> Option<u64> {
    text.split(|c: char| c.is_whitespace() || "\"',;()[]{}".contains(c))
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| {
            let b = w.as_bytes();
            b.len() >= 20 && b[4] == b'-' && b[7] == b'-' && (b[10] == b'T' || b[10] == b't')
        })
        .find_map(tlv4_core::clock::parse_rfc3339_ms)
}

/// The phrases a wait follows.
const WAIT_AFTER: [&str; 6] = [
    "try again in ",
    "retry in ",
    "retry after ",
    "resets in ",
    "reset in ",
    "available again in ",
];

/// The wait `text` asks for, in milliseconds: "try again in 4 days 2 hours 9 minutes",
/// "Please retry in 37.5s", "resets in 2h30m".
fn wait_in(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    WAIT_AFTER
        .iter()
        .find_map(|p| {
            let at = lower.find(p)? + p.len();
            duration_ms(&lower[at..])
        })
        .or_else(|| {
            // Google's `RetryInfo` detail: `"retryDelay": "43s"`.
            let at = lower.find("retrydelay")? + "retrydelay".len();
            duration_ms(lower[at..].trim_start_matches(['"', '\\', ':', ' ']))
        })
}

/// A duration at the start of `s`: numbers, each with its unit.
fn duration_ms(s: &str) -> Option<u64> {
    let mut rest = s;
    let mut total = 0.0f64;
    let mut parts = 0;
    loop {
        rest = rest.trim_start_matches([' ', ',']);
        if let Some(r) = rest.strip_prefix("and ") {
            rest = r;
        }
        let n_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let Ok(n) = rest[..n_len].trim_end_matches('.').parse::<f64>() else {
            break;
        };
        let after = rest[n_len..].trim_start();
        let u_len = after
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(after.len());
        let unit = match &after[..u_len] {
            "d" | "day" | "days" => 86_400_000.0,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3_600_000.0,
            "m" | "min" | "mins" | "minute" | "minutes" => 60_000.0,
            "s" | "sec" | "secs" | "second" | "seconds" => 1000.0,
            "ms" => 1.0,
            _ => break,
        };
        total += n * unit;
        parts += 1;
        rest = &after[u_len..];
    }
    (parts > 0).then_some(total.round() as u64)
}

/// The phrases a clock time follows, most specific first.
const CLOCK_AFTER: [&str; 5] = [
    "try again at ",
    "reset at ",
    "resets at ",
    "resets ",
    "available again at ",
];

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// A clock time after a reset phrase: the next such moment after `now_ms`, in the zone named
/// in parentheses (UTC without one, or with one the system does not know).
fn clock_in(text: &str, now_ms: u64) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    CLOCK_AFTER.iter().find_map(|p| {
        let at = lower.find(p)? + p.len();
        let phrase: &str = lower[at..]
            .split(['\n', '·', '∙', '|'])
            .next()
            .unwrap_or("");
        // The zone keeps its capitals: take it from the original text.
        let zone = text[at..at + phrase.len()]
            .split_once('(')
            .and_then(|(_, z)| z.split_once(')'))
            .map(|(z, _)| z.trim().to_owned());
        let words = phrase.split_once('(').map_or(phrase, |(w, _)| w);
        clock_moment(words, zone.as_deref(), now_ms)
    })
}

/// `words` ("3pm", "9:30 am", "jan 12, 10:59am", "apr 28th, 2026 10:03 pm", "sep 15 at 7pm")
/// as the next such moment after `now_ms` in `zone`.
fn clock_moment(words: &str, zone: Option<&str>, now_ms: u64) -> Option<u64> {
    use jiff::civil;
    let tz = zone
        .and_then(|z| jiff::tz::TimeZone::get(z).ok())
        .unwrap_or(jiff::tz::TimeZone::UTC);
    let now = jiff::Timestamp::from_millisecond(i64::try_from(now_ms).ok()?)
        .ok()?
        .to_zoned(tz.clone());
    let tokens: Vec<&str> = words
        .split(|c: char| c.is_whitespace() || c == ',')
        .map(|t| t.trim_end_matches('.'))
        .filter(|t| !t.is_empty() && *t != "at" && *t != "on")
        .collect();
    let mut month = None;
    let mut day = None;
    let mut year = None;
    let mut time: Option<(i8, i8)> = None;
    let mut i = 0;
    while i < tokens.len() {
        let t = tokens[i];
        if let Some(m) = MONTHS.iter().position(|m| t.starts_with(m)) {
            month = Some(m as i8 + 1);
        } else if month.is_some() && day.is_none() && time.is_none() {
            let d = t.trim_end_matches(|c: char| c.is_ascii_alphabetic());
            day = Some(d.parse::<i8>().ok()?);
        } else if t.len() == 4 && t.chars().all(|c| c.is_ascii_digit()) && time.is_none() {
            year = Some(t.parse::<i16>().ok()?);
        } else if time.is_none() && t.starts_with(|c: char| c.is_ascii_digit()) {
            // "3pm", "10:59am", "9:30" followed by "am"/"pm", "15:00".
            let (clock, suffix) = match t.find(|c: char| c.is_ascii_alphabetic()) {
                Some(k) => (&t[..k], &t[k..]),
                None => match tokens.get(i + 1) {
                    Some(&s) if s == "am" || s == "pm" => {
                        i += 1;
                        (t, s)
                    }
                    _ => (t, ""),
                },
            };
            let (h, m) = match clock.split_once(':') {
                Some((h, m)) => (h.parse::<i8>().ok()?, m.parse::<i8>().ok()?),
                None => (clock.parse::<i8>().ok()?, 0),
            };
            let h = match suffix {
                "am" if h == 12 => 0,
                "am" => h,
                "pm" if h == 12 => 12,
                "pm" => h + 12,
                "" => h,
                _ => return None,
            };
            time = Some((h, m));
        } else {
            // A word that is not part of a time: the phrase said something else.
            break;
        }
        i += 1;
    }
    let (h, m) = time?;
    let at = |date: civil::Date| -> Option<jiff::Timestamp> {
        date.at(h, m, 0, 0)
            .to_zoned(tz.clone())
            .ok()
            .map(|z| z.timestamp())
    };
    let now_ts = now.timestamp();
    let moment = match (month, day) {
        (Some(mo), Some(d)) => {
            let y = year.unwrap_or(now.year());
            let t = at(civil::Date::new(y, mo, d).ok()?)?;
            if year.is_none() && t < now_ts {
                at(civil::Date::new(y + 1, mo, d).ok()?)?
            } else {
                t
            }
        }
        _ => {
            let t = at(now.date())?;
            if t <= now_ts {
                at(now.date().tomorrow().ok()?)?
            } else {
                t
            }
        }
    };
    u64::try_from(moment.as_millisecond()).ok()
}

/// What an HTTP `Retry-After` asks for, in milliseconds from now: seconds, or an HTTP date.
pub fn retry_after_ms(value: &str, now_ms: u64) -> Option<u64> {
    let v = value.trim();
    if let Ok(s) = v.parse::<f64>() {
        return Some((s.max(0.0) * 1000.0).round() as u64);
    }
    let t = jiff::fmt::rfc2822::DateTimeParser::new()
        .parse_timestamp(v)
        .ok()?;
    let ms = u64::try_from(t.as_millisecond()).ok()?;
    Some(ms.saturating_sub(now_ms))
}

#[cfg(test)]
mod tests;
