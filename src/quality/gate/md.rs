//! Reading markdown leniently: frontmatter, headings, sections, tables, checkboxes and spec
//! ids. A document from any writer is read as far as its structure allows; nothing here fails.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

/// Spec ids: goals, requirements, components, decisions, epics and stories.
static ID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b(?:STORY-\d{3}-\d{3}|NFR-(?:SC|P|S|U)-\d{3}|EPIC-\d{3}|COMP-\d{3}",
        r"|REQ-\d{3}|ADR-\d{3}|G-\d{3})\b"
    ))
    .expect("a valid pattern")
});

/// Ids of a known prefix in a form the spec does not use (`FR-001`, `REQ-1`, `ADR-0001`).
static MALFORMED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:FR-\d+|(?:REQ|ADR|EPIC|COMP|G)-(?:\d{1,2}|\d{4,}))\b")
        .expect("a valid pattern")
});

/// The frontmatter of `doc` as key/value pairs, if it has one.
pub fn frontmatter(doc: &str) -> Option<BTreeMap<String, String>> {
    let (fm, _) = split(doc)?;
    let mut out = BTreeMap::new();
    for line in fm.lines() {
        if line.starts_with([' ', '\t', '-', '#']) {
            continue;
        }
        if let Some((key, value)) = line.split_once(':') {
            let key = key.trim();
            if !key.is_empty() {
                out.insert(key.to_owned(), value.trim().to_owned());
            }
        }
    }
    Some(out)
}

/// The frontmatter and the body of `doc`, when it starts with a frontmatter block.
fn split(doc: &str) -> Option<(&str, &str)> {
    let rest = doc.strip_prefix("---\n")?;
    if let Some(end) = rest.find("\n---\n") {
        return Some((&rest[..end], &rest[end + 5..]));
    }
    rest.strip_suffix("\n---").map(|fm| (fm, ""))
}

/// The text of `doc` after its frontmatter.
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

/// The level and text of a heading line.
pub fn heading(line: &str) -> Option<(usize, &str)> {
    let line = line.trim_end();
    let level = line.chars().take_while(|c| *c == '#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let text = line[level..].strip_prefix([' ', '\t'])?;
    Some((level, text.trim().trim_end_matches('#').trim()))
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

/// Every heading of `doc` outside the frontmatter and code fences, with the byte offsets of
/// its line start and of its body start.
pub fn headings(doc: &str) -> Vec<Heading> {
    let mut out = Vec::new();
    let mut fence = false;
    let start = doc.len() - body(doc).len();
    let mut offset = start;
    for line in doc[start..].split_inclusive('\n') {
        let at = offset;
        offset += line.len();
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        if let Some((level, text)) = heading(line) {
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

/// The body of the first section headed `title` (compared with [`norm`]), up to the next
/// heading of the same or a higher level; `None` without such a heading.
pub fn section<'d>(doc: &'d str, title: &str) -> Option<&'d str> {
    let hs = headings(doc);
    let want = norm(title);
    let i = hs.iter().position(|h| norm(&h.text) == want)?;
    Some(section_at(doc, &hs, i))
}

/// The body of heading `i` of `hs`.
pub fn section_at<'d>(doc: &'d str, hs: &[Heading], i: usize) -> &'d str {
    let end = hs[i + 1..]
        .iter()
        .find(|h| h.level <= hs[i].level)
        .map_or(doc.len(), |h| h.line);
    &doc[hs[i].body..end]
}

/// Characters of `text` that are not whitespace, markup or table rules.
pub fn substance(text: &str) -> usize {
    text.lines()
        .filter(|l| heading(l).is_none())
        .flat_map(str::chars)
        .filter(|c| !c.is_whitespace() && !matches!(c, '|' | '-' | '#' | '*' | '>' | '`'))
        .count()
}

/// A markdown table: header cells (lower case) and body rows.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Header cells, lower case.
    pub headers: Vec<String>,
    /// Body rows.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// The cell of `row` under `header`, or else under the first header starting with it.
    pub fn get<'r>(&self, row: &'r [String], header: &str) -> Option<&'r str> {
        let i = self
            .headers
            .iter()
            .position(|h| h == header)
            .or_else(|| self.headers.iter().position(|h| h.starts_with(header)))?;
        row.get(i).map(String::as_str)
    }

    /// Whether some header starts with `header`.
    pub fn has(&self, header: &str) -> bool {
        self.headers.iter().any(|h| h.starts_with(header))
    }
}

/// The tables of `text`, in order.
pub fn tables(text: &str) -> Vec<Table> {
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
                    headers: cells.iter().map(|c| plain(c).to_lowercase()).collect(),
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

/// A cell without links and emphasis: `[REQ-001](x.md)` gives `REQ-001`.
pub fn plain(cell: &str) -> String {
    let mut out = String::new();
    let mut rest = cell;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find("](") {
            Some(mid) => {
                out.push_str(&after[..mid]);
                let tail = &after[mid + 2..];
                rest = tail.find(')').map_or("", |c| &tail[c + 1..]);
            }
            None => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.replace("**", "").replace('`', "").trim().to_owned()
}

/// The first link target of a cell.
pub fn link(cell: &str) -> Option<&str> {
    let start = cell.find("](")? + 2;
    let end = cell[start..].find(')')? + start;
    Some(&cell[start..end])
}

/// Every spec id in `text`, in order, as often as it occurs.
pub fn ids(text: &str) -> Vec<String> {
    ID.find_iter(text).map(|m| m.as_str().to_owned()).collect()
}

/// The ids of `text` starting with one of `prefixes`, each once, in order.
pub fn ids_of(text: &str, prefixes: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for id in ids(text) {
        if prefixes.iter().any(|p| id.starts_with(p)) && !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

/// `text` if it is exactly one spec id starting with `prefix`.
pub fn sole_id(text: &str, prefix: &str) -> Option<String> {
    let t = plain(text);
    ID.find(&t)
        .filter(|m| m.start() == 0 && m.end() == t.len() && t.starts_with(prefix))
        .map(|m| m.as_str().to_owned())
}

/// Ids in a form the spec does not use, each once.
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

/// The `- [ ]` / `- [x]` items of `text`.
pub fn checkboxes(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start().strip_prefix(['-', '*'])?.trim_start();
            l.strip_prefix("[ ]")
                .or_else(|| l.strip_prefix("[x]"))
                .or_else(|| l.strip_prefix("[X]"))
        })
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The list items (`- `, `* `, `1. `, checkboxes) of `text`, without their markers.
pub fn items(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = l
                .strip_prefix("- ")
                .or_else(|| l.strip_prefix("* "))
                .or_else(|| {
                    let digits = l.chars().take_while(char::is_ascii_digit).count();
                    (digits > 0)
                        .then(|| l[digits..].strip_prefix(". "))
                        .flatten()
                })?;
            let rest = rest
                .trim_start()
                .strip_prefix("[ ]")
                .or_else(|| rest.trim_start().strip_prefix("[x]"))
                .unwrap_or(rest);
            Some(rest.trim().to_owned())
        })
        .filter(|s| !s.is_empty())
        .collect()
}

/// The H1 of `doc` without an `<ID>: ` or `<Kind>: ` prefix.
pub fn title(doc: &str) -> Option<String> {
    headings(doc)
        .into_iter()
        .find(|h| h.level == 1)
        .map(|h| match h.text.split_once(": ") {
            Some((_, t)) => t.trim().to_owned(),
            None => h.text,
        })
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
    fn reads_markdown_leniently() {
        let doc = concat!(
            "---\nid: REQ-001\ntraces_to: [G-001, G-002]\n---\n# REQ-001: Log in\n\n",
            "## A & B\n\na\n\n### Sub\n\nb\n\n",
            "## C\n\n| ID | Title |\n|---|---|\n| [REQ-002](x.md) | x \\| y |\n"
        );
        let fm = frontmatter(doc).unwrap();
        assert_eq!(list(&fm["traces_to"]), ["G-001", "G-002"]);
        assert_eq!(title(doc).as_deref(), Some("Log in"));
        assert_eq!(section(doc, "a and b"), Some("\na\n\n### Sub\n\nb\n\n"));
        let t = tables(section(doc, "C").unwrap());
        assert_eq!(t[0].get(&t[0].rows[0], "title"), Some("x | y"));
        assert_eq!(
            sole_id(&t[0].rows[0][0], "REQ-").as_deref(),
            Some("REQ-002")
        );
        assert_eq!(link(&t[0].rows[0][0]), Some("x.md"));
        assert_eq!(
            ids("REQ-001, NFR-SC-002, STORY-001-002; not XREQ-001, REQ-0011 or G-01"),
            ["REQ-001", "NFR-SC-002", "STORY-001-002"]
        );
        assert_eq!(
            malformed_ids("FR-001 and REQ-1, REQ-001"),
            ["FR-001", "REQ-1"]
        );
        assert_eq!(checkboxes("- [ ] one\n- [x] two\n- three"), ["one", "two"]);
        assert_eq!(field("**Size:** M\nTraces: REQ-001", "size"), Some("M"));
        assert_eq!(frontmatter("# no frontmatter"), None);
    }
}
