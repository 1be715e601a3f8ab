//! A review as a SARIF 2.1.0 log, the format GitHub code scanning and other tools read.
//!
//! One run of the driver `git-tlv4`, one result per finding with a file, one rule descriptor
//! per rule id among the results. GitHub rejects a whole log when any result has no location,
//! so a finding without a file (the empty change) is not a result: it is listed with the
//! verdict in the run's `properties`. Each result carries
//! `partialFingerprints.primaryLocationLineHash`: a hash of its rule, its path and the text of
//! its line (its reason when it has no line), not of the line number, so that moved code keeps
//! its identity across runs.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

use super::{Dimension, Finding, Review, RuleSet, Severity};

/// The schema the log names.
pub const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";
/// The SARIF version written.
pub const VERSION: &str = "2.1.0";
/// The driver's name.
pub const DRIVER: &str = "git-tlv4";

/// The SARIF level of a severity: critical and high are errors, medium a warning, low a note.
pub fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Critical | Severity::High => "error",
        Severity::Medium => "warning",
        Severity::Low => "note",
    }
}

/// The `security-severity` GitHub ranks security alerts by (0.0–10.0, as a string).
pub fn security_severity(severity: Severity) -> &'static str {
    match severity {
        Severity::Critical => "9.5",
        Severity::High => "7.5",
        Severity::Medium => "5.0",
        Severity::Low => "2.0",
    }
}

/// The review as a SARIF log. `rules` describes the rules (their message and configured
/// severity); `line_text(path, line)` gives the new-side text of a finding's line, for its
/// fingerprint (`None` falls back to the finding's reason).
pub fn log(
    review: &Review,
    rules: &RuleSet,
    line_text: &dyn Fn(&str, usize) -> Option<String>,
) -> Value {
    let (located, unlocated): (Vec<&Finding>, Vec<&Finding>) =
        review.findings.iter().partition(|f| !f.file.is_empty());

    // One descriptor per rule id among the results, sorted by id.
    let mut ids: BTreeMap<&str, Vec<&Finding>> = BTreeMap::new();
    for f in &located {
        ids.entry(f.rule.as_str()).or_default().push(f);
    }
    let index: HashMap<&str, usize> = ids.keys().enumerate().map(|(i, id)| (*id, i)).collect();
    let descriptors: Vec<Value> = ids
        .iter()
        .map(|(id, found)| descriptor(rules, id, found))
        .collect();

    let mut seen: HashMap<String, usize> = HashMap::new();
    let results: Vec<Value> = located
        .iter()
        .map(|f| {
            let hash = fingerprint(f, line_text);
            let n = seen.entry(hash.clone()).or_insert(0);
            *n += 1;
            result(f, index[f.rule.as_str()], &format!("{hash}:{n}"))
        })
        .collect();

    let mut driver = json!({
        "name": DRIVER,
        "version": env!("CARGO_PKG_VERSION"),
        "rules": descriptors,
    });
    let home = env!("CARGO_PKG_REPOSITORY");
    if !home.is_empty() {
        driver["informationUri"] = json!(home);
    }
    json!({
        "$schema": SCHEMA_URI,
        "version": VERSION,
        "runs": [{
            "tool": { "driver": driver },
            "results": results,
            "properties": {
                "label": review.label,
                "old": review.old,
                "new": review.new,
                "verdict": review.verdict.as_str(),
                "summary": review.summary,
                "scores": review.scores,
                "findingsWithoutLocation": unlocated.iter().map(|f| json!({
                    "ruleId": f.rule,
                    "level": level(f.severity),
                    "message": { "text": f.reason },
                    "properties": properties(f),
                })).collect::<Vec<_>>(),
            },
        }],
    })
}

/// The rule descriptor of `id`: from the rules file when it defines the id, else from the
/// findings themselves (the worst of their severities, the first one's reason).
fn descriptor(rules: &RuleSet, id: &str, found: &[&Finding]) -> Value {
    let worst = found
        .iter()
        .min_by_key(|f| f.severity)
        .expect("a rule id among the results has a finding");
    let (text, severity, dimension) = match described(rules, id) {
        Some((text, severity, dimension)) => (text, severity, dimension),
        None => (None, worst.severity, worst.dimension),
    };
    let text = text.unwrap_or_else(|| found[0].reason.clone());
    let mut properties = json!({ "tags": [dimension.as_str()] });
    if dimension == Dimension::Security {
        properties["security-severity"] = json!(security_severity(severity));
    }
    json!({
        "id": id,
        "shortDescription": { "text": text },
        "defaultConfiguration": { "level": level(severity) },
        "properties": properties,
    })
}

/// What the rules file says of `id`: its message (with a check's placeholders shown as `…`;
/// `None` when the rules of that id word it differently per language), its worst configured
/// severity and its dimension.
fn described(rules: &RuleSet, id: &str) -> Option<(Option<String>, Severity, Dimension)> {
    let same: Vec<_> = rules.rules.iter().filter(|r| r.id == id).collect();
    if let Some(first) = same.first() {
        let severity = same
            .iter()
            .map(|r| r.severity)
            .min()
            .expect("at least one rule");
        let text = same
            .iter()
            .all(|r| r.message == first.message)
            .then(|| first.message.clone());
        return Some((text, severity, first.dimension));
    }
    let check = rules.checks.values().find(|c| c.id.as_str() == id)?;
    Some((
        Some(without_placeholders(&check.message)),
        check.severity,
        check.dimension,
    ))
}

/// `message` with each `{placeholder}` shown as `…`.
fn without_placeholders(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(open) = rest.find('{') {
        match rest[open..].find('}') {
            Some(close) => {
                out.push_str(&rest[..open]);
                out.push('…');
                rest = &rest[open + close + 1..];
            }
            None => break,
        }
    }
    out.push_str(rest);
    out
}

fn result(f: &Finding, rule_index: usize, fingerprint: &str) -> Value {
    let mut physical = json!({
        "artifactLocation": { "uri": uri(&f.file), "uriBaseId": "%SRCROOT%" },
    });
    if let Some(line) = f.line.filter(|l| *l >= 1) {
        physical["region"] = json!({ "startLine": line });
    }
    json!({
        "ruleId": f.rule,
        "ruleIndex": rule_index,
        "level": level(f.severity),
        "message": { "text": f.reason },
        "locations": [{ "physicalLocation": physical }],
        "partialFingerprints": { "primaryLocationLineHash": fingerprint },
        "properties": properties(f),
    })
}

fn properties(f: &Finding) -> Value {
    let mut p = json!({
        "severity": f.severity.as_str(),
        "confidence": f.confidence.as_str(),
        "dimension": f.dimension.as_str(),
    });
    if let Some(c) = f.context {
        p["context"] = json!(c.as_str());
    }
    p
}

/// The stable part of a result's identity: FNV-1a (64 bits, hex) over its rule, its path and
/// the text of its line with blanks collapsed (its reason when it has no line or the text is
/// unknown).
fn fingerprint(f: &Finding, line_text: &dyn Fn(&str, usize) -> Option<String>) -> String {
    let text = f
        .line
        .and_then(|l| line_text(&f.file, l))
        .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| f.reason.clone());
    format!("{:016x}", fnv1a(&[&f.rule, &f.file, &text]))
}

/// FNV-1a, 64 bits, over `fields` separated by a NUL byte.
fn fnv1a(fields: &[&str]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    for (i, field) in fields.iter().enumerate() {
        let separator: &[u8] = if i == 0 { b"" } else { b"\0" };
        for &b in separator.iter().chain(field.as_bytes()) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(PRIME);
        }
    }
    hash
}

/// A repository-relative path as a URI reference: every byte but the unreserved characters
/// and `/` percent-encoded (a space, `%`, `#`, `?` or a `:` in the first segment would
/// otherwise make it another URI, or none).
pub fn uri(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
