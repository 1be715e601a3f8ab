//! The roster as the coordinator loads it: the configuration's roles and perspectives checked
//! against the names the builtin pipelines and discuss rules give it
//! ([`crate::coordinator::roster_names`]), which the agents crate cannot build itself.

use std::path::Path;

use crate::agents::replay::NoRecordings;
use crate::agents::roster::{Overrides, Roster};
use tlv4_core::config::Config;
use tlv4_core::error::Result;

fn config(text: &str) -> Config {
    Config::parse("t.toml", text).unwrap()
}

fn load(text: &str, agents: &[&str]) -> Result<Roster> {
    let overrides = Overrides {
        agents: agents.iter().map(|a| (*a).to_owned()).collect(),
        replay: None,
        best_of: Vec::new(),
    };
    Roster::load(
        &config(text),
        &overrides,
        Path::new("/nonexistent"),
        &crate::coordinator::roster_names(),
        &NoRecordings,
    )
}

const TWO: &str = "[agents.mine]\ndriver = \"command\"\nprogram = \"/bin/true\"\n\
                   [agents.other]\ndriver = \"command\"\nprogram = \"/bin/false\"\n\
                   [roles]\ndefault = \"builtin\"\nexecutor = \"mine\"\n";

fn names(r: &Roster) -> Vec<(String, String)> {
    r.describe()
}

#[test]
fn roles_fall_back_to_the_default_then_to_builtin() {
    let r = load(TWO, &[]).unwrap();
    assert_eq!(r.for_role("executor").name(), "mine");
    assert_eq!(r.for_role("writer").name(), "builtin");
    assert_eq!(r.configured(), ["mine (command)"]);
    assert!(!r.is_builtin());
    let r = load("", &[]).unwrap();
    assert!(r.is_builtin());
    assert!(r.configured().is_empty());
}

#[test]
fn the_command_line_overrides_the_file() {
    // NAME: every role; ROLE=NAME: one role, over the file's.
    let r = load(TWO, &["other"]).unwrap();
    assert_eq!(names(&r), [("default".to_owned(), "other".to_owned())]);
    let r = load(TWO, &["writer=other"]).unwrap();
    assert_eq!(r.for_role("writer").name(), "other");
    assert_eq!(r.for_role("executor").name(), "mine");
    assert_eq!(r.configured(), ["mine (command)", "other (command)"]);
    // A driver name not defined in the file: that driver with its defaults.
    let r = load("", &["executor=claude"]).unwrap();
    assert_eq!(r.for_role("executor").name(), "claude");
    assert!(r.configured().is_empty(), "the command line needs no trust");
    let r = load(TWO, &["builtin"]).unwrap();
    assert!(r.is_builtin() && r.configured().is_empty());
}

#[test]
fn drivers_the_file_names_need_trust_those_the_user_names_do_not() {
    // A preset named in [roles] or [discuss.perspectives] with no [agents.X] table.
    let file = "[roles]\ndefault = \"claude\"\n[discuss.perspectives]\nrisk = \"gemini\"\n";
    let r = load(file, &[]).unwrap();
    assert_eq!(r.configured(), ["claude (claude)", "gemini (gemini)"]);
    // The same driver named by the user: only the file's perspective needs trust.
    let r = load(file, &["claude"]).unwrap();
    assert_eq!(r.configured(), ["gemini (gemini)"]);
    let mut c = config("[roles]\nwriter = \"codex\"\n");
    c.user_agents.push("writer=claude".into());
    let r = Roster::load(
        &c,
        &Overrides::default(),
        Path::new("/nonexistent"),
        &crate::coordinator::roster_names(),
        &NoRecordings,
    )
    .unwrap();
    assert!(
        r.configured().is_empty(),
        "git config tlv4.agent is the user's own"
    );
}

#[test]
fn mistakes_are_named() {
    let e = load(TWO, &["executor="]).err().unwrap().to_string();
    assert!(e.contains("expected NAME or ROLE=NAME"), "{e}");
    let e = load(TWO, &["nobody"]).err().unwrap().to_string();
    assert!(
        e.contains("agent `nobody` is neither defined in .tlv4.toml nor a driver"),
        "{e}"
    );
    let e = load("[roles]\ntester = \"builtin\"\n", &[])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("`tester` is not a role an agent plays"), "{e}");
    let e = load(
        "[agents.x]\ndriver = \"nope\"\n[roles]\nwriter = \"x\"\n",
        &[],
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("agent `x`: unknown driver `nope`"), "{e}");
    let e = load(
        "[agents.x]\ndriver = \"command\"\n[roles]\nwriter = \"x\"\n",
        &[],
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("needs `program`"), "{e}");
    let e = load("[discuss.perspectives]\nmarketing = \"builtin\"\n", &[])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("unknown perspective `marketing`"), "{e}");
}

#[test]
fn perspectives_get_their_agents() {
    let r = load(
        &format!("{TWO}[discuss.perspectives]\nproduct = \"other\"\nrisk = \"builtin\"\n"),
        &[],
    )
    .unwrap();
    assert_eq!(r.perspectives().len(), 1);
    assert_eq!(r.perspectives()["product"].name(), "other");
}
