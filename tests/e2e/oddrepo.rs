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
