//! The checks of a checkpoint. Each looks at one property of the work in scope, scores it
//! pass 1.0, warn 0.5 or fail 0.0 (or is not applicable), and says why with evidence a person
//! can follow: paths, ids, task ids, event and message counts.

mod phases;
mod terms;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use super::history::{History, Scope, corpus, present};
use crate::agents::TaskInput;
use tlv4_specdoc::md::CHECKPOINT as MD;
use tlv4_specdoc::spec::{self, Kind, Spec};

use phases::{
    alignment, complexity, dependencies, open_questions, plan_coverage, scope_consistency,
};
#[cfg(test)]
pub(super) use terms::same_name;
use terms::terminology;

/// Where a check is listed in the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Group {
    /// Do the documents agree with each other?
    Consistency,
    /// Did the process leave what it should?
    Process,
    /// Did the tasks run cleanly?
    Health,
}

impl Group {
    /// Every group, in report order.
    pub(super) const ALL: [Group; 3] = [Group::Consistency, Group::Process, Group::Health];

    /// The report heading.
    pub(super) fn title(self) -> &'static str {
        match self {
            Group::Consistency => "Consistency",
            Group::Process => "Process Compliance",
            Group::Health => "Execution Health",
        }
    }
}

/// The result of one check.
#[derive(Debug, Clone)]
pub(super) struct Check {
    /// Short key (`terminology`).
    pub key: &'static str,
    /// Its name in the report.
    pub name: &'static str,
    /// Its report group.
    pub group: Group,
    /// 1.0, 0.5 or 0.0; `None` when it does not apply to this scope.
    pub score: Option<f64>,
    /// One line: what was found.
    pub summary: String,
    /// What shows it.
    pub evidence: Vec<String>,
    /// What to do when it is weak.
    pub advice: String,
}

impl Check {
    fn new(key: &'static str, name: &'static str, group: Group) -> Check {
        Check {
            key,
            name,
            group,
            score: None,
            summary: String::new(),
            evidence: Vec::new(),
            advice: String::new(),
        }
    }

    fn scored(mut self, score: f64, summary: impl Into<String>) -> Check {
        self.score = Some(score);
        self.summary = summary.into();
        self
    }

    fn skipped(mut self, summary: impl Into<String>) -> Check {
        self.score = None;
        self.summary = summary.into();
        self
    }

    fn advise(mut self, advice: impl Into<String>) -> Check {
        self.advice = advice.into();
        self
    }

    /// `pass`, `warn`, `fail` or `n/a`.
    pub(super) fn result(&self) -> &'static str {
        match self.score {
            None => "n/a",
            Some(s) if s >= 1.0 => "pass",
            Some(s) if s >= 0.5 => "warn",
            Some(_) => "fail",
        }
    }
}

/// Everything the checks read.
pub(super) struct Inputs<'a> {
    /// The checkpoint task's input.
    pub input: &'a TaskInput,
    /// The tasks looked back on.
    pub scope: &'a Scope,
    /// The documents of the folder.
    pub spec: &'a Spec,
    /// State, events and messages.
    pub history: &'a History,
}

/// Runs every check that belongs to this checkpoint, trend excepted.
pub(super) fn run(x: &Inputs<'_>) -> Vec<Check> {
    let mut out = vec![
        terminology(x),
        upstream(x),
        artifacts(x),
        decisions(x),
        health(x),
    ];
    let direct = x.scope.direct_kinds();
    if direct.contains(&Kind::Requirements) {
        out.push(scope_consistency(x));
    }
    if direct.contains(&Kind::Epics) {
        out.push(alignment(x));
        out.push(open_questions(x));
    }
    if direct.contains(&Kind::Plan) {
        out.push(plan_coverage(x));
        out.push(complexity(x));
        out.push(dependencies(x));
    }
    out
}

/// Score of a share of good items: all → 1.0, at least `half` → 0.5, else 0.0.
fn by_share(share: f64, half: f64) -> f64 {
    if share >= 0.999 {
        1.0
    } else if share >= half {
        0.5
    } else {
        0.0
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

fn join(list: &[String], max: usize) -> String {
    if list.len() <= max {
        list.join(", ")
    } else {
        format!("{} and {} more", list[..max].join(", "), list.len() - max)
    }
}

// ---------------------------------------------------------------------------------------
// Artifacts exist.

fn artifacts(x: &Inputs<'_>) -> Check {
    let c = Check::new("artifacts", "Artifacts exist", Group::Process).advise(
        "Re-run or revise the task whose artifact is missing; later tasks cannot build on it",
    );
    // Each EXPECTED path is one artifact; a reported file outside them counts only when it
    // has gone missing since.
    let mut total = 0usize;
    let mut missing = Vec::new();
    let mut found = Vec::new();
    for t in &x.scope.tasks {
        for p in &t.expected {
            total += 1;
            if present(&x.input.folder, p) {
                found.push(format!("{} `{p}`", t.id));
            } else {
                missing.push(format!("{} `{p}`", t.id));
            }
        }
        for r in &t.reported {
            let covered = t
                .expected
                .iter()
                .any(|e| e == r || (e.ends_with('/') && r.starts_with(e.as_str())));
            if !covered && !present(&x.input.folder, r) {
                total += 1;
                missing.push(format!("{} `{r}` (reported)", t.id));
            }
        }
    }
    if total == 0 {
        let why = if x.history.state.is_none() {
            "the session state is unreadable, so the expected artifacts are unknown"
        } else {
            "no task in scope names an artifact"
        };
        return c.skipped(why);
    }
    let share = found.len() as f64 / total as f64;
    let mut c = c.scored(
        by_share(share, 0.5),
        format!("{} of {total} expected artifacts present", found.len()),
    );
    if !missing.is_empty() {
        c.evidence.push(format!("missing: {}", missing.join(", ")));
    }
    if !found.is_empty() {
        c.evidence.push(format!("present: {}", found.join(", ")));
    }
    c
}

// ---------------------------------------------------------------------------------------
// Upstream consumed.

fn upstream(x: &Inputs<'_>) -> Check {
    let c = Check::new("upstream", "Upstream consumed", Group::Consistency).advise(
        "Revise the document that does not reference its upstream so that every goal, \
         requirement and decision it builds on is named by id",
    );
    let s = x.spec;
    let mut links: Vec<(String, f64, String)> = Vec::new();
    let mut link = |down: Kind, up: Kind, measure: &dyn Fn() -> (f64, String)| {
        if !(x.scope.has(down) && x.scope.has(up)) {
            return;
        }
        let name = format!("{} ← {}", down.name(), up.name());
        let (share, detail) = if !s.has(down) {
            (0.0, format!("no {} in the folder", down.name()))
        } else if !s.has(up) {
            (0.0, format!("no {} in the folder", up.name()))
        } else {
            measure()
        };
        links.push((name, share, detail));
    };
    link(Kind::Brief, Kind::Discovery, &|| {
        let named = s
            .brief
            .as_ref()
            .is_some_and(|b| b.dependencies.iter().any(|d| d.contains("discovery")))
            || s.texts_of(Kind::Brief).any(|(_, t)| {
                t.contains("discovery-context") || t.to_lowercase().contains("discovery context")
            });
        if named {
            (1.0, "the brief names the discovery context".into())
        } else {
            (0.0, "the brief does not name the discovery context".into())
        }
    });
    let share_of = |wanted: BTreeSet<String>, down: Kind, what: &str| -> (f64, String) {
        if wanted.is_empty() {
            return (0.0, format!("there are no {what} to reference"));
        }
        let named = s.ids_in(down);
        let missing: Vec<String> = wanted
            .iter()
            .filter(|i| !named.contains(*i))
            .cloned()
            .collect();
        let share = (wanted.len() - missing.len()) as f64 / wanted.len() as f64;
        let mut detail = format!(
            "{} of {} {what} referenced",
            wanted.len() - missing.len(),
            wanted.len()
        );
        if !missing.is_empty() {
            detail.push_str(&format!("; not: {}", join(&missing, 8)));
        }
        (share, detail)
    };
    let functional = || -> BTreeSet<String> {
        let r = s.requirements.as_ref();
        let f: BTreeSet<String> = r
            .iter()
            .flat_map(|r| r.functional.iter().map(|q| q.id.clone()))
            .collect();
        if f.is_empty() {
            s.defined(Kind::Requirements)
        } else {
            f
        }
    };
    link(Kind::Requirements, Kind::Brief, &|| {
        share_of(s.defined(Kind::Brief), Kind::Requirements, "goals")
    });
    link(Kind::Architecture, Kind::Requirements, &|| {
        share_of(functional(), Kind::Architecture, "functional requirements")
    });
    link(Kind::Epics, Kind::Requirements, &|| {
        share_of(functional(), Kind::Epics, "functional requirements")
    });
    link(Kind::Epics, Kind::Architecture, &|| {
        let named: Vec<String> = s
            .ids_in(Kind::Epics)
            .intersection(&s.defined(Kind::Architecture))
            .cloned()
            .collect();
        if named.is_empty() {
            (
                0.0,
                "the epics name no component or decision of the architecture".into(),
            )
        } else {
            (1.0, format!("the epics name {}", join(&named, 6)))
        }
    });
    for up in [Kind::Epics, Kind::Architecture, Kind::Requirements] {
        if x.scope.has(up) {
            link(Kind::Plan, up, &|| {
                let named: Vec<String> = s
                    .ids_in(Kind::Plan)
                    .intersection(&s.defined(up))
                    .cloned()
                    .collect();
                if named.is_empty() {
                    (0.0, format!("the plan names no id of the {}", up.name()))
                } else {
                    (1.0, format!("the plan names {}", join(&named, 6)))
                }
            });
            break;
        }
    }
    if links.is_empty() {
        return c.skipped("no document in scope builds on another");
    }
    let worst = links.iter().map(|l| l.1).fold(1.0, f64::min);
    let weak: Vec<&str> = links
        .iter()
        .filter(|l| l.1 < 0.999)
        .map(|l| l.0.as_str())
        .collect();
    let summary = if weak.is_empty() {
        format!(
            "every document in scope references its upstream ({} links)",
            links.len()
        )
    } else {
        format!(
            "{} of {} links incomplete: {}",
            weak.len(),
            links.len(),
            weak.join("; ")
        )
    };
    let mut c = c.scored(by_share(worst, 0.5), summary);
    c.evidence = links
        .iter()
        .map(|(name, share, detail)| format!("{name}: {:.0}% — {detail}", share * 100.0))
        .collect();
    c
}

// ---------------------------------------------------------------------------------------
// Decision chain.

const STOP: &[&str] = &[
    "about",
    "after",
    "also",
    "been",
    "before",
    "does",
    "each",
    "feedback",
    "from",
    "have",
    "into",
    "logged",
    "more",
    "must",
    "only",
    "other",
    "revision",
    "revisions",
    "routed",
    "should",
    "than",
    "that",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "very",
    "were",
    "what",
    "when",
    "which",
    "will",
    "with",
    "would",
    "your",
    "attached",
    "wisdom",
    "decisions",
    "started",
    "implementation",
    "which",
    "has",
    "not",
    "run",
    "yet",
];

fn keywords(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in text.to_lowercase().split(|c: char| !c.is_alphanumeric()) {
        if w.chars().count() >= 4
            && !STOP.contains(&w)
            && !w.chars().all(|c| c.is_ascii_digit())
            && !out.iter().any(|o| o == w)
        {
            out.push(w.to_owned());
        }
    }
    out
}

static TASK_ID: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"\b[A-Z][A-Z0-9]*-[0-9]{3}(?:-R[0-9]+)?\b").expect("a valid regex")
});

fn decisions(x: &Inputs<'_>) -> Check {
    let c = Check::new("decisions", "Decision chain", Group::Process).advise(
        "Make every task publish its decisions (state_update) and carry each recorded decision \
         and piece of feedback into the documents that follow",
    );
    let h = x.history;
    let mut ok: Vec<String> = Vec::new();
    let mut weak: Vec<String> = Vec::new();
    let mut broken: Vec<String> = Vec::new();
    let mut published = String::new();
    for t in x.scope.tasks.iter().filter(|t| t.id != x.input.task.id) {
        match h.state_update(t.id.as_str()) {
            Some(u) => {
                let ds: Vec<&str> = u["decisions"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|d| d.as_str()).collect())
                    .unwrap_or_default();
                for d in &ds {
                    published.push_str(d);
                    published.push('\n');
                }
                if ds.is_empty() {
                    weak.push(format!(
                        "{} published a state update without decisions",
                        t.id
                    ));
                } else {
                    ok.push(format!(
                        "{} published {}",
                        t.id,
                        plural(ds.len(), "decision")
                    ));
                }
            }
            None => {
                let has_artifact = t
                    .expected
                    .iter()
                    .chain(&t.reported)
                    .any(|p| present(&x.input.folder, p));
                if has_artifact {
                    weak.push(format!(
                        "{} has no state update on the bus; its artifact stands in for it",
                        t.id
                    ));
                } else {
                    broken.push(format!(
                        "{} has neither a state update nor an artifact",
                        t.id
                    ));
                }
            }
        }
    }
    let scope_ids: BTreeSet<String> = x.scope.tasks.iter().map(|t| t.id.to_string()).collect();
    let base = |id: &str| id.split("-R").next().unwrap_or(id).to_owned();
    let scope_bases: BTreeSet<String> = scope_ids.iter().map(|i| base(i)).collect();
    let text = corpus(x.spec, &x.scope.kinds()).to_lowercase() + &published.to_lowercase();
    if let Some(log) = x.input.folder_text("wisdom/decisions.md") {
        for line in log.lines().filter_map(|l| l.trim().strip_prefix("- ")) {
            let named: Vec<String> = TASK_ID.find_iter(line).map(|m| base(m.as_str())).collect();
            if !named.is_empty() && !named.iter().any(|n| scope_bases.contains(n)) {
                continue;
            }
            // The coordinator's note on where feedback went, and task ids, are not its content.
            let body = match line.rfind("(feedback ") {
                Some(at) => &line[..at],
                None => line,
            };
            let words = keywords(&TASK_ID.replace_all(body, " "));
            if words.is_empty() {
                continue;
            }
            let found = words.iter().filter(|w| text.contains(w.as_str())).count();
            let short: String = line.chars().take(80).collect();
            if found * 2 >= words.len() {
                ok.push(format!("carried forward: \"{short}\""));
            } else {
                weak.push(format!(
                    "not carried forward ({found} of {} key words found): \"{short}\"",
                    words.len()
                ));
            }
        }
    }
    let total = ok.len() + weak.len() + broken.len();
    if h.messages.as_ref().is_none_or(|m| m.is_empty()) && broken.is_empty() {
        let mut c = c.scored(
            0.5,
            "the message bus is empty: decisions cannot be followed",
        );
        c.evidence = weak.into_iter().chain(ok).collect();
        return c;
    }
    if total == 0 {
        return c.scored(0.5, "nothing recorded to follow");
    }
    let score = if weak.is_empty() && broken.is_empty() {
        1.0
    } else if broken.len() * 2 >= total {
        0.0
    } else {
        0.5
    };
    let summary = format!(
        "{} of {total} links in the decision chain hold{}",
        ok.len(),
        if broken.is_empty() {
            String::new()
        } else {
            format!(", {} broken", broken.len())
        }
    );
    let mut c = c.scored(score, summary);
    c.evidence = broken.into_iter().chain(weak).chain(ok).collect();
    c
}

// ---------------------------------------------------------------------------------------
// Execution health: error and retry patterns.

/// A role with this many failures and error messages fails the check.
const ROLE_ERRORS: usize = 3;

fn health(x: &Inputs<'_>) -> Check {
    let c = Check::new("health", "Error and retry patterns", Group::Health).advise(
        "Look at the failed attempts (`git tlv4 log`) and the errors on the bus (`git tlv4 msg`) \
         before going on; fix what makes the role fail",
    );
    let h = x.history;
    if h.events.is_none() && h.messages.is_none() {
        let mut c = c.scored(0.5, "the event log and the bus cannot be read");
        c.evidence = h.problems.clone();
        return c;
    }
    let me = x.input.task.id.as_str();
    let mut failures: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut retries: BTreeSet<String> = BTreeSet::new();
    let mut claims: BTreeMap<(String, u32), usize> = BTreeMap::new();
    for e in h.events.iter().flatten() {
        let Some(task) = e.task.as_deref().filter(|t| *t != me) else {
            continue;
        };
        let role = e.role.clone().unwrap_or_else(|| "unknown".into());
        match e.event.as_str() {
            "task_failed" => failures.entry(role).or_default().push(format!(
                "{task} failed (attempt {}): {}",
                e.attempt.unwrap_or(0),
                e.summary.lines().next().unwrap_or("")
            )),
            "task_claimed" => {
                let attempt = e.attempt.unwrap_or(1);
                if attempt > 1 {
                    retries.insert(format!("{task} attempt {attempt}"));
                }
                *claims.entry((task.to_owned(), attempt)).or_default() += 1;
            }
            _ => {}
        }
    }
    for t in h.state.iter().flat_map(|s| s.tasks.values()) {
        if t.attempts > 1
            && t.id.as_str() != me
            && !retries.iter().any(|r| r.starts_with(&format!("{} ", t.id)))
        {
            retries.insert(format!("{} attempt {}", t.id, t.attempts));
        }
    }
    let duplicates: Vec<String> = claims
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|((t, a), n)| format!("{t} attempt {a} claimed {n} times"))
        .collect();
    let mut errors: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut blockers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for m in h.messages.iter().flatten() {
        let into = match m.kind.as_str() {
            "error" => &mut errors,
            "blocker" => &mut blockers,
            _ => continue,
        };
        into.entry(m.from.clone())
            .or_default()
            .push(m.summary.clone());
    }
    let roles: BTreeSet<&String> = failures
        .keys()
        .chain(errors.keys())
        .chain(blockers.keys())
        .collect();
    let mut worst: Option<(String, usize)> = None;
    let mut evidence = Vec::new();
    for r in roles {
        // The coordinator sends one `error` message per failed attempt: the two count once.
        let f = failures.get(r).map_or(0, Vec::len);
        let e = errors.get(r).map_or(0, Vec::len);
        let b = blockers.get(r).map_or(0, Vec::len);
        let n = f.max(e) + b;
        evidence.push(format!(
            "{r}: {f} failed attempts, {e} error messages, {b} blockers"
        ));
        if worst.as_ref().is_none_or(|(_, w)| n > *w) {
            worst = Some((r.clone(), n));
        }
    }
    for list in failures.values() {
        evidence.extend(list.iter().cloned());
    }
    for (r, list) in errors.iter().chain(&blockers) {
        evidence.extend(list.iter().map(|s| format!("{r}: {s}")));
    }
    if !retries.is_empty() {
        evidence.push(format!(
            "retried: {}",
            retries.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    if !duplicates.is_empty() {
        evidence.push(format!("duplicate claims: {}", duplicates.join(", ")));
    }
    if h.unreadable > 0 {
        evidence.push(format!(
            "{} lines of the bus are not messages",
            h.unreadable
        ));
    }
    let incidents = worst.as_ref().map_or(0, |w| w.1);
    let (score, summary) = if incidents >= ROLE_ERRORS || !duplicates.is_empty() {
        let who = worst
            .map(|(r, n)| format!("{r} has {n} errors"))
            .unwrap_or_default();
        (
            0.0,
            format!(
                "unhealthy: {}",
                [who, duplicates.first().cloned().unwrap_or_default()]
                    .iter()
                    .filter(|s| !s.is_empty())
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        )
    } else if incidents > 0 || !retries.is_empty() || h.unreadable > 0 {
        (
            0.5,
            format!(
                "{} failed attempts, {} retries, {} error or blocker messages",
                failures.values().map(Vec::len).sum::<usize>(),
                retries.len(),
                errors
                    .values()
                    .chain(blockers.values())
                    .map(Vec::len)
                    .sum::<usize>()
            ),
        )
    } else {
        (
            1.0,
            "no failed attempt, no retry, no error or blocker message".to_owned(),
        )
    };
    let mut c = c.scored(score, summary);
    c.evidence = evidence;
    c
}

// ---------------------------------------------------------------------------------------
// Quality trend.

/// A drop of more than this from the previous checkpoint's score is a degradation.
const TREND_TOLERANCE: f64 = 0.10;

/// A previous checkpoint report, as read back.
#[derive(Debug, Clone)]
pub(super) struct Previous {
    /// Its task id.
    pub id: String,
    /// Its overall score.
    pub score: f64,
    /// Its per-check scores, by check name.
    pub checks: BTreeMap<String, f64>,
}

/// Compares `current` (the mean of this checkpoint's other checks) with `previous`.
pub(super) fn trend(
    previous: Option<&Previous>,
    current: f64,
    checks: &[Check],
) -> (Check, &'static str) {
    let c = Check::new("trend", "Quality trend", Group::Process).advise(
        "Find out what got worse since the previous checkpoint (the checks listed) and revise it",
    );
    let Some(p) = previous else {
        return (
            c.skipped("first checkpoint of the session: this score is the baseline"),
            "baseline",
        );
    };
    let delta = current - p.score;
    let label = if delta > 0.05 {
        "improving"
    } else if delta < -0.05 {
        "degrading"
    } else {
        "stable"
    };
    let score = if delta >= -TREND_TOLERANCE {
        1.0
    } else if delta >= -2.5 * TREND_TOLERANCE {
        0.5
    } else {
        0.0
    };
    let mut c = c.scored(
        score,
        format!("{label}: {current:.2} now, {:.2} at {}", p.score, p.id),
    );
    for check in checks {
        if let (Some(now), Some(before)) = (check.score, p.checks.get(check.name))
            && now < *before
        {
            c.evidence.push(format!(
                "{}: {before:.1} at {} → {now:.1} now",
                check.name, p.id
            ));
        }
    }
    (c, label)
}
