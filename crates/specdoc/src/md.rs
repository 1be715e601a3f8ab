//! Markdown as the spec documents use it, read leniently: frontmatter, headings and sections,
//! tables, links, checkboxes and list items, and the spec ids (`G-001`, `REQ-001`,
//! `NFR-S-001`, `COMP-001`, `ADR-001`, `EPIC-001`, `STORY-001-002`). Nothing here fails: a
//! document from any agent is read as far as its structure allows.
//!
//! The spec gate (whose reading the builtin writer checks its documents by) and the
//! supervisor checkpoints grew their readers separately, and the two disagree on edge cases:
//! which ids count, how a frontmatter block is delimited, whether a tab may follow a
//! heading's `#`s, how a section title matches, what a list item looks like. Each keeps its
//! reading through its [`Dialect`] ([`GATE`], [`CHECKPOINT`]): one implementation of each
//! idea, with every point of disagreement a named setting, so that bringing the readers
//! together is a visible change of one setting.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

/// How one reader takes the points on which the readers disagree.
#[derive(Debug, Clone, Copy)]
pub struct Dialect {
    /// Which ids it knows and where they may start and end.
    pub ids: Grammar,
    /// Whether [`Dialect::plain`] drops single `*`s too, not only `**` and backticks.
    pub plain_stars: bool,
    /// Where a frontmatter block starts and ends.
    pub block: Block,
    /// Which lines of the block are keys.
    pub keys: Keys,
    /// Whether a tab may follow a heading's `#`s (a space always may).
    pub heading_tab: bool,
    /// How [`Dialect::section`] finds the headings of a document.
    pub section: Scan,
    /// How [`Dialect::headings`], [`Dialect::heading`] and [`Dialect::title`] find them.
    pub outline: Scan,
    /// How [`Dialect::section`] matches a title.
    pub titles: TitleMatch,
    /// How [`Dialect::title`] takes the title from the H1.
    pub h1: H1,
    /// What a list item looks like.
    pub items: Items,
}

/// The spec quality gate.
pub const GATE: Dialect = Dialect {
    ids: Grammar::Word,
    plain_stars: false,
    block: Block::Strict,
    keys: Keys::TopLevel,
    heading_tab: true,
    section: Scan {
        skip: Skip::Block,
        blank: false,
    },
    outline: Scan {
        skip: Skip::Block,
        blank: false,
    },
    titles: TitleMatch::Normalised,
    h1: H1::AfterColonTrimmed,
    items: Items::All,
};

/// The supervisor checkpoints and the discuss critics.
pub const CHECKPOINT: Dialect = Dialect {
    ids: Grammar::Loose,
    plain_stars: true,
    block: Block::Lenient,
    keys: Keys::Unindented,
    heading_tab: false,
    section: Scan {
        skip: Skip::Nothing,
        blank: false,
    },
    outline: Scan {
        skip: Skip::Nothing,
        blank: true,
    },
    titles: TitleMatch::LeadingWords,
    h1: H1::AfterId,
    items: Items::Meaningful,
};

/// Which ids a reader knows, and where one may start and end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grammar {
    /// The template ids between word boundaries (Unicode), with any decimal digits.
    Word,
    /// The template ids, `FR-NNN` and `NFR-` with any category of one to three capitals,
    /// between word boundaries, with ASCII digits.
    Loose,
}

static WORD_IDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b(?:STORY-\d{3}-\d{3}|NFR-(?:SC|P|S|U)-\d{3}|EPIC-\d{3}|COMP-\d{3}",
        r"|REQ-\d{3}|ADR-\d{3}|G-\d{3})\b"
    ))
    .expect("a valid pattern")
});

static LOOSE_IDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b(?:STORY-[0-9]{3}-[0-9]{3}|NFR-[A-Z]{1,3}-[0-9]{3}|EPIC-[0-9]{3}|COMP-[0-9]{3}",
        r"|REQ-[0-9]{3}|FR-[0-9]{3}|ADR-[0-9]{3}|G-[0-9]{3})\b"
    ))
    .expect("a valid pattern")
});

/// Ids of a known prefix in a form the spec does not use (`FR-001`, `REQ-1`, `ADR-0001`).
static MALFORMED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:FR-\d+|(?:REQ|ADR|EPIC|COMP|G)-(?:\d{1,2}|\d{4,}))\b")
        .expect("a valid pattern")
});

impl Grammar {
    /// The byte ranges of the ids of `text`, in order.
    fn find(self, text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
        let regex: &Regex = match self {
            Grammar::Word => &WORD_IDS,
            Grammar::Loose => &LOOSE_IDS,
        };
        regex.find_iter(text).map(|m| (m.start(), m.end()))
    }
}

/// Where a frontmatter block starts and ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Block {
    /// `---\n` at the very start, up to a `---` line (or a final `\n---`).
    Strict,
    /// A `---` line first, after a byte-order mark or blank lines, up to the next `---` line;
    /// trailing spaces and CRLF line ends allowed.
    Lenient,
}

/// Which lines of a frontmatter block are keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    /// Every `key: value` line whose key does not start with a space.
    Unindented,
    /// `key: value` lines that do not start with white space, `-` or `#`.
    TopLevel,
}

/// How the headings of a document are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scan {
    /// What is skipped as frontmatter.
    pub skip: Skip,
    /// Whether `#`s followed by nothing but spaces count, as a heading with an empty text.
    pub blank: bool,
}

/// What is skipped as frontmatter when looking for headings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Nothing.
    Nothing,
    /// A [`Block::Strict`] block.
    Block,
}

/// How a section title matches a heading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TitleMatch {
    /// The same after [`norm`].
    Normalised,
    /// The heading's words (lower case, without `and`) start with the title's.
    LeadingWords,
}

/// How the title of a document is taken from its H1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum H1 {
    /// The text after the first `: `, if any, trimmed.
    AfterColonTrimmed,
    /// The text after a leading id and the `:`, `-` or `—` after it; none when empty.
    AfterId,
}

/// What a list item looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Items {
    /// `- `, `* ` or `1. ` items, a leading `[ ]` or `[x]` dropped; empty ones left out.
    All,
    /// Also `+ ` and `1) ` items, a leading `[ ] `, `[x] ` or `[X] ` dropped; none inside code
    /// fences, and none that say nothing (`—`, `None`, "No open questions", see
    /// [`Dialect::is_blank`]).
    Meaningful,
}

/// One heading of a document.
#[derive(Debug, Clone)]
pub struct Heading {
    /// 1 for `#`, 2 for `##`, …
    pub level: usize,
    /// Its text.
    pub text: String,
    /// Byte offset of its line.
    pub line: usize,
    /// Byte offset of the text after it.
    pub body: usize,
}

/// A row of a table whose first cell is exactly one spec id.
#[derive(Debug, Clone)]
pub struct Keyed<'t> {
    /// The id.
    pub id: String,
    /// The table.
    pub table: &'t Table,
    /// The table's place among the tables read.
    pub index: usize,
    /// The row.
    pub row: &'t [String],
}

impl<'t> Keyed<'t> {
    /// Its cell under the first of `names` that a header is (or else starts with), the id's
    /// column aside.
    pub fn cell(&self, names: &[&str]) -> Option<&'t str> {
        self.table
            .column(names, 1)
            .and_then(|i| self.row.get(i))
            .map(String::as_str)
    }
}

/// A markdown table: header cells (plain text, lower case) and body rows.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Header cells, as plain text in lower case.
    pub headers: Vec<String>,
    /// Body rows.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// The cell of `row` under `header`, or else under the first header starting with it.
    pub fn get<'r>(&self, row: &'r [String], header: &str) -> Option<&'r str> {
        self.column(&[header], 0)
            .and_then(|i| row.get(i))
            .map(String::as_str)
    }

    /// Whether some header starts with `header`.
    pub fn has(&self, header: &str) -> bool {
        self.headers.iter().any(|h| h.starts_with(header))
    }

    /// The index of the first header equal to one of `names` (tried in order), else of the
    /// first starting with one, from column `from` on.
    pub fn column(&self, names: &[&str], from: usize) -> Option<usize> {
        let find = |f: &dyn Fn(&str, &str) -> bool| {
            names.iter().find_map(|n| {
                self.headers
                    .iter()
                    .enumerate()
                    .skip(from)
                    .find(|(_, h)| f(h, n))
                    .map(|(i, _)| i)
            })
        };
        find(&|h, n| h == n).or_else(|| find(&|h, n| h.starts_with(n)))
    }
}

impl Dialect {
    /// The frontmatter of `doc` as key/value pairs, if it has a block.
    pub fn frontmatter(&self, doc: &str) -> Option<BTreeMap<String, String>> {
        let lines: Vec<&str> = match self.block {
            Block::Strict => split(doc)?.0.lines().collect(),
            Block::Lenient => lenient_block(doc)?,
        };
        let mut out = BTreeMap::new();
        for line in lines {
            if self.keys == Keys::TopLevel && line.starts_with([' ', '\t', '-', '#']) {
                continue;
            }
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let keep = match self.keys {
                Keys::Unindented => !key.starts_with(' ') && !key.is_empty(),
                Keys::TopLevel => !key.trim().is_empty(),
            };
            if keep {
                out.insert(key.trim().to_owned(), value.trim().to_owned());
            }
        }
        Some(out)
    }

    /// The level and text of a heading line (without its line end), as the outline reads it.
    pub fn heading<'l>(&self, line: &'l str) -> Option<(usize, &'l str)> {
        self.heading_line(line, self.outline.blank)
    }

    fn heading_line<'l>(&self, line: &'l str, blank: bool) -> Option<(usize, &'l str)> {
        let level = line.bytes().take_while(|b| *b == b'#').count();
        if level == 0 || level > 6 {
            return None;
        }
        let rest = &line[level..];
        let text = rest.trim();
        if !(rest.starts_with(' ') || (self.heading_tab && rest.starts_with('\t')))
            || (text.is_empty() && !blank)
        {
            return None;
        }
        Some((
            level,
            // Trailing `#`s close it; an escaped `#` (`\#`, as `inline` writes it) closes
            // nothing.
            match text.trim_end_matches('#') {
                open if open.ends_with('\\') => text,
                open => open.trim(),
            },
        ))
    }

    /// Every heading of `doc` the outline sees, with the byte offsets of its line and body.
    pub fn headings(&self, doc: &str) -> Vec<Heading> {
        self.scan(doc, self.outline)
    }

    fn scan(&self, doc: &str, scan: Scan) -> Vec<Heading> {
        let start = match scan.skip {
            Skip::Nothing => 0,
            Skip::Block => doc.len() - body(doc).len(),
        };
        let mut out = Vec::new();
        let mut fence = false;
        let mut offset = start;
        for line in doc[start..].split_inclusive('\n') {
            let at = offset;
            offset += line.len();
            let line = line
                .strip_suffix('\n')
                .map_or(line, |l| l.strip_suffix('\r').unwrap_or(l));
            // Code fences, indented or not, hide headings.
            if line.trim_start().starts_with("```") {
                fence = !fence;
                continue;
            }
            if fence {
                continue;
            }
            if let Some((level, text)) = self.heading_line(line, scan.blank) {
                out.push(Heading {
                    level,
                    text: text.to_owned(),
                    line: at,
                    body: offset,
                });
            }
        }
        out
    }

    /// The body of the first section headed `title`, up to the next heading of the same or a
    /// higher level; `None` without such a heading.
    pub fn section<'d>(&self, doc: &'d str, title: &str) -> Option<&'d str> {
        let hs = self.scan(doc, self.section);
        let want = self.titles.key(title);
        let i = hs
            .iter()
            .position(|h| self.titles.matches(&h.text, &want))?;
        Some(section_at(doc, &hs, i))
    }

    /// The first table of the section headed `title`.
    pub fn section_table(&self, doc: &str, title: &str) -> Option<Table> {
        self.section(doc, title)
            .and_then(|s| self.tables(s).into_iter().next())
    }

    /// The title of `doc`, from its first H1.
    pub fn title(&self, doc: &str) -> Option<String> {
        let text = self.headings(doc).into_iter().find(|h| h.level == 1)?.text;
        match self.h1 {
            H1::AfterColonTrimmed => Some(match text.split_once(": ") {
                Some((_, t)) => t.trim().to_owned(),
                None => text,
            }),
            H1::AfterId => Some(self.strip_id(&text)).filter(|t| !t.is_empty()),
        }
    }

    /// The tables of `text`, in order.
    pub fn tables(&self, text: &str) -> Vec<Table> {
        let mut out: Vec<Table> = Vec::new();
        let mut current: Option<Table> = None;
        for line in text.lines() {
            let line = line.trim();
            if !line.starts_with('|') {
                out.extend(current.take());
                continue;
            }
            let cells = cells(line);
            let rule = cells
                .iter()
                .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')));
            match &mut current {
                None => {
                    current = Some(Table {
                        headers: cells.iter().map(|c| self.plain(c).to_lowercase()).collect(),
                        rows: Vec::new(),
                    })
                }
                Some(_) if rule => {}
                Some(t) => t.rows.push(cells),
            }
        }
        out.extend(current);
        out
    }

    /// The rows of `tables` whose first cell, as plain text, is exactly one id starting with
    /// one of `prefixes`, in order, repeats included.
    pub fn keyed<'t>(&self, tables: &'t [Table], prefixes: &[&str]) -> Vec<Keyed<'t>> {
        let mut out = Vec::new();
        for (index, table) in tables.iter().enumerate() {
            for row in &table.rows {
                let Some(first) = row.first() else { continue };
                let id = self.plain(first);
                if prefixes.iter().any(|p| self.is_id(&id, p)) {
                    out.push(Keyed {
                        id,
                        table,
                        index,
                        row,
                    });
                }
            }
        }
        out
    }

    /// A cell without links and emphasis: `[REQ-001](x.md)` gives `REQ-001`.
    pub fn plain(&self, cell: &str) -> String {
        let text = plain(cell);
        if !self.plain_stars {
            return text;
        }
        let mut out = String::with_capacity(text.len());
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek().is_some_and(char::is_ascii_punctuation) => {
                    out.push(c);
                    out.extend(chars.next());
                }
                '*' => {}
                c => out.push(c),
            }
        }
        out.trim().to_owned()
    }

    /// Every spec id in `text`, in order, as often as it occurs.
    pub fn ids(&self, text: &str) -> Vec<String> {
        self.ids
            .find(text)
            .map(|(s, e)| text[s..e].to_owned())
            .collect()
    }

    /// Every spec id in `text`, each once, in order.
    pub fn unique_ids(&self, text: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for id in self.ids(text) {
            if !out.contains(&id) {
                out.push(id);
            }
        }
        out
    }

    /// The ids of `text` starting with one of `prefixes`, each once, in order.
    pub fn ids_of(&self, text: &str, prefixes: &[&str]) -> Vec<String> {
        self.unique_ids(text)
            .into_iter()
            .filter(|id| prefixes.iter().any(|p| id.starts_with(p)))
            .collect()
    }

    /// Whether `text` is exactly one spec id starting with `prefix`.
    pub fn is_id(&self, text: &str, prefix: &str) -> bool {
        self.ids
            .find(text)
            .next()
            .is_some_and(|(s, e)| s == 0 && e == text.len() && text.starts_with(prefix))
    }

    /// The id a cell holds, if its plain text is exactly one spec id starting with `prefix`.
    pub fn sole_id(&self, cell: &str, prefix: &str) -> Option<String> {
        let text = self.plain(cell);
        self.is_id(&text, prefix).then_some(text)
    }

    /// `text` without a leading id and the `:`, `-` or `—` after it: `G-001: Let users …`
    /// gives `Let users …`.
    pub fn strip_id(&self, text: &str) -> String {
        match self.ids.find(text).next() {
            Some((0, end)) => text[end..]
                .trim_start_matches([':', ' ', '-', '—'])
                .trim()
                .to_owned(),
            _ => text.to_owned(),
        }
    }

    /// The checkbox items of `text` (`-` or `*`, maybe spaces, then `[ ]`, `[x]` or `[X]`),
    /// without their markers; empty ones left out.
    pub fn checkboxes(&self, text: &str) -> Vec<String> {
        text.lines()
            .filter_map(|l| {
                let l = l.trim_start().strip_prefix(['-', '*'])?.trim_start();
                let rest = (l.strip_prefix("[ ]"))
                    .or_else(|| l.strip_prefix("[x]"))
                    .or_else(|| l.strip_prefix("[X]"))?
                    .trim();
                (!rest.is_empty()).then(|| rest.to_owned())
            })
            .collect()
    }

    /// The list items of `text`, without their markers.
    pub fn items(&self, text: &str) -> Vec<String> {
        let meaningful = self.items == Items::Meaningful;
        let mut out = Vec::new();
        let mut fence = false;
        for line in text.lines() {
            let l = line.trim_start();
            if meaningful && l.starts_with("```") {
                fence = !fence;
                continue;
            }
            if fence {
                continue;
            }
            let rest = l
                .strip_prefix("- ")
                .or_else(|| l.strip_prefix("* "))
                .or_else(|| l.strip_prefix("+ ").filter(|_| meaningful))
                .or_else(|| {
                    let digits = l.bytes().take_while(u8::is_ascii_digit).count();
                    let after = &l[digits..];
                    (digits > 0)
                        .then(|| {
                            after
                                .strip_prefix(". ")
                                .or_else(|| after.strip_prefix(") ").filter(|_| meaningful))
                        })
                        .flatten()
                });
            let Some(rest) = rest else { continue };
            let rest = match self.items {
                Items::All => {
                    let t = rest.trim_start();
                    t.strip_prefix("[ ]")
                        .or_else(|| t.strip_prefix("[x]"))
                        .unwrap_or(rest)
                }
                Items::Meaningful => rest
                    .strip_prefix("[ ] ")
                    .or_else(|| rest.strip_prefix("[x] "))
                    .or_else(|| rest.strip_prefix("[X] "))
                    .unwrap_or(rest),
            }
            .trim();
            let lower = rest.to_lowercase();
            let empty = match self.items {
                Items::All => rest.is_empty(),
                Items::Meaningful => {
                    self.is_blank(rest)
                        || lower.starts_with("no open question")
                        || lower.starts_with("none ")
                }
            };
            if !empty {
                out.push(rest.to_owned());
            }
        }
        out
    }

    /// Whether a cell or item says nothing (`—`, `TBD`, `none`, `n/a`).
    pub fn is_blank(&self, text: &str) -> bool {
        let t = self.plain(text).to_lowercase();
        let t = t.trim_matches(|c: char| c.is_whitespace() || c == '.');
        t.is_empty()
            || matches!(
                t,
                "-" | "—" | "–" | "tbd" | "tbc" | "none" | "n/a" | "na" | "todo" | "?" | "unknown"
            )
    }

    /// Characters of `text` that are not white space, markup, table rules or headings.
    pub fn substance(&self, text: &str) -> usize {
        text.lines()
            .filter(|l| self.heading(l).is_none())
            .flat_map(str::chars)
            .filter(|c| !c.is_whitespace() && !matches!(c, '|' | '-' | '#' | '*' | '>' | '`'))
            .count()
    }
}

impl TitleMatch {
    /// What a title is compared by.
    fn key(self, title: &str) -> String {
        match self {
            TitleMatch::Normalised => norm(title),
            TitleMatch::LeadingWords => title_words(title),
        }
    }

    /// Whether `heading` matches the title whose key is `want`.
    fn matches(self, heading: &str, want: &str) -> bool {
        let have = self.key(heading);
        have == want || (self == TitleMatch::LeadingWords && have.starts_with(&format!("{want} ")))
    }
}

/// The frontmatter and the body of `doc`, when it starts with a [`Block::Strict`] block.
fn split(doc: &str) -> Option<(&str, &str)> {
    let rest = doc.strip_prefix("---\n")?;
    if let Some(end) = rest.find("\n---\n") {
        return Some((&rest[..end], &rest[end + 5..]));
    }
    rest.strip_suffix("\n---").map(|fm| (fm, ""))
}

/// The lines of a [`Block::Lenient`] block.
fn lenient_block(doc: &str) -> Option<Vec<&str>> {
    let mut lines = doc.trim_start_matches('\u{feff}').trim_start().lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return None;
    }
    let mut out = Vec::new();
    for line in lines {
        if line.trim_end() == "---" {
            return Some(out);
        }
        out.push(line);
    }
    None
}

/// The text of `doc` after its [`Block::Strict`] frontmatter.
pub fn body(doc: &str) -> &str {
    split(doc).map_or(doc, |(_, b)| b)
}

/// An inline YAML list (`[a, b]`) or a single value, as items.
pub fn list(value: &str) -> Vec<String> {
    let v = value.trim();
    let inner = v
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .unwrap_or(v);
    inner
        .split(',')
        .map(|s| s.trim().trim_matches(|c| c == '"' || c == '\'').to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// A heading text reduced for comparison: lower case, `&` as `and`, single spaces, no
/// emphasis or trailing colon.
pub fn norm(text: &str) -> String {
    text.replace('&', " and ")
        .replace(['*', '_', '`'], "")
        .to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_end_matches(':')
        .to_owned()
}

/// The lower-case words of a title, without `and`, for matching headings loosely.
fn title_words(text: &str) -> String {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && *w != "and")
        .collect::<Vec<_>>()
        .join(" ")
}

/// The body of heading `i` of `hs`, headings of `doc`.
pub fn section_at<'d>(doc: &'d str, hs: &[Heading], i: usize) -> &'d str {
    let end = hs[i + 1..]
        .iter()
        .find(|h| h.level <= hs[i].level)
        .map_or(doc.len(), |h| h.line);
    &doc[hs[i].body..end]
}

/// The cells of a table row; `\|` is a literal bar.
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut out = Vec::new();
    let mut cell = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push('|');
                chars.next();
            }
            '|' => out.push(std::mem::take(&mut cell).trim().to_owned()),
            c => cell.push(c),
        }
    }
    out.push(cell.trim().to_owned());
    out
}

/// A cell without links, `**` and backticks: `[REQ-001](x.md)` gives `REQ-001`. Backslash
/// escapes are kept as they are (the result is still Markdown source, as [`inline`] writes
/// it), and an escaped character is never taken as markup.
pub fn plain(cell: &str) -> String {
    let chars: Vec<char> = cell.chars().collect();
    let escaped =
        |i: usize| chars[i] == '\\' && chars.get(i + 1).is_some_and(char::is_ascii_punctuation);
    // The first unescaped `c` at or after `from`.
    let find = |from: usize, c: char| {
        let mut i = from;
        while i < chars.len() {
            if escaped(i) {
                i += 2;
                continue;
            }
            if chars[i] == c {
                return Some(i);
            }
            i += 1;
        }
        None
    };
    let mut out = String::with_capacity(cell.len());
    let mut i = 0;
    while i < chars.len() {
        if escaped(i) {
            out.push(chars[i]);
            out.push(chars[i + 1]);
            i += 2;
            continue;
        }
        match chars[i] {
            '`' => i += 1,
            '*' if chars.get(i + 1) == Some(&'*') => i += 2,
            '[' => match find(i + 1, ']').filter(|&close| chars.get(close + 1) == Some(&'(')) {
                Some(close) => {
                    out.push_str(&plain(&chars[i + 1..close].iter().collect::<String>()));
                    i = find(close + 2, ')').map_or(chars.len(), |end| end + 1);
                }
                None => {
                    out.push('[');
                    i += 1;
                }
            },
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out.trim().to_owned()
}

/// The text Markdown source `text` reads as, as far as [`inline`] escapes go: each
/// backslash before ASCII punctuation dropped. For text that leaves Markdown (a JSON
/// title, a commit subject).
pub fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some(next)) if next.is_ascii_punctuation() => {
                out.push(*next);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// `text` as Markdown source that reads as exactly that text, on one line: every character
/// that could start markup (emphasis, code, links, HTML, tables, headings, quotes, fences,
/// strike-through, entities) is backslash-escaped, and so is a line-start marker (`-`, `+`,
/// `=`, `1.`) at its beginning, so the text may be placed anywhere in a line, a table cell
/// or a heading. The task text, feedback and anything else the user or an agent wrote as
/// plain text go into the documents through this, never verbatim.
pub fn inline(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::with_capacity(text.len() + 8);
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    for (i, c) in text.char_indices() {
        let lead = match c {
            '-' | '+' | '=' => i == 0,
            '.' | ')' => digits > 0 && i == digits,
            '&' => text[i + 1..].find(';').is_some_and(|end| {
                end > 0
                    && text[i + 1..i + 1 + end]
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '#')
            }),
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' | '~' => true,
            _ => false,
        };
        if lead {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The first link target of a cell: `[REQ-001](REQ-001-x.md)` gives `REQ-001-x.md`.
pub fn link(cell: &str) -> Option<&str> {
    let start = cell.find("](")? + 2;
    let end = cell[start..].find(')')? + start;
    Some(&cell[start..end])
}

/// Ids of a known prefix in a form the spec does not use, each once.
pub fn malformed_ids(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in MALFORMED.find_iter(text) {
        let s = m.as_str().to_owned();
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// The one-line value of the first `Key:` line of `text` (emphasis allowed around the key).
pub fn field<'t>(text: &'t str, key: &str) -> Option<&'t str> {
    text.lines().find_map(|l| {
        let l = l.trim().trim_start_matches(['-', '*', ' ']);
        let (k, v) = l.split_once(':')?;
        (k.trim_matches(['*', '_', ' ']).eq_ignore_ascii_case(key))
            .then(|| v.trim().trim_start_matches(['*', '_']).trim())
    })
}

/// The lower-case words of `text` (letters, digits, `'` and `-` inside).
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-'))
        .map(|w| w.trim_matches(['\'', '-']).to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_text_reads_as_itself() {
        assert_eq!(inline("# heading"), "\\# heading");
        assert_eq!(
            inline("- item\n```x``` and `y`"),
            "\\- item \\`\\`\\`x\\`\\`\\` and \\`y\\`"
        );
        assert_eq!(inline("1. one | two <b>"), "1\\. one \\| two \\<b\\>");
        assert_eq!(inline("---"), "\\---");
        assert_eq!(inline("R&D &amp; C#"), "R&D \\&amp; C\\#");
        assert_eq!(inline("Add search"), "Add search");
        for text in [
            "# h",
            "a_b *c* `d` [e](f) <g> | ~~~ \\ &amp; 1. x",
            "---",
            "C#",
        ] {
            assert_eq!(unescape(&inline(text)), text);
        }
        // Read back, an escaped character is not markup.
        assert_eq!(
            plain(&inline("**a** [b](c) `d`")),
            "\\*\\*a\\*\\* \\[b\\](c) \\`d\\`"
        );
        assert_eq!(plain("**a** [b](c) `d`"), "a b d");
        let heading = format!("# Brief: {}", inline("Fix #"));
        assert_eq!(GATE.heading(&heading), Some((1, "Brief: Fix \\#")));
        assert_eq!(CHECKPOINT.plain(&inline("a*b")), "a\\*b");
    }

    #[test]
    fn ids_and_tables() {
        let md = GATE;
        assert_eq!(
            md.ids("REQ-001, NFR-SC-002 and STORY-001-002; not XREQ-001, REQ-0011 or G-01"),
            vec!["REQ-001", "NFR-SC-002", "STORY-001-002"]
        );
        assert_eq!(
            md.ids("[REQ-001](REQ-001-add-login.md)"),
            vec!["REQ-001", "REQ-001"]
        );
        let t = md.tables("| ID | Title |\n|---|---|\n| [REQ-001](a.md) | x \\| y |\n\ntext");
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].get(&t[0].rows[0], "title"), Some("x | y"));
        assert_eq!(md.plain(&t[0].rows[0][0]), "REQ-001");
        assert_eq!(link(&t[0].rows[0][0]), Some("a.md"));
        let doc = "# T\n\n## A\n\na\n\n### B\n\nb\n\n## C\n\nc\n";
        assert_eq!(md.section(doc, "A"), Some("\na\n\n### B\n\nb\n\n"));
        assert_eq!(md.section(doc, "B"), Some("\nb\n\n"));
        assert_eq!(md.section(doc, "C"), Some("\nc\n"));
        let fm = md
            .frontmatter("---\nid: REQ-001\ntraces_to: [G-001, G-002]\n---\n# x\n")
            .unwrap();
        assert_eq!(list(&fm["traces_to"]), vec!["G-001", "G-002"]);
    }

    #[test]
    fn reads_markdown_leniently() {
        let md = GATE;
        let doc = concat!(
            "---\nid: REQ-001\ntraces_to: [G-001, G-002]\n---\n# REQ-001: Log in\n\n",
            "## A & B\n\na\n\n### Sub\n\nb\n\n",
            "## C\n\n| ID | Title |\n|---|---|\n| [REQ-002](x.md) | x \\| y |\n"
        );
        let fm = md.frontmatter(doc).unwrap();
        assert_eq!(list(&fm["traces_to"]), ["G-001", "G-002"]);
        assert_eq!(md.title(doc).as_deref(), Some("Log in"));
        assert_eq!(md.section(doc, "a and b"), Some("\na\n\n### Sub\n\nb\n\n"));
        let t = md.tables(md.section(doc, "C").unwrap());
        assert_eq!(t[0].get(&t[0].rows[0], "title"), Some("x | y"));
        assert_eq!(
            md.sole_id(&t[0].rows[0][0], "REQ-").as_deref(),
            Some("REQ-002")
        );
        assert_eq!(link(&t[0].rows[0][0]), Some("x.md"));
        assert_eq!(
            md.ids("REQ-001, NFR-SC-002, STORY-001-002; not XREQ-001, REQ-0011 or G-01"),
            ["REQ-001", "NFR-SC-002", "STORY-001-002"]
        );
        assert_eq!(
            malformed_ids("FR-001 and REQ-1, REQ-001"),
            ["FR-001", "REQ-1"]
        );
        assert_eq!(
            md.checkboxes("- [ ] one\n- [x] two\n- three"),
            ["one", "two"]
        );
        assert_eq!(field("**Size:** M\nTraces: REQ-001", "size"), Some("M"));
        assert_eq!(md.frontmatter("# no frontmatter"), None);
    }

    #[test]
    fn ids_tables_sections_items() {
        let md = CHECKPOINT;
        assert_eq!(
            md.unique_ids(
                "REQ-001, NFR-SC-002, FR-003 and STORY-001-002; not XREQ-001, REQ-0011, G-01"
            ),
            vec!["REQ-001", "NFR-SC-002", "FR-003", "STORY-001-002"]
        );
        let t = md.tables("| ID | Title |\n|---|---|\n| [REQ-001](a.md) | x \\| y |\n\ntext");
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].column(&["title"], 1), Some(1));
        assert_eq!(md.plain(&t[0].rows[0][0]), "REQ-001");
        assert_eq!(t[0].rows[0][1], "x | y");
        let doc = "# T\n\n## Goals & Success Metrics\n\na\n\n### B\n\nb\n\n## Open Questions\n\n- [ ] one?\n- None\n1. two?\n";
        assert_eq!(
            md.section(doc, "Goals and Success Metrics"),
            Some("\na\n\n### B\n\nb\n\n")
        );
        assert_eq!(
            md.items(md.section(doc, "Open Questions").unwrap()),
            vec!["one?", "two?"]
        );
        let fm = md
            .frontmatter("---\nid: REQ-001\ntraces_to: [G-001, G-002]\n---\n# REQ-001: x\n")
            .unwrap_or_default();
        assert_eq!(list(&fm["traces_to"]), vec!["G-001", "G-002"]);
        assert_eq!(md.title("# REQ-001: Sign in\n"), Some("Sign in".into()));
        assert!(
            md.frontmatter("---\nid: x\nno end")
                .unwrap_or_default()
                .is_empty()
        );
    }

    #[test]
    fn dialects_keep_their_edges() {
        // Ids between word boundaries, and the checkpoints' wider grammar.
        assert_eq!(GATE.ids("X-REQ-001 _REQ-002 REQ-003a"), ["REQ-001"]);
        assert_eq!(
            CHECKPOINT.ids("FR-001 NFR-AB-002"),
            ["FR-001", "NFR-AB-002"]
        );
        assert!(GATE.ids("FR-001 NFR-AB-002").is_empty());
        // Closing hashes, tabs and empty headings.
        assert_eq!(GATE.heading("##\tA ##"), Some((2, "A")));
        assert_eq!(CHECKPOINT.heading("##\tA"), None);
        assert_eq!(CHECKPOINT.heading("## "), Some((2, "")));
        assert_eq!(GATE.heading("## "), None);
        // Frontmatter after a byte-order mark, and indented keys.
        let doc = "\u{feff}---\r\nid: X\r\n\tkey: v\r\n---\r\n";
        assert_eq!(GATE.frontmatter(doc), None);
        let fm = CHECKPOINT.frontmatter(doc).unwrap();
        assert_eq!((fm["id"].as_str(), fm["key"].as_str()), ("X", "v"));
        let fm = GATE.frontmatter("---\nid: X\n\tkey: v\n---\n").unwrap();
        assert!(!fm.contains_key("key"));
        // Section titles: normalised, leading words.
        let doc = "## Metric & Target\n\nm\n";
        assert_eq!(GATE.section(doc, "Metric and Target"), Some("\nm\n"));
        assert_eq!(CHECKPOINT.section(doc, "Metric"), Some("\nm\n"));
        assert_eq!(GATE.section(doc, "Metric"), None);
    }
}
