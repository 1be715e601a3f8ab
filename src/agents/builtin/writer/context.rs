//! What the writer knows about the repository and the request: the analyst's
//! `spec/discovery-context.json`, read leniently, and, when it has no code facts, a few facts
//! taken from the code tree's paths.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::text::{self, WORDS, has};
use crate::agents::CodeFile;
use crate::specdoc::md;

/// Whether the discovery context could be used.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Availability {
    /// Read and parsed.
    Present,
    /// Not in the pipeline folder.
    #[default]
    Missing,
    /// There, but not JSON; the reason says why.
    Unreadable(String),
}

/// The analyst's findings, with empty values for whatever it did not say.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// Whether the file was there.
    pub availability: Availability,
    /// `seed_analysis.problem_statement`.
    pub problem_statement: String,
    /// `seed_analysis.target_users`.
    pub target_users: Vec<String>,
    /// `seed_analysis.domain`.
    pub domain: String,
    /// `seed_analysis.constraints`.
    pub constraints: Vec<String>,
    /// `open_questions`.
    pub open_questions: Vec<String>,
    /// `recommendations`.
    pub recommendations: Vec<String>,
    /// `tech_profile.signals`.
    pub signals: Vec<String>,
    /// `tech_profile.evidence`.
    pub evidence: BTreeMap<String, Vec<String>>,
    /// Facts about the code: from `codebase_context`, else from the code tree's paths.
    pub code: CodeFacts,
}

/// Facts about the code base.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CodeFacts {
    /// Where the facts come from, for the documents (`the discovery context`, …).
    pub source: String,
    /// Languages, largest first.
    pub languages: Vec<Language>,
    /// Build manifests.
    pub manifests: Vec<Manifest>,
    /// Frameworks found anywhere.
    pub frameworks: Vec<String>,
    /// The test framework, if one was found.
    pub test_framework: Option<TestFramework>,
    /// Directories holding source code.
    pub source_dirs: Vec<String>,
    /// Directories holding tests.
    pub test_dirs: Vec<String>,
    /// Entry points (binaries, main modules).
    pub entry_points: Vec<String>,
    /// Continuous-integration files.
    pub ci: Vec<String>,
    /// Number of files.
    pub file_count: u64,
}

/// One language of the code base.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Language {
    /// Its name.
    pub name: String,
    /// Files written in it.
    pub files: u64,
    /// Its share of the code, in percent.
    pub share: f64,
}

/// One build manifest.
#[derive(Debug, Clone, Default, serde::Serialize)]
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
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct TestFramework {
    /// Its name.
    pub name: String,
    /// The command that runs the tests.
    pub command: String,
    /// What showed it.
    pub evidence: String,
}

impl CodeFacts {
    /// Whether anything is known about the code.
    pub fn is_empty(&self) -> bool {
        self.file_count == 0 && self.languages.is_empty() && self.manifests.is_empty()
    }

    /// The main language, if known.
    pub fn primary_language(&self) -> Option<&str> {
        self.languages.first().map(|l| l.name.as_str())
    }

    /// The main language and frameworks, as a short phrase (`Rust (clap, serde)`).
    pub fn stack_phrase(&self) -> Option<String> {
        let lang = self.primary_language()?;
        Some(if self.frameworks.is_empty() {
            lang.to_owned()
        } else {
            let shown: Vec<String> = self.frameworks.iter().take(3).cloned().collect();
            format!("{lang} ({})", shown.join(", "))
        })
    }

    /// Every declared dependency, with the manifest declaring it, in manifest order.
    pub fn dependencies(&self) -> Vec<Library> {
        let mut out: Vec<Library> = Vec::new();
        for m in &self.manifests {
            for d in &m.dependencies {
                if !out.iter().any(|l| l.name == *d) {
                    out.push(Library {
                        name: d.clone(),
                        manifest: m.path.clone(),
                    });
                }
            }
        }
        out
    }

    /// The facts as the templates see them.
    pub fn view(&self) -> CodeView<'_> {
        let mut libraries = self.dependencies();
        let mut framework_manifests = BTreeMap::new();
        for m in &self.manifests {
            for f in &m.frameworks {
                framework_manifests
                    .entry(f.as_str())
                    .or_insert(m.path.as_str());
            }
        }
        CodeView {
            facts: self,
            lang: self.primary_language(),
            share: self.languages.first().map_or(0.0, |l| l.share),
            stack: self.stack_phrase(),
            test_command: self.test_command(),
            empty: self.is_empty(),
            more_libraries: libraries.len().saturating_sub(10),
            libraries: {
                libraries.truncate(10);
                libraries
            },
            framework_manifests,
        }
    }

    /// The command that runs the tests, if known.
    pub fn test_command(&self) -> Option<&str> {
        let command = self.test_framework.as_ref().map(|t| t.command.as_str());
        command.filter(|c| !c.is_empty())
    }
}

/// [`CodeFacts`] as the templates see them, with what follows from them: the main language
/// and its share, the stack phrase, the test command, the first ten declared libraries and
/// the manifest that pulls in each framework.
#[derive(Serialize)]
pub struct CodeView<'a> {
    #[serde(flatten)]
    facts: &'a CodeFacts,
    lang: Option<&'a str>,
    share: f64,
    stack: Option<String>,
    test_command: Option<&'a str>,
    empty: bool,
    libraries: Vec<Library>,
    more_libraries: usize,
    framework_manifests: BTreeMap<&'a str, &'a str>,
}

/// A declared library and the manifest that declares it.
#[derive(Debug, Clone, Serialize)]
pub struct Library {
    /// Its name.
    pub name: String,
    /// The manifest's path.
    pub manifest: String,
}

impl Discovery {
    /// Reads the discovery context from `text` (`None` when the file is missing), falling
    /// back to the code tree's paths for code facts.
    pub fn read(text: Option<&str>, files: &[CodeFile]) -> Discovery {
        let mut d = Discovery::default();
        let mut code = None;
        if let Some(text) = text {
            match serde_json::from_str::<Value>(text) {
                Ok(v) if v.is_object() => {
                    d.availability = Availability::Present;
                    // What the analyst read from the request is the user's text: it goes
                    // into the documents as Markdown source that reads as itself.
                    let seed = &v["seed_analysis"];
                    let texts = |v: &Value| strings(v).iter().map(|s| md::inline(s)).collect();
                    d.problem_statement = md::inline(&string(&seed["problem_statement"]));
                    d.target_users = texts(&seed["target_users"]);
                    d.domain = md::inline(&string(&seed["domain"]));
                    d.constraints = texts(&seed["constraints"]);
                    // The analyst's own questions and advice are Markdown already.
                    d.open_questions = strings(&v["open_questions"]);
                    d.recommendations = strings(&v["recommendations"]);
                    let profile = &v["tech_profile"];
                    d.signals = strings(&profile["signals"]);
                    if let Some(map) = profile["evidence"].as_object() {
                        for (k, v) in map {
                            d.evidence.insert(k.clone(), strings(v));
                        }
                    }
                    code = code_facts(&v["codebase_context"]);
                }
                Ok(_) => {
                    d.availability = Availability::Unreadable("it is not a JSON object".into())
                }
                Err(e) => d.availability = Availability::Unreadable(e.to_string()),
            }
        }
        d.code = code.unwrap_or_else(|| from_paths(files));
        d
    }

    /// Whether the analyst reported `signal`.
    pub fn has_signal(&self, signal: &str) -> bool {
        self.signals.iter().any(|s| s == signal)
    }

    /// The evidence paths of `signal`, formatted as inline code, at most three.
    pub fn evidence_of(&self, signal: &str) -> String {
        let paths: Vec<String> = self
            .evidence
            .get(signal)
            .map(|p| p.iter().take(3).map(|p| format!("`{p}`")).collect())
            .unwrap_or_default();
        if paths.is_empty() {
            "reported by the analyst".to_owned()
        } else {
            paths.join(", ")
        }
    }
}

/// A JSON value as one line of text: strings as they are, objects by their most telling
/// field, numbers and booleans printed.
fn string(v: &Value) -> String {
    match v {
        Value::String(s) => text::one_line(s),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Object(map) => WORDS
            .telling_fields
            .iter()
            .find_map(|key| map.get(key).and_then(Value::as_str))
            .map(text::one_line)
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// A JSON value as a list of text: arrays item by item, a single value as one item.
fn strings(v: &Value) -> Vec<String> {
    let items: Vec<String> = match v {
        Value::Array(items) => items.iter().map(string).collect(),
        Value::Null => Vec::new(),
        other => vec![string(other)],
    };
    items.into_iter().filter(|s| !s.is_empty()).collect()
}

fn code_facts(v: &Value) -> Option<CodeFacts> {
    if !v.is_object() {
        return None;
    }
    let mut languages: Vec<Language> = (v["languages"].as_array().into_iter().flatten())
        .filter_map(|l| {
            let name = string(&l["name"]);
            let share = l["share"].as_f64().unwrap_or(0.0);
            (!name.is_empty()).then(|| Language {
                name,
                files: l["files"].as_u64().unwrap_or(0),
                share: if share <= 1.0 { share * 100.0 } else { share },
            })
        })
        .collect();
    sort(&mut languages);
    let manifests = (v["manifests"].as_array().into_iter().flatten())
        .filter_map(|m| {
            let path = string(&m["path"]);
            (!path.is_empty()).then(|| Manifest {
                path,
                kind: string(&m["kind"]),
                frameworks: strings(&m["frameworks"]),
                dependencies: strings(&m["dependencies"]),
            })
        })
        .collect();
    let test_framework = match &v["test_framework"] {
        Value::Object(_) => {
            let t = &v["test_framework"];
            let name = string(&t["name"]);
            (!name.is_empty()).then(|| TestFramework {
                command: string(&t["command"]),
                evidence: strings(&t["evidence"]).join(", "),
                name,
            })
        }
        Value::String(name) if !name.is_empty() => Some(TestFramework {
            name: name.clone(),
            ..TestFramework::default()
        }),
        _ => None,
    };
    let layout = &v["layout"];
    Some(CodeFacts {
        source: "the discovery context".into(),
        languages,
        manifests,
        frameworks: strings(&v["frameworks"]),
        test_framework,
        source_dirs: strings(&layout["source_dirs"]),
        test_dirs: strings(&layout["test_dirs"]),
        entry_points: strings(&layout["entry_points"]),
        ci: strings(&layout["ci"]),
        file_count: v["file_count"].as_u64().unwrap_or(0),
    })
}

/// Sorts languages largest first, then by name.
fn sort(languages: &mut [Language]) {
    languages.sort_by(|a, b| {
        b.share
            .partial_cmp(&a.share)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.name.cmp(&b.name))
    });
}

/// Code facts from paths alone, for when the analyst gave none: languages, tests and entry
/// points by the builtin agent's one rule (`builtin::code`).
fn from_paths(files: &[CodeFile]) -> CodeFacts {
    use crate::agents::builtin::code;
    let mut bytes: BTreeMap<&String, (u64, u64)> = BTreeMap::new();
    let mut top: Vec<String> = Vec::new();
    let mut manifests = Vec::new();
    let mut ci = Vec::new();
    for f in files {
        if let Some((dir, _)) = f.path.split_once('/')
            && !top.iter().any(|t| t == dir)
        {
            top.push(dir.to_owned());
        }
        let name = code::file_name(&f.path);
        if let Some(kind) = WORDS.manifests.get(name)
            && f.path.matches('/').count() <= 1
        {
            manifests.push(Manifest {
                path: f.path.clone(),
                kind: kind.clone(),
                ..Manifest::default()
            });
        }
        if f.path.starts_with(".github/workflows/") || f.path == ".gitlab-ci.yml" {
            ci.push(f.path.clone());
        }
        if let Some(lang) = code::language(&f.path) {
            let entry = bytes.entry(&lang.name).or_default();
            entry.0 += 1;
            entry.1 += f.size;
        }
    }
    top.sort();
    let total: u64 = bytes.values().map(|(_, b)| b).sum();
    let mut languages: Vec<Language> = bytes
        .into_iter()
        .map(|(name, (files, b))| Language {
            name: name.clone(),
            files,
            share: if total == 0 {
                0.0
            } else {
                b as f64 * 100.0 / total as f64
            },
        })
        .collect();
    sort(&mut languages);
    let test_framework = manifests.iter().find_map(|m| {
        let [name, command] = WORDS.test_runners.get(&m.kind)?;
        Some(TestFramework {
            name: name.clone(),
            command: command.clone(),
            evidence: m.path.clone(),
        })
    });
    let entry_points = files
        .iter()
        .map(|f| f.path.as_str())
        .filter(|p| code::is_entry_point(p, &[""]))
        .map(str::to_owned)
        .collect();
    CodeFacts {
        source: "the file names of the code tree (no discovery context)".into(),
        languages,
        manifests,
        frameworks: Vec::new(),
        test_framework,
        source_dirs: top
            .iter()
            .filter(|d| has(&WORDS.source_dirs, d))
            .cloned()
            .collect(),
        test_dirs: top
            .iter()
            .filter(|d| code::is_test_dir(d))
            .cloned()
            .collect(),
        entry_points,
        ci,
        file_count: files.len() as u64,
    }
}

/// The existing directory whose files best match `key_words` by name, with the number of
/// matching words. Tests, vendored and hidden paths are skipped; ties go to the first path in
/// order.
pub fn matching_module(files: &[CodeFile], key_words: &[String]) -> Option<(String, usize)> {
    use crate::agents::builtin::code;
    if key_words.is_empty() {
        return None;
    }
    let mut scores: BTreeMap<String, usize> = BTreeMap::new();
    for f in files {
        let hidden = f.path.split('/').any(|s| s.starts_with('.') && s.len() > 1);
        if hidden || code::is_vendored(&f.path) || code::is_test_path(&f.path) {
            continue;
        }
        let name_words = text::key_words(&f.path.replace(['/', '.', '_', '-'], " "));
        let hits = key_words.iter().filter(|k| name_words.contains(k)).count();
        if hits == 0 {
            continue;
        }
        let dir = match f.path.rsplit_once('/') {
            Some((dir, _)) => format!("{dir}/"),
            None => f.path.clone(),
        };
        let score = scores.entry(dir).or_default();
        *score = (*score).max(hits);
    }
    let best = scores.values().copied().max()?;
    scores.into_iter().find(|(_, s)| *s == best)
}
