//! Odd input and odd repositories: task text full of Markdown, branches and refs that block
//! the tool's, repository formats it cannot read, files where directories belong, a demo
//! pointed at a used directory. Each ends in a finished run or a clear error that changed
//! nothing.

use crate::common::TestRepo;

/// The session's files in its tip tree, as `(path, text)`, Markdown only.
fn documents(repo: &TestRepo, sid: &str) -> Vec<(String, String)> {
    let branch = format!("tlv4/{sid}");
    repo.git(&["ls-tree", "-r", "--name-only", &branch])
        .lines()
        .filter(|p| p.ends_with(".md") && p.starts_with(".tlv4/sessions/"))
        .map(|p| (p.to_owned(), repo.git(&["show", &format!("{branch}:{p}")])))
        .collect()
}

/// The H1 lines of `doc` outside its frontmatter and fences.
fn h1s(doc: &str) -> usize {
    let body = doc
        .strip_prefix("---\n")
        .and_then(|rest| rest.find("\n---\n").map(|end| &rest[end + 5..]))
        .unwrap_or(doc);
    let mut fence = false;
    let mut n = 0;
    for line in body.lines() {
        if line.starts_with("```") || line.starts_with("~~~") {
            fence = !fence;
        } else if !fence && line.starts_with("# ") {
            n += 1;
        }
    }
    n
}

/// A task text that is Markdown of every kind, through the whole builtin pipeline: it
/// completes, every spec document has the one H1 of its template, no line of the text became a
/// line of a document, and a revision whose feedback is just as odd completes too.
#[test]
fn markdown_in_the_task_text_is_data() {
    // (text, lines of it that must not start a line of any document)
    let cases: &[(&str, &[&str])] = &[
        (
            "Add a search command to the notes tool\n# Store the search index in a file",
            &["# Store"],
        ),
        (
            "Add a search command to the notes tool\n````text\nlet index = build();\n````\nStore the index on disk",
            &["````", "let index"],
        ),
        (
            "Add a search command to the notes tool\n~~~ rust\nStore the index on disk\n~~~",
            &["~~~"],
        ),
        (
            "Add a search command to the notes tool\n| field | kind |\n|---|---|\n| title | text |",
            &["| field", "| title"],
        ),
        (
            "Add a search command <div>to the notes tool</div>\n<!-- Store the index on disk\n<script>x</script> Keep results sorted",
            &["<div", "<!--", "<script"],
        ),
        (
            "---\ntitle: injected\nstatus: approved\n---\nAdd a search command to the notes tool",
            &["title: injected", "status: approved"],
        ),
        (
            "Add a search command to the notes tool\n===\nStore the search index on disk\n---",
            &["==="],
        ),
        (
            "Add a `search` command to the *notes* tool\n> Store the index on disk\n## Injected section\n- [ ] Keep results sorted [link](http://x)",
            &["> Store", "## Injected"],
        ),
    ];
    for (text, raw_lines) in cases {
        let repo = TestRepo::new();
        let out = repo.tlv4(&[
            "start",
            "-y",
            "--completion",
            "keep",
            "--pipeline",
            "full-lifecycle",
            "--",
            text,
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text:?}: {stderr}");
        assert!(
            stderr.contains("completed: ") && !stderr.contains("FAILED"),
            "{text:?} did not complete:\n{stderr}"
        );
        let sid = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let check = |when: &str| {
            let status = repo.json(&["--session", &sid, "status", "--json"]);
            for t in status["tasks"].as_array().unwrap() {
                assert_eq!(t["status"], "completed", "{when} {text:?}: {t}");
            }
            let docs = documents(&repo, &sid);
            assert!(
                docs.iter()
                    .any(|(p, _)| p.ends_with("spec/product-brief.md"))
            );
            for (path, doc) in &docs {
                if path.contains("/spec/") && !path.ends_with("readiness-report.md") {
                    assert_eq!(h1s(doc), 1, "{when} {text:?}: {path}:\n{doc}");
                }
                for line in doc.lines() {
                    for raw in *raw_lines {
                        assert!(
                            !line.trim_start().starts_with(raw),
                            "{when} {text:?}: a line of the text is a line of {path}: {line}"
                        );
                    }
                }
            }
        };
        check("start");
        let brief = documents(&repo, &sid)
            .into_iter()
            .find(|(p, _)| p.ends_with("spec/product-brief.md"))
            .unwrap()
            .1;
        assert!(
            brief.contains("Add a") && brief.contains("notes"),
            "the request is quoted in the brief:\n{brief}"
        );
        // The feedback of a revision is data too.
        let feedback = format!("--feedback={text}");
        let out = repo.tlv4(&["--session", &sid, "revise", "DRAFT-002", &feedback]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stderr.contains("completed: ") && !stderr.contains("FAILED"),
            "revise {text:?}:\n{stderr}"
        );
        check("revise");
        repo.fsck();
    }
}

/// What a refused command must leave as it was: refs, HEAD, index, status, and the number
/// of objects (loose and packed).
fn untouched(repo: &TestRepo) -> String {
    let objects: String = repo
        .git(&["count-objects", "-v"])
        .lines()
        .filter(|l| l.starts_with("count:") || l.starts_with("in-pack:"))
        .collect::<Vec<_>>()
        .join(" ");
    let heads: Option<Vec<String>> = std::fs::read_dir(repo.path().join(".git/refs/heads"))
        .ok()
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        });
    format!("{}\n{objects}\n{heads:?}", repo.snapshot())
}

/// A branch named `tlv4` (or a ref `refs/notes/tlv4`, `refs/tlv4`, a branch `tlv4-export`)
/// blocks the namespace the tool writes to: a clear error with a hint, nothing written; other
/// commands that need no session refs still work.
#[test]
fn a_ref_in_the_way_of_the_namespaces_changes_nothing() {
    for (make, name, hint) in [
        (
            &["branch", "tlv4"][..],
            "the branch `tlv4`",
            "git branch -m tlv4",
        ),
        (
            &["update-ref", "refs/notes/tlv4", "HEAD"][..],
            "`refs/notes/tlv4`",
            "git update-ref refs/notes/tlv4-old",
        ),
        (
            &["update-ref", "refs/tlv4", "HEAD"][..],
            "`refs/tlv4`",
            "git update-ref refs/tlv4-old",
        ),
        (
            &["branch", "tlv4-export"][..],
            "the branch `tlv4-export`",
            "git branch -m tlv4-export",
        ),
    ] {
        // Loose, and packed (where a failed write once removed `.git/refs/heads` itself).
        for packed in [false, true] {
            let repo = TestRepo::new();
            repo.git(make);
            if packed {
                repo.git(&["pack-refs", "--all"]);
            }
            let before = untouched(&repo);
            for args in [
                &["start", "Add a search command"][..],
                &["start", "--no-run", "Add a search command"][..],
                &["list"][..],
            ] {
                let err = repo.fails(args, 1);
                assert!(
                    err.contains(name) && err.contains("is in the way"),
                    "{args:?}: {err}"
                );
                assert!(err.contains(hint), "{err}");
                assert_eq!(
                    untouched(&repo),
                    before,
                    "{make:?} {args:?} changed the repository"
                );
            }
            repo.ok(&["pipelines"]);
            repo.fsck();
        }
    }
}

/// reftable and SHA-256 repositories: what is unsupported, exactly, exit 1, a hint, and
/// nothing written.
#[test]
fn reftable_and_sha256_repositories_are_refused_by_name() {
    for (init, says, hint) in [
        (
            "--ref-format=reftable",
            "the reftable ref storage (`extensions.refStorage = reftable`)",
            "git refs migrate --ref-format=files",
        ),
        (
            "--object-format=sha256",
            "SHA-256 object ids (`extensions.objectFormat = sha256`)",
            "SHA-1 repositories only",
        ),
    ] {
        let repo = TestRepo::empty();
        std::fs::remove_dir_all(repo.path().join(".git")).unwrap();
        repo.git(&["init", "-q", "-b", "main", init]);
        repo.git(&["config", "user.name", "Test User"]);
        repo.git(&["config", "user.email", "test@example.com"]);
        repo.write("README.md", "# sample\n");
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "initial"]);
        let refs = repo.git(&["for-each-ref"]);
        let objects = repo.git(&["count-objects", "-v"]);
        for args in [
            &["start", "Add a search command"][..],
            &["list"][..],
            &["status"][..],
        ] {
            let err = repo.fails(args, 1);
            assert!(
                err.contains(says) && err.contains("does not support"),
                "{init} {args:?}: {err}"
            );
            assert!(err.contains(hint), "{err}");
        }
        assert_eq!(repo.git(&["for-each-ref"]), refs);
        assert_eq!(repo.git(&["count-objects", "-v"]), objects);
    }
}

/// This machine's host name, as git-tlv4 writes it into its worktree locks.
fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_owned()
}

/// A working tree whose directory was deleted still holds its branch for git: the tool says
/// so and names `git worktree prune`; one that git-tlv4 made itself, whose process is gone,
/// it forgets by itself.
#[test]
fn a_deleted_worktree_is_named_as_such_or_pruned_when_it_was_ours() {
    let repo = TestRepo::new();
    let sid = repo.start("full-lifecycle", "Add a search command");
    let branch = format!("tlv4/{sid}");
    let gone = tempfile::tempdir().unwrap();
    let wt = gone.path().join("wt");
    repo.git(&["worktree", "add", "-q", wt.to_str().unwrap(), &branch]);
    std::fs::remove_dir_all(&wt).unwrap();
    assert!(
        repo.git(&["worktree", "list", "--porcelain"])
            .contains("prunable")
    );
    let before = repo.snapshot();
    let err = repo.fails(&["abort"], 1);
    assert!(
        err.contains("no longer exists") && err.contains("git worktree prune"),
        "{err}"
    );
    assert!(!err.contains("switch that working tree"), "{err}");
    assert_eq!(repo.snapshot(), before);
    repo.git(&["worktree", "prune"]);
    repo.ok(&["task", "claim", "RESEARCH-001"]);

    // The same, locked by a git-tlv4 process of this host that is gone: the tool's own.
    repo.git(&["worktree", "add", "-q", wt.to_str().unwrap(), &branch]);
    let reason = format!("git-tlv4 pid {} on {}", crate::common::dead_pid(), host());
    repo.git(&[
        "worktree",
        "lock",
        "--reason",
        &reason,
        wt.to_str().unwrap(),
    ]);
    std::fs::remove_dir_all(&wt).unwrap();
    repo.ok(&["task", "complete", "RESEARCH-001"]);
    assert!(
        !repo
            .git(&["worktree", "list", "--porcelain"])
            .contains(wt.to_str().unwrap()),
        "the tool's own gone checkout is forgotten"
    );
    // Locked by someone else: kept, and the hint says how to let go of it.
    repo.git(&["worktree", "add", "-q", wt.to_str().unwrap(), &branch]);
    repo.git(&["worktree", "lock", "--reason", "mine", wt.to_str().unwrap()]);
    std::fs::remove_dir_all(&wt).unwrap();
    let err = repo.fails(&["abort"], 1);
    assert!(
        err.contains("git worktree unlock") && err.contains("git worktree prune"),
        "{err}"
    );
    repo.fsck();
}

/// What the user put in the repository's configuration is the user's to fix: exit 1 with the
/// file named (and the line and key of a value), never 255, and nothing written.
#[test]
fn bad_configuration_files_are_user_errors_naming_file_line_and_key() {
    // (what to write where, what the error must say)
    let cases: &[(&str, &[u8], &str)] = &[
        (".tlv4", b"x\n", ".tlv4: is a file"),
        (".tlv4/specs", b"x\n", ".tlv4/specs: is a file"),
        (
            ".tlv4.toml",
            b"[session]\nmax_parallel = 2 # \xff\xfe\n",
            ".tlv4.toml: line 2: is not UTF-8",
        ),
        (".tlv4.toml/x", b"", ".tlv4.toml: is a directory"),
        (
            ".tlv4/specs/pipelines.toml/x",
            b"",
            "pipelines.toml: is a directory",
        ),
        (
            ".tlv4/specs/pipelines.toml",
            b"schema = 1 # \xff\n",
            "pipelines.toml: line 1: is not UTF-8",
        ),
        (
            ".tlv4/specs/roles/writer.md/x",
            b"",
            "writer.md: is a directory",
        ),
        (".tlv4/specs/roles", b"x\n", ".tlv4/specs/roles: is a file"),
        (
            ".tlv4.toml",
            b"[session]\nsupervision = true\n\nmax_parallel = 0\n",
            ".tlv4.toml:4: [session] max_parallel = 0: must be at least 1",
        ),
        (
            ".tlv4.toml",
            b"[session]\npipeline = \"nope\"\n",
            ".tlv4.toml:2: [session] pipeline = \"nope\": unknown pipeline `nope`",
        ),
        (
            ".tlv4.toml",
            b"# c\n[session]\ncompletion = \"nope\"\n",
            ".tlv4.toml:3: [session] completion = \"nope\": unknown completion action `nope`",
        ),
        (
            ".tlv4.toml",
            b"[snapshot]\nmax_file_size = \"lots\"\n",
            ".tlv4.toml:2: [snapshot] max_file_size = \"lots\": not a size",
        ),
        (
            ".tlv4.toml",
            b"[snapshot]\nmax_files = 0\n",
            ".tlv4.toml:2: [snapshot] max_files = 0: must be at least 1",
        ),
        (
            ".tlv4.toml",
            b"[roles]\n\nnotarole = \"builtin\"\n",
            ".tlv4.toml:3: [roles] notarole = \"builtin\": `notarole` is not a role",
        ),
    ];
    for (path, bytes, says) in cases {
        let repo = TestRepo::new();
        match path.strip_suffix("/x") {
            Some(dir) => std::fs::create_dir_all(repo.path().join(dir)).unwrap(),
            None => {
                let p = repo.path().join(path);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, bytes).unwrap();
            }
        }
        // Overrides run only once trusted (where trust covers them): trusting what cannot be
        // read must fail the same way, or let `start` find it.
        let trust = repo.tlv4(&["trust"]);
        assert_ne!(trust.status.code(), Some(255), "{path}: trust: {trust:?}");
        let before = untouched(&repo);
        let err = repo.fails(&["start", "Add a search command"], 1);
        assert!(err.contains(says), "{path}: {err}");
        assert_eq!(untouched(&repo), before, "{path}");
    }

    // A value from git config names its key.
    let repo = TestRepo::new();
    repo.git(&["config", "tlv4.completion", "nope"]);
    let err = repo.fails(&["start", "Add a search command"], 1);
    assert!(
        err.contains("git config tlv4.completion: unknown completion action"),
        "{err}"
    );

    // A committed `.tlv4` file would be replaced by the session folder on the session branch.
    let repo = TestRepo::new();
    repo.write(".tlv4", "mine\n");
    repo.git(&["add", ".tlv4"]);
    repo.git(&["commit", "-q", "-m", "a file named .tlv4"]);
    std::fs::remove_file(repo.path().join(".tlv4")).unwrap();
    let before = untouched(&repo);
    let err = repo.fails(&["start", "Add a search command"], 1);
    assert!(
        err.contains("`.tlv4` is a file in the commit HEAD is on"),
        "{err}"
    );
    assert_eq!(untouched(&repo), before);
}

/// `demo --dir` makes its sample only in an empty or new directory: a used one (here an
/// existing repository with a file of the user's) is refused with nothing changed. And the
/// demo runs the builtin agent it announces, whatever agents the user's global git config
/// chooses.
#[test]
fn demo_refuses_a_used_directory_and_runs_the_builtin_agent() {
    let repo = TestRepo::new();
    repo.write("notes.txt", "mine\n");
    repo.write("README.md", "# my own readme\n");
    let before = untouched(&repo);
    for dir in [".", repo.path().to_str().unwrap()] {
        let err = repo.fails(&["demo", "--dir", dir], 1);
        assert!(
            err.contains("is not empty") && err.contains("nothing was changed"),
            "{err}"
        );
        assert_eq!(untouched(&repo), before);
        assert_eq!(
            std::fs::read_to_string(repo.path().join("README.md")).unwrap(),
            "# my own readme\n"
        );
    }

    let global = repo.home.path().join("gitconfig");
    std::fs::write(
        &global,
        "[tlv4]\n\tagent = claude\n\tagent = executor=codex\n",
    )
    .unwrap();
    let dir = repo.home.path().join("demo");
    let mut demo = repo.tlv4_cmd(&["demo", "--dir", dir.to_str().unwrap()]);
    // The demo completes (exit 0) once its sample's tests ran, which needs cargo.
    let out = crate::common::toolchain(&mut demo)
        .env("GIT_CONFIG_GLOBAL", &global)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(": completed ("), "{stdout}");
    let cost = crate::common::hermetic(crate::common::BIN, &dir, repo.home.path())
        .env("GIT_CONFIG_GLOBAL", &global)
        .args(["cost", "--by", "agent", "--json"])
        .output()
        .unwrap();
    let cost: serde_json::Value = serde_json::from_slice(&cost.stdout).unwrap();
    let text = cost.to_string();
    assert!(
        text.contains("builtin") && !text.contains("claude") && !text.contains("codex"),
        "{text}"
    );
}

/// A repository with a submodule: the agent's checkout and the tester's have it checked out
/// at the commit the gitlink records, the tests that read it pass, and the agent's work is
/// recorded with the gitlink unchanged.
#[test]
fn submodules_are_checked_out_in_the_agents_and_the_testers_checkouts() {
    let sub = TestRepo::new();
    sub.write("answer.txt", "42\n");
    sub.git(&["add", "-A"]);
    sub.git(&["commit", "-q", "-m", "the answer"]);
    let pinned = sub.git(&["rev-parse", "HEAD"]).trim().to_owned();
    let repo = TestRepo::new();
    repo.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        sub.path().to_str().unwrap(),
        "vendor/sub",
    ]);
    repo.write("app/__init__.py", "");
    repo.write("tests/__init__.py", "");
    repo.write(
        "tests/test_sub.py",
        "import unittest\n\n\nclass Sub(unittest.TestCase):\n    def test_answer(self):\n        with open('vendor/sub/answer.txt') as f:\n            self.assertEqual(f.read(), '42\\n')\n",
    );
    repo.write(
        ".tlv4.toml",
        &format!(
            "[agents.scripted]\ndriver = \"command\"\nprogram = \"{}\"\ntimeout = \"20s\"\n[roles]\nexecutor = \"scripted\"\n",
            crate::common::fixture("scripted-agent")
        ),
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "a submodule and its test"]);
    // Later commits of the submodule are not what the gitlink records.
    sub.write("answer.txt", "43\n");
    sub.git(&["commit", "-q", "-am", "another answer"]);
    repo.ok(&["trust"]);
    let out = repo
        .tlv4_cmd(&[
            "start",
            "--pipeline",
            "impl-only",
            "--yes",
            "--completion",
            "keep",
            "use the answer",
        ])
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "protocol.file.allow")
        .env("GIT_CONFIG_VALUE_0", "always")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let sid = repo.rows(&["list", "--json"], "sessions")[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let test = repo.task(&sid, "TEST-001");
    assert_eq!(test["status"], "completed", "{test}\n{stderr}");
    let tip = format!("tlv4/{sid}");
    let link = repo.git(&["ls-tree", &tip, "vendor/sub"]);
    assert!(
        link.starts_with(&format!("160000 commit {pinned}")),
        "{link}"
    );
    let agent_file = repo.git(&["ls-tree", "-r", "--name-only", &tip]);
    assert!(agent_file.contains("scripted-IMPL-001.txt"), "{agent_file}");
    let record = repo.git(&[
        "show",
        &format!("{tip}:.tlv4/sessions/{sid}/artifacts/test-runs/1.json"),
    ]);
    assert!(
        record.contains("\"passed\": 1") || record.contains("\"passed\":1"),
        "{record}"
    );
    repo.fsck();
}
