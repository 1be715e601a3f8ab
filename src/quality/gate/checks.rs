//! The rules of the gate: consistency (§7.2), cross-document validation (§7.4) and the
//! per-phase checks (§7.3), those the builtin writer does not share too; the shared ones are
//! in `specdoc::check`. Each adds its violations, which `score` classes by the data file.

use std::collections::{BTreeMap, BTreeSet};

use super::rules::Rules;
use super::score::{key_words, nfr_addressed, overlap};
use tlv4_specdoc::audit::Spec;
use tlv4_specdoc::check::{Links, Violations, loose, plural};
use tlv4_specdoc::md::{self, GATE as MD};
use tlv4_specdoc::spec::Kind;

// --- consistency rules ----------------------------------------------------------------------

/// `frontmatter`, besides what [`tlv4_specdoc::check::frontmatter`] checks: one session id
/// across the documents.
pub(super) fn session_ids(spec: &Spec, f: &mut Violations) {
    let mut sessions: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for file in &spec.files {
        if let Some(s) = file
            .frontmatter()
            .and_then(|fm| fm.get("session_id").cloned())
            .filter(|s| !s.is_empty())
        {
            sessions.entry(s).or_default().push(&file.path);
        }
    }
    if sessions.len() > 1 {
        let (main, _) = sessions
            .iter()
            .max_by_key(|(_, files)| files.len())
            .expect("more than one entry");
        for (s, files) in &sessions {
            if s != main {
                f.add(
                    "frontmatter",
                    files[0],
                    format!(
                        "session_id `{s}` differs from `{main}` used by the other documents \
                         ({} file{})",
                        files.len(),
                        plural(files.len())
                    ),
                );
            }
        }
    }
}

/// File names, index listings, story numbering, id forms, priorities, statuses, sizes.
pub(super) fn naming_and_format(spec: &Spec, rules: &Rules, f: &mut Violations) {
    for (path, id) in &spec.unlisted {
        f.add(
            "naming",
            path,
            format!("{id} has a file but its index does not list it"),
        );
    }
    for (path, name_id, fm_id) in &spec.misnamed {
        f.add(
            "naming",
            path,
            format!("the file is named {name_id} but its frontmatter says {fm_id}"),
        );
    }
    for e in &spec.epics {
        let number = e.id.trim_start_matches("EPIC-");
        for s in &e.stories {
            if !s.id.starts_with(&format!("STORY-{number}-")) {
                f.add(
                    "naming",
                    &s.id,
                    format!(
                        "{} is in {}, so its id should start STORY-{number}-",
                        s.id, e.id
                    ),
                );
            }
        }
    }
    let mut malformed: BTreeMap<String, String> = BTreeMap::new();
    for file in &spec.files {
        let Some(text) = &file.text else { continue };
        for id in md::malformed_ids(text) {
            malformed.entry(id).or_insert_with(|| file.path.clone());
        }
        if let (Some(id), true) = (&file.id, file.part.is_item()) {
            let name = file.path.rsplit('/').next().unwrap_or(&file.path);
            let slug = name
                .strip_prefix(id.as_str())
                .and_then(|r| r.strip_suffix(".md"))
                .unwrap_or("");
            let kebab = slug.strip_prefix('-').is_some_and(|s| {
                !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            });
            if !kebab {
                f.add(
                    "format",
                    &file.path,
                    format!("the file name is not `{id}-<kebab-slug>.md`"),
                );
            }
        }
    }
    for (id, path) in malformed {
        let hint = if id.starts_with("FR-") {
            "; requirements are REQ-NNN"
        } else {
            "; ids have three digits"
        };
        f.add("format", &path, format!("uses the id `{id}`{hint}"));
    }
    let moscow = |p: &str| {
        matches!(
            md::norm(p).trim_matches(['[', ']']),
            "must" | "should" | "could" | "won't" | "wont"
        )
    };
    for e in &spec.epics {
        if let Some(p) = e.priority.as_deref().filter(|p| !moscow(p)) {
            f.add(
                "format",
                &e.id,
                format!("priority `{p}` is not Must, Should, Could or Won't"),
            );
        }
        if let Some(s) = e
            .size
            .as_deref()
            .filter(|s| !rules.depth.sizes.iter().any(|z| z == s))
        {
            f.add("format", &e.id, format!("size `{s}` is not S, M, L or XL"));
        }
        for s in &e.stories {
            if let Some(z) = s
                .size
                .as_deref()
                .filter(|z| !rules.depth.sizes.iter().any(|x| x == z))
            {
                f.add("format", &s.id, format!("size `{z}` is not S, M, L or XL"));
            }
        }
    }
    for a in &spec.adrs {
        if let Some(s) = a.status.as_deref().filter(|s| {
            !matches!(
                md::norm(s).as_str(),
                "accepted" | "proposed" | "superseded" | "deprecated" | "rejected"
            )
        }) {
            f.add(
                "format",
                &a.id,
                format!("status `{s}` is not Accepted or Proposed"),
            );
        }
    }
}

/// One title, the same item names and priorities in index and file, the brief's personas.
pub(super) fn terminology(spec: &Spec, rules: &Rules, f: &mut Violations) {
    // One title for the four documents.
    let titles: Vec<(Kind, String)> = Kind::SPEC
        .iter()
        .filter_map(|d| Some((*d, MD.title(spec.index_text(*d)?)?)))
        .collect();
    if let Some((first, title)) = titles.first() {
        for (doc, t) in &titles[1..] {
            if loose(t) != loose(title) {
                f.add(
                    "terminology",
                    doc.index(),
                    format!(
                        "the title \"{t}\" differs from the {}'s \"{title}\"",
                        first.name()
                    ),
                );
            }
        }
    }
    // Item names and priorities agree between an index and the item's file.
    let mut pair = |id: &str, what: &str, a: Option<&str>, b: Option<&str>| {
        if let (Some(a), Some(b)) = (a, b)
            && loose(a) != loose(b)
        {
            f.add(
                "terminology",
                id,
                format!("its {what} is \"{a}\" in the index but \"{b}\" in its file"),
            );
        }
    };
    for r in &spec.requirements {
        pair(
            &r.id,
            "title",
            r.index_title.as_deref(),
            r.file_title.as_deref(),
        );
        pair(
            &r.id,
            "priority",
            r.index_priority.as_deref(),
            r.priority.as_deref(),
        );
    }
    for a in &spec.adrs {
        pair(
            &a.id,
            "title",
            a.index_title.as_deref(),
            a.file_title.as_deref(),
        );
    }
    for e in &spec.epics {
        pair(
            &e.id,
            "title",
            e.index_title.as_deref(),
            e.file_title.as_deref(),
        );
    }
    // The personas of the brief are the roles of the user stories.
    if spec.personas.is_empty() {
        return;
    }
    let persona_words: BTreeSet<String> = spec
        .personas
        .iter()
        .flat_map(|p| key_words(rules, p))
        .collect();
    let mut roles: BTreeMap<String, String> = BTreeMap::new();
    for r in &spec.requirements {
        if let Some(role) = tlv4_specdoc::audit::role_of(&r.user_story) {
            roles.entry(role).or_insert_with(|| r.id.clone());
        }
    }
    for (_, s) in spec.stories() {
        if let Some(role) = &s.role {
            roles.entry(role.clone()).or_insert_with(|| s.id.clone());
        }
    }
    for (role, at) in roles {
        let words = key_words(rules, &role);
        if !words.is_empty() && !words.iter().any(|w| persona_words.contains(w)) {
            f.add(
                "terminology",
                &at,
                format!(
                    "the user story's role \"{role}\" is none of the brief's users ({})",
                    spec.personas.join(", ")
                ),
            );
        }
    }
}

/// Ids that relate the same way everywhere: traces, matrices, epic requirements, counts.
pub(super) fn id_agreement(spec: &Spec, f: &mut Violations) {
    let set = |v: &[String]| v.iter().cloned().collect::<BTreeSet<String>>();
    let show = |s: &BTreeSet<String>| {
        if s.is_empty() {
            "nothing".to_owned()
        } else {
            s.iter().cloned().collect::<Vec<_>>().join(", ")
        }
    };
    for r in &spec.requirements {
        if let Some(index) = &r.index_traces
            && !index.is_empty()
            && !r.traces.is_empty()
            && set(index) != set(&r.traces)
        {
            f.add(
                "id-agreement",
                &r.id,
                format!(
                    "the index traces it to {} but its file to {}",
                    show(&set(index)),
                    show(&set(&r.traces))
                ),
            );
        }
    }
    for (goal, listed) in &spec.goal_matrix {
        let actual: BTreeSet<String> = spec
            .requirements
            .iter()
            .filter(|r| r.goals().contains(goal))
            .map(|r| r.id.clone())
            .collect();
        let listed = set(listed);
        if listed != actual {
            f.add(
                "id-agreement",
                goal,
                format!(
                    "the requirements traceability matrix lists {} for it, but {} trace to it",
                    show(&listed),
                    show(&actual)
                ),
            );
        }
    }
    for a in &spec.adrs {
        if let Some(index) = &a.index_traces
            && !index.is_empty()
            && !a.traces.is_empty()
            && set(index) != set(&a.traces)
        {
            f.add(
                "id-agreement",
                &a.id,
                format!(
                    "the index traces it to {} but its file to {}",
                    show(&set(index)),
                    show(&set(&a.traces))
                ),
            );
        }
    }
    for e in &spec.epics {
        let traced: BTreeSet<String> = e
            .stories
            .iter()
            .flat_map(|s| s.traces.iter().cloned())
            .collect();
        let listed = set(&e.requirements);
        let unlisted: BTreeSet<String> = traced.difference(&listed).cloned().collect();
        let undelivered: BTreeSet<String> = listed.difference(&traced).cloned().collect();
        if e.path.is_some() && !unlisted.is_empty() {
            f.add(
                "id-agreement",
                &e.id,
                format!(
                    "its stories trace {} but its `requirements` do not list them",
                    show(&unlisted)
                ),
            );
        }
        if !undelivered.is_empty() && !e.stories.is_empty() {
            f.add(
                "id-agreement",
                &e.id,
                format!(
                    "its `requirements` list {} but none of its stories traces them",
                    show(&undelivered)
                ),
            );
        }
        if let (Some(n), Some(_)) = (e.index_stories, &e.path)
            && n != e.stories.len()
        {
            f.add(
                "id-agreement",
                &e.id,
                format!(
                    "the index counts {n} stories but its file has {}",
                    e.stories.len()
                ),
            );
        }
    }
    for (req, listed) in &spec.requirement_matrix {
        let actual: BTreeSet<String> = spec
            .stories()
            .filter(|(_, s)| s.traces.contains(req))
            .map(|(e, _)| e.id.clone())
            .collect();
        let listed = set(listed);
        if listed != actual {
            f.add(
                "id-agreement",
                req,
                format!(
                    "the epics traceability matrix gives {} for it, but the stories of {} trace it",
                    show(&listed),
                    show(&actual)
                ),
            );
        }
    }
}

// --- cross-document rules (§7.4) ------------------------------------------------------------

/// The cross-document rules (§7.4) besides the links of the traceability chain
/// ([`tlv4_specdoc::check::links`]): whether the goals' metrics and the non-functional
/// requirements are carried downstream; a rule whose documents are missing is skipped.
pub(super) fn cross_document(
    spec: &Spec,
    rules: &Rules,
    f: &mut Violations,
    skipped: &mut Vec<&'static str>,
) {
    let links = Links::of(spec);
    let reqs = spec.has(Kind::Requirements);
    let arch = spec.has(Kind::Architecture);
    let epics = spec.has(Kind::Epics);
    let mut check = |rule, needed| tlv4_specdoc::check::applies(skipped, rule, needed);
    if check("metric-criteria", spec.has(Kind::Brief) && epics) {
        for g in &spec.goals {
            let metric = format!("{} {}", g.metric, g.target);
            let want = key_words(rules, &metric);
            if want.is_empty() {
                continue;
            }
            let reqs: BTreeSet<String> = links
                .requirements_of(spec, &g.id)
                .into_iter()
                .map(|r| r.id.clone())
                .collect();
            let criteria: Vec<&String> = spec
                .stories()
                .filter(|(_, s)| s.traces.iter().any(|t| reqs.contains(t)))
                .flat_map(|(_, s)| s.criteria.iter())
                .collect();
            let hit = criteria
                .iter()
                .any(|c| overlap(&want, &key_words(rules, c)) >= rules.coverage.metric_overlap);
            if !hit {
                f.add(
                    "metric-criteria",
                    &g.id,
                    format!(
                        "no acceptance criterion of its stories checks the metric \"{}\"",
                        g.metric
                    ),
                );
            }
        }
    }
    if check("nfr-addressed", reqs && (arch || epics)) {
        for r in spec.requirements.iter().filter(|r| !r.functional) {
            if !nfr_addressed(spec, &links, &r.id) {
                f.add(
                    "nfr-addressed",
                    &r.id,
                    format!(
                        "no decision, component or story addresses {} \"{}\"",
                        r.id,
                        r.title()
                    ),
                );
            }
        }
    }
}

// --- per-phase gates (§7.3) -----------------------------------------------------------------

/// Whether a table cell holds no real value.
pub(super) fn is_empty_cell(rules: &Rules, cell: &str) -> bool {
    let c = md::norm(cell);
    rules.depth.empty_cells.contains(&c)
}

/// `goal-metric`: every goal of the brief has a success metric and a target.
fn goal_metrics(spec: &Spec, rules: &Rules, f: &mut Violations) {
    for g in &spec.goals {
        let mut lacks = Vec::new();
        if is_empty_cell(rules, &g.metric) {
            lacks.push("a success metric");
        }
        if is_empty_cell(rules, &g.target) {
            lacks.push("a target");
        }
        if !lacks.is_empty() {
            f.add(
                "goal-metric",
                &g.id,
                format!("{} lacks {}", g.id, lacks.join(" and ")),
            );
        }
    }
}

/// The per-phase checks (§7.3) besides what each item must hold
/// ([`tlv4_specdoc::check::items`]).
pub(super) fn phase_checks(spec: &Spec, rules: &Rules, f: &mut Violations) {
    goal_metrics(spec, rules, f);
    let moscow = |p: &str| {
        matches!(
            md::norm(p).trim_matches(['[', ']']),
            "must" | "should" | "could" | "won't" | "wont"
        )
    };
    for r in &spec.requirements {
        match r.moscow() {
            None => f.add("moscow", &r.id, format!("{} has no priority", r.id)),
            Some(p) if !moscow(p) => f.add(
                "moscow",
                &r.id,
                format!("{} has priority `{p}`, which is not MoSCoW", r.id),
            ),
            Some(_) => {}
        }
    }
    if spec.has(Kind::Requirements) {
        let categories: BTreeSet<&str> = spec
            .requirements
            .iter()
            .filter(|r| !r.functional)
            .filter_map(|r| {
                let c = md::norm(&r.category);
                if c.starts_with("perf") || r.id.starts_with("NFR-P-") {
                    Some("performance")
                } else if c.starts_with("secur") || r.id.starts_with("NFR-S-") {
                    Some("security")
                } else if c.starts_with("scal") || r.id.starts_with("NFR-SC-") {
                    Some("scalability")
                } else {
                    None
                }
            })
            .collect();
        let missing: Vec<&str> = ["performance", "security", "scalability"]
            .into_iter()
            .filter(|c| !categories.contains(c))
            .collect();
        if !missing.is_empty() {
            f.add(
                "nfr-categories",
                Kind::Requirements.index(),
                format!(
                    "no non-functional requirement covers {}",
                    missing.join(", ")
                ),
            );
        }
    }
    if spec.has(Kind::Epics) {
        let r = rules.rule("epic-count");
        let (lo, hi) = (r.min.unwrap_or(2), r.max.unwrap_or(8));
        let n = spec.epics.len();
        if n < lo || n > hi {
            f.add(
                "epic-count",
                Kind::Epics.index(),
                format!("the spec has {n} epic{}; {lo}-{hi} are expected", plural(n)),
            );
        }
        if !spec.epics.iter().any(|e| e.mvp) {
            f.add("mvp", Kind::Epics.index(), "no epic is marked MVP".into());
        }
    }
    let r = rules.rule("story-count");
    let (lo, hi) = (r.min.unwrap_or(3), r.max.unwrap_or(12));
    for e in spec.epics.iter().filter(|e| e.path.is_some()) {
        let n = e.stories.len();
        if n < lo || n > hi {
            f.add(
                "story-count",
                &e.id,
                format!(
                    "{} has {n} stor{}; {lo}-{hi} are expected",
                    e.id,
                    if n == 1 { "y" } else { "ies" }
                ),
            );
        }
    }
}
