//! Reading spec documents back: frontmatter, sections, tables, ids, and the goals,
//! requirements, components, decisions and stories of earlier phases. Lenient by design: a
//! document written by another agent is read as far as its ids and tables allow.

use std::collections::{BTreeMap, BTreeSet};

use super::{Folder, Moscow, template};

/// The frontmatter of `doc` as key/value pairs, if it has one.
pub fn frontmatter(doc: &str) -> Option<BTreeMap<String, String>> {
    let rest = doc.strip_prefix("---\n")?;
    let end = match rest.find("\n---\n") {
        Some(end) => end,
        None => rest.strip_suffix("\n---")?.len(),
    };
    let mut out = BTreeMap::new();
    for line in rest[..end].lines() {
        if let Some((key, value)) = line.split_once(':')
            && !key.starts_with(' ')
            && !key.is_empty()
        {
            out.insert(key.trim().to_owned(), value.trim().to_owned());
        }
    }
    Some(out)
}

/// An inline YAML list (`[a, b]`) or a single value, as items.
pub fn list(value: &str) -> Vec<String> {
    let inner = value
        .trim()
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .unwrap_or(value);
    inner
        .split(',')
        .map(|s| s.trim().trim_matches(|c| c == '"' || c == '\'').to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The body of the section headed `title` (any level), up to the next heading of the same or
/// a higher level; `None` when there is no such heading.
pub fn section<'d>(doc: &'d str, title: &str) -> Option<&'d str> {
    let mut offset = 0;
    let mut found: Option<(usize, usize)> = None; // (level, body start)
    for line in doc.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let Some((level, text)) = template::heading(line.trim_end()) else {
            continue;
        };
        match found {
            None if text.eq_ignore_ascii_case(title) => found = Some((level, offset)),
            Some((open, body)) if level <= open => return Some(&doc[body..start]),
            _ => {}
        }
    }
    found.map(|(_, body)| &doc[body..])
}

/// A markdown table: header cells (lower-case) and rows of cells.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Header cells, lower-case.
    pub headers: Vec<String>,
    /// Body rows.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// The cell of `row` under the header `header`, or else under the first header starting
    /// with it.
    pub fn get<'r>(&self, row: &'r [String], header: &str) -> Option<&'r str> {
        let i = self
            .headers
            .iter()
            .position(|h| h == header)
            .or_else(|| self.headers.iter().position(|h| h.starts_with(header)))?;
        row.get(i).map(String::as_str)
    }
}

/// The tables of `text`, in order.
pub fn tables(text: &str) -> Vec<Table> {
    let mut out: Vec<Table> = Vec::new();
    let mut current: Option<Table> = None;
    for line in text.lines() {
        let line = line.trim();
        if !line.starts_with('|') {
            if let Some(t) = current.take() {
                out.push(t);
            }
            continue;
        }
        let cells = cells(line);
        let separator = cells
            .iter()
            .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')));
        match &mut current {
            None => {
                current = Some(Table {
                    headers: cells.iter().map(|c| c.to_lowercase()).collect(),
                    rows: Vec::new(),
                })
            }
            Some(_) if separator => {}
            Some(t) => t.rows.push(cells),
        }
    }
    out.extend(current);
    out
}

/// The cells of a table row, `\|` kept as a literal bar.
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

/// Id prefixes the spec uses, longest first so that `NFR-SC-` wins over `NFR-S-`.
const ID_PREFIXES: &[&str] = &[
    "STORY-", "NFR-SC-", "NFR-P-", "NFR-S-", "NFR-U-", "EPIC-", "COMP-", "REQ-", "ADR-", "G-",
];

/// Every spec id in `text` (`G-001`, `REQ-001`, `NFR-S-001`, `STORY-001-002`, …), in order
/// of appearance, repeated as often as they occur.
pub fn ids(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let boundary = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'-');
        if boundary
            && let Some(prefix) = ID_PREFIXES
                .iter()
                .find(|p| bytes[i..].starts_with(p.as_bytes()))
        {
            let mut end = i + prefix.len();
            let groups = if *prefix == "STORY-" { 2 } else { 1 };
            let mut ok = true;
            for g in 0..groups {
                if g > 0 {
                    if bytes.get(end) != Some(&b'-') {
                        ok = false;
                        break;
                    }
                    end += 1;
                }
                let digits = bytes[end..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                if digits != 3 {
                    ok = false;
                    break;
                }
                end += digits;
            }
            if ok && !bytes.get(end).is_some_and(|b| b.is_ascii_digit()) {
                out.push(text[i..end].to_owned());
                i = end;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// The ids of `text` that start with `prefix`, each once, in order.
pub fn ids_with(text: &str, prefix: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    ids(text)
        .into_iter()
        .filter(|id| id.starts_with(prefix) && seen.insert(id.clone()))
        .collect()
}

/// Text of a cell without markdown links and emphasis: `[REQ-001](x.md)` gives `REQ-001`.
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
                rest = tail.find(')').map(|c| &tail[c + 1..]).unwrap_or("");
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

/// The first link target in a cell: `[REQ-001](REQ-001-x.md)` gives `REQ-001-x.md`.
pub fn link(cell: &str) -> Option<&str> {
    let start = cell.find("](")? + 2;
    let end = cell[start..].find(')')? + start;
    Some(&cell[start..end])
}

/// The title in the H1 of `doc` after `<ID>: `, if any.
pub fn h1_title(doc: &str) -> Option<String> {
    template::headings(doc)
        .into_iter()
        .find(|(level, _)| *level == 1)
        .map(|(_, text)| match text.split_once(": ") {
            Some((_, title)) => title.to_owned(),
            None => text,
        })
}

/// The `- [ ]` / `- [x]` items of `text`.
pub fn checkboxes(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            l.strip_prefix("- [ ] ")
                .or_else(|| l.strip_prefix("- [x] "))
                .or_else(|| l.strip_prefix("- [X] "))
        })
        .map(|s| s.trim().to_owned())
        .collect()
}

/// One goal of the product brief.
#[derive(Debug, Clone)]
pub struct GoalRow {
    /// `G-NNN`.
    pub id: String,
    /// The goal.
    pub text: String,
    /// Its priority (Must when the brief gives none).
    pub priority: Moscow,
    /// Its success metric.
    pub metric: String,
    /// The metric's target.
    pub target: String,
}

/// The goals of the product brief: table rows whose first cell is a `G-NNN` id.
pub fn goals(brief: &str) -> Vec<GoalRow> {
    let mut out: Vec<GoalRow> = Vec::new();
    for table in tables(brief) {
        for row in &table.rows {
            let Some(id) = row.first().map(|c| plain(c)).filter(|c| is_id(c, "G-")) else {
                continue;
            };
            if out.iter().any(|g| g.id == id) {
                continue;
            }
            let text = table
                .get(row, "goal")
                .filter(|t| !ids(t).contains(&id))
                .or_else(|| row.get(1).map(String::as_str))
                .map(plain)
                .unwrap_or_default();
            out.push(GoalRow {
                priority: table
                    .get(row, "priority")
                    .and_then(Moscow::parse)
                    .unwrap_or(Moscow::Must),
                metric: table.get(row, "success").map(plain).unwrap_or_default(),
                target: table.get(row, "target").map(plain).unwrap_or_default(),
                id,
                text,
            });
        }
    }
    out
}

/// The user groups of the product brief: the headings under its Target Users section.
pub fn users(brief: &str) -> Vec<String> {
    section(brief, "Target Users")
        .map(|s| {
            s.lines()
                .filter_map(template::heading)
                .map(|(_, t)| t.to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn is_id(text: &str, prefix: &str) -> bool {
    ids(text)
        .first()
        .is_some_and(|i| i == text && i.starts_with(prefix))
}

/// One requirement, functional or not.
#[derive(Debug, Clone)]
pub struct ReqRow {
    /// `REQ-NNN` or `NFR-<cat>-NNN`.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its priority.
    pub priority: Moscow,
    /// The goals it traces to.
    pub traces: Vec<String>,
    /// Its file, relative to the pipeline folder, when there is one.
    pub path: Option<String>,
    /// The `category` of an NFR.
    pub category: String,
    /// Its user story, if written.
    pub story: String,
    /// Its acceptance criteria.
    pub criteria: Vec<String>,
    /// The metric of an NFR.
    pub metric: String,
    /// The target of an NFR.
    pub target: String,
}

/// The requirements of a phase-3 folder.
#[derive(Debug, Clone, Default)]
pub struct Requirements {
    /// `REQ-NNN`, in id order.
    pub functional: Vec<ReqRow>,
    /// `NFR-…`, in index order.
    pub non_functional: Vec<ReqRow>,
}

impl Requirements {
    /// Every requirement, functional first.
    pub fn all(&self) -> impl Iterator<Item = &ReqRow> {
        self.functional.iter().chain(&self.non_functional)
    }
}

/// The path of the requirements index.
pub const REQUIREMENTS_INDEX: &str = "spec/requirements/_index.md";
/// The path of the architecture index.
pub const ARCHITECTURE_INDEX: &str = "spec/architecture/_index.md";
/// The path of the epics index.
pub const EPICS_INDEX: &str = "spec/epics/_index.md";
/// The path of the product brief.
pub const BRIEF: &str = "spec/product-brief.md";

/// The file of an item listed in an index: the link in its row if the file exists, else the
/// first file of `dir` named after the id.
fn item_file(folder: &Folder, dir: &str, id: &str, row_link: Option<&str>) -> Option<String> {
    if let Some(target) = row_link {
        let path = format!("{dir}/{}", target.trim_start_matches("./"));
        if folder.contains_key(&path) {
            return Some(path);
        }
    }
    let prefix = format!("{dir}/{id}-");
    let exact = format!("{dir}/{id}.md");
    folder
        .keys()
        .find(|k| (k.starts_with(&prefix) || **k == exact) && k.ends_with(".md"))
        .cloned()
}

fn text<'f>(folder: &'f Folder, path: &str) -> Option<&'f str> {
    folder.get(path).and_then(|b| std::str::from_utf8(b).ok())
}

/// The requirements listed in `spec/requirements/_index.md`, completed from their files.
/// Without an index, the files of the folder are read instead.
pub fn requirements(folder: &Folder) -> Requirements {
    let dir = "spec/requirements";
    let mut rows: Vec<(String, Option<String>, Vec<String>, Table)> = Vec::new();
    if let Some(index) = text(folder, REQUIREMENTS_INDEX) {
        for table in tables(index) {
            for row in &table.rows {
                let Some(first) = row.first() else { continue };
                let id = plain(first);
                if (is_id(&id, "REQ-") || is_id(&id, "NFR-")) && !rows.iter().any(|r| r.0 == id) {
                    rows.push((
                        id,
                        link(first).map(str::to_owned),
                        row.clone(),
                        table.clone(),
                    ));
                }
            }
        }
    }
    if rows.is_empty() {
        for path in folder
            .keys()
            .filter(|k| k.starts_with("spec/requirements/"))
        {
            let name = path.rsplit('/').next().unwrap_or(path);
            let id = ids(name).into_iter().next();
            if let Some(id) = id.filter(|i| name.starts_with(i.as_str()))
                && !rows.iter().any(|r| r.0 == id)
            {
                rows.push((id, None, Vec::new(), Table::default()));
            }
        }
    }
    let mut out = Requirements::default();
    for (id, row_link, row, table) in rows {
        let path = item_file(folder, dir, &id, row_link.as_deref());
        let doc = path.as_deref().and_then(|p| text(folder, p)).unwrap_or("");
        let fm = frontmatter(doc).unwrap_or_default();
        let title = table
            .get(&row, "title")
            .map(plain)
            .filter(|t| !t.is_empty())
            .or_else(|| h1_title(doc))
            .unwrap_or_else(|| id.clone());
        let priority = fm
            .get("priority")
            .and_then(|p| Moscow::parse(p))
            .or_else(|| table.get(&row, "priority").and_then(Moscow::parse))
            .unwrap_or(Moscow::Should);
        let mut traces: Vec<String> = fm.get("traces_to").map(|t| list(t)).unwrap_or_default();
        if traces.is_empty() {
            traces = table
                .get(&row, "traces")
                .map(|t| ids_with(t, "G-"))
                .unwrap_or_default();
        }
        let story = section(doc, "User Story")
            .map(super::text::one_line)
            .unwrap_or_default();
        let criteria = section(doc, "Acceptance Criteria")
            .map(checkboxes)
            .unwrap_or_default();
        let metric_table = section(doc, "Metric & Target")
            .map(tables)
            .and_then(|t| t.into_iter().next());
        let (metric, target) = metric_table
            .as_ref()
            .and_then(|t| {
                let row = t.rows.first()?;
                Some((
                    t.get(row, "metric").map(plain).unwrap_or_default(),
                    t.get(row, "target").map(plain).unwrap_or_default(),
                ))
            })
            .unwrap_or_default();
        let r = ReqRow {
            category: fm
                .get("category")
                .cloned()
                .or_else(|| table.get(&row, "category").map(plain))
                .unwrap_or_default(),
            title,
            priority,
            traces,
            path,
            story,
            criteria,
            metric,
            target,
            id: id.clone(),
        };
        if id.starts_with("REQ-") {
            out.functional.push(r);
        } else {
            out.non_functional.push(r);
        }
    }
    out.functional.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

/// One component of the architecture.
#[derive(Debug, Clone)]
pub struct ComponentRow {
    /// `COMP-NNN`.
    pub id: String,
    /// Its name.
    pub name: String,
    /// The REQ ids it implements.
    pub implements: Vec<String>,
    /// The components it depends on.
    pub depends_on: Vec<String>,
}

/// One architecture decision.
#[derive(Debug, Clone)]
pub struct AdrRow {
    /// `ADR-NNN`.
    pub id: String,
    /// Its title.
    pub title: String,
    /// `Accepted` or `Proposed`.
    pub status: String,
    /// The requirement ids it serves.
    pub traces: Vec<String>,
    /// Its file, when there is one.
    pub path: Option<String>,
    /// The rows of its Alternatives Considered table.
    pub alternatives: usize,
}

/// The architecture of a phase-4 folder.
#[derive(Debug, Clone, Default)]
pub struct Architecture {
    /// Components, in index order.
    pub components: Vec<ComponentRow>,
    /// Decisions, in index order.
    pub adrs: Vec<AdrRow>,
}

/// The components and decisions listed in `spec/architecture/_index.md`.
pub fn architecture(folder: &Folder) -> Architecture {
    let mut out = Architecture::default();
    let Some(index) = text(folder, ARCHITECTURE_INDEX) else {
        return out;
    };
    for table in tables(index) {
        for row in &table.rows {
            let Some(first) = row.first() else { continue };
            let id = plain(first);
            if is_id(&id, "COMP-") && !out.components.iter().any(|c| c.id == id) {
                out.components.push(ComponentRow {
                    name: table
                        .get(row, "component")
                        .map(plain)
                        .unwrap_or_else(|| id.clone()),
                    implements: table
                        .get(row, "implements")
                        .map(|c| ids_with(c, "REQ-"))
                        .unwrap_or_default(),
                    depends_on: table
                        .get(row, "dependencies")
                        .map(|c| ids_with(c, "COMP-"))
                        .unwrap_or_default(),
                    id,
                });
            } else if is_id(&id, "ADR-") && !out.adrs.iter().any(|a| a.id == id) {
                let path = item_file(folder, "spec/architecture", &id, link(first));
                let doc = path.as_deref().and_then(|p| text(folder, p)).unwrap_or("");
                let fm = frontmatter(doc).unwrap_or_default();
                let mut traces: Vec<String> =
                    fm.get("traces_to").map(|t| list(t)).unwrap_or_default();
                if traces.is_empty() {
                    traces = table
                        .get(row, "traces")
                        .map(|c| {
                            ids(c)
                                .into_iter()
                                .filter(|i| i.starts_with("REQ-") || i.starts_with("NFR-"))
                                .collect()
                        })
                        .unwrap_or_default();
                }
                out.adrs.push(AdrRow {
                    title: table
                        .get(row, "title")
                        .map(plain)
                        .or_else(|| h1_title(doc))
                        .unwrap_or_else(|| id.clone()),
                    status: fm
                        .get("status")
                        .cloned()
                        .or_else(|| table.get(row, "status").map(plain))
                        .unwrap_or_else(|| "Proposed".into()),
                    alternatives: section(doc, "Alternatives Considered")
                        .and_then(|s| tables(s).into_iter().next())
                        .map(|t| t.rows.len())
                        .unwrap_or(0),
                    traces,
                    path,
                    id,
                });
            }
        }
    }
    out
}

/// One story of an epic.
#[derive(Debug, Clone)]
pub struct StoryRow {
    /// `STORY-EEE-NNN`.
    pub id: String,
    /// The requirement ids on its `Traces:` line.
    pub traces: Vec<String>,
    /// Its acceptance criteria.
    pub criteria: Vec<String>,
}

/// One epic and its stories.
#[derive(Debug, Clone)]
pub struct EpicRow {
    /// `EPIC-NNN`.
    pub id: String,
    /// Its file.
    pub path: String,
    /// Its stories.
    pub stories: Vec<StoryRow>,
}

/// The epics of a phase-5 folder, read from the epic files the index links to.
pub fn epics(folder: &Folder) -> Vec<EpicRow> {
    let mut out: Vec<EpicRow> = Vec::new();
    let Some(index) = text(folder, EPICS_INDEX) else {
        return out;
    };
    for table in tables(index) {
        for row in &table.rows {
            let Some(first) = row.first() else { continue };
            let id = plain(first);
            if !is_id(&id, "EPIC-") || out.iter().any(|e| e.id == id) {
                continue;
            }
            let Some(path) = item_file(folder, "spec/epics", &id, link(first)) else {
                continue;
            };
            let doc = text(folder, &path).unwrap_or("");
            out.push(EpicRow {
                stories: stories(doc),
                id,
                path,
            });
        }
    }
    out
}

/// The stories of an epic file: `### STORY-…` headings with the lines under them.
pub fn stories(doc: &str) -> Vec<StoryRow> {
    let mut out: Vec<StoryRow> = Vec::new();
    let mut body = String::new();
    let mut current: Option<String> = None;
    let flush = |id: Option<String>, body: &str, out: &mut Vec<StoryRow>| {
        if let Some(id) = id {
            let traces = body
                .lines()
                .filter_map(|l| l.trim().strip_prefix("Traces:"))
                .flat_map(ids)
                .collect();
            out.push(StoryRow {
                id,
                traces,
                criteria: checkboxes(body),
            });
        }
    };
    for line in doc.lines() {
        if let Some((level, text)) = template::heading(line)
            && level <= 3
        {
            flush(current.take(), &body, &mut out);
            body.clear();
            if level == 3 {
                current = ids(text)
                    .into_iter()
                    .next()
                    .filter(|i| i.starts_with("STORY-"));
            }
            continue;
        }
        body.push_str(line);
        body.push('\n');
    }
    flush(current.take(), &body, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_tables() {
        assert_eq!(
            ids("REQ-001, NFR-SC-002 and STORY-001-002; not XREQ-001, REQ-0011 or G-01"),
            vec!["REQ-001", "NFR-SC-002", "STORY-001-002"]
        );
        assert_eq!(
            ids("[REQ-001](REQ-001-add-login.md)"),
            vec!["REQ-001", "REQ-001"]
        );
        let t = tables("| ID | Title |\n|---|---|\n| [REQ-001](a.md) | x \\| y |\n\ntext");
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].get(&t[0].rows[0], "title"), Some("x | y"));
        assert_eq!(plain(&t[0].rows[0][0]), "REQ-001");
        assert_eq!(link(&t[0].rows[0][0]), Some("a.md"));
        let doc = "# T\n\n## A\n\na\n\n### B\n\nb\n\n## C\n\nc\n";
        assert_eq!(section(doc, "A"), Some("\na\n\n### B\n\nb\n\n"));
        assert_eq!(section(doc, "B"), Some("\nb\n\n"));
        assert_eq!(section(doc, "C"), Some("\nc\n"));
        let fm = frontmatter("---\nid: REQ-001\ntraces_to: [G-001, G-002]\n---\n# x\n").unwrap();
        assert_eq!(list(&fm["traces_to"]), vec!["G-001", "G-002"]);
    }
}
