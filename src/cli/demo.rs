//! `git tlv4 demo`: a sample repository in a temporary directory, with a session run in it.

use std::path::Path;

use crate::error::{Error, Result};
use crate::model::{Event, EventKind, Message, Owner, TaskResult, TaskStatus};
use crate::store::Store;

use super::Ctx;

/// Arguments of `demo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Make the sample repository here instead of a new temporary directory
    #[arg(long, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
}

const SAMPLE: &[(&str, &str)] = &[
    ("README.md", "# notes\n\nA tiny command-line note keeper.\n"),
    (
        "Cargo.toml",
        "[package]\nname = \"notes\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    ),
    (
        "src/main.rs",
        "fn main() {\n    let args: Vec<String> = std::env::args().skip(1).collect();\n    println!(\"{}\", notes::add(&args.join(\" \")));\n}\n",
    ),
    (
        "src/lib.rs",
        "/// Formats a note.\npub fn add(text: &str) -> String {\n    format!(\"- {text}\")\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn formats() {\n        assert_eq!(super::add(\"x\"), \"- x\");\n    }\n}\n",
    ),
];

fn make_sample(dir: &Path) -> Result<()> {
    for (path, text) in SAMPLE {
        let file = dir.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| Error::io("cannot create the sample", e))?;
        }
        std::fs::write(&file, text).map_err(|e| Error::io("cannot create the sample", e))?;
    }
    crate::git::run(dir, &["init", "-q", "-b", "main"])?;
    crate::git::run(dir, &["add", "-A"])?;
    crate::git::run(
        dir,
        &[
            "-c",
            "user.name=tlv4 demo",
            "-c",
            "user.email=demo@tlv4.invalid",
            "commit",
            "-q",
            "-m",
            "Sample project",
        ],
    )?;
    Ok(())
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let dir = match args.dir {
        Some(d) => {
            std::fs::create_dir_all(&d)
                .map_err(|e| Error::io(format!("cannot create {}", d.display()), e))?;
            d
        }
        None => tempfile::Builder::new()
            .prefix("tlv4-demo-")
            .tempdir()
            .map_err(|e| Error::io("cannot make a temporary directory", e))?
            .keep(),
    };
    ctx.ui
        .status(format!("sample repository: {}", dir.display()));
    make_sample(&dir)?;
    let store = Store::discover(&dir)?;
    let args = super::start::Args {
        pipeline: Some("full-lifecycle".into()),
        no_supervision: false,
        no_run: true,
        text: "Add a search command to the notes tool".into(),
    };
    let (sid, _) = super::start::start(&store, &args)?;
    ctx.ui.status(format!("started {sid}"));

    // Walk the first task through the plumbing a worker uses.
    let research: crate::model::TaskId = "RESEARCH-001".parse().expect("a valid id");
    store.transact(&sid, |txn| {
        let t = txn.state.task_mut(&research)?;
        t.status = TaskStatus::InProgress;
        t.attempts += 1;
        t.owner = Some(Owner {
            host: crate::host::name(),
            pid: std::process::id(),
            started_at: crate::clock::now_rfc3339(),
        });
        Ok(Some(Event::task(
            EventKind::TaskClaimed,
            t,
            "Claimed by the demo",
        )))
    })?;
    store.send_message(
        &sid,
        &Message {
            id: crate::clock::unique_id(),
            ts: crate::clock::now_rfc3339(),
            from: "analyst".into(),
            to: None,
            kind: "research_ready".into(),
            summary: "Rust crate with one library function and one test".into(),
            data: Some(
                serde_json::json!({ "languages": { "Rust": 2 }, "test_framework": "cargo" }),
            ),
        },
    )?;
    store.transact(&sid, |txn| {
        txn.write_file(
            "spec/discovery-context.json",
            b"{\n  \"languages\": {\"Rust\": 2},\n  \"test_framework\": \"cargo\"\n}\n".to_vec(),
        )?;
        let t = txn.state.task_mut(&research)?;
        t.status = TaskStatus::Completed;
        t.owner = None;
        t.result = Some(TaskResult {
            summary: "Scanned the sample".into(),
            reason: None,
            artifacts: vec!["spec/discovery-context.json".into()],
            finished_at: crate::clock::now_rfc3339(),
        });
        Ok(Some(Event::task(
            EventKind::TaskCompleted,
            t,
            "Scanned the sample\nUnblocked: DRAFT-001",
        )))
    })?;

    let (tip, state) = store.read_state(&sid)?;
    let p = state.progress();
    let mut out = format!(
        "session {sid}: {}/{} tasks completed, tip {}\n\n",
        p.completed,
        p.total,
        super::short(&tip.to_string())
    );
    out.push_str("events (newest first):\n");
    for e in store.log(&sid, None)? {
        out.push_str(&format!("  {} {}\n", super::short(&e.commit), e.subject));
    }
    out.push_str(&format!(
        "\nthe builtin agents and the scheduling loop are not part of this build yet; this demo\n\
         walked RESEARCH-001 through the worker plumbing by hand.\n\n\
         look around:\n  cd {}\n  git tlv4 status\n  git log --graph --oneline tlv4/{sid}\n  \
         git notes --ref=tlv4/{sid} show tlv4/{sid}~1\n  git show tlv4/{sid}:.tlv4/sessions/{sid}/spec/discovery-context.json\n",
        dir.display()
    ));
    ctx.ui.out(out.trim_end());
    Ok(())
}
