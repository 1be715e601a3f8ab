//! What a discussion leaves behind: one folder per round with a file per member (its
//! structured JSON and its text) and its prompt, the moderator's rating, `discussion.json`
//! (the whole state, for resuming), and the output document with the reference's sections.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{Contribution, Convergence, Discussion, End, Rating, RoundKind, RoundRecord, Status};

/// The folder of a discussion under the pipeline folder.
pub fn folder(d: &Discussion) -> String {
    format!("discussions/{}", d.slug)
}

/// The path of `discussion.json` of the discussion with `slug`.
pub fn state_path(slug: &str) -> String {
    format!("discussions/{slug}/discussion.json")
}

/// The folder of round `rec`.
pub fn round_folder(d: &Discussion, rec: &RoundRecord) -> String {
    format!("{}/{:02}-{}", folder(d), rec.number, rec.kind.as_str())
}

/// `discussion.json`.
pub fn state_file(d: &Discussion) -> (String, Vec<u8>) {
    let mut json = serde_json::to_vec_pretty(d).expect("a discussion serialises");
    json.push(b'\n');
    (state_path(&d.slug), json)
}

/// The files of round `rec`: `<role>.json`, `<role>.md` and `prompts/<role>.md` for every
/// member who had a turn, and `moderator.json`.
pub fn round_files(d: &Discussion, rec: &RoundRecord) -> Vec<(String, Vec<u8>)> {
    let dir = round_folder(d, rec);
    let mut out = Vec::new();
    for t in &rec.turns {
        let mut json = serde_json::to_vec_pretty(t).expect("a turn serialises");
        json.push(b'\n');
        out.push((format!("{dir}/{}.json", t.role), json));
        let text = match &t.contribution {
            Some(c) => contribution_text(&t.role, rec.kind, c),
            None => format!(
                "# {} — {} (round {})\n\nNo contribution: {}\n\n## Last answer\n\n{}\n",
                t.role,
                rec.kind.title(),
                rec.number,
                t.unresponsive.as_deref().unwrap_or("none"),
                t.raw
            ),
        };
        out.push((format!("{dir}/{}.md", t.role), text.into_bytes()));
        out.push((
            format!("{dir}/prompts/{}.md", t.role),
            t.prompt.clone().into_bytes(),
        ));
    }
    let moderator = serde_json::json!({
        "moderator": rec.moderator,
        "rating": rec.rating,
        "state": rec.state,
        "moving": rec.moving,
        "check": rec.check,
        "next": rec.next,
        "notes": rec.notes,
    });
    let mut json = serde_json::to_vec_pretty(&moderator).expect("JSON serialises");
    json.push(b'\n');
    out.push((format!("{dir}/moderator.json"), json));
    out
}

/// A contribution as text.
fn contribution_text(role: &str, kind: RoundKind, c: &Contribution) -> String {
    let mut s = format!("# {role} — {}\n\n{}\n\n", kind.title(), c.text);
    let _ = writeln!(
        s,
        "Changed: {} — {}\n",
        if c.changed { "yes" } else { "no" },
        c.why
    );
    for p in &c.positions {
        let _ = writeln!(s, "- **{}**: {} — {}", p.issue, p.stance, p.reason);
    }
    for k in &c.critiques {
        let _ = writeln!(
            s,
            "- to **{}**: weakness: {}; fails when: {}; alternative: {}",
            k.target, k.weakness, k.failure, k.alternative
        );
    }
    for a in &c.assumptions {
        let _ = writeln!(s, "- assumption: {a}");
    }
    if let Some(level) = &c.confidence {
        let _ = writeln!(s, "\nConfidence: {level}");
    }
    for (title, list) in [
        ("Accepts", &c.accepts),
        ("Will not concede", &c.will_not_concede),
        ("Remaining risks", &c.risks),
    ] {
        if let Some(list) = list {
            let _ = writeln!(
                s,
                "\n{title}: {}",
                if list.is_empty() {
                    "none".into()
                } else {
                    list.join("; ")
                }
            );
        }
    }
    s
}

/// The output document's path in the session's tree.
pub fn document_path(feature: &str, d: &Discussion) -> String {
    format!("docs/specs/{feature}-discussion-{}.md", d.slug)
}

fn md(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The output document.
pub fn document(d: &Discussion) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Discussion: {}\n", md(&d.topic));
    let end = match d.status {
        Status::Running => "running".to_owned(),
        Status::AwaitingDecision => "waiting for the user's decision".to_owned(),
        Status::Ended(e) => e.as_str().replace('_', " "),
    };
    let latest = d.latest();
    let rating = d.last_rating();
    let last_state = d.rounds.iter().rev().find_map(|r| r.state);
    let topic = d.topic_roles();
    summary_section(&mut s, d, &end, &latest, last_state);
    agreement_section(&mut s, rating, &topic);
    ruling_section(&mut s, &latest, rating, &topic);
    history_section(&mut s, d);
    dissent_section(&mut s, &latest, rating, &topic);
    let unchecked = devil_section(&mut s, d);
    actions_section(&mut s, d, &latest, rating, &topic, &unchecked);
    record_section(&mut s, d);
    s
}

/// `## Summary`: how the discussion ended, and what it is material for.
fn summary_section(
    s: &mut String,
    d: &Discussion,
    end: &str,
    latest: &BTreeMap<String, Contribution>,
    last_state: Option<Convergence>,
) {
    let _ = writeln!(s, "## Summary\n");
    let _ = writeln!(
        s,
        "Preset {}; {} rounds; outcome: {end}; last state: {}. Members: {}; moderator: {}.\n",
        d.preset.as_str(),
        d.rounds.len(),
        last_state.map_or("none", Convergence::as_str),
        d.seats
            .iter()
            .map(|x| format!("{} ({})", x.role, x.agent))
            .collect::<Vec<_>>()
            .join(", "),
        d.moderator
    );
    if d.status == Status::Ended(End::FellBack) {
        let _ = writeln!(
            s,
            "The protocol fell back to independent analyses: two or more members were unresponsive. Each member's last contribution follows, as its own analysis.\n"
        );
        for (role, c) in latest {
            let _ = writeln!(s, "### Independent analysis: {role}\n\n{}\n", c.text);
            for p in &c.positions {
                let _ = writeln!(s, "- {}: {} — {}", p.issue, p.stance, p.reason);
            }
            s.push('\n');
        }
    }
    if d.status == Status::Ended(End::ApiError) {
        let _ = writeln!(
            s,
            "The protocol stopped: an agent reported an API error (see the record below).\n"
        );
    }
    let _ = writeln!(s, "This is material for a decision, not a decision.\n");
}

/// `## Agreement matrix`: each member's stance on each issue.
fn agreement_section(s: &mut String, rating: Option<&Rating>, topic: &[String]) {
    let _ = writeln!(s, "## Agreement matrix\n");
    match rating {
        Some(r) if !r.issues.is_empty() => {
            let _ = writeln!(s, "| issue | state | positions |\n|---|---|---|");
            for i in &r.issues {
                let n = i
                    .positions
                    .iter()
                    .filter(|p| p.members.iter().any(|m| topic.contains(m)))
                    .count();
                let state = match n {
                    0 => "not rated",
                    1 => "agreed",
                    2 => "two poles",
                    _ => "divergent",
                };
                let poles: Vec<String> = i
                    .positions
                    .iter()
                    .map(|p| format!("{} ({})", md(&p.stance), p.members.join(", ")))
                    .collect();
                let _ = writeln!(s, "| {} | {state} | {} |", md(&i.issue), poles.join("; "));
            }
            s.push('\n');
        }
        _ => {
            let _ = writeln!(s, "No issue was rated.\n");
        }
    }
}

/// `## Moderator ruling on split issues`: each split issue, its positions and the ruling.
fn ruling_section(
    s: &mut String,
    latest: &BTreeMap<String, Contribution>,
    rating: Option<&Rating>,
    topic: &[String],
) {
    let _ = writeln!(s, "## Moderator ruling on split issues\n");
    let mut split = 0;
    if let Some(r) = rating {
        for i in &r.issues {
            let poles: Vec<_> = i
                .positions
                .iter()
                .filter(|p| p.members.iter().any(|m| topic.contains(m)))
                .collect();
            if poles.len() < 2 {
                continue;
            }
            split += 1;
            let _ = writeln!(s, "### {}\n", md(&i.issue));
            for p in &poles {
                let reasons: Vec<String> = p
                    .members
                    .iter()
                    .filter_map(|m| latest.get(m))
                    .flat_map(|c| c.positions.iter())
                    .filter(|x| super::builtin::key(&x.issue) == super::builtin::key(&i.issue))
                    .map(|x| x.reason.clone())
                    .collect();
                let against: Vec<String> = latest
                    .values()
                    .flat_map(|c| c.critiques.iter())
                    .filter(|k| p.members.contains(&k.target))
                    .map(|k| k.weakness.clone())
                    .collect();
                let _ = writeln!(
                    s,
                    "- **{}** — supporters: {}; for it: {}; trade-offs raised: {}",
                    md(&p.stance),
                    p.members.join(", "),
                    if reasons.is_empty() {
                        "—".into()
                    } else {
                        reasons.join("; ")
                    },
                    if against.is_empty() {
                        "none recorded".into()
                    } else {
                        against.join("; ")
                    }
                );
            }
            let options: Vec<String> = poles.iter().map(|p| p.stance.clone()).collect();
            let _ = writeln!(
                s,
                "\nThe question for you: which of {} fits the goal and the constraints you care most about? The moderator does not say which is right.\n",
                options.join(" or ")
            );
        }
    }
    if split == 0 {
        let _ = writeln!(s, "No issue is split.\n");
    }
}

/// `## Position history`: how each member's stance moved, then each round's contributions.
fn history_section(s: &mut String, d: &Discussion) {
    let _ = writeln!(s, "## Position history\n");
    let _ = writeln!(
        s,
        "| round | kind | state | changes | unresponsive | sent back |\n|---|---|---|---|---|---|"
    );
    for r in &d.rounds {
        let changes = r
            .turns
            .iter()
            .filter(|t| t.contribution.as_ref().is_some_and(|c| c.changed))
            .count();
        let out: Vec<&str> = r
            .turns
            .iter()
            .filter(|t| t.unresponsive.is_some())
            .map(|t| t.role.as_str())
            .collect();
        let back: usize = r.turns.iter().map(|t| t.sent_back.len()).sum();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {changes} | {} | {back} |",
            r.number,
            r.kind.title(),
            r.state.map_or("—", Convergence::as_str),
            if out.is_empty() {
                "—".into()
            } else {
                out.join(", ")
            }
        );
    }
    s.push('\n');
    for r in &d.rounds {
        let _ = writeln!(s, "### Round {} — {}\n", r.number, r.kind.title());
        for t in &r.turns {
            match &t.contribution {
                Some(c) => {
                    let stances: Vec<String> = c
                        .positions
                        .iter()
                        .map(|p| format!("{}: {}", p.issue, p.stance))
                        .collect();
                    let _ = writeln!(
                        s,
                        "- {} ({}): {} — changed: {} ({})",
                        t.role,
                        t.agent,
                        md(&stances.join("; ")),
                        if c.changed { "yes" } else { "no" },
                        md(&c.why)
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        "- {} ({}): no contribution — {}",
                        t.role,
                        t.agent,
                        md(t.unresponsive.as_deref().unwrap_or(""))
                    );
                }
            }
        }
        s.push('\n');
    }
}

/// `## Dissenting views`: the positions that stayed apart from the majority.
fn dissent_section(
    s: &mut String,
    latest: &BTreeMap<String, Contribution>,
    rating: Option<&Rating>,
    topic: &[String],
) {
    let _ = writeln!(s, "## Dissenting views\n");
    let mut dissent = 0;
    if let Some(r) = rating {
        for i in &r.issues {
            let most = i
                .positions
                .iter()
                .map(|p| p.members.iter().filter(|m| topic.contains(m)).count())
                .max()
                .unwrap_or(0);
            for p in &i.positions {
                let n = p.members.iter().filter(|m| topic.contains(m)).count();
                let devil_only = n == 0;
                if n == most && !devil_only && i.positions.len() > 1 && n * 2 > topic.len() {
                    continue;
                }
                if n == most && !devil_only && i.positions.len() == 1 {
                    continue;
                }
                dissent += 1;
                let revisit: Vec<String> = p
                    .members
                    .iter()
                    .filter_map(|m| latest.get(m))
                    .flat_map(|c| {
                        c.risks
                            .clone()
                            .unwrap_or_default()
                            .into_iter()
                            .chain(c.critiques.iter().map(|k| k.failure.clone()))
                    })
                    .take(2)
                    .collect();
                let _ = writeln!(
                    s,
                    "- **{}** on {} ({}): not adopted because {}; revisit {}.",
                    md(&p.stance),
                    md(&i.issue),
                    p.members.join(", "),
                    if devil_only {
                        "the devil's advocate holds it alone, by its seat".to_owned()
                    } else if n == most {
                        "no position won a majority of the topic members".to_owned()
                    } else {
                        "a minority of the topic members holds it".to_owned()
                    },
                    if revisit.is_empty() {
                        "if the facts behind the majority's reasons change".to_owned()
                    } else {
                        format!("when: {}", md(&revisit.join("; ")))
                    }
                );
            }
        }
    }
    if dissent == 0 {
        let _ = writeln!(
            s,
            "None: every member holds the same position on every rated issue.\n"
        );
    } else {
        s.push('\n');
    }
}

/// `## Devil's-advocate summary`: the assumptions named, and whether a later round spoke to them; returns the unchecked ones.
fn devil_section(s: &mut String, d: &Discussion) -> Vec<String> {
    let _ = writeln!(s, "## Devil's-advocate summary\n");
    let mut assumptions: Vec<(u32, String)> = Vec::new();
    for r in &d.rounds {
        for t in r.turns.iter().filter(|t| t.role == super::DEVIL) {
            if let Some(c) = &t.contribution {
                for a in &c.assumptions {
                    if !assumptions.iter().any(|(_, x)| x == a) {
                        assumptions.push((r.number, a.clone()));
                    }
                }
            }
        }
    }
    if assumptions.is_empty() {
        let _ = writeln!(
            s,
            "The devil's advocate named no assumption (it was out of the discussion).\n"
        );
    }
    let mut unchecked = Vec::new();
    for (round, a) in &assumptions {
        let checked = answered(a, *round, d);
        let _ = writeln!(
            s,
            "- {} (round {round}): {}",
            md(a),
            if checked {
                "checked — a member spoke to it in a later round"
            } else {
                "unchecked"
            }
        );
        if !checked {
            unchecked.push(a.clone());
        }
    }
    s.push('\n');
    unchecked
}

/// `## Next actions`: the decision to take, split issues, unchecked assumptions and risks.
fn actions_section(
    s: &mut String,
    d: &Discussion,
    latest: &BTreeMap<String, Contribution>,
    rating: Option<&Rating>,
    topic: &[String],
    unchecked: &[String],
) {
    let _ = writeln!(s, "## Next actions\n");
    let mut actions: Vec<String> = Vec::new();
    if d.status == Status::AwaitingDecision {
        actions.push("Decide on the surface consensus: `git tlv4 discuss --decide adopt` or `--decide challenge`.".into());
    }
    if let Some(r) = rating {
        for i in &r.issues {
            let n = i
                .positions
                .iter()
                .filter(|p| p.members.iter().any(|m| topic.contains(m)))
                .count();
            if n >= 2 {
                actions.push(format!("Decide the split issue: {}.", i.issue));
            }
        }
    }
    for a in unchecked.iter().take(3) {
        actions.push(format!("Check the assumption {a}."));
    }
    let risks: BTreeMap<String, ()> = latest
        .values()
        .flat_map(|c| c.risks.clone().unwrap_or_default())
        .map(|r| (r, ()))
        .collect();
    for r in risks.keys().take(3) {
        actions.push(format!("Watch the risk: {r}."));
    }
    if actions.is_empty() {
        actions.push("Nothing is left open.".into());
    }
    for (i, a) in actions.iter().enumerate() {
        let _ = writeln!(s, "{}. {}", i + 1, md(a));
    }
    s.push('\n');
}

/// `## Record`: the notes, the rounds' files and the user's decisions.
fn record_section(s: &mut String, d: &Discussion) {
    let _ = writeln!(s, "## Record\n");
    for n in &d.notes {
        let _ = writeln!(s, "- {}", md(n));
    }
    for r in &d.rounds {
        for n in &r.notes {
            let _ = writeln!(s, "- round {}: {}", r.number, md(n));
        }
    }
    for (i, dec) in d.decisions.iter().enumerate() {
        let _ = writeln!(
            s,
            "- decision {}: {}",
            i + 1,
            match dec {
                super::Decision::Adopt => "the user adopted the consensus",
                super::Decision::Challenge => "the user asked for more challenge",
            }
        );
    }
    let _ = writeln!(
        s,
        "\nEvery round's material is under `.tlv4/sessions/<SID>/{}/`.",
        folder(d)
    );
}

/// Whether a topic member spoke to assumption `a` (named in `round`) in a later round: half
/// or more of its words of four letters or more appear in that member's text.
fn answered(a: &str, round: u32, d: &Discussion) -> bool {
    let words: Vec<String> = a
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() >= 4)
        .map(str::to_lowercase)
        .collect();
    if words.is_empty() {
        return false;
    }
    d.rounds.iter().filter(|r| r.number > round).any(|r| {
        r.turns.iter().filter(|t| t.role != super::DEVIL).any(|t| {
            t.contribution.as_ref().is_some_and(|c| {
                let text = c.prose().join(" ").to_lowercase();
                let hits = words.iter().filter(|w| text.contains(w.as_str())).count();
                hits * 2 >= words.len()
            })
        })
    })
}
