//! Phase 3: requirements. Each goal of the brief gives one REQ per item of its object list;
//! non-functional requirements come from the analyst's signals, the goals' topics and the
//! stated constraints.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use super::context::{self, Discovery};
use super::text::{self, System, Topic};
use super::{Ctx, Draft, Folder, Moscow, Phase, Step};
use tlv4_specdoc::spec::{self, Goal as GoalRow};

/// The category of a non-functional requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
pub(super) enum Category {
    /// `NFR-P-NNN`.
    Performance,
    /// `NFR-S-NNN`.
    Security,
    /// `NFR-SC-NNN`.
    Scalability,
    /// `NFR-U-NNN`.
    Usability,
}

/// The id code of a category and the goal topic it answers to.
#[derive(Deserialize)]
struct CategoryInfo {
    code: String,
    topic: Topic,
}

/// The words of one non-functional requirement.
#[derive(Deserialize, Serialize, Clone)]
struct Entry {
    title: String,
    requirement: String,
    metric: String,
    target: String,
    method: String,
}

/// A non-functional requirement before it gets its id.
#[derive(Serialize)]
struct NfrSpec {
    category: Category,
    #[serde(flatten)]
    entry: Entry,
    priority: Moscow,
    source: String,
}

/// A non-functional requirement an analyst signal calls for.
#[derive(Deserialize)]
struct SignalNfr {
    /// Any of these signals calls for it.
    signals: Vec<String>,
    category: Category,
    #[serde(flatten)]
    entry: Entry,
}

/// How a constraint of one category is measured.
#[derive(Deserialize)]
struct Measure {
    metric: String,
    method: String,
}

/// The non-functional requirements the writer knows; see `nfr-catalogue.toml`.
#[derive(Deserialize)]
struct Catalogue {
    signal: Vec<SignalNfr>,
    topic: BTreeMap<Category, Entry>,
    constraint: BTreeMap<Category, Measure>,
    baseline: Entry,
    category: BTreeMap<Category, CategoryInfo>,
}

/// [`Catalogue`], read once; a test parses the file.
static CATALOGUE: LazyLock<Catalogue> =
    LazyLock::new(|| crate::builtin::template::data(builtin!("nfr-catalogue.toml")));

impl Category {
    fn info(self) -> &'static CategoryInfo {
        &CATALOGUE.category[&self]
    }

    fn of_topic(topic: Topic) -> Option<Category> {
        CATALOGUE
            .category
            .iter()
            .find(|(_, i)| i.topic == topic)
            .map(|(c, _)| *c)
    }
}

impl NfrSpec {
    /// Security NFRs are Must, the others Should.
    fn new(category: Category, entry: &Entry, source: String) -> NfrSpec {
        NfrSpec {
            category,
            entry: entry.clone(),
            priority: if category == Category::Security {
                Moscow::Must
            } else {
                Moscow::Should
            },
            source,
        }
    }
}

/// The NFRs: from signals, then constraints, then goal topics, then a baseline for security;
/// and the constraints of no category.
fn nfr_specs(d: &Discovery, goals: &[GoalRow]) -> (Vec<NfrSpec>, Vec<String>) {
    let mut specs: Vec<NfrSpec> = Vec::new();
    for n in &CATALOGUE.signal {
        if let Some(signal) = n.signals.iter().find(|s| d.has_signal(s)) {
            let source = format!("signal `{signal}` ({})", d.evidence_of(signal));
            specs.push(NfrSpec::new(n.category, &n.entry, source));
        }
    }
    let mut unclassified = Vec::new();
    for c in &d.constraints {
        let category = text::topics(c).into_iter().find_map(Category::of_topic);
        match category.and_then(|k| Some((k, CATALOGUE.constraint.get(&k)?))) {
            Some((category, measure)) => specs.push(NfrSpec {
                category,
                entry: Entry {
                    title: text::shorten(c, 60),
                    requirement: format!(
                        "The stated constraint holds: {}.",
                        c.trim_end_matches('.')
                    ),
                    metric: measure.metric.clone(),
                    target: format!("as stated: {}", c.trim_end_matches('.')),
                    method: measure.method.clone(),
                },
                priority: Moscow::Must,
                source: "a constraint of the discovery context".into(),
            }),
            None => unclassified.push(c.clone()),
        }
    }
    for (&category, info) in &CATALOGUE.category {
        if goals
            .iter()
            .any(|g| text::topics(&g.text).contains(&info.topic))
            && !specs.iter().any(|s| s.category == category)
            && let Some(entry) = CATALOGUE.topic.get(&category)
        {
            specs.push(NfrSpec::new(
                category,
                entry,
                "the goals of the brief".into(),
            ));
        }
    }
    if !specs.iter().any(|s| s.category == Category::Security) {
        let source = "the baseline every change meets".into();
        specs.push(NfrSpec::new(
            Category::Security,
            &CATALOGUE.baseline,
            source,
        ));
    }
    specs.sort_by_key(|s| s.category);
    (specs, unclassified)
}

/// One functional requirement.
#[derive(Serialize)]
struct Req {
    id: String,
    title: String,
    goal: GoalRow,
    /// How many requirements its goal was split into.
    parts: usize,
    /// Its topics; the first, the main one, chooses its benefit and an extra criterion.
    topics: Vec<Topic>,
    /// Whether its title starts with a verb.
    verb_led: bool,
    /// A path its key words match.
    module: Option<String>,
    /// The file name, in `spec/requirements/`.
    file: String,
}

/// One non-functional requirement with its id.
#[derive(Serialize)]
struct Nfr<'a> {
    id: String,
    #[serde(flatten)]
    spec: &'a NfrSpec,
    /// The goals it serves.
    traces: Vec<String>,
    file: String,
}

/// The data of one functional requirement's file: it names the security requirements and
/// the benchmark of the first performance one.
#[derive(Serialize)]
struct ReqDoc<'a> {
    #[serde(flatten)]
    req: &'a Req,
    user: &'a str,
    nfrs: &'a [Nfr<'a>],
}

/// The data of the index.
#[derive(Serialize)]
struct IndexDoc<'a> {
    goals: &'a [GoalRow],
    reqs: &'a [Req],
    nfrs: &'a [Nfr<'a>],
    systems: Vec<&'static System>,
    unclassified: &'a [String],
}

/// Writes `spec/requirements/_index.md` and one file per requirement.
pub(super) fn write(ctx: &Ctx, folder: &Folder) -> Step<Draft> {
    let spec::Brief { goals, users, .. } = spec::Spec::read(folder).brief.unwrap_or_default();
    if goals.is_empty() {
        return Err(format!(
            "cannot write the requirements: `{}` has no goals table with G-NNN ids",
            spec::BRIEF
        ));
    }
    let user = users.first().map_or("Developer", String::as_str);
    let mut reqs: Vec<Req> = Vec::new();
    for g in &goals {
        let parts = text::decompose(&g.text);
        let n = parts.len();
        for title in parts {
            let id = format!("REQ-{:03}", reqs.len() + 1);
            reqs.push(Req {
                file: format!("{id}-{}.md", text::slug(&title, "requirement")),
                id,
                topics: text::topics(&format!("{title} {}", g.text)),
                verb_led: title.split_whitespace().next().is_some_and(text::is_verb),
                module: context::matching_module(ctx.input.code.files(), &text::key_words(&title))
                    .map(|(m, _)| m),
                title,
                goal: g.clone(),
                parts: n,
            });
        }
    }
    let (specs, unclassified) = nfr_specs(&ctx.discovery, &goals);
    let nfrs = number(&specs, &goals);
    let mut files: Vec<(String, String)> = Vec::new();
    for req in &reqs {
        let path = format!("spec/requirements/{}", req.file);
        let doc = ReqDoc {
            req,
            user,
            nfrs: &nfrs,
        };
        files.push((path.clone(), ctx.fill(&path, "requirement.md", &doc)?));
    }
    for n in &nfrs {
        let path = format!("spec/requirements/{}", n.file);
        files.push((path.clone(), ctx.fill(&path, "nfr.md", n)?));
    }
    let index = IndexDoc {
        goals: &goals,
        reqs: &reqs,
        nfrs: &nfrs,
        systems: text::systems(&ctx.task_text),
        unclassified: &unclassified,
    };
    ctx.draft(Phase::Requirements, &index, files)
}

/// The non-functional requirements with their ids (numbered per category) and the goals
/// they serve: those of their topic, or every goal.
fn number<'a>(specs: &'a [NfrSpec], goals: &[GoalRow]) -> Vec<Nfr<'a>> {
    let mut out: Vec<Nfr> = Vec::new();
    for spec in specs {
        let info = spec.category.info();
        let n = out
            .iter()
            .filter(|o| o.spec.category == spec.category)
            .count()
            + 1;
        let id = format!("NFR-{}-{n:03}", info.code);
        let matched: Vec<String> = goals
            .iter()
            .filter(|g| text::topics(&g.text).contains(&info.topic))
            .map(|g| g.id.clone())
            .collect();
        out.push(Nfr {
            file: format!("{id}-{}.md", text::slug(&spec.entry.title, "requirement")),
            id,
            spec,
            traces: if matched.is_empty() {
                goals.iter().map(|g| g.id.clone()).collect()
            } else {
                matched
            },
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalogue_knows_every_category() {
        let catalogue = &*CATALOGUE;
        for c in [
            Category::Performance,
            Category::Security,
            Category::Scalability,
            Category::Usability,
        ] {
            assert!(catalogue.topic.contains_key(&c), "{c:?} has no topic NFR");
            assert!(
                catalogue.constraint.contains_key(&c),
                "{c:?} has no measure"
            );
            assert_eq!(Category::of_topic(c.info().topic), Some(c));
        }
        assert!(catalogue.signal.iter().all(|s| !s.signals.is_empty()));
    }
}
