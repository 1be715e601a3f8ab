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

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::super::{
        Confidence, Context, Counts, Decision, DiffAlgorithm, Dimension, Finding,
        RequirementsReport, Review, RuleSet, Scores, Severity,
    };

    fn finding(rule: &str, severity: Severity, file: &str, line: Option<usize>) -> Finding {
        Finding {
            severity,
            dimension: if rule == "private-key" || rule == "aws-key" {
                Dimension::Security
            } else {
                Dimension::Quality
            },
            file: file.into(),
            line,
            reason: format!("reason of {rule}"),
            rule: rule.into(),
            confidence: Confidence::High,
            context: None,
        }
    }

    fn review(findings: Vec<Finding>) -> Review {
        Review {
            schema: super::super::SCHEMA,
            label: "HEAD".into(),
            old: "a".repeat(40),
            new: "b".repeat(40),
            algorithm: DiffAlgorithm::Myers,
            deadline_ms: 2000,
            rules: "specs/review-rules.toml".into(),
            verdict: Decision::Block,
            scores: Scores {
                quality: 90,
                security: 60,
                architecture: 100,
                requirements: 100,
                overall: 87.5,
            },
            counts: Counts::default(),
            empty: false,
            files: Vec::new(),
            findings,
            requirements: RequirementsReport::default(),
            revisions: Vec::new(),
            summary: "BLOCK: …".into(),
        }
    }

    fn log(findings: Vec<Finding>, lines: &[(&str, usize, &str)]) -> Value {
        let lines: Vec<(String, usize, String)> = lines
            .iter()
            .map(|(p, l, t)| ((*p).to_owned(), *l, (*t).to_owned()))
            .collect();
        let text = move |path: &str, line: usize| {
            lines
                .iter()
                .find(|(p, l, _)| p == path && *l == line)
                .map(|(_, _, t)| t.clone())
        };
        super::log(
            &review(findings),
            &RuleSet::builtin().expect("the builtin rules load"),
            &text,
        )
    }

    /// The properties each SARIF 2.1.0 object may have (the schema's `additionalProperties:
    /// false`), and those it must have, read from sarif-schema-2.1.0.json by hand.
    fn schema(kind: &str) -> (&'static [&'static str], &'static [&'static str]) {
        match kind {
            "sarifLog" => (
                &[
                    "$schema",
                    "version",
                    "runs",
                    "inlineExternalProperties",
                    "properties",
                ],
                &["version", "runs"],
            ),
            "run" => (
                &[
                    "tool",
                    "invocations",
                    "conversion",
                    "language",
                    "versionControlProvenance",
                    "originalUriBaseIds",
                    "artifacts",
                    "logicalLocations",
                    "graphs",
                    "results",
                    "automationDetails",
                    "runAggregates",
                    "baselineGuid",
                    "redactionTokens",
                    "defaultEncoding",
                    "defaultSourceLanguage",
                    "newlineSequences",
                    "columnKind",
                    "externalPropertyFileReferences",
                    "threadFlowLocations",
                    "taxonomies",
                    "addresses",
                    "translations",
                    "policies",
                    "webRequests",
                    "webResponses",
                    "specialLocations",
                    "properties",
                ],
                &["tool"],
            ),
            "tool" => (&["driver", "extensions", "properties"], &["driver"]),
            "toolComponent" => (
                &[
                    "guid",
                    "name",
                    "organization",
                    "product",
                    "productSuite",
                    "shortDescription",
                    "fullDescription",
                    "fullName",
                    "version",
                    "semanticVersion",
                    "dottedQuadFileVersion",
                    "releaseDateUtc",
                    "downloadUri",
                    "informationUri",
                    "globalMessageStrings",
                    "notifications",
                    "rules",
                    "taxa",
                    "locations",
                    "language",
                    "contents",
                    "isComprehensive",
                    "localizedDataSemanticVersion",
                    "minimumRequiredLocalizedDataSemanticVersion",
                    "associatedComponent",
                    "translationMetadata",
                    "supportedTaxonomies",
                    "properties",
                ],
                &["name"],
            ),
            "reportingDescriptor" => (
                &[
                    "id",
                    "deprecatedIds",
                    "guid",
                    "deprecatedGuids",
                    "name",
                    "deprecatedNames",
                    "shortDescription",
                    "fullDescription",
                    "messageStrings",
                    "defaultConfiguration",
                    "helpUri",
                    "help",
                    "relationships",
                    "properties",
                ],
                &["id"],
            ),
            "multiformatMessageString" => (&["text", "markdown", "properties"], &["text"]),
            "reportingConfiguration" => (
                &["enabled", "level", "rank", "parameters", "properties"],
                &[],
            ),
            "result" => (
                &[
                    "ruleId",
                    "ruleIndex",
                    "rule",
                    "kind",
                    "level",
                    "message",
                    "analysisTarget",
                    "locations",
                    "guid",
                    "correlationGuid",
                    "occurrenceCount",
                    "partialFingerprints",
                    "fingerprints",
                    "stacks",
                    "codeFlows",
                    "graphs",
                    "graphTraversals",
                    "relatedLocations",
                    "suppressions",
                    "baselineState",
                    "rank",
                    "attachments",
                    "hostedViewerUri",
                    "workItemUris",
                    "provenance",
                    "fixes",
                    "taxa",
                    "webRequest",
                    "webResponse",
                    "properties",
                ],
                &["message"],
            ),
            "message" => (&["text", "markdown", "id", "arguments", "properties"], &[]),
            "location" => (
                &[
                    "id",
                    "physicalLocation",
                    "logicalLocations",
                    "message",
                    "annotations",
                    "relationships",
                    "properties",
                ],
                &[],
            ),
            "physicalLocation" => (
                &[
                    "address",
                    "artifactLocation",
                    "region",
                    "contextRegion",
                    "properties",
                ],
                &[],
            ),
            "artifactLocation" => (
                &["uri", "uriBaseId", "index", "description", "properties"],
                &[],
            ),
            "region" => (
                &[
                    "startLine",
                    "startColumn",
                    "endLine",
                    "endColumn",
                    "charOffset",
                    "charLength",
                    "byteOffset",
                    "byteLength",
                    "snippet",
                    "message",
                    "sourceLanguage",
                    "properties",
                ],
                &[],
            ),
            other => panic!("no schema written down for {other}"),
        }
    }

    /// Checks `value` as a SARIF `kind` and the objects in it this log uses; returns the
    /// problems, each with its JSON path.
    fn check(value: &Value, kind: &str, at: &str, problems: &mut Vec<String>) {
        let Some(obj) = value.as_object() else {
            problems.push(format!("{at}: not an object"));
            return;
        };
        let (allowed, required) = schema(kind);
        for key in obj.keys() {
            if !allowed.contains(&key.as_str()) {
                problems.push(format!("{at}: `{key}` is not a property of {kind}"));
            }
        }
        for key in required {
            if !obj.contains_key(*key) {
                problems.push(format!("{at}: {kind} needs `{key}`"));
            }
        }
        let levels = ["none", "note", "warning", "error"];
        let child = |key: &str, kind: &str, problems: &mut Vec<String>| {
            if let Some(v) = obj.get(key) {
                check(v, kind, &format!("{at}.{key}"), problems);
            }
        };
        let each = |key: &str, kind: &str, problems: &mut Vec<String>| {
            if let Some(v) = obj.get(key) {
                match v.as_array() {
                    Some(items) => {
                        for (i, item) in items.iter().enumerate() {
                            check(item, kind, &format!("{at}.{key}[{i}]"), problems);
                        }
                    }
                    None => problems.push(format!("{at}.{key}: not an array")),
                }
            }
        };
        match kind {
            "sarifLog" => {
                if obj["version"] != "2.1.0" {
                    problems.push(format!("{at}.version is not 2.1.0"));
                }
                each("runs", "run", problems);
            }
            "run" => {
                child("tool", "tool", problems);
                each("results", "result", problems);
            }
            "tool" => child("driver", "toolComponent", problems),
            "toolComponent" => {
                each("rules", "reportingDescriptor", problems);
                if !obj["name"].is_string() {
                    problems.push(format!("{at}.name is not a string"));
                }
            }
            "reportingDescriptor" => {
                child("shortDescription", "multiformatMessageString", problems);
                child("defaultConfiguration", "reportingConfiguration", problems);
                bag(obj.get("properties"), &format!("{at}.properties"), problems);
            }
            "multiformatMessageString" | "message"
                if !obj.get("text").is_some_and(Value::is_string) =>
            {
                problems.push(format!("{at}: no text"));
            }
            "reportingConfiguration" => {
                if let Some(l) = obj.get("level")
                    && !levels.iter().any(|v| l == v)
                {
                    problems.push(format!("{at}.level {l} is not a SARIF level"));
                }
            }
            "result" => {
                child("message", "message", problems);
                each("locations", "location", problems);
                if let Some(l) = obj.get("level")
                    && !levels.iter().any(|v| l == v)
                {
                    problems.push(format!("{at}.level {l} is not a SARIF level"));
                }
                if obj.get("ruleIndex").is_some_and(|i| i.as_u64().is_none()) {
                    problems.push(format!("{at}.ruleIndex is not an integer ≥ 0"));
                }
                if let Some(fp) = obj.get("partialFingerprints") {
                    let strings = fp
                        .as_object()
                        .is_some_and(|m| m.values().all(Value::is_string));
                    if !strings {
                        problems.push(format!("{at}.partialFingerprints: not strings"));
                    }
                }
                bag(obj.get("properties"), &format!("{at}.properties"), problems);
            }
            "location" => child("physicalLocation", "physicalLocation", problems),
            "physicalLocation" => {
                child("artifactLocation", "artifactLocation", problems);
                child("region", "region", problems);
            }
            "artifactLocation" if !obj.get("uri").is_some_and(Value::is_string) => {
                problems.push(format!("{at}.uri is not a string"));
            }
            "region"
                if obj
                    .get("startLine")
                    .and_then(Value::as_u64)
                    .is_none_or(|l| l < 1) =>
            {
                problems.push(format!("{at}.startLine is not an integer ≥ 1"));
            }
            _ => {}
        }
    }

    /// A property bag: any keys, `tags` distinct strings.
    fn bag(value: Option<&Value>, at: &str, problems: &mut Vec<String>) {
        let Some(value) = value else { return };
        let Some(obj) = value.as_object() else {
            problems.push(format!("{at}: not an object"));
            return;
        };
        if let Some(tags) = obj.get("tags") {
            let tags: Vec<&str> = tags
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut distinct = tags.clone();
            distinct.sort_unstable();
            distinct.dedup();
            if tags.is_empty() || distinct.len() != tags.len() {
                problems.push(format!("{at}.tags: not distinct strings"));
            }
        }
    }

    /// What GitHub code scanning needs beyond the schema: every result located by a URI, a
    /// rule id with a descriptor at its `ruleIndex`, message text, and a `security-severity`
    /// between 0 and 10.
    fn github(log: &Value) -> Vec<String> {
        let mut problems = Vec::new();
        let run = &log["runs"][0];
        let rules = run["tool"]["driver"]["rules"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for (i, r) in run["results"]
            .as_array()
            .expect("results")
            .iter()
            .enumerate()
        {
            let at = format!("results[{i}]");
            let located = r["locations"].as_array().is_some_and(|l| {
                !l.is_empty()
                    && l.iter()
                        .all(|l| l["physicalLocation"]["artifactLocation"]["uri"].is_string())
            });
            if !located {
                problems.push(format!("{at}: not located by a URI"));
            }
            let index = r["ruleIndex"].as_u64().map(|i| i as usize);
            if index.and_then(|i| rules.get(i)).map(|d| &d["id"]) != Some(&r["ruleId"]) {
                problems.push(format!("{at}: ruleIndex does not point at its ruleId"));
            }
        }
        for (i, d) in rules.iter().enumerate() {
            if let Some(s) = d["properties"].get("security-severity") {
                let ok = s
                    .as_str()
                    .and_then(|s| s.parse::<f64>().ok())
                    .is_some_and(|v| (0.0..=10.0).contains(&v));
                if !ok {
                    problems.push(format!("rules[{i}]: security-severity {s} is not 0–10"));
                }
            }
        }
        problems
    }

    fn all_kinds() -> Vec<Finding> {
        // Lowered to low in a test (as the context exceptions do).
        let mut test = finding("aws-key", Severity::Low, "tests/it.py", Some(2));
        test.context = Some(Context::Test);
        test.confidence = Confidence::Medium;
        vec![
            finding(
                "private-key",
                Severity::Critical,
                "keys/id_rsa.pem",
                Some(1),
            ),
            finding("aws-key", Severity::Critical, "src/my config.py", Some(4)),
            finding("allow-attribute", Severity::Medium, "src/lib.rs", Some(3)),
            finding("file-lines", Severity::Medium, "src/big.rs", None),
            test,
            finding("empty-change", Severity::High, "", None),
        ]
    }

    #[test]
    fn the_log_has_the_shape_of_sarif_2_1_0_and_what_github_requires() {
        let log = log(all_kinds(), &[]);
        let mut problems = Vec::new();
        check(&log, "sarifLog", "$", &mut problems);
        problems.extend(github(&log));
        assert!(problems.is_empty(), "{problems:#?}\n{log:#}");
        assert_eq!(log["$schema"], super::SCHEMA_URI);
        let driver = &log["runs"][0]["tool"]["driver"];
        assert_eq!(driver["name"], "git-tlv4");
        assert_eq!(driver["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(log["runs"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn each_result_says_rule_level_place_and_confidence() {
        let log = log(all_kinds(), &[]);
        let results = log["runs"][0]["results"].as_array().expect("results");
        // The finding without a file is not a result (GitHub rejects a log with one).
        assert_eq!(results.len(), 5, "{log:#}");
        let key = &results[0];
        assert_eq!(key["ruleId"], "private-key");
        assert_eq!(key["level"], "error");
        assert_eq!(key["message"]["text"], "reason of private-key");
        let place = &key["locations"][0]["physicalLocation"];
        assert_eq!(place["artifactLocation"]["uri"], "keys/id_rsa.pem");
        assert_eq!(place["artifactLocation"]["uriBaseId"], "%SRCROOT%");
        assert_eq!(place["region"]["startLine"], 1);
        assert_eq!(key["properties"]["confidence"], "high");
        assert_eq!(key["properties"]["dimension"], "security");
        assert!(key["properties"].get("context").is_none());
        // A space in a path is percent-encoded: the URI stays a URI reference.
        assert_eq!(
            results[1]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "src/my%20config.py"
        );
        assert_eq!(results[2]["level"], "warning");
        // A finding about a whole file has no region.
        let whole = &results[3];
        assert_eq!(whole["ruleId"], "file-lines");
        assert!(
            whole["locations"][0]["physicalLocation"]
                .get("region")
                .is_none()
        );
        let test = &results[4];
        assert_eq!(test["level"], "note");
        assert_eq!(test["properties"]["context"], "test");
        assert_eq!(test["properties"]["confidence"], "medium");

        let unlocated = &log["runs"][0]["properties"]["findingsWithoutLocation"];
        assert_eq!(unlocated[0]["ruleId"], "empty-change", "{log:#}");
        assert_eq!(log["runs"][0]["properties"]["verdict"], "BLOCK");
    }

    #[test]
    fn one_descriptor_per_rule_of_the_results_from_the_rules_file() {
        let mut findings = all_kinds();
        findings.push(finding(
            "allow-attribute",
            Severity::Medium,
            "src/b.rs",
            Some(9),
        ));
        let log = log(findings, &[]);
        let rules = log["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .expect("rules");
        let ids: Vec<&str> = rules.iter().filter_map(|r| r["id"].as_str()).collect();
        assert_eq!(
            ids,
            ["allow-attribute", "aws-key", "file-lines", "private-key"],
            "one each, sorted; none for the unlocated empty-change"
        );
        let key = &rules[3];
        assert_eq!(key["shortDescription"]["text"], "private key in the code");
        assert_eq!(key["defaultConfiguration"]["level"], "error");
        assert_eq!(key["properties"]["security-severity"], "9.5");
        assert_eq!(key["properties"]["tags"], serde_json::json!(["security"]));
        // Not a security rule: no security-severity.
        assert!(rules[0]["properties"].get("security-severity").is_none());
        assert_eq!(
            rules[0]["properties"]["tags"],
            serde_json::json!(["quality"])
        );
        // A check's message without its placeholders.
        let lines = rules[2]["shortDescription"]["text"].as_str().expect("text");
        assert!(!lines.contains('{') && lines.contains('…'), "{lines}");
        // One aws-key finding was lowered to low in a test; the rule's own level stays.
        assert_eq!(rules[1]["defaultConfiguration"]["level"], "error");
        assert_eq!(rules[1]["properties"]["security-severity"], "9.5");
    }

    #[test]
    fn security_severity_and_levels_follow_github() {
        assert_eq!(super::security_severity(Severity::Critical), "9.5");
        assert_eq!(super::security_severity(Severity::High), "7.5");
        assert_eq!(super::security_severity(Severity::Medium), "5.0");
        assert_eq!(super::security_severity(Severity::Low), "2.0");
        assert_eq!(super::level(Severity::Critical), "error");
        assert_eq!(super::level(Severity::High), "error");
        assert_eq!(super::level(Severity::Medium), "warning");
        assert_eq!(super::level(Severity::Low), "note");
    }

    fn hash(log: &Value, i: usize) -> String {
        log["runs"][0]["results"][i]["partialFingerprints"]["primaryLocationLineHash"]
            .as_str()
            .expect("a fingerprint")
            .to_owned()
    }

    #[test]
    fn moved_code_keeps_its_fingerprint_and_changed_code_does_not() {
        let at = |line: usize| {
            vec![finding(
                "allow-attribute",
                Severity::Medium,
                "src/lib.rs",
                Some(line),
            )]
        };
        let before = log(at(3), &[("src/lib.rs", 3, "    #[allow(dead_code)]")]);
        let moved = log(at(40), &[("src/lib.rs", 40, "\t#[allow(dead_code)]  ")]);
        let changed = log(at(3), &[("src/lib.rs", 3, "    #[allow(unused)]")]);
        assert_eq!(
            hash(&before, 0),
            hash(&moved, 0),
            "the line moved and was re-indented"
        );
        assert_ne!(hash(&before, 0), hash(&changed, 0));
        let elsewhere = log(
            vec![finding(
                "allow-attribute",
                Severity::Medium,
                "src/other.rs",
                Some(3),
            )],
            &[("src/other.rs", 3, "    #[allow(dead_code)]")],
        );
        assert_ne!(
            hash(&before, 0),
            hash(&elsewhere, 0),
            "the path is part of it"
        );
        assert!(hash(&before, 0).ends_with(":1"), "{}", hash(&before, 0));
    }

    #[test]
    fn identical_lines_are_told_apart_by_their_occurrence() {
        let two = vec![
            finding("allow-attribute", Severity::Medium, "src/lib.rs", Some(3)),
            finding("allow-attribute", Severity::Medium, "src/lib.rs", Some(9)),
        ];
        let log = log(
            two,
            &[
                ("src/lib.rs", 3, "#[allow(dead_code)]"),
                ("src/lib.rs", 9, "#[allow(dead_code)]"),
            ],
        );
        let (a, b) = (hash(&log, 0), hash(&log, 1));
        assert_eq!(a.split(':').next(), b.split(':').next());
        assert!(a.ends_with(":1") && b.ends_with(":2"), "{a} {b}");
    }

    #[test]
    fn a_finding_without_line_text_is_fingerprinted_by_its_reason() {
        let one = |reason: &str| {
            let mut f = finding("file-lines", Severity::Medium, "src/big.rs", None);
            f.reason = reason.into();
            log(vec![f], &[])
        };
        assert_eq!(
            hash(&one("file has 900 lines"), 0),
            hash(&one("file has 900 lines"), 0)
        );
        assert_ne!(
            hash(&one("file has 900 lines"), 0),
            hash(&one("file has 901 lines"), 0)
        );
    }

    #[test]
    fn paths_become_uri_references() {
        assert_eq!(super::uri("src/lib.rs"), "src/lib.rs");
        assert_eq!(super::uri("a b/c%d#e?f.rs"), "a%20b/c%25d%23e%3Ff.rs");
        assert_eq!(super::uri("C:x/y"), "C%3Ax/y");
        assert_eq!(super::uri("über.rs"), "%C3%BCber.rs");
    }

    #[test]
    fn fnv1a_is_the_published_function() {
        // Test vectors of FNV-1a 64: "" and "a".
        assert_eq!(super::fnv1a(&[""]), 0xcbf2_9ce4_8422_2325);
        assert_eq!(super::fnv1a(&["a"]), 0xaf63_dc4c_8601_ec8c);
        assert_ne!(super::fnv1a(&["ab", "c"]), super::fnv1a(&["a", "bc"]));
    }
}
