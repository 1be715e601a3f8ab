//! The rules of the gate: consistency (§7.2), cross-document validation (§7.4) and the
//! per-phase checks (§7.3). Each violation is one [`Finding`] with its rule's class.

use std::collections::{BTreeMap, BTreeSet};

use super::rules::{Rules, Severity};
use super::score::{Finding, Links, frontmatter_keys, key_words, nfr_addressed, overlap, plural};
use super::spec::Spec;
use crate::specdoc::md::{self, GATE as MD};
use crate::specdoc::spec::Kind;

/// Collects findings with their rule's class.
pub struct Findings<'r> {
    pub rules: &'r Rules,
    pub out: Vec<Finding>,
}

impl Findings<'_> {
    pub fn add(&mut self, rule: &'static str, place: &str, message: String) {
        let severity = self.rules.rule(rule).severity;
        self.push(rule, severity, place, message);
    }

    /// A finding about a requirement: a Must requirement gets the rule's `must_severity`.
    pub fn add_req(&mut self, rule: &'static str, must: bool, place: &str, message: String) {
        let r = self.rules.rule(rule);
        let severity = match (must, r.must_severity) {
            (true, Some(s)) => s,
            _ => r.severity,
        };
        self.push(rule, severity, place, message);
    }

    fn push(&mut self, rule: &'static str, severity: Severity, place: &str, message: String) {
        let f = Finding {
            rule,
            severity,
            place: place.to_owned(),
            message,
        };
        if !self.out.contains(&f) {
            self.out.push(f);
        }
    }
}

// --- consistency rules ----------------------------------------------------------------------

/// Frontmatter: present, with its keys, and one session id across the documents.
pub fn frontmatter(spec: &Spec, rules: &Rules, f: &mut Findings) {
    let mut sessions: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for file in &spec.files {
        let Some(text) = &file.text else { continue };
        let Some(fm) = MD.frontmatter(text) else {
            f.add("frontmatter", &file.path, "has no frontmatter".into());
            continue;
        };
        let missing: Vec<&str> = frontmatter_keys(rules, file.part)
            .iter()
            .filter(|k| fm.get(*k).is_none_or(|v| v.is_empty()))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            f.add(
                "frontmatter",
                &file.path,
                format!("frontmatter lacks {}", missing.join(", ")),
            );
        }
        if let Some(s) = fm.get("session_id").filter(|s| !s.is_empty()) {
            sessions.entry(s.clone()).or_default().push(&file.path);
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

/// Every id the spec defines.
fn defined(spec: &Spec) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    out.extend(spec.goals.iter().map(|g| g.id.clone()));
    out.extend(spec.requirements.iter().map(|r| r.id.clone()));
    out.extend(spec.components.iter().map(|c| c.id.clone()));
    out.extend(spec.adrs.iter().map(|a| a.id.clone()));
    out.extend(spec.epics.iter().map(|e| e.id.clone()));
    out.extend(spec.stories().map(|(_, s)| s.id.clone()));
    out
}

/// Broken references, dangling links, listed files that are missing, duplicate ids.
pub fn references(spec: &Spec, f: &mut Findings) {
    let known = defined(spec);
    let mut unknown: BTreeMap<String, String> = BTreeMap::new();
    for file in &spec.files {
        let Some(text) = &file.text else { continue };
        for id in MD.ids(text) {
            if !known.contains(&id) {
                unknown.entry(id).or_insert_with(|| file.path.clone());
            }
        }
    }
    for (id, path) in unknown {
        f.add(
            "reference",
            &path,
            format!("names {id}, which no document defines"),
        );
    }
    for (index, target) in &spec.dangling_links {
        f.add(
            "reference",
            index,
            format!("links `{target}`, which does not exist"),
        );
    }
    for file in spec.files.iter().filter(|x| x.part.is_item()) {
        let id = file.id.as_deref().unwrap_or("an item");
        // A dangling link of the same item already says so.
        let linked = spec
            .dangling_links
            .iter()
            .any(|(_, target)| target.rsplit('/').next().is_some_and(|n| n.starts_with(id)));
        if file.text.is_none() && !linked {
            f.add(
                "reference",
                file.doc.index(),
                format!("lists {id}, but its file is missing"),
            );
        }
    }
    for (id, place) in &spec.duplicates {
        f.add(
            "unique-id",
            place,
            format!("{id} is defined more than once"),
        );
    }
}

/// File names, index listings, story numbering, id forms, priorities, statuses, sizes.
pub fn naming_and_format(spec: &Spec, rules: &Rules, f: &mut Findings) {
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

/// `text` reduced for a loose comparison of names.
fn loose(text: &str) -> String {
    md::words(&md::plain(text)).join(" ")
}

/// One title, the same item names and priorities in index and file, the brief's personas.
pub fn terminology(spec: &Spec, rules: &Rules, f: &mut Findings) {
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
        if let Some(role) = super::spec::role_of(&r.user_story) {
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
pub fn id_agreement(spec: &Spec, f: &mut Findings) {
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

/// The cross-document rules (§7.4); a rule whose documents are missing is skipped.
pub fn cross_document(
    spec: &Spec,
    rules: &Rules,
    f: &mut Findings,
    skipped: &mut Vec<&'static str>,
) {
    let links = Links::of(spec);
    let brief = spec.has(Kind::Brief);
    let reqs = spec.has(Kind::Requirements);
    let arch = spec.has(Kind::Architecture);
    let epics = spec.has(Kind::Epics);
    let mut check = |rule: &'static str, needed: bool| {
        if !needed {
            skipped.push(rule);
        }
        needed
    };
    if check("goal-requirement", brief && reqs) {
        for g in &spec.goals {
            if links.requirements_of(spec, &g.id).is_empty() {
                f.add(
                    "goal-requirement",
                    &g.id,
                    format!("no requirement traces to {} \"{}\"", g.id, g.text),
                );
            }
        }
    }
    if check("requirement-component", reqs && arch) {
        for r in spec.requirements.iter().filter(|r| r.functional) {
            if !links.has_component(&r.id) {
                f.add_req(
                    "requirement-component",
                    r.is_must(),
                    &r.id,
                    format!("no component implements {} \"{}\"", r.id, r.title()),
                );
            }
        }
    }
    if check("requirement-story", reqs && epics) {
        for r in spec.requirements.iter().filter(|r| r.functional) {
            if !links.has_story(&r.id) {
                f.add_req(
                    "requirement-story",
                    r.is_must(),
                    &r.id,
                    format!("no story traces {} \"{}\"", r.id, r.title()),
                );
            }
        }
    }
    if check("component-story", arch && epics) {
        for c in &spec.components {
            let by_req = c.implements.iter().any(|r| links.has_story(r));
            let by_name = spec.stories().any(|(_, s)| {
                s.component.as_deref().is_some_and(|line| {
                    MD.ids(line).contains(&c.id) || loose(line).contains(&loose(&c.name))
                })
            });
            if !by_req && !by_name {
                f.add(
                    "component-story",
                    &c.id,
                    format!("no story implements {} \"{}\"", c.id, c.name),
                );
            }
        }
    }
    if check("metric-criteria", brief && epics) {
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
    if check("adr-requirement", arch) {
        for a in &spec.adrs {
            if !a
                .requirements()
                .iter()
                .any(|r| spec.requirement(r).is_some())
            {
                f.add(
                    "adr-requirement",
                    &a.id,
                    format!("{} \"{}\" traces to no known requirement", a.id, a.title()),
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
pub fn is_empty_cell(rules: &Rules, cell: &str) -> bool {
    let c = md::norm(cell);
    rules.depth.empty_cells.contains(&c)
}

/// `goal-metric`: every goal of the brief has a success metric and a target.
fn goal_metrics(spec: &Spec, rules: &Rules, f: &mut Findings) {
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

/// The per-phase checks (§7.3).
pub fn phase_checks(spec: &Spec, rules: &Rules, f: &mut Findings) {
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
        if r.functional && r.path.is_some() && r.criteria.is_empty() {
            f.add_req(
                "acceptance-criteria",
                r.is_must(),
                &r.id,
                format!("{} has no `- [ ]` acceptance criteria", r.id),
            );
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
    if spec.has(Kind::Architecture) && spec.adrs.is_empty() {
        f.add(
            "adr-count",
            Kind::Architecture.index(),
            "the architecture records no decision (ADR)".into(),
        );
    }
    let min_alts = rules.rule("adr-alternatives").min.unwrap_or(2);
    for a in spec.adrs.iter().filter(|a| a.path.is_some()) {
        if a.alternatives.len() < min_alts {
            f.add(
                "adr-alternatives",
                &a.id,
                format!(
                    "{} weighs {} option{}; at least {min_alts} are expected",
                    a.id,
                    a.alternatives.len(),
                    plural(a.alternatives.len())
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
    for (_, s) in spec.stories() {
        let mut lacks = Vec::new();
        if s.user_story.is_none() {
            lacks.push("a user story");
        }
        if s.criteria.is_empty() {
            lacks.push("acceptance criteria");
        }
        if s.size.is_none() {
            lacks.push("a size");
        }
        if s.traces.is_empty() {
            lacks.push("traces to a requirement");
        }
        if !lacks.is_empty() {
            f.add(
                "story-format",
                &s.id,
                format!("{} has no {}", s.id, lacks.join(", ")),
            );
        }
    }
}
