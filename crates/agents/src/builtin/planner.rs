//! The builtin planner: turns the spec (or, without one, the task text) into a plan of 2 to 7
//! tasks, each naming the files it touches, and rates the plan's complexity.
//!
//! The work items come from the epics in dependency order, else the requirements, else the
//! clauses of the task text. Each item's keywords are matched against the repository's paths
//! and contents; the best few files are modified, and a new file is proposed where nothing
//! matches. Complexity is the number of modules the plan touches (1–2 Low, 3–4 Medium, 5+
//! High), and it decides how the tasks depend on each other: one chain, parallel tasks
//! ordered only by shared files, or a DAG that also follows the epics. The coordinator reads
//! `plan/plan.json` (`complexity`, `tasks[].depends_on`) to create the IMPL tasks.
//!
//! Everything is a function of the input: no clock, no randomness, ordered maps only, so the
//! same input gives byte-identical files.

mod code;
mod explore;
mod shape;
mod signals;
mod spec;
#[cfg(test)]
mod tests;
mod text;

use std::collections::BTreeSet;

use code::Code;
use serde_json::{Value, json};
use shape::{Change, Complexity, Draft, PlannedFile};
use signals::Finding;
use spec::Origin;
use text::Level;

use super::template::render;
use super::words::unique;
use crate::{Outcome, StateUpdate, TaskInput, TaskOutput, TechProfile};
use tlv4_core::error::Result;

/// Where the plan goes, relative to the pipeline folder.
const PLAN: &str = "plan/plan.json";
/// Where the task files go.
const TASK_DIR: &str = "plan/.task";
/// At most this many acceptance criteria are copied into a task.
const CRITERIA: usize = 8;

/// `plan/plan.json`.
#[derive(Debug, serde::Serialize)]
struct Plan {
    session_id: String,
    summary: String,
    complexity: &'static str,
    complexity_reasons: Vec<String>,
    modules: Vec<String>,
    approach: String,
    tasks: Vec<TaskRef>,
    recommended_execution: &'static str,
    test_command: Option<String>,
}

/// A task as `plan.json` lists it.
#[derive(Debug, serde::Serialize)]
struct TaskRef {
    id: String,
    title: String,
    files: Vec<PlannedFile>,
    depends_on: Vec<String>,
    requirements: Vec<String>,
}

/// `plan/.task/TASK-NNN.json`, the executor's brief.
#[derive(Debug, serde::Serialize)]
struct TaskFile {
    id: String,
    title: String,
    description: String,
    files: Vec<PlannedFile>,
    implementation: Vec<String>,
    convergence: Convergence,
    depends_on: Vec<String>,
    requirements: Vec<String>,
    pre_analysis: Vec<PreStep>,
    /// `{"files": [...]}`: the files to read.
    reference: Value,
    /// `{"chosen_approach": "..."}`.
    rationale: Value,
    risks: Vec<String>,
    /// `{"execution_config": {"method": "agent"}}`.
    meta: Value,
}

#[derive(Debug, serde::Serialize)]
struct Convergence {
    criteria: Vec<String>,
}

#[derive(Debug, serde::Serialize)]
struct PreStep {
    step: String,
    on_error: String,
}

fn task_id(i: usize) -> String {
    format!("TASK-{:03}", i + 1)
}

/// What the plan's sentences are said over (`planner-text.toml`).
#[derive(Debug, serde::Serialize)]
struct PlanFacts<'a> {
    task: String,
    items: String,
    origin: Origin,
    tasks: usize,
    /// The complexity's name, range, execution and how its tasks run.
    #[serde(flatten)]
    level: &'static Level,
    modules: &'a [String],
    left_out: &'a [String],
    modified: usize,
    created: usize,
    unfollowed: bool,
    angle: &'static str,
    hit: Option<&'a str>,
    cache_path: String,
    relevant: usize,
    considered: usize,
    read: usize,
    signals: Vec<&'static str>,
    test_command: Option<&'a str>,
    min: usize,
    max: usize,
}

/// Runs the planner on `input`.
pub(super) fn run(input: &TaskInput) -> Result<TaskOutput> {
    let mut notes = Vec::new();
    let discovery = spec::discovery(input, &mut notes);
    let (items, origin) = spec::items(input, &mut notes);

    let keywords: Vec<String> = items.iter().flat_map(|i| i.keywords.clone()).collect();
    let code = Code::scan(&input.code, &discovery, &keywords);

    let titles: Vec<&str> = items.iter().map(|i| i.title.as_str()).collect();
    let angle = explore::angle(&format!("{} {}", input.session.task, titles.join(" ")));
    let cache = explore::lookup(&input.folder, angle);
    let cached = cache
        .hit
        .as_ref()
        .map(|h| h.relevant.clone())
        .unwrap_or_default();

    let mut creates = BTreeSet::new();
    let (drafts, matches): (Vec<Draft>, Vec<_>) = items
        .iter()
        .map(|item| shape::draft(item, &code, &cached, &mut creates))
        .unzip();
    let mut written = Vec::new();
    let mut relevant = 0;
    if cache.hit.is_none() {
        let exploration = explore::explore(input, angle, &drafts, &matches, &code, &discovery);
        relevant = exploration.relevant_files.len();
        written = explore::write(&cache, &exploration, input.task.id.as_str());
    }

    let mut shaping = Vec::new();
    let drafts = shape::bound(drafts, &code, &mut shaping);
    let (modules, left_out) = shape::modules(&drafts, &code.layout);
    let complexity = Complexity::of(modules.len());
    let deps = shape::dependencies(&drafts, complexity);

    // Every file the drafts plan to change, once, in the order they first name it.
    let planned = shape::unique_files(drafts.iter().flat_map(|d| &d.files));
    let findings = signals::scan(&planned, &code);
    let modified = planned
        .iter()
        .filter(|f| f.change == Change::Modify)
        .count();

    let tasks: Vec<TaskFile> = drafts
        .iter()
        .enumerate()
        .map(|(i, d)| task_file(i, d, &drafts, &deps[i], &findings, &code, &discovery))
        .collect();
    if let Err(reason) = validate(&tasks) {
        return Ok(rejected(reason));
    }

    let level = complexity.says();
    let n = items.len();
    let mut signal_names: Vec<&str> = findings.iter().map(|f| f.signal).collect();
    signal_names.dedup();
    let facts = PlanFacts {
        task: text::truncate(&input.session.task, 120),
        items: render(
            "items",
            &minijinja::context! { origin => minijinja::value::Serde(origin), n },
        ),
        origin,
        tasks: tasks.len(),
        level,
        modules: &modules,
        left_out: &left_out,
        modified,
        created: planned.len() - modified,
        unfollowed: complexity == Complexity::Medium && drafts.iter().any(|d| !d.after.is_empty()),
        angle,
        hit: cache.hit.as_ref().map(|h| h.file.as_str()),
        cache_path: explore::path(angle),
        relevant,
        considered: code.considered(),
        read: code.read,
        signals: signal_names,
        test_command: discovery.test_command.as_deref(),
        min: shape::MIN_TASKS,
        max: shape::MAX_TASKS,
    };
    let mut decisions = vec![render("planned_from", &facts)];
    decisions.extend(notes);
    decisions.extend(cache.notes.iter().cloned());
    if cache.hit.is_none() {
        decisions.push(render("explored", &facts));
    }
    decisions.extend(shaping);
    decisions.extend(text::say_lines("decisions_list", &facts));

    let plan = Plan {
        session_id: input.session.id.to_string(),
        summary: render("summary", &facts),
        complexity: &level.complexity,
        complexity_reasons: text::say_lines("reasons_list", &facts),
        modules: modules.clone(),
        approach: render("approach", &facts),
        tasks: tasks.iter().map(TaskRef::of).collect(),
        recommended_execution: &level.execution,
        test_command: discovery.test_command.clone(),
    };

    let mut files = vec![(PLAN.to_owned(), super::json_bytes(&plan))];
    let task_files = tasks
        .iter()
        .map(|t| (format!("{TASK_DIR}/{}.json", t.id), super::json_bytes(t)));
    files.extend(task_files.chain(written));

    let tech_profile = tech_profile(&findings, discovery.upstream.as_ref(), &mut decisions);
    let mut key_findings = vec![render("headline", &facts)];
    key_findings.extend(text::say_lines("findings_list", &facts));
    let state_update = StateUpdate {
        key_findings: key_findings.iter().map(|f| text::truncate(f, 99)).collect(),
        decisions,
        files_modified: files.iter().map(|(p, _)| p.clone()).collect(),
        verification: render("verification", &facts),
        tech_profile,
    };
    state_update.validate()?;
    Ok(TaskOutput {
        outcome: Outcome::Completed,
        summary: render("done", &facts),
        files,
        state_update,
    })
}

impl TaskRef {
    /// The plan's entry for task `t`.
    fn of(t: &TaskFile) -> TaskRef {
        TaskRef {
            id: t.id.clone(),
            title: t.title.clone(),
            files: t.files.clone(),
            depends_on: t.depends_on.clone(),
            requirements: t.requirements.clone(),
        }
    }
}

/// The output for a plan that failed its own checks.
fn rejected(reason: String) -> TaskOutput {
    TaskOutput {
        outcome: Outcome::Failed(format!("the plan failed its checks: {reason}")),
        summary: "no plan: it failed its checks".to_owned(),
        files: Vec::new(),
        state_update: StateUpdate {
            key_findings: vec![text::truncate(&format!("Plan rejected: {reason}"), 99)],
            verification: format!("self-check failed: {reason}"),
            ..StateUpdate::default()
        },
    }
}

/// A planned file as a task's sentences see it.
#[derive(Debug, serde::Serialize)]
struct FileFacts<'a> {
    /// Its path and change.
    #[serde(flatten)]
    file: &'a PlannedFile,
    /// Up to four of the keywords it matched, joined.
    words: String,
    /// The file declaring the modules of its directory, for a new file.
    entry: Option<String>,
}

/// A file this task shares with an earlier one.
#[derive(Debug, serde::Serialize)]
struct Share {
    path: String,
    task: String,
    /// Whether this task runs after that one.
    after: bool,
}

/// What one task's sentences are said over (`planner-text.toml`).
#[derive(Debug, serde::Serialize)]
struct TaskFacts<'a> {
    title: &'a str,
    from: String,
    description: &'a str,
    files: Vec<FileFacts<'a>>,
    modifies: Vec<&'a str>,
    creates: Vec<&'a str>,
    keywords: &'a [String],
    criteria: &'a [String],
    reference: &'a [String],
    shares: Vec<Share>,
    findings: Vec<&'a Finding>,
    lang: bool,
    test_command: Option<&'a str>,
}

/// The full task for draft `i`.
fn task_file(
    i: usize,
    d: &Draft,
    drafts: &[Draft],
    deps: &BTreeSet<usize>,
    findings: &[Finding],
    code: &Code,
    discovery: &spec::Discovery,
) -> TaskFile {
    let paths = |change: Change| -> Vec<&str> {
        let files = d.files.iter().filter(|f| f.change == change);
        files.map(|f| f.path.as_str()).collect()
    };
    let facts = TaskFacts {
        title: &d.title,
        from: if d.sources.iter().all(|s| s.starts_with("clause")) {
            "the task text".to_owned()
        } else {
            d.sources.join(", ")
        },
        description: d.description.trim(),
        files: d
            .files
            .iter()
            .map(|f| FileFacts {
                file: f,
                words: d.matched.get(&f.path).map_or(String::new(), |w| {
                    w.iter().take(4).cloned().collect::<Vec<_>>().join(", ")
                }),
                entry: (f.change == Change::Create)
                    .then(|| code.entry_file(code::parent(&f.path)))
                    .flatten(),
            })
            .collect(),
        modifies: paths(Change::Modify),
        creates: paths(Change::Create),
        keywords: &d.keywords[..d.keywords.len().min(5)],
        criteria: &d.criteria[..d.criteria.len().min(CRITERIA)],
        reference: &d.reference,
        shares: shape::overlaps(drafts)[i]
            .iter()
            .map(|(j, path)| Share {
                path: path.clone(),
                task: task_id(*j),
                after: deps.contains(j),
            })
            .collect(),
        findings: findings
            .iter()
            .filter(|f| d.files.iter().any(|x| x.path == f.path))
            .collect(),
        lang: code.layout.lang.is_some(),
        test_command: discovery.test_command.as_deref(),
    };
    let criteria = unique(text::say_lines("criteria_list", &facts));
    let pre_analysis = text::say_lines("pre_analysis_list", &facts)
        .into_iter()
        .map(|line| {
            let (step, on_error) = line.split_once('\t').unwrap_or((&line, ""));
            PreStep {
                step: step.to_owned(),
                on_error: on_error.to_owned(),
            }
        })
        .collect();
    TaskFile {
        id: task_id(i),
        title: text::truncate(&d.title, 120),
        description: render("description", &facts),
        files: d.files.clone(),
        implementation: text::say_lines("implementation_list", &facts),
        convergence: Convergence { criteria },
        depends_on: deps.iter().map(|&j| task_id(j)).collect(),
        requirements: d.requirements.clone(),
        pre_analysis,
        reference: json!({ "files": d.reference }),
        rationale: json!({ "chosen_approach": render("approach_one", &facts) }),
        risks: text::say_lines("risks_list", &facts),
        meta: json!({ "execution_config": { "method": "agent" } }),
    }
}

/// Checks the plan before it is written: 2 to 7 tasks, unique ids, files with safe relative
/// paths, at least one criterion each, and dependencies only on earlier tasks (which also
/// rules out cycles).
fn validate(tasks: &[TaskFile]) -> std::result::Result<(), String> {
    if !(shape::MIN_TASKS..=shape::MAX_TASKS).contains(&tasks.len()) {
        return Err(format!(
            "it has {} tasks; a plan has {} to {}",
            tasks.len(),
            shape::MIN_TASKS,
            shape::MAX_TASKS
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, t) in tasks.iter().enumerate() {
        if !seen.insert(t.id.as_str()) {
            return Err(format!("task id {} is used twice", t.id));
        }
        if t.files.is_empty() {
            return Err(format!("{} touches no file", t.id));
        }
        // An empty path, an absolute one and `a//b` all have an empty component.
        let unsafe_path =
            |f: &&PlannedFile| f.path.split('/').any(|c| matches!(c, "" | "." | ".."));
        if let Some(f) = t.files.iter().find(unsafe_path) {
            return Err(format!("{} has an unsafe path `{}`", t.id, f.path));
        }
        if t.convergence.criteria.is_empty() {
            return Err(format!("{} has no convergence criterion", t.id));
        }
        for dep in &t.depends_on {
            if !tasks[..i].iter().any(|e| &e.id == dep) {
                return Err(format!(
                    "{} depends on {dep}, which is not an earlier task",
                    t.id
                ));
            }
        }
    }
    Ok(())
}

/// The planner's signals, merged with the analyst's; `None` when there are none at all.
fn tech_profile(
    findings: &[Finding],
    upstream: Option<&TechProfile>,
    decisions: &mut Vec<String>,
) -> Option<TechProfile> {
    // Every signal, ours or the analyst's, has an entry in `evidence`.
    let mut evidence = signals::evidence(findings);
    let ours = !evidence.is_empty();
    if let Some(up) = upstream.filter(|u| !u.signals.is_empty()) {
        decisions.push(format!(
            "merged the analyst's signals ({}) into the tech profile",
            up.signals.join(", ")
        ));
        for s in &up.signals {
            let paths = evidence.entry(s.clone()).or_default();
            let theirs = up.evidence.get(s).into_iter().flatten().cloned();
            *paths = unique(std::mem::take(paths).into_iter().chain(theirs));
        }
    }
    if evidence.is_empty() {
        return None;
    }
    let confidence = match upstream {
        Some(up) if !ours => up.confidence.clone(),
        _ => "medium".to_owned(),
    };
    Some(TechProfile {
        signals: evidence.keys().cloned().collect(),
        evidence,
        confidence,
    })
}
