//! The analyst's report, `spec/discovery-context.json`, as one typed model and its one reader.
//!
//! The builtin analyst writes it (its `seed_analysis`, `tech_profile`, languages and test
//! framework are the structs below; the builtin writer reads its scan through
//! [`Codebase::read`] when the report has no code facts), but any agent may, so the writer,
//! the planner, the discuss critics and the tester all read it through [`Discovery::parse`],
//! which takes whatever shape it finds: a list may be a single value, and a list item an
//! object, read by its most telling key; the request's analysis and the tech profile may sit
//! at the top level instead of under their key; languages may be a map from name to share;
//! what is missing is left empty. Every text is read as one line. The plan's reader
//! ([`super::spec`]) reads JSON text the same way.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The keys whose string tells what an object standing in a list is, the most telling first.
const TELLING: [&str; 8] = [
    "name",
    "text",
    "question",
    "role",
    "title",
    "description",
    "path",
    "language",
];

/// The analyst's report.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// The request as the session got it (`task_text`).
    pub task_text: String,
    /// What the analyst read from the request (`seed_analysis`).
    pub seed: SeedAnalysis,
    /// What the analyst could not know.
    pub open_questions: Vec<String>,
    /// Advice for the next roles.
    pub recommendations: Vec<String>,
    /// The signals about the code base.
    pub tech_profile: TechProfile,
    /// Facts about the code (`codebase_context`), when the analyst gave them.
    pub codebase: Option<Codebase>,
}

/// What the analyst read from the request.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SeedAnalysis {
    /// Sentences that limit the solution.
    pub constraints: Vec<String>,
    /// The domain the words point to.
    pub domain: String,
    /// The angles to explore.
    pub exploration_dimensions: Vec<String>,
    /// The request as the analyst states it.
    pub problem_statement: String,
    /// Who the request is for, when it says so.
    pub target_users: Vec<String>,
}

/// Signals about the code base and the files that show them: the report's `tech_profile`,
/// and what any agent may report in its state update.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TechProfile {
    /// Signal names (`sql_detected`, `auth_detected`, …).
    pub signals: Vec<String>,
    /// For each signal, up to a few paths that show it.
    #[serde(default)]
    pub evidence: BTreeMap<String, Vec<String>>,
    /// `high`, `medium` or `low`.
    pub confidence: String,
}

/// Facts about the code base.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Codebase {
    /// Number of files.
    pub file_count: u64,
    /// Languages, in the report's order (from a map: the largest first).
    pub languages: Vec<Language>,
    /// Build manifests.
    pub manifests: Vec<Manifest>,
    /// Frameworks found anywhere.
    pub frameworks: Vec<String>,
    /// The test framework, if one was named.
    pub test_framework: Option<TestFramework>,
    /// Directories holding source code (`layout.source_dirs`).
    pub source_dirs: Vec<String>,
    /// Directories holding tests (`layout.test_dirs`).
    pub test_dirs: Vec<String>,
    /// Entry points: binaries, main modules (`layout.entry_points`).
    pub entry_points: Vec<String>,
    /// Continuous-integration files (`layout.ci`).
    pub ci: Vec<String>,
}

/// One language of the code base.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Language {
    /// Its name.
    pub name: String,
    /// Files written in it.
    pub files: u64,
    /// Their size.
    pub bytes: u64,
    /// Its share of the code, a fraction (a share above 1 is read as a percentage).
    pub share: f64,
}

/// One build manifest.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Manifest {
    /// Its path.
    pub path: String,
    /// Its kind (`cargo`, `npm`, …).
    pub kind: String,
    /// Frameworks it pulls in.
    pub frameworks: Vec<String>,
    /// Dependencies it declares.
    pub dependencies: Vec<String>,
}

/// The test framework and how to run it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TestFramework {
    /// Its name.
    pub name: String,
    /// The command that runs the tests.
    pub command: String,
    /// What showed it.
    pub evidence: String,
}

impl Discovery {
    /// Reads the report from `bytes`; the error says why it cannot be read (not JSON, or not
    /// a JSON object).
    pub fn parse(bytes: &[u8]) -> Result<Discovery, String> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        if !v.is_object() {
            return Err("it is not a JSON object".into());
        }
        // The request's analysis and the tech profile, under their key or at the top level.
        let seed = &v["seed_analysis"];
        let pick = |key: &str| {
            if seed[key].is_null() {
                &v[key]
            } else {
                &seed[key]
            }
        };
        let profile = if v["tech_profile"].is_null() {
            &v
        } else {
            &v["tech_profile"]
        };
        let evidence = profile["evidence"].as_object().into_iter().flatten();
        let confidence = text(&profile["confidence"]);
        let code = &v["codebase_context"];
        Ok(Discovery {
            task_text: text(&v["task_text"]),
            seed: SeedAnalysis {
                constraints: list(pick("constraints"), text),
                domain: text(pick("domain")),
                exploration_dimensions: list(pick("exploration_dimensions"), text),
                problem_statement: text(pick("problem_statement")),
                target_users: list(pick("target_users"), text),
            },
            open_questions: list(&v["open_questions"], text),
            recommendations: list(&v["recommendations"], text),
            tech_profile: TechProfile {
                signals: list(&profile["signals"], text),
                evidence: evidence.map(|(s, p)| (s.clone(), list(p, path))).collect(),
                confidence: if confidence.is_empty() {
                    "medium".into()
                } else {
                    confidence
                },
            },
            codebase: code.is_object().then(|| Codebase::read(code)),
        })
    }

    /// The problem statement, else the request.
    pub fn problem(&self) -> &str {
        match self.seed.problem_statement.as_str() {
            "" => &self.task_text,
            problem => problem,
        }
    }

    /// The test framework the analyst named, if any.
    pub fn test_framework(&self) -> Option<&TestFramework> {
        self.codebase.as_ref()?.test_framework.as_ref()
    }
}

impl Codebase {
    /// Reads `codebase_context` from its value, whatever its shape.
    pub fn read(v: &Value) -> Codebase {
        let manifests = items(&v["manifests"]).map(|m| Manifest {
            path: path(&m["path"]),
            kind: text(&m["kind"]),
            frameworks: list(&m["frameworks"], text),
            dependencies: list(&m["dependencies"], text),
        });
        // The framework's name, or the framework as a name alone.
        let t = &v["test_framework"];
        let test_framework = TestFramework {
            name: text(if t.is_string() { t } else { &t["name"] }),
            command: text(&t["command"]),
            evidence: list(&t["evidence"], path).join(", "),
        };
        let layout = &v["layout"];
        Codebase {
            file_count: v["file_count"].as_u64().unwrap_or(0),
            languages: languages(&v["languages"]),
            manifests: manifests.filter(|m| !m.path.is_empty()).collect(),
            frameworks: list(&v["frameworks"], text),
            test_framework: (!test_framework.name.is_empty() || !test_framework.command.is_empty())
                .then_some(test_framework),
            source_dirs: list(&layout["source_dirs"], path),
            test_dirs: list(&layout["test_dirs"], path),
            entry_points: list(&layout["entry_points"], path),
            ci: list(&layout["ci"], path),
        }
    }
}

/// Languages from a list of names or of objects (`{name, files, bytes, share}`), or from a map
/// from name to a share or to such an object, ranked by share, bytes or files.
fn languages(v: &Value) -> Vec<Language> {
    let language = |name: String, x: &Value| {
        let share = x.as_f64().or(x["share"].as_f64()).unwrap_or(0.0);
        Language {
            name,
            files: x["files"].as_u64().unwrap_or(0),
            bytes: x["bytes"].as_u64().unwrap_or(0),
            share: if share > 1.0 { share / 100.0 } else { share },
        }
    };
    let mut out: Vec<Language> = match v {
        Value::Object(map) => {
            let rank = |x: &Value| {
                [x, &x["share"], &x["bytes"], &x["files"]]
                    .iter()
                    .find_map(|x| x.as_f64())
                    .unwrap_or(0.0)
            };
            let mut ranked: Vec<(&String, &Value)> = map.iter().collect();
            ranked.sort_by(|a, b| rank(b.1).total_cmp(&rank(a.1)).then(a.0.cmp(b.0)));
            ranked
                .into_iter()
                .map(|(name, x)| language(name.clone(), x))
                .collect()
        }
        other => items(other).map(|x| language(text(x), x)).collect(),
    };
    out.retain(|l| !l.name.is_empty());
    out
}

/// The items of a list, or a single value as one item.
fn items(v: &Value) -> impl Iterator<Item = &Value> {
    match v {
        Value::Array(items) => items.as_slice(),
        Value::Null => &[],
        other => std::slice::from_ref(other),
    }
    .iter()
}

/// A value as one line of text: a string as it is, a number or boolean printed, an object by
/// its most telling key.
pub(super) fn text(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.as_str(),
        Value::Number(n) => return n.to_string(),
        Value::Bool(b) => return b.to_string(),
        Value::Object(map) => TELLING
            .iter()
            .find_map(|k| map.get(*k)?.as_str())
            .unwrap_or_default(),
        _ => "",
    };
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A path as [`text`], an object by its `path` first.
pub(super) fn path(v: &Value) -> String {
    text(v.get("path").unwrap_or(v))
}

/// A value as a list (see [`items`]) of texts read by `each`, without empty ones.
pub(super) fn list(v: &Value, each: fn(&Value) -> String) -> Vec<String> {
    items(v).map(each).filter(|s| !s.is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: serde_json::Value) -> Discovery {
        Discovery::parse(json.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn the_analysts_report_reads_as_written() {
        let d = parse(serde_json::json!({
            "task_text": "Add login",
            "seed_analysis": {
                "problem_statement": "Users cannot\n  sign in.",
                "target_users": ["Developer"],
                "domain": "web",
                "constraints": ["Keep the CLI stable"],
                "exploration_dimensions": ["security"]
            },
            "codebase_context": {
                "file_count": 6,
                "languages": [{"name": "Rust", "files": 4, "bytes": 900, "share": 0.9}],
                "manifests": [{"path": "Cargo.toml", "kind": "cargo", "frameworks": ["clap"],
                               "dependencies": ["clap", "serde"]}, {"kind": "npm"}],
                "frameworks": ["clap"],
                "test_framework": {"name": "cargo test", "command": "cargo test",
                                   "evidence": ["Cargo.toml", "tests/"]},
                "layout": {"source_dirs": ["src"], "test_dirs": ["tests"],
                           "entry_points": ["src/main.rs"], "ci": []}
            },
            "tech_profile": {"signals": ["auth_detected"],
                             "evidence": {"auth_detected": "src/auth.rs"}, "confidence": "high"},
            "open_questions": ["Which providers?"],
            "recommendations": ["Reuse the auth module"]
        }));
        assert_eq!(d.seed.problem_statement, "Users cannot sign in.");
        assert_eq!(d.problem(), "Users cannot sign in.");
        assert_eq!(d.seed.target_users, ["Developer"]);
        assert_eq!(d.seed.domain, "web");
        assert_eq!(d.seed.exploration_dimensions, ["security"]);
        assert_eq!(d.open_questions, ["Which providers?"]);
        assert_eq!(d.tech_profile.evidence["auth_detected"], ["src/auth.rs"]);
        assert_eq!(d.tech_profile.confidence, "high");
        let c = d.codebase.as_ref().unwrap();
        assert_eq!((c.file_count, c.languages[0].files), (6, 4));
        assert_eq!((c.languages[0].share, c.languages[0].bytes), (0.9, 900));
        assert_eq!(
            c.manifests.len(),
            1,
            "a manifest without a path is left out"
        );
        assert_eq!(c.manifests[0].dependencies, ["clap", "serde"]);
        let t = d.test_framework().unwrap();
        assert_eq!(t.evidence, "Cargo.toml, tests/");
        assert_eq!(
            (c.source_dirs.as_slice(), c.entry_points.as_slice()),
            (&["src".to_owned()][..], &["src/main.rs".to_owned()][..])
        );
    }

    #[test]
    fn other_shapes_are_read_too() {
        // The request's analysis and the signals at the top level, lists as single values or
        // objects, languages as a map, a framework by name alone.
        let d = parse(serde_json::json!({
            "task_text": "Add login",
            "target_users": "admins",
            "constraints": [{"text": "No new services"}, 42, ""],
            "open_questions": [{"question": "Which providers?", "path": "x"}],
            "signals": ["sql_detected"],
            "codebase_context": {
                "languages": {"Go": {"bytes": 10}, "Rust": {"bytes": 90}, "C": 0.5},
                "test_framework": "pytest",
                "layout": {"source_dirs": [{"description": "the code", "path": "src"}],
                           "test_dirs": "tests"}
            }
        }));
        assert_eq!(
            d.problem(),
            "Add login",
            "no problem statement: the request"
        );
        assert_eq!(d.seed.target_users, ["admins"]);
        assert_eq!(d.seed.constraints, ["No new services", "42"]);
        assert_eq!(d.open_questions, ["Which providers?"]);
        assert_eq!(d.tech_profile.signals, ["sql_detected"]);
        assert_eq!(d.tech_profile.confidence, "medium");
        let c = d.codebase.as_ref().unwrap();
        let names: Vec<&str> = c.languages.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["Rust", "Go", "C"]);
        assert_eq!(c.languages[2].share, 0.5);
        assert_eq!(
            (c.source_dirs[0].as_str(), c.test_dirs[0].as_str()),
            ("src", "tests")
        );
        let t = d.test_framework().unwrap();
        assert_eq!((t.name.as_str(), t.command.as_str()), ("pytest", ""));

        // Languages as names; a framework known by its command alone.
        let d = parse(serde_json::json!({"codebase_context": {
            "languages": ["Rust", {"language": "Python"}],
            "test_framework": {"command": " cargo test "}
        }}));
        let c = d.codebase.as_ref().unwrap();
        assert_eq!(c.languages[1].name, "Python");
        assert_eq!(d.test_framework().unwrap().command, "cargo test");
        assert!(
            parse(serde_json::json!({"codebase_context": null}))
                .codebase
                .is_none()
        );
    }

    #[test]
    fn what_does_not_parse_says_why() {
        assert!(Discovery::parse(b"{ not json").is_err());
        assert_eq!(
            Discovery::parse(b"[1]").unwrap_err(),
            "it is not a JSON object"
        );
    }
}
