//! The checks of one phase's checkpoint: scope consistency after the requirements, the
//! architecture's alignment with the epics and their open questions after the epics, and the
//! plan's coverage, complexity and dependencies after the plan.

use super::*;

// ---------------------------------------------------------------------------------------
// Scope consistency (after the requirements).

pub(super) fn scope_consistency(x: &Inputs<'_>) -> Check {
    let c = Check::new("scope", "Scope consistency", Group::Consistency).advise(
        "Trace every requirement to a goal of the brief, or drop it, or add the goal to the brief",
    );
    let (Some(brief), Some(reqs)) = (&x.spec.brief, &x.spec.requirements) else {
        return c.scored(
            0.0,
            "the brief or the requirements are missing: scope cannot be compared",
        );
    };
    let goals: BTreeSet<&str> = brief.goals.iter().map(|g| g.id.as_str()).collect();
    if reqs.functional.is_empty() {
        return c.scored(0.0, "there are no functional requirements");
    }
    let outside: Vec<String> = reqs
        .functional
        .iter()
        .filter(|r| !r.traces.iter().any(|t| goals.contains(t.as_str())))
        .map(|r| {
            if r.traces.is_empty() {
                format!("{} traces to no goal", r.id)
            } else {
                format!(
                    "{} traces to {}, not a goal of the brief",
                    r.id,
                    r.traces.join(", ")
                )
            }
        })
        .collect();
    let share = 1.0 - outside.len() as f64 / reqs.functional.len() as f64;
    let mut c = c.scored(
        by_share(share, 0.8),
        format!(
            "{} of {} functional requirements trace to a goal of the brief",
            reqs.functional.len() - outside.len(),
            reqs.functional.len()
        ),
    );
    c.evidence = outside;
    c
}

// ---------------------------------------------------------------------------------------
// Architecture ↔ epics alignment (after the epics).

pub(super) fn alignment(x: &Inputs<'_>) -> Check {
    let c = Check::new(
        "alignment",
        "Architecture ↔ epics alignment",
        Group::Consistency,
    )
    .advise("Give every component and every functional requirement at least one story");
    let (Some(arch), Some(epics)) = (&x.spec.architecture, &x.spec.epics) else {
        return c.scored(0.0, "the architecture or the epics are missing");
    };
    let traced: BTreeSet<&str> = epics
        .stories()
        .flat_map(|s| s.traces.iter().map(String::as_str))
        .collect();
    let named: BTreeSet<&str> = epics
        .stories()
        .flat_map(|s| s.components.iter().map(String::as_str))
        .collect();
    let mut gaps = Vec::new();
    let mut total = 0;
    for comp in &arch.components {
        total += 1;
        if !named.contains(comp.id.as_str())
            && !comp.implements.iter().any(|r| traced.contains(r.as_str()))
        {
            gaps.push(format!("{} ({}) has no story", comp.id, comp.name));
        }
    }
    for r in x.spec.requirements.iter().flat_map(|r| &r.functional) {
        total += 1;
        if !traced.contains(r.id.as_str()) {
            gaps.push(format!("{} has no story", r.id));
        }
    }
    if total == 0 {
        return c.scored(
            0.0,
            "the architecture lists no components and there are no requirements",
        );
    }
    let share = 1.0 - gaps.len() as f64 / total as f64;
    let mut c = c.scored(
        by_share(share, 0.8),
        format!(
            "{} of {total} components and requirements have stories ({} stories in {} epics)",
            total - gaps.len(),
            epics.stories().count(),
            epics.epics.len()
        ),
    );
    c.evidence = gaps;
    c
}

// ---------------------------------------------------------------------------------------
// Open questions (after the epics).

/// Words that mark an open question as critical.
pub(super) const CRITICAL: &[&str] = &[
    "critical",
    "blocker",
    "blocking",
    "must be answered",
    "must be decided",
    "[p0]",
];

pub(super) fn open_questions(x: &Inputs<'_>) -> Check {
    let c = Check::new(
        "open_questions",
        "Critical open questions resolved",
        Group::Process,
    )
    .advise(
        "Answer the critical open questions (`git tlv4 feedback TEXT`) before the plan is made",
    );
    let mut total = 0;
    let mut critical = Vec::new();
    let mut per_doc = Vec::new();
    for k in x.scope.kinds() {
        let qs = x.spec.open_questions(k);
        if !qs.is_empty() {
            per_doc.push(format!("{}: {} open questions", k.name(), qs.len()));
        }
        total += qs.len();
        for (path, q) in qs {
            let lower = q.to_lowercase();
            if CRITICAL.iter().any(|w| lower.contains(w)) {
                critical.push(format!("`{path}`: {q}"));
            }
        }
    }
    let score = match critical.len() {
        0 => 1.0,
        1..=2 => 0.5,
        _ => 0.0,
    };
    let mut c = c.scored(
        score,
        format!("{} critical of {total} open questions", critical.len()),
    );
    c.evidence = critical.into_iter().chain(per_doc).collect();
    c
}

// ---------------------------------------------------------------------------------------
// Plan checks (after the plan).

pub(super) fn plan_coverage(x: &Inputs<'_>) -> Check {
    let c = Check::new(
        "plan_coverage",
        "Plan covers requirements",
        Group::Consistency,
    )
    .advise("Revise the plan so that every Must requirement has a task");
    let Some(reqs) = x
        .spec
        .requirements
        .as_ref()
        .filter(|r| !r.functional.is_empty())
    else {
        return c.skipped("no requirements: the plan was made from the task text");
    };
    if x.spec.plan.is_none() {
        return c.scored(0.0, "the plan is missing");
    }
    let musts: Vec<&spec::Req> = if reqs.functional.iter().any(|r| r.priority.is_some()) {
        reqs.functional.iter().filter(|r| r.must()).collect()
    } else {
        reqs.functional.iter().collect()
    };
    if musts.is_empty() {
        return c.scored(1.0, "no requirement is a Must");
    }
    let named = x.spec.ids_in(Kind::Plan);
    let covered_by_epic = |r: &str| {
        x.spec.epics.iter().flat_map(|e| &e.epics).any(|e| {
            named.contains(&e.id) && e.stories.iter().any(|s| s.traces.iter().any(|t| t == r))
        })
    };
    let missing: Vec<String> = musts
        .iter()
        .filter(|r| !named.contains(&r.id) && !covered_by_epic(&r.id))
        .map(|r| r.id.clone())
        .collect();
    let share = 1.0 - missing.len() as f64 / musts.len() as f64;
    let mut c = c.scored(
        by_share(share, 0.8),
        format!(
            "{} of {} Must requirements have a plan task",
            musts.len() - missing.len(),
            musts.len()
        ),
    );
    if !missing.is_empty() {
        c.evidence
            .push(format!("no task for: {}", missing.join(", ")));
    }
    c
}

pub(super) fn complexity(x: &Inputs<'_>) -> Check {
    let c = Check::new("complexity", "Complexity sanity", Group::Process)
        .advise("Re-rate the plan: Low is 1–2 modules, Medium 3–4, High 5 or more");
    let Some(plan) = &x.spec.plan else {
        return c.scored(0.0, "the plan is missing");
    };
    let n = plan.modules.len();
    let level = plan.complexity.to_lowercase();
    let expected = match n {
        0..=2 => "low",
        3..=4 => "medium",
        _ => "high",
    };
    let summary = format!(
        "complexity {} for {}",
        if plan.complexity.is_empty() {
            "unstated"
        } else {
            &plan.complexity
        },
        plural(n, "module")
    );
    let score = match level.as_str() {
        "low" if n >= 5 => 0.0,
        "high" if n <= 1 => 0.0,
        l if l == expected => 1.0,
        _ => 0.5,
    };
    let mut c = c.scored(score, summary);
    c.evidence
        .push(format!("modules: {}", join(&plan.modules, 8)));
    c
}

pub(super) fn dependencies(x: &Inputs<'_>) -> Check {
    let c = Check::new("dependencies", "Dependency chain valid", Group::Process)
        .advise("Fix the plan's task dependencies: every dependency must name a task of the plan, without cycles");
    let Some(plan) = &x.spec.plan else {
        return c.scored(0.0, "the plan is missing");
    };
    if plan.tasks.is_empty() {
        return c.scored(0.0, "the plan has no tasks");
    }
    let known: BTreeSet<&str> = plan.tasks.iter().map(|t| t.id.as_str()).collect();
    let mut fatal = Vec::new();
    let mut minor = Vec::new();
    if known.len() != plan.tasks.len() {
        minor.push("task ids repeat".to_owned());
    }
    for t in &plan.tasks {
        for d in &t.depends_on {
            if d == &t.id {
                fatal.push(format!("{} depends on itself", t.id));
            } else if !known.contains(d.as_str()) {
                fatal.push(format!("{} depends on {d}, which is not in the plan", t.id));
            }
        }
        if !plan.task_files.iter().any(|f| f == &t.id) {
            minor.push(format!("{} has no task file under plan/.task/", t.id));
        }
    }
    // Kahn's algorithm: whatever cannot be ordered is in a cycle.
    let mut left: BTreeMap<&str, BTreeSet<&str>> = plan
        .tasks
        .iter()
        .map(|t| {
            (
                t.id.as_str(),
                t.depends_on
                    .iter()
                    .map(String::as_str)
                    .filter(|d| known.contains(d) && *d != t.id)
                    .collect(),
            )
        })
        .collect();
    loop {
        let ready: Vec<&str> = left
            .iter()
            .filter(|(_, d)| d.is_empty())
            .map(|(k, _)| *k)
            .collect();
        if ready.is_empty() {
            break;
        }
        for r in &ready {
            left.remove(r);
        }
        for d in left.values_mut() {
            for r in &ready {
                d.remove(r);
            }
        }
    }
    if !left.is_empty() {
        fatal.push(format!(
            "cycle among {}",
            left.keys().copied().collect::<Vec<_>>().join(", ")
        ));
    }
    let score = if !fatal.is_empty() {
        0.0
    } else if !minor.is_empty() {
        0.5
    } else {
        1.0
    };
    let edges: usize = plan.tasks.iter().map(|t| t.depends_on.len()).sum();
    let mut c = c.scored(
        score,
        format!(
            "{} tasks, {edges} dependencies, {} problems",
            plan.tasks.len(),
            fatal.len() + minor.len()
        ),
    );
    c.evidence = fatal.into_iter().chain(minor).collect();
    c
}
