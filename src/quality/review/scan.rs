//! Rules applied to one changed file: the `[[rule]]` patterns over its added lines, and the
//! size checks (long files, long functions the change touches). Imports are collected here
//! for the cross-file circular-import check.

use std::collections::HashSet;

use super::{Confidence, Finding};
use super::diff::{ChangeKind, FileDiff};
use super::rules::{Body, CheckId, RuleSet};

/// What scanning one file found.
#[derive(Debug, Clone, Default)]
pub struct FileScan {
    /// Findings, in rule order.
    pub findings: Vec<Finding>,
    /// The file's language (index into the rule set's languages).
    pub language: Option<usize>,
    /// The whole file is test code.
    pub test_file: bool,
    /// Some added line is test code.
    pub touches_tests: bool,
    /// Some added line is non-test code of a known language.
    pub touches_code: bool,
}

/// Scans `file` with `rules`.
pub fn scan_file(rules: &RuleSet, file: &FileDiff) -> FileScan {
    let language = rules.language_of(&file.path);
    let test_file = rules.is_test_path(language, &file.path);
    let mut scan = FileScan {
        language,
        test_file,
        ..FileScan::default()
    };
    if file.skipped.is_some() || file.kind == ChangeKind::Deleted || file.added.is_empty() {
        return scan;
    }
    // The first line of inline test code (`#[cfg(test)]` in Rust), if any.
    let test_from = if test_file {
        Some(0)
    } else {
        language
            .and_then(|l| rules.languages[l].test_marker.as_ref())
            .and_then(|m| m.regex().find(file.new_text.as_bytes()))
            .map(|m| file.line_at(m.start()))
    };
    let is_test = |line: usize| test_from.is_some_and(|t| line >= t);
    scan.touches_tests = file.added.iter().any(|r| is_test(r.end - 1));
    scan.touches_code = language.is_some() && file.added.iter().any(|r| !is_test(r.start));

    let mut seen: HashSet<(usize, usize)> = HashSet::new();
    for (index, rule) in rules.rules.iter().enumerate() {
        if !rules.applies(rule, language, &file.path) {
            continue;
        }
        for range in &file.added {
            if rule.skip_tests && is_test(range.start) {
                continue;
            }
            let base = file.line_starts[range.start];
            for m in rule
                .pattern
                .regex()
                .find_iter(file.text_of(range).as_bytes())
            {
                let line = file.line_at(base + m.start());
                if rule.skip_tests && is_test(line) {
                    continue;
                }
                if rule
                    .unless
                    .as_ref()
                    .is_some_and(|u| u.regex().is_match(file.line(line).as_bytes()))
                {
                    continue;
                }
                if seen.insert((index, line)) {
                    scan.findings.push(Finding {
                        severity: rule.severity,
                        dimension: rule.dimension,
                        file: file.path.clone(),
                        line: Some(line + 1),
                        reason: rule.message.clone(),
                        rule: rule.id.clone(),
                        confidence: Confidence::High,
                        context: None,
                    });
                }
            }
        }
    }

    let Some(lang) = language.map(|l| &rules.languages[l]) else {
        return scan;
    };
    if let Some(check) = rules.check(CheckId::FileLines) {
        let limit = rules.limits.max_file_lines;
        if file.new_line_count() > limit && !test_file {
            scan.findings.push(Finding {
                severity: check.severity,
                dimension: check.dimension,
                file: file.path.clone(),
                line: Some(file.added[0].start + 1),
                reason: check.render(&[
                    ("lines", &file.new_line_count().to_string()),
                    ("limit", &limit.to_string()),
                ]),
                rule: CheckId::FileLines.as_str().into(),
                confidence: Confidence::High,
                context: None,
            });
        }
    }
    if let (Some(check), Some(function)) = (rules.check(CheckId::FunctionLines), &lang.function) {
        let limit = rules.limits.max_function_lines;
        let function = function.regex();
        for m in function.find_iter(file.new_text.as_bytes()) {
            let start = file.line_at(m.start());
            if is_test(start) {
                continue;
            }
            let end = match lang.body {
                Body::Braces => braces_end(file, m.end(), lang.name == "rust"),
                Body::Indent => indent_end(file, start),
            };
            let Some(end) = end else { continue };
            let span = start..end + 1;
            if span.len() <= limit || !file.touches(&span) {
                continue;
            }
            let name = function
                .captures(file.line(start).as_bytes())
                .and_then(|c| {
                    c.iter()
                        .skip(1)
                        .flatten()
                        .next()
                        .map(|g| String::from_utf8_lossy(g.as_bytes()).into_owned())
                })
                .unwrap_or_else(|| "(anonymous)".into());
            scan.findings.push(Finding {
                severity: check.severity,
                dimension: check.dimension,
                file: file.path.clone(),
                line: Some(start + 1),
                reason: check.render(&[
                    ("name", &name),
                    ("lines", &span.len().to_string()),
                    ("limit", &limit.to_string()),
                ]),
                rule: CheckId::FunctionLines.as_str().into(),
                confidence: Confidence::High,
                context: None,
            });
        }
    }
    scan
}

/// The 0-based line where the brace-delimited body that follows byte `from` closes; `None`
/// for a declaration without a body (a `;` first) or an unclosed one.
fn braces_end(file: &FileDiff, from: usize, rust: bool) -> Option<usize> {
    let bytes = file.new_text.as_bytes();
    let mut depth = 0usize;
    let mut i = from;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
                continue;
            }
            b'"' | b'`' => {
                let quote = bytes[i];
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'\'' if rust => {
                // A char literal ('x', '\n', '\u{7f}'); otherwise a lifetime.
                if bytes.get(i + 2) == Some(&b'\'') {
                    i += 2;
                } else if bytes.get(i + 1) == Some(&b'\\')
                    && let Some(close) = bytes[i + 2..bytes.len().min(i + 12)]
                        .iter()
                        .position(|&b| b == b'\'')
                {
                    i += 2 + close;
                }
            }
            b'\'' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'\'' && bytes[i] != b'\n' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b';' if depth == 0 => return None,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(file.line_at(i));
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The 0-based last line of the indented body of the definition on line `start`.
fn indent_end(file: &FileDiff, start: usize) -> Option<usize> {
    let indent = |line: &str| line.len() - line.trim_start().len();
    let own = indent(file.line(start));
    let mut end = start;
    for i in start + 1..file.new_line_count() {
        let line = file.line(i);
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if indent(line) <= own {
            break;
        }
        end = i;
    }
    (end > start).then_some(end)
}

/// An import statement of a changed file.
#[derive(Debug, Clone)]
pub struct Import {
    /// The module as written.
    pub module: String,
    /// Names imported from it (`from . import a, b`).
    pub names: Vec<String>,
    /// 0-based line.
    pub line: usize,
}

/// Every import statement of `file` in `language`.
pub fn imports(rules: &RuleSet, language: usize, file: &FileDiff) -> Vec<Import> {
    let mut out = Vec::new();
    for re in &rules.languages[language].imports {
        for caps in re.regex().captures_iter(file.new_text.as_bytes()) {
            let Some(module) = caps.get(1) else { continue };
            let names = caps
                .get(2)
                .map(|n| {
                    String::from_utf8_lossy(n.as_bytes())
                        .split(',')
                        .map(|s| s.split_whitespace().next().unwrap_or("").to_owned())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default();
            out.push(Import {
                module: String::from_utf8_lossy(module.as_bytes()).into_owned(),
                names,
                line: file.line_at(module.start()),
            });
        }
    }
    out
}

/// Normalises `a/b/../c/./d` to `a/c/d`; `None` when it climbs above the root.
pub fn normalise(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// The directory of `path` (`""` at the root).
pub fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}
