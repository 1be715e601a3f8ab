//! Reading the task text: which pipeline fits, and how complex the work looks.
//!
//! Text level only, as the reference coordinator does: keywords choose the pipeline, and the
//! complexity score adds +1 per capability, +2 when the text spans domains, +1 per parallel
//! track, and +1 when the capabilities form a serial chain deeper than 3 tiers.

use tlv4_core::model::{Analysis, Role};

/// Keywords that point at each pipeline family.
const SPEC: &[&str] = &[
    "spec",
    "specification",
    "design",
    "document",
    "documentation",
    "requirements",
    "prd",
];
const IMPL: &[&str] = &["implement", "build", "fix", "code"];
const FULL: &[&str] = &["full", "lifecycle", "end-to-end", "e2e"];
const FRONTEND: &[&str] = &[
    "frontend",
    "front-end",
    "ui",
    "react",
    "vue",
    "svelte",
    "component",
    "page",
    "css",
    "html",
    "tailwind",
];
const BACKEND: &[&str] = &["api", "database", "server", "backend", "endpoint"];

/// Capability keywords (each the role that has the capability), with the tier each
/// capability sits at.
const CAPABILITIES: &[(Role, u32, &[&str])] = &[
    (Role::Analyst, 0, &["investigate", "explore", "research"]),
    (Role::Planner, 0, &["design", "architect", "plan"]),
    (Role::Writer, 1, &["write", "draft", "document"]),
    (Role::Executor, 2, &["implement", "build", "code", "fix"]),
    (Role::Tester, 3, &["test", "verify", "validate"]),
    (Role::Reviewer, 3, &["analyze", "review", "audit"]),
];

/// Domains; a text touching two or more is cross-domain, and each extra one is a track.
const DOMAINS: &[(&str, &[&str])] = &[
    ("frontend", FRONTEND),
    ("backend", BACKEND),
    ("data", &["data", "etl", "migration", "sql", "schema"]),
    (
        "infrastructure",
        &[
            "deploy",
            "deployment",
            "ci",
            "docker",
            "kubernetes",
            "infra",
            "devops",
        ],
    ),
    ("ml", &["ml", "model", "training", "inference"]),
    (
        "security",
        &[
            "security",
            "auth",
            "oauth",
            "login",
            "encryption",
            "permission",
        ],
    ),
];

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// A word of the text matches a keyword exactly, or as its plural or `-ing`/`-ed` form.
fn has(words: &[String], keywords: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for k in keywords {
        let hit = words.iter().any(|w| {
            w == k
                || w.strip_suffix('s') == Some(k)
                || w.strip_suffix("ing") == Some(k)
                || w.strip_suffix("ed") == Some(k)
        });
        if hit {
            found.push((*k).to_owned());
        }
    }
    found
}

/// The pipeline for `text` and why. `fallback` is used when no keyword decides.
pub fn select_pipeline(text: &str, fallback: &str) -> (String, String) {
    let w = words(text);
    let (spec, imp, full, fe, be) = (
        has(&w, SPEC),
        has(&w, IMPL),
        has(&w, FULL),
        has(&w, FRONTEND),
        has(&w, BACKEND),
    );
    let list = |v: &[String]| v.join(", ");
    let lifecycle = !full.is_empty() || (!spec.is_empty() && !imp.is_empty());
    if lifecycle {
        let why = if full.is_empty() {
            format!(
                "spec keywords ({}) and implementation keywords ({})",
                list(&spec),
                list(&imp)
            )
        } else {
            format!("lifecycle keywords ({})", list(&full))
        };
        if !fe.is_empty() {
            return (
                "full-lifecycle-fe".into(),
                format!("{why}, with frontend keywords ({})", list(&fe)),
            );
        }
        return ("full-lifecycle".into(), why);
    }
    if !fe.is_empty() {
        if !be.is_empty() {
            return (
                "fullstack".into(),
                format!(
                    "frontend keywords ({}) and backend keywords ({})",
                    list(&fe),
                    list(&be)
                ),
            );
        }
        return (
            "fe-only".into(),
            format!("frontend keywords ({})", list(&fe)),
        );
    }
    if !spec.is_empty() {
        return (
            "spec-only".into(),
            format!("spec keywords ({})", list(&spec)),
        );
    }
    if !imp.is_empty() {
        return (
            "impl-only".into(),
            format!("implementation keywords ({})", list(&imp)),
        );
    }
    (
        fallback.to_owned(),
        format!(
            "no pipeline keyword in the task text; the default `{fallback}` (session.pipeline)"
        ),
    )
}

/// Capabilities and the complexity score of `text`.
pub fn analyze(text: &str, pipeline_reason: String) -> Analysis {
    let w = words(text);
    let mut capabilities = Vec::new();
    let mut tiers = std::collections::BTreeSet::new();
    let mut reasons = Vec::new();
    for (name, tier, keys) in CAPABILITIES {
        let hit = has(&w, keys);
        if !hit.is_empty() {
            capabilities.push(name.to_string());
            tiers.insert(*tier);
            reasons.push(format!("+1 capability {name} ({})", hit.join(", ")));
        }
    }
    let mut score = capabilities.len() as u32;
    let domains: Vec<&str> = DOMAINS
        .iter()
        .filter(|(_, k)| !has(&w, k).is_empty())
        .map(|(d, _)| *d)
        .collect();
    if domains.len() >= 2 {
        score += 2;
        reasons.push(format!("+2 cross-domain ({})", domains.join(", ")));
        let tracks = domains.len() as u32 - 1;
        score += tracks;
        reasons.push(format!(
            "+{tracks} parallel track{}",
            if tracks == 1 { "" } else { "s" }
        ));
    }
    if tiers.len() > 3 {
        score += 1;
        reasons.push(format!("+1 serial depth {} > 3", tiers.len()));
    }
    if score == 0 {
        score = 1;
        reasons.push("1 at least: no capability keyword".into());
    }
    let level = match score {
        0..=3 => "Low",
        4..=6 => "Medium",
        _ => "High",
    };
    Analysis {
        pipeline_reason,
        capabilities,
        score,
        level: level.into(),
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelines_from_keywords() {
        let pick = |t: &str| select_pipeline(t, "full-lifecycle").0;
        assert_eq!(
            pick("Write the requirements document for billing"),
            "spec-only"
        );
        assert_eq!(pick("Fix the crash in the parser"), "impl-only");
        assert_eq!(pick("Design and implement rate limiting"), "full-lifecycle");
        assert_eq!(pick("Full lifecycle: search for notes"), "full-lifecycle");
        assert_eq!(pick("Build a React settings page"), "fe-only");
        assert_eq!(
            pick("Add a React page backed by a new API endpoint"),
            "fullstack"
        );
        assert_eq!(
            pick("Design and build the React dashboard"),
            "full-lifecycle-fe"
        );
        let (p, why) = select_pipeline("Make it nicer", "spec-only");
        assert_eq!(p, "spec-only");
        assert!(why.contains("no pipeline keyword"));
    }

    #[test]
    fn complexity_levels() {
        let low = analyze("Fix the parser", String::new());
        assert_eq!((low.score, low.level.as_str()), (1, "Low"));
        let mid = analyze(
            "Research, design and implement OAuth login for the API, then test it",
            String::new(),
        );
        // analyst, planner, executor, tester = 4; security + backend = +2 cross-domain, +1 track; tiers 0,2,3
        assert_eq!(mid.score, 7, "{:?}", mid.reasons);
        assert_eq!(mid.level, "High");
        let medium = analyze("Implement and test the export", String::new());
        assert_eq!((medium.score, medium.level.as_str()), (2, "Low"));
        let deep = analyze(
            "Research, write, build and review the feature",
            String::new(),
        );
        assert_eq!(deep.score, 5, "{:?}", deep.reasons);
        assert_eq!(deep.level, "Medium");
    }
}
