//! `graph` and `report`: the pictures of a session that has a merge, a fix iteration, a
//! revision and a fork, read back — Mermaid by structure, DOT by Graphviz, text by content,
//! and the HTML report in a real headless browser.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use crate::common::{TestRepo, fixture, hermetic};

/// The text of the session's task: agent-visible, so it is untrusted on the page.
const TASK: &str = "Add a <script>alert(1)</script> search";

/// A Python notes app whose test waits for `app/fixed.txt`, an executor (the pictures agent)
/// that writes `app/search.py` for IMPL tasks and `app/fixed.txt` for FIX tasks, and the
/// impl-only pipeline run to the end: IMPL-001 merges code, TEST-001 fails and asks for
/// FIX-001, TEST-001-I2 passes. Then `revise REVIEW-001` adds REVIEW-001-R1.
fn pictured() -> (TestRepo, String) {
    let repo = TestRepo::new();
    repo.write("app/__init__.py", "");
    repo.write("tests/__init__.py", "");
    repo.write(
        "app/notes.py",
        "def add(notes, text):\n    notes.append(text)\n    return notes\n",
    );
    repo.write(
        "tests/test_notes.py",
        "import os\nimport unittest\n\nfrom app.notes import add\n\n\nclass NotesTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add([], 'x'), ['x'])\n\n    def test_fixed(self):\n        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n        self.assertTrue(os.path.exists(os.path.join(here, 'app', 'fixed.txt')))\n",
    );
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.pic]\ndriver = \"command\"\nprogram = \"{}\"\ntimeout = \"30s\"\n[roles]\nexecutor = \"pic\"\n",
            fixture("pictures-agent")
        ),
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "notes app"]);
    repo.ok(&["trust"]);
    let sid = repo
        .ok(&[
            "start",
            "--yes",
            "--pipeline",
            "impl-only",
            "--completion",
            "keep",
            TASK,
        ])
        .lines()
        .next()
        .unwrap()
        .trim()
        .to_owned();
    repo.ok(&[
        "--session",
        &sid,
        "revise",
        "REVIEW-001",
        "--feedback",
        "Look again at <b>search</b>",
    ]);
    (repo, sid)
}

/// The tasks of `status --json`: id → (state, blocked_by).
fn tasks(repo: &TestRepo, sid: &str) -> BTreeMap<String, (String, Vec<String>)> {
    let s = repo.json(&["--session", sid, "status", "--json"]);
    s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let deps = t["blocked_by"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_str().unwrap().to_owned())
                .collect();
            (
                t["id"].as_str().unwrap().to_owned(),
                (t["state"].as_str().unwrap().to_owned(), deps),
            )
        })
        .collect()
}

/// The dependency edges `status --json` implies, as `(from, to)`.
fn dependency_edges(tasks: &BTreeMap<String, (String, Vec<String>)>) -> BTreeSet<(String, String)> {
    tasks
        .iter()
        .flat_map(|(id, (_, deps))| deps.iter().map(move |d| (d.clone(), id.clone())))
        .collect()
}

/// The value of `Tlv4-Merged` on the `task_completed` event of `task`.
fn merged_by(repo: &TestRepo, sid: &str, task: &str) -> String {
    let out = repo.git(&[
        "log",
        "--first-parent",
        &format!("--grep=^Tlv4-Task: {task}$"),
        "--format=%(trailers:key=Tlv4-Event,valueonly,separator=) %(trailers:key=Tlv4-Merged,valueonly,separator=)",
        &format!("tlv4/{sid}"),
    ]);
    out.lines()
        .find_map(|l| l.strip_prefix("task_completed "))
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| panic!("no merge recorded for {task}:\n{out}"))
        .to_owned()
}

#[test]
fn mermaid_has_every_task_dependency_and_revision_of_the_session() {
    let (repo, sid) = pictured();
    let out = repo.ok(&["--session", &sid, "graph", "--format", "mermaid"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.first(), Some(&"```mermaid"), "{out}");
    assert_eq!(lines.last(), Some(&"```"), "{out}");
    assert!(lines.contains(&"flowchart TD"), "{out}");
    let node = regex::Regex::new(r#"^  ([A-Za-z0-9_]+)\["([^"]*)"\]:::([a-z_]+)$"#).unwrap();
    let edge =
        regex::Regex::new(r"^  ([A-Za-z0-9_]+) (-->|-\.->\|revision\|) ([A-Za-z0-9_]+)$").unwrap();
    let class = regex::Regex::new(r"^  classDef ([a-z_]+) fill:#[0-9a-f]{6},").unwrap();
    let mut nodes = BTreeMap::new();
    let mut deps = BTreeSet::new();
    let mut revisions = BTreeSet::new();
    let mut classes = BTreeSet::new();
    for l in &lines {
        if let Some(c) = node.captures(l) {
            let label = c[2].to_owned();
            assert!(!label.contains('<') || label.contains("<br/>"), "{l}");
            nodes.insert(c[1].replace('_', "-"), (c[3].to_owned(), label));
        } else if let Some(c) = edge.captures(l) {
            let e = (c[1].replace('_', "-"), c[3].replace('_', "-"));
            if &c[2] == "-->" {
                deps.insert(e);
            } else {
                revisions.insert(e);
            }
        } else if let Some(c) = class.captures(l) {
            classes.insert(c[1].to_owned());
        }
    }
    let expected = tasks(&repo, &sid);
    assert_eq!(
        nodes.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>(),
        "{out}"
    );
    for (id, (state, _)) in &expected {
        assert_eq!(&nodes[id].0, state, "{id}: {out}");
        assert!(classes.contains(state), "no classDef {state}: {out}");
    }
    assert_eq!(deps, dependency_edges(&expected), "{out}");
    assert_eq!(
        revisions,
        BTreeSet::from([("REVIEW-001".to_owned(), "REVIEW-001-R1".to_owned())])
    );
    for id in ["FIX-001", "TEST-001-I2", "REVIEW-001-R1"] {
        assert!(nodes.contains_key(id), "{id} missing: {out}");
    }
    // The fix iteration chain and the verdicts of the real run.
    assert!(
        deps.contains(&("TEST-001".into(), "FIX-001".into())),
        "{out}"
    );
    assert!(
        deps.contains(&("FIX-001".into(), "TEST-001-I2".into())),
        "{out}"
    );
    assert!(
        nodes["TEST-001"].1.contains("verdict fix_required"),
        "{out}"
    );
    assert!(nodes["TEST-001-I2"].1.contains("verdict pass"), "{out}");
    let merged = merged_by(&repo, &sid, "IMPL-001");
    assert!(
        nodes["IMPL-001"]
            .1
            .contains(&format!("merged {}", &merged[..7])),
        "{out}"
    );
}

#[test]
fn dot_renders_with_graphviz_and_fills_by_status() {
    let (repo, sid) = pictured();
    let out = repo.ok(&["--session", &sid, "graph", "--format", "dot"]);
    let node =
        regex::Regex::new(r##"^  "([A-Z0-9-]+)" \[label="[^"]*", fillcolor="(#[0-9a-f]{6})", color="#[0-9a-f]{6}", class="([a-z_]+)"\];$"##)
            .unwrap();
    let edge = regex::Regex::new(
        r#"^  "([A-Z0-9-]+)" -> "([A-Z0-9-]+)"( \[style=dashed, label="revision"\])?;$"#,
    )
    .unwrap();
    let mut nodes = BTreeMap::new();
    let mut deps = BTreeSet::new();
    for l in out.lines() {
        if let Some(c) = node.captures(l) {
            nodes.insert(c[1].to_owned(), (c[3].to_owned(), c[2].to_owned()));
        } else if let Some(c) = edge.captures(l).filter(|c| c.get(3).is_none()) {
            deps.insert((c[1].to_owned(), c[2].to_owned()));
        }
    }
    let expected = tasks(&repo, &sid);
    assert_eq!(nodes.len(), expected.len(), "{out}");
    for (id, (state, _)) in &expected {
        assert_eq!(&nodes[id].0, state, "{out}");
    }
    assert_eq!(nodes["IMPL-001"].1, "#c8e6c9", "completed is green: {out}");
    assert_eq!(deps, dependency_edges(&expected), "{out}");

    let Ok(v) = Command::new("dot").arg("-V").output() else {
        eprintln!("skipped: Graphviz `dot` is not installed (apt-get install -y graphviz)");
        return;
    };
    assert!(v.status.success());
    let file = repo.write("graph.dot", &out);
    let svg = Command::new("dot")
        .args(["-Tsvg"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        svg.status.success(),
        "dot -Tsvg: {}",
        String::from_utf8_lossy(&svg.stderr)
    );
    let svg = String::from_utf8(svg.stdout).unwrap();
    for id in expected.keys() {
        // Graphviz writes a node's name as its title, `-` as an entity.
        let title = format!("<title>{}</title>", id.replace('-', "&#45;"));
        assert!(svg.contains(&title), "{id} not drawn");
    }
    assert!(
        svg.contains("fill=\"#c8e6c9\""),
        "no fill colour in the SVG"
    );
}

#[test]
fn text_lists_ranks_with_edges_merges_and_iterations() {
    let (repo, sid) = pictured();
    let out = repo.ok(&["--session", &sid, "graph"]);
    assert!(!out.contains('\x1b'), "no colour into a pipe: {out:?}");
    assert!(
        out.starts_with(&format!("session {sid} (completed, impl-only)\n")),
        "{out}"
    );
    let merged = merged_by(&repo, &sid, "IMPL-001");
    let line = |id: &str| {
        out.lines()
            .find(|l| l.split_whitespace().nth(1) == Some(id))
            .unwrap_or_else(|| panic!("no line for {id}:\n{out}"))
            .to_owned()
    };
    let rank_of = |id: &str| {
        let mut rank = None;
        for l in out.lines() {
            if let Some(r) = l.strip_prefix("rank ") {
                rank = Some(r.parse::<usize>().unwrap());
            } else if l.split_whitespace().nth(1) == Some(id) {
                return rank.unwrap();
            }
        }
        panic!("{id} not ranked:\n{out}")
    };
    assert_eq!(rank_of("PLAN-001"), 0);
    assert_eq!(rank_of("CHECKPOINT-003"), 1);
    assert_eq!(rank_of("IMPL-001"), 2);
    assert_eq!(rank_of("TEST-001"), 3);
    assert_eq!(rank_of("FIX-001"), 4);
    assert_eq!(rank_of("TEST-001-I2"), 5);
    assert!(line("CHECKPOINT-003").contains("verdict pass  <- PLAN-001"));
    assert!(line("IMPL-001").contains(&format!("merged {}", &merged[..7])));
    assert!(line("FIX-001").contains("fix  <- TEST-001"), "{out}");
    assert!(line("TEST-001-I2").contains("test iteration  <- FIX-001"));
    assert!(line("REVIEW-001-R1").contains("revises REVIEW-001  <- IMPL-001"));
    for id in tasks(&repo, &sid).keys() {
        assert_eq!(
            line(id).split_whitespace().nth(3),
            Some("completed"),
            "{id}: {out}"
        );
    }

    // On a terminal: colour, unless NO_COLOR or TERM=dumb says no.
    let tty = |env: &[(&str, &str)]| {
        let mut cmd = hermetic("script", repo.path(), repo.home.path());
        cmd.args(["-qec"])
            .arg(format!("{} --session {sid} graph", crate::common::BIN))
            .arg("/dev/null");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    if Command::new("script").arg("-V").output().is_err() {
        eprintln!("skipped the terminal part: util-linux `script` is not installed");
        return;
    }
    assert!(
        tty(&[("TERM", "xterm")]).contains("\x1b[32m"),
        "green on a terminal"
    );
    assert!(!tty(&[("TERM", "xterm"), ("NO_COLOR", "1")]).contains('\x1b'));
    assert!(!tty(&[("TERM", "dumb")]).contains('\x1b'));
}

#[test]
fn json_and_a_fork_name_the_nodes_edges_and_origin() {
    let (repo, sid) = pictured();
    let g = repo.json(&["--session", &sid, "graph", "--json"]);
    assert_eq!(g["schema"], 1);
    let expected = tasks(&repo, &sid);
    let nodes = g["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), expected.len());
    let kind = |id: &str| {
        nodes.iter().find(|n| n["id"] == id).unwrap()["kind"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(kind("FIX-001"), "fix");
    assert_eq!(kind("TEST-001-I2"), "iteration");
    assert_eq!(kind("REVIEW-001-R1"), "revision");
    assert_eq!(kind("CHECKPOINT-003"), "checkpoint");
    let deps: BTreeSet<(String, String)> = g["edges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "depends")
        .map(|e| {
            (
                e["from"].as_str().unwrap().to_owned(),
                e["to"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(deps, dependency_edges(&expected));

    // A fork at the plan's completion shows where it came from.
    let at = repo
        .git(&[
            "log",
            "--first-parent",
            "--format=%H %s",
            &format!("tlv4/{sid}"),
        ])
        .lines()
        .find(|l| l.ends_with("PLAN-001: completed (planner)"))
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_owned();
    let fork = repo
        .ok(&[
            "--session",
            &sid,
            "fork",
            "--at",
            &at,
            "--name",
            "TLV4-pictures-fork",
        ])
        .trim()
        .to_owned();
    let text = repo.ok(&["--session", &fork, "graph"]);
    assert!(
        text.lines()
            .next()
            .unwrap()
            .ends_with(&format!("forked from {sid} at {}", &at[..7])),
        "{text}"
    );
    let g = repo.json(&["--session", &fork, "graph", "--json"]);
    assert_eq!(g["forked_from"]["session"], sid.as_str());
    assert_eq!(g["forked_from"]["event"], at.as_str());
    // At the fork point only the plan had run: the fork's graph has what its tip has.
    assert_eq!(
        tasks(&repo, &fork).len(),
        g["nodes"].as_array().unwrap().len()
    );
    assert!(text.contains("ready"), "{text}");
}

/// Chromium, or `None` (with a message) when it is not installed and not required.
fn chromium() -> Option<&'static str> {
    let found = Command::new("chromium").arg("--version").output().is_ok();
    match (found, std::env::var("TLV4_REQUIRE_CHROMIUM").as_deref()) {
        (true, _) => Some("chromium"),
        (false, Ok("1")) => panic!("TLV4_REQUIRE_CHROMIUM=1 but `chromium` is not installed"),
        (false, _) => {
            eprintln!(
                "skipped: `chromium` is not installed (apt-get install -y chromium; .ci/run does it)"
            );
            None
        }
    }
}

/// Runs headless Chromium on `page` with `args` in a fresh profile; returns stdout.
fn browse(repo: &TestRepo, page: &Path, args: &[&str]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut cmd = hermetic("chromium", repo.path(), repo.home.path());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .args(args)
    .arg(format!("file://{}", page.display()));
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "chromium {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn report_renders_in_a_headless_browser_with_every_section() {
    let (repo, sid) = pictured();
    let out = repo.tlv4(&["--session", &sid, "report", "--output", "report.html"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = repo.path().join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: no script, nothing fetched, links only inside the page.
    let lower = html.to_ascii_lowercase();
    assert!(!lower.contains("<script"), "a script on the page");
    assert!(!lower.contains("<link") && !lower.contains("@import") && !lower.contains("url(http"));
    let outside = regex::Regex::new(r##"(?i)\b(?:src|href)\s*=\s*"([^"#][^"]*)""##).unwrap();
    assert!(
        outside.captures(&html).is_none(),
        "a reference outside the page: {:?}",
        outside.captures(&html).map(|c| c[1].to_owned())
    );
    // Standard output too, the same page.
    assert_eq!(repo.ok(&["--session", &sid, "report", "-o", "-"]), html);

    let Some(_) = chromium() else { return };
    let dom = browse(&repo, &page, &["--dump-dom"]);
    for section in [
        "summary",
        "graph",
        "timeline",
        "verdicts",
        "reviews",
        "tests",
        "discussions",
        "cost",
    ] {
        assert!(
            dom.contains(&format!("<section id=\"{section}\"")),
            "{section} missing"
        );
    }
    // Every task is a node of the SVG graph, every dependency an edge.
    let expected = tasks(&repo, &sid);
    for id in expected.keys() {
        assert!(dom.contains(&format!("data-id=\"{id}\"")), "{id} not drawn");
    }
    for (from, to) in dependency_edges(&expected) {
        assert!(
            dom.contains(&format!("data-from=\"{from}\" data-to=\"{to}\"")),
            "edge {from} -> {to} not drawn"
        );
    }
    // One row per test iteration, as many as the tester recorded.
    let runs = repo
        .git(&[
            "ls-tree",
            "--name-only",
            &format!("tlv4/{sid}:.tlv4/sessions/{sid}/artifacts/test-runs/"),
        ])
        .lines()
        .filter(|l| l.ends_with(".json"))
        .count();
    assert_eq!(runs, 2);
    assert_eq!(dom.matches("<tr class=\"test-run\">").count(), runs);
    assert!(dom.contains("fix_required") && dom.contains("100.0%"));
    // The review's finding at app/search.py:3 with the code around it.
    assert!(dom.contains("app/search.py:3"), "finding missing");
    assert!(dom.contains("<div class=\"hit\"><span class=\"n\">3</span>"));
    // Cost per role of the run records.
    assert!(dom.contains("By role") && dom.contains(">executor<"));

    let shot = repo.path().join("shot.png");
    browse(
        &repo,
        &page,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,2000",
        ],
    );
    let png = std::fs::read(&shot).expect("a screenshot");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(
        png.len() > 20_000,
        "a near-empty screenshot: {} bytes",
        png.len()
    );
}

#[test]
fn report_escapes_agent_text_in_titles_and_findings() {
    let (repo, sid) = pictured();
    let html = repo.ok(&["--session", &sid, "report", "--output", "-"]);
    assert!(
        !html.to_ascii_lowercase().contains("<script"),
        "unescaped script"
    );
    assert!(!html.contains("<b>search</b>"), "unescaped feedback markup");
    assert!(
        html.contains("Look again at &lt;b&gt;search&lt;&#x2f;b&gt;"),
        "feedback missing"
    );
    // The task text and the finding's code line are there, as text.
    assert!(html.contains("Add a &lt;script&gt;alert(1)&lt;&#x2f;script&gt; search"));
    assert!(html.contains("print(&quot;&lt;script&gt;alert(&#x27;search&#x27;)"));

    let Some(_) = chromium() else { return };
    let page = repo.write("escaped.html", &html);
    let dom = browse(&repo, &page, &["--dump-dom"]);
    // Parsed by a browser: no script element, and the text reads as the agent wrote it.
    assert!(
        !dom.to_ascii_lowercase().contains("<script"),
        "the browser made a script"
    );
    assert!(dom.contains("Add a &lt;script&gt;alert(1)&lt;/script&gt; search"));
}

#[test]
fn report_writes_into_what_it_must_not_replace() {
    use std::os::unix::fs::FileTypeExt;
    let (repo, sid) = pictured();
    let expected = repo.ok(&["--session", &sid, "report", "-o", "-"]);
    // A FIFO (as /dev/stdout or /dev/null would be a device): written into, still a FIFO.
    let fifo = repo.path().join("page.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let mut reader = Command::new("cat")
        .arg(&fifo)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    repo.ok(&["--session", &sid, "report", "-o", "page.fifo"]);
    let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    if !kind.is_fifo() {
        // Replaced: nobody will ever write to the FIFO `cat` waits on.
        reader.kill().unwrap();
        reader.wait().unwrap();
        panic!("the FIFO was replaced: {kind:?}");
    }
    let read = reader.wait_with_output().unwrap();
    assert_eq!(String::from_utf8(read.stdout).unwrap(), expected);
    // A symbolic link: its target gets the page, the link stays.
    repo.write("pages/old.html", "old\n");
    std::os::unix::fs::symlink("pages/old.html", repo.path().join("link.html")).unwrap();
    repo.ok(&["--session", &sid, "report", "-o", "link.html"]);
    let link = std::fs::symlink_metadata(repo.path().join("link.html")).unwrap();
    assert!(link.file_type().is_symlink());
    assert_eq!(
        std::fs::read_to_string(repo.path().join("pages/old.html")).unwrap(),
        expected
    );
    // A regular file is replaced whole, readable like any file the user writes.
    repo.ok(&["--session", &sid, "report"]);
    let default = repo.path().join(format!("{sid}.html"));
    assert_eq!(std::fs::read_to_string(&default).unwrap(), expected);
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&default).unwrap().permissions(),
    );
    assert_eq!(mode & 0o044, 0o044, "mode {mode:o}");
    // A directory is bad input: exit 1, nothing written.
    let err = repo.fails(&["--session", &sid, "report", "-o", "pages"], 1);
    assert!(
        err.starts_with("error: cannot write the report to `"),
        "{err}"
    );
    let left: Vec<_> = std::fs::read_dir(repo.path().join("pages"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
}
