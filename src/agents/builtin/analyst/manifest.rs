//! Manifests: the files where a project declares its dependencies, read without running any
//! package manager.
//!
//! Each parser is forgiving: a manifest that does not parse still counts as a manifest (it
//! shows the ecosystem) but declares nothing. Dependency names are kept as written; matching
//! against rule tables goes through [`dep_matches`], which normalises case and `_`/`-`.

use std::collections::{BTreeMap, BTreeSet};

/// The ecosystem a manifest belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ecosystem {
    Rust,
    Node,
    Python,
    Go,
    Java,
    Ruby,
    Php,
}

/// What a framework is for; it decides how the project is described in one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    Frontend,
    Backend,
    Cli,
    Other,
}

/// Dependency patterns (see [`dep_matches`]) and the framework they show.
pub const FRAMEWORKS: &[(&str, &str, Category)] = &[
    ("react", "React", Category::Frontend),
    ("vue", "Vue", Category::Frontend),
    ("svelte", "Svelte", Category::Frontend),
    ("@sveltejs/kit", "SvelteKit", Category::Frontend),
    ("next", "Next.js", Category::Frontend),
    ("nuxt", "Nuxt", Category::Frontend),
    ("@angular/core", "Angular", Category::Frontend),
    ("solid-js", "Solid", Category::Frontend),
    ("preact", "Preact", Category::Frontend),
    ("astro", "Astro", Category::Frontend),
    ("@remix-run/*", "Remix", Category::Frontend),
    ("gatsby", "Gatsby", Category::Frontend),
    ("react-native", "React Native", Category::Frontend),
    ("electron", "Electron", Category::Frontend),
    ("yew", "Yew", Category::Frontend),
    ("leptos", "Leptos", Category::Frontend),
    ("dioxus", "Dioxus", Category::Frontend),
    ("tauri", "Tauri", Category::Frontend),
    ("express", "Express", Category::Backend),
    ("koa", "Koa", Category::Backend),
    ("fastify", "Fastify", Category::Backend),
    ("@nestjs/core", "NestJS", Category::Backend),
    ("hono", "Hono", Category::Backend),
    ("django", "Django", Category::Backend),
    (
        "djangorestframework",
        "Django REST framework",
        Category::Backend,
    ),
    ("flask", "Flask", Category::Backend),
    ("fastapi", "FastAPI", Category::Backend),
    ("starlette", "Starlette", Category::Backend),
    ("tornado", "Tornado", Category::Backend),
    ("aiohttp", "aiohttp", Category::Backend),
    ("actix-web", "actix-web", Category::Backend),
    ("axum", "axum", Category::Backend),
    ("rocket", "Rocket", Category::Backend),
    ("warp", "warp", Category::Backend),
    ("poem", "Poem", Category::Backend),
    ("rails", "Rails", Category::Backend),
    ("sinatra", "Sinatra", Category::Backend),
    (
        "org.springframework.boot:*",
        "Spring Boot",
        Category::Backend,
    ),
    ("org.springframework:*", "Spring", Category::Backend),
    ("laravel/framework", "Laravel", Category::Backend),
    ("symfony/framework-bundle", "Symfony", Category::Backend),
    ("github.com/gin-gonic/gin", "Gin", Category::Backend),
    ("github.com/labstack/echo*", "Echo", Category::Backend),
    ("github.com/gofiber/fiber*", "Fiber", Category::Backend),
    ("github.com/go-chi/chi*", "chi", Category::Backend),
    ("github.com/gorilla/mux", "gorilla/mux", Category::Backend),
    ("clap", "clap", Category::Cli),
    ("structopt", "structopt", Category::Cli),
    ("argh", "argh", Category::Cli),
    ("click", "Click", Category::Cli),
    ("typer", "Typer", Category::Cli),
    ("commander", "Commander.js", Category::Cli),
    ("yargs", "yargs", Category::Cli),
    ("github.com/spf13/cobra", "Cobra", Category::Cli),
    ("tokio", "tokio", Category::Other),
    ("async-std", "async-std", Category::Other),
    ("bevy", "Bevy", Category::Other),
];

/// A manifest and what it declares.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Manifest {
    /// Dependency names as written, sorted and unique (runtime, dev and build together).
    pub dependencies: Vec<String>,
    /// Frameworks recognised from the dependencies, in [`FRAMEWORKS`] order.
    pub frameworks: Vec<String>,
    /// `cargo`, `npm`, `pyproject`, `requirements`, `setup.py`, `pipfile`, `go`, `maven`,
    /// `gradle`, `bundler` or `composer`.
    pub kind: &'static str,
    /// Path relative to the repository root.
    pub path: String,
    /// The ecosystem.
    #[serde(skip)]
    pub ecosystem: Ecosystem,
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
    pub fn declares(&self, pattern: &str) -> bool {
        self.dependencies.iter().any(|d| dep_matches(pattern, d))
    }
}

/// Whether `path` names a manifest, and which kind.
pub fn kind_of(path: &str) -> Option<(&'static str, Ecosystem)> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let parent_is_requirements = path
        .rsplit('/')
        .nth(1)
        .is_some_and(|dir| dir == "requirements");
    Some(match name {
        "Cargo.toml" => ("cargo", Ecosystem::Rust),
        "package.json" => ("npm", Ecosystem::Node),
        "pyproject.toml" => ("pyproject", Ecosystem::Python),
        "setup.py" => ("setup.py", Ecosystem::Python),
        "Pipfile" => ("pipfile", Ecosystem::Python),
        "go.mod" => ("go", Ecosystem::Go),
        "pom.xml" => ("maven", Ecosystem::Java),
        "build.gradle" | "build.gradle.kts" => ("gradle", Ecosystem::Java),
        "Gemfile" => ("bundler", Ecosystem::Ruby),
        "composer.json" => ("composer", Ecosystem::Php),
        n if n.ends_with(".txt") && (n.starts_with("requirements") || parent_is_requirements) => {
            ("requirements", Ecosystem::Python)
        }
        _ => return None,
    })
}

/// Parses the manifest at `path` (whose kind [`kind_of`] recognised) from its text.
pub fn parse(path: &str, text: &str) -> Option<Manifest> {
    let (kind, ecosystem) = kind_of(path)?;
    let dir = match path.rfind('/') {
        Some(i) => &path[..=i],
        None => "",
    };
    let mut m = Manifest {
        dependencies: Vec::new(),
        frameworks: Vec::new(),
        kind,
        path: path.to_owned(),
        ecosystem,
        scripts: BTreeMap::new(),
        entry_files: Vec::new(),
        pytest_config: false,
    };
    let mut deps = BTreeSet::new();
    match kind {
        "cargo" => cargo(text, dir, &mut deps, &mut m),
        "npm" => npm(text, dir, &mut deps, &mut m),
        "pyproject" => pyproject(text, &mut deps, &mut m),
        "pipfile" => {
            if let Ok(t) = toml::from_str::<toml::Table>(text) {
                for key in ["packages", "dev-packages"] {
                    toml_keys(t.get(key), &mut deps);
                }
            }
        }
        "requirements" => {
            for line in text.lines() {
                requirement_line(line, &mut deps);
            }
        }
        "setup.py" => setup_py(text, &mut deps),
        "go" => go_mod(text, &mut deps),
        "maven" => maven(text, &mut deps),
        "gradle" => gradle(text, &mut deps),
        "bundler" => gemfile(text, &mut deps),
        "composer" => composer(text, &mut deps),
        _ => {}
    }
    m.dependencies = deps.into_iter().collect();
    let mut seen = BTreeSet::new();
    for (pattern, name, _) in FRAMEWORKS {
        if m.declares(pattern) && seen.insert(*name) {
            m.frameworks.push((*name).to_owned());
        }
    }
    Some(m)
}

/// Whether dependency `dep` matches `pattern`: equal, or starting with the pattern's text
/// when it ends in `*`. Both sides compare lower-case with `_` read as `-`; a Maven or Gradle
/// `group:artifact` also matches on its artifact alone.
pub fn dep_matches(pattern: &str, dep: &str) -> bool {
    let dep = dep.to_ascii_lowercase().replace('_', "-");
    let artifact = dep.rsplit(':').next().unwrap_or(&dep);
    let test = |name: &str| match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    };
    test(&dep) || (artifact != dep && test(artifact))
}

/// The category of the frameworks `name` belongs to.
pub fn category(name: &str) -> Category {
    FRAMEWORKS
        .iter()
        .find(|(_, n, _)| *n == name)
        .map_or(Category::Other, |(_, _, c)| *c)
}

fn cargo(text: &str, dir: &str, deps: &mut BTreeSet<String>, m: &mut Manifest) {
    let Ok(t) = toml::from_str::<toml::Table>(text) else {
        return;
    };
    let sections = ["dependencies", "dev-dependencies", "build-dependencies"];
    for key in sections {
        cargo_deps(t.get(key), deps);
    }
    if let Some(ws) = t.get("workspace") {
        cargo_deps(ws.get("dependencies"), deps);
    }
    if let Some(targets) = t.get("target").and_then(|v| v.as_table()) {
        for target in targets.values() {
            for key in sections {
                cargo_deps(target.get(key), deps);
            }
        }
    }
    if let Some(bins) = t.get("bin").and_then(|v| v.as_array()) {
        for bin in bins {
            let path = bin.get("path").and_then(|p| p.as_str()).map(str::to_owned);
            let named = bin
                .get("name")
                .and_then(|n| n.as_str())
                .map(|n| format!("src/bin/{n}.rs"));
            if let Some(p) = path.or(named) {
                m.entry_files.push(format!("{dir}{p}"));
            }
        }
    }
}

/// Cargo dependency keys, or the `package` a key renames.
fn cargo_deps(section: Option<&toml::Value>, deps: &mut BTreeSet<String>) {
    let Some(table) = section.and_then(|v| v.as_table()) else {
        return;
    };
    for (key, value) in table {
        let name = value.get("package").and_then(|p| p.as_str()).unwrap_or(key);
        deps.insert(name.to_owned());
    }
}

fn toml_keys(section: Option<&toml::Value>, deps: &mut BTreeSet<String>) {
    if let Some(table) = section.and_then(|v| v.as_table()) {
        for key in table.keys().filter(|k| !k.eq_ignore_ascii_case("python")) {
            deps.insert(key.clone());
        }
    }
}

fn npm(text: &str, dir: &str, deps: &mut BTreeSet<String>, m: &mut Manifest) {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    for key in [
        "dependencies",
        "devDependencies",
        "peerDependencies",
        "optionalDependencies",
    ] {
        if let Some(obj) = v.get(key).and_then(|d| d.as_object()) {
            deps.extend(obj.keys().cloned());
        }
    }
    if let Some(obj) = v.get("scripts").and_then(|s| s.as_object()) {
        for (name, cmd) in obj {
            if let Some(cmd) = cmd.as_str() {
                m.scripts.insert(name.clone(), cmd.to_owned());
            }
        }
    }
    let mut entry = |p: &str| {
        let p = p.trim_start_matches("./");
        m.entry_files.push(format!("{dir}{p}"));
    };
    if let Some(main) = v.get("main").and_then(|s| s.as_str()) {
        entry(main);
    }
    match v.get("bin") {
        Some(serde_json::Value::String(s)) => entry(s),
        Some(serde_json::Value::Object(obj)) => {
            obj.values().filter_map(|b| b.as_str()).for_each(entry)
        }
        _ => {}
    }
}

fn pyproject(text: &str, deps: &mut BTreeSet<String>, m: &mut Manifest) {
    let Ok(t) = toml::from_str::<toml::Table>(text) else {
        return;
    };
    let strings = |v: Option<&toml::Value>, deps: &mut BTreeSet<String>| {
        for item in v.and_then(|a| a.as_array()).into_iter().flatten() {
            if let Some(name) = item.as_str().and_then(pep508_name) {
                deps.insert(name);
            }
        }
    };
    if let Some(project) = t.get("project") {
        strings(project.get("dependencies"), deps);
        if let Some(extras) = project
            .get("optional-dependencies")
            .and_then(|v| v.as_table())
        {
            extras.values().for_each(|list| strings(Some(list), deps));
        }
    }
    if let Some(groups) = t.get("dependency-groups").and_then(|v| v.as_table()) {
        groups.values().for_each(|list| strings(Some(list), deps));
    }
    if let Some(tool) = t.get("tool") {
        if let Some(poetry) = tool.get("poetry") {
            toml_keys(poetry.get("dependencies"), deps);
            toml_keys(poetry.get("dev-dependencies"), deps);
            if let Some(groups) = poetry.get("group").and_then(|v| v.as_table()) {
                for group in groups.values() {
                    toml_keys(group.get("dependencies"), deps);
                }
            }
        }
        m.pytest_config = tool.get("pytest").is_some();
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
fn requirement_line(line: &str, deps: &mut BTreeSet<String>) {
    let line = line.split(" #").next().unwrap_or("").trim();
    if line.starts_with('#') || line.starts_with('-') || line.contains("://") {
        return;
    }
    if let Some(name) = pep508_name(line) {
        deps.insert(name);
    }
}

/// `install_requires=[…]` and `tests_require=[…]` lists of a `setup.py`, read as text.
fn setup_py(text: &str, deps: &mut BTreeSet<String>) {
    for key in ["install_requires", "tests_require", "setup_requires"] {
        let Some(at) = text.find(key) else { continue };
        let rest = &text[at + key.len()..];
        let (Some(open), Some(close)) = (rest.find('['), rest.find(']')) else {
            continue;
        };
        if open > close {
            continue;
        }
        for name in quoted(&rest[open + 1..close]).filter_map(pep508_name) {
            deps.insert(name);
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
    for line in text.lines() {
        let line = line.split("//").next().unwrap_or("").trim();
        if in_block {
            if line.starts_with(')') {
                in_block = false;
            } else if let Some(module) = line.split_whitespace().next() {
                deps.insert(module.to_owned());
            }
        } else if let Some(rest) = line.strip_prefix("require") {
            let rest = rest.trim();
            if rest.starts_with('(') {
                in_block = true;
            } else if let Some(module) = rest.split_whitespace().next() {
                deps.insert(module.to_owned());
            }
        }
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

/// Dependency lines of a Gradle build (`implementation("g:a:v")`), as `group:artifact`.
fn gradle(text: &str, deps: &mut BTreeSet<String>) {
    const CONFIGURATIONS: &[&str] = &[
        "implementation",
        "api",
        "compileOnly",
        "runtimeOnly",
        "testImplementation",
        "testRuntimeOnly",
        "annotationProcessor",
        "kapt",
    ];
    for line in text.lines() {
        let line = line.trim();
        let Some(rest) = CONFIGURATIONS
            .iter()
            .find_map(|c| line.strip_prefix(c))
            .filter(|r| r.starts_with([' ', '(', '"', '\'']))
        else {
            continue;
        };
        if let Some(coord) = quoted(rest).next() {
            let mut parts = coord.split(':');
            if let (Some(group), Some(artifact)) = (parts.next(), parts.next()) {
                deps.insert(format!("{group}:{artifact}"));
            }
        }
    }
}

fn gemfile(text: &str, deps: &mut BTreeSet<String>) {
    for line in text.lines() {
        if let Some(rest) = line.trim().strip_prefix("gem ")
            && let Some(name) = quoted(rest).next()
        {
            deps.insert(name.to_owned());
        }
    }
}

fn composer(text: &str, deps: &mut BTreeSet<String>) {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    for key in ["require", "require-dev"] {
        if let Some(obj) = v.get(key).and_then(|d| d.as_object()) {
            deps.extend(
                obj.keys()
                    .filter(|k| *k != "php" && !k.starts_with("ext-"))
                    .cloned(),
            );
        }
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
