//! Phase 4: architecture. One component per goal, placed in the existing module its key words
//! match; decisions recorded as ADRs, each backed by what the repository shows (Accepted) or
//! left for a person to confirm (Proposed).

use serde::Serialize;

use super::context::{self, Library};
use super::text::{self, System, Topic};
use super::{Ctx, Draft, Folder, Phase, Step};
use crate::CodeFile;
use tlv4_specdoc::spec::{self, Goal as GoalRow, Req as ReqRow, Requirements};

/// One component.
#[derive(Serialize)]
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

/// What a decision is about; its text follows from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    #[default]
    Stack,
    Structure,
    Tests,
    Security,
    Performance,
    Data,
}

/// One decision: what it is about, and the facts its text quotes besides those of the code
/// and the analyst; each kind uses its own.
#[derive(Default, Serialize)]
struct Adr {
    /// `ADR-NNN`, and its file name in `spec/architecture/`.
    id: String,
    file: String,
    kind: Kind,
    title: String,
    status: &'static str,
    traces: Vec<String>,
    /// A language the request names (used when there is no code).
    named_language: Option<&'static str>,
    nfrs: Vec<ReqRow>,
    libs: Vec<Library>,
    /// A store the request names.
    store: Option<&'static str>,
    data_reqs: Vec<String>,
    /// The decision as its file words it, which the index quotes.
    decision: String,
}

impl Adr {
    fn new(kind: Kind, title: impl Into<String>, accepted: bool, traces: Vec<String>) -> Adr {
        Adr {
            kind,
            title: title.into(),
            status: if accepted { "Accepted" } else { "Proposed" },
            traces,
            ..Adr::default()
        }
    }
}

/// One component per goal with requirements, in goal order, then one for the requirements
/// that trace to no goal.
fn components(goals: &[GoalRow], reqs: &Requirements, files: &[CodeFile]) -> Vec<Component> {
    let owner = |r: &&ReqRow| goals.iter().position(|g| r.traces.first() == Some(&g.id));
    let mut out: Vec<Component> = Vec::new();
    for i in (0..goals.len()).map(Some).chain([None]) {
        let rs: Vec<&ReqRow> = reqs.functional.iter().filter(|r| owner(r) == i).collect();
        if rs.is_empty() {
            continue;
        }
        let goal = i.map(|i| &goals[i]);
        let basis = match goal {
            Some(g) => g.text.clone(),
            None => rs
                .iter()
                .map(|r| r.title.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        };
        let mut name = goal.map_or_else(|| "Shared core".to_owned(), |g| text::topic_name(&g.text));
        if out.iter().any(|c| c.name == name) {
            name = format!("{name} ({})", out.len() + 1);
        }
        let mut key_words = text::key_words(&basis);
        for w in rs.iter().flat_map(|r| text::key_words(&r.title)) {
            if !key_words.contains(&w) {
                key_words.push(w);
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
        let deps = out
            .iter()
            .filter(|c| {
                c.key_words.iter().any(|w| key_words.contains(w))
                    || (module.is_some() && c.module == module)
            })
            .map(|c| c.id.clone())
            .collect();
        out.push(Component {
            id: format!("COMP-{:03}", out.len() + 1),
            name,
            goal: goal.cloned(),
            reqs: rs.iter().map(|r| r.id.clone()).collect(),
            topics: text::topics(&basis),
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
    // The ids of `nfrs`, then of the requirements with any of `topics`.
    let traced = |nfrs: &[ReqRow], topics: &[Topic]| -> Vec<String> {
        let mut ids: Vec<String> = nfrs.iter().map(|n| n.id.clone()).collect();
        ids.extend(topics.iter().flat_map(|t| with_topic(*t)));
        ids.dedup();
        ids
    };
    let words = text::words(&ctx.task_text);
    let lang = code.primary_language();
    let stack = lang.map_or_else(
        || "Choose the implementation stack".to_owned(),
        |lang| format!("Build on the existing {lang} code base"),
    );
    let tests = code.facts.test_framework.as_ref();
    let verify = tests.map_or_else(
        || "Choose how the change is tested".to_owned(),
        |t| format!("Verify with {}", t.name),
    );
    let mut adrs = vec![
        Adr {
            named_language: (text::WORDS.languages.iter())
                .find(|[w, _]| text::has(&words, w))
                .map(|[_, l]| l.as_str()),
            ..Adr::new(Kind::Stack, stack, lang.is_some(), all_reqs.clone())
        },
        Adr::new(
            Kind::Structure,
            "One component per goal",
            true,
            all_reqs.clone(),
        ),
        Adr::new(Kind::Tests, verify, tests.is_some(), all_reqs.clone()),
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
        let traces = traced(&security, &[Topic::Security]);
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
        let traces = traced(&perf, &[Topic::Performance, Topic::Scale]);
        let title = "Measure before optimising";
        adrs.push(Adr {
            nfrs: perf,
            ..Adr::new(Kind::Performance, title, false, traces)
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
    for (i, a) in adrs.iter_mut().enumerate() {
        a.id = format!("ADR-{:03}", i + 1);
        a.file = format!("{}-{}.md", a.id, text::slug(&a.title, "decision"));
    }
    adrs
}

/// The data of one decision's file.
#[derive(Serialize)]
struct AdrDoc<'a> {
    #[serde(flatten)]
    adr: &'a Adr,
    all_reqs: &'a [String],
    /// The components implementing a requirement it serves.
    components: Vec<String>,
    all_components: &'a [Component],
}

/// The data of the index.
#[derive(Serialize)]
struct IndexDoc<'a> {
    functional: usize,
    components: &'a [Component],
    users: Vec<String>,
    external: Vec<&'static System>,
    adrs: &'a [Adr],
    nfrs: &'a [ReqRow],
    /// The source directories no component touches.
    untouched: Vec<String>,
}

/// Writes `spec/architecture/_index.md` and one file per decision.
pub(super) fn write(ctx: &Ctx, folder: &Folder) -> Step<Draft> {
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
    let mut adrs = decisions(ctx, &reqs);
    let all_reqs: Vec<String> = reqs.functional.iter().map(|r| r.id.clone()).collect();
    let mut files = Vec::new();
    for adr in &mut adrs {
        let path = format!("spec/architecture/{}", adr.file);
        let doc = AdrDoc {
            adr,
            all_reqs: &all_reqs,
            components: comps
                .iter()
                .filter(|c| c.reqs.iter().any(|r| adr.traces.contains(r)))
                .map(|c| c.id.clone())
                .collect(),
            all_components: &comps,
        };
        let (text, decision) = ctx.fill_and_read(&path, "adr.md", &doc, "decision")?;
        files.push((path, text));
        adr.decision = decision;
    }
    let touched: Vec<&String> = comps.iter().filter_map(|c| c.module.as_ref()).collect();
    let source_dirs = &ctx.discovery.code.facts.source_dirs;
    let index = IndexDoc {
        functional: reqs.functional.len(),
        components: &comps,
        users: brief.users,
        external: text::systems(&ctx.task_text),
        adrs: &adrs,
        nfrs: &reqs.non_functional,
        untouched: (source_dirs.iter())
            .filter(|s| {
                let dir = format!("{}/", s.trim_end_matches('/'));
                !touched.iter().any(|t| t.starts_with(&dir))
            })
            .cloned()
            .collect(),
    };
    ctx.draft(Phase::Architecture, &index, files)
}
