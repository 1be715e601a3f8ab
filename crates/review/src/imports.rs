//! Circular imports between the changed modules: the import graph of the changed files of
//! languages that say how their imports resolve (Python, JavaScript, TypeScript), and every
//! cycle that an added import line closes.
//!
//! Only imports that run when a module is loaded make a cycle: for parsed files they come from
//! the syntax, at module level. Imports inside functions run later, imports under
//! `if TYPE_CHECKING:` never run, a Python `except ImportError:` handler imports only when the
//! import before it failed, and TypeScript's `import type` is erased.

use std::collections::{BTreeSet, HashMap, VecDeque};

use tree_sitter::Node;

use super::diff::{ChangeKind, FileDiff};
use super::rules::{CheckId, Resolve, RuleSet};
use super::scan::{FileScan, Import, dir_of, normalise};
use super::syntax::{Grammar, Syntax};
use super::{Confidence, Finding};

/// Findings for import cycles among `files` that an added line closes.
pub(crate) fn circular(rules: &RuleSet, files: &[FileDiff], scans: &[FileScan]) -> Vec<Finding> {
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
        for import in &scans[i].imports {
            let relative = import.module.starts_with('.');
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
                    (language.resolve == Some(Resolve::Python) && !relative)
                        .then(|| {
                            nodes
                                .iter()
                                .copied()
                                .find(|&n| under_source_root(&files[n].path, &t))
                        })
                        .flatten()
                });
                if let Some(to) =
                    to.filter(|&to| to != i && !is_package_of(&files[to].path, &file.path))
                {
                    let list = edges.entry(i).or_default();
                    if !list.iter().any(|e| e.0 == to) {
                        // Added, even if moved: moving an import out of a function or
                        // from under `if TYPE_CHECKING:` is what makes it run at load time.
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
            let modules = scans[from]
                .language
                .and_then(|l| rules.languages[l].resolve);
            out.push(Finding {
                // Between ES modules, a hint: one severity lower, low confidence.
                severity: if modules == Some(Resolve::Path) {
                    super::scan::lowered(check.severity, 1)
                } else {
                    check.severity
                },
                dimension: check.dimension,
                file: files[from].path.clone(),
                line: Some(line + 1),
                reason: check.render(&[("cycle", &cycle.join(" → "))]),
                rule: CheckId::CircularImport.as_str().into(),
                // ES modules load a cycle with live bindings, and an import whose names serve
                // only as types is erased by TypeScript: a hint there. Python runs a cycle's
                // module bodies half-initialised: likely a problem.
                confidence: match modules {
                    Some(Resolve::Path) => Confidence::Low,
                    _ => Confidence::Medium,
                },
                context: None,
            });
        }
    }
    out
}

/// Whether `path` is the module file `target` (`pkg/a.py`) under a source root: for a dotted
/// module (`pkg.a`) under any directory, for a top-level one (`app`) only under a directory
/// named `src`, `lib` or `python`, so that `import operator` (the standard library's) is not
/// `mypkg/types/operator.py`.
fn under_source_root(path: &str, target: &str) -> bool {
    let Some(root) = path.strip_suffix(target).and_then(|p| p.strip_suffix('/')) else {
        return false;
    };
    let dotted = target.trim_end_matches("/__init__.py").contains('/');
    dotted || matches!(root.rsplit('/').next(), Some("src" | "lib" | "python"))
}

/// Whether `init` is the `__init__.py` of a package that holds `path`: Python loads it
/// before any module inside it, so an import of it from there closes no cycle.
fn is_package_of(init: &str, path: &str) -> bool {
    init.strip_suffix("__init__.py")
        .is_some_and(|dir| path.starts_with(dir) && path != init)
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

/// Candidate files for a Python import in `path`: the module (`from .mod import x` is
/// `mod.py` or `mod/__init__.py` next to `path`) and each name as a submodule of it. `from .
/// import x` imports `x.py` or `x/__init__.py`, never the package's own `__init__.py` (which
/// is loaded before any of its modules, so it closes no cycle of theirs).
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

/// The module-level imports of a parsed Python, JavaScript or TypeScript file (`None` for
/// other grammars, whose imports the rules file's patterns find).
pub(crate) fn module_level(syntax: &Syntax<'_>) -> Option<Vec<Import>> {
    let mut out = Vec::new();
    match syntax.grammar {
        Grammar::Python => python_block(syntax, syntax.root(), &mut out),
        g if g.is_js() => js_program(syntax, &mut out),
        _ => return None,
    }
    Some(out)
}

/// The imports among the statements of `block` that run when the module loads.
fn python_block(syntax: &Syntax<'_>, block: Node<'_>, out: &mut Vec<Import>) {
    let mut cursor = block.walk();
    for node in block.named_children(&mut cursor) {
        match node.kind() {
            "import_statement" => {
                let mut c = node.walk();
                for name in node.children_by_field_name("name", &mut c) {
                    out.push(Import {
                        module: syntax.text_of(imported_name(name)).to_owned(),
                        names: Vec::new(),
                        line: name.start_position().row,
                    });
                }
            }
            "import_from_statement" => python_from(syntax, node, out),
            "if_statement" | "elif_clause" => {
                let checking = node
                    .child_by_field_name("condition")
                    .is_some_and(|c| is_type_checking(syntax.text_of(c)));
                if let Some(body) = node
                    .child_by_field_name("consequence")
                    .filter(|_| !checking)
                {
                    python_block(syntax, body, out);
                }
                let mut c = node.walk();
                for alternative in node.children_by_field_name("alternative", &mut c) {
                    python_block(syntax, alternative, out);
                }
            }
            "except_clause" if catches_import_error(syntax, node) => {}
            // Bodies that run when the module loads (a class body does too).
            "block"
            | "try_statement"
            | "except_clause"
            | "else_clause"
            | "finally_clause"
            | "with_statement"
            | "for_statement"
            | "while_statement"
            | "class_definition"
            | "decorated_definition"
            | "match_statement"
            | "case_clause" => {
                python_block(syntax, node, out);
            }
            _ => {}
        }
    }
}

/// `from module import a, b` as one import per name (at the name's line, so that a name added
/// to a long import list is what is new), or one for the module alone (`import *`).
fn python_from(syntax: &Syntax<'_>, node: Node<'_>, out: &mut Vec<Import>) {
    let Some(module) = node.child_by_field_name("module_name") else {
        return;
    };
    let module = syntax.text_of(module).to_owned();
    let mut c = node.walk();
    let names: Vec<Node<'_>> = node.children_by_field_name("name", &mut c).collect();
    if names.is_empty() {
        out.push(Import {
            module: module.clone(),
            names: Vec::new(),
            line: node.start_position().row,
        });
    }
    for name in names {
        out.push(Import {
            module: module.clone(),
            names: vec![syntax.text_of(imported_name(name)).to_owned()],
            line: name.start_position().row,
        });
    }
}

/// The module of `a.b as c` (`a.b`), or the name itself.
fn imported_name(name: Node<'_>) -> Node<'_> {
    if name.kind() == "aliased_import" {
        name.child_by_field_name("name").unwrap_or(name)
    } else {
        name
    }
}

/// `TYPE_CHECKING` or `typing.TYPE_CHECKING` (the condition of imports for type checkers only).
fn is_type_checking(condition: &str) -> bool {
    let condition: String = condition.chars().filter(|c| !c.is_whitespace()).collect();
    condition == "TYPE_CHECKING" || condition.ends_with(".TYPE_CHECKING")
}

/// An `except ImportError:` (or `ModuleNotFoundError`, alone or in a tuple): its imports are a
/// fallback for one that failed.
fn catches_import_error(syntax: &Syntax<'_>, clause: Node<'_>) -> bool {
    let mut c = clause.walk();
    clause.children_by_field_name("value", &mut c).any(|v| {
        let v = if v.kind() == "as_pattern" {
            v.named_child(0).unwrap_or(v)
        } else {
            v
        };
        let text = syntax.text_of(v);
        text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
            .any(|t| matches!(t, "ImportError" | "ModuleNotFoundError"))
    })
}

/// The top-level `import`/`export … from` declarations of a JavaScript or TypeScript file
/// (not `import type`/`export type`, which TypeScript erases) and its `require(…)` calls
/// outside functions.
fn js_program(syntax: &Syntax<'_>, out: &mut Vec<Import>) {
    let root = syntax.root();
    let mut cursor = root.walk();
    for node in root.named_children(&mut cursor) {
        match node.kind() {
            "import_statement" | "export_statement" => {
                if node.child(1).is_some_and(|t| t.kind() == "type") {
                    continue;
                }
                let source = node.child_by_field_name("source").or_else(|| {
                    let mut c = node.walk();
                    node.named_children(&mut c)
                        .find(|n| n.kind() == "import_require_clause")
                        .and_then(|r| r.child_by_field_name("source"))
                });
                match source {
                    Some(source) => push_js(syntax, node, source, out),
                    // `export const x = require('./x')`.
                    None => js_requires(syntax, node, out),
                }
            }
            _ => js_requires(syntax, node, out),
        }
    }
}

/// The `require('…')` calls under `node`, not inside a function (depth first, with a stack of
/// its own: expressions can nest deeper than the thread's stack allows).
fn js_requires(syntax: &Syntax<'_>, node: Node<'_>, out: &mut Vec<Import>) {
    let mut stack = vec![node];
    let mut found = Vec::new();
    while let Some(node) = stack.pop() {
        let kind = node.kind();
        if matches!(
            kind,
            "function_declaration"
                | "generator_function_declaration"
                | "function_expression"
                | "function"
                | "arrow_function"
                | "method_definition"
                | "class_declaration"
                | "class"
        ) {
            continue;
        }
        if kind == "call_expression"
            && node
                .child_by_field_name("function")
                .is_some_and(|f| syntax.text_of(f) == "require")
            && let Some(arg) = node
                .child_by_field_name("arguments")
                .and_then(|a| a.named_child(0))
                .filter(|a| a.kind() == "string")
        {
            found.push((node, arg));
            continue;
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    for (at, arg) in found {
        push_js(syntax, at, arg, out);
    }
}

/// An import, at the line of `at` (the statement or the `require` call), of the module named
/// by the string literal `source`.
fn push_js(syntax: &Syntax<'_>, at: Node<'_>, source: Node<'_>, out: &mut Vec<Import>) {
    let text = syntax.text_of(source);
    let module = text.trim_matches(|c| c == '\'' || c == '"' || c == '`');
    out.push(Import {
        module: module.to_owned(),
        names: Vec::new(),
        line: at.start_position().row,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modules(grammar: Grammar, text: &str) -> Vec<(String, Vec<String>, usize)> {
        let syntax = Syntax::parse(grammar, text).expect("parses");
        module_level(&syntax)
            .expect("a parsed language")
            .into_iter()
            .map(|i| (i.module, i.names, i.line))
            .collect()
    }

    #[test]
    fn python_imports_are_those_that_run_when_the_module_loads() {
        let py = concat!(
            "import os.path as p, sys\n",
            "from . import (a,\n    b as bee)\n",
            "from __future__ import annotations\n",
            "if TYPE_CHECKING:\n    from .types import T\n",
            "if typing.TYPE_CHECKING:\n    import heavy\nelse:\n    import light\n",
            "try:\n    import fast\nexcept ImportError:\n    import slow\n",
            "def f():\n    import lazy\n",
            "class C:\n    from .m import x\n    def g(self):\n        import later\n",
        );
        let got = modules(Grammar::Python, py);
        let want: Vec<(String, Vec<String>, usize)> = vec![
            ("os.path".into(), vec![], 0),
            ("sys".into(), vec![], 0),
            (".".into(), vec!["a".into()], 1),
            (".".into(), vec!["b".into()], 2),
            ("light".into(), vec![], 9),
            ("fast".into(), vec![], 11),
            (".m".into(), vec!["x".into()], 17),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn js_imports_are_top_level_and_not_type_only() {
        let ts = concat!(
            "import type { A } from './a';\n",
            "import { type B, C } from './b';\n",
            "export type { E } from './e';\n",
            "export * from './f';\n",
            "import './g';\n",
            "const h = require('./h');\n",
            "function k() { return require('./k'); }\n",
            "const l = () => import('./l');\n",
            "import D = require('./d');\n",
            "export const m = require('./m');\n",
            "if (process.env.X) {\n  require('./x');\n}\n",
            "import {\n  y,\n} from './y';\n",
        );
        let got: Vec<String> = modules(Grammar::TypeScript, ts)
            .into_iter()
            .map(|(m, _, line)| format!("{m}:{line}"))
            .collect();
        assert_eq!(
            got,
            vec![
                "./b:1", "./f:3", "./g:4", "./h:5", "./d:8", "./m:9", "./x:11", "./y:13"
            ]
        );
    }

    #[test]
    fn absolute_python_modules_are_found_under_source_roots() {
        assert!(under_source_root("src/pkg/a.py", "pkg/a.py"));
        assert!(under_source_root("packages/x/src/app.py", "app.py"));
        assert!(under_source_root("lib/app/__init__.py", "app/__init__.py"));
        // The standard library's `operator` is not a module deep inside a package.
        assert!(!under_source_root("mypkg/types/operator.py", "operator.py"));
        assert!(!under_source_root(
            "mypkg/types/operator/__init__.py",
            "operator/__init__.py"
        ));
        assert!(!under_source_root("src/xpkg/a.py", "pkg/a.py"));
    }

    #[test]
    fn a_relative_python_import_names_modules_not_the_package() {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            python_targets("pkg/a.py", ".", &names(&["x"])),
            vec!["pkg/x.py", "pkg/x/__init__.py"]
        );
        assert_eq!(
            python_targets("pkg/a.py", ".mod", &names(&["name"]))[..2],
            ["pkg/mod.py", "pkg/mod/__init__.py"]
        );
        assert_eq!(
            python_targets("pkg/sub/a.py", "..", &names(&["y"])),
            vec!["pkg/y.py", "pkg/y/__init__.py"]
        );
    }
}
