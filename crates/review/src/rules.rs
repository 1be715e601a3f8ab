//! Review rules as data: `specs/review-rules.toml`, embedded in the binary, replaced as a whole
//! by a repository's `.tlv4/specs/review-rules.toml`.
//!
//! Loading checks the file strictly (unknown keys, unknown languages or checks, duplicate
//! checks, bad patterns), naming the file and line. A repository's file has every pattern
//! compiled when it loads; the builtin file, whose patterns a unit test compiles, has each
//! pattern compiled when first used, so that a review pays only for the languages it meets.
//! Patterns match bytes with ASCII classes (`\w`, `\s`, `(?i)`): code is matched on its ASCII
//! structure, and compiling is several times faster than with Unicode classes; a pattern that
//! needs them turns them on with `(?u)`.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use std::sync::OnceLock;

use regex::bytes::{Regex, RegexBuilder};
use toml::Spanned;

use super::context::Context;
use super::syntax::Place;
use tlv4_core::error::{Error, Result};

/// The rules file compiled into the binary.
pub(crate) const BUILTIN: &str = include_str!("../../../specs/review-rules.toml");
/// Where a repository may put its own rules, relative to the working tree root.
pub const OVERRIDE_PATH: &str = ".tlv4/specs/review-rules.toml";
/// The rules format this build reads.
const SCHEMA: u32 = 1;
/// Compiled programs may be large (alternations of SQL shapes); keep a generous bound.
pub(crate) const REGEX_SIZE_LIMIT: usize = 16 << 20;

/// A regular expression of the rules file, compiled once (when loaded or when first used).
#[derive(Debug, Clone)]
pub struct Pattern {
    source: String,
    regex: OnceLock<Regex>,
}

impl Pattern {
    fn lazy(source: &str) -> Pattern {
        Pattern {
            source: source.to_owned(),
            regex: OnceLock::new(),
        }
    }

    fn compiled(source: &str, regex: Regex) -> Pattern {
        let pattern = Pattern::lazy(source);
        let _ = pattern.regex.set(regex);
        pattern
    }

    /// The compiled expression.
    pub fn regex(&self) -> &Regex {
        self.regex.get_or_init(|| {
            build(&self.source).expect("builtin patterns compile (a unit test compiles them all)")
        })
    }

    /// The expression as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }
}

fn build(source: &str) -> std::result::Result<Regex, regex::Error> {
    RegexBuilder::new(source)
        .multi_line(true)
        .unicode(false)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
}

/// When the patterns of a rules file are compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compile {
    /// All of them while loading, so that a bad one is reported with its file and line.
    Now,
    /// Each when first used (for the builtin file, which the tests check).
    Lazily,
}

/// How bad a finding is. Ordered from the worst.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Must be fixed: the verdict is BLOCK.
    Critical,
    /// Should be fixed: the verdict is at best CONDITIONAL.
    High,
    /// Should be fixed or justified: the verdict is at best CONDITIONAL.
    Medium,
    /// Nice to fix; does not change the verdict.
    Low,
}

impl Severity {
    /// Every severity, worst first.
    pub const ALL: [Severity; 4] = [
        Severity::Critical,
        Severity::High,
        Severity::Medium,
        Severity::Low,
    ];

    /// The name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::High => "high",
            Severity::Medium => "medium",
            Severity::Low => "low",
        }
    }
}

/// How sure the review is that a finding is real. Ordered from the surest.
///
/// Only a critical finding of high confidence blocks; findings of low confidence are
/// reported but move neither the verdict nor (beyond half their weight) the scores.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// The code says so unambiguously (a known token format, a call built from input).
    #[default]
    High,
    /// Likely, but the review cannot see enough (where a value comes from, what a name holds).
    Medium,
    /// A hint worth a look.
    Low,
}

impl Confidence {
    /// Every confidence, surest first.
    pub const ALL: [Confidence; 3] = [Confidence::High, Confidence::Medium, Confidence::Low];

    /// The name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::High => "high",
            Confidence::Medium => "medium",
            Confidence::Low => "low",
        }
    }
}

/// What a finding is about; each dimension is scored 0–100.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Dimension {
    /// Error handling, debug leftovers, suppressed checks.
    Quality,
    /// Secrets, injection, dangerous calls.
    Security,
    /// Size, structure and dependencies.
    Architecture,
    /// The plan's acceptance criteria and tests.
    Requirements,
}

impl Dimension {
    /// Every dimension, in report order.
    pub const ALL: [Dimension; 4] = [
        Dimension::Quality,
        Dimension::Security,
        Dimension::Architecture,
        Dimension::Requirements,
    ];

    /// The name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Dimension::Quality => "quality",
            Dimension::Security => "security",
            Dimension::Architecture => "architecture",
            Dimension::Requirements => "requirements",
        }
    }
}

/// Points a finding of each severity takes off its dimension.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scoring {
    /// Per critical finding.
    pub critical: u32,
    /// Per high finding.
    pub high: u32,
    /// Per medium finding.
    pub medium: u32,
    /// Per low finding.
    pub low: u32,
}

impl Scoring {
    /// The deduction for one finding of `severity`.
    pub fn weight(&self, severity: Severity) -> u32 {
        match severity {
            Severity::Critical => self.critical,
            Severity::High => self.high,
            Severity::Medium => self.medium,
            Severity::Low => self.low,
        }
    }
}

/// Thresholds of the structural checks.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Longest acceptable code file, in lines.
    pub max_file_lines: usize,
    /// Longest acceptable function, in lines.
    pub max_function_lines: usize,
    /// Keyword overlap (percent) at which a criterion counts as covered.
    pub covered: u32,
    /// Keyword overlap (percent) at which a criterion counts as partly covered.
    pub partial: u32,
    /// Files larger than this are not diffed line by line.
    pub max_file_bytes: u64,
    /// A file or function already over its limit is flagged when the change grows it by at
    /// least this share of the limit, in percent.
    #[serde(default = "default_growth")]
    pub growth_percent: usize,
    /// `tests-untouched` speaks only when the change adds at least this many lines of new
    /// code (outside tests, examples and build scripts).
    #[serde(default = "default_untested")]
    pub untested_lines: usize,
}

fn default_untested() -> usize {
    20
}

fn default_growth() -> usize {
    20
}

/// How a function body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Body {
    /// `{ … }`.
    Braces,
    /// Lines indented deeper than the definition.
    Indent,
}

/// How an import's module becomes a file of the change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Resolve {
    /// Dotted module names and leading-dot relative imports.
    Python,
    /// Relative path specifiers (`./a`, `../b`).
    Path,
}

/// A language: which files it covers and how to read them.
#[derive(Debug, Clone)]
pub struct Language {
    /// Its name (`rust`, `python`, …).
    pub name: String,
    /// File name endings, without the dot.
    pub extensions: Vec<String>,
    /// A path matching any of these is test code.
    pub test_paths: Vec<Pattern>,
    /// From the first line matching this on, a file is test code.
    pub test_marker: Option<Pattern>,
    /// Where a function starts (multi-line mode).
    pub function: Option<Pattern>,
    /// How a function body is delimited.
    pub body: Body,
    /// Import statements (multi-line mode).
    pub imports: Vec<Pattern>,
    /// How imports resolve to files.
    pub resolve: Option<Resolve>,
    /// Extensions tried for path imports.
    pub resolve_extensions: Vec<String>,
}

/// A pattern over added lines.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The rule id, reported with each finding.
    pub id: String,
    /// What it is about.
    pub dimension: Dimension,
    /// How bad a match is.
    pub severity: Severity,
    /// Indexes into [`RuleSet::languages`]; empty with empty `extensions` means every file.
    pub languages: Vec<usize>,
    /// File endings it applies to besides its languages.
    pub extensions: Vec<String>,
    /// The pattern (multi-line mode).
    pub pattern: Pattern,
    /// A match is dropped when this matches the line it starts on.
    pub unless: Option<Pattern>,
    /// The contexts the rule is silent in (test code, examples, build scripts, programs).
    pub skip: Vec<Context>,
    /// When not empty, the only contexts the rule speaks in (silent in ordinary code too).
    pub only: Vec<Context>,
    /// Where a match must start: in code, a comment or a string (anywhere when `None`).
    pub place: Option<Place>,
    /// How sure a match is.
    pub confidence: Confidence,
    /// The one-line reason reported.
    pub message: String,
}

impl Rule {
    /// Whether the rule is silent in code of `context` (`None`: ordinary code).
    pub fn skips(&self, context: Option<Context>) -> bool {
        context.is_some_and(|c| self.skip.contains(&c))
            || (!self.only.is_empty() && !context.is_some_and(|c| self.only.contains(&c)))
    }
}

/// The structural checks the code knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CheckId {
    /// A changed code file over `max_file_lines`.
    FileLines,
    /// A touched function over `max_function_lines`.
    FunctionLines,
    /// Changed modules that import each other.
    CircularImport,
    /// A criterion below the partial band.
    CriterionMissing,
    /// A criterion in the partial band.
    CriterionPartial,
    /// The plan asks for tests; no test changed.
    TestsMissing,
    /// Code changed; no test changed.
    TestsUntouched,
    /// Nothing changed at all.
    EmptyChange,
    /// A bare or broad `except` whose body does nothing (Python).
    EmptyExcept,
    /// A Python 2 `print` statement.
    PrintStatement,
    /// SQL text joined with values (concatenation, formatting, interpolation).
    SqlInjection,
    /// A shell command built from values.
    ShellInjection,
    /// `eval`/`exec`/`new Function` of something other than a literal.
    CodeInjection,
    /// Deserialising with a loader that runs code (pickle, `yaml.load`).
    UnsafeDeserialize,
    /// HTML built from values and injected into a page.
    HtmlInjection,
    /// A Rust `unsafe` block without a `// SAFETY:` comment.
    UnsafeBlock,
    /// Code left in comments.
    CommentedCode,
    /// A secret-looking value assigned to a secret-looking name.
    HardcodedSecret,
    /// A JavaScript call statement of `p(…)`, a name the file does not define (early Node's
    /// inspect-and-print global).
    DebugP,
}

impl CheckId {
    const ALL: [(CheckId, &'static str); 19] = [
        (CheckId::FileLines, "file-lines"),
        (CheckId::FunctionLines, "function-lines"),
        (CheckId::CircularImport, "circular-import"),
        (CheckId::CriterionMissing, "criterion-missing"),
        (CheckId::CriterionPartial, "criterion-partial"),
        (CheckId::TestsMissing, "tests-missing"),
        (CheckId::TestsUntouched, "tests-untouched"),
        (CheckId::EmptyChange, "empty-change"),
        (CheckId::EmptyExcept, "empty-except"),
        (CheckId::PrintStatement, "print-statement"),
        (CheckId::SqlInjection, "sql-injection"),
        (CheckId::ShellInjection, "shell-injection"),
        (CheckId::CodeInjection, "code-injection"),
        (CheckId::UnsafeDeserialize, "unsafe-deserialize"),
        (CheckId::HtmlInjection, "html-injection"),
        (CheckId::UnsafeBlock, "unsafe-block"),
        (CheckId::CommentedCode, "commented-out-code"),
        (CheckId::HardcodedSecret, "hardcoded-secret"),
        (CheckId::DebugP, "debug-p"),
    ];

    /// The id used in the rules file and in findings.
    pub fn as_str(self) -> &'static str {
        CheckId::ALL
            .iter()
            .find(|(c, _)| *c == self)
            .map(|(_, s)| *s)
            .expect("every check has a name")
    }

    fn parse(s: &str) -> Option<CheckId> {
        CheckId::ALL.iter().find(|(_, n)| *n == s).map(|(c, _)| *c)
    }
}

/// A structural check as configured.
#[derive(Debug, Clone)]
pub struct Check {
    /// Which check.
    pub id: CheckId,
    /// What it is about.
    pub dimension: Dimension,
    /// How bad a finding is.
    pub severity: Severity,
    /// The message, with `{placeholders}`.
    pub message: String,
    /// The contexts the check is silent in.
    pub skip: Vec<Context>,
}

impl Check {
    /// Whether the check is silent in code of `context`.
    pub fn skips(&self, context: Option<Context>) -> bool {
        context.is_some_and(|c| self.skip.contains(&c))
    }

    /// The message with its placeholders filled.
    pub fn render(&self, values: &[(&str, &str)]) -> String {
        let mut out = self.message.clone();
        for (k, v) in values {
            out = out.replace(&format!("{{{k}}}"), v);
        }
        out
    }
}

/// A loaded, validated rules file.
#[derive(Debug, Clone)]
pub struct RuleSet {
    /// The file it came from, for messages.
    pub file: String,
    /// Deductions per severity.
    pub scoring: Scoring,
    /// Check thresholds.
    pub limits: Limits,
    /// Every language.
    pub languages: Vec<Language>,
    /// Every rule on added lines, in file order.
    pub rules: Vec<Rule>,
    /// The structural checks that are on.
    pub checks: BTreeMap<CheckId, Check>,
    by_extension: HashMap<String, usize>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    schema: Spanned<u32>,
    scoring: Scoring,
    limits: Limits,
    #[serde(default)]
    language: BTreeMap<String, Spanned<LanguageDoc>>,
    #[serde(default)]
    rule: Vec<Spanned<RuleDoc>>,
    #[serde(default)]
    check: Vec<Spanned<CheckDoc>>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LanguageDoc {
    extensions: Vec<String>,
    #[serde(default)]
    test_paths: Vec<Spanned<String>>,
    #[serde(default)]
    test_marker: Option<Spanned<String>>,
    #[serde(default)]
    function: Option<Spanned<String>>,
    #[serde(default = "default_body")]
    body: Body,
    #[serde(default)]
    imports: Vec<Spanned<String>>,
    #[serde(default)]
    resolve: Option<Resolve>,
    #[serde(default)]
    resolve_extensions: Vec<String>,
}

fn default_body() -> Body {
    Body::Braces
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleDoc {
    id: String,
    dimension: Dimension,
    severity: Severity,
    #[serde(default)]
    languages: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    extensions: Vec<String>,
    pattern: Spanned<String>,
    #[serde(default)]
    unless: Option<Spanned<String>>,
    #[serde(default)]
    skip_tests: bool,
    #[serde(default)]
    skip: Vec<Spanned<String>>,
    #[serde(default)]
    only: Vec<Spanned<String>>,
    #[serde(default, rename = "in")]
    place: Option<Spanned<String>>,
    #[serde(default)]
    confidence: Confidence,
    message: String,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckDoc {
    id: Spanned<String>,
    dimension: Dimension,
    severity: Severity,
    #[serde(default)]
    skip: Vec<Spanned<String>>,
    message: String,
}

impl RuleSet {
    /// The rules for the repository whose working tree is `workdir`: its override if present,
    /// else the builtin. `None` (a bare repository) means the builtin.
    pub fn load(workdir: Option<&Path>) -> Result<RuleSet> {
        let Some(workdir) = workdir else {
            return RuleSet::builtin();
        };
        RuleSet::from_files(&tlv4_core::trust::Files::read(workdir)?)
    }

    /// The rules of a repository configuration (the working tree's trusted one, or a
    /// session's pinned one): its override if present, else the builtin.
    pub fn from_files(files: &tlv4_core::trust::Files) -> Result<RuleSet> {
        match files.text(OVERRIDE_PATH)? {
            Some(text) => RuleSet::parse(OVERRIDE_PATH, text, Compile::Now),
            None => RuleSet::builtin(),
        }
    }

    /// The builtin rules.
    pub fn builtin() -> Result<RuleSet> {
        RuleSet::parse(
            "specs/review-rules.toml (builtin)",
            BUILTIN,
            Compile::Lazily,
        )
    }

    /// Parses and validates `text`, naming `file` in errors.
    pub fn parse(file: &str, text: &str, when: Compile) -> Result<RuleSet> {
        let rd = Reader { file, text, when };
        let doc: Document = toml::from_str(text).map_err(|e| Error::Config {
            file: file.to_owned(),
            line: e.span().map_or(1, |s| line_of(text, s.start)),
            message: e.message().trim().to_owned(),
        })?;
        if *doc.schema.get_ref() != SCHEMA {
            return Err(rd.err(
                doc.schema.span().start,
                format!(
                    "rules schema {} is not supported; this build reads schema {SCHEMA}",
                    doc.schema.get_ref()
                ),
            ));
        }
        if doc.limits.partial > doc.limits.covered || doc.limits.covered > 100 {
            return Err(Error::Config {
                file: file.to_owned(),
                line: find_line(text, "covered"),
                message: "limits: need 0 <= partial <= covered <= 100".into(),
            });
        }
        let (languages, by_extension) = read_languages(&rd, &doc)?;
        let rules = read_rules(&rd, &doc, &languages)?;
        let checks = read_checks(&rd, &doc)?;
        Ok(RuleSet {
            file: file.to_owned(),
            scoring: doc.scoring,
            limits: doc.limits,
            languages,
            rules,
            checks,
            by_extension,
        })
    }

    /// The language of `path`, by its extension.
    pub fn language_of(&self, path: &str) -> Option<usize> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let (_, ext) = name.rsplit_once('.')?;
        self.by_extension.get(&ext.to_ascii_lowercase()).copied()
    }

    /// Whether `rule` applies to a file of `language` named `path`.
    pub fn applies(&self, rule: &Rule, language: Option<usize>, path: &str) -> bool {
        if rule.languages.is_empty() && rule.extensions.is_empty() {
            return true;
        }
        if language.is_some_and(|l| rule.languages.contains(&l)) {
            return true;
        }
        let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
        rule.extensions
            .iter()
            .any(|e| name.ends_with(&format!(".{e}")))
    }

    /// Whether `path` is a test file of `language`.
    pub fn is_test_path(&self, language: Option<usize>, path: &str) -> bool {
        language.is_some_and(|l| {
            self.languages[l]
                .test_paths
                .iter()
                .any(|r| r.regex().is_match(path.as_bytes()))
        })
    }

    /// The check `id` if it is on.
    pub fn check(&self, id: CheckId) -> Option<&Check> {
        self.checks.get(&id)
    }
}

/// The 1-based line of byte `offset` in `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn find_line(text: &str, key: &str) -> usize {
    text.find(&format!("\n{key}"))
        .map_or(1, |at| line_of(text, at + 1))
}

/// What the parse of a rules file reads it with: the file's name and text (for errors by
/// line) and when its patterns are compiled.
struct Reader<'a> {
    file: &'a str,
    text: &'a str,
    when: Compile,
}

impl Reader<'_> {
    /// An error at byte `offset` of the file.
    fn err(&self, offset: usize, message: String) -> Error {
        Error::Config {
            file: self.file.to_owned(),
            line: line_of(self.text, offset),
            message,
        }
    }

    /// The pattern `pattern` (a `what` pattern, for the error), compiled now or when first
    /// used.
    fn compile(&self, pattern: &Spanned<String>, what: &str) -> Result<Pattern> {
        let source = pattern.get_ref();
        match self.when {
            Compile::Lazily => Ok(Pattern::lazy(source)),
            Compile::Now => build(source)
                .map(|re| Pattern::compiled(source, re))
                .map_err(|e| {
                    self.err(
                        pattern.span().start,
                        format!("bad {what} pattern: {}", regex_gist(&e.to_string())),
                    )
                }),
        }
    }

    /// The contexts `names` (of `what`, for the error), each once.
    fn contexts(&self, names: &[Spanned<String>], what: &str) -> Result<Vec<Context>> {
        let mut out = Vec::new();
        for name in names {
            let Some(c) = Context::parse(name.get_ref()) else {
                return Err(self.err(
                    name.span().start,
                    format!(
                        "{what} names unknown context `{}`; the contexts are: test, example, build, cli",
                        name.get_ref()
                    ),
                ));
            };
            if !out.contains(&c) {
                out.push(c);
            }
        }
        Ok(out)
    }
}

/// The `[language.NAME]` tables, and which language each extension is of.
fn read_languages(
    rd: &Reader<'_>,
    doc: &Document,
) -> Result<(Vec<Language>, HashMap<String, usize>)> {
    let mut languages = Vec::new();
    let mut by_extension = HashMap::new();
    for (name, lang) in &doc.language {
        let span = lang.span();
        let lang = lang.get_ref();
        if lang.extensions.is_empty() {
            return Err(rd.err(span.start, format!("language `{name}` lists no extensions")));
        }
        if !lang.imports.is_empty() && lang.resolve.is_none() {
            return Err(rd.err(
                span.start,
                format!("language `{name}` lists imports but no `resolve`"),
            ));
        }
        for ext in &lang.extensions {
            let ext = ext.trim_start_matches('.').to_ascii_lowercase();
            if let Some(other) = by_extension.insert(ext.clone(), languages.len()) {
                let other: &Language = &languages[other];
                return Err(rd.err(
                    span.start,
                    format!(
                        "extension `{ext}` belongs to both `{}` and `{name}`",
                        other.name
                    ),
                ));
            }
        }
        languages.push(Language {
            name: name.clone(),
            extensions: lang.extensions.clone(),
            test_paths: lang
                .test_paths
                .iter()
                .map(|p| rd.compile(p, "test path"))
                .collect::<Result<_>>()?,
            test_marker: lang
                .test_marker
                .as_ref()
                .map(|p| rd.compile(p, "test marker"))
                .transpose()?,
            function: lang
                .function
                .as_ref()
                .map(|p| rd.compile(p, "function"))
                .transpose()?,
            body: lang.body,
            imports: lang
                .imports
                .iter()
                .map(|p| rd.compile(p, "import"))
                .collect::<Result<_>>()?,
            resolve: lang.resolve,
            resolve_extensions: lang.resolve_extensions.clone(),
        });
    }

    Ok((languages, by_extension))
}

/// The `[[rule]]` tables, their languages by index into `languages`.
fn read_rules(rd: &Reader<'_>, doc: &Document, languages: &[Language]) -> Result<Vec<Rule>> {
    let mut rules = Vec::new();
    for r in &doc.rule {
        let span = r.span();
        let r = r.get_ref();
        if r.id.trim().is_empty() {
            return Err(rd.err(span.start, "a rule has an empty id".into()));
        }
        if CheckId::parse(&r.id).is_some() {
            return Err(rd.err(
                span.start,
                format!("rule id `{}` is the name of a built-in check", r.id),
            ));
        }
        let mut langs = Vec::new();
        let names = r.languages.as_ref();
        for name in names.map(Spanned::get_ref).into_iter().flatten() {
            match languages.iter().position(|l| &l.name == name) {
                Some(i) => langs.push(i),
                None => {
                    return Err(rd.err(
                            names.map_or(span.start, |n| n.span().start),
                            format!(
                                "rule `{}` names language `{name}`, which has no [language.{name}] table",
                                r.id
                            ),
                        ));
                }
            }
        }
        rules.push(Rule {
                id: r.id.clone(),
                dimension: r.dimension,
                severity: r.severity,
                languages: langs,
                extensions: r
                    .extensions
                    .iter()
                    .map(|e| e.trim_start_matches('.').to_ascii_lowercase())
                    .collect(),
                pattern: rd.compile(&r.pattern, &format!("rule `{}`", r.id))?,
                unless: r
                    .unless
                    .as_ref()
                    .map(|p| rd.compile(p, &format!("rule `{}` unless", r.id)))
                    .transpose()?,
                skip: {
                    let mut skip = rd.contexts(&r.skip, &format!("rule `{}`", r.id))?;
                    if r.skip_tests && !skip.contains(&Context::Test) {
                        skip.push(Context::Test);
                    }
                    skip
                },
                only: rd.contexts(&r.only, &format!("rule `{}`", r.id))?,
                place: match r.place.as_ref() {
                    None => None,
                    Some(p) => match p.get_ref().as_str() {
                        "anywhere" => None,
                        "code" => Some(Place::Code),
                        "comment" => Some(Place::Comment),
                        "string" => Some(Place::String),
                        other => {
                            return Err(rd.err(
                                p.span().start,
                                format!(
                                    "rule `{}`: `in = \"{other}\"` is not one of code, comment, string, anywhere",
                                    r.id
                                ),
                            ));
                        }
                    },
                },
                confidence: r.confidence,
                message: r.message.clone(),
            });
    }

    Ok(rules)
}

/// The `[[check]]` tables: each built-in check at most once.
fn read_checks(rd: &Reader<'_>, doc: &Document) -> Result<BTreeMap<CheckId, Check>> {
    let mut checks = BTreeMap::new();
    for c in &doc.check {
        let c = c.get_ref();
        let Some(id) = CheckId::parse(c.id.get_ref()) else {
            let known: Vec<&str> = CheckId::ALL.iter().map(|(_, n)| *n).collect();
            return Err(rd.err(
                c.id.span().start,
                format!(
                    "unknown check `{}`; the checks are: {}",
                    c.id.get_ref(),
                    known.join(", ")
                ),
            ));
        };
        let check = Check {
            id,
            dimension: c.dimension,
            severity: c.severity,
            message: c.message.clone(),
            skip: rd.contexts(&c.skip, &format!("check `{}`", c.id.get_ref()))?,
        };
        if checks.insert(id, check).is_some() {
            return Err(rd.err(
                c.id.span().start,
                format!("check `{}` is configured twice", c.id.get_ref()),
            ));
        }
    }

    Ok(checks)
}

/// The gist of a regex error: its `error:` line (the rest is a caret diagram).
fn regex_gist(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("error: "))
        .unwrap_or_else(|| s.lines().next().unwrap_or(s))
        .to_owned()
}
