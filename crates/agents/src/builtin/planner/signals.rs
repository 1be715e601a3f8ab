//! The secondary signal scan over the files the plan touches: `scaling_concern` (nested loops
//! in one function), `breaking_change` (a planned change to a file that is a public API) and
//! `data_migration` (migrations, SQL and schema files).

use std::collections::BTreeMap;

use super::code::{Code, TABLES};
use super::shape::{Change, PlannedFile};
use crate::builtin::code;

/// The inner loop must start within this many lines of the outer one.
const NESTING_WINDOW: usize = 30;
/// Files larger than this are not scanned.
const MAX_SCAN_SIZE: usize = 256 * 1024;

/// One signal found in one file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub(super) struct Finding {
    /// `scaling_concern`, `breaking_change` or `data_migration`.
    pub signal: &'static str,
    /// The file.
    pub path: String,
    /// What shows it, for the task's risks.
    pub detail: String,
}

/// Scans the planned files.
pub(super) fn scan(files: &[PlannedFile], code: &Code) -> Vec<Finding> {
    let mut out = Vec::new();
    for f in files {
        let mut found = |signal, detail| {
            out.push(Finding {
                signal,
                path: f.path.clone(),
                detail,
            })
        };
        if let Some(detail) = migration(&f.path) {
            found("data_migration", detail);
        }
        let modified = f.change == Change::Modify;
        let Some(bytes) = modified.then(|| code.tree.read_path(&f.path)).flatten() else {
            continue;
        };
        if bytes.len() > MAX_SCAN_SIZE || bytes[..bytes.len().min(8000)].contains(&0) {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        if let Some(line) = nested_loop(&text) {
            found(
                "scaling_concern",
                format!("a loop nested in another at line {line}"),
            );
        }
        if let Some(detail) = public_api(&f.path, &text) {
            found("breaking_change", detail);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Signal name to evidence paths, sorted, from the findings of [`scan`] (which are sorted).
pub(super) fn evidence(findings: &[Finding]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in findings {
        let paths = out.entry(f.signal.to_owned()).or_default();
        if paths.last() != Some(&f.path) {
            paths.push(f.path.clone());
        }
    }
    out
}

/// Why `path` is a migration, SQL or schema file, if it is one.
fn migration(path: &str) -> Option<String> {
    let migrations = |d: &str| matches!(d, "migrations" | "migration" | "migrate");
    if code::dirs(path).any(migrations) {
        return Some("a migration".to_owned());
    }
    let ext = code::extension(path);
    if ext == "sql" {
        return Some("an SQL file".to_owned());
    }
    let name = code::file_name(path);
    let stem = name.split('.').next().unwrap_or(name);
    if stem.eq_ignore_ascii_case("schema") || ext == "prisma" {
        return Some("a schema file".to_owned());
    }
    None
}

/// The 1-based line of a loop nested in another loop of the same function, if any. A line
/// belongs to the outer loop while it is indented deeper than the loop's own line.
pub(super) fn nested_loop(text: &str) -> Option<usize> {
    let lines: Vec<(usize, &str)> = text.lines().map(|l| (indent(l), l.trim())).collect();
    for (i, &(outer, line)) in lines.iter().enumerate() {
        if !is_loop(line) {
            continue;
        }
        for (j, &(depth, inner)) in lines.iter().enumerate().skip(i + 1).take(NESTING_WINDOW) {
            if inner.is_empty() || is_comment(inner) {
                continue;
            }
            if depth <= outer || is_function(inner) {
                break;
            }
            if is_loop(inner) {
                return Some(j + 1);
            }
        }
    }
    None
}

fn indent(line: &str) -> usize {
    line.chars()
        .take_while(|c| c.is_whitespace())
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

/// Whether `line` starts with one of `patterns`.
fn starts(line: &str, patterns: &[String]) -> bool {
    patterns.iter().any(|p| line.starts_with(p.as_str()))
}

fn is_comment(line: &str) -> bool {
    starts(line, &TABLES.signals.comments)
}

fn is_loop(line: &str) -> bool {
    let s = &TABLES.signals;
    starts(line, &s.loops) || s.loop_calls.iter().any(|c| line.contains(c.as_str()))
}

fn is_function(line: &str) -> bool {
    let s = &TABLES.signals;
    let line = s
        .modifiers
        .iter()
        .fold(line, |l, m| l.trim_start_matches(m.as_str()));
    starts(line, &s.functions)
}

/// What makes `path` a public API that a change may break, if it is one: `pub` items in a
/// Rust `lib.rs` or `mod.rs`, `export`s in a JavaScript or TypeScript index file,
/// `__all__` or top-level definitions in a Python package's `__init__.py`.
pub(super) fn public_api(path: &str, text: &str) -> Option<String> {
    let name = code::file_name(path);
    match name {
        "lib.rs" | "mod.rs" => {
            let public = &TABLES.signals.rust_public;
            let n = text
                .lines()
                .filter(|l| starts(l.trim_start(), public))
                .count();
            (n > 0).then(|| format!("{n} public items"))
        }
        "index.js" | "index.ts" | "index.mjs" | "index.cjs" | "index.jsx" | "index.tsx" => text
            .lines()
            .any(|l| l.starts_with("export "))
            .then(|| "exports".to_owned()),
        "__init__.py" if text.contains("__all__") => Some("`__all__`".to_owned()),
        "__init__.py" => text
            .lines()
            .any(|l| starts(l, &TABLES.signals.python_public))
            .then(|| "top-level definitions".to_owned()),
        _ => None,
    }
}
