//! Phase 2: the product brief. Goals come from the clauses of the request; users,
//! constraints and the state of the code from the discovery context and the code's paths.

use super::context::{self, Availability, Discovery};
use super::text::{self, Topic};
use super::{BRIEF_TEMPLATE, Ctx, Draft, Moscow, Step, template};
use crate::specdoc::{md, spec};

/// At most this many goals; further clauses are listed as an open question.
const MAX_GOALS: usize = 7;

/// One goal of the brief.
struct Goal {
    id: String,
    text: String,
    priority: Moscow,
    metric: String,
    target: String,
}

/// A success metric and its target for a goal, by its main topic.
fn metric_for(goal: &str) -> (&'static str, &'static str) {
    match text::topics(goal).first() {
        Some(Topic::Security) => (
            "Negative tests for unauthorised or malformed access",
            "all refused; no open high-severity review finding",
        ),
        Some(Topic::Performance) => (
            "p95 time of the affected operation, measured by a benchmark",
            "at or below the baseline measured before the change (figure to confirm)",
        ),
        Some(Topic::Scale) => (
            "Operations handled at the expected peak load",
            "peak load handled without errors (figure to confirm)",
        ),
        Some(Topic::Usability) => (
            "Scripted end-to-end run of the user flow",
            "completes without manual help; passes in CI",
        ),
        Some(Topic::Data) => (
            "Round-trip tests: data written, then read back",
            "every case reads back unchanged",
        ),
        Some(Topic::Testing) => (
            "Test coverage of the touched modules",
            "not lower than before the change",
        ),
        Some(Topic::Docs) => (
            "Behaviours documented with an example",
            "every new command, option or endpoint",
        ),
        None => (
            "Acceptance criteria of the requirements tracing to this goal",
            "all pass in CI",
        ),
    }
}

/// Role words of the request and the user group each names.
const ROLES: &[(&str, &str)] = &[
    ("admin", "Administrator"),
    ("admins", "Administrator"),
    ("administrator", "Administrator"),
    ("administrators", "Administrator"),
    ("developer", "Developer"),
    ("developers", "Developer"),
    ("maintainer", "Maintainer"),
    ("maintainers", "Maintainer"),
    ("operator", "Operator"),
    ("operators", "Operator"),
    ("customer", "Customer"),
    ("customers", "Customer"),
    ("manager", "Manager"),
    ("managers", "Manager"),
    ("player", "Player"),
    ("players", "Player"),
    ("student", "Student"),
    ("students", "Student"),
    ("teacher", "Teacher"),
    ("teachers", "Teacher"),
    ("editor", "Editor"),
    ("editors", "Editor"),
    ("reviewer", "Reviewer"),
    ("reviewers", "Reviewer"),
    ("visitor", "Visitor"),
    ("visitors", "Visitor"),
    ("user", "End user"),
    ("users", "End user"),
];

/// Where the user groups came from.
#[derive(PartialEq)]
enum UserSource {
    Discovery,
    Request,
    Assumed,
}

/// The user groups: the analyst's, else role words of the request, else an assumption from
/// the code (end users for a front end, developers otherwise).
fn users(task: &str, d: &Discovery) -> (Vec<String>, UserSource) {
    if !d.target_users.is_empty() {
        return (d.target_users.clone(), UserSource::Discovery);
    }
    let mut found: Vec<String> = Vec::new();
    for w in text::words(task) {
        if let Some((_, role)) = ROLES.iter().find(|(word, _)| *word == w)
            && !found.iter().any(|f| f == role)
        {
            found.push((*role).to_owned());
        }
    }
    if !found.is_empty() {
        return (found, UserSource::Request);
    }
    let guess = if d.has_signal("frontend_framework") {
        "End user"
    } else {
        "Developer"
    };
    (vec![guess.to_owned()], UserSource::Assumed)
}

/// Constraint words that make a constraint a business one.
const BUSINESS: &[&str] = &[
    "budget", "deadline", "cost", "licen", "legal", "complian", "gdpr", "hipaa", "contract",
    "release", "date", "customer", "market", "approval",
];

fn is_business(constraint: &str) -> bool {
    let lower = constraint.to_lowercase();
    BUSINESS.iter().any(|b| lower.contains(b))
}

/// Writes `spec/product-brief.md`.
pub fn write(ctx: &Ctx) -> Step<Draft> {
    let d = &ctx.discovery;
    let code = &d.code;
    let clauses = text::clauses(&ctx.task_text);
    let negatives: Vec<String> = clauses
        .iter()
        .filter(|c| c.negative)
        .map(|c| c.text.clone())
        .collect();
    let positives: Vec<&text::Clause> = clauses.iter().filter(|c| !c.negative).collect();
    let overflow: Vec<String> = positives
        .iter()
        .skip(MAX_GOALS)
        .map(|c| c.text.clone())
        .collect();
    let mut goals: Vec<Goal> = positives
        .iter()
        .take(MAX_GOALS)
        .enumerate()
        .map(|(i, c)| {
            let (metric, target) = metric_for(&c.text);
            Goal {
                id: format!("G-{:03}", i + 1),
                text: c.text.clone(),
                priority: c
                    .priority
                    .unwrap_or(if i < 3 { Moscow::Must } else { Moscow::Should }),
                metric: metric.to_owned(),
                target: target.to_owned(),
            }
        })
        .collect();
    let mut questions = ctx.common_questions();
    if goals.is_empty() {
        let (metric, target) = metric_for("");
        goals.push(Goal {
            id: "G-001".into(),
            text: "Deliver the change the request describes".into(),
            priority: Moscow::Must,
            metric: metric.into(),
            target: target.into(),
        });
        questions.push(
            "The request names no goal that could be read offline; what should the change \
             achieve?"
                .into(),
        );
    }
    // A problem statement that only repeats the request adds nothing.
    let problem = if text::one_line(&d.problem_statement)
        .trim_end_matches('.')
        .eq_ignore_ascii_case(md::inline(&ctx.task_text).trim_end_matches('.'))
    {
        ""
    } else {
        d.problem_statement.as_str()
    };
    let (users, user_source) = users(&ctx.task_text, d);
    match user_source {
        UserSource::Discovery => {}
        UserSource::Request => questions.push(format!(
            "The user groups ({}) were read from role words of the request; are they the \
             right ones, and is any missing?",
            users.join(", ")
        )),
        // The analyst may already ask who the users are.
        UserSource::Assumed
            if d.open_questions
                .iter()
                .any(|q| q.to_lowercase().contains("who ")) => {}
        UserSource::Assumed => questions.push(format!(
            "Who are the users? Neither the request nor the discovery context names them; \
             \"{}\" is an assumption.",
            users[0]
        )),
    }
    if goals.iter().any(|g| g.target.contains("to confirm")) {
        questions.push(
            "Which numbers stand behind the targets marked \"to confirm\"? No baseline can be \
             measured offline."
                .into(),
        );
    }
    let business: Vec<String> = d
        .constraints
        .iter()
        .filter(|c| is_business(c))
        .cloned()
        .collect();
    if business.is_empty() {
        questions.push("Which deadline, budget or sign-off applies to this change?".into());
    }
    if code.test_framework.is_none() {
        questions
            .push("No test framework was found: how will the success metrics be checked?".into());
    }
    if !overflow.is_empty() {
        questions.push(format!(
            "The request has more clauses than the {MAX_GOALS} goals kept; should these become \
             goals too: {}?",
            overflow
                .iter()
                .map(|o| format!("\"{}\"", text::shorten(o, 60)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    questions.extend(d.open_questions.iter().cloned());
    questions.push("Are the goals complete, and is their order of priority right?".into());

    let files = ctx.input.code.files();
    let related: Vec<Option<String>> = goals
        .iter()
        .map(|g| context::matching_module(files, &text::key_words(&g.text)).map(|(m, _)| m))
        .collect();
    let goal_list: Vec<String> = goals.iter().map(|g| text::lower_first(&g.text)).collect();
    let goal_series = text::series(&goal_list);
    let user_phrase = text::and_list(&users.iter().map(|u| plural(u)).collect::<Vec<_>>());

    let summary = format!(
        "This brief turns the request \"{}\" into {} for {}. Each goal has a success metric \
         with a target, and {} what could not be settled offline.",
        md::inline(&text::shorten(&ctx.task_text, 120)),
        count(goals.len(), "goal"),
        user_phrase.to_lowercase(),
        if questions.len() == 1 {
            "one open question lists".to_owned()
        } else {
            format!("{} open questions list", questions.len())
        }
    );
    let vision = format!(
        "When this work is done, {} can count on the following: {}. Each result is judged by \
         the metric beside its goal, so \"done\" can be checked rather than argued.",
        user_phrase.to_lowercase(),
        goal_series
    );
    let mut situation = Vec::new();
    if !problem.is_empty() {
        situation.push(format!("The analyst states the problem as: {}", problem));
    } else {
        situation.push(format!(
            "The request reads: \"{}\". No separate problem statement was given.",
            md::inline(&ctx.task_text)
        ));
    }
    match code.primary_language() {
        Some(lang) => situation.push(format!(
            "The repository holds {} files, mostly {lang} ({:.0}% of the code), according to \
             {}.",
            code.file_count, code.languages[0].share, code.source
        )),
        None => situation.push(format!(
            "No source code was found in the repository ({} files).",
            code.file_count
        )),
    }
    let mut matched = Vec::new();
    let mut unmatched = Vec::new();
    for (g, m) in goals.iter().zip(&related) {
        match m {
            Some(m) => matched.push(format!("`{m}` ({})", g.id)),
            None => unmatched.push(g.id.clone()),
        }
    }
    if !matched.is_empty() {
        situation.push(format!(
            "Code whose paths match the goals: {}.",
            text::and_list(&matched)
        ));
    }
    if !unmatched.is_empty() {
        situation.push(format!(
            "No existing path matches {}; that part is likely new code.",
            text::and_list(&unmatched)
        ));
    }
    let mut impact = vec![format!(
        "Until the change lands, {} go without: {}.",
        user_phrase.to_lowercase(),
        goal_series
    )];
    if !d.domain.is_empty() {
        impact.push(format!("Domain: {}.", d.domain));
    }
    if !d.signals.is_empty() {
        impact.push(format!(
            "The analyst flagged {} in the code base; a change here has to respect them.",
            d.signals
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }

    let persona = template::part(BRIEF_TEMPLATE, "persona")?;
    let mut persona_blocks = Vec::new();
    for user in &users {
        let words = text::words(user);
        let mine: Vec<String> = goals
            .iter()
            .filter(|g| {
                let gw = text::words(&g.text);
                words.iter().any(|w| {
                    gw.iter()
                        .any(|x| x.trim_end_matches('s') == w.trim_end_matches('s'))
                })
            })
            .map(|g| g.id.clone())
            .collect();
        let needs = if mine.is_empty() {
            goals.iter().map(|g| g.id.clone()).collect::<Vec<_>>()
        } else {
            mine
        };
        persona_blocks.push(template::render(
            persona,
            &[
                ("role", user.clone()),
                ("needs", format!("the goals {}", needs.join(", "))),
                (
                    "pain_points",
                    if problem.is_empty() {
                        "not stated in the request; see Open Questions".to_owned()
                    } else {
                        text::shorten(problem, 200)
                    },
                ),
                (
                    "success",
                    "the metrics of those goals reach their targets".to_owned(),
                ),
                (
                    "source",
                    match user_source {
                        UserSource::Discovery => "the discovery context",
                        UserSource::Request => "role words of the request",
                        UserSource::Assumed => "an assumption (see Open Questions)",
                    }
                    .to_owned(),
                ),
            ],
        )?);
    }

    let goal_rows: Vec<String> = goals
        .iter()
        .map(|g| {
            format!(
                "| {} | {} | {} | {} | {} |",
                g.id,
                text::cell(&g.text),
                g.priority.as_str(),
                text::cell(&g.metric),
                text::cell(&g.target)
            )
        })
        .collect();
    let in_scope: Vec<String> = goals
        .iter()
        .map(|g| format!("{}: {}", g.id, g.text))
        .collect();
    let mut out_of_scope: Vec<String> = negatives
        .iter()
        .map(|n| match n.strip_prefix("Without ") {
            Some(rest) => format!("{} (ruled out by the request)", text::upper_first(rest)),
            None => format!("{n} (stated in the request)"),
        })
        .collect();
    out_of_scope.push("Work no goal above needs, even where it touches the same code".into());
    out_of_scope.push(
        "Changes to the build, release or deployment set-up, unless a goal requires them".into(),
    );
    let mut assumptions = Vec::new();
    if let Some(stack) = code.stack_phrase() {
        assumptions.push(format!(
            "The change is built in this repository, on its current stack: {stack}"
        ));
    }
    if let Some(t) = &code.test_framework {
        assumptions.push(format!(
            "Changes are verified with {}{}",
            t.name,
            if t.command.is_empty() {
                String::new()
            } else {
                format!(" (`{}`)", t.command)
            }
        ));
    }
    if user_source != UserSource::Discovery {
        assumptions.push(format!(
            "The users named above ({}) are the ones the request means",
            users.join(", ")
        ));
    }
    assumptions.push("Goals listed later in the table matter less than earlier ones".into());
    let state_rows: Vec<String> = goals
        .iter()
        .zip(&related)
        .map(|(g, m)| {
            format!(
                "| {} | {} | {} | {} |",
                g.id,
                match m {
                    Some(m) => format!("Related code exists in `{m}`"),
                    None => "No existing path matches".to_owned(),
                },
                text::cell(&g.text),
                text::cell(&format!("{}: {}", g.metric, g.target))
            )
        })
        .collect();

    let mut technical: Vec<String> = d
        .constraints
        .iter()
        .filter(|c| !is_business(c))
        .cloned()
        .collect();
    technical.extend(
        negatives
            .iter()
            .map(|n| format!("From the request: {}", text::lower_first(n))),
    );
    for (i, l) in code.languages.iter().take(3).enumerate() {
        technical.push(format!(
            "{} language: {} ({:.0}% of the code, {})",
            if i == 0 { "Main" } else { "Other" },
            l.name,
            l.share,
            count(l.files as usize, "file")
        ));
    }
    if !code.frameworks.is_empty() {
        technical.push(format!("Frameworks in use: {}", code.frameworks.join(", ")));
    }
    match &code.test_framework {
        Some(t) => technical.push(format!(
            "Tests run with {}{}{}",
            t.name,
            if t.command.is_empty() {
                String::new()
            } else {
                format!(" (`{}`)", t.command)
            },
            if t.evidence.is_empty() {
                String::new()
            } else {
                format!("; evidence: {}", t.evidence)
            }
        )),
        None => technical.push("No test framework was found".into()),
    }
    let dependency_list: Vec<String> = code
        .manifests
        .iter()
        .map(|m| {
            format!(
                "`{}` ({}): {}",
                m.path,
                if m.kind.is_empty() {
                    "manifest"
                } else {
                    &m.kind
                },
                if m.dependencies.is_empty() {
                    "dependencies not listed".to_owned()
                } else {
                    format!("{} declared dependencies", m.dependencies.len())
                }
            )
        })
        .chain(
            code.ci
                .iter()
                .map(|c| format!("Continuous integration: `{c}`")),
        )
        .collect();

    let must = goals.iter().filter(|g| g.priority == Moscow::Must).count();
    let perspectives = [
        format!(
            "**Product:** {} goals, {} of them Must; the first is {} ({}).",
            goals.len(),
            must,
            goals[0].id,
            goals[0].text
        ),
        format!(
            "**Technical:** stack {}; risk signals: {}.{}",
            code.stack_phrase().unwrap_or_else(|| "not known".into()),
            if d.signals.is_empty() {
                "none reported".to_owned()
            } else {
                d.signals.join(", ")
            },
            d.recommendations
                .iter()
                .take(2)
                .map(|r| format!(" Analyst advice: {}.", r.trim_end_matches('.')))
                .collect::<String>()
        ),
        format!(
            "**User:** {user_phrase} are served by every goal; the pain they report: {}.",
            if problem.is_empty() {
                "not stated (see Open Questions)".to_owned()
            } else {
                text::lower_first(problem.trim_end_matches('.'))
            }
        ),
        format!(
            "**Where they meet and differ:** every goal has a metric a test can check. {}",
            if goals.iter().any(|g| g.priority != Moscow::Must) {
                "Goals below Must are the first to drop if time runs short."
            } else {
                "No conflict is visible from the request alone."
            }
        ),
    ];
    let references = [
        format!(
            "Discovery context: `{}` ({})",
            spec::DISCOVERY,
            match d.availability {
                Availability::Present => "read",
                Availability::Missing => "missing",
                Availability::Unreadable(_) => "unreadable",
            }
        ),
        "Request: the task text of the session".to_owned(),
        format!(
            "Next: the requirements, `{}` (DRAFT-002)",
            spec::REQUIREMENTS_INDEX
        ),
    ];

    let path = spec::BRIEF;
    let mut values = ctx.common(path);
    values.extend([
        ("dependencies", ctx.dependencies(&[])),
        ("title", ctx.title.clone()),
        ("summary", summary),
        ("vision", vision),
        ("current_situation", situation.join(" ")),
        ("impact", impact.join(" ")),
        ("users", persona_blocks.join("\n")),
        ("goal_rows", goal_rows.join("\n")),
        ("in_scope", text::bullets(&in_scope, "")),
        ("out_of_scope", text::bullets(&out_of_scope, "")),
        ("assumptions", text::bullets(&assumptions, "")),
        ("state_rows", state_rows.join("\n")),
        ("technical_constraints", text::bullets(&technical, "")),
        (
            "business_constraints",
            text::bullets(
                &business,
                "None stated in the request or found by the analyst; see Open Questions.",
            ),
        ),
        (
            "dependency_list",
            text::bullets(&dependency_list, "No build manifest was found."),
        ),
        ("perspectives", text::bullets(&perspectives, "")),
        ("revision_notes", ctx.revision_notes()?),
        ("open_questions", text::checkboxes(&questions)),
        ("references", text::bullets(&references, "")),
    ]);
    let doc = template::render(template::part(BRIEF_TEMPLATE, "brief")?, &values)?;

    let mut findings = vec![format!(
        "{} from the request: {}",
        count(goals.len(), "goal"),
        goals
            .iter()
            .map(|g| g.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    )];
    findings.push(format!(
        "Users: {} ({})",
        users.join(", "),
        match user_source {
            UserSource::Discovery => "discovery context",
            UserSource::Request => "from the request",
            UserSource::Assumed => "assumed",
        }
    ));
    if d.availability != Availability::Present {
        findings.push("Discovery context unusable: code facts from file names only".into());
    }
    findings.push(format!("{} open questions need answers", questions.len()));
    Ok(Draft {
        summary: format!(
            "product-brief: {}, {}, {} open questions",
            count(goals.len(), "goal"),
            count(users.len(), "user group"),
            questions.len()
        ),
        files: vec![(path.to_owned(), doc)],
        findings,
        decisions: vec![
            "Goals are the request's clauses, split at sentence ends, ';', and at 'and' or commas \
             before a new verb: one goal per stated intent"
                .into(),
            "Goal priority: words such as must/should/could win; otherwise the first three goals \
             are Must and later ones Should, following the order the user wrote them in"
                .into(),
        ],
    })
}

/// `n thing` or `n things` (`story` → `stories`).
pub fn count(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else if let Some(stem) = thing.strip_suffix("ry") {
        format!("{n} {stem}ries")
    } else {
        format!("{n} {thing}s")
    }
}

/// The plural of a user group (`Developer` → `Developers`).
fn plural(group: &str) -> String {
    if group.ends_with('s') {
        group.to_owned()
    } else {
        format!("{group}s")
    }
}
