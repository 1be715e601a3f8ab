//! The shape of the repository (where source, tests, docs and CI live, where the program
//! starts) and how its tests are run.

use std::collections::BTreeSet;

use super::manifest::{DEPS, Manifest};
use super::scan::{Entry, FILES, Inventory};
use crate::builtin::code::{CODE, dirs, file_name, is_entry_point, is_test_dir};
use crate::builtin::words::has;
use tlv4_specdoc::discovery::TestFramework;

/// At most this many paths per layout list.
const MAX_LIST: usize = 20;

/// The layout written to `discovery-context.json`: sorted lists of at most [`MAX_LIST`]
/// paths.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub(super) struct Layout {
    /// CI configuration files.
    pub ci: BTreeSet<String>,
    /// Documentation directories and top-level documents.
    pub docs: BTreeSet<String>,
    /// Files where the program or library starts.
    pub entry_points: BTreeSet<String>,
    /// Directories holding product source (`.` for the root).
    pub source_dirs: BTreeSet<String>,
    /// Directories holding tests.
    pub test_dirs: BTreeSet<String>,
    /// Directories at the root.
    pub top_level_dirs: BTreeSet<String>,
}

/// Facts from file contents that only the test-framework detection needs.
#[derive(Debug, Default)]
pub(super) struct TestHints {
    /// A Python test file importing pytest.
    pytest_import: Option<String>,
    /// A Python test file importing unittest.
    unittest_import: Option<String>,
    /// `tox.ini` or `setup.cfg` with a pytest section.
    pytest_section: Option<String>,
}

impl TestHints {
    /// Looks at one file's text.
    pub(super) fn observe(&mut self, entry: &Entry<'_>, text: &str) {
        // Each keeps the first file that shows it.
        let first = |slot: &mut Option<String>, found: bool| {
            if slot.is_none() && found {
                *slot = Some(entry.path().to_owned());
            }
        };
        let python_test = entry.test && entry.ext() == "py";
        let pytest = python_test && text.contains("import pytest");
        let unittest = python_test && text.contains("unittest");
        let config = matches!(entry.name(), "tox.ini" | "setup.cfg");
        let section = config && (text.contains("[pytest]") || text.contains("[tool:pytest]"));
        first(&mut self.pytest_import, pytest);
        first(&mut self.unittest_import, unittest);
        first(&mut self.pytest_section, section);
    }
}

/// The layout of the files in `inv`.
pub(super) fn layout(inv: &Inventory<'_>, manifests: &[Manifest]) -> Layout {
    let mut l = Layout::default();
    // JavaScript starts at the root of a package: the repository's, or any package.json's.
    let packages = manifests
        .iter()
        .filter_map(|m| m.path.strip_suffix("package.json"));
    let js_roots: Vec<&str> = std::iter::once("")
        .chain(packages.filter(|d| !d.is_empty()))
        .collect();
    for e in &inv.entries {
        let path = e.path();
        let parts: Vec<&str> = dirs(path).collect();
        if let Some(first) = parts.first() {
            l.top_level_dirs.insert((*first).to_owned());
            if has(&FILES.doc_dirs, first) {
                l.docs.insert((*first).to_owned());
            }
        } else if matches!(e.ext().as_str(), "md" | "rst" | "adoc") {
            l.docs.insert(path.to_owned());
        }
        if e.is_product_source() {
            let end = parts
                .iter()
                .position(|d| has(&CODE.source_roots, d))
                .map_or(1, |i| i + 1)
                .min(parts.len());
            let dir = parts[..end].join("/");
            l.source_dirs
                .insert(if dir.is_empty() { ".".into() } else { dir });
        }
        if let Some(i) = parts.iter().position(|d| is_test_dir(d)).filter(|_| e.test) {
            l.test_dirs.insert(parts[..=i].join("/"));
        }
        if has(&FILES.ci_files, path)
            || FILES
                .ci_prefixes
                .iter()
                .any(|p| path.starts_with(p.as_str()))
        {
            l.ci.insert(path.to_owned());
        }
        if is_entry_point(path, &js_roots) {
            l.entry_points.insert(path.to_owned());
        }
    }
    let named = manifests.iter().flat_map(|m| &m.entry_files);
    l.entry_points
        .extend(named.filter(|f| inv.contains(f)).cloned());
    // `frontend` holding only config next to `frontend/src`: the nested one says more.
    let source = l.source_dirs.clone();
    l.source_dirs
        .retain(|d| d == "." || !source.iter().any(|o| o.starts_with(&format!("{d}/"))));
    for set in [
        &mut l.ci,
        &mut l.docs,
        &mut l.entry_points,
        &mut l.source_dirs,
        &mut l.test_dirs,
        &mut l.top_level_dirs,
    ] {
        while set.len() > MAX_LIST {
            set.pop_last();
        }
    }
    l
}

/// The test framework, preferring the one of `primary` language when several are found.
pub(super) fn test_framework(
    inv: &Inventory<'_>,
    manifests: &[Manifest],
    hints: &TestHints,
    primary: Option<&str>,
) -> Option<TestFramework> {
    // Manifests nearest the root first.
    let mut ordered: Vec<&Manifest> = manifests.iter().collect();
    ordered.sort_by_key(|m| (m.path.matches('/').count(), m.path.clone()));
    let of = |eco: &'static str| ordered.iter().copied().filter(move |m| m.ecosystem == eco);
    // Each with its languages: name, command and evidence.
    let mut candidates: Vec<(&[&str], [String; 3])> = Vec::new();
    let mut add = |langs: &'static [&'static str], name: &str, command: &str, evidence: &str| {
        candidates.push((langs, [name.into(), command.into(), evidence.into()]));
    };

    if let Some(m) = of("rust").next() {
        add(&["Rust"], "cargo test", "cargo test", &m.path);
    }
    let pytest = of("python")
        .find(|m| m.declares("pytest") || m.pytest_config)
        .map(|m| m.path.as_str())
        .or_else(|| {
            let config = |e: &&Entry<'_>| matches!(e.name(), "pytest.ini" | "conftest.py");
            inv.entries.iter().find(config).map(Entry::path)
        })
        .or(hints.pytest_section.as_deref())
        .or(hints.pytest_import.as_deref());
    if let Some(evidence) = pytest {
        add(&["Python"], "pytest", "pytest", evidence);
    } else if let Some(evidence) = &hints.unittest_import {
        add(&["Python"], "unittest", "python -m unittest", evidence);
    }
    for m in of("node") {
        let dir = m.path.strip_suffix("package.json").unwrap_or("");
        let locks = [
            ("pnpm-lock.yaml", "pnpm"),
            ("yarn.lock", "yarn"),
            ("bun.lockb", "bun"),
        ];
        let pm = locks
            .iter()
            .find(|(lock, _)| inv.contains(&format!("{dir}{lock}")))
            .map_or("npm", |(_, pm)| *pm);
        let run = format!("{pm} test");
        let script = m
            .scripts
            .get("test")
            .filter(|s| !s.contains("no test specified"));
        let runner = DEPS.test_runners.iter().find(|r| m.declares(&r.dep));
        let (name, command) = match (runner, script) {
            (Some(r), Some(_)) => (r.name.as_str(), run.as_str()),
            (Some(r), None) => (r.name.as_str(), r.command.as_str()),
            (None, Some(s)) if s.contains("node --test") => ("node:test", run.as_str()),
            (None, Some(_)) => ("test script", run.as_str()),
            (None, None) => continue,
        };
        add(&["JavaScript", "TypeScript"], name, command, &m.path);
        break;
    }
    if let Some(m) = of("go").next() {
        add(&["Go"], "go test", "go test ./...", &m.path);
    }
    if let Some(m) = of("java").next() {
        // `junit*` covers `junit-jupiter*` too.
        let name = if m.declares("junit*") {
            "JUnit"
        } else {
            "JVM tests"
        };
        let wrapper = m.path.replace(file_name(&m.path), "gradlew");
        let command = match m.kind {
            "maven" => "mvn test",
            _ if inv.contains("gradlew") || inv.contains(&wrapper) => "./gradlew test",
            _ => "gradle test",
        };
        add(&["Java", "Kotlin", "Scala"], name, command, &m.path);
    }
    if let Some(m) = of("ruby").next() {
        if m.declares("rspec*") {
            add(&["Ruby"], "rspec", "bundle exec rspec", &m.path);
        } else if m.declares("minitest") {
            add(&["Ruby"], "minitest", "bundle exec rake test", &m.path);
        }
    }
    if let Some(m) = of("php").find(|m| m.declares("phpunit/phpunit")) {
        add(&["PHP"], "phpunit", "vendor/bin/phpunit", &m.path);
    }

    let preferred = candidates
        .iter()
        .position(|(langs, _)| primary.is_some_and(|p| langs.contains(&p)))
        .unwrap_or(0);
    let [name, command, evidence] = candidates.get(preferred)?.1.clone();
    Some(TestFramework {
        command,
        evidence,
        name,
    })
}
