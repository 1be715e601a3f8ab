//! The project's environment setup under trust: installing dependencies runs the repository's
//! own code (install scripts, build backends, `setup.py`) and what the lockfiles fetch from the
//! network, so a setup step runs only once its input files, and `.tlv4.toml` when it sets the
//! commands, are trusted with their exact content. Detecting the setup needs no trust: only
//! running it does, so a repository with a lockfile starts like any other.

use std::collections::BTreeMap;

use super::{Item, Stored, problems};
use crate::config::FILE;
use crate::environment::{Ecosystem, Plan, Step};

/// Why trust covers the input files of `step`: `environment setup `npm ci` in frontend/
/// (package-lock.json)`.
fn why(step: &Step) -> String {
    let place = if step.dir.is_empty() {
        "at the root".to_owned()
    } else {
        format!("in {}/", step.dir)
    };
    format!(
        "environment setup `{}` {place} ({})",
        step.command_line(),
        step.evidence
    )
}

/// What trust covers of `plan`: the input files of every step that runs a command (a step
/// without commands, cargo's or go's, runs nothing of the repository's), each with its blob
/// id as `ids` gives it; an input `ids` does not know is not there to run. A file that is the
/// input of several steps is one item saying each.
pub fn setup_items(plan: &Plan, ids: &dyn Fn(&str) -> Option<String>) -> Vec<Item> {
    let mut items: BTreeMap<String, Item> = BTreeMap::new();
    for step in plan.steps.iter().filter(|s| !s.commands.is_empty()) {
        for path in &step.inputs {
            let Some(id) = ids(path) else {
                continue;
            };
            items
                .entry(path.clone())
                .and_modify(|i| i.why = format!("{}; {}", i.why, why(step)))
                .or_insert_with(|| Item {
                    path: path.clone(),
                    id,
                    why: why(step),
                });
        }
    }
    items.into_values().collect()
}

/// Why trust covers `.tlv4.toml` when it sets `[environment] setup`.
pub(super) fn configured_why(commands: &[String]) -> String {
    format!("sets the environment setup `{}`", commands.join(" && "))
}

/// Whether `plan` may run: every input file of its steps that run commands is trusted with
/// the blob id `ids` gives (those of the commit the plan was detected from), and so is
/// `.tlv4.toml` when the plan is its `[environment] setup` (`ids(".tlv4.toml")`: the blob id
/// of the configuration the plan was made with). A plan that runs nothing needs no trust.
/// The error names each file that is not trusted and why, and what to run.
pub fn setup_allowed(
    stored: &Stored,
    plan: &Plan,
    ids: &dyn Fn(&str) -> Option<String>,
) -> std::result::Result<(), String> {
    let mut items = setup_items(plan, ids);
    for step in &plan.steps {
        if step.ecosystem() != Ecosystem::Configured || step.commands.is_empty() {
            continue;
        }
        let Some(id) = ids(FILE) else {
            return Err(format!(
                "the environment setup comes from {FILE} ([environment] setup), whose content is not known here, so it is not run"
            ));
        };
        items.insert(
            0,
            Item {
                path: FILE.to_owned(),
                id,
                why: configured_why(&step.commands),
            },
        );
    }
    let bad = problems(stored, &items);
    if bad.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the environment setup runs the repository's install scripts and what its lockfiles fetch, and it is not trusted:\n  {}\nread `git tlv4 trust --show`, then run `git tlv4 trust` to allow exactly this content (it covers these files as the commit HEAD is on holds them)",
        bad.join("\n  ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::{Record, blob_id};

    fn plan() -> Plan {
        let files: BTreeMap<&str, &str> = [
            (
                "frontend/package.json",
                "{\"devDependencies\": {\"jest\": \"29\"}}",
            ),
            ("frontend/package-lock.json", "{}"),
            ("backend/pyproject.toml", "[project]\nname = \"api\"\n"),
            ("backend/uv.lock", "version = 1\n"),
            ("Cargo.lock", ""),
            ("Cargo.toml", ""),
        ]
        .into_iter()
        .collect();
        let paths: Vec<&str> = files.keys().copied().collect();
        Plan::new(
            None,
            crate::environment::detect(&paths, &|p| files.get(p).map(|t| t.as_bytes().to_vec())),
        )
    }

    fn ids(path: &str) -> Option<String> {
        Some(blob_id(path.as_bytes()))
    }

    fn record(paths: &[&str]) -> Stored {
        Stored::Record(Record {
            entries: paths
                .iter()
                .map(|p| ((*p).to_owned(), ids(p).unwrap()))
                .collect(),
        })
    }

    #[test]
    fn the_inputs_of_the_steps_that_run_commands_are_covered_each_saying_why() {
        let items = setup_items(&plan(), &ids);
        let listed: Vec<(&str, &str)> = items
            .iter()
            .map(|i| (i.path.as_str(), i.why.as_str()))
            .collect();
        assert_eq!(
            listed,
            [
                (
                    "backend/pyproject.toml",
                    "environment setup `uv sync --frozen` in backend/ (uv.lock)"
                ),
                (
                    "backend/uv.lock",
                    "environment setup `uv sync --frozen` in backend/ (uv.lock)"
                ),
                (
                    "frontend/package-lock.json",
                    "environment setup `npm ci --no-audit --no-fund --prefer-offline` in frontend/ (package-lock.json)"
                ),
                (
                    "frontend/package.json",
                    "environment setup `npm ci --no-audit --no-fund --prefer-offline` in frontend/ (package-lock.json)"
                ),
            ],
            "Cargo.lock runs nothing and needs no trust"
        );
        assert_eq!(items[0].id, blob_id(b"backend/pyproject.toml"));
    }

    #[test]
    fn a_setup_runs_only_when_every_input_is_trusted_with_its_content() {
        let all = [
            "backend/pyproject.toml",
            "backend/uv.lock",
            "frontend/package-lock.json",
            "frontend/package.json",
        ];
        assert_eq!(setup_allowed(&record(&all), &plan(), &ids), Ok(()));
        let e = setup_allowed(&Stored::None, &plan(), &ids).unwrap_err();
        assert!(
            e.contains("  frontend/package-lock.json (environment setup `npm ci")
                && e.contains("not trusted yet")
                && e.contains("run `git tlv4 trust`"),
            "{e}"
        );
        let e = setup_allowed(&record(&all[..3]), &plan(), &ids).unwrap_err();
        assert_eq!(e.matches("\n  ").count(), 1, "only what is missing: {e}");
        assert!(e.contains("frontend/package.json ("), "{e}");
        // Trusted with another content: changed.
        let changed = |p: &str| Some(blob_id(format!("{p} v2").as_bytes()));
        let e = setup_allowed(&record(&all), &plan(), &changed).unwrap_err();
        assert!(e.contains("changed since you trusted it"), "{e}");
        assert!(setup_allowed(&Stored::Old, &plan(), &ids).is_err());
        // Nothing to run, nothing to trust.
        assert_eq!(setup_allowed(&Stored::None, &Plan::default(), &ids), Ok(()));
    }

    #[test]
    fn a_configured_setup_needs_the_configuration_trusted_too() {
        let commands = vec!["make deps".to_owned()];
        let configured = Plan::new(Some(&commands), plan().steps);
        let inputs = configured.inputs();
        let mut all: Vec<&str> = inputs.iter().map(String::as_str).collect();
        let e = setup_allowed(&record(&all), &configured, &ids).unwrap_err();
        assert!(
            e.contains(".tlv4.toml (sets the environment setup `make deps`): not trusted yet"),
            "{e}"
        );
        all.push(FILE);
        assert_eq!(setup_allowed(&record(&all), &configured, &ids), Ok(()));
        assert!(
            setup_allowed(&record(&all), &configured, &|p| ids(p)
                .filter(|_| p != FILE))
            .is_err()
        );
    }
}
