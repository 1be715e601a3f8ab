//! Time limits as the configuration writes them (`20m`, `90s`, `1h30m`), and the limit of an
//! agent that sets none.

use std::time::Duration;

use crate::error::{Error, Result};

/// The wall-clock limit when the agent's `timeout` is not set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// `d` written as [`parse_duration`] reads it: `20m`, `90s`, `1h30m`; under a second, `300ms`.
pub fn format_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s == 0 {
        return format!("{}ms", d.as_millis());
    }
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    let mut out = String::new();
    for (n, unit) in [(h, "h"), (m, "m"), (s, "s")] {
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    out
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_formatted_duration_reads_back_as_itself() {
        for (secs, text) in [(90, "1m30s"), (1200, "20m"), (5400, "1h30m"), (3600, "1h")] {
            let d = Duration::from_secs(secs);
            assert_eq!(format_duration(d), text);
            assert_eq!(parse_duration(text).unwrap(), d);
        }
        assert_eq!(format_duration(Duration::from_millis(300)), "300ms");
        assert!(parse_duration("0").is_err());
    }
}
