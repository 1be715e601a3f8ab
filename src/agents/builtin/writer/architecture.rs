//! Phase 4: architecture. One component per goal, placed in the existing module its key words
//! match; decisions recorded as ADRs, each backed by what the repository shows (Accepted) or
//! left for a person to confirm (Proposed).

use super::brief::count;
use super::context::{self, CodeFacts, Discovery};
use super::parse::{self, GoalRow, ReqRow, Requirements};
use super::requirements::systems;
use super::text::{self, Topic};
use super::{ARCHITECTURE_TEMPLATE, Ctx, Draft, Folder, Phase, Step, template};
use crate::specdoc::spec;

/// One component.
struct Component {
    id: String,
    name: String,
    goal: Option<GoalRow>,
    reqs: Vec<String>,
    topics: Vec<Topic>,
    module: Option<String>,
    integration: &'static str,
    deps: Vec<String>,
    key_words: Vec<String>,
}

/// What a decision is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Stack,
    Structure,
    Tests,
    Security,
    Performance,
    Data,
}

/// One decision.
struct Adr {
    kind: Kind,
    title: String,
    status: &'static str,
    context: String,
    decision: String,
    /// (option, pros, cons), the chosen one first.
    alternatives: [(String, String, String); 3],
    positive: String,
    negative: String,
    risks: String,
    traces: Vec<String>,
}

fn alt(option: impl Into<String>, pros: &str, cons: &str) -> (String, String, String) {
    (option.into(), pros.to_owned(), cons.to_owned())
}

/// Verbs that make a matched module a replacement rather than an extension.
const REPLACING: &[&str] = &[
    "replace",
    "rewrite",
    "migrate",
    "remove",
    "delete",
    "drop",
    "deprecate",
    "port",
];

/// Dependency names that point to a security library.
const SECURITY_LIBS: &[&str] = &[
    "auth",
    "jwt",
    "jsonwebtoken",
    "oauth",
    "oidc",
    "saml",
    "passport",
    "bcrypt",
    "argon",
    "scrypt",
    "crypto",
    "ring",
    "rustls",
    "openssl",
    "security",
    "jose",
    "devise",
    "sodium",
    "casbin",
    "keycloak",
];

/// Data stores a request may name, as the requirements' system table spells them.
const STORES: &[&str] = &[
    "Redis",
    "PostgreSQL",
    "MySQL",
    "SQLite",
    "MongoDB",
    "Object storage (S3)",
];

/// Language names a request may use.
const LANGUAGES: &[(&str, &str)] = &[
    ("rust", "Rust"),
    ("python", "Python"),
    ("typescript", "TypeScript"),
    ("javascript", "JavaScript"),
    ("java", "Java"),
    ("kotlin", "Kotlin"),
    ("ruby", "Ruby"),
    ("php", "PHP"),
    ("swift", "Swift"),
    ("elixir", "Elixir"),
    ("golang", "Go"),
];

fn components(
    goals: &[GoalRow],
    reqs: &Requirements,
    files: &[crate::agents::CodeFile],
) -> Vec<Component> {
    let mut groups: Vec<(Option<GoalRow>, Vec<&ReqRow>)> = goals
        .iter()
        .map(|g| (Some(g.clone()), Vec::new()))
        .collect();
    let mut orphans = Vec::new();
    for r in &reqs.functional {
        match groups.iter_mut().find(|(g, _)| {
            g.as_ref()
                .is_some_and(|g| r.traces.first().is_some_and(|t| *t == g.id))
        }) {
            Some((_, rs)) => rs.push(r),
            None => orphans.push(r),
        }
    }
    if !orphans.is_empty() {
        groups.push((None, orphans));
    }
    let mut out: Vec<Component> = Vec::new();
    for (goal, rs) in groups.into_iter().filter(|(_, rs)| !rs.is_empty()) {
        let basis = match &goal {
            Some(g) => g.text.clone(),
            None => rs
                .iter()
                .map(|r| r.title.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        };
        let mut name = match &goal {
            Some(g) => text::topic_name(&g.text),
            None => "Shared core".to_owned(),
        };
        if out.iter().any(|c| c.name == name) {
            name = format!("{name} ({})", out.len() + 1);
        }
        let mut key_words = text::key_words(&basis);
        for r in &rs {
            for w in text::key_words(&r.title) {
                if !key_words.contains(&w) {
                    key_words.push(w);
                }
            }
        }
        let module = context::matching_module(files, &key_words).map(|(m, _)| m);
        let replacing = basis
            .split_whitespace()
            .next()
            .is_some_and(|v| REPLACING.contains(&v.to_lowercase().as_str()));
        let integration = match (&module, replacing) {
            (Some(_), true) => "Replace",
            (Some(_), false) => "Extend",
            (None, _) => "New",
        };
        let id = format!("COMP-{:03}", out.len() + 1);
        let deps = out
            .iter()
            .filter(|c| {
                c.key_words.iter().any(|w| key_words.contains(w))
                    || (module.is_some() && c.module == module)
            })
            .map(|c| c.id.clone())
            .collect();
        let topics = text::topics(&basis);
        out.push(Component {
            id,
            name,
            goal,
            reqs: rs.iter().map(|r| r.id.clone()).collect(),
            topics,
            module,
            integration,
            deps,
            key_words,
        });
    }
    out
}

fn decisions(ctx: &Ctx, d: &Discovery, reqs: &Requirements, comps: &[Component]) -> Vec<Adr> {
    let code = &d.code;
    let all_reqs: Vec<String> = reqs.functional.iter().map(|r| r.id.clone()).collect();
    let req_list = text::and_list(&all_reqs);
    let with_topic = |topic: Topic| -> Vec<String> {
        reqs.functional
            .iter()
            .filter(|r| text::topics(&r.title).contains(&topic))
            .map(|r| r.id.clone())
            .collect()
    };
    let nfrs_of = |code: &str| -> Vec<&ReqRow> {
        reqs.non_functional
            .iter()
            .filter(|n| n.id.starts_with(&format!("NFR-{code}-")))
            .collect()
    };
    let mut adrs = Vec::new();

    // The stack.
    let risk_signals: Vec<String> = ["legacy_patterns", "test_gap"]
        .iter()
        .filter(|s| d.has_signal(s))
        .map(|s| format!("`{s}` ({})", d.evidence_of(s)))
        .collect();
    let risks = if risk_signals.is_empty() {
        "The analyst reported no signal that makes this choice risky.".to_owned()
    } else {
        format!(
            "The analyst flagged {}; work in those areas needs extra tests.",
            text::and_list(&risk_signals)
        )
    };
    match code.primary_language() {
        Some(lang) => adrs.push(Adr {
            kind: Kind::Stack,
            title: format!("Build on the existing {lang} code base"),
            status: "Accepted",
            context: format!(
                "The repository is mostly {lang} ({:.0}% of the code, {} files){}. The \
                 requirements {req_list} change this product, so the question is where, and in \
                 what, the new code is written.",
                code.languages[0].share,
                code.file_count,
                if code.frameworks.is_empty() {
                    String::new()
                } else {
                    format!(", using {}", code.frameworks.join(", "))
                }
            ),
            decision: format!(
                "Write every component in {lang}, inside this repository and its layout ({}), \
                 with the build and test tooling it already has.",
                if code.source_dirs.is_empty() {
                    "its current directories".to_owned()
                } else {
                    code.source_dirs
                        .iter()
                        .map(|s| format!("`{s}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ),
            alternatives: [
                alt(
                    format!("Extend the existing {lang} code base"),
                    "one build and one test suite; existing modules are reused",
                    "the limits of the current design carry over",
                ),
                alt(
                    "A separate service beside it",
                    "can be released on its own",
                    "a new deployment, duplicated plumbing and a network boundary to secure",
                ),
                alt(
                    "Rewrite the affected part",
                    "frees the design from old constraints",
                    "the largest effort and the highest risk of regressions",
                ),
            ],
            positive: "Components reuse existing modules, conventions and CI.".into(),
            negative: "The change inherits the code base's current constraints.".into(),
            risks,
            traces: all_reqs.clone(),
        }),
        None => {
            let words = text::words(&ctx.task_text);
            let named = LANGUAGES
                .iter()
                .find(|(w, _)| words.iter().any(|x| x == w))
                .map(|(_, l)| *l);
            adrs.push(Adr {
                kind: Kind::Stack,
                title: "Choose the implementation stack".into(),
                status: "Proposed",
                context: format!(
                    "No source code was found, so there is no stack to follow. The requirements \
                     {req_list} still need a language, a build and a test runner."
                ),
                decision: match named {
                    Some(l) => format!(
                        "Use {l}, which the request names, with its standard build and test \
                         tools; confirm before the first story starts."
                    ),
                    None => "Use the stack the team already runs and knows; name it before the \
                             first story starts."
                        .into(),
                },
                alternatives: [
                    alt(
                        named.map_or("The stack the team already runs".to_owned(), |l| {
                            format!("{l}, as the request names")
                        }),
                        "known tooling; nothing new to learn",
                        "may not be the best fit for every requirement",
                    ),
                    alt(
                        "The stack best suited to the problem",
                        "fits the requirements closely",
                        "learning cost and new operations",
                    ),
                    alt(
                        "A managed platform",
                        "little to operate",
                        "lock-in and less control",
                    ),
                ],
                positive: "The choice is made once, before any code exists.".into(),
                negative: "Nothing can be built until the stack is confirmed.".into(),
                risks: "A late change of stack would discard early work.".into(),
                traces: all_reqs.clone(),
            });
        }
    }

    // The structure.
    let extending: Vec<String> = comps
        .iter()
        .filter(|c| c.module.is_some())
        .map(|c| c.id.clone())
        .collect();
    adrs.push(Adr {
        kind: Kind::Structure,
        title: "One component per goal".into(),
        status: "Accepted",
        context: format!(
            "The brief has {} and the requirements group under them. Existing paths match {} \
             of the {} components{}.",
            count(comps.iter().filter(|c| c.goal.is_some()).count(), "goal"),
            extending.len(),
            comps.len(),
            if extending.is_empty() {
                String::new()
            } else {
                format!(" ({})", extending.join(", "))
            }
        ),
        decision: format!(
            "Give each goal its own component ({}). A component extends the module its key \
             words match, or is new code where nothing matches; see Codebase Integration.",
            comps
                .iter()
                .map(|c| c.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        alternatives: [
            alt(
                "One component per goal",
                "clear ownership; each goal traces to one place in the code",
                "logic shared by goals may need extracting later",
            ),
            alt(
                "One component for the whole change",
                "fewest boundaries",
                "mixes unrelated goals; harder to review and to test",
            ),
            alt(
                "Spread the changes over existing modules only",
                "no new modules",
                "goals without a matching module have no home",
            ),
        ],
        positive: "Goals, requirements, components and epics line up one to one.".into(),
        negative: "Some components may turn out small.".into(),
        risks: "A path match is a hint, not proof: a reviewer should confirm each Extend.".into(),
        traces: all_reqs.clone(),
    });

    // Tests.
    match &code.test_framework {
        Some(t) => {
            let command = if t.command.is_empty() {
                t.name.clone()
            } else {
                t.command.clone()
            };
            adrs.push(Adr {
                kind: Kind::Tests,
                title: format!("Verify with {}", t.name),
                status: "Accepted",
                context: format!(
                    "The repository already tests with {}{}. Every requirement has acceptance \
                     criteria that must be checked, now and after later changes.",
                    t.name,
                    if t.evidence.is_empty() {
                        String::new()
                    } else {
                        format!(" (evidence: {})", t.evidence)
                    }
                ),
                decision: format!(
                    "Each acceptance criterion becomes an automated test run by `{command}`; the \
                     tester task runs the same command."
                ),
                alternatives: [
                    alt(
                        format!("Tests in the existing {} suite", t.name),
                        "one command, already known to the team",
                        "limited to what that framework can drive",
                    ),
                    alt(
                        "A second test framework for the new parts",
                        "may suit new kinds of tests better",
                        "two tools to learn and maintain",
                    ),
                    alt(
                        "Manual checks against the acceptance criteria",
                        "no test code to write",
                        "not repeatable; regressions go unseen",
                    ),
                ],
                positive: "Acceptance criteria stay checked after every change.".into(),
                negative: "Test code grows with the feature.".into(),
                risks: "Criteria that need a browser or a network may need extra fixtures.".into(),
                traces: all_reqs.clone(),
            });
        }
        None => adrs.push(Adr {
            kind: Kind::Tests,
            title: "Choose how the change is tested".into(),
            status: "Proposed",
            context: "No test framework was found, yet every requirement has acceptance \
                      criteria that must be checked."
                .into(),
            decision: format!(
                "Set up the standard test runner of {} before the first story, and write each \
                 acceptance criterion as a test.",
                code.primary_language().unwrap_or("the chosen stack")
            ),
            alternatives: [
                alt(
                    "The language's standard test runner",
                    "no extra dependency; familiar to most developers",
                    "set-up work before the first story",
                ),
                alt(
                    "A full end-to-end framework",
                    "tests the product as users see it",
                    "slow and brittle for small checks",
                ),
                alt(
                    "Manual checks against the acceptance criteria",
                    "no set-up",
                    "not repeatable; regressions go unseen",
                ),
            ],
            positive: "Acceptance criteria become repeatable checks.".into(),
            negative: "Setting up tests delays the first feature slightly.".into(),
            risks: "Without tests the quality gate cannot confirm the work.".into(),
            traces: all_reqs.clone(),
        }),
    }

    // Security.
    let security = nfrs_of("S");
    if !security.is_empty() {
        let libs: Vec<(String, String)> = code
            .dependencies()
            .into_iter()
            .filter(|(n, _)| SECURITY_LIBS.iter().any(|s| n.to_lowercase().contains(s)))
            .take(3)
            .collect();
        let lib_phrase = if libs.is_empty() {
            "a maintained library".to_owned()
        } else {
            libs.iter()
                .map(|(n, m)| format!("`{n}` (declared in `{m}`)"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut traces: Vec<String> = security.iter().map(|n| n.id.clone()).collect();
        traces.extend(with_topic(Topic::Security));
        adrs.push(Adr {
            kind: Kind::Security,
            title: "Meet the security requirements with vetted libraries and boundary checks"
                .into(),
            status: if libs.is_empty() {
                "Proposed"
            } else {
                "Accepted"
            },
            context: format!(
                "The requirements include {}.{}",
                text::and_list(
                    &security
                        .iter()
                        .map(|n| format!("{} ({})", n.id, n.title))
                        .collect::<Vec<_>>()
                ),
                if d.signals.is_empty() {
                    String::new()
                } else {
                    format!(" The analyst reported: {}.", d.signals.join(", "))
                }
            ),
            decision: format!(
                "Validate every outside input where it enters a component; rely on {lib_phrase} \
                 for authentication and cryptography; keep secrets in configuration outside the \
                 repository."
            ),
            alternatives: [
                alt(
                    "Vetted library plus checks at the boundary",
                    "well-reviewed code; one consistent place for checks",
                    "a dependency to keep up to date",
                ),
                alt(
                    "Hand-written checks and cryptography",
                    "no new dependency",
                    "easy to get subtly wrong",
                ),
                alt(
                    "An external identity or security service",
                    "offloads the hardest parts",
                    "a new integration, running cost and an outage risk",
                ),
            ],
            positive: "Security rules live in few, reviewed places.".into(),
            negative: "Every component must route input through the checks.".into(),
            risks: "A missed entry point bypasses the checks; review each new one.".into(),
            traces,
        });
    }

    // Performance and scale.
    let perf: Vec<&ReqRow> = nfrs_of("P").into_iter().chain(nfrs_of("SC")).collect();
    if !perf.is_empty() {
        let mut traces: Vec<String> = perf.iter().map(|n| n.id.clone()).collect();
        traces.extend(with_topic(Topic::Performance));
        traces.extend(with_topic(Topic::Scale));
        traces.dedup();
        adrs.push(Adr {
            kind: Kind::Performance,
            title: "Measure before optimising".into(),
            status: "Proposed",
            context: format!(
                "{} set targets for speed or load; no baseline has been measured.",
                text::and_list(
                    &perf
                        .iter()
                        .map(|n| format!("{} ({})", n.id, n.title))
                        .collect::<Vec<_>>()
                )
            ),
            decision: "Add a benchmark or load test for each operation these requirements \
                       name before changing it, and optimise only where a measurement misses \
                       its target."
                .into(),
            alternatives: [
                alt(
                    "Benchmark first, then optimise",
                    "effort goes where it counts",
                    "needs a benchmark set-up",
                ),
                alt(
                    "Optimise up front",
                    "fast code from the start",
                    "effort on parts that may not matter; harder code",
                ),
                alt(
                    "Scale out with more resources",
                    "no code change",
                    "cost grows with load; hides the real problem",
                ),
            ],
            positive: "Targets are checked by numbers, not impressions.".into(),
            negative: "Benchmarks take time to write and to keep stable.".into(),
            risks: "Targets marked \"to confirm\" must be set before they can be checked.".into(),
            traces,
        });
    }

    // Data.
    let data_reqs = with_topic(Topic::Data);
    let sql = d.has_signal("sql_detected");
    let named = systems(&ctx.task_text)
        .into_iter()
        .map(|(s, _, _)| s)
        .find(|s| STORES.contains(s));
    if sql || d.has_signal("data_migration") || !data_reqs.is_empty() {
        let (title, store, status, context) = match (named, sql) {
            (Some(store), _) => (
                format!("Keep the new data in {store}"),
                store.to_owned(),
                "Accepted",
                format!("The request names {store} as the place for the data."),
            ),
            (None, true) => (
                "Keep new data in the existing database".to_owned(),
                "the existing database".to_owned(),
                "Accepted",
                format!(
                    "A relational database is already in use ({}).",
                    d.evidence_of("sql_detected")
                ),
            ),
            (None, false) => (
                "Choose where the new data lives".to_owned(),
                "a store chosen with the team".to_owned(),
                "Proposed",
                format!(
                    "The requirements {} store or move data, and no database was detected.",
                    text::and_list(&data_reqs)
                ),
            ),
        };
        adrs.push(Adr {
            kind: Kind::Data,
            title,
            status,
            context,
            decision: format!(
                "Store the new data in {store}, and make every change to its shape a versioned \
                 migration that can be rolled back."
            ),
            alternatives: [
                alt(
                    text::upper_first(&store),
                    "one place for data, one backup routine",
                    "changes to its shape need migrations",
                ),
                alt(
                    "A new dedicated store",
                    "shaped for the new data",
                    "one more system to run and back up",
                ),
                alt(
                    "Files or in-memory state",
                    "simplest to start",
                    "hard to query and share; may be lost on restart",
                ),
            ],
            positive: "Data stays consistent and recoverable.".into(),
            negative: "Migrations add a step to every release that changes the schema.".into(),
            risks: "A migration without a way back can block a rollback.".into(),
            traces: if data_reqs.is_empty() {
                all_reqs.clone()
            } else {
                data_reqs
            },
        });
    }

    // NFRs no other decision serves belong to the stack decision.
    let traced: Vec<String> = adrs.iter().flat_map(|a| a.traces.clone()).collect();
    let rest: Vec<String> = reqs
        .non_functional
        .iter()
        .filter(|n| !traced.contains(&n.id))
        .map(|n| n.id.clone())
        .collect();
    adrs[0].traces.extend(rest);
    adrs
}

/// Writes `spec/architecture/_index.md` and one file per decision.
pub fn write(ctx: &Ctx, folder: &Folder) -> Step<Draft> {
    let brief = ctx.require(folder, spec::BRIEF, Phase::Architecture)?;
    ctx.require(folder, spec::REQUIREMENTS_INDEX, Phase::Architecture)?;
    let goals = parse::goals(brief);
    let users = parse::users(brief);
    let reqs = parse::requirements(folder);
    if reqs.functional.is_empty() {
        return Err(format!(
            "cannot write the architecture: `{}` lists no REQ-NNN requirement",
            spec::REQUIREMENTS_INDEX
        ));
    }
    let d = &ctx.discovery;
    let code = &d.code;
    let comps = components(&goals, &reqs, ctx.input.code.files());
    let adrs = decisions(ctx, d, &reqs, &comps);
    let adr_ids: Vec<String> = (1..=adrs.len()).map(|i| format!("ADR-{i:03}")).collect();
    let dir = "spec/architecture";
    let mut files = Vec::new();
    let adr_part = template::part(ARCHITECTURE_TEMPLATE, "adr")?;
    let mut adr_files = Vec::new();
    for (a, id) in adrs.iter().zip(&adr_ids) {
        let file = format!("{id}-{}.md", text::slug(&a.title, "decision"));
        let path = format!("{dir}/{file}");
        let rows: Vec<String> = a
            .alternatives
            .iter()
            .enumerate()
            .map(|(i, (o, p, c))| {
                format!(
                    "| {}{} | {} | {} |",
                    text::cell(o),
                    if i == 0 { " (chosen)" } else { "" },
                    text::cell(p),
                    text::cell(c)
                )
            })
            .collect();
        let implementing: Vec<String> = comps
            .iter()
            .filter(|c| c.reqs.iter().any(|r| a.traces.contains(r)))
            .map(|c| c.id.clone())
            .collect();
        let mut values = ctx.common(&path);
        values.extend([
            ("id", id.clone()),
            ("status", a.status.to_owned()),
            ("traces_to", text::yaml_list(&a.traces)),
            ("date", ctx.date.clone()),
            ("title", a.title.clone()),
            (
                "summary",
                format!(
                    "{} decision: {} It serves {}.",
                    a.status,
                    text::shorten(&a.decision, 160),
                    count(a.traces.len(), "requirement")
                ),
            ),
            ("context", a.context.clone()),
            ("decision", a.decision.clone()),
            ("alternative_rows", rows.join("\n")),
            (
                "consequences",
                text::bullets(
                    &[
                        format!("Positive: {}", a.positive),
                        format!("Negative: {}", a.negative),
                        format!("Risks: {}", a.risks),
                    ],
                    "",
                ),
            ),
            (
                "traces",
                text::bullets(
                    &[
                        format!("Requirements: {}", a.traces.join(", ")),
                        format!(
                            "Components: {}",
                            if implementing.is_empty() {
                                "all".to_owned()
                            } else {
                                implementing.join(", ")
                            }
                        ),
                        format!(
                            "Implemented by: the epics listing {id} in `{}` (phase 5)",
                            spec::EPICS_INDEX
                        ),
                    ],
                    "",
                ),
            ),
        ]);
        files.push((path, template::render(adr_part, &values)?));
        adr_files.push(file);
    }

    let stack = code.stack_phrase();
    let new_count = comps.iter().filter(|c| c.integration == "New").count();
    let style = match code.primary_language() {
        Some(lang) => format!(
            "A modular extension of the existing {lang} code base: {}, one per goal, each a \
             module inside the repository ({} extend or replace existing code, {new_count} \
             new). Components call each other in-process; none needs a new deployment unit \
             (ADR-001, ADR-002).",
            count(comps.len(), "component"),
            comps.len() - new_count
        ),
        None => format!(
            "A new modular application of {}, one per goal. The stack is open (ADR-001).",
            count(comps.len(), "component")
        ),
    };
    let external = systems(&ctx.task_text);
    let mut context_lines = vec![
        "```mermaid".to_owned(),
        "graph TD".to_owned(),
        format!(
            "  S[\"{}\"]",
            text::mermaid_label(&text::shorten(&ctx.title, 40))
        ),
    ];
    for (i, u) in users.iter().enumerate() {
        context_lines.push(format!(
            "  U{}[\"{}\"] --> S",
            i + 1,
            text::mermaid_label(u)
        ));
    }
    for (i, (system, _, _)) in external.iter().enumerate() {
        context_lines.push(format!("  S --> X{}[\"{}\"]", i + 1, system));
    }
    context_lines.push("```".into());
    let mut diagram = vec!["```mermaid".to_owned(), "graph TD".to_owned()];
    for c in &comps {
        diagram.push(format!(
            "  {}[\"{}: {}\"]",
            c.id.replace('-', ""),
            c.id,
            text::mermaid_label(&c.name)
        ));
    }
    for c in &comps {
        for dep in &c.deps {
            diagram.push(format!(
                "  {} --> {}",
                c.id.replace('-', ""),
                dep.replace('-', "")
            ));
        }
    }
    diagram.push("```".into());
    let component_rows: Vec<String> = comps
        .iter()
        .map(|c| {
            format!(
                "| {} | {} | {} | {} | {} | {} |",
                c.id,
                text::cell(&c.name),
                text::cell(&match &c.goal {
                    Some(g) => format!("Delivers {}: {}", g.id, g.text),
                    None => "Requirements that trace to no goal of the brief".to_owned(),
                }),
                text::cell(
                    &stack
                        .clone()
                        .unwrap_or_else(|| "to be decided (ADR-001)".into())
                ),
                if c.deps.is_empty() {
                    "—".to_owned()
                } else {
                    c.deps.join(", ")
                },
                c.reqs.join(", ")
            )
        })
        .collect();
    let mut stack_rows = vec![
        "| Layer | Technology | Version | Rationale |".to_owned(),
        "|---|---|---|---|".to_owned(),
    ];
    for (i, l) in code.languages.iter().take(3).enumerate() {
        stack_rows.push(format!(
            "| {} | {} | as the toolchain pins it | {:.0}% of the existing code{} |",
            if i == 0 { "Language" } else { "Other language" },
            l.name,
            l.share,
            if i == 0 { " (ADR-001)" } else { "" }
        ));
    }
    if code.languages.is_empty() {
        stack_rows.push("| Language | to be decided (ADR-001) | — | no code exists yet |".into());
    }
    for f in &code.frameworks {
        let manifest = code
            .manifests
            .iter()
            .find(|m| m.frameworks.contains(f))
            .map(|m| format!("as pinned in `{}`", m.path))
            .unwrap_or_else(|| "as pinned in its manifest".into());
        stack_rows.push(format!(
            "| Framework | {} | {manifest} | already in use |",
            text::cell(f)
        ));
    }
    if let Some(t) = &code.test_framework {
        stack_rows.push(format!(
            "| Tests | {} | as pinned | already in use (ADR-003) |",
            text::cell(&t.name)
        ));
    }
    for m in &code.manifests {
        stack_rows.push(format!(
            "| Build | {} (`{}`) | — | existing manifest |",
            if m.kind.is_empty() {
                "manifest"
            } else {
                &m.kind
            },
            m.path
        ));
    }
    let deps = code.dependencies();
    let mut technology = stack_rows.join("\n");
    if !deps.is_empty() {
        technology.push_str(&format!(
            "\n\nKey libraries already declared: {}{}.",
            deps.iter()
                .take(10)
                .map(|(n, m)| format!("`{n}` ({m})"))
                .collect::<Vec<_>>()
                .join(", "),
            if deps.len() > 10 {
                format!(" and {} more", deps.len() - 10)
            } else {
                String::new()
            }
        ));
    }
    technology.push_str(&format!("\n\nSource of these facts: {}.", code.source));
    let adr_rows: Vec<String> = adrs
        .iter()
        .zip(&adr_ids)
        .zip(&adr_files)
        .map(|((a, id), file)| {
            format!(
                "| [{id}]({file}) | {} | {} | {} |",
                text::cell(&a.title),
                a.status,
                a.traces.join(", ")
            )
        })
        .collect();
    let data_adr = adrs
        .iter()
        .zip(&adr_ids)
        .find(|(a, _)| a.kind == Kind::Data)
        .map(|(a, id)| format!("{id}: {}", a.decision));
    let data_comps: Vec<String> = comps
        .iter()
        .filter(|c| c.topics.contains(&Topic::Data))
        .map(|c| c.id.clone())
        .collect();
    let mut questions = ctx.common_questions();
    let data_architecture = match data_adr {
        Some(decision) => format!(
            "{decision}\n\nComponents holding data: {}. Their entities and fields are named \
             with the first story that stores them.",
            if data_comps.is_empty() {
                "to be confirmed".to_owned()
            } else {
                data_comps.join(", ")
            }
        ),
        None => "No component stores new data: the requirements name none. If that changes, \
                 the entities and a decision on where they live are added here."
            .to_owned(),
    };
    let mut interfaces = Vec::new();
    if !code.entry_points.is_empty() {
        interfaces.push(format!(
            "Entry points found: {}. The components are reached through them.",
            code.entry_points
                .iter()
                .take(5)
                .map(|e| format!("`{e}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !external.is_empty() {
        interfaces.push(format!(
            "External interfaces: {}.",
            external
                .iter()
                .map(|(s, p, f)| format!("{s} ({p}, {f})"))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    if interfaces.is_empty() {
        interfaces.push(
            "No entry point or external interface was found; how users reach the components \
             is an open question."
                .into(),
        );
        questions.push("Through which entry point (command, endpoint, screen) do users reach the new components?".into());
    }
    let security_adr = adrs
        .iter()
        .zip(&adr_ids)
        .find(|(a, _)| a.kind == Kind::Security)
        .map(|(_, id)| id.clone())
        .unwrap_or_else(|| adr_ids[0].clone());
    let mut security: Vec<String> = reqs
        .non_functional
        .iter()
        .filter(|n| n.id.starts_with("NFR-S-"))
        .map(|n| {
            let comps_for: Vec<String> = comps
                .iter()
                .filter(|c| c.topics.contains(&Topic::Security))
                .map(|c| c.id.clone())
                .collect();
            format!(
                "**{}** {}: enforced by {}, as decided in {security_adr}.",
                n.id,
                n.title,
                if comps_for.is_empty() {
                    "every component at its entry points".to_owned()
                } else {
                    comps_for.join(", ")
                }
            )
        })
        .collect();
    security.push(
        "Secrets live in configuration outside the repository; the review checks each diff \
         against these requirements."
            .into(),
    );
    let mut integration = vec![
        "| New Component | Existing Module | Integration | Notes |".to_owned(),
        "|---|---|---|---|".to_owned(),
    ];
    for c in &comps {
        integration.push(format!(
            "| {} {} | {} | {} | {} |",
            c.id,
            text::cell(&c.name),
            c.module
                .as_ref()
                .map(|m| format!("`{m}`"))
                .unwrap_or_else(|| "—".into()),
            c.integration,
            match (&c.module, code.source_dirs.first()) {
                (Some(_), _) => format!(
                    "matched by the words {}",
                    c.key_words
                        .iter()
                        .take(3)
                        .map(|w| format!("\"{w}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                (None, Some(dir)) => format!("new module, suggested under `{dir}/`"),
                (None, None) => "new module; location to decide".into(),
            }
        ));
    }
    let touched: Vec<&String> = comps.iter().filter_map(|c| c.module.as_ref()).collect();
    let untouched: Vec<String> = code
        .source_dirs
        .iter()
        .filter(|s| {
            !touched
                .iter()
                .any(|t| t.starts_with(&format!("{}/", s.trim_end_matches('/'))))
        })
        .map(|s| format!("`{s}`"))
        .collect();
    let mut codebase_integration = integration.join("\n");
    if !code.test_dirs.is_empty() {
        codebase_integration.push_str(&format!(
            "\n\nTests live in {}; each story adds its tests there or beside the code it \
             changes, as the code base already does.",
            code.test_dirs
                .iter()
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if code.is_empty() {
        codebase_integration.push_str("\n\nThere is no existing code: every component is new.");
    } else if !untouched.is_empty() {
        codebase_integration.push_str(&format!(
            "\n\nSource directories with no planned change: {}.",
            untouched.join(", ")
        ));
    }
    if new_count > 0 && !code.is_empty() {
        questions.push(format!(
            "Where should the new components ({}) live in the layout?",
            comps
                .iter()
                .filter(|c| c.integration == "New")
                .map(|c| c.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let perf_adr = adrs
        .iter()
        .zip(&adr_ids)
        .find(|(a, _)| a.kind == Kind::Performance)
        .map(|(_, id)| id.clone());
    let test_adr = adrs
        .iter()
        .zip(&adr_ids)
        .find(|(a, _)| a.kind == Kind::Tests)
        .map(|(_, id)| id.clone())
        .unwrap_or_else(|| adr_ids[0].clone());
    let mut quality_rows: Vec<String> = reqs
        .non_functional
        .iter()
        .filter(|n| !n.id.starts_with("NFR-S-"))
        .map(|n| {
            format!(
                "| {} | {} | {} | {}{} |",
                if n.category.is_empty() {
                    "Quality"
                } else {
                    &n.category
                },
                text::cell(if n.target.is_empty() {
                    &n.title
                } else {
                    &n.target
                }),
                text::cell(if n.metric.is_empty() {
                    "see the NFR"
                } else {
                    &n.metric
                }),
                n.id,
                perf_adr
                    .as_ref()
                    .filter(|_| n.id.starts_with("NFR-P-") || n.id.starts_with("NFR-SC-"))
                    .map(|a| format!(", {a}"))
                    .unwrap_or_default()
            )
        })
        .collect();
    quality_rows.push(format!(
        "| Reliability | the whole test suite passes | {} in CI | {test_adr} |",
        code.test_framework
            .as_ref()
            .filter(|t| !t.command.is_empty())
            .map(|t| format!("`{}`", t.command))
            .unwrap_or_else(|| "the chosen test runner".into())
    ));
    let mut risk_rows = Vec::new();
    for (signal, risk, mitigation) in [
        (
            "test_gap",
            "Parts of the code have no tests",
            "write tests for touched code before changing it",
        ),
        (
            "legacy_patterns",
            "Legacy patterns slow changes",
            "keep changes small; refactor only what a story touches",
        ),
        (
            "breaking_change",
            "A public interface may change",
            "version the interface and note the change for users",
        ),
        (
            "data_migration",
            "Schema migration during release",
            "migrations with a tested way back",
        ),
        (
            "concurrency_issue",
            "Concurrent use may corrupt state",
            "stress tests with parallel clients",
        ),
    ] {
        if d.has_signal(signal) {
            risk_rows.push(format!(
                "| {risk} ({}) | High | Medium | {mitigation} |",
                text::cell(&d.evidence_of(signal))
            ));
        }
    }
    if new_count > 0 {
        risk_rows.push(format!(
            "| {} without an existing home may not fit the layout | Medium | Medium | agree \
             on locations before the first story |",
            count(new_count, "new component")
        ));
    }
    let proposed: Vec<String> = adrs
        .iter()
        .zip(&adr_ids)
        .filter(|(a, _)| a.status == "Proposed")
        .map(|(_, id)| id.clone())
        .collect();
    if !proposed.is_empty() {
        risk_rows.push(format!(
            "| Decisions still Proposed ({}) may change | Medium | Medium | confirm them at \
             the next checkpoint |",
            proposed.join(", ")
        ));
        questions.push(format!(
            "Confirm or replace the Proposed decisions: {}.",
            proposed.join(", ")
        ));
    }
    risk_rows.push(
        "| This draft was written offline by fixed rules | Medium | Medium | review at the \
         checkpoint and the readiness gate |"
            .into(),
    );
    questions.push(
        "Do the component boundaries match how the team wants to own and review the code?".into(),
    );
    let references = [
        format!("Product brief: `{}`", spec::BRIEF),
        format!("Requirements: `{}`", spec::REQUIREMENTS_INDEX),
        format!("Next: the epics, `{}` (DRAFT-004)", spec::EPICS_INDEX),
    ];
    let summary = format!(
        "{} implement the {} as {}; {} record the choices. Every REQ is implemented by at least \
         one component, and each decision names the requirements it serves.",
        count(comps.len(), "component"),
        count(reqs.functional.len(), "functional requirement"),
        style_word(code),
        count(adrs.len(), "ADR"),
    );
    let index_path = spec::ARCHITECTURE_INDEX;
    let mut values = ctx.common(index_path);
    values.extend([
        (
            "dependencies",
            ctx.dependencies(&[spec::BRIEF, spec::REQUIREMENTS_INDEX]),
        ),
        ("title", ctx.title.clone()),
        ("summary", summary),
        ("style", style),
        ("context_diagram", context_lines.join("\n")),
        ("component_diagram", diagram.join("\n")),
        ("component_rows", component_rows.join("\n")),
        ("technology_stack", technology),
        ("adr_rows", adr_rows.join("\n")),
        ("data_architecture", data_architecture),
        ("interfaces", interfaces.join("\n\n")),
        ("security", text::bullets(&security, "")),
        ("codebase_integration", codebase_integration),
        ("quality_rows", quality_rows.join("\n")),
        ("risk_rows", risk_rows.join("\n")),
        ("revision_notes", ctx.revision_notes()?),
        ("open_questions", text::checkboxes(&questions)),
        ("references", text::bullets(&references, "")),
    ]);
    let index = template::render(template::part(ARCHITECTURE_TEMPLATE, "index")?, &values)?;
    files.insert(0, (index_path.to_owned(), index));

    let accepted = adrs.iter().filter(|a| a.status == "Accepted").count();
    Ok(Draft {
        summary: format!(
            "architecture: {}, {} ADRs, all {} REQ implemented",
            count(comps.len(), "component"),
            adrs.len(),
            reqs.functional.len()
        ),
        files,
        findings: vec![
            format!(
                "{}: {} on existing code, {new_count} new",
                count(comps.len(), "component"),
                comps.len() - new_count
            ),
            format!(
                "{}: {accepted} Accepted, {} Proposed",
                count(adrs.len(), "ADR"),
                adrs.len() - accepted
            ),
            format!(
                "All {} implemented by a component",
                count(reqs.functional.len(), "REQ")
            ),
            format!("{} open questions on the architecture", questions.len()),
        ],
        decisions: vec![
            "One component per goal, placed by matching its key words against existing paths: \
             keeps goal → component tracing one to one"
                .into(),
            "ADRs backed by what the scan shows are Accepted; the rest are Proposed for a person \
             to confirm"
                .into(),
        ],
    })
}

fn style_word(code: &CodeFacts) -> &'static str {
    if code.primary_language().is_some() {
        "modules of the existing code base"
    } else {
        "modules of a new application"
    }
}
