//! Time limits as the configuration writes them (`20m`, `90s`, `1h30m`), and the limit of an
//! agent that sets none.

use std::time::Duration;

use crate::error::{Error, Result};

/// The wall-clock limit when the agent's `timeout` is not set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// Parses a duration such as `20m`, `90s`, `1h`, `1h30m` or `500ms`; a bare number is
/// seconds.
pub fn parse_duration(text: &str) -> Result<Duration> {
    let bad = || {
        Error::Invalid(format!(
            "invalid duration `{text}`; write it like `20m`, `90s`, `1h` or `1h30m`"
        ))
    };
    let t = text.trim();
    if t.is_empty() {
        return Err(bad());
    }
    if let Ok(secs) = t.parse::<u64>() {
        return if secs == 0 {
            Err(bad())
        } else {
            Ok(Duration::from_secs(secs))
        };
    }
    let mut total = Duration::ZERO;
    let mut rest = t;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        if digits == 0 {
            return Err(bad());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        total += match unit {
            "ms" => Duration::from_millis(n),
            "s" | "sec" | "secs" => Duration::from_secs(n),
            "m" | "min" | "mins" => Duration::from_secs(n * 60),
            "h" | "hr" | "hours" => Duration::from_secs(n * 3600),
            _ => return Err(bad()),
        };
    }
    if total.is_zero() {
        return Err(bad());
    }
    Ok(total)
}
