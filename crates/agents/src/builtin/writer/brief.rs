//! Phase 2: the product brief. Goals come from the clauses of the request; users,
//! constraints and the state of the code from the discovery context and the code's paths.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use super::context::{self, Discovery};
use super::text;
use super::{Ctx, Draft, Moscow, Phase, Step};
use tlv4_specdoc::md;

/// At most this many goals; further clauses are listed as an open question.
const MAX_GOALS: usize = 7;

/// One goal of the brief.
#[derive(Serialize)]
struct Goal {
    id: String,
    text: String,
    priority: Moscow,
    #[serde(flatten)]
    metric: &'static Metric,
    /// The existing path its key words match.
    module: Option<String>,
}

/// A goal's success metric and its target.
#[derive(Deserialize, Serialize)]
struct Metric {
    metric: String,
    target: String,
}

/// The [`Metric`] of a goal by its main topic, and of one without; see `goal-metrics.toml`.
#[derive(Deserialize)]
struct Metrics {
    none: Metric,
    #[serde(flatten)]
    topic: BTreeMap<text::Topic, Metric>,
}

static METRICS: LazyLock<Metrics> =
    LazyLock::new(|| crate::builtin::template::data(builtin!("goal-metrics.toml")));

/// A success metric and its target for a goal, by its main topic.
fn metric_for(goal: &str) -> &'static Metric {
    text::topics(goal)
        .first()
        .map_or(&METRICS.none, |t| &METRICS.topic[t])
}

/// Where the user groups came from.
#[derive(PartialEq, Clone, Copy, Serialize)]
#[serde(rename_all = "lowercase")]
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
        if let Some((role, _)) = text::WORDS.roles.iter().find(|(_, ws)| text::has(ws, &w))
            && !found.contains(role)
        {
            found.push(role.clone());
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

/// The data of the brief.
#[derive(Serialize)]
struct BriefDoc<'a> {
    request: &'a str,
    problem: &'a str,
    goals: &'a [Goal],
    users: &'a [String],
    user_source: UserSource,
    personas: Vec<Persona>,
    technical: Vec<String>,
    business: Vec<String>,
    domain: &'a str,
    recommendations: &'a [String],
    /// Whether the request named no goal, so one was assumed.
    named_none: bool,
    /// The analyst's open questions.
    open_questions: &'a [String],
    /// Clauses beyond the goals kept.
    overflow: Vec<String>,
}

/// A user group and the goals that name it.
#[derive(Serialize)]
struct Persona {
    role: String,
    needs: Vec<String>,
}

/// Writes `spec/product-brief.md`.
pub(super) fn write(ctx: &Ctx) -> Step<Draft> {
    let d = &ctx.discovery;
    let positives: Vec<&text::Clause> = ctx.clauses.iter().filter(|c| !c.negative).collect();
    let goal = |i: usize, text: &str, priority: Option<Moscow>| Goal {
        id: format!("G-{:03}", i + 1),
        text: text.to_owned(),
        priority: priority.unwrap_or(if i < 3 { Moscow::Must } else { Moscow::Should }),
        metric: metric_for(text),
        module: context::matching_module(ctx.input.code.files(), &text::key_words(text))
            .map(|(m, _)| m),
    };
    let mut goals: Vec<Goal> = positives
        .iter()
        .take(MAX_GOALS)
        .enumerate()
        .map(|(i, c)| goal(i, &c.text, c.priority))
        .collect();
    let named_none = goals.is_empty();
    if named_none {
        goals.push(goal(0, "Deliver the change the request describes", None));
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
    let (business, technical) = d.constraints.iter().cloned().partition(|c| {
        let lower = c.to_lowercase();
        text::WORDS
            .business
            .iter()
            .any(|b| lower.contains(b.as_str()))
    });
    let doc = BriefDoc {
        request: &ctx.task_text,
        problem,
        personas: users.iter().map(|u| persona(u, &goals)).collect(),
        goals: &goals,
        users: &users,
        user_source,
        technical,
        business,
        domain: &d.domain,
        recommendations: &d.recommendations,
        named_none,
        open_questions: &d.open_questions,
        overflow: positives
            .iter()
            .skip(MAX_GOALS)
            .map(|c| c.text.clone())
            .collect(),
    };
    ctx.draft(Phase::Brief, &doc, Vec::new())
}

/// A user group and the goals that name it; the brief says it needs all of them when none
/// does.
fn persona(user: &str, goals: &[Goal]) -> Persona {
    let stem = |w: &String| w.trim_end_matches('s').to_owned();
    let words: Vec<String> = text::words(user).iter().map(stem).collect();
    let names = |g: &&Goal| {
        text::words(&g.text)
            .iter()
            .any(|x| words.contains(&stem(x)))
    };
    Persona {
        role: user.to_owned(),
        needs: goals.iter().filter(names).map(|g| g.id.clone()).collect(),
    }
}

/// `n thing` or `n things` (`story` → `stories`).
pub(crate) fn count(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else if let Some(stem) = thing.strip_suffix("ry") {
        format!("{n} {stem}ries")
    } else {
        format!("{n} {thing}s")
    }
}

/// The plural of a user group (`Developer` → `Developers`).
pub(crate) fn plural(group: &str) -> String {
    if group.ends_with('s') {
        group.to_owned()
    } else {
        format!("{group}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_topic_has_a_metric() {
        for t in text::Topic::ALL {
            assert!(METRICS.topic.contains_key(&t), "{t:?}");
        }
    }
}
