//! The builtin members and moderator: deterministic, offline stand-ins used where no agent
//! is configured, so that a discussion runs end to end anywhere and the record says so.
//!
//! A builtin member does not reason. It reads the options out of the topic (`A or B`,
//! `A vs B`, `A, B, C`; otherwise "go ahead" / "hold back" / "pilot first"), takes the
//! option of its seat, and fills the round's contract from templates naming the topic and
//! the others' options. The builtin moderator groups the members' structured positions by
//! issue and stance.

use std::collections::BTreeMap;

use super::{
    Contribution, Critique, IssueRating, Member, MemberError, Moderator, Pole, Rating, RatingInput,
    RoundKind, Stance, Turn,
};

/// The options a topic names, in order.
pub fn options(topic: &str) -> Vec<String> {
    let t = topic.trim().trim_end_matches(['?', '.', '!']);
    let t = t.split_once(':').map_or(
        t,
        |(head, rest)| if rest.trim().is_empty() { head } else { rest },
    );
    static SEPARATOR: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)\s+(?:or|vs\.?|versus)\s+|\s*,\s*(?:or\s+)?")
            .expect("a valid regex")
    });
    let parts: Vec<String> = SEPARATOR
        .split(t)
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect();
    if parts.len() >= 2 {
        parts
    } else {
        vec![
            "go ahead as proposed".into(),
            "hold back until the risks are known".into(),
            "try a small pilot first".into(),
        ]
    }
}

/// The issue every builtin member speaks to.
pub const ISSUE: &str = "the choice";

/// A builtin member of seat `index` among `roles` (topic members in order, then the devil's
/// advocate).
pub struct BuiltinMember {
    topic: String,
    roles: Vec<String>,
    index: usize,
    devil: bool,
    issue: String,
}

impl BuiltinMember {
    /// The builtin member of `role` in a discussion of `topic` among `roles`.
    pub fn new(topic: &str, roles: &[String], role: &str, devil: bool) -> BuiltinMember {
        BuiltinMember {
            topic: topic.to_owned(),
            roles: roles.to_vec(),
            index: roles.iter().position(|r| r == role).unwrap_or(0),
            devil,
            issue: ISSUE.into(),
        }
    }

    /// The same member speaking to `issue` instead of [`ISSUE`].
    pub fn on_issue(mut self, issue: &str) -> BuiltinMember {
        self.issue = issue.to_owned();
        self
    }

    fn option_of(&self, index: usize) -> String {
        let opts = options(&self.topic);
        opts[index % opts.len()].clone()
    }

    fn position(&self, role: &str, index: usize) -> Stance {
        let opt = self.option_of(index);
        Stance {
            issue: self.issue.clone(),
            stance: opt.clone(),
            reason: format!(
                "seen from the {role} seat, {opt} is the option whose cost and benefit are the easiest to state for this topic"
            ),
        }
    }

    fn contribution(&self, turn: &Turn) -> Contribution {
        let role = &turn.role;
        let topic_roles: Vec<(usize, &String)> = self
            .roles
            .iter()
            .enumerate()
            .filter(|(_, r)| r.as_str() != super::DEVIL)
            .collect();
        let mut c = Contribution {
            changed: false,
            why: match turn.round {
                RoundKind::Position => "This is a first position.".into(),
                _ => "The builtin member keeps its templated position; it cannot weigh arguments."
                    .into(),
            },
            ..Contribution::default()
        };
        if self.devil {
            let opts = options(&self.topic).join(", ");
            c.text = format!(
                "I question the framing of \"{}\" before any option is taken.",
                self.topic
            );
            c.positions = vec![Stance {
                issue: self.issue.clone(),
                stance: "none of the options as framed".into(),
                reason: "the options were listed before the problem they solve was stated".into(),
            }];
            c.assumptions = vec![
                format!("that the options named ({opts}) are the only ones"),
                "that the choice can be reversed cheaply if it proves wrong".into(),
                "that the team has the skills and time each option needs".into(),
            ];
            if matches!(turn.round, RoundKind::Challenge | RoundKind::Rebuttal) {
                let critique = |target: &String, i: usize| Critique {
                    target: target.clone(),
                    weakness: format!("{} is argued without its running cost", self.option_of(i)),
                    failure: "the load or the team changes and the choice no longer fits".into(),
                    alternative: "decide after a time-boxed spike that measures both options"
                        .into(),
                };
                c.critiques = topic_roles
                    .iter()
                    .filter(|(_, r)| turn.prompt.contains(&format!("### {r}\n")))
                    .take(2)
                    .map(|(i, r)| critique(r, *i))
                    .collect();
                if c.critiques.is_empty()
                    && let Some((i, r)) = topic_roles.first()
                {
                    c.critiques.push(critique(r, *i));
                }
            }
            if turn.round == RoundKind::Synthesis {
                c.text = "As a compromise: take the option most members hold, behind a seam that lets the team replace it, and measure it first.".into();
                self.finish(&mut c);
            }
            return c;
        }
        let mine = self.position(role, self.index);
        c.text = format!("For \"{}\" I hold: {}.", self.topic, mine.stance);
        c.positions = vec![mine.clone()];
        if turn.round == RoundKind::Challenge {
            c.text = format!(
                "The other proposals for \"{}\" leave questions open.",
                self.topic
            );
            c.critiques = topic_roles
                .iter()
                .filter(|(i, r)| *r != role && self.option_of(*i) != mine.stance)
                .map(|(i, r)| Critique {
                    target: (*r).clone(),
                    weakness: format!("{} does not say what it costs to run", self.option_of(*i)),
                    failure: format!(
                        "{} fails once the assumptions behind it stop holding",
                        self.option_of(*i)
                    ),
                    alternative: mine.stance.clone(),
                })
                .collect();
            if c.critiques.is_empty() {
                c.critiques.push(Critique {
                    target: super::DEVIL.into(),
                    weakness: "questioning the framing offers no option to take".into(),
                    failure: "the team waits and the decision is made by default".into(),
                    alternative: mine.stance.clone(),
                });
            }
        }
        if turn.round == RoundKind::Synthesis {
            self.finish(&mut c);
        }
        c
    }

    fn finish(&self, c: &mut Contribution) {
        c.confidence = Some("LOW".into());
        c.accepts = Some(vec![
            "a time-boxed measurement before the choice is final".into(),
        ]);
        c.will_not_concede = Some(Vec::new());
        c.risks = Some(vec!["this position is a template, not a judgement".into()]);
    }
}

impl Member for BuiltinMember {
    fn agent(&self) -> &str {
        "builtin"
    }

    fn speak(&self, turn: &Turn) -> Result<String, MemberError> {
        let c = self.contribution(turn);
        let json = serde_json::to_string_pretty(&c).expect("a contribution serialises");
        Ok(format!("```json\n{json}\n```\n"))
    }
}

/// The builtin moderator: the issues and poles the members' structured positions give.
pub struct BuiltinModerator;

/// An issue or stance reduced to compare equal across members: lower case, single spaces.
pub fn key(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
        .trim_end_matches(['.', '!'])
        .to_owned()
}

impl Moderator for BuiltinModerator {
    fn agent(&self) -> &str {
        "builtin"
    }

    fn rate(&self, input: &RatingInput<'_>) -> Result<Rating, MemberError> {
        // issue key -> (issue as first written, stance key -> (stance as written, members))
        type Poles = BTreeMap<String, (String, Vec<String>)>;
        let mut issues: BTreeMap<String, (String, Poles)> = BTreeMap::new();
        let mut order: Vec<String> = Vec::new();
        for (role, c) in input.contributions {
            for p in &c.positions {
                let k = key(&p.issue);
                if !issues.contains_key(&k) {
                    order.push(k.clone());
                }
                let entry = issues
                    .entry(k)
                    .or_insert_with(|| (p.issue.trim().to_owned(), BTreeMap::new()));
                let pole = entry
                    .1
                    .entry(key(&p.stance))
                    .or_insert_with(|| (p.stance.trim().to_owned(), Vec::new()));
                if !pole.1.contains(role) {
                    pole.1.push(role.clone());
                }
            }
        }
        let issues = order
            .into_iter()
            .filter_map(|k| issues.remove(&k))
            .map(|(issue, poles)| IssueRating {
                issue,
                positions: poles
                    .into_values()
                    .map(|(stance, members)| Pole { stance, members })
                    .collect(),
            })
            .collect();
        Ok(Rating {
            issues,
            note: String::new(),
        })
    }
}
