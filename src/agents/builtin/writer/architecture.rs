//! Phase 4: architecture. One component per goal, placed in the existing module its key words
//! match; decisions recorded as ADRs, each backed by what the repository shows (Accepted) or
//! left for a person to confirm (Proposed).

use std::collections::BTreeMap;

use serde::Serialize;

use super::context::{self, CodeView, Library};
use super::text::{self, System, Topic};
use super::{Ctx, Draft, Folder, Phase, Step};
use crate::specdoc::spec::{self, Goal as GoalRow, Req as ReqRow, Requirements};

/// One component.
#[derive(Serialize)]
struct Component {
    id: String,
    name: String,
    goal: Option<GoalRow>,
    reqs: Vec<String>,
    #[serde(skip)]
    topics: Vec<Topic>,
    module: Option<String>,
    integration: &'static str,
    deps: Vec<String>,
    key_words: Vec<String>,
}

/// What a decision is about; its text follows from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Stack,
    Structure,
    Tests,
    Security,
    Performance,
    Data,
}

/// One decision: what it is about, and the facts its text quotes besides those of the code
/// and the analyst; each kind uses its own.
#[derive(Serialize)]
struct Adr {
    kind: Kind,
    title: String,
    status: &'static str,
    traces: Vec<String>,
    /// A language the request names (without code).
    named_language: Option<&'static str>,
    nfrs: Vec<ReqRow>,
    libs: Vec<Library>,
    /// A store the request names.
    store: Option<&'static str>,
    data_reqs: Vec<String>,
}

impl Adr {
    fn new(kind: Kind, title: impl Into<String>, accepted: bool, traces: Vec<String>) -> Adr {
        Adr {
            kind,
            title: title.into(),
            status: if accepted { "Accepted" } else { "Proposed" },
            traces,
            named_language: None,
            nfrs: Vec::new(),
            libs: Vec::new(),
            store: None,
            data_reqs: Vec::new(),
        }
    }
}

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
            .is_some_and(|v| text::has(&text::WORDS.replacing, &v.to_lowercase()));
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

/// The decisions, in order: stack, structure, tests, then security, performance and data
/// where the requirements call for them.
fn decisions(ctx: &Ctx, reqs: &Requirements) -> Vec<Adr> {
    let d = &ctx.discovery;
    let code = &d.code;
    let all_reqs: Vec<String> = reqs.functional.iter().map(|r| r.id.clone()).collect();
    let with_topic = |topic: Topic| -> Vec<String> {
        reqs.functional
            .iter()
            .filter(|r| text::topics(&r.title).contains(&topic))
            .map(|r| r.id.clone())
            .collect()
    };
    let nfrs_of = |code: &str| -> Vec<ReqRow> {
        reqs.non_functional
            .iter()
            .filter(|n| n.id.starts_with(&format!("NFR-{code}-")))
            .cloned()
            .collect()
    };
    let stack = match code.primary_language() {
        Some(lang) => {
            let title = format!("Build on the existing {lang} code base");
            Adr::new(Kind::Stack, title, true, all_reqs.clone())
        }
        None => {
            let words = text::words(&ctx.task_text);
            let title = "Choose the implementation stack";
            Adr {
                named_language: text::WORDS
                    .languages
                    .iter()
                    .find(|[w, _]| text::has(&words, w))
                    .map(|[_, l]| l.as_str()),
                ..Adr::new(Kind::Stack, title, false, all_reqs.clone())
            }
        }
    };
    let structure = "One component per goal";
    let mut adrs = vec![
        stack,
        Adr::new(Kind::Structure, structure, true, all_reqs.clone()),
        match &code.facts.test_framework {
            Some(t) => Adr::new(
                Kind::Tests,
                format!("Verify with {}", t.name),
                true,
                all_reqs.clone(),
            ),
            None => Adr::new(
                Kind::Tests,
                "Choose how the change is tested",
                false,
                all_reqs.clone(),
            ),
        },
    ];
    let security = nfrs_of("S");
    if !security.is_empty() {
        let libs: Vec<Library> = code
            .dependencies()
            .into_iter()
            .filter(|l| {
                text::WORDS
                    .security_libs
                    .iter()
                    .any(|s| l.name.to_lowercase().contains(s.as_str()))
            })
            .take(3)
            .collect();
        let mut traces: Vec<String> = security.iter().map(|n| n.id.clone()).collect();
        traces.extend(with_topic(Topic::Security));
        let title = "Meet the security requirements with vetted libraries and boundary checks";
        let accepted = !libs.is_empty();
        adrs.push(Adr {
            nfrs: security,
            libs,
            ..Adr::new(Kind::Security, title, accepted, traces)
        });
    }
    let perf: Vec<ReqRow> = nfrs_of("P").into_iter().chain(nfrs_of("SC")).collect();
    if !perf.is_empty() {
        let mut traces: Vec<String> = perf.iter().map(|n| n.id.clone()).collect();
        traces.extend(with_topic(Topic::Performance));
        traces.extend(with_topic(Topic::Scale));
        traces.dedup();
        adrs.push(Adr {
            nfrs: perf,
            ..Adr::new(
                Kind::Performance,
                "Measure before optimising",
                false,
                traces,
            )
        });
    }
    let data_reqs = with_topic(Topic::Data);
    let sql = d.has_signal("sql_detected");
    if sql || d.has_signal("data_migration") || !data_reqs.is_empty() {
        let store = text::systems(&ctx.task_text)
            .into_iter()
            .map(|s| s.name.as_str())
            .find(|s| text::has(&text::WORDS.stores, s));
        let (title, accepted) = match (store, sql) {
            (Some(store), _) => (format!("Keep the new data in {store}"), true),
            (None, true) => ("Keep new data in the existing database".into(), true),
            (None, false) => ("Choose where the new data lives".into(), false),
        };
        let traces = if data_reqs.is_empty() {
            all_reqs.clone()
        } else {
            data_reqs.clone()
        };
        adrs.push(Adr {
            store,
            data_reqs,
            ..Adr::new(Kind::Data, title, accepted, traces)
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

/// The data of one decision's file.
#[derive(Serialize)]
struct AdrDoc<'a> {
    #[serde(flatten)]
    adr: &'a Adr,
    id: &'a str,
    date: &'a str,
    all_reqs: Vec<String>,
    /// The components implementing a requirement it serves.
    components: Vec<String>,
    all_components: &'a [Component],
    code: CodeView<'a>,
    signals: &'a [String],
    /// What shows each signal the decisions quote.
    evidence: BTreeMap<&'static str, String>,
}

/// A row of the decisions table, and the decision as its file words it.
#[derive(Serialize)]
struct AdrRow<'a> {
    id: String,
    kind: Kind,
    file: String,
    title: &'a str,
    status: &'static str,
    traces: &'a [String],
    decision: String,
}

/// The data of the index.
#[derive(Serialize)]
struct IndexDoc<'a> {
    dependencies: Vec<String>,
    title: &'a str,
    functional: usize,
    components: &'a [Component],
    users: Vec<String>,
    external: Vec<&'static System>,
    code: CodeView<'a>,
    adrs: &'a [AdrRow<'a>],
    nfrs: &'a [ReqRow],
    data_components: Vec<String>,
    security_components: Vec<String>,
    untouched: Vec<String>,
    /// What shows each risk signal the analyst reported.
    evidence: BTreeMap<&'static str, String>,
}

/// Writes `spec/architecture/_index.md` and one file per decision.
pub fn write(ctx: &Ctx, folder: &Folder) -> Step<Draft> {
    ctx.require(folder, spec::BRIEF, Phase::Architecture)?;
    ctx.require(folder, spec::REQUIREMENTS_INDEX, Phase::Architecture)?;
    let read = spec::Spec::read(folder);
    let brief = read.brief.unwrap_or_default();
    let reqs = read.requirements.unwrap_or_default();
    if reqs.functional.is_empty() {
        return Err(format!(
            "cannot write the architecture: `{}` lists no REQ-NNN requirement",
            spec::REQUIREMENTS_INDEX
        ));
    }
    let comps = components(&brief.goals, &reqs, ctx.input.code.files());
    let adrs = decisions(ctx, &reqs);
    let d = &ctx.discovery;
    let all_reqs: Vec<String> = reqs.functional.iter().map(|r| r.id.clone()).collect();
    let mut files = Vec::new();
    let mut rows = Vec::new();
    for (i, a) in adrs.iter().enumerate() {
        let id = format!("ADR-{:03}", i + 1);
        let file = format!("{id}-{}.md", text::slug(&a.title, "decision"));
        let path = format!("spec/architecture/{file}");
        let doc = AdrDoc {
            adr: a,
            id: &id,
            date: &ctx.date,
            all_reqs: all_reqs.clone(),
            components: comps
                .iter()
                .filter(|c| c.reqs.iter().any(|r| a.traces.contains(r)))
                .map(|c| c.id.clone())
                .collect(),
            all_components: &comps,
            code: d.code.view(),
            signals: &d.signals,
            evidence: ["legacy_patterns", "test_gap", "sql_detected"]
                .into_iter()
                .filter(|s| d.has_signal(s))
                .map(|s| (s, d.evidence_of(s)))
                .collect(),
        };
        let (text, decision) = ctx.fill_and_read(&path, "adr.md", &doc, "decision")?;
        files.push((path, text));
        rows.push(AdrRow {
            id,
            kind: a.kind,
            file,
            title: &a.title,
            status: a.status,
            traces: &a.traces,
            decision,
        });
    }
    let index = index(ctx, brief.users, &reqs, &comps, &rows);
    ctx.draft(Phase::Architecture, &index, files)
}

/// The data of the index.
fn index<'a>(
    ctx: &'a Ctx,
    users: Vec<String>,
    reqs: &'a Requirements,
    comps: &'a [Component],
    rows: &'a [AdrRow<'a>],
) -> IndexDoc<'a> {
    let d = &ctx.discovery;
    let code = &d.code;
    let comps_with = |topic: Topic| -> Vec<String> {
        comps
            .iter()
            .filter(|c| c.topics.contains(&topic))
            .map(|c| c.id.clone())
            .collect()
    };
    let touched: Vec<&String> = comps.iter().filter_map(|c| c.module.as_ref()).collect();
    IndexDoc {
        dependencies: ctx.dependency_paths(&[spec::BRIEF, spec::REQUIREMENTS_INDEX]),
        title: &ctx.title,
        functional: reqs.functional.len(),
        components: comps,
        users,
        external: text::systems(&ctx.task_text),
        code: code.view(),
        adrs: rows,
        nfrs: &reqs.non_functional,
        data_components: comps_with(Topic::Data),
        security_components: comps_with(Topic::Security),
        untouched: code
            .facts
            .source_dirs
            .iter()
            .filter(|s| {
                !touched
                    .iter()
                    .any(|t| t.starts_with(&format!("{}/", s.trim_end_matches('/'))))
            })
            .cloned()
            .collect(),
        evidence: [
            "test_gap",
            "legacy_patterns",
            "breaking_change",
            "data_migration",
            "concurrency_issue",
        ]
        .into_iter()
        .filter(|s| d.has_signal(s))
        .map(|s| (s, d.evidence_of(s)))
        .collect(),
    }
}
