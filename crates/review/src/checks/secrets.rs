//! Hard-coded secrets: a secret-looking value assigned to a secret-looking name, in code of any
//! language and in configuration files (YAML, TOML, INI, `.env`, JSON, properties).
//!
//! Candidates come from a pattern over each new line: a name, `=`/`:=`/`:`/`=>` (with an
//! optional type annotation such as `: &str` between), and a quoted value — or, in
//! configuration files and shell scripts, the rest of the line (`password: hunter2-xyz`);
//! and a literal fallback for a variable read from the environment
//! (`os.getenv("DB_PASSWORD", "…")`, `process.env.API_KEY || "…"`). In a
//! parsed file a candidate counts only when the parse agrees: the name is code (or a quoted
//! key), the separator is code, and the value is a whole string literal, so a comment or a log
//! message that mentions `password = x` is not one.
//!
//! The name must hold a secret (`password`, `token`, `api_key`, `client_secret`…) and not
//! something about one (`TOKEN_URL`, `PASSWORD_RESET_TEMPLATE`, `SECRET_KEY_NAME`). The value
//! must look like one: not a URL, a path or file name, an environment variable's name, a
//! dotted module path, an obvious placeholder (`changeme`, `<token>`, `${VAR}`, `{{ x }}`),
//! prose, or shorter than 8 characters. Confidence follows the value: high for random-looking
//! values (entropy of at least 3.5 bits a character over 16 or more, or letters, digits and
//! symbols over 12 or more), medium for plausible passwords (digits, symbols or mixed case),
//! low for joined words (`development-key`); a single lowercase word is taken for a name.

use std::sync::LazyLock;

use regex::Regex;

use super::{Hit, Input, ascii};
use crate::rules::{CheckId, Confidence};
use crate::syntax::{Place, Syntax};

/// The name, the separator and the quoted value of an assignment-like candidate; the value
/// group is `value`. `{bare}` is replaced by an alternative for unquoted values (or nothing).
const CANDIDATE: &str = r#"(?x)
    (?:^|[^\w$.\-])
    (?P<name>["'`]?[A-Za-z_$][\w$.\-]*["'`]?\]?)
    (?P<sep>
        \s*:\s*&?(?:'static\s+)?[\w:<>\[\]]+(?:\s*\|\s*None)?\s*= # name: Type =
      | \s+string\s*=                                            # Go: const Name string =
      | \s*(?::=|=>|=|:)                                          # =, :=, =>, :
    )
    \s*
    (?P<value>
        [rRbBuU]{0,2}"(?:[^"\\\n]|\\.)*"
      | [rRbBuU]{0,2}'(?:[^'\\\n]|\\.)*'
      | `[^`\n]*`
      {bare}
    )"#;

/// Compiles the expressions of this check ahead of its first use.
pub(super) fn prepare() {
    for regex in [&QUOTED, &BARE, &FALLBACK] {
        LazyLock::force(regex);
    }
    LazyLock::force(&NAME_HINT);
}

/// Candidates with quoted values (code).
static QUOTED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&ascii(&CANDIDATE.replace("{bare}", ""))).expect("a valid pattern")
});

/// Candidates with quoted or bare values (configuration files, shell scripts).
static BARE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&ascii(
        &CANDIDATE.replace("{bare}", r#"| [^\s"'`=,;\#\[\{\(|>&*!][^\n]*"#),
    ))
    .expect("a valid pattern")
});

/// A literal fallback for a secret read from the environment: `os.getenv("DB_PASSWORD",
/// "…")`, `os.environ.get('SECRET_KEY', '…')`, `process.env.API_KEY || "…"` (the variable's
/// name is the `name` group, the separator `sep`).
static FALLBACK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&ascii(
        r#"(?x)
        (?:
            (?:getenv|environ\.get|env\.get|environ\.setdefault)\(\s*
            (?P<qname>"[\w.\-]+"|'[\w.\-]+')(?P<comma>\s*,)
          | process\.env\.(?P<pname>\w+)(?P<or>\s*(?:\|\||\?\?))
        )
        \s*
        (?P<value>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')"#,
    ))
    .expect("a valid pattern")
});

/// What every secret-looking name holds (case aside): a line without any of these has no
/// candidate, and the candidate patterns are not run on it.
static NAME_HINT: LazyLock<regex::bytes::Regex> = LazyLock::new(|| {
    regex::bytes::Regex::new(r"(?i-u)pass|pwd|secret|token|key|auth|credential")
        .expect("a valid pattern")
});

/// Whether `text` holds something the check would look at (so that its parse is needed to
/// confirm it).
pub(super) fn has_candidate(text: &str) -> bool {
    if !NAME_HINT.is_match(text.as_bytes()) {
        return false;
    }
    let named = |name: Option<regex::Match<'_>>| {
        name.is_some_and(|n| is_secret_name(n.as_str().trim_matches(['"', '\'', '`', ']'])))
    };
    QUOTED.captures_iter(text).any(|c| named(c.name("name")))
        || FALLBACK
            .captures_iter(text)
            .any(|c| named(c.name("qname").or(c.name("pname"))))
}

/// Runs the secret check.
pub(super) fn check(input: &Input<'_>, out: &mut Vec<Hit>) {
    let Some(kind) = FileKind::of(&input.file.path) else {
        return;
    };
    let assignment = if kind == FileKind::Config {
        &*BARE
    } else {
        &*QUOTED
    };
    let file = input.file;
    for range in &file.new {
        if range.is_empty() {
            continue;
        }
        // The lines of the range with a name hint, found in one search over all of them.
        let start = file.line_starts[range.start];
        let mut hinted = Vec::new();
        let mut next = 0;
        for m in NAME_HINT.find_iter(file.text_of(range).as_bytes()) {
            if m.start() < next {
                continue;
            }
            let line = file.line_at(start + m.start());
            hinted.push(line);
            next = file
                .line_starts
                .get(line + 1)
                .map_or(usize::MAX, |&s| s - start);
        }
        for line in hinted {
            let text = file.line(line);
            if input.syntax.is_none() && is_comment_line(text) {
                continue;
            }
            let base = file.line_starts[line];
            let fallbacks = FALLBACK.captures_iter(text).map(|caps| {
                (
                    caps.name("qname").or(caps.name("pname")),
                    caps.name("comma").or(caps.name("or")),
                    caps.name("value"),
                )
            });
            let assignments = assignment
                .captures_iter(text)
                .map(|caps| (caps.name("name"), caps.name("sep"), caps.name("value")));
            for found in assignments.chain(fallbacks) {
                let (Some(name), Some(sep), Some(value)) = found else {
                    continue;
                };
                if let Some(syntax) = input.syntax
                    && !parse_agrees(syntax, base, name, sep, value)
                {
                    continue;
                }
                if !balanced_quotes(name.as_str()) {
                    continue;
                }
                let name = name.as_str().trim_matches(['"', '\'', '`', ']']);
                if !is_secret_name(name) || !ends_value(&text[value.end()..]) {
                    continue;
                }
                let Some(confidence) = secret_value(&unquote(value.as_str()), name) else {
                    continue;
                };
                // One finding a line, as for the rules.
                if out
                    .last()
                    .is_some_and(|h| h.check == CheckId::HardcodedSecret && h.line == line)
                {
                    continue;
                }
                out.push(
                    Hit::new(CheckId::HardcodedSecret, line..line + 1)
                        .confidence(confidence)
                        .with("name", name),
                );
            }
        }
    }
}

/// What kind of file the check reads, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileKind {
    /// Source code: values are quoted.
    Code,
    /// Configuration and shell: values may be bare (`KEY=value`, `key: value`).
    Config,
}

impl FileKind {
    /// `None` for documentation, configuration templates and test settings (`.env.example`,
    /// `config.yaml.sample`, `.env.test`), whose values are examples for the reader (known token formats
    /// are still caught there by the token rules).
    fn of(path: &str) -> Option<FileKind> {
        let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
        let template = [
            "example", "sample", "template", "dist", "tpl", "tmpl", "test", "testing",
        ];
        if name.split('.').skip(1).any(|part| template.contains(&part)) {
            return None;
        }
        if name.starts_with(".env") || name.ends_with(".env") {
            return Some(FileKind::Config);
        }
        let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
        match ext {
            "md" | "markdown" | "rst" | "txt" | "adoc" | "html" | "htm" | "ipynb" | "svg" => None,
            "yaml" | "yml" | "toml" | "ini" | "cfg" | "conf" | "properties" | "json" | "json5"
            | "jsonc" | "tfvars" | "npmrc" | "pypirc" | "sh" | "bash" | "zsh" => {
                Some(FileKind::Config)
            }
            _ => Some(FileKind::Code),
        }
    }
}

/// A line that is only a comment, in a file without a parse.
fn is_comment_line(text: &str) -> bool {
    let t = text.trim_start();
    ["#", ";", "//", "/*", "*", "--", "<!--"]
        .iter()
        .any(|m| t.starts_with(m))
}

/// Whether a name is quoted on both sides or on neither (`"key"`, `key`; not the end of a
/// quoted sentence: `…email and password.": "…"`).
fn balanced_quotes(name: &str) -> bool {
    let name = name.trim_end_matches(']');
    let quote = |c: char| matches!(c, '"' | '\'' | '`');
    name.starts_with(quote) == name.ends_with(quote)
}

/// Whether the text after a quoted value ends it: the value is the whole expression
/// (`password = "x";`, `f(password="x")`, `"x".to_string()`), not the start of a longer one
/// (`'password' in options`, `"a" + b`).
fn ends_value(rest: &str) -> bool {
    let rest = rest.trim_start();
    rest.is_empty()
        || rest.starts_with([';', ',', ')', '}', ']', '.', '#'])
        || rest.starts_with("//")
        || rest.starts_with("/*")
}

/// Whether the parse sees the candidate as an assignment of a string literal to a name: the
/// name is code (or a quoted key: a string whose quote is the first character), the separator
/// code and the value a string literal that starts where the candidate's value does.
fn parse_agrees(
    syntax: &Syntax<'_>,
    base: usize,
    name: regex::Match<'_>,
    sep: regex::Match<'_>,
    value: regex::Match<'_>,
) -> bool {
    let quoted = name.as_str().starts_with(['"', '\'', '`']);
    let name_place = if quoted { Place::String } else { Place::Code };
    let before_value = base + value.start();
    syntax.place(base + name.start()) == name_place
        && (!quoted || before_value_is_code(syntax, base + name.start()))
        && syntax.place(base + sep.start()) == Place::Code
        && syntax.place(before_value) == Place::String
        && before_value_is_code(syntax, before_value)
}

/// Whether the byte before `offset` is code (so a string starts at `offset`).
fn before_value_is_code(syntax: &Syntax<'_>, offset: usize) -> bool {
    offset == 0 || syntax.place(offset - 1) == Place::Code
}

/// The value without its quotes (and a Python string prefix), or the bare value without a
/// trailing comment or separator.
fn unquote(value: &str) -> String {
    let v = value.trim_start_matches(['r', 'R', 'b', 'B', 'u', 'U']);
    for q in ['"', '\'', '`'] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return v[1..v.len() - 1].to_owned();
        }
    }
    let v = value.split(" #").next().unwrap_or(value);
    v.trim().trim_end_matches([',', ';']).to_owned()
}

/// Words that make a name hold a secret.
const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "authorization",
    "credential",
    "credentials",
    "privatekey",
    "accesskey",
    "secretkey",
];

/// Word pairs that make a name hold a secret (`api_key`, `private_key`…).
const SECRET_PAIRS: &[(&str, &str)] = &[
    ("api", "key"),
    ("private", "key"),
    ("access", "key"),
    ("signing", "key"),
    ("encryption", "key"),
    ("master", "key"),
    ("app", "key"),
    ("auth", "key"),
];

/// Last words of names that are about a secret, not the secret (`TOKEN_URL`,
/// `PASSWORD_RESET_TEMPLATE`, `SECRET_KEY_NAME`).
const ABOUT_WORDS: &[&str] = &[
    "url",
    "uri",
    "urls",
    "endpoint",
    "host",
    "path",
    "file",
    "filename",
    "dir",
    "directory",
    "template",
    "name",
    "env",
    "var",
    "variable",
    "header",
    "field",
    "param",
    "parameter",
    "prefix",
    "suffix",
    "length",
    "len",
    "type",
    "kind",
    "id",
    "count",
    "size",
    "format",
    "pattern",
    "regex",
    "label",
    "message",
    "msg",
    "text",
    "title",
    "hint",
    "help",
    "placeholder",
    "description",
    "expiry",
    "expires",
    "expiration",
    "ttl",
    "timeout",
    "lifetime",
    "age",
    "mode",
    "scope",
    "scopes",
    "version",
    "route",
    "policy",
    "method",
    "algorithm",
    "class",
    "column",
    "attr",
    "attribute",
    "property",
    "option",
    "flag",
    "setting",
    "index",
    "min",
    "max",
    "required",
    "enabled",
    "form",
    "input",
    "widget",
    "error",
    "location",
    "cookie",
    "backend",
    "provider",
    "service",
    "store",
    "manager",
    "handler",
    "validator",
    "hash",
    "hasher",
    "salt",
    "rounds",
    "address",
    "addr",
    "contract",
];

/// First words of names that hold a flag about a secret (`is_token`, `has_password`) or a
/// value for tests and examples (`testingPassword`, `example_token`), or text shown about one
/// (`LABEL_PASSWORD`, `error_token_expired`).
const FLAG_WORDS: &[&str] = &[
    "is",
    "has",
    "use",
    "enable",
    "show",
    "validate",
    "require",
    "test",
    "testing",
    "dummy",
    "fake",
    "mock",
    "example",
    "sample",
    "label",
    "msg",
    "message",
    "text",
    "title",
    "hint",
    "help",
    "placeholder",
    "prompt",
    "tooltip",
    "caption",
    "error",
    "desc",
    "description",
];

/// Whether `name` (the last part of a dotted name) holds a secret.
fn is_secret_name(name: &str) -> bool {
    let last = name
        .rsplit(['.', ':', '>', '$'])
        .find(|s| !s.is_empty())
        .unwrap_or(name);
    let words = words(last);
    let (Some(first), Some(end)) = (words.first(), words.last()) else {
        return false;
    };
    if ABOUT_WORDS.contains(&end.as_str()) || FLAG_WORDS.contains(&first.as_str()) {
        return false;
    }
    // `auth` alone holds credentials; as a prefix it names many things (`AuthProxyUserKey`).
    words == ["auth"]
        || words.iter().any(|w| SECRET_WORDS.contains(&w.as_str()))
        || words
            .windows(2)
            .any(|p| SECRET_PAIRS.contains(&(p[0].as_str(), p[1].as_str())))
}

/// The lowercase words of an identifier: split at `_`, `-` and camel-case humps.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in name.split(['_', '-']).filter(|p| !p.is_empty()) {
        let mut word = String::new();
        let mut prev_lower = false;
        for c in part.chars() {
            if c.is_ascii_uppercase() && prev_lower && !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            word.push(c.to_ascii_lowercase());
        }
        out.push(word);
    }
    out
}

/// How sure it is that `value`, assigned to `name`, is a real secret; `None` when it is not
/// one (or is a single lowercase word).
fn secret_value(value: &str, name: &str) -> Option<Confidence> {
    let v = strip_scheme(value.trim());
    if v.chars().count() < 8
        || v.chars().any(char::is_whitespace)
        || v.chars().any(|c| !c.is_ascii() && c.is_alphabetic())
        || v.contains("://")
        || is_placeholder(v)
        || is_env_name(v)
        || is_path(v)
        || is_dotted_name(v)
        || is_known_token(v)
        || is_pattern(v)
        || words(v) == words(name.rsplit('.').next().unwrap_or(name))
    {
        return None;
    }
    let letter = v.chars().any(|c| c.is_ascii_alphabetic());
    let digit = v.chars().any(|c| c.is_ascii_digit());
    let symbol = v
        .chars()
        .any(|c| !c.is_ascii_alphanumeric() && !matches!(c, '-' | '_' | '.'));
    let len = v.chars().count();
    // An uppercase letter after the first: a capitalised word (`Passwort`) is still a word.
    let mixed_case = v.chars().skip(1).any(|c| c.is_ascii_uppercase())
        && v.chars().any(|c| c.is_ascii_lowercase());
    if (len >= 16 && entropy(v) >= 3.5 && letter && digit)
        || (len >= 12 && letter && digit && symbol)
    {
        Some(Confidence::High)
    } else if digit || symbol || mixed_case {
        Some(Confidence::Medium)
    } else if v.contains(['-', '_', '.']) {
        // Words joined (`development-key`): a weak secret, or an identifier.
        Some(Confidence::Low)
    } else {
        // One lowercase word (`identifier`) is far more often a name than a password.
        None
    }
}

/// Prefixes of the known token formats: the token rules of the rules file report those (a
/// second finding on the same line would say nothing new).
const TOKEN_PREFIXES: &[&str] = &[
    "AKIA",
    "ASIA",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xox",
    "sk_live_",
    "rk_live_",
    "AIza",
    "GOCSPX-",
    "npm_",
    "pypi-",
    "sk-proj-",
    "sk-svcacct-",
    "sk-admin-",
    "eyJ",
    "-----BEGIN",
];

/// A regular expression or a format (`[A-Za-z0-9._~+/-]+=*`, `^\d{6}$`): brackets and
/// anchors that secrets do not have.
fn is_pattern(v: &str) -> bool {
    (v.contains('[') && v.contains(']'))
        || (v.starts_with('^') && v.ends_with('$'))
        || ["\\d", "\\w", "\\s", ".*", ".+"]
            .iter()
            .any(|p| v.contains(p))
}

/// A value in a known token format.
fn is_known_token(v: &str) -> bool {
    TOKEN_PREFIXES.iter().any(|p| v.starts_with(p))
}

/// The credential of an `Authorization` header value (`Bearer x`, `Basic x`, `token x`).
fn strip_scheme(value: &str) -> &str {
    for scheme in ["Bearer ", "Basic ", "Token ", "token ", "bearer "] {
        if let Some(rest) = value.strip_prefix(scheme) {
            return rest.trim();
        }
    }
    value
}

/// Parts of values that mark them as placeholders or templates.
const PLACEHOLDER_PARTS: &[&str] = &[
    "changeme",
    "change_me",
    "change-me",
    "changeit",
    "example",
    "your-",
    "your_",
    "yourpass",
    "yoursecret",
    "yourtoken",
    "yourkey",
    "placeholder",
    "xxx",
    "***",
    "...",
    "redacted",
    "dummy",
    "fake",
    "mock",
    "sample",
    "replace",
    "<",
    "${",
    "{{",
    "%(",
    "$(",
    "%s",
    "{}",
];

/// Whole values that are placeholders.
const PLACEHOLDER_VALUES: &[&str] = &[
    "none",
    "null",
    "nil",
    "undefined",
    "test",
    "secret",
    "password",
    "token",
    "true",
    "false",
    "default",
    "empty",
    "notasecret",
    "not-a-secret",
];

/// An obvious placeholder: `changeme`, `your-token`, `<secret>`, `${VAR}`, `{{ var }}`,
/// `%(x)s`, `********`, a test value.
fn is_placeholder(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    let first = lower.chars().next().unwrap_or(' ');
    PLACEHOLDER_PARTS.iter().any(|p| lower.contains(p))
        || PLACEHOLDER_VALUES.contains(&lower.as_str())
        || lower.starts_with("test")
        || lower.starts_with('$')
        || (lower.starts_with('%') && lower.ends_with('%'))
        || (lower.contains('{') && lower.contains('}'))
        || lower.chars().all(|c| c == first)
}

/// The name of an environment variable (`GITHUB_TOKEN`), given as a value.
fn is_env_name(v: &str) -> bool {
    v.starts_with(|c: char| c.is_ascii_uppercase())
        && v.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// A path or a file name: `emails/password_reset.html`, `/etc/secret`, `~/.ssh/id_rsa`,
/// `server.key`.
fn is_path(v: &str) -> bool {
    static FILE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&ascii(r"^[\w.\-]+\.[a-z][a-z0-9]{0,4}$")).expect("a valid pattern")
    });
    static PATH: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:~|\.{1,2})?/?(?:[a-z0-9_.\-]+/)+[a-z0-9_.\-]*$").expect("a valid pattern")
    });
    let unix = v.starts_with('/') || v.starts_with("./") || v.starts_with("../");
    let windows = v.len() > 2 && v.as_bytes()[1] == b':' && v.as_bytes()[2] == b'\\';
    let last = v.rsplit(['/', '\\']).next().unwrap_or(v);
    (unix && !v.contains(['+', '=']))
        || windows
        || PATH.is_match(v)
        || (v.contains('/') && FILE.is_match(last))
        || (FILE.is_match(v) && !v.chars().any(|c| c.is_ascii_digit()))
}

/// A dotted name such as a module path (`django.contrib.auth.backends.ModelBackend`).
fn is_dotted_name(v: &str) -> bool {
    v.contains('.')
        && v.split('.').all(|part| {
            part.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// Shannon entropy of `v`, in bits a character.
fn entropy(v: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    for c in v.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
    }
    let len = v.chars().count() as f64;
    counts
        .values()
        .map(|&n| {
            let p = n as f64 / len;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::super::{found, review_texts};
    use crate::rules::{Confidence, Severity};

    const RULE: &str = "hardcoded-secret";

    /// A random-looking value, built at run time so that this file holds none.
    fn random() -> String {
        ["q8Jz", "3LmN", "5pR7", "tV9w", "X2yB"].concat()
    }

    /// The lines `hardcoded-secret` reports in a new file `path` of `text`.
    fn lines(path: &str, text: &str) -> Vec<usize> {
        found(path, "", text, RULE)
            .into_iter()
            .map(|(_, l)| l)
            .collect()
    }

    /// The confidence of the one `hardcoded-secret` finding in a new file `path` of `text`.
    fn confidence(path: &str, text: &str) -> Confidence {
        let found: Vec<_> = review_texts(path, "", text)
            .into_iter()
            .filter(|f| f.rule == RULE)
            .collect();
        assert_eq!(found.len(), 1, "{text}: {found:#?}");
        found[0].confidence
    }

    #[test]
    fn secrets_assigned_in_code_are_found_in_each_parsed_language() {
        let v = random();
        let py = format!(
            "import os\n\nAPI_KEY = \"{v}\"\nconnect(password='{v}')\nconf = {{\"client_secret\": \"{v}\"}}\napp.config['SECRET_KEY'] = \"{v}\"\n"
        );
        assert_eq!(lines("src/app.py", &py), vec![3, 4, 5, 6]);
        let js = format!(
            "const apiKey = \"{v}\";\nconst c = {{ authToken: '{v}' }};\nthis.password = `{v}`;\n"
        );
        assert_eq!(lines("src/app.js", &js), vec![1, 2, 3]);
        // A literal fallback for a secret read from the environment is the secret.
        let py = format!(
            "SECRET = os.environ.get(\"SECRET_KEY\", \"{v}\")\nDB = os.getenv('DB_URL', 'sqlite://')\n"
        );
        assert_eq!(lines("src/settings.py", &py), vec![1]);
        let js = format!(
            "const key = process.env.API_KEY || '{v}';\nconst t = process.env.TOKEN ?? '';\n"
        );
        assert_eq!(lines("src/app.js", &js), vec![1]);
        let rs = format!(
            "const TOKEN: &str = \"{v}\";\nfn f() -> C {{\n    let secret = \"{v}\".to_string();\n    C {{ password: \"{v}\".into() }}\n}}\n"
        );
        assert_eq!(lines("src/lib.rs", &rs), vec![1, 3, 4]);
        let go = format!(
            "package x\n\nconst Token string = \"{v}\"\n\nfunc f() {{\n\tpassword := \"{v}\"\n\tc := C{{ClientSecret: \"{v}\"}}\n}}\n"
        );
        assert_eq!(lines("x.go", &go), vec![3, 6, 7]);
        // A language the review does not parse: the quoted form still counts.
        let java =
            format!("class A {{\n    String password = \"{v}\";\n    // token = \"{v}\"\n}}\n");
        assert_eq!(lines("A.java", &java), vec![2]);
    }

    #[test]
    fn secrets_in_configuration_files_are_found_quoted_or_not() {
        let v = random();
        assert_eq!(
            lines(
                "deploy/values.yaml",
                "db:\n  user: app\n  password: hunter2-xyz\n"
            ),
            vec![3]
        );
        assert_eq!(lines(".env", &format!("DEBUG=1\nAPI_KEY={v}\n")), vec![2]);
        assert_eq!(
            lines("config/prod.env", &format!("export DB_PASSWORD={v}\n")),
            vec![1]
        );
        assert_eq!(
            lines("settings.toml", &format!("[db]\npassword = \"{v}\"\n")),
            vec![2]
        );
        assert_eq!(
            lines("app.ini", &format!("[auth]\nclient_secret = {v}\n")),
            vec![2]
        );
        assert_eq!(
            lines("app.properties", &format!("db.password={v}\n")),
            vec![1]
        );
        assert_eq!(
            lines("conf.json", &format!("{{\n  \"token\": \"{v}\"\n}}\n")),
            vec![2]
        );
        // Comments and templates are not secrets.
        assert!(
            lines(
                "values.yaml",
                &format!("# password: {v}\npassword: {{{{ .Values.pw }}}}\n")
            )
            .is_empty()
        );
        assert!(lines(".env", "API_KEY=${API_KEY}\nTOKEN=\n").is_empty());
    }

    #[test]
    fn a_random_value_is_a_blocking_secret_a_password_a_likely_one_a_word_a_hint() {
        let v = random();
        assert_eq!(
            confidence("src/a.py", &format!("password = \"{v}\"\n")),
            Confidence::High
        );
        let pieces = format!("password = \"{}{}\"\n", "Tr0ub4dor", "&3xyzzy");
        assert_eq!(confidence("src/a.py", &pieces), Confidence::High);
        assert_eq!(
            confidence("conf.yaml", "password: hunter2-xyz\n"),
            Confidence::Medium
        );
        assert_eq!(
            confidence("src/a.py", "app.secret_key = 'development-key'\n"),
            Confidence::Low
        );
        let finding = review_texts("src/a.py", "", &format!("TOKEN = '{v}'\n"));
        assert_eq!(finding[0].severity, Severity::Critical);
        assert!(
            finding[0].reason.contains("`TOKEN`"),
            "{}",
            finding[0].reason
        );
    }

    #[test]
    fn names_about_secrets_and_values_that_are_not_secrets_stay_silent() {
        let py = "\
TOKEN_URL = \"https://oauth2.googleapis.com/token\"
PASSWORD_RESET_TEMPLATE = \"emails/password_reset.html\"
SECRET_KEY_NAME = \"x-secret-key-value\"
TOKEN_ENV = \"GITHUB_TOKEN\"
token = os.environ[\"GITHUB_TOKEN\"]
API_KEY = \"GITHUB_API_KEY\"
password = \"changeme\"
password = \"your-password-here\"
secret = \"<your secret>\"
token = \"xxxxxxxxxxxxxxxx\"
password = \"********\"
password = \"%(password)s\"
password = \"{{ password }}\"
auth = \"${AUTH_TOKEN}\"
password = \"password\"
secret = \"secret\"
token = \"dummy-token-value\"
password = \"test\"
password = \"\"
password = None
password = \"Please enter your password\"
token = \"abc123\"
promptToken = \"identifier\"
private_key = \"keys/server.key\"
AUTH_BACKEND = \"django.contrib.auth.backends.ModelBackend\"
is_password = \"enabled-by-default\"
password_length = \"sixteen-chars-min\"
if password == \"Tr0ub4dor&3xyzzy-not-here\":
    pass
log(\"password = 'Tr0ub4dor&3xyzzy'\")
# password = \"Tr0ub4dor&3xyzzy\"
";
        assert_eq!(lines("src/settings.py", py), Vec::<usize>::new());
        let js = "const usernamePasswordInOptions = 'username-x1' in options && 'password-y2' in options;\nconst TOKEN_STRINGS = '[A-Za-z0-9._~+/-]+=*';\nconst AuthProxyUserKey = \"proxy_user_2\";\n";
        assert!(lines("src/a.js", js).is_empty());
        let js = "const BeeTokenAddress = '0x36435796Ca9be2bf150CE0dE';\nconst testingPassword = 'IamUsedForTesting1';\n";
        assert!(lines("src/a.js", js).is_empty());
        // A translation file: keys are sentences, values text in another language.
        let json = "{\n  \"Invalid email or password.\": \"メールアドレスかパスワードが正しくありません\",\n  \"password\": \"パスワードを入力してください\"\n}\n";
        assert!(lines("i18n/ja_JP.json", json).is_empty());
        let json = "{\n  \"LABEL_PASSWORD\": \"Wachtwoord\",\n  \"LABEL_TWO_FACTOR_AUTH_TOKEN\": \"2FA-token\"\n}\n";
        assert!(lines("i18n/nl_NL.json", json).is_empty());
        let js = "const TOKEN_HEADER = \"X-Auth-Token-Value\";\nconst passwordField = \"user-password-input\";\n";
        assert!(lines("src/a.js", js).is_empty());
        // Documentation and configuration templates show configuration to their reader.
        assert!(lines("README.md", "password: hunter2-xyz\n").is_empty());
        assert!(lines(".env.example", "DB_PASSWORD=hunter2-xyz\n").is_empty());
        assert!(lines("config.yaml.sample", "password: hunter2-xyz\n").is_empty());
        assert!(lines(".env.test", "DB_PASSWORD=hunter2-xyz\n").is_empty());
    }

    #[test]
    fn test_code_and_examples_may_hold_fixture_secrets() {
        let fixture =
            "app.secret_key = 'development-key'\napp.config['PASSWORD'] = 'hunter2-xyz'\n";
        assert!(lines("flask/testsuite/basic.py", fixture).is_empty());
        assert!(lines("spec/app.spec.js", "const password = 'hunter2-xyz';\n").is_empty());
        assert!(lines("examples/app/config.yaml", "password: hunter2-xyz\n").is_empty());
        let rs = format!(
            "#[cfg(test)]\nmod tests {{\n    const TOKEN: &str = \"{}\";\n}}\n",
            random()
        );
        assert!(lines("src/lib.rs", &rs).is_empty());
        // The same outside tests is found.
        assert_eq!(lines("flask/app.py", fixture), vec![1, 2]);
    }

    /// `n` characters of letters and digits, varied enough to pass for a token's body.
    fn body(n: usize) -> String {
        "a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ"
            .chars()
            .cycle()
            .take(n)
            .collect()
    }

    /// The `(rule, line)` of the token rules' findings for `text` written to a new file.
    fn tokens(path: &str, text: &str) -> Vec<(String, usize)> {
        ["aws-key", "private-key", "token-literal", "jwt"]
            .iter()
            .flat_map(|r| found(path, "", text, r))
            .collect()
    }

    /// Fake tokens of each known format, built from pieces at run time: this file holds no
    /// token-shaped literal for secret scanners to flag.
    fn fakes() -> Vec<(&'static str, String)> {
        let b = body;
        vec![
            ("aws-key", format!("{}{}", "AK", "IAQ3EGUJ5NXW7ZKP4M")),
            ("token-literal", format!("gh{}_{}", "p", b(36))),
            (
                "token-literal",
                format!("github_{}_{}_{}", "pat", b(22), b(59)),
            ),
            ("token-literal", format!("gl{}-{}", "pat", b(20))),
            (
                "token-literal",
                format!("xo{}-{}-{}", "xb", "1234567890", b(24)),
            ),
            (
                "token-literal",
                format!(
                    "https://hooks.{}.com/services/T{}/B{}/{}",
                    "slack",
                    "0A1B2C3D4",
                    "5E6F7G8H9",
                    b(24)
                ),
            ),
            ("token-literal", format!("{}_live_{}", "sk", b(24))),
            ("token-literal", format!("{}_live_{}", "rk", b(30))),
            ("token-literal", format!("AI{}{}", "za", b(35))),
            ("token-literal", format!("GOC{}-{}", "SPX", b(28))),
            ("token-literal", format!("np{}_{}", "m", b(36))),
            (
                "token-literal",
                format!("py{}-AgEIcHlwaS5vcmc{}", "pi", b(60)),
            ),
            ("token-literal", format!("sk-{}-{}", "proj", b(48))),
            (
                "jwt",
                format!(
                    "ey{}.ey{}.{}",
                    "JhbGciOiJIUzI1NiJ9",
                    "JzdWIiOiIxMjM0In0",
                    b(43)
                ),
            ),
        ]
    }

    #[test]
    fn known_token_formats_are_found_in_code_configuration_and_comments() {
        for (rule, token) in fakes() {
            let py = format!("x = 1\nclient = Client(\"{token}\")\n");
            assert_eq!(
                tokens("src/a.py", &py),
                vec![(rule.to_owned(), 2)],
                "{token}"
            );
            let yaml = format!("# {token}\n");
            assert_eq!(
                tokens("deploy/ci.yaml", &yaml),
                vec![(rule.to_owned(), 1)],
                "{token}"
            );
        }
        let f = review_texts("src/a.py", "", &format!("k = \"{}\"\n", fakes()[1].1));
        let f = f
            .iter()
            .find(|f| f.rule == "token-literal")
            .expect("a finding");
        assert_eq!(
            (f.severity, f.confidence),
            (Severity::Critical, Confidence::High)
        );
        assert!(f.reason.starts_with("GitHub"), "{}", f.reason);
        // Assigned to a secret name, it is reported once, by its format.
        let assigned = format!("GITHUB_TOKEN = \"{}\"\n", fakes()[1].1);
        assert!(found("src/a.py", "", &assigned, RULE).is_empty());
        assert_eq!(tokens("src/a.py", &assigned).len(), 1);
        let jwt = review_texts("src/a.js", "", &format!("const t = '{}';\n", fakes()[13].1));
        let jwt = jwt.iter().find(|f| f.rule == "jwt").expect("a finding");
        assert_eq!(
            (jwt.severity, jwt.confidence),
            (Severity::High, Confidence::Medium)
        );
    }

    #[test]
    fn a_private_key_block_is_found_but_not_its_header_alone() {
        let header = format!("-----BEGIN {} KEY-----", "RSA PRIVATE");
        let pem = format!(
            "{header}\n{}\n{}\n-----END RSA PRIVATE KEY-----\n",
            b64(64),
            b64(20)
        );
        assert_eq!(
            tokens("certs/server.pem", &pem),
            vec![("private-key".to_owned(), 1)]
        );
        let escaped = format!("KEY = \"{header}\\n\" +\n    \"{}\"\n", b64(64));
        assert_eq!(
            tokens("src/a.js", &escaped),
            vec![("private-key".to_owned(), 1)]
        );
        let pgp = format!(
            "-----BEGIN PGP {} BLOCK-----\nVersion: x 1\n\n{}\n",
            "PRIVATE KEY",
            b64(64)
        );
        assert_eq!(
            tokens("keys.asc", &pgp),
            vec![("private-key".to_owned(), 1)]
        );
        // A parser's header constant is not a key.
        let parser =
            format!("const HEADER: &str = \"{header}\";\nconst END: &str = \"-----END\";\n");
        assert!(tokens("src/pem.rs", &parser).is_empty());
    }

    /// `n` characters of base64.
    fn b64(n: usize) -> String {
        "MIIEowIBAAKCAQEAx4+/Zq9".chars().cycle().take(n).collect()
    }

    #[test]
    fn documented_examples_and_bare_prefixes_are_not_tokens_and_tests_lower_them() {
        let silent = [
            format!("{}{}", "AKIA", "IOSFODNN7EXAMPLE"),
            format!(
                "https://hooks.{}.com/services/T{}/B{}/{}",
                "slack",
                "0".repeat(8),
                "0".repeat(8),
                "X".repeat(24)
            ),
            "sk-".to_owned() + "abc",
            format!("sk-{}", body(48)),
            format!("ey{}.ey{}.", "JhbGciOiJub25lIn0", "JzdWIiOiIxMjM0In0"),
        ];
        for token in silent {
            assert!(
                tokens("src/a.py", &format!("k = '{token}'\n")).is_empty(),
                "{token}"
            );
        }
        // In test code a token still counts, two severities lower: critical becomes medium.
        let text = format!("T = '{}'\n", fakes()[1].1);
        let f = review_texts("tests/test_a.py", "", &text);
        let f = f
            .iter()
            .find(|f| f.rule == "token-literal")
            .expect("a finding");
        assert_eq!(f.severity, Severity::Medium);
    }
}
