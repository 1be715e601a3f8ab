//! The terminology check: the names of a scope's documents used the same way across them
//! (synonyms and near spellings found as one).

use super::*;

// ---------------------------------------------------------------------------------------
// Terminology consistency.

/// Concepts that drift between documents; one term per concept is expected.
pub(super) const SYNONYMS: &[&[&str]] = &[
    &["user", "customer"],
    &["sign in", "log in", "login", "signin"],
    &["sign up", "register", "signup"],
    &["sign out", "log out", "logout"],
    &["email", "e-mail"],
    &["administrator", "admin"],
];

/// Whether two names of one id mean the same: equal words, one a prefix or subset of the
/// other (shortened titles), or at least half their words shared.
pub(in crate::quality::checkpoint) fn same_name(a: &str, b: &str) -> bool {
    let norm = |s: &str| -> Vec<String> {
        let cut = s.trim_end().ends_with('…') || s.trim_end().ends_with("...");
        let mut words: Vec<String> = s
            .to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_owned)
            .collect();
        // A shortened name may end in the middle of a word.
        if cut && words.len() > 1 {
            words.pop();
        }
        words
    };
    let (wa, wb) = (norm(a), norm(b));
    if wa.is_empty() || wb.is_empty() || wa == wb {
        return true;
    }
    let (short, long) = if wa.len() <= wb.len() {
        (&wa, &wb)
    } else {
        (&wb, &wa)
    };
    if long.starts_with(short) {
        return true;
    }
    let sa: BTreeSet<&String> = wa.iter().collect();
    let sb: BTreeSet<&String> = wb.iter().collect();
    let common = sa.intersection(&sb).count();
    let union = sa.union(&sb).count();
    common == sa.len().min(sb.len()) || common as f64 / union as f64 >= 0.5
}

/// Names given to ids in the documents of `kinds`: table rows (`| REQ-001 | Title |`) and
/// headings (`# REQ-001: Title`), as id → [(path, name)].
pub(super) fn names(
    spec: &Spec,
    kinds: &BTreeSet<Kind>,
) -> BTreeMap<String, Vec<(String, String)>> {
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut add = |id: String, path: &str, name: String| {
        // A cell that lists ids is not a name.
        if !MD.is_blank(&name) && MD.unique_ids(&name).is_empty() {
            let e = out.entry(id).or_default();
            if !e.iter().any(|(p, n)| p == path && *n == name) {
                e.push((path.to_owned(), name));
            }
        }
    };
    for k in kinds {
        for (path, text) in spec.texts_of(*k).filter(|(p, _)| p.ends_with(".md")) {
            for t in MD.tables(text) {
                let col = t.column(&["title", "goal", "component", "name"], 1);
                for row in &t.rows {
                    let Some(first) = row.first().map(|c| MD.plain(c)) else {
                        continue;
                    };
                    let Some(id) = MD
                        .unique_ids(&first)
                        .into_iter()
                        .next()
                        .filter(|i| first.starts_with(i.as_str()))
                    else {
                        continue;
                    };
                    // `G-001: Let users …` names the id in its own cell.
                    let after = first[id.len()..].trim_start();
                    let rest = after
                        .strip_prefix(':')
                        .or_else(|| after.strip_prefix('—'))
                        .map(str::trim)
                        .unwrap_or("");
                    if !rest.is_empty() {
                        add(id, path, rest.to_owned());
                    } else if let Some(cell) = col.and_then(|i| row.get(i)) {
                        add(id, path, MD.plain(cell));
                    }
                }
            }
            for h in MD.headings(text).into_iter().map(|h| h.text) {
                if let Some(id) = MD
                    .unique_ids(&h)
                    .into_iter()
                    .next()
                    .filter(|i| h.starts_with(i.as_str()))
                    && let Some(rest) = h[id.len()..].trim_start().strip_prefix(':')
                {
                    add(id, path, rest.trim().to_owned());
                }
            }
        }
    }
    out
}

pub(super) fn terminology(x: &Inputs<'_>) -> Check {
    let c = Check::new("terminology", "Terminology consistency", Group::Consistency).advise(
        "Use one name per id and one term per concept in every document; revise the document \
         that drifted",
    );
    let kinds = x.scope.kinds();
    let named = names(x.spec, &kinds);
    let mut issues: Vec<String> = Vec::new();
    for (id, list) in &named {
        let (first_path, first) = &list[0];
        for (path, name) in &list[1..] {
            if !same_name(first, name) {
                issues.push(format!(
                    "{id} is \"{first}\" in `{first_path}` but \"{name}\" in `{path}`"
                ));
            }
        }
    }
    let undefined = x.spec.undefined(&kinds);
    for (id, path) in &undefined {
        issues.push(format!(
            "{id} is named in `{path}` but defined in no document"
        ));
    }
    let mut by_doc: BTreeMap<&str, String> = BTreeMap::new();
    for list in named.values() {
        for (p, n) in list {
            let e = by_doc.entry(p.as_str()).or_default();
            e.push_str(&n.to_lowercase());
            e.push('\n');
        }
    }
    for group in SYNONYMS {
        let used: Vec<(&str, BTreeSet<&str>)> = by_doc
            .iter()
            .map(|(p, text)| {
                (
                    *p,
                    group
                        .iter()
                        .copied()
                        .filter(|t| has_term(text, t))
                        .collect::<BTreeSet<&str>>(),
                )
            })
            .filter(|(_, v)| !v.is_empty())
            .collect();
        let drift = used.iter().enumerate().find_map(|(i, (pa, va))| {
            used[i + 1..]
                .iter()
                .find(|(_, vb)| va.is_disjoint(vb))
                .map(|(pb, vb)| (pa, va, pb, vb))
        });
        if let Some((pa, va, pb, vb)) = drift {
            issues.push(format!(
                "one concept, two terms: \"{}\" in `{pa}`, \"{}\" in `{pb}`",
                va.iter().copied().collect::<Vec<_>>().join("/"),
                vb.iter().copied().collect::<Vec<_>>().join("/")
            ));
        }
    }
    if named.is_empty() && undefined.is_empty() {
        let terms = [
            Kind::Brief,
            Kind::Requirements,
            Kind::Architecture,
            Kind::Epics,
        ];
        if terms.iter().any(|k| kinds.contains(k)) {
            return c.scored(
                0.5,
                "nothing to compare: the documents in scope name no ids",
            );
        }
        return c.skipped("no document in scope defines terms");
    }
    let allowed = 2.max(named.len() / 5);
    let score = if issues.is_empty() {
        1.0
    } else if issues.len() <= allowed {
        0.5
    } else {
        0.0
    };
    let summary = if issues.is_empty() {
        format!(
            "{} ids keep one name across the documents; no undefined ids, no drifting terms",
            named.len()
        )
    } else {
        format!(
            "{} terminology issues across {} named ids",
            issues.len(),
            named.len()
        )
    };
    let mut c = c.scored(score, summary);
    c.evidence = issues;
    c
}

/// Whether `text` (lower-case) uses `term` as a word, plural allowed.
pub(super) fn has_term(text: &str, term: &str) -> bool {
    let mut from = 0;
    while let Some(at) = text[from..].find(term) {
        let start = from + at;
        let end = start + term.len();
        let before = text[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric());
        let rest = text[end..].strip_prefix('s').unwrap_or(&text[end..]);
        let after = rest.chars().next().is_none_or(|c| !c.is_alphanumeric());
        if before && after {
            return true;
        }
        from = end;
    }
    false
}
