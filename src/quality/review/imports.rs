//! Circular imports between the changed modules: the import graph of the changed files of
//! languages that say how their imports resolve (Python, JavaScript, TypeScript), and every
//! cycle that an added import line closes.

use std::collections::{BTreeSet, HashMap, VecDeque};

use super::{Confidence, Finding};
use super::diff::{ChangeKind, FileDiff};
use super::rules::{CheckId, Resolve, RuleSet};
use super::scan::{FileScan, dir_of, imports, normalise};

/// Findings for import cycles among `files` that an added line closes.
pub fn circular(rules: &RuleSet, files: &[FileDiff], scans: &[FileScan]) -> Vec<Finding> {
    let Some(check) = rules.check(CheckId::CircularImport) else {
        return Vec::new();
    };
    let nodes: Vec<usize> = (0..files.len())
        .filter(|&i| {
            files[i].kind != ChangeKind::Deleted
                && files[i].skipped.is_none()
                && scans[i]
                    .language
                    .is_some_and(|l| rules.languages[l].resolve.is_some())
        })
        .collect();
    if nodes.len() < 2 {
        return Vec::new();
    }
    let by_path: HashMap<&str, usize> =
        nodes.iter().map(|&i| (files[i].path.as_str(), i)).collect();
    // Edges: from → [(to, 0-based line of the import, whether that line was added)].
    let mut edges: HashMap<usize, Vec<(usize, usize, bool)>> = HashMap::new();
    for &i in &nodes {
        let file = &files[i];
        let lang = scans[i].language.expect("nodes have a language");
        let language = &rules.languages[lang];
        for import in imports(rules, lang, file) {
            let targets = match language.resolve {
                Some(Resolve::Python) => python_targets(&file.path, &import.module, &import.names),
                Some(Resolve::Path) => {
                    path_targets(&file.path, &import.module, &language.resolve_extensions)
                }
                None => Vec::new(),
            };
            for t in targets {
                let to = by_path.get(t.as_str()).copied().or_else(|| {
                    // Python modules may live under a source root (`src/pkg/a.py` for `pkg.a`).
                    (language.resolve == Some(Resolve::Python))
                        .then(|| {
                            nodes
                                .iter()
                                .copied()
                                .find(|&n| files[n].path.ends_with(&format!("/{t}")))
                        })
                        .flatten()
                });
                if let Some(to) = to.filter(|&to| to != i) {
                    let list = edges.entry(i).or_default();
                    if !list.iter().any(|e| e.0 == to) {
                        list.push((to, import.line, file.is_added(import.line)));
                    }
                }
            }
        }
    }
    let mut seen: BTreeSet<Vec<usize>> = BTreeSet::new();
    let mut out = Vec::new();
    for &from in &nodes {
        for &(to, line, added) in edges.get(&from).map(Vec::as_slice).unwrap_or(&[]) {
            if !added {
                continue;
            }
            let Some(path) = shortest_path(&edges, to, from) else {
                continue;
            };
            let mut key: Vec<usize> = path.clone();
            key.sort_unstable();
            if !seen.insert(key) {
                continue;
            }
            let mut cycle: Vec<&str> = vec![files[from].path.as_str()];
            cycle.extend(path.iter().map(|&n| files[n].path.as_str()));
            out.push(Finding {
                severity: check.severity,
                dimension: check.dimension,
                file: files[from].path.clone(),
                line: Some(line + 1),
                reason: check.render(&[("cycle", &cycle.join(" → "))]),
                rule: CheckId::CircularImport.as_str().into(),
                confidence: Confidence::High,
                context: None,
            });
        }
    }
    out
}

/// The nodes from `start` to `goal` (both included) by breadth-first search.
fn shortest_path(
    edges: &HashMap<usize, Vec<(usize, usize, bool)>>,
    start: usize,
    goal: usize,
) -> Option<Vec<usize>> {
    let mut back: HashMap<usize, usize> = HashMap::new();
    let mut queue = VecDeque::from([start]);
    back.insert(start, start);
    while let Some(n) = queue.pop_front() {
        if n == goal {
            let mut path = vec![n];
            let mut at = n;
            while at != start {
                at = back[&at];
                path.push(at);
            }
            path.reverse();
            return Some(path);
        }
        for &(m, _, _) in edges.get(&n).map(Vec::as_slice).unwrap_or(&[]) {
            if let std::collections::hash_map::Entry::Vacant(e) = back.entry(m) {
                e.insert(n);
                queue.push_back(m);
            }
        }
    }
    None
}

/// Candidate files for a Python import in `path`.
fn python_targets(path: &str, module: &str, names: &[String]) -> Vec<String> {
    let dots = module.chars().take_while(|&c| c == '.').count();
    let rest = module[dots..].replace('.', "/");
    let base = if dots == 0 {
        String::new()
    } else {
        let mut dir = dir_of(path).to_owned();
        for _ in 1..dots {
            dir = dir_of(&dir).to_owned();
        }
        dir
    };
    let join = |a: &str, b: &str| match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_owned(),
        (_, true) => a.to_owned(),
        _ => format!("{a}/{b}"),
    };
    let module_path = join(&base, &rest);
    let mut stems = Vec::new();
    if !rest.is_empty() {
        stems.push(module_path.clone());
    }
    for n in names {
        stems.push(join(&module_path, n));
    }
    let mut out = Vec::new();
    for s in stems.into_iter().filter(|s| !s.is_empty()) {
        out.push(format!("{s}.py"));
        out.push(format!("{s}/__init__.py"));
    }
    if rest.is_empty() && !module_path.is_empty() {
        out.push(format!("{module_path}/__init__.py"));
    }
    out
}

/// Candidate files for a relative path import (`./a`, `../b/c.js`) in `path`.
fn path_targets(path: &str, spec: &str, extensions: &[String]) -> Vec<String> {
    if !(spec.starts_with("./") || spec.starts_with("../")) {
        return Vec::new();
    }
    let dir = dir_of(path);
    let Some(joined) = normalise(&format!("{dir}/{spec}")) else {
        return Vec::new();
    };
    let mut out = vec![joined.clone()];
    for e in extensions {
        out.push(format!("{joined}.{e}"));
    }
    for e in extensions {
        out.push(format!("{joined}/index.{e}"));
    }
    // `./a.js` written for a TypeScript source `a.ts`.
    if let Some((stem, _)) = joined.rsplit_once('.').filter(|(s, _)| !s.ends_with('/')) {
        for e in extensions {
            out.push(format!("{stem}.{e}"));
        }
    }
    out
}
