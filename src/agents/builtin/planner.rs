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
use shape::{Change, Complexity, Draft};
use signals::Finding;
use spec::Origin;

use crate::agents::{Outcome, StateUpdate, TaskInput, TaskOutput, TechProfile};
use crate::error::{Error, Result};

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
    files: Vec<FileChange>,
    depends_on: Vec<String>,
    requirements: Vec<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
struct FileChange {
    path: String,
    change: &'static str,
}

/// `plan/.task/TASK-NNN.json`, the executor's brief.
#[derive(Debug, serde::Serialize)]
struct TaskFile {
    id: String,
    title: String,
    description: String,
    files: Vec<FileChange>,
    implementation: Vec<String>,
    convergence: Convergence,
    depends_on: Vec<String>,
    requirements: Vec<String>,
    pre_analysis: Vec<PreStep>,
    reference: Reference,
    rationale: Rationale,
    risks: Vec<String>,
    meta: Meta,
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

#[derive(Debug, serde::Serialize)]
struct Reference {
    files: Vec<String>,
}

#[derive(Debug, serde::Serialize)]
struct Rationale {
    chosen_approach: String,
}

#[derive(Debug, serde::Serialize)]
struct Meta {
    execution_config: ExecutionConfig,
}

#[derive(Debug, serde::Serialize)]
struct ExecutionConfig {
    method: &'static str,
}

fn task_id(i: usize) -> String {
    format!("TASK-{:03}", i + 1)
}

/// Runs the planner on `input`.
pub fn run(input: &TaskInput) -> Result<TaskOutput> {
    let mut decisions = Vec::new();
    let mut notes = Vec::new();
    let discovery = spec::discovery(input, &mut notes);
    let (items, origin) = spec::items(input, &mut notes);
    decisions.push(planned_from(origin, items.len()));
    decisions.append(&mut notes);

    let keywords: Vec<String> = items.iter().flat_map(|i| i.keywords.clone()).collect();
    let code = Code::scan(&input.code, &discovery, &keywords);

    let titles: Vec<&str> = items.iter().map(|i| i.title.as_str()).collect();
    let angle = explore::angle(&format!("{} {}", input.session.task, titles.join(" ")));
    let cache = explore::lookup(&input.folder, angle);
    decisions.extend(cache.notes.iter().cloned());
    let cached = cache
        .hit
        .as_ref()
        .map(|h| h.relevant.clone())
        .unwrap_or_default();

    let mut creates = BTreeSet::new();
    let mut drafts = Vec::with_capacity(items.len());
    let mut matches = Vec::with_capacity(items.len());
    for item in &items {
        let (d, m) = shape::draft(item, &code, &cached, &mut creates);
        drafts.push(d);
        matches.push(m);
    }
    let mut written = Vec::new();
    if cache.hit.is_none() {
        let exploration = explore::explore(input, angle, &drafts, &matches, &code, &discovery);
        let relevant = exploration.relevant_files.len();
        written.extend(explore::write(&cache, &exploration, input.task.id.as_str()).map_err(json)?);
        decisions.push(format!(
            "explored the `{angle}` angle ({relevant} relevant files of {} considered, {} read) and cached it",
            code.considered(),
            code.read
        ));
    }

    let drafts = shape::bound(drafts, &code, &mut decisions);
    let (modules, left_out) = shape::modules(&drafts, &code.layout);
    let complexity = Complexity::of(modules.len());
    let deps = shape::dependencies(&drafts, complexity);

    let planned = planned_files(&drafts);
    let findings = signals::scan(&planned, &code);
    let modified = planned
        .iter()
        .filter(|f| f.change == Change::Modify)
        .count();
    let created = planned.len() - modified;

    let tasks: Vec<TaskFile> = drafts
        .iter()
        .enumerate()
        .map(|(i, d)| task_file(i, d, &drafts, &deps[i], &findings, &code, &discovery))
        .collect();
    if let Err(reason) = validate(&tasks) {
        return Ok(rejected(reason));
    }

    let execution = execution(complexity);
    let reasons = reasons(&modules, complexity, &left_out, modified, created);
    let approach = format!(
        "Work from {}; each task changes the files whose paths and contents best match its keywords, and creates a file where nothing matches; {execution}.",
        origin.describe(items.len())
    );
    complexity_decisions(complexity, &modules, &drafts, created, &mut decisions);

    let plan = Plan {
        session_id: input.session.id.to_string(),
        summary: format!(
            "{} — {} tasks over {} {}",
            text::truncate(&input.session.task, 120),
            tasks.len(),
            modules.len(),
            module_word(modules.len())
        ),
        complexity: complexity.as_str(),
        complexity_reasons: reasons,
        modules: modules.clone(),
        approach,
        tasks: tasks.iter().map(TaskRef::of).collect(),
        recommended_execution: complexity.execution(),
        test_command: discovery.test_command.clone(),
    };

    let mut files = vec![(PLAN.to_owned(), explore::pretty(&plan).map_err(json)?)];
    for t in &tasks {
        files.push((
            format!("{TASK_DIR}/{}.json", t.id),
            explore::pretty(t).map_err(json)?,
        ));
    }
    files.extend(written);

    let tech_profile = tech_profile(&findings, discovery.upstream.as_ref(), &mut decisions);
    let headline = format!(
        "{} tasks from {}; complexity {} ({} {})",
        tasks.len(),
        origin.describe(items.len()),
        complexity.as_str(),
        modules.len(),
        module_word(modules.len())
    );
    let key_findings = key_findings(
        headline,
        complexity,
        (modified, created),
        &findings,
        &cache,
        angle,
        discovery.test_command.as_deref(),
    );
    let state_update = StateUpdate {
        key_findings,
        decisions,
        files_modified: files.iter().map(|(p, _)| p.clone()).collect(),
        verification: format!(
            "{} ≤ {} tasks ≤ {}, unique ids, every task has files and criteria, dependencies only on earlier tasks (no cycle)",
            shape::MIN_TASKS,
            tasks.len(),
            shape::MAX_TASKS
        ),
        tech_profile,
    };
    state_update.validate()?;
    Ok(TaskOutput {
        outcome: Outcome::Completed,
        summary: format!(
            "{} tasks, {} ({} {}), {}",
            tasks.len(),
            complexity.as_str(),
            modules.len(),
            module_word(modules.len()),
            complexity.execution()
        ),
        files,
        state_update,
    })
}

/// Every file the drafts plan to change, once, in the order they first name it.
fn planned_files(drafts: &[Draft]) -> Vec<shape::PlannedFile> {
    let mut planned: Vec<shape::PlannedFile> = Vec::new();
    for f in drafts.iter().flat_map(|d| &d.files) {
        if !planned.iter().any(|p| p.path == f.path) {
            planned.push(f.clone());
        }
    }
    planned
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

/// Where the plan comes from, and why from there.
fn planned_from(origin: Origin, items: usize) -> String {
    match origin {
        Origin::Epics => format!(
            "planned from {} in dependency order: the epics are the most detailed spec",
            origin.describe(items)
        ),
        Origin::Requirements => format!(
            "planned from {}: there are no epics",
            origin.describe(items)
        ),
        Origin::TaskText => format!("planned from {}: there is no spec", origin.describe(items)),
    }
}

/// `module` or `modules`.
fn module_word(n: usize) -> &'static str {
    if n == 1 { "module" } else { "modules" }
}

/// How the tasks of a plan of `complexity` run.
fn execution(complexity: Complexity) -> &'static str {
    match complexity {
        Complexity::Low => "the tasks run one after another",
        Complexity::Medium => "the tasks run in parallel, ordered only where they share a file",
        Complexity::High => {
            "the tasks follow the work items' dependencies and shared files as a DAG"
        }
    }
}

/// Why the plan has its complexity.
fn reasons(
    modules: &[String],
    complexity: Complexity,
    left_out: &[String],
    modified: usize,
    created: usize,
) -> Vec<String> {
    let mut reasons = vec![
        format!(
            "{} {} touched: {}",
            modules.len(),
            module_word(modules.len()),
            modules.join(", ")
        ),
        format!("{} is {}", complexity.as_str(), complexity.range()),
    ];
    if !left_out.is_empty() {
        reasons.push(format!(
            "test files are not counted as modules: {}",
            left_out.join(", ")
        ));
    }
    reasons.push(format!("{modified} files to modify, {created} to create"));
    reasons
}

/// The decisions about complexity and execution.
fn complexity_decisions(
    complexity: Complexity,
    modules: &[String],
    drafts: &[Draft],
    created: usize,
    decisions: &mut Vec<String>,
) {
    decisions.push(format!(
        "complexity {}: {} {} ({}) and {} is {}",
        complexity.as_str(),
        modules.len(),
        module_word(modules.len()),
        modules.join(", "),
        complexity.as_str(),
        complexity.range()
    ));
    decisions.push(format!(
        "execution {}: {}",
        complexity.execution(),
        execution(complexity)
    ));
    if complexity == Complexity::Medium && drafts.iter().any(|d| !d.after.is_empty()) {
        decisions.push(
            "the work items' own dependencies are not followed in a Medium plan: its tasks run in parallel unless they share a file"
                .to_owned(),
        );
    }
    if created > 0 {
        decisions.push(
            "declaring a new file in its module is a step of its task, not a planned change, so tasks that each add a file stay parallel"
                .to_owned(),
        );
    }
}

/// The key findings of a plan, each under 100 characters, after the one that sums it up.
fn key_findings(
    headline: String,
    complexity: Complexity,
    (modified, created): (usize, usize),
    findings: &[Finding],
    cache: &explore::Cache,
    angle: &str,
    test_command: Option<&str>,
) -> Vec<String> {
    let signal_names: Vec<&str> = {
        let mut s: Vec<&str> = findings.iter().map(|f| f.signal).collect();
        s.dedup();
        s
    };
    let mut key_findings = vec![
        headline,
        format!(
            "{modified} files to modify, {created} to create; execution {}",
            complexity.execution()
        ),
        match &cache.hit {
            Some(hit) => format!("Reused the cached `{angle}` exploration ({})", hit.file),
            None => format!(
                "Explored `{angle}` and cached it in {}",
                explore::path(angle)
            ),
        },
    ];
    if !signal_names.is_empty() {
        key_findings.push(format!("Signals: {}", signal_names.join(", ")));
    }
    key_findings.push(match test_command {
        Some(c) => format!("Test command: `{c}`"),
        None => "No test command known from the discovery context".to_owned(),
    });
    key_findings.iter().map(|f| text::truncate(f, 99)).collect()
}

fn json(e: serde_json::Error) -> Error {
    Error::Invalid(format!("cannot write the plan as JSON: {e}"))
}

/// The output for a plan that failed its own checks.
fn rejected(reason: String) -> TaskOutput {
    TaskOutput {
        outcome: Outcome::Failed(format!("the plan failed its checks: {reason}")),
        summary: "no plan: it failed its checks".to_owned(),
        files: Vec::new(),
        state_update: StateUpdate {
            key_findings: vec![text::truncate(&format!("Plan rejected: {reason}"), 99)],
            decisions: Vec::new(),
            files_modified: Vec::new(),
            verification: format!("self-check failed: {reason}"),
            tech_profile: None,
        },
    }
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
    let creates: Vec<&str> = d
        .files
        .iter()
        .filter(|f| f.change == Change::Create)
        .map(|f| f.path.as_str())
        .collect();
    let from = if d.sources.iter().all(|s| s.starts_with("clause")) {
        "the task text".to_owned()
    } else {
        d.sources.join(", ")
    };
    let (implementation, pre_analysis) = steps(d, code, discovery);
    let criteria = criteria(d, &creates, discovery);
    let approach = approach(d, &from, &creates);
    let risks = risks(i, d, drafts, deps, findings, code, &creates);
    let description = description(d, &from);
    TaskFile {
        id: task_id(i),
        title: text::truncate(&d.title, 120),
        description,
        files: d
            .files
            .iter()
            .map(|f| FileChange {
                path: f.path.clone(),
                change: f.change.as_str(),
            })
            .collect(),
        implementation,
        convergence: Convergence { criteria },
        depends_on: deps.iter().map(|&j| task_id(j)).collect(),
        requirements: d.requirements.clone(),
        pre_analysis,
        reference: Reference {
            files: d.reference.clone(),
        },
        rationale: Rationale {
            chosen_approach: approach,
        },
        risks,
        meta: Meta {
            execution_config: ExecutionConfig { method: "agent" },
        },
    }
}

/// Paths as inline code, joined with commas.
fn quoted(paths: &[&str]) -> String {
    paths
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The implementation steps of a task and the reading it starts with.
fn steps(d: &Draft, code: &Code, discovery: &spec::Discovery) -> (Vec<String>, Vec<PreStep>) {
    let mut implementation = Vec::new();
    let mut pre_analysis = Vec::new();
    for f in &d.files {
        let words = d
            .matched
            .get(&f.path)
            .map(|w| w.iter().take(4).cloned().collect::<Vec<_>>().join(", "))
            .unwrap_or_default();
        match f.change {
            Change::Modify => {
                implementation.push(if words.is_empty() {
                    format!("Change `{}` for: {}", f.path, d.title)
                } else {
                    format!("Change `{}` where it deals with {words}", f.path)
                });
                pre_analysis.push(PreStep {
                    step: if words.is_empty() {
                        format!("Read `{}` and find where the change goes", f.path)
                    } else {
                        format!("Read `{}` and find the code for {words}", f.path)
                    },
                    on_error: "Plan from the task description and note what was missing".to_owned(),
                });
            }
            Change::Create => {
                implementation.push(format!("Create `{}` for: {}", f.path, d.title));
                if let Some(entry) = code.entry_file(code::parent(&f.path)) {
                    implementation.push(format!("Declare or export `{}` in `{entry}`", f.path));
                }
                pre_analysis.push(PreStep {
                    step: format!(
                        "Check that `{}` does not exist yet and read the files beside it for conventions",
                        f.path
                    ),
                    on_error: "Modify the existing file instead of creating a new one".to_owned(),
                });
            }
        }
    }
    if !d.reference.is_empty() {
        pre_analysis.push(PreStep {
            step: format!(
                "Read {} for context",
                quoted(&d.reference.iter().map(String::as_str).collect::<Vec<_>>())
            ),
            on_error: "Continue without them".to_owned(),
        });
    }
    implementation.push(
        "Make each convergence criterion hold, adding a test where none covers it".to_owned(),
    );
    implementation.push(match &discovery.test_command {
        Some(c) => format!("Run `{c}` and fix what fails"),
        None => "Run the project's tests and fix what fails".to_owned(),
    });

    (implementation, pre_analysis)
}

/// The convergence criteria of a task: its item's, the files it creates, the test suite.
fn criteria(d: &Draft, creates: &[&str], discovery: &spec::Discovery) -> Vec<String> {
    let mut criteria: Vec<String> = d.criteria.iter().take(CRITERIA).cloned().collect();
    if criteria.is_empty() {
        criteria.push(format!("A test exercises \"{}\" and passes", d.title));
    }
    for p in creates {
        criteria.push(format!("`{p}` exists and is part of the build"));
    }
    criteria.push(match &discovery.test_command {
        Some(c) => format!("`{c}` passes"),
        None => "The existing test suite passes".to_owned(),
    });
    shape::dedup(&mut criteria);

    criteria
}

/// Why a task changes the files it does.
fn approach(d: &Draft, from: &str, creates: &[&str]) -> String {
    let modifies: Vec<&str> = d
        .files
        .iter()
        .filter(|f| f.change == Change::Modify)
        .map(|f| f.path.as_str())
        .collect();
    let mut approach = format!("From {from}: ");
    let mut parts = Vec::new();
    if !modifies.is_empty() {
        parts.push(format!(
            "modify {}, the best matches for {}",
            quoted(&modifies),
            d.keywords
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !creates.is_empty() {
        parts.push(format!(
            "create {} because no existing file matched its keywords",
            quoted(creates)
        ));
    }
    approach.push_str(&parts.join("; "));

    approach
}

/// The risks of task `i`: proposed files, files shared with other tasks, signals.
fn risks(
    i: usize,
    d: &Draft,
    drafts: &[Draft],
    deps: &BTreeSet<usize>,
    findings: &[Finding],
    code: &Code,
    creates: &[&str],
) -> Vec<String> {
    let mut risks = Vec::new();
    for p in creates {
        risks.push(format!(
            "`{p}` is a proposal: no existing file matched; move it if the code has a better place"
        ));
    }
    if !creates.is_empty() && code.layout.lang.is_none() {
        risks.push(
            "No programming language was detected: the new file is a Markdown placeholder"
                .to_owned(),
        );
    }
    for (j, path) in &shape::overlaps(drafts)[i] {
        risks.push(if deps.contains(j) {
            format!("Shares `{path}` with {}: runs after it", task_id(*j))
        } else {
            format!("Shares `{path}` with {}", task_id(*j))
        });
    }
    for f in findings
        .iter()
        .filter(|f| d.files.iter().any(|x| x.path == f.path))
    {
        risks.push(match f.signal {
            "breaking_change" => format!(
                "`{}` is a public API ({}): changing it may break callers",
                f.path, f.detail
            ),
            "scaling_concern" => format!(
                "`{}` has {}: keep the change from adding another level",
                f.path, f.detail
            ),
            _ => format!(
                "`{}` is {}: the change needs a data migration and a way back",
                f.path, f.detail
            ),
        });
    }

    risks
}

/// The task's description: its item's, with where it comes from.
fn description(d: &Draft, from: &str) -> String {
    if d.description.trim().is_empty() {
        format!("{} (from {from}).", d.title)
    } else {
        let text = d.description.trim();
        let stop = if text.ends_with(['.', '!', '?']) {
            ""
        } else {
            "."
        };
        format!("{text}{stop}\n\nFrom {from}.")
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
        if let Some(f) = t.files.iter().find(|f| {
            f.path.is_empty()
                || f.path.starts_with('/')
                || f.path
                    .split('/')
                    .any(|c| c.is_empty() || c == "." || c == "..")
        }) {
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
    let mut evidence = signals::evidence(findings);
    let mut names: BTreeSet<String> = evidence.keys().cloned().collect();
    let ours = !names.is_empty();
    if let Some(up) = upstream.filter(|u| !u.signals.is_empty()) {
        decisions.push(format!(
            "merged the analyst's signals ({}) into the tech profile",
            up.signals.join(", ")
        ));
        for s in &up.signals {
            names.insert(s.clone());
            let paths = evidence.entry(s.clone()).or_default();
            for p in up.evidence.get(s).into_iter().flatten() {
                if !paths.contains(p) {
                    paths.push(p.clone());
                }
            }
        }
    }
    if names.is_empty() {
        return None;
    }
    evidence.retain(|k, _| names.contains(k));
    let confidence = match upstream {
        Some(up) if !ours => up.confidence.clone(),
        _ => "medium".to_owned(),
    };
    Some(TechProfile {
        signals: names.into_iter().collect(),
        evidence,
        confidence,
    })
}
