//! Phase 3: requirements. Each goal of the brief gives one REQ per item of its object list;
//! non-functional requirements come from the analyst's signals, the goals' topics and the
//! stated constraints.

use super::brief::count;
use super::context::{self, Discovery};
use super::parse::{self, GoalRow};
use super::text::{self, Topic};
use super::{Ctx, Draft, Folder, Moscow, Phase, REQUIREMENTS_TEMPLATE, Step, template};
use crate::specdoc::spec;

/// The category of a non-functional requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    /// `NFR-P-NNN`.
    Performance,
    /// `NFR-S-NNN`.
    Security,
    /// `NFR-SC-NNN`.
    Scalability,
    /// `NFR-U-NNN`.
    Usability,
}

impl Category {
    fn code(self) -> &'static str {
        match self {
            Category::Performance => "P",
            Category::Security => "S",
            Category::Scalability => "SC",
            Category::Usability => "U",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Category::Performance => "Performance",
            Category::Security => "Security",
            Category::Scalability => "Scalability",
            Category::Usability => "Usability",
        }
    }

    fn topic(self) -> Topic {
        match self {
            Category::Performance => Topic::Performance,
            Category::Security => Topic::Security,
            Category::Scalability => Topic::Scale,
            Category::Usability => Topic::Usability,
        }
    }

    fn of_topic(topic: Topic) -> Option<Category> {
        [
            Category::Performance,
            Category::Security,
            Category::Scalability,
            Category::Usability,
        ]
        .into_iter()
        .find(|c| c.topic() == topic)
    }
}

/// A non-functional requirement before it gets its id.
struct NfrSpec {
    category: Category,
    title: String,
    requirement: String,
    metric: String,
    target: String,
    method: String,
    priority: Moscow,
    source: String,
}

/// A non-functional requirement an analyst signal calls for.
struct SignalNfr {
    /// Any of these signals calls for it.
    signals: &'static [&'static str],
    category: Category,
    title: &'static str,
    requirement: &'static str,
    metric: &'static str,
    target: &'static str,
    method: &'static str,
}

/// NFRs the analyst's signals call for.
const SIGNAL_NFRS: &[SignalNfr] = &[
    SignalNfr {
        signals: &["auth_detected"],
        category: Category::Security,
        title: "Protect credentials and sessions",
        requirement: "Passwords, tokens and session identifiers are never logged or stored in clear text, \
         and every protected operation checks who is calling.",
        metric: "Protected operations reached without valid credentials",
        target: "0 in the negative tests",
        method: "Negative tests in CI and a security review of the diff",
    },
    SignalNfr {
        signals: &["crypto_usage"],
        category: Category::Security,
        title: "Use vetted cryptography",
        requirement: "Cryptography goes through maintained library primitives with their current defaults: \
         no home-made algorithms and no keys in the source.",
        metric: "Hand-written cryptographic routines or hard-coded keys in the diff",
        target: "0",
        method: "Review of the diff and a secret scan",
    },
    SignalNfr {
        signals: &["sql_detected", "injection_risk"],
        category: Category::Security,
        title: "Keep queries safe from injection",
        requirement: "Queries receive outside input only as bound parameters, never as text pasted into \
         the query.",
        metric: "Queries assembled from unescaped input",
        target: "0",
        method: "Review of the diff and injection test cases",
    },
    SignalNfr {
        signals: &["eval_usage"],
        category: Category::Security,
        title: "Never evaluate untrusted input",
        requirement: "No input from outside reaches a code-evaluation call.",
        metric: "Evaluation calls reachable from outside input",
        target: "0",
        method: "Review of the diff",
    },
    SignalNfr {
        signals: &["perf_sensitive"],
        category: Category::Performance,
        title: "Keep hot paths fast",
        requirement: "Operations the change touches on performance-sensitive code stay as fast as before.",
        metric: "p95 duration of the touched operations",
        target: "at most 10% above the baseline (baseline to confirm)",
        method: "Benchmark before and after the change",
    },
    SignalNfr {
        signals: &["realtime_detected"],
        category: Category::Performance,
        title: "Bound the delay of real-time updates",
        requirement: "Updates reach subscribers within a bounded delay.",
        metric: "Delay from event to delivery, p95",
        target: "under 1 s (figure to confirm)",
        method: "Timed integration test",
    },
    SignalNfr {
        signals: &["scaling_concern"],
        category: Category::Scalability,
        title: "Scale with the expected load",
        requirement: "The new code paths keep working at the expected peak load without redesign.",
        metric: "Operations handled at peak load without errors",
        target: "expected peak (figure to confirm)",
        method: "Load test",
    },
    SignalNfr {
        signals: &["concurrency_issue"],
        category: Category::Scalability,
        title: "Stay correct under concurrent use",
        requirement: "Simultaneous use gives the same results as the same requests one after another.",
        metric: "Failures in a concurrent stress test",
        target: "0",
        method: "Stress test with parallel clients",
    },
    SignalNfr {
        signals: &["frontend_framework"],
        category: Category::Usability,
        title: "Keep the interface accessible",
        requirement: "New screens and controls work with a keyboard alone and with a screen reader.",
        metric: "Serious accessibility violations in automated checks",
        target: "0 (WCAG 2.1 AA)",
        method: "Automated accessibility check in CI",
    },
];

/// NFRs the goals' topics call for when no signal gave one of that category.
fn topic_nfr(category: Category) -> NfrSpec {
    let (title, requirement, metric, target, method) = match category {
        Category::Security => (
            "Restrict new features to the people allowed to use them",
            "Every operation the goals add checks the caller's rights before acting.",
            "Operations reachable without the needed rights",
            "0 in the negative tests",
            "Negative tests in CI",
        ),
        Category::Performance => (
            "Meet a response-time budget",
            "The operations the goals add or speed up answer within an agreed time.",
            "p95 duration of those operations",
            "within the budget (figure to confirm)",
            "Benchmark in CI",
        ),
        Category::Scalability => (
            "Handle growth without redesign",
            "The goals' features keep working when use grows to the expected peak.",
            "Operations handled at peak load without errors",
            "expected peak (figure to confirm)",
            "Load test",
        ),
        Category::Usability => (
            "Keep the new flow easy to use",
            "A first-time user completes the new flow without help.",
            "First-time users completing the flow unaided",
            "most test users (figure to confirm)",
            "Scripted walkthrough or usability test",
        ),
    };
    NfrSpec {
        category,
        title: title.into(),
        requirement: requirement.into(),
        metric: metric.into(),
        target: target.into(),
        method: method.into(),
        priority: if category == Category::Security {
            Moscow::Must
        } else {
            Moscow::Should
        },
        source: "the goals of the brief".into(),
    }
}

/// The NFRs: from signals, then constraints, then goal topics, then a baseline for security.
fn nfr_specs(d: &Discovery, goals: &[GoalRow]) -> (Vec<NfrSpec>, Vec<String>) {
    let mut specs: Vec<NfrSpec> = Vec::new();
    for n in SIGNAL_NFRS {
        let Some(signal) = n.signals.iter().find(|s| d.has_signal(s)) else {
            continue;
        };
        specs.push(NfrSpec {
            category: n.category,
            title: n.title.into(),
            requirement: n.requirement.into(),
            metric: n.metric.into(),
            target: n.target.into(),
            method: n.method.into(),
            priority: if n.category == Category::Security {
                Moscow::Must
            } else {
                Moscow::Should
            },
            source: format!("signal `{signal}` ({})", d.evidence_of(signal)),
        });
    }
    let mut unclassified = Vec::new();
    for c in &d.constraints {
        match text::topics(c).into_iter().find_map(Category::of_topic) {
            Some(category) => {
                let (metric, method) = match category {
                    Category::Performance => (
                        "Duration of the operations the constraint names",
                        "Benchmark in CI",
                    ),
                    Category::Security => (
                        "Violations of the constraint found in tests or review",
                        "Negative tests and review of the diff",
                    ),
                    Category::Scalability => ("Load handled as the constraint names", "Load test"),
                    Category::Usability => (
                        "Users completing the flow as the constraint names",
                        "Scripted walkthrough",
                    ),
                };
                specs.push(NfrSpec {
                    category,
                    title: text::shorten(c, 60),
                    requirement: format!(
                        "The stated constraint holds: {}.",
                        c.trim_end_matches('.')
                    ),
                    metric: metric.into(),
                    target: format!("as stated: {}", c.trim_end_matches('.')),
                    method: method.into(),
                    priority: Moscow::Must,
                    source: "a constraint of the discovery context".into(),
                })
            }
            None => unclassified.push(c.clone()),
        }
    }
    for topic in [
        Topic::Security,
        Topic::Performance,
        Topic::Scale,
        Topic::Usability,
    ] {
        let category = Category::of_topic(topic).expect("each of these topics has a category");
        if goals.iter().any(|g| text::topics(&g.text).contains(&topic))
            && !specs.iter().any(|s| s.category == category)
        {
            specs.push(topic_nfr(category));
        }
    }
    if !specs.iter().any(|s| s.category == Category::Security) {
        specs.push(NfrSpec {
            category: Category::Security,
            title: "Handle input and secrets safely".into(),
            requirement: "Input from outside is validated where it enters, and no secret (key, \
                          password, token) is committed to the repository."
                .into(),
            metric: "Secrets in the diff; unvalidated external inputs".into(),
            target: "0 and 0".into(),
            method: "Secret scan and review of the diff".into(),
            priority: Moscow::Must,
            source: "the baseline every change meets".into(),
        });
    }
    specs.sort_by_key(|s| s.category);
    (specs, unclassified)
}

/// External systems a request may name: (word, system, protocol, data format).
const SYSTEMS: &[(&str, &str, &str, &str)] = &[
    ("redis", "Redis", "RESP over TCP", "keys and values"),
    ("postgres", "PostgreSQL", "SQL over TCP", "rows"),
    ("postgresql", "PostgreSQL", "SQL over TCP", "rows"),
    ("mysql", "MySQL", "SQL over TCP", "rows"),
    ("sqlite", "SQLite", "embedded library", "rows"),
    (
        "mongodb",
        "MongoDB",
        "MongoDB wire protocol",
        "BSON documents",
    ),
    ("kafka", "Kafka", "Kafka protocol", "messages"),
    ("rabbitmq", "RabbitMQ", "AMQP", "messages"),
    ("s3", "Object storage (S3)", "HTTPS", "objects"),
    ("github", "GitHub", "HTTPS API", "JSON"),
    ("gitlab", "GitLab", "HTTPS API", "JSON"),
    ("slack", "Slack", "HTTPS webhooks", "JSON"),
    ("stripe", "Stripe", "HTTPS API", "JSON"),
    (
        "oauth",
        "OAuth identity provider",
        "OAuth 2.0 over HTTPS",
        "tokens (JSON)",
    ),
    (
        "oauth2",
        "OAuth identity provider",
        "OAuth 2.0 over HTTPS",
        "tokens (JSON)",
    ),
    (
        "sso",
        "Single sign-on provider",
        "OIDC or SAML over HTTPS",
        "tokens",
    ),
    ("ldap", "LDAP directory", "LDAP", "directory entries"),
    ("smtp", "Mail server", "SMTP", "e-mail"),
    ("email", "Mail server", "SMTP", "e-mail"),
    ("webhook", "Webhook receivers", "HTTPS", "JSON"),
    ("webhooks", "Webhook receivers", "HTTPS", "JSON"),
    ("graphql", "GraphQL API", "HTTPS", "JSON"),
    ("grpc", "gRPC services", "HTTP/2", "protobuf"),
];

/// The external systems `text` names, each once, in table order.
pub fn systems(text: &str) -> Vec<(&'static str, &'static str, &'static str)> {
    let words = text::words(text);
    let mut out: Vec<(&str, &str, &str)> = Vec::new();
    for (word, system, protocol, format) in SYSTEMS {
        if words.iter().any(|w| w == word) && !out.iter().any(|(s, _, _)| s == system) {
            out.push((system, protocol, format));
        }
    }
    out
}

/// The reason a user wants something of these topics.
fn benefit(topics: &[Topic], goal: &GoalRow) -> String {
    match topics.first() {
        Some(Topic::Security) => {
            "only the people who are allowed can reach what it protects".into()
        }
        Some(Topic::Performance) => "I spend less time waiting".into(),
        Some(Topic::Scale) => "it keeps working as use grows".into(),
        Some(Topic::Usability) => "I can finish the task without help".into(),
        Some(Topic::Data) => "my data is kept correctly and can be found again".into(),
        Some(Topic::Testing) => "regressions are caught before they reach anyone".into(),
        Some(Topic::Docs) => "I can learn the behaviour without reading the code".into(),
        None => format!("goal {} of the brief is met", goal.id),
    }
}

/// One functional requirement.
struct Req {
    id: String,
    title: String,
    goal: GoalRow,
    parts: usize,
    topics: Vec<Topic>,
}

/// Writes `spec/requirements/_index.md` and one file per requirement.
pub fn write(ctx: &Ctx, folder: &Folder) -> Step<Draft> {
    let brief = ctx.require(folder, spec::BRIEF, Phase::Requirements)?;
    let goals = parse::goals(brief);
    if goals.is_empty() {
        return Err(format!(
            "cannot write the requirements: `{}` has no goals table with G-NNN ids",
            spec::BRIEF
        ));
    }
    let users = parse::users(brief);
    let user = users
        .first()
        .cloned()
        .unwrap_or_else(|| "Developer".to_owned());
    let actor = format!("{} {}", text::article(&user), user.to_lowercase());
    let d = &ctx.discovery;
    let code = &d.code;
    let files = ctx.input.code.files();

    let mut reqs: Vec<Req> = Vec::new();
    for g in &goals {
        let parts = text::decompose(&g.text);
        let n = parts.len();
        for title in parts {
            reqs.push(Req {
                id: format!("REQ-{:03}", reqs.len() + 1),
                topics: text::topics(&format!("{title} {}", g.text)),
                title,
                goal: g.clone(),
                parts: n,
            });
        }
    }
    let (specs, unclassified) = nfr_specs(d, &goals);
    let mut nfr_ids: Vec<String> = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        let n = specs[..i]
            .iter()
            .filter(|o| o.category == s.category)
            .count()
            + 1;
        nfr_ids.push(format!("NFR-{}-{n:03}", s.category.code()));
    }
    let nfr_traces: Vec<Vec<String>> = specs
        .iter()
        .map(|s| {
            let matched: Vec<String> = goals
                .iter()
                .filter(|g| text::topics(&g.text).contains(&s.category.topic()))
                .map(|g| g.id.clone())
                .collect();
            if matched.is_empty() {
                goals.iter().map(|g| g.id.clone()).collect()
            } else {
                matched
            }
        })
        .collect();
    let ids_of = |category: Category| -> Vec<String> {
        specs
            .iter()
            .zip(&nfr_ids)
            .filter(|(s, _)| s.category == category)
            .map(|(_, id)| id.clone())
            .collect()
    };

    let dir = "spec/requirements";
    let mut out_files: Vec<(String, String)> = Vec::new();
    let functional = template::part(REQUIREMENTS_TEMPLATE, "functional")?;
    let mut req_paths = Vec::new();
    for r in &reqs {
        let file = format!("{}-{}.md", r.id, text::slug(&r.title, "requirement"));
        let path = format!("{dir}/{file}");
        let verb_led = r.title.split_whitespace().next().is_some_and(text::is_verb);
        let want = if verb_led {
            format!("I want to {}", text::lower_first(&r.title))
        } else {
            format!("I want this to hold: {}", text::lower_first(&r.title))
        };
        let story = format!(
            "As {actor}, {want}, so that {}.",
            benefit(&r.topics, &r.goal)
        );
        let mut criteria = vec![if verb_led {
            format!(
                "Given the change is in place, when {actor} asks to {}, then it succeeds and \
                 an automated test shows the result",
                text::lower_first(&r.title)
            )
        } else {
            format!(
                "Given the change is in place, when the behaviour is exercised, then this \
                 holds: {}; an automated test shows it",
                text::lower_first(&r.title)
            )
        }];
        criteria.push(format!(
            "Given invalid or missing input, when {actor} tries the same, then it is refused \
             with a message that names the problem, and nothing is changed"
        ));
        let perf = ids_of(Category::Performance);
        match r.topics.first() {
            Some(Topic::Security) => criteria.push(
                "Given a caller without the needed rights, when they try it, then access is \
                 refused and no data is exposed"
                    .into(),
            ),
            Some(Topic::Performance) => criteria.push(format!(
                "Given the benchmark for {}, when it runs after the change, then the measured \
                 time stays within the target",
                perf.first()
                    .cloned()
                    .unwrap_or_else(|| "this operation".into())
            )),
            Some(Topic::Scale) => criteria.push(
                "Given many simultaneous requests, when they arrive together, then each one is \
                 handled correctly"
                    .into(),
            ),
            Some(Topic::Usability) => criteria.push(
                "Given a keyboard-only user, when they go through the flow, then every step can \
                 be reached and completed"
                    .into(),
            ),
            Some(Topic::Data) => criteria.push(
                "Given data stored before the change, when the new version reads it, then \
                 nothing is lost or altered"
                    .into(),
            ),
            _ => {}
        }
        if let Some(t) = code
            .test_framework
            .as_ref()
            .filter(|t| !t.command.is_empty())
        {
            criteria.push(format!(
                "Given the test suite, when `{}` runs, then it passes, new tests for {} \
                 included",
                t.command, r.id
            ));
        }
        let mut description = vec![if r.parts > 1 {
            format!(
                "{}. It is one of {} parts of {} (\"{}\"), which the request lists together.",
                r.title.trim_end_matches('.'),
                r.parts,
                r.goal.id,
                r.goal.text
            )
        } else {
            format!(
                "{}. It is goal {} of the brief, taken whole as one requirement.",
                r.title.trim_end_matches('.'),
                r.goal.id
            )
        }];
        match context::matching_module(files, &text::key_words(&r.title)) {
            Some((m, _)) => description.push(format!(
                "Code that may be affected, matched by path: `{m}`."
            )),
            None => description
                .push("No existing path matches its key words, so it is probably new code.".into()),
        }
        if r.topics.contains(&Topic::Security) {
            description.push(format!(
                "The security requirements {} apply.",
                text::and_list(&ids_of(Category::Security))
            ));
        }
        let traces = [
            format!("Goal: {} ({}) in `{}`", r.goal.id, r.goal.text, spec::BRIEF),
            format!(
                "Architecture: the components implementing {} in `{}` (phase 4)",
                r.id,
                spec::ARCHITECTURE_INDEX
            ),
            format!(
                "Implemented by: the stories tracing {} in `{}` (phase 5)",
                r.id,
                spec::EPICS_INDEX
            ),
        ];
        let mut values = ctx.common(&path);
        values.extend([
            ("id", r.id.clone()),
            ("priority", r.goal.priority.as_str().to_owned()),
            (
                "traces_to",
                text::yaml_list(std::slice::from_ref(&r.goal.id)),
            ),
            ("title", r.title.clone()),
            (
                "summary",
                format!(
                    "A {} functional requirement serving {}. It is done when every acceptance \
                     criterion below holds.",
                    r.goal.priority.as_str(),
                    r.goal.id
                ),
            ),
            ("description", description.join(" ")),
            ("user_story", story),
            ("acceptance_criteria", text::checkboxes(&criteria)),
            ("traces", text::bullets(&traces, "")),
        ]);
        out_files.push((path, template::render(functional, &values)?));
        req_paths.push(file);
    }

    let non_functional = template::part(REQUIREMENTS_TEMPLATE, "non-functional")?;
    let mut nfr_paths = Vec::new();
    for ((s, id), traces) in specs.iter().zip(&nfr_ids).zip(&nfr_traces) {
        let file = format!("{id}-{}.md", text::slug(&s.title, "requirement"));
        let path = format!("{dir}/{file}");
        let mut values = ctx.common(&path);
        values.extend([
            ("id", id.clone()),
            ("category", s.category.name().to_owned()),
            ("priority", s.priority.as_str().to_owned()),
            ("traces_to", text::yaml_list(traces)),
            ("title", s.title.clone()),
            (
                "summary",
                format!(
                    "A {} {} requirement, from {}. It bounds how the functional requirements \
                     are met rather than what they do.",
                    s.priority.as_str(),
                    s.category.name().to_lowercase(),
                    s.source
                ),
            ),
            ("requirement", s.requirement.clone()),
            ("metric", text::cell(&s.metric)),
            ("target", text::cell(&s.target)),
            ("method", text::cell(&s.method)),
            (
                "traces",
                text::bullets(
                    &[
                        format!("Goals: {}", traces.join(", ")),
                        format!("Source: {}", s.source),
                        format!(
                            "Architecture: the decisions tracing {id} in `{}` (phase 4)",
                            spec::ARCHITECTURE_INDEX
                        ),
                    ],
                    "",
                ),
            ),
        ]);
        out_files.push((path, template::render(non_functional, &values)?));
        nfr_paths.push(file);
    }

    // The index.
    let moscow_rows: Vec<String> = Moscow::ALL
        .iter()
        .map(|m| {
            format!(
                "| {} | {} | {} |",
                m.as_str(),
                reqs.iter().filter(|r| r.goal.priority == *m).count(),
                specs.iter().filter(|s| s.priority == *m).count()
            )
        })
        .collect();
    let functional_rows: Vec<String> = reqs
        .iter()
        .zip(&req_paths)
        .map(|(r, file)| {
            format!(
                "| [{}]({file}) | {} | {} | {} |",
                r.id,
                text::cell(&r.title),
                r.goal.priority.as_str(),
                r.goal.id
            )
        })
        .collect();
    let nfr_rows: Vec<String> = specs
        .iter()
        .zip(&nfr_ids)
        .zip(&nfr_paths)
        .map(|((s, id), file)| {
            format!(
                "| [{id}]({file}) | {} | {} | {} | {} |",
                s.category.name(),
                text::cell(&s.title),
                s.priority.as_str(),
                text::cell(&s.target)
            )
        })
        .collect();
    let mut data = Vec::new();
    if d.has_signal("sql_detected") {
        data.push(format!(
            "A relational database is in use ({}); new data follows its existing schema \
             conventions.",
            d.evidence_of("sql_detected")
        ));
    }
    if d.has_signal("data_migration") {
        data.push(format!(
            "Schema migrations exist ({}); each new or changed field comes with a migration \
             and a way back.",
            d.evidence_of("data_migration")
        ));
    }
    let data_reqs: Vec<String> = reqs
        .iter()
        .filter(|r| r.topics.contains(&Topic::Data))
        .map(|r| r.id.clone())
        .collect();
    if !data_reqs.is_empty() {
        data.push(format!(
            "Requirements that store or move data: {}. Their entities and fields are named in \
             the architecture's data section.",
            data_reqs.join(", ")
        ));
    }
    let mut questions = ctx.common_questions();
    if data.is_empty() {
        data.push(
            "The request names no stored data and no database was detected. If the change \
             keeps state, which entities it holds is an open question."
                .into(),
        );
        questions.push("Does the change keep any state, and if so, what are its entities?".into());
    }
    let systems = systems(&ctx.task_text);
    let integration = if systems.is_empty() {
        "The request names no external system. Integrations found later are added here with \
         their direction, protocol and data format."
            .to_owned()
    } else {
        questions.push(format!(
            "In which direction does data flow between the product and {}?",
            text::and_list(&systems.iter().map(|s| s.0.to_owned()).collect::<Vec<_>>())
        ));
        let mut rows = vec![
            "| System | Direction | Protocol | Data Format | Notes |".to_owned(),
            "|---|---|---|---|---|".to_owned(),
        ];
        rows.extend(systems.iter().map(|(system, protocol, format)| {
            format!("| {system} | to confirm | {protocol} | {format} | named in the request |")
        }));
        rows.join("\n")
    };
    let mut constraints: Vec<String> = unclassified
        .iter()
        .map(|c| format!("{c} (from the discovery context)"))
        .collect();
    constraints.extend(
        text::clauses(&ctx.task_text)
            .into_iter()
            .filter(|c| c.negative)
            .map(|c| format!("{} (from the request)", c.text)),
    );
    if let Some(stack) = code.stack_phrase() {
        constraints.push(format!(
            "The requirements are met on the current stack: {stack}"
        ));
    }
    constraints.push(format!(
        "The goals of `{}` are taken as complete; a new goal needs a revision of the brief \
         first",
        spec::BRIEF
    ));
    let priority_rationale = format!(
        "Each REQ takes the priority of its goal in the brief ({}). Security NFRs are Must, \
         because a breach undoes every other goal; performance, scalability and usability NFRs \
         are Should unless a stated constraint makes them Must. Won't is unused: nothing was \
         agreed to be left out.",
        Moscow::ALL[..3]
            .iter()
            .map(|m| format!(
                "{} {}",
                reqs.iter().filter(|r| r.goal.priority == *m).count(),
                m.as_str()
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let traceability_rows: Vec<String> = goals
        .iter()
        .map(|g| {
            let r: Vec<String> = reqs
                .iter()
                .filter(|r| r.goal.id == g.id)
                .map(|r| r.id.clone())
                .collect();
            let n: Vec<String> = nfr_ids
                .iter()
                .zip(&nfr_traces)
                .filter(|(_, t)| t.contains(&g.id))
                .map(|(id, _)| id.clone())
                .collect();
            format!(
                "| {} ({}) | {} | {} |",
                g.id,
                text::cell(&text::shorten(&g.text, 60)),
                r.join(", "),
                if n.is_empty() {
                    "—".into()
                } else {
                    n.join(", ")
                }
            )
        })
        .collect();
    if specs.iter().any(|s| s.target.contains("to confirm")) {
        questions.push("Which figures stand behind the NFR targets marked \"to confirm\"?".into());
    }
    if goals.iter().any(|g| g.priority != Moscow::Must) {
        questions.push(
            "Should any Should or Could requirement move to Must, or be dropped (Won't)?".into(),
        );
    }
    questions.push(
        "Are the acceptance criteria precise enough to be written as tests as they stand?".into(),
    );
    let references = [
        format!("Product brief: `{}`", spec::BRIEF),
        format!("Discovery context: `{}`", spec::DISCOVERY),
        format!(
            "Next: the architecture, `{}` (DRAFT-003)",
            spec::ARCHITECTURE_INDEX
        ),
    ];
    let must = reqs
        .iter()
        .filter(|r| r.goal.priority == Moscow::Must)
        .count();
    let summary = format!(
        "{} and {} turn the {} of the brief into checkable statements. Every goal is traced \
         by at least one REQ, and every requirement has acceptance criteria and a MoSCoW \
         priority ({must} Must).",
        count(reqs.len(), "functional requirement"),
        count(specs.len(), "non-functional requirement"),
        count(goals.len(), "goal"),
    );
    let index_path = spec::REQUIREMENTS_INDEX;
    let mut values = ctx.common(index_path);
    values.extend([
        ("dependencies", ctx.dependencies(&[spec::BRIEF])),
        ("title", ctx.title.clone()),
        ("summary", summary),
        ("moscow_rows", moscow_rows.join("\n")),
        ("functional_rows", functional_rows.join("\n")),
        ("non_functional_rows", nfr_rows.join("\n")),
        ("data_requirements", data.join("\n\n")),
        ("integration_requirements", integration),
        ("constraints", text::bullets(&constraints, "")),
        ("priority_rationale", priority_rationale),
        ("traceability_rows", traceability_rows.join("\n")),
        ("revision_notes", ctx.revision_notes()?),
        ("open_questions", text::checkboxes(&questions)),
        ("references", text::bullets(&references, "")),
    ]);
    let index = template::render(template::part(REQUIREMENTS_TEMPLATE, "index")?, &values)?;
    out_files.insert(0, (index_path.to_owned(), index));

    let sources: Vec<String> = specs
        .iter()
        .zip(&nfr_ids)
        .map(|(s, id)| match s.source.strip_prefix("signal `") {
            Some(rest) => format!("{id} ({})", rest.split('`').next().unwrap_or("")),
            None => id.clone(),
        })
        .collect();
    let findings = vec![
        format!(
            "{}: {} Must, {} Should, {} Could",
            count(reqs.len(), "functional requirement"),
            must,
            reqs.iter()
                .filter(|r| r.goal.priority == Moscow::Should)
                .count(),
            reqs.iter()
                .filter(|r| r.goal.priority == Moscow::Could)
                .count()
        ),
        format!("NFRs: {}", sources.join(", ")),
        format!(
            "All {} traced to at least one REQ",
            count(goals.len(), "goal")
        ),
        format!("{} open questions on the requirements", questions.len()),
    ];
    Ok(Draft {
        summary: format!(
            "requirements: {} REQ, {} NFR, all {} traced",
            reqs.len(),
            specs.len(),
            count(goals.len(), "goal")
        ),
        files: out_files,
        findings,
        decisions: vec![
            "Functional ids are REQ-NNN, not FR-NNN: the templates, file names and later \
             documents all use REQ"
                .into(),
            "A goal whose object is a plain list (\"add X, Y and Z\") gives one REQ per item; \
             any other goal gives one REQ"
                .into(),
            "NFRs come from analyst signals, classified constraints and goal topics; a baseline \
             security NFR is always written because every change handles input"
                .into(),
        ],
    })
}
