//! Manifests: the files where a project declares its dependencies, read without running any
//! package manager.
//!
//! Which files are manifests, and where a TOML or JSON one declares its dependencies, is
//! data (`analyst-manifests.toml`), read by one routine; the text formats (requirements
//! files, `setup.py`, `go.mod`, `pom.xml`, Gradle, Gemfile) each have their own. Each reading
//! is forgiving: a manifest that does not parse still counts as a manifest (it shows the
//! ecosystem) but declares nothing. Dependency names are kept as written; matching against
//! rule tables goes through [`dep_matches`], which normalises case and `_`/`-`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use serde::Deserialize;
use serde_json::Value;

/// One kind of manifest of `analyst-manifests.toml`; see the file for the fields.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Kind {
    pub kind: String,
    /// `rust`, `node`, `python`, `go`, `java`, `ruby` or `php`.
    pub ecosystem: String,
    files: Vec<String>,
    keys: Vec<String>,
    lists: Vec<String>,
    skip: Vec<String>,
    /// For the kinds read as text: words that start a line declaring a dependency.
    lines: Vec<String>,
    /// Where the manifest names the files the program starts at.
    entries: Vec<String>,
}

/// A row of `analyst-dependencies.toml`: a dependency pattern (see [`dep_matches`]) and what
/// it shows.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Dep {
    pub dep: String,
    /// The framework, or the runner, it shows.
    pub name: String,
    /// The framework's category: `frontend`, `backend`, `cli` or `other`.
    pub category: String,
    /// The convention, or the outside system, it shows.
    pub what: String,
    /// The test runner's command.
    pub command: String,
}

/// The tables of `analyst-dependencies.toml`.
#[derive(Debug, Deserialize)]
pub(crate) struct Deps {
    pub frameworks: Vec<Dep>,
    pub conventions: Vec<Dep>,
    pub integrations: Vec<Dep>,
    pub test_runners: Vec<Dep>,
}

/// What dependencies show, read once.
pub(crate) static DEPS: LazyLock<Deps> =
    LazyLock::new(|| super::data(builtin!("analyst-dependencies.toml")));

/// The manifest kinds, read once.
pub(crate) static KINDS: LazyLock<Vec<Kind>> =
    LazyLock::new(|| super::list(builtin!("analyst-manifests.toml")));

/// A manifest and what it declares.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub(crate) struct Manifest {
    /// Dependency names as written, sorted and unique (runtime, dev and build together).
    pub dependencies: Vec<String>,
    /// Frameworks recognised from the dependencies, in table order.
    pub frameworks: Vec<String>,
    /// `cargo`, `npm`, `pyproject`, `requirements`, `setup.py`, `pipfile`, `go`, `maven`,
    /// `gradle`, `bundler` or `composer`.
    pub kind: &'static str,
    /// Path relative to the repository root.
    pub path: String,
    /// The ecosystem.
    #[serde(skip)]
    pub ecosystem: &'static str,
    /// `package.json` scripts.
    #[serde(skip)]
    pub scripts: BTreeMap<String, String>,
    /// Entry files the manifest names (`main`, `bin`, `[[bin]] path`), relative to the root.
    #[serde(skip)]
    pub entry_files: Vec<String>,
    /// Whether the manifest configures pytest (`[tool.pytest.ini_options]`).
    #[serde(skip)]
    pub pytest_config: bool,
}

impl Manifest {
    /// Whether any dependency matches `pattern`.
    pub(crate) fn declares(&self, pattern: &str) -> bool {
        self.dependencies.iter().any(|d| dep_matches(pattern, d))
    }
}

/// Whether `path` names a manifest, and which kind.
pub(crate) fn kind_of(path: &str) -> Option<&'static Kind> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let requirements = name.ends_with(".txt")
        && (name.starts_with("requirements")
            || path.rsplit('/').nth(1).is_some_and(|d| d == "requirements"));
    let kind = if requirements { "requirements" } else { "" };
    KINDS
        .iter()
        .find(|k| k.kind == kind || k.files.iter().any(|f| f == name))
}

/// Parses the manifest at `path` (whose kind [`kind_of`] recognised) from its text.
pub(crate) fn parse(path: &str, text: &str) -> Option<Manifest> {
    let kind = kind_of(path)?;
    let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
    let mut m = Manifest {
        kind: &kind.kind,
        path: path.to_owned(),
        ecosystem: &kind.ecosystem,
        ..Manifest::default()
    };
    let mut deps = BTreeSet::new();
    match m.kind {
        "requirements" => deps.extend(text.lines().filter_map(requirement)),
        "setup.py" => setup_py(text, &mut deps),
        "go" => go_mod(text, &mut deps),
        "maven" => maven(text, &mut deps),
        "gradle" | "bundler" => declarations(kind, text, &mut deps),
        _ => {
            let parsed = if path.ends_with(".json") {
                serde_json::from_str::<Value>(text).ok()
            } else {
                toml::from_str::<Value>(text).ok()
            };
            if let Some(v) = parsed {
                structured(kind, &v, dir, &mut deps, &mut m);
            }
        }
    }
    m.dependencies = deps.into_iter().collect();
    let frameworks = DEPS.frameworks.iter().filter(|f| m.declares(&f.dep));
    m.frameworks = super::unique(frameworks.map(|f| f.name.clone()));
    Some(m)
}

/// Whether dependency `dep` matches `pattern`: equal, or starting with the pattern's text
/// when it ends in `*`. Both sides compare lower-case with `_` read as `-`; a Maven or Gradle
/// `group:artifact` also matches on its artifact alone.
pub(crate) fn dep_matches(pattern: &str, dep: &str) -> bool {
    let dep = dep.to_ascii_lowercase().replace('_', "-");
    let artifact = dep.rsplit(':').next().unwrap_or(&dep);
    let test = |name: &str| match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    };
    test(&dep) || (artifact != dep && test(artifact))
}

/// The category of the framework `name`, or `""`.
pub(crate) fn category(name: &str) -> &'static str {
    let framework = DEPS.frameworks.iter().find(|f| f.name == name);
    framework.map_or("", |f| f.category.as_str())
}

/// The values at `path` in `root`: keys separated by dots, `*` for every value of a table.
fn at<'v>(root: &'v Value, path: &str) -> Vec<&'v Value> {
    path.split('.').fold(vec![root], |nodes, key| {
        let nodes = nodes.into_iter();
        match key {
            "*" => nodes
                .filter_map(Value::as_object)
                .flat_map(|o| o.values())
                .collect(),
            _ => nodes.filter_map(|n| n.get(key)).collect(),
        }
    })
}

/// Reads a TOML or JSON manifest: its dependencies by the paths of its kind, its scripts,
/// entry files and pytest configuration where it has them.
fn structured(kind: &Kind, v: &Value, dir: &str, deps: &mut BTreeSet<String>, m: &mut Manifest) {
    for table in kind.keys.iter().flat_map(|p| at(v, p)) {
        for (key, value) in table.as_object().into_iter().flatten() {
            if !kind.skip.iter().any(|s| dep_matches(s, key)) {
                let name = value.get("package").and_then(Value::as_str);
                deps.insert(name.unwrap_or(key).to_owned());
            }
        }
    }
    let lists = kind.lists.iter().flat_map(|p| at(v, p));
    for item in lists.filter_map(Value::as_array).flatten() {
        deps.extend(item.as_str().and_then(pep508_name));
    }
    // Only `package.json` scripts are read, and they are strings.
    m.scripts = serde_json::from_value(v["scripts"].clone()).unwrap_or_default();
    m.pytest_config = !at(v, "tool.pytest").is_empty();
    let entries = kind.entries.iter().flat_map(|p| at(v, p));
    for p in entries.filter_map(Value::as_str) {
        m.entry_files
            .push(format!("{dir}{}", p.trim_start_matches("./")));
    }
    // A Cargo `[[bin]]` starts at its `path`, or else at `src/bin/<name>.rs`.
    for bin in v["bin"].as_array().into_iter().flatten() {
        let path = bin.get("path").and_then(Value::as_str).map(str::to_owned);
        let named = bin.get("name").and_then(Value::as_str);
        if let Some(p) = path.or_else(|| named.map(|n| format!("src/bin/{n}.rs"))) {
            m.entry_files.push(format!("{dir}{p}"));
        }
    }
}

/// The distribution name at the start of a PEP 508 requirement (`Django[bcrypt]>=4` →
/// `Django`), or `None` for an empty one.
fn pep508_name(req: &str) -> Option<String> {
    let name: String = req
        .trim()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect();
    (!name.is_empty()).then_some(name)
}

/// One line of a requirements file: options (`-r`, `-e`, `--hash`), URLs and comments
/// declare no name.
fn requirement(line: &str) -> Option<String> {
    let line = line.split(" #").next().unwrap_or("").trim();
    let declares = !line.starts_with(['#', '-']) && !line.contains("://");
    pep508_name(line).filter(|_| declares)
}

/// `install_requires=[…]` and `tests_require=[…]` lists of a `setup.py`, read as text.
fn setup_py(text: &str, deps: &mut BTreeSet<String>) {
    for key in ["install_requires", "tests_require", "setup_requires"] {
        let Some(at) = text.find(key) else { continue };
        let rest = &text[at + key.len()..];
        if let (Some(open), Some(close)) = (rest.find('['), rest.find(']'))
            && open < close
        {
            deps.extend(quoted(&rest[open + 1..close]).filter_map(pep508_name));
        }
    }
}

/// The contents of the single- or double-quoted strings in `text`.
fn quoted(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let start = rest.find(['"', '\''])?;
        let quote = rest[start..].chars().next()?;
        let body = &rest[start + 1..];
        let end = body.find(quote)?;
        rest = &body[end + 1..];
        Some(&body[..end])
    })
}

fn go_mod(text: &str, deps: &mut BTreeSet<String>) {
    let mut in_block = false;
    for line in text
        .lines()
        .map(|l| l.split("//").next().unwrap_or("").trim())
    {
        let module = if in_block {
            in_block = !line.starts_with(')');
            line.split_whitespace().next().filter(|_| in_block)
        } else if let Some(rest) = line.strip_prefix("require") {
            in_block = rest.trim().starts_with('(');
            rest.split_whitespace().next().filter(|_| !in_block)
        } else {
            None
        };
        deps.extend(module.map(str::to_owned));
    }
}

/// `<dependency>` blocks of a `pom.xml`, as `groupId:artifactId`.
fn maven(text: &str, deps: &mut BTreeSet<String>) {
    let tag = |block: &str, name: &str| -> Option<String> {
        let open = format!("<{name}>");
        let start = block.find(&open)? + open.len();
        let end = block[start..].find('<')? + start;
        Some(block[start..end].trim().to_owned())
    };
    let mut rest = text;
    while let Some(start) = rest.find("<dependency>") {
        let block = &rest[start..];
        let end = block.find("</dependency>").unwrap_or(block.len());
        if let Some(artifact) = tag(&block[..end], "artifactId") {
            match tag(&block[..end], "groupId") {
                Some(group) => deps.insert(format!("{group}:{artifact}")),
                None => deps.insert(artifact),
            };
        }
        rest = &block[end..];
    }
}

/// Lines declaring a dependency in a Gradle build (`implementation("g:a:v")`, as
/// `group:artifact`) or a Gemfile (`gem 'rails'`): a word of the kind's `lines`, then the
/// first quoted string.
fn declarations(kind: &Kind, text: &str, deps: &mut BTreeSet<String>) {
    for line in text.lines().map(str::trim) {
        let Some(name) = kind
            .lines
            .iter()
            .find_map(|w| line.strip_prefix(w.as_str()))
            .filter(|r| r.starts_with([' ', '(', '"', '\'']))
            .and_then(|rest| quoted(rest).next())
        else {
            continue;
        };
        let mut parts = name.split(':');
        match (kind.kind.as_str(), parts.next(), parts.next()) {
            ("bundler", _, _) => deps.insert(name.to_owned()),
            (_, Some(group), Some(artifact)) => deps.insert(format!("{group}:{artifact}")),
            _ => continue,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_kind() {
        let cargo = parse(
            "Cargo.toml",
            "[package]\nname='x'\n[dependencies]\nactix_web = '4'\nrenamed = { package = 'sqlx', version = '0.8' }\n[dev-dependencies]\ncriterion = '0.5'\n[[bin]]\nname = 'tool'\n",
        )
        .unwrap();
        assert_eq!(cargo.dependencies, ["actix_web", "criterion", "sqlx"]);
        assert_eq!(cargo.frameworks, ["actix-web"]);
        assert_eq!(cargo.entry_files, ["src/bin/tool.rs"]);

        let npm = parse(
            "web/package.json",
            r#"{"main":"./index.js","dependencies":{"react":"18","express":"4"},"devDependencies":{"jest":"29"},"scripts":{"test":"jest"}}"#,
        )
        .unwrap();
        assert_eq!(npm.dependencies, ["express", "jest", "react"]);
        assert_eq!(npm.frameworks, ["React", "Express"]);
        assert_eq!(npm.scripts["test"], "jest");
        assert_eq!(npm.entry_files, ["web/index.js"]);

        let py = parse(
            "pyproject.toml",
            "[project]\ndependencies=['Django[argon2]>=4', 'psycopg ; python_version>\"3\"']\n[project.optional-dependencies]\ntest=['pytest>=7']\n[tool.pytest.ini_options]\naddopts='-q'\n",
        )
        .unwrap();
        assert_eq!(py.dependencies, ["Django", "psycopg", "pytest"]);
        assert!(py.pytest_config);
        assert_eq!(py.frameworks, ["Django"]);

        let req = parse(
            "requirements/dev.txt",
            "# tools\n-r base.txt\nflask==2.0  # web\nnumpy\ngit+https://x/y.git\n",
        )
        .unwrap();
        assert_eq!(req.dependencies, ["flask", "numpy"]);

        let setup = parse(
            "setup.py",
            "setup(name='x', install_requires=['requests>=2', \"click\"], tests_require=['pytest'])",
        )
        .unwrap();
        assert_eq!(setup.dependencies, ["click", "pytest", "requests"]);

        let go = parse(
            "go.mod",
            "module x\n\nrequire github.com/lib/pq v1.0.0\nrequire (\n\tgithub.com/gin-gonic/gin v1.9.0 // indirect\n)\n",
        )
        .unwrap();
        assert_eq!(
            go.dependencies,
            ["github.com/gin-gonic/gin", "github.com/lib/pq"]
        );
        assert_eq!(go.frameworks, ["Gin"]);

        let pom = parse(
            "pom.xml",
            "<project><dependencies><dependency><groupId>org.springframework.boot</groupId><artifactId>spring-boot-starter-security</artifactId></dependency></dependencies></project>",
        )
        .unwrap();
        assert_eq!(
            pom.dependencies,
            ["org.springframework.boot:spring-boot-starter-security"]
        );
        assert!(pom.declares("spring-boot-starter-security"));
        assert_eq!(pom.frameworks, ["Spring Boot"]);

        let gradle = parse(
            "build.gradle.kts",
            "dependencies {\n  implementation(\"io.jsonwebtoken:jjwt-api:0.11.5\")\n  testImplementation 'junit:junit:4.13'\n}\n",
        )
        .unwrap();
        assert_eq!(
            gradle.dependencies,
            ["io.jsonwebtoken:jjwt-api", "junit:junit"]
        );

        let gems = parse("Gemfile", "source 'x'\ngem 'rails', '~> 7'\ngem \"pg\"\n").unwrap();
        assert_eq!(gems.dependencies, ["pg", "rails"]);

        let composer = parse(
            "composer.json",
            r#"{"require":{"php":">=8","ext-json":"*","laravel/framework":"10"}}"#,
        )
        .unwrap();
        assert_eq!(composer.dependencies, ["laravel/framework"]);
        assert_eq!(composer.frameworks, ["Laravel"]);
    }

    #[test]
    fn broken_manifests_declare_nothing() {
        let m = parse("Cargo.toml", "[dependencies\nx = ").unwrap();
        assert!(m.dependencies.is_empty());
        assert!(parse("src/main.rs", "").is_none());
    }

    #[test]
    fn dependency_patterns() {
        assert!(dep_matches("actix-web", "actix_web"));
        assert!(dep_matches("passport*", "passport-jwt"));
        assert!(dep_matches("scikit-learn", "Scikit_Learn"));
        assert!(!dep_matches("pg", "pgx"));
        assert!(dep_matches("junit", "junit:junit"));
    }
}
