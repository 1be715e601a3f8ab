//! Rules applied to one changed file: the `[[rule]]` patterns over its added lines, and the
//! size checks (long files, long functions the change touches). Imports are collected here
//! for the cross-file circular-import check.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use super::checks;
use super::context::{self, Context};
use super::diff::{ChangeKind, FileDiff};
use super::rules::{Body, CheckId, Language, RuleSet, Severity};
use super::syntax::{self, Function, Grammar, Place, Syntax};
use super::{Confidence, Finding};

/// What scanning one file found.
#[derive(Debug, Clone, Default)]
pub(crate) struct FileScan {
    /// Findings, in rule order.
    pub findings: Vec<Finding>,
    /// The file's language (index into the rule set's languages).
    pub language: Option<usize>,
    /// The kind of code the whole file is, if not ordinary code.
    pub context: Option<Context>,
    /// The change adds or removes test code here.
    pub touches_tests: bool,
    /// Lines of new code outside tests, examples and build scripts.
    pub new_code_lines: usize,
    /// Why the file was not scanned although it changed (vendored or generated code).
    pub skipped: Option<String>,
    /// The file's module-level imports (for the circular-import check).
    pub imports: Vec<Import>,
}

/// Severity `s` lowered by `steps` (never below low).
pub(crate) fn lowered(s: Severity, steps: u8) -> Severity {
    let at = Severity::ALL.iter().position(|&x| x == s).unwrap_or(0);
    Severity::ALL[(at + usize::from(steps)).min(Severity::ALL.len() - 1)]
}

/// How many severities a finding drops in `context`: two in test code and examples (what
/// they do is not shipped), one in build scripts and programs.
pub(crate) fn context_steps(context: Option<Context>) -> u8 {
    match context {
        None => 0,
        Some(Context::Test | Context::Example) => 2,
        Some(Context::Build | Context::Cli) => 1,
    }
}

/// Scans `file` with `rules`; `imports`: read the module-level imports of files whose
/// language resolves them (for the circular-import check).
pub(crate) fn scan_file(rules: &RuleSet, file: &FileDiff, imports_wanted: bool) -> FileScan {
    let (mut scan, test_file) = begin(rules, file);
    if file.skipped.is_some() || file.kind == ChangeKind::Deleted {
        scan.touches_tests = test_file;
        return scan;
    }
    scan.touches_tests = test_file && (file.added_lines > 0 || file.removed_lines > 0);
    if context::is_not_authored(&file.path, &file.new_text) {
        scan.skipped = Some("vendored or generated code: not reviewed".into());
        return scan;
    }
    let language = scan.language;
    let lang = language.map(|l| &rules.languages[l]);
    let grammar = lang.and_then(|l| Grammar::of(&l.name, &file.path));
    let wants_imports = imports_wanted && lang.is_some_and(|l| l.resolve.is_some());
    if file.new.is_empty() && !wants_imports {
        return scan;
    }
    let focus = focus_of(file);
    if !file.new.is_empty()
        && scan.context.is_none()
        && grammar.is_some_and(|g| syntax::is_program(g, &file.new_text))
    {
        scan.context = Some(Context::Cli);
    }
    let parsed = parse_for_scan(rules, file, &scan, grammar, wants_imports, focus);
    if let (Some(l), true) = (language, wants_imports) {
        scan.imports = imports(rules, l, file, parsed.syntax.as_ref());
    }
    if file.new.is_empty() {
        return scan;
    }
    let at = Places::of(rules, file, &scan, test_file, &parsed);
    scan.touches_tests |= file.added.iter().any(|r| {
        at.test_lines
            .iter()
            .any(|t| t.start < r.end && r.start < t.end)
    });
    if language.is_some()
        && !matches!(
            at.file_context,
            Some(Context::Test | Context::Example | Context::Build)
        )
    {
        scan.new_code_lines = file
            .new
            .iter()
            .map(|r| r.clone().filter(|&i| !at.in_tests(i)).count())
            .sum();
    }
    pattern_findings(rules, file, language, &parsed, &at, &mut scan.findings);
    check_findings(rules, file, &parsed, &at, &mut scan.findings);
    let Some(lang) = lang else {
        return scan;
    };
    file_size_finding(rules, file, at.file_context, &mut scan.findings);
    function_size_findings(rules, file, lang, grammar, &parsed, &at, &mut scan.findings);
    scan
}

/// The scan of `file` before anything is read: its language, and the kind of code the whole
/// file is by its path; and whether it is a test file.
fn begin(rules: &RuleSet, file: &FileDiff) -> (FileScan, bool) {
    let language = rules.language_of(&file.path);
    let path_context = context::of_path(&file.path);
    let test_file = rules.is_test_path(language, &file.path) || path_context == Some(Context::Test);
    let scan = FileScan {
        language,
        context: if test_file {
            Some(Context::Test)
        } else {
            path_context
        },
        ..FileScan::default()
    };
    (scan, test_file)
}

/// The byte ranges of the new code of `file`, in order: walks of the parse visit only what
/// overlaps them (imports are read from the module's top level, whatever the focus).
fn focus_of(file: &FileDiff) -> Vec<Range<usize>> {
    file.new
        .iter()
        .map(|r| {
            let start = file.line_starts[r.start];
            let end = file
                .line_starts
                .get(r.end)
                .copied()
                .unwrap_or(file.new_text.len());
            start..end
        })
        .collect()
}

/// What the scan of a file parsed.
struct Parsed<'t> {
    /// The parse of the items that needed it, if any did.
    syntax: Option<Syntax<'t>>,
    /// The windows left unparsed that are test code by the attribute above them or above
    /// their block (`#[cfg(test)] mod tests { … }`).
    unparsed_tests: Vec<Range<usize>>,
    /// Whether a function may be over the size limit (`parse_windows` says).
    may_be_long: bool,
}

/// Parses what scanning `file` needs parsed: a check whose trigger words are in the new
/// code, a pattern that must be placed in code or a comment and matches, a function that may
/// have crossed the size limit, the imports of a module. Only the items that need it are
/// parsed.
fn parse_for_scan<'t>(
    rules: &RuleSet,
    file: &'t FileDiff,
    scan: &FileScan,
    grammar: Option<Grammar>,
    wants_imports: bool,
    focus: Vec<Range<usize>>,
) -> Parsed<'t> {
    let mut parsed = Parsed {
        syntax: None,
        unparsed_tests: Vec::new(),
        may_be_long: true,
    };
    let Some(g) = grammar else {
        return parsed;
    };
    if wants_imports {
        parsed.syntax = Syntax::parse_items(g, &file.new_text, Some(focus), None);
        return parsed;
    }
    let layout = syntax::layout(g, &file.new_text, &focus);
    let (wanted, long, tests) =
        parse_windows(rules, scan.context, scan.language, g, file, &focus, &layout);
    parsed.may_be_long = long;
    parsed.unparsed_tests = layout
        .windows
        .iter()
        .zip(tests)
        .filter(|((w, _), test)| {
            *test && !wanted.iter().any(|p| p.start <= w.start && w.end <= p.end)
        })
        .map(|((w, _), _)| w.clone())
        .collect();
    if !wanted.is_empty() {
        parsed.syntax = Syntax::parse_items(g, &file.new_text, Some(focus), Some(wanted));
    }
    parsed
}

/// Where in a file its lines are: which are test code, and the context of the others.
struct Places {
    /// The runs of lines that are test code.
    test_lines: Vec<Range<usize>>,
    /// The kind of code the whole file is, if not ordinary code.
    file_context: Option<Context>,
}

impl Places {
    /// Test code inside `file`: by syntax where the file is parsed (an item left unparsed by
    /// the test attribute above it), else from the language's test marker (`#[cfg(test)]`)
    /// on; all of it in a test file.
    fn of(
        rules: &RuleSet,
        file: &FileDiff,
        scan: &FileScan,
        test_file: bool,
        parsed: &Parsed<'_>,
    ) -> Places {
        let lang = scan.language.map(|l| &rules.languages[l]);
        let test_lines: Vec<Range<usize>> = if test_file {
            vec![Range {
                start: 0,
                end: file.new_line_count(),
            }]
        } else if let Some(s) = parsed
            .syntax
            .as_ref()
            .filter(|s| s.grammar == Grammar::Rust)
        {
            let mut lines = s.test_lines();
            lines.extend(
                parsed
                    .unparsed_tests
                    .iter()
                    .map(|w| file.line_at(w.start)..file.line_at(w.end.saturating_sub(1)) + 1),
            );
            lines
        } else {
            lang.and_then(|l| l.test_marker.as_ref())
                .and_then(|m| m.regex().find(file.new_text.as_bytes()))
                .map(|m| {
                    vec![Range {
                        start: file.line_at(m.start()),
                        end: file.new_line_count(),
                    }]
                })
                .unwrap_or_default()
        };
        Places {
            test_lines,
            file_context: scan.context,
        }
    }

    /// Whether 0-based `line` is test code.
    fn in_tests(&self, line: usize) -> bool {
        self.test_lines.iter().any(|r| r.contains(&line))
    }

    /// The context of 0-based `line`.
    fn context_at(&self, line: usize) -> Option<Context> {
        if self.in_tests(line) {
            Some(Context::Test)
        } else {
            self.file_context
        }
    }
}

/// The `[[rule]]` patterns over the added lines of `file`. Patterns run over each run of
/// added lines (a pattern may span lines), and a match counts when it reaches a line of new
/// code.
fn pattern_findings(
    rules: &RuleSet,
    file: &FileDiff,
    language: Option<usize>,
    parsed: &Parsed<'_>,
    at: &Places,
    findings: &mut Vec<Finding>,
) {
    let lang = language.map(|l| &rules.languages[l]);
    let place_of = |offset: usize| match &parsed.syntax {
        Some(s) => s.place(offset),
        None => guess_place(lang.map(|l| l.name.as_str()), file, offset),
    };
    let mut seen: HashSet<(usize, usize)> = HashSet::new();
    for (index, rule) in rules.rules.iter().enumerate() {
        if !rules.applies(rule, language, &file.path) {
            continue;
        }
        if rule.skips(at.file_context) && at.test_lines.is_empty() {
            continue;
        }
        for range in &file.added {
            if !file.touches_new(range) {
                continue;
            }
            let base = file.line_starts[range.start];
            for m in rule
                .pattern
                .regex()
                .find_iter(file.text_of(range).as_bytes())
            {
                let line = file.line_at(base + m.start());
                let last = file.line_at(base + m.end().max(m.start() + 1) - 1);
                if !file.touches_new(&(line..last + 1)) {
                    continue;
                }
                let context = at.context_at(line);
                if rule.skips(context) {
                    continue;
                }
                if rule.place.is_some_and(|p| place_of(base + m.start()) != p) {
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
                    findings.push(Finding {
                        severity: lowered(rule.severity, context_steps(context)),
                        dimension: rule.dimension,
                        file: file.path.clone(),
                        line: Some(line + 1),
                        reason: rule.message.clone(),
                        rule: rule.id.clone(),
                        confidence: rule.confidence,
                        context,
                    });
                }
            }
        }
    }
}

/// The checks that read the parse, on the new code of `file`.
fn check_findings(
    rules: &RuleSet,
    file: &FileDiff,
    parsed: &Parsed<'_>,
    at: &Places,
    findings: &mut Vec<Finding>,
) {
    let mut hits = Vec::new();
    checks::run(
        &checks::Input {
            file,
            syntax: parsed.syntax.as_ref(),
        },
        &mut hits,
    );
    for hit in hits {
        let Some(check) = rules.check(hit.check) else {
            continue;
        };
        if !file.touches_new(&hit.lines) {
            continue;
        }
        let context = at.context_at(hit.line);
        if check.skips(context) {
            continue;
        }
        let values: Vec<(&str, &str)> = hit.values.iter().map(|(k, v)| (*k, v.as_str())).collect();
        findings.push(Finding {
            severity: lowered(check.severity, hit.lower + context_steps(context)),
            dimension: check.dimension,
            file: file.path.clone(),
            line: Some(hit.line + 1),
            reason: check.render(&values),
            rule: check.id.as_str().into(),
            confidence: hit.confidence,
            context,
        });
    }
}

/// What a size check says of a file or function that is `new` lines long, against its
/// `old` length (`None`: it is new) and `limit`: the change takes it over its limit (medium),
/// or grows one that was already over it by at least `growth_percent` of the limit (one
/// severity lower); never for touching it. The change in words, and the severity steps down.
fn size_change(
    rules: &RuleSet,
    old: Option<usize>,
    new: usize,
    limit: usize,
) -> Option<(String, u8)> {
    let growth = (limit * rules.limits.growth_percent).div_ceil(100).max(1);
    match old {
        None => Some(("new".into(), 0)),
        Some(old) if old <= limit => Some((format!("was {old}"), 0)),
        Some(old) if new >= old + growth => Some((format!("grew by {} from {old}", new - old), 1)),
        Some(_) => None,
    }
}

/// `file-lines`: the change took the file over the limit, or grew one that was over it.
fn file_size_finding(
    rules: &RuleSet,
    file: &FileDiff,
    file_context: Option<Context>,
    findings: &mut Vec<Finding>,
) {
    let Some(check) = rules.check(CheckId::FileLines) else {
        return;
    };
    if matches!(file_context, Some(Context::Test | Context::Example)) {
        return;
    }
    let limit = rules.limits.max_file_lines;
    let new = file.new_line_count();
    let old = (file.kind != ChangeKind::Added).then_some(file.old_line_count);
    if new <= limit {
        return;
    }
    let Some((change, steps)) = size_change(rules, old, new, limit) else {
        return;
    };
    let change = if change == "new" {
        "a new file".into()
    } else {
        change
    };
    findings.push(Finding {
        severity: lowered(check.severity, steps + context_steps(file_context)),
        dimension: check.dimension,
        file: file.path.clone(),
        line: Some(file.new[0].start + 1),
        reason: check.render(&[
            ("lines", &new.to_string()),
            ("limit", &limit.to_string()),
            ("change", &change),
        ]),
        rule: CheckId::FileLines.as_str().into(),
        confidence: Confidence::High,
        context: file_context,
    });
}

/// `function-lines`: functions holding new code that the change took over the limit, or
/// grew while over it. A function whose first and last lines the change kept was as long as
/// the lines they were in the old text; the others are looked for by name in the old text.
fn function_size_findings(
    rules: &RuleSet,
    file: &FileDiff,
    lang: &Language,
    grammar: Option<Grammar>,
    parsed: &Parsed<'_>,
    at: &Places,
    findings: &mut Vec<Finding>,
) {
    let Some(check) = rules.check(CheckId::FunctionLines) else {
        return;
    };
    let limit = rules.limits.max_function_lines;
    let functions = match &parsed.syntax {
        Some(s) if parsed.may_be_long => s.functions(),
        // A parsed language, and no function that may have crossed the limit.
        Some(_) => Vec::new(),
        None if grammar.is_some() => Vec::new(),
        None => regex_functions(lang, &file.new_text),
    };
    let long: Vec<&Function> = functions
        .iter()
        .filter(|f| {
            f.lines.len() > limit
                && file.touches_new(&f.lines)
                && !matches!(
                    at.context_at(f.lines.start),
                    Some(Context::Test | Context::Example)
                )
        })
        .collect();
    let kept: Vec<Option<usize>> = long
        .iter()
        .map(|f| {
            let first = file.old_line(f.lines.start)?;
            let last = file.old_line(f.lines.end.checked_sub(1)?)?;
            (last >= first).then(|| last + 1 - first)
        })
        .collect();
    // The old side's functions, by name, only for those the diff does not place.
    let old: HashMap<String, usize> =
        if kept.iter().all(Option::is_some) || file.kind == ChangeKind::Added {
            HashMap::new()
        } else {
            let names: Vec<&str> = long
                .iter()
                .zip(&kept)
                .filter(|(f, kept)| kept.is_none() && !f.name.ends_with("(anonymous)"))
                .map(|(f, _)| f.name.rsplit(['.', ':']).next().unwrap_or(&f.name))
                .collect();
            old_lengths(lang, grammar, &file.old_text, &names)
        };
    for (f, kept) in long.into_iter().zip(kept) {
        let anonymous = f.name.ends_with("(anonymous)");
        let short = f.name.rsplit(['.', ':']).next().unwrap_or(&f.name);
        let was = kept.or_else(|| {
            old.get(&f.name)
                .or_else(|| old.get(&format!("\0{short}")))
                .copied()
        });
        // An anonymous function has no name to find its old self by: only a new file says
        // it is new.
        if anonymous && file.kind != ChangeKind::Added {
            continue;
        }
        let Some((change, steps)) = size_change(rules, was, f.lines.len(), limit) else {
            continue;
        };
        let change = if change == "new" {
            "a new function".into()
        } else {
            change
        };
        let context = at.context_at(f.lines.start);
        findings.push(Finding {
            severity: lowered(check.severity, steps + context_steps(context)),
            dimension: check.dimension,
            file: file.path.clone(),
            line: Some(f.lines.start + 1),
            reason: check.render(&[
                ("name", &f.name),
                ("lines", &f.lines.len().to_string()),
                ("limit", &limit.to_string()),
                ("change", &change),
            ]),
            rule: CheckId::FunctionLines.as_str().into(),
            confidence: Confidence::High,
            context,
        });
    }
}

/// The lengths of the functions of `old_text` (the old side of a file in `lang`), by
/// qualified name, and by bare name (`"\0name"`) when only one function has it (a class or
/// type renamed with its file keeps its methods). Only the old items where `names` are
/// defined are parsed.
fn old_lengths(
    lang: &Language,
    grammar: Option<Grammar>,
    old_text: &str,
    names: &[&str],
) -> HashMap<String, usize> {
    // Where a name is defined: on a line the language's function pattern matches
    // (JavaScript's methods it does not see: wherever the name is).
    let function = lang
        .function
        .as_ref()
        .filter(|_| !grammar.is_some_and(|g| g.is_js()))
        .map(|f| f.regex());
    let defines = |r: &Range<usize>| {
        function.is_none_or(|f| {
            let start = old_text[..r.start].rfind('\n').map_or(0, |i| i + 1);
            let end = old_text[r.end..]
                .find('\n')
                .map_or(old_text.len(), |i| r.end + i);
            f.is_match(&old_text.as_bytes()[start..end])
        })
    };
    let mut at: Vec<Range<usize>> = names
        .iter()
        .flat_map(|name| word_positions(old_text, name))
        .filter(defines)
        .collect();
    at.sort_by_key(|r| r.start);
    let parsed = grammar.filter(|_| !at.is_empty()).and_then(|g| {
        let items = syntax::windows(g, old_text, &at);
        Syntax::parse_items(g, old_text, None, Some(items))
    });
    let old = match parsed {
        Some(s) => s.functions(),
        None if grammar.is_some() => Vec::new(),
        None => regex_functions(lang, old_text),
    };
    let mut by_name = HashMap::new();
    let mut bare: HashMap<String, Option<usize>> = HashMap::new();
    for f in old {
        let short = f
            .name
            .rsplit(['.', ':'])
            .next()
            .unwrap_or(&f.name)
            .to_owned();
        bare.entry(short)
            .and_modify(|v| *v = None)
            .or_insert(Some(f.lines.len()));
        by_name.entry(f.name).or_insert(f.lines.len());
    }
    for (short, len) in bare {
        if let Some(len) = len {
            by_name.entry(format!("\0{short}")).or_insert(len);
        }
    }
    by_name
}

/// The byte ranges to parse for the long function `f` of `lines` instead of the item it is in
/// (`at`, among `items`): the item from its start to the end of the line with the `{` that
/// opens the body, and from the closing line to the item's end. `None` unless the item holds
/// the function alone (above it only attributes, comments and blank lines; below it only
/// blank lines) and its body is found where the function pattern put it.
fn outline(
    lines: &Lines<'_>,
    grammar: Grammar,
    items: &[Range<usize>],
    at: Option<usize>,
    f: &Function,
) -> Option<[Range<usize>; 2]> {
    if !matches!(grammar, Grammar::Rust | Grammar::Go) {
        return None;
    }
    let w = items.get(at?)?;
    let text = lines.text;
    let start = lines.starts[f.lines.start];
    let last = lines.starts[f.lines.end - 1];
    let end = lines.starts.get(f.lines.end).copied().unwrap_or(text.len());
    let (open, close) = braces(lines, start, grammar == Grammar::Rust)?;
    let open_end =
        memchr::memchr(b'\n', &text.as_bytes()[open..]).map_or(text.len(), |i| open + i + 1);
    let above = text[w.start..start]
        .lines()
        .map(str::trim)
        .all(|l| l.is_empty() || ["#[", "//", "/*", "*"].iter().any(|p| l.starts_with(p)));
    let alone = w.start <= start
        && end <= w.end
        && above
        && text[end..w.end].trim().is_empty()
        && close == f.lines.end - 1
        && open_end <= last;
    alone.then_some([w.start..open_end, last..w.end])
}

/// Which of the windows `grouped` of `text` are test code by their attributes (Rust): an item
/// under a test attribute, and each member of a block that is one (`#[cfg(test)] mod tests`).
fn test_windows(
    grammar: Grammar,
    text: &str,
    grouped: &[(Range<usize>, syntax::Block)],
) -> Vec<bool> {
    if grammar != Grammar::Rust {
        return vec![false; grouped.len()];
    }
    let own: Vec<bool> = grouped
        .iter()
        .map(|(w, _)| syntax::is_test_item(&text[w.clone()]))
        .collect();
    grouped
        .iter()
        .enumerate()
        .map(|(i, (_, block))| own[i] || block.is_some_and(|(head, _)| own[head]))
        .collect()
}

/// Which of `items` (in order, not overlapping) of `text` the checks that read the parse
/// need: their trigger words in the item, a comment or secret in its new code (`focus`).
fn triggered_windows(
    grammar: Grammar,
    text: &str,
    focus: &[Range<usize>],
    items: &[Range<usize>],
) -> Vec<bool> {
    // The focus is in order too: each item looks only at the ranges from the first one that
    // ends inside or after it.
    items
        .iter()
        .map(|w| {
            let first = focus.partition_point(|f| f.end <= w.start);
            let new: String = focus[first..]
                .iter()
                .take_while(|f| f.start < w.end)
                .map(|f| &text[f.start.max(w.start)..f.end.min(w.end)])
                .collect();
            checks::triggered(grammar, &new, &text[w.clone()])
        })
        .collect()
}

/// The top-level items of `items` that scanning `file` needs parsed: those where the trigger
/// words of a check that reads the parse are, where a rule that must be placed (`in = ...`)
/// matches new code in a context it does not skip, and where a function may have crossed the
/// size limit (by the language's function pattern, or for JavaScript and TypeScript, whose
/// methods it does not see, an item over the limit), merged; and whether a function may
/// have crossed the limit at all, and which items are test code ([`test_windows`]).
/// `context` is the file's.
fn parse_windows(
    rules: &RuleSet,
    context: Option<Context>,
    language: Option<usize>,
    grammar: Grammar,
    file: &FileDiff,
    focus: &[Range<usize>],
    layout: &syntax::Layout,
) -> (Vec<Range<usize>>, bool, Vec<bool>) {
    let grouped = &layout.windows[..];
    let items: Vec<Range<usize>> = grouped.iter().map(|(w, _)| w.clone()).collect();
    let text = &file.new_text;
    let lang = language.map(|l| &rules.languages[l]);
    let tests = test_windows(grammar, text, grouped);
    let mut may_be_long = false;
    let mut wanted = triggered_windows(grammar, text, focus, &items);
    // The items are in order and do not overlap.
    let window_of = |at: usize| {
        let i = items.partition_point(|w| w.end <= at);
        items.get(i).filter(|w| w.contains(&at)).map(|_| i)
    };
    // An item's context: test code by the attribute above it or its block (Rust), else the
    // file's.
    let context_of = |i: usize| {
        if tests[i] {
            Some(Context::Test)
        } else {
            context
        }
    };
    // The patterns that must be placed in code or a comment, where they match.
    let placed: Vec<_> = rules
        .rules
        .iter()
        .filter(|r| r.place.is_some() && rules.applies(r, language, &file.path))
        .collect();
    if !placed.is_empty() {
        for run in file.added.iter().filter(|r| file.touches_new(r)) {
            let base = file.line_starts[run.start];
            let run_text = file.text_of(run);
            for rule in &placed {
                for m in rule.pattern.regex().find_iter(run_text.as_bytes()) {
                    let Some(i) = window_of(base + m.start()).filter(|&i| !wanted[i]) else {
                        continue;
                    };
                    let line = file.line_at(base + m.start());
                    let last = file.line_at(base + m.end().max(m.start() + 1) - 1);
                    wanted[i] = file.touches_new(&(line..last + 1))
                        && !rule.skips(context_of(i))
                        && !rule
                            .unless
                            .as_ref()
                            .is_some_and(|u| u.regex().is_match(file.line(line).as_bytes()));
                }
            }
        }
    }
    // The functions that may have crossed the size limit: by the language's function
    // pattern, or for JavaScript and TypeScript, whose methods it does not see, an item over
    // the limit.
    let limit = rules.limits.max_function_lines;
    let mut extra = Vec::new();
    if rules.check(CheckId::FunctionLines).is_some() && file.new_line_count() > limit {
        let lines = Lines::of_new(file);
        let mut long = Vec::new();
        if grammar.is_js() {
            // An item over the limit: where its end is guessed right.
            for (i, w) in items.iter().enumerate() {
                let first = file.line_at(w.start);
                let over = file.line_at(w.end.saturating_sub(1)) + 1 - first > limit
                    && !matches!(context_of(i), Some(Context::Test | Context::Example));
                wanted[i] |= over;
                may_be_long |= over;
            }
        } else if let Some(lang) = lang {
            // Functions are found in the whole file: the start of one that holds new code
            // may be in an item without any (lines of a string in column 0 cut items).
            let over = |lines: &Range<usize>| lines.len() > limit && file.touches_new(lines);
            // A function that starts after the last new line holds none.
            let last_new = focus.last().map_or(0, |f| f.end);
            long = functions_in(lang, &lines, 0..last_new, over)
                .into_iter()
                .filter(|f| {
                    let at = file.line_starts[f.lines.start];
                    // A definition in a string (code as test data) is none.
                    !layout.is_quoted(at)
                        && window_of(at).is_none_or(|i| {
                            !matches!(context_of(i), Some(Context::Test | Context::Example))
                        })
                })
                .collect();
        }
        // The whole function is parsed, with the items it reaches into: lines of a string in
        // column 0 may have cut it into items, and items that hold no new code are not ones
        // of `items`.
        may_be_long |= !long.is_empty();
        for f in long {
            let bytes = file.line_starts[f.lines.start]
                ..file
                    .line_starts
                    .get(f.lines.end)
                    .copied()
                    .unwrap_or(text.len());
            // A function that is its item (or member) whole needs only its outline parsed:
            // what is above it, its signature to the `{` that opens the body, and its closing
            // line; the parse gives it the same lines and name.
            if let Some(parts) = outline(&lines, grammar, &items, window_of(bytes.start), &f) {
                if let Some((head, tail)) = window_of(bytes.start).and_then(|i| grouped[i].1) {
                    wanted[head] = true;
                    wanted[tail] = true;
                }
                extra.extend(parts);
                continue;
            }
            for (i, w) in items.iter().enumerate() {
                wanted[i] |= w.start < bytes.end && bytes.start < w.end;
            }
            extra.push(bytes);
        }
    }
    // A member is parsed with its block's head and tail.
    for (i, (_, block)) in grouped.iter().enumerate() {
        if let (true, Some((head, tail))) = (wanted[i], block) {
            wanted[*head] = true;
            wanted[*tail] = true;
        }
    }
    let mut out: Vec<Range<usize>> = items
        .iter()
        .zip(wanted)
        .filter(|(_, w)| *w)
        .map(|(r, _)| r.clone())
        .chain(extra)
        .collect();
    out.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<usize>> = Vec::new();
    for r in out {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    (merged, may_be_long, tests)
}

/// Compiles ahead of the scan what scanning the files at `paths` will use: the patterns of
/// the rules that apply to them, their languages' function patterns and the checks' own
/// expressions. Each is compiled once, on first use, so this changes no result; run while
/// the files are read, it takes that time off the scan.
pub(crate) fn prepare<'p>(rules: &RuleSet, paths: impl Iterator<Item = &'p str>) {
    let mut languages = Vec::new();
    for path in paths {
        let language = rules.language_of(path);
        if languages.contains(&language) {
            continue;
        }
        languages.push(language);
        for rule in rules
            .rules
            .iter()
            .filter(|r| rules.applies(r, language, path))
        {
            rule.pattern.regex();
            if let Some(unless) = &rule.unless {
                unless.regex();
            }
        }
        let lang = language.map(|l| &rules.languages[l]);
        if let Some(function) = lang.and_then(|l| l.function.as_ref()) {
            function.regex();
        }
        checks::prepare(lang.and_then(|l| Grammar::of(&l.name, path)));
    }
}

/// Whether the added lines of `file` have an import statement (`import`, `from … import`,
/// `export … from`, `require(`; moved ones count: moving an import out of a function closes
/// cycles): without one anywhere in the change, no cycle can be closed by it and no file's
/// imports need to be read.
pub(crate) fn adds_an_import(file: &FileDiff) -> bool {
    use std::sync::LazyLock;
    static IMPORT: LazyLock<regex::bytes::Regex> = LazyLock::new(|| {
        regex::bytes::Regex::new(
            r"(?m)^[ \t]*(?:import\b|from\s+\S+\s+import\b|export\b[^\n]*\bfrom\b)|\brequire\s*\(",
        )
        .expect("the import pattern compiles")
    });
    file.added
        .iter()
        .any(|r| IMPORT.is_match(file.text_of(r).as_bytes()))
}

/// Where byte `offset` of a file the review does not parse is: in a comment when a comment
/// marker of its language comes before it on its line, else in code.
fn guess_place(language: Option<&str>, file: &FileDiff, offset: usize) -> Place {
    let line = file.line_at(offset);
    let before = &file.new_text[file.line_starts[line]..offset];
    let markers: &[&str] = match language {
        Some("ruby" | "shell") => &["#"],
        Some("php") => &["#", "//", "/*", "* "],
        Some(_) => &["//", "/*", "* "],
        None => &["#", "//", ";", "--"],
    };
    let trimmed = before.trim_start();
    if markers.iter().any(|m| before.contains(m))
        || trimmed.starts_with('*') && language.is_some_and(|l| l != "ruby" && l != "shell")
    {
        Place::Comment
    } else {
        Place::Code
    }
}

/// Where `word` appears in `text` as a whole word (not inside a longer identifier).
fn word_positions<'a>(text: &'a str, word: &'a str) -> impl Iterator<Item = Range<usize>> + 'a {
    let is_word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let bytes = text.as_bytes();
    text.match_indices(word)
        .map(|(at, _)| at..at + word.len())
        .filter(move |r| {
            let before = r.start.checked_sub(1).map(|i| bytes[i]);
            !word.is_empty()
                && !before.is_some_and(is_word)
                && !bytes.get(r.end).copied().is_some_and(is_word)
        })
}

/// The functions of `text` found by the language's `function` pattern (for languages the
/// review does not parse).
fn regex_functions(lang: &Language, text: &str) -> Vec<Function> {
    functions_in(lang, &Lines::new(text), 0..text.len(), |_| true)
}

/// The functions of a text (with its line starts) that the language's `function` pattern
/// finds starting in the byte range `within`; their bodies may go on past it.
fn functions_in(
    lang: &Language,
    lines: &Lines<'_>,
    within: Range<usize>,
    keep: impl Fn(&Range<usize>) -> bool,
) -> Vec<Function> {
    let Some(function) = &lang.function else {
        return Vec::new();
    };
    let text = lines.text;
    let function = function.regex();
    let mut out = Vec::new();
    // The expression runs on to the end of the text (a match is found as in the whole text)
    // and the walk stops at the first one that starts past `within`.
    let base = within.start;
    for m in function.find_iter(&text.as_bytes()[base..]) {
        let (at, after) = (base + m.start(), base + m.end());
        if at >= within.end {
            break;
        }
        let start = lines.line_at(at);
        let end = match lang.body {
            Body::Braces => braces_end(lines, after, lang.name == "rust"),
            Body::Indent => indent_end(lines, start),
        };
        let Some(end) = end else { continue };
        if !keep(&(start..end + 1)) {
            continue;
        }
        let name = function
            .captures(lines.line(start).as_bytes())
            .and_then(|c| {
                c.iter()
                    .skip(1)
                    .flatten()
                    .next()
                    .map(|g| String::from_utf8_lossy(g.as_bytes()).into_owned())
            })
            .unwrap_or_else(|| "(anonymous)".into());
        out.push(Function {
            name,
            lines: start..end + 1,
        });
    }
    out
}

/// A text with its line starts.
struct Lines<'a> {
    text: &'a str,
    starts: std::borrow::Cow<'a, [usize]>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Lines<'a> {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(i, b)| *b == b'\n' && i + 1 < text.len())
                .map(|(i, _)| i + 1),
        );
        Lines {
            text,
            starts: starts.into(),
        }
    }

    /// The new text of `file`, with the line starts its diff found.
    fn of_new(file: &'a FileDiff) -> Lines<'a> {
        if file.line_starts.is_empty() {
            return Lines::new(&file.new_text);
        }
        Lines {
            text: &file.new_text,
            starts: file.line_starts.as_slice().into(),
        }
    }

    fn count(&self) -> usize {
        self.starts.len()
    }

    fn line_at(&self, offset: usize) -> usize {
        match self.starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        }
    }

    fn line(&self, i: usize) -> &'a str {
        let end = self.starts.get(i + 1).copied().unwrap_or(self.text.len());
        self.text[self.starts[i]..end].trim_end_matches(['\n', '\r'])
    }
}

/// The 0-based line where the brace-delimited body that follows byte `from` closes; `None`
/// for a declaration without a body (a `;` first) or an unclosed one.
fn braces_end(file: &Lines<'_>, from: usize, rust: bool) -> Option<usize> {
    braces(file, from, rust).map(|(_, end)| end)
}

/// [`braces_end`], with the byte offset of the `{` that opens the body.
fn braces(file: &Lines<'_>, from: usize, rust: bool) -> Option<(usize, usize)> {
    let bytes = file.text.as_bytes();
    let mut open = None;
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
            b'{' => {
                open.get_or_insert(i);
                depth += 1;
            }
            b'}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some((open?, file.line_at(i)));
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The 0-based last line of the indented body of the definition on line `start`.
fn indent_end(file: &Lines<'_>, start: usize) -> Option<usize> {
    let indent = |line: &str| line.len() - line.trim_start().len();
    let own = indent(file.line(start));
    let mut end = start;
    for i in start + 1..file.count() {
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
pub(crate) struct Import {
    /// The module as written.
    pub module: String,
    /// Names imported from it (`from . import a, b`).
    pub names: Vec<String>,
    /// 0-based line.
    pub line: usize,
}

/// The module-level imports of `file` in `language`: from its parse for the languages the
/// review parses (see [`super::imports::module_level`]), else every match of the language's
/// `imports` patterns.
pub(crate) fn imports(
    rules: &RuleSet,
    language: usize,
    file: &FileDiff,
    syntax: Option<&Syntax<'_>>,
) -> Vec<Import> {
    if let Some(found) = syntax.and_then(super::imports::module_level) {
        return found;
    }
    let mut out = Vec::new();
    for re in &rules.languages[language].imports {
        for caps in re.regex().captures_iter(file.new_text.as_bytes()) {
            let Some(module) = caps.get(1) else { continue };
            let at = caps.get(0).map_or(module.start(), |m| m.start());
            if syntax.is_some_and(|s| s.place(at) != Place::Code) {
                continue;
            }
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
pub(crate) fn normalise(path: &str) -> Option<String> {
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
pub(crate) fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    /// A Rust file: an impl with a short method and a long one, and a free function that has
    /// code above it in its item (a `const` on the same top-level item is not possible, so a
    /// statement-like macro line is used).
    fn sample(body_lines: usize) -> String {
        let body: String = (0..body_lines)
            .map(|i| format!("        let v{i} = {i};\n"))
            .collect();
        format!(
            "use std::fmt;\n\nimpl Thing {{\n    fn short(&self) -> u8 {{\n        1\n    }}\n\n    \
             /// Docs.\n    #[inline]\n    pub fn long(&self, a: u8,\n        b: u8) -> u8 {{\n{body}        a + b\n    }}\n\n    \
             fn after(&self) {{}}\n}}\n"
        )
    }

    #[test]
    fn the_outline_of_a_long_function_parses_to_its_lines_and_name() {
        let text = sample(80);
        let lines = Lines::new(&text);
        let rust = RuleSet::builtin().expect("the builtin rules load");
        let lang = &rust.languages[rust.language_of("a.rs").expect("rust is known")];
        let found = functions_in(lang, &lines, 0..text.len(), |l| l.len() > 60);
        assert_eq!(found.len(), 1, "{found:?}");
        let long = &found[0];
        let focus = vec![0..text.len()];
        let grouped = syntax::member_windows(Grammar::Rust, &text, &focus);
        let items: Vec<Range<usize>> = grouped.iter().map(|(w, _)| w.clone()).collect();
        let at = items
            .iter()
            .position(|w| w.contains(&lines.starts[long.lines.start]));
        let parts = outline(&lines, Grammar::Rust, &items, at, long).expect("an outline");
        // The outline is a small part of the function.
        let outlined: usize = parts.iter().map(|r| r.len()).sum();
        assert!(outlined * 10 < text.len(), "{parts:?}");
        // Parsed with its block's head and tail, it is the function the whole parse finds.
        let (head, tail) = grouped[at.unwrap()].1.expect("a member of the impl");
        let mut windows = vec![items[head].clone(), items[tail].clone()];
        windows.extend(parts);
        windows.sort_by_key(|r| r.start);
        let whole = Syntax::parse(Grammar::Rust, &text).unwrap().functions();
        let part = Syntax::parse_items(Grammar::Rust, &text, Some(focus), Some(windows)).unwrap();
        // The outline parsed as it is (a parse error would have parsed the whole file).
        let mut lets = 0;
        part.walk(|_, kind| lets += usize::from(kind == "let_declaration"));
        assert_eq!(lets, 0);
        let part = part.functions();
        let of = |fs: &[Function]| {
            fs.iter()
                .find(|f| f.name.ends_with("long"))
                .map(|f| (f.name.clone(), f.lines.clone()))
        };
        assert_eq!(of(&part), of(&whole));
        assert_eq!(of(&whole), Some(("Thing::long".into(), long.lines.clone())));
    }

    #[test]
    fn a_function_that_does_not_fill_its_item_has_no_outline() {
        // Code above the function in its item: a nested function.
        let body: String = (0..80).map(|i| format!("    let v{i} = {i};\n")).collect();
        let text = format!("fn outer() {{\n    let x = 1;\n    fn inner() {{\n{body}    }}\n}}\n");
        let lines = Lines::new(&text);
        let rules = RuleSet::builtin().expect("the builtin rules load");
        let lang = &rules.languages[rules.language_of("a.rs").expect("rust is known")];
        let found = functions_in(lang, &lines, 0..text.len(), |l| l.len() > 60);
        let inner = found
            .iter()
            .find(|f| f.name == "inner")
            .expect("inner is long");
        let items = vec![0..text.len()];
        assert_eq!(outline(&lines, Grammar::Rust, &items, Some(0), inner), None);
        let outer = found
            .iter()
            .find(|f| f.name == "outer")
            .expect("outer is long");
        assert!(outline(&lines, Grammar::Rust, &items, Some(0), outer).is_some());
        // Nor in Python, whose bodies are not braces.
        assert_eq!(
            outline(&lines, Grammar::Python, &items, Some(0), outer),
            None
        );
    }

    #[test]
    fn a_definition_inside_a_string_is_no_function_and_widens_no_parse() {
        use super::super::diff::{DiffAlgorithm, DiffOptions, Moved};
        // A test module that holds code in a string (with escaped quotes, which throw a brace
        // count off), and whose last test is new.
        let tests: String = (0..12)
            .map(|i| {
                format!("    #[test]\n    fn t{i}() {{\n        assert_eq!({i}, {i});\n    }}\n\n")
            })
            .collect();
        let head = format!(
            "#[cfg(test)]\nmod tests {{\n    const CODE: &str = \"\\\nfn main() {{\n    \
             run().expect(\\\"failed\\\");\n}}\n\";\n\n{tests}"
        );
        let added =
            "    #[test]\n    fn last() {\n        let v = 1;\n        assert_eq!(v, 1);\n    }\n";
        let old = format!("{head}}}\n");
        let new = format!("{head}{added}}}\n");
        let opts = DiffOptions {
            algorithm: DiffAlgorithm::Myers,
            deadline: std::time::Duration::from_secs(5),
            max_file_bytes: 1 << 20,
        };
        let mut file = FileDiff::from_texts("src/glue.rs", &old, &new, &opts);
        file.mark_new(&Moved::default());
        assert!(!file.new.is_empty());
        let mut rules = RuleSet::builtin().expect("the builtin rules load");
        rules.limits.max_function_lines = 20;
        let language = rules.language_of("src/glue.rs");
        let focus: Vec<Range<usize>> = file
            .new
            .iter()
            .map(|r| {
                file.line_starts[r.start]..file.line_starts.get(r.end).copied().unwrap_or(new.len())
            })
            .collect();
        let layout = syntax::layout(Grammar::Rust, &new, &focus);
        let main_at = new.find("fn main").expect("the string holds a main");
        let line_start = new[..main_at].rfind('\n').map_or(0, |i| i + 1);
        assert!(layout.is_quoted(line_start), "{:?}", layout.quoted);
        assert!(!layout.is_quoted(0));
        let (wanted, may_be_long, _) = parse_windows(
            &rules,
            None,
            language,
            Grammar::Rust,
            &file,
            &focus,
            &layout,
        );
        // The `main` in the string, whose brace count runs to the end of the file, is not
        // taken for a long function that holds the new test: no function may be long.
        assert!(!may_be_long, "{wanted:?}");
        let parsed: usize = wanted.iter().map(|r| r.len()).sum();
        assert!(parsed * 2 < new.len(), "{wanted:?} of {}", new.len());
    }
}
