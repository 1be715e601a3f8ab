//! Tech-profile signals (`sql_detected`, `auth_detected`, …) detected from evidence in the
//! repository, for specialist injection.
//!
//! Every rule is one row of [`RULES`]: the signal, the kind of evidence, and the patterns.
//! The kind sets how much a hit is worth: a dependency declared in a manifest is strong
//! (`high`), a pattern in code is fair (`medium`), a file or directory name is weak (`low`).
//! A signal's evidence lists its strongest paths first.

use std::collections::BTreeMap;

use super::manifest::Manifest;
use super::scan::{Entry, dirs, file_name};

/// How much a piece of evidence is worth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Strength {
    /// A file or directory name.
    Name,
    /// A pattern in the code.
    Code,
    /// A dependency declared in a manifest.
    Manifest,
}

impl Strength {
    /// The reference's confidence word.
    pub fn confidence(self) -> &'static str {
        match self {
            Strength::Manifest => "high",
            Strength::Code => "medium",
            Strength::Name => "low",
        }
    }

    /// Where the evidence came from, in words.
    pub fn source(self) -> &'static str {
        match self {
            Strength::Manifest => "manifests",
            Strength::Code => "code patterns",
            Strength::Name => "file names",
        }
    }
}

/// What a rule looks at. A rule matches when any of its patterns does, except for the
/// `…All` kinds, which need every pattern.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// A declared dependency; a pattern ending in `*` matches a prefix.
    Dep,
    /// Every dependency, in one manifest.
    DepAll,
    /// A file name: exact, or with `*` at the start, the end or both.
    Name,
    /// A directory of that name anywhere in the path.
    Dir,
    /// The start of the path.
    Prefix,
    /// A substring of a file with one of these extensions; no extension means any source
    /// file. A pattern starting with a newline also matches at the start of the file.
    Code(&'static [&'static str]),
    /// Every substring, in one file, as for [`Kind::Code`].
    CodeAll(&'static [&'static str]),
}

impl Kind {
    fn strength(self) -> Strength {
        match self {
            Kind::Dep | Kind::DepAll => Strength::Manifest,
            Kind::Code(_) | Kind::CodeAll(_) => Strength::Code,
            Kind::Name | Kind::Dir | Kind::Prefix => Strength::Name,
        }
    }
}

const ANY: &[&str] = &[];
const JS: &[&str] = &["js", "mjs", "cjs", "jsx"];
#[rustfmt::skip]
const JS_TS: &[&str] = &[
    "js", "mjs", "cjs", "jsx", "ts", "tsx", "mts", "vue", "svelte",
];
const PY: &[&str] = &["py"];
const RS: &[&str] = &["rs"];
const GO: &[&str] = &["go"];
const JVM: &[&str] = &["java", "kt", "scala"];
const YAML: &[&str] = &["yaml", "yml"];

use Kind::{Code, CodeAll, Dep, DepAll, Dir, Name, Prefix};

/// The detection rules: (signal, kind, patterns).
#[rustfmt::skip]
pub const RULES: &[(&str, Kind, &[&str])] = &[
    // Databases: drivers and ORMs, SQL in code, SQL files.
    ("sql_detected", Dep, &[
        "sqlx", "diesel", "sea-orm", "rusqlite", "postgres", "tokio-postgres", "mysql",
        "mysql-async", "libsql", "sqlalchemy", "psycopg", "psycopg2", "psycopg2-binary",
        "pymysql", "mysqlclient", "asyncpg", "aiosqlite", "peewee", "databases", "pg",
        "mysql2", "sqlite3", "better-sqlite3", "sequelize", "typeorm", "knex", "prisma",
        "@prisma/client", "drizzle-orm", "github.com/lib/pq", "github.com/jackc/pgx*",
        "gorm.io/gorm", "github.com/go-sql-driver/mysql", "github.com/mattn/go-sqlite3",
        "spring-boot-starter-data-jpa", "spring-boot-starter-jdbc", "hibernate-core",
        "postgresql", "mysql-connector-java", "activerecord", "doctrine/orm",
        "illuminate/database",
    ]),
    ("sql_detected", CodeAll(ANY), &["SELECT ", " FROM "]),
    ("sql_detected", Code(ANY), &[
        "INSERT INTO ", "CREATE TABLE ", "DELETE FROM ", "sqlite3.connect(",
        "\"database/sql\"", "from django.db import models",
    ]),
    ("sql_detected", Name, &["*.sql"]),
    // Authentication: token, session and password libraries, auth code, auth modules.
    ("auth_detected", Dep, &[
        "jsonwebtoken", "jwt", "pyjwt", "python-jose", "oauth*", "passport*", "bcrypt",
        "bcryptjs", "argon2", "rust-argon2", "argon2-cffi", "password-hash", "django-allauth",
        "flask-login", "flask-jwt-extended", "djangorestframework-simplejwt", "authlib",
        "next-auth", "@auth/*", "express-session", "devise", "omniauth*",
        "spring-boot-starter-security", "spring-security-*", "jjwt*", "github.com/golang-jwt/jwt*",
        "golang.org/x/oauth2", "openidconnect", "keycloak*", "auth0*", "@auth0/*",
        "firebase/php-jwt", "laravel/sanctum", "tymon/jwt-auth",
    ]),
    ("auth_detected", Code(ANY), &[
        "django.contrib.auth", "password", "Password", "jwt", "JWT", "Bearer ",
        "login_required", "authenticate(",
    ]),
    ("auth_detected", Dir, &["auth", "authentication"]),
    ("auth_detected", Name, &["auth.*", "*_auth.*", "login.*"]),
    // Machine learning: frameworks, imports, notebooks and model files.
    ("ml_detected", Dep, &[
        "torch", "tensorflow", "tensorflow-*", "keras", "scikit-learn", "sklearn", "xgboost",
        "lightgbm", "catboost", "transformers", "jax", "onnx", "onnxruntime",
        "pytorch-lightning", "@tensorflow/*", "tch", "candle-core", "burn", "linfa", "ort",
    ]),
    ("ml_detected", DepAll, &["numpy", "pandas"]),
    ("ml_detected", Code(PY), &[
        "import torch", "import tensorflow", "from sklearn", "import keras", "from transformers",
    ]),
    ("ml_detected", Name, &["*.ipynb", "*.onnx", "*.pt", "*.h5", "*.safetensors"]),
    // Frontend frameworks.
    ("frontend_framework", Dep, &[
        "react", "vue", "svelte", "@sveltejs/kit", "next", "nuxt", "@angular/core", "solid-js",
        "preact", "astro", "@remix-run/*", "gatsby", "lit", "ember-source", "alpinejs",
        "htmx.org", "yew", "leptos", "dioxus",
    ]),
    ("frontend_framework", Code(JS_TS), &[
        "from 'react'", "from \"react\"", "from 'vue'", "from \"vue\"", "@angular/core",
    ]),
    ("frontend_framework", Name, &[
        "*.vue", "*.svelte", "*.jsx", "*.tsx", "angular.json", "svelte.config.*", "next.config.*",
        "nuxt.config.*",
    ]),
    // Delivery: containers, CI, infrastructure as code, Kubernetes.
    ("devops_detected", Name, &[
        "Dockerfile", "Dockerfile.*", "*.dockerfile", "docker-compose*", "compose.yaml",
        "compose.yml", "*.tf", "Jenkinsfile", ".gitlab-ci.yml", ".travis.yml",
        "azure-pipelines.yml", "bitbucket-pipelines.yml", ".drone.yml", "Chart.yaml",
        "skaffold.yaml", "Procfile", "Vagrantfile", "kustomization.yaml",
    ]),
    ("devops_detected", Prefix, &[".github/workflows/", ".circleci/", ".buildkite/"]),
    ("devops_detected", Dir, &["k8s", "kubernetes", "helm", "terraform", "ansible"]),
    ("devops_detected", CodeAll(YAML), &["apiVersion:", "kind: "]),
    // Schema changes: migration tools, migration directories, schema files.
    ("data_migration", Dep, &[
        "alembic", "flyway-core", "liquibase-core", "diesel-migrations", "refinery",
        "sea-orm-migration", "knex", "db-migrate", "umzug", "github.com/golang-migrate/migrate*",
        "github.com/pressly/goose*",
    ]),
    ("data_migration", Code(RS), &["sqlx::migrate!", "embed_migrations!"]),
    ("data_migration", Code(PY), &["from alembic import op", "migrations.Migration"]),
    ("data_migration", Dir, &["migrations", "migration", "alembic", "migrate", "flyway"]),
    ("data_migration", Name, &["*.sql", "schema.prisma", "alembic.ini", "schema.rb", "liquibase*"]),
    // Realtime: WebSocket and push libraries and code.
    ("realtime_detected", Dep, &[
        "tokio-tungstenite", "tungstenite", "async-tungstenite", "actix-web-actors", "socket.io",
        "socket.io-client", "ws", "websockets", "websocket-client", "channels",
        "python-socketio", "flask-socketio", "sse-starlette", "pusher", "pusher-js",
        "github.com/gorilla/websocket", "nhooyr.io/websocket", "actioncable", "@microsoft/signalr",
    ]),
    ("realtime_detected", Code(ANY), &[
        "WebSocket", "new EventSource(", "socket.io", "text/event-stream",
    ]),
    ("realtime_detected", Name, &["*websocket*", "*socket.*"]),
    // Performance: benchmark harnesses, unsafe and inlining, benchmark directories.
    ("perf_sensitive", Dep, &[
        "criterion", "divan", "iai", "iai-callgrind", "pytest-benchmark", "asv", "benchmark",
        "tinybench", "numba", "cython", "rayon",
    ]),
    ("perf_sensitive", Code(RS), &["unsafe {", "#[inline]", "#[bench]", "criterion_group!", "std::arch::"]),
    ("perf_sensitive", Code(GO), &["func Benchmark"]),
    ("perf_sensitive", Code(ANY), &["criterion", "benchmark"]),
    ("perf_sensitive", Dir, &["benches", "benchmarks"]),
    // Cryptography: libraries and primitives in code.
    ("crypto_usage", Dep, &[
        "ring", "openssl", "openssl-sys", "sha2", "sha1", "sha-1", "sha3", "md-5", "md5", "aes",
        "aes-gcm", "chacha20poly1305", "rsa", "ed25519-dalek", "x25519-dalek", "rustls",
        "blake3", "hmac", "cryptography", "pycryptodome", "pycryptodomex", "pycrypto", "pynacl",
        "crypto-js", "node-forge", "tweetnacl", "golang.org/x/crypto", "bcprov-*",
        "org.bouncycastle:*",
    ]),
    ("crypto_usage", Code(ANY), &[
        "hashlib", "require('crypto')", "require(\"crypto\")", "from 'crypto'", "from \"crypto\"",
        "from 'node:crypto'", "crypto.subtle", "\"crypto/", "javax.crypto", "Cipher.getInstance",
        "createHash(", "createCipheriv(", "use sha2", "use ring::", "use openssl",
    ]),
    // Legacy idioms: `var` in JavaScript, `%` formatting and Python 2 in Python, old Rust.
    ("legacy_patterns", Code(JS), &["\nvar ", " var ", "\tvar ", "(var "]),
    ("legacy_patterns", Code(PY), &[
        "\" % ", "' % ", "\nprint \"", " print \"", ".has_key(", "xrange(", ".iteritems(",
        "except Exception, ",
    ]),
    ("legacy_patterns", Code(RS), &["try!(", "\nextern crate "]),
    ("legacy_patterns", Code(JS_TS), &["React.createClass", "componentWillMount"]),
    ("legacy_patterns", Dep, &["jquery", "bower", "grunt", "moment"]),
    ("legacy_patterns", Name, &["bower.json", "Gruntfile.js"]),
    // HTTP routes and handlers.
    ("api_surface", Code(RS), &[
        "#[get(", "#[post(", "#[put(", "#[delete(", ".route(\"", "Router::new()", "HttpServer::new",
    ]),
    ("api_surface", Code(PY), &[
        "@app.route(", "@app.get(", "@app.post(", "@router.get(", "@router.post(",
        "@bp.route(", "@api_view", "urlpatterns",
    ]),
    ("api_surface", Code(JS_TS), &[
        "app.get('", "app.get(\"", "app.post(", "router.get(", "router.post(", "@Get(", "@Post(",
    ]),
    ("api_surface", Code(GO), &["http.HandleFunc(", ".HandleFunc(", "r.GET(", "e.GET("]),
    ("api_surface", Code(JVM), &["@GetMapping", "@PostMapping", "@RequestMapping", "@RestController"]),
    ("api_surface", Name, &["openapi.yaml", "openapi.yml", "openapi.json", "swagger.json", "swagger.yaml"]),
];

/// At most this many paths are kept per signal.
pub const MAX_EVIDENCE: usize = 5;

/// Collects evidence; [`Detector::finish`] turns it into signals.
#[derive(Debug, Default)]
pub struct Detector {
    hits: BTreeMap<&'static str, Vec<(Strength, String)>>,
}

/// The detected signals.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Profile {
    /// Signal names, sorted.
    pub signals: Vec<String>,
    /// Up to [`MAX_EVIDENCE`] paths per signal, strongest first.
    pub evidence: BTreeMap<String, Vec<String>>,
    /// The strongest evidence per signal.
    pub strength: BTreeMap<String, Strength>,
}

impl Profile {
    /// The strongest evidence over all signals: how sure the profile is of what it says.
    pub fn confidence(&self) -> Strength {
        self.strength
            .values()
            .copied()
            .max()
            .unwrap_or(Strength::Name)
    }

    /// Whether `signal` was detected.
    pub fn has(&self, signal: &str) -> bool {
        self.strength.contains_key(signal)
    }
}

impl Detector {
    /// Records evidence by hand (signals computed elsewhere, such as `test_gap`).
    pub fn add(&mut self, signal: &'static str, strength: Strength, path: &str) {
        let hits = self.hits.entry(signal).or_default();
        if !hits.iter().any(|(s, p)| *s == strength && p == path) {
            hits.push((strength, path.to_owned()));
        }
    }

    fn count(&self, signal: &str, strength: Strength) -> usize {
        self.hits
            .get(signal)
            .map_or(0, |h| h.iter().filter(|(s, _)| *s == strength).count())
    }

    /// Applies the dependency rules to a manifest.
    pub fn manifest(&mut self, m: &Manifest) {
        for (signal, kind, patterns) in RULES {
            let hit = match kind {
                Kind::Dep => patterns.iter().any(|p| m.declares(p)),
                Kind::DepAll => patterns.iter().all(|p| m.declares(p)),
                _ => false,
            };
            if hit {
                self.add(signal, kind.strength(), &m.path);
            }
        }
    }

    /// Applies the name rules to a path.
    pub fn path(&mut self, path: &str) {
        let name = file_name(path);
        for (signal, kind, patterns) in RULES {
            let hit = match kind {
                Kind::Name => patterns.iter().any(|p| glob(p, name)),
                Kind::Dir => dirs(path).any(|d| patterns.contains(&d)),
                Kind::Prefix => patterns.iter().any(|p| path.starts_with(p)),
                _ => false,
            };
            if hit {
                self.add(signal, kind.strength(), path);
            }
        }
    }

    /// Applies the code rules to the text of a file. Tests are skipped: what their fixtures
    /// contain says little about what the product does.
    pub fn content(&mut self, entry: &Entry<'_>, text: &str) {
        if entry.test {
            return;
        }
        let ext = entry.ext();
        for (signal, kind, patterns) in RULES {
            let (exts, all) = match kind {
                Kind::Code(exts) => (*exts, false),
                Kind::CodeAll(exts) => (*exts, true),
                _ => continue,
            };
            let applies = if exts.is_empty() {
                entry.lang.is_some()
            } else {
                exts.contains(&ext.as_str())
            };
            // Evidence beyond the cap would never be shown: stop looking.
            if !applies || self.count(signal, Strength::Code) >= MAX_EVIDENCE {
                continue;
            }
            let hit = if all {
                patterns.iter().all(|p| contains(text, p))
            } else {
                patterns.iter().any(|p| contains(text, p))
            };
            if hit {
                self.add(signal, kind.strength(), entry.path());
            }
        }
    }

    /// The signals, sorted, each with its strongest evidence first.
    pub fn finish(self) -> Profile {
        let mut profile = Profile::default();
        for (signal, mut hits) in self.hits {
            // Stable: equal strengths keep the order they were found in (path order).
            hits.sort_by_key(|h| std::cmp::Reverse(h.0));
            let mut paths: Vec<String> = Vec::new();
            for (_, path) in &hits {
                if paths.len() < MAX_EVIDENCE && !paths.contains(path) {
                    paths.push(path.clone());
                }
            }
            profile.signals.push(signal.to_owned());
            profile.evidence.insert(signal.to_owned(), paths);
            profile.strength.insert(signal.to_owned(), hits[0].0);
        }
        profile
    }
}

/// Whether `name` matches `pattern`, which may start and/or end with `*`.
fn glob(pattern: &str, name: &str) -> bool {
    match (pattern.strip_prefix('*'), pattern.strip_suffix('*')) {
        (Some(rest), _) if rest.ends_with('*') => name.contains(&rest[..rest.len() - 1]),
        (Some(suffix), None) => name.ends_with(suffix),
        (None, Some(prefix)) => name.starts_with(prefix),
        _ => name == pattern,
    }
}

/// Whether `text` contains `needle`; a needle starting with a newline also matches at the
/// very start of the text.
fn contains(text: &str, needle: &str) -> bool {
    text.contains(needle)
        || needle
            .strip_prefix('\n')
            .is_some_and(|n| text.starts_with(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob("Dockerfile", "Dockerfile"));
        assert!(glob("docker-compose*", "docker-compose.prod.yml"));
        assert!(glob("*.tf", "main.tf"));
        assert!(glob("*websocket*", "my_websocket_server.py"));
        assert!(!glob("*.tf", "main.tfvars"));
        assert!(!glob("Dockerfile", "Dockerfile.dev"));
    }

    #[test]
    fn newline_needles_match_at_the_start() {
        assert!(contains("var x = 1;", "\nvar "));
        assert!(contains("a();\nvar x;", "\nvar "));
        assert!(!contains("invariant = 1", "\nvar "));
    }

    #[test]
    fn evidence_is_strongest_first_and_capped() {
        let mut d = Detector::default();
        for i in 0..7 {
            d.add("sql_detected", Strength::Name, &format!("db/{i}.sql"));
        }
        d.add("sql_detected", Strength::Manifest, "Cargo.toml");
        d.path("Dockerfile");
        let p = d.finish();
        assert_eq!(p.signals, ["devops_detected", "sql_detected"]);
        assert_eq!(p.evidence["sql_detected"][0], "Cargo.toml");
        assert_eq!(p.evidence["sql_detected"].len(), MAX_EVIDENCE);
        assert_eq!(p.strength["sql_detected"], Strength::Manifest);
        assert_eq!(p.strength["devops_detected"], Strength::Name);
        assert_eq!(p.confidence(), Strength::Manifest);
    }
}
