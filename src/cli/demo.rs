//! `git tlv4 demo`: a sample repository in a temporary directory, with a session run in it.

use std::path::Path;

use crate::coordinator::{StartOptions, start};
use tlv4_core::error::{Error, Result};
use tlv4_core::model::Completion;
use tlv4_store::store::Store;

use super::Ctx;
use super::drive::{CompletionArg, RunFlags};
use tlv4_core::text::short_id;

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
    tlv4_core::git::run(dir, &["init", "-q", "-b", "main"])?;
    tlv4_core::git::run(dir, &["add", "-A"])?;
    tlv4_core::git::run(
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
            // The sample is written and committed into `DIR`: only into one that holds
            // nothing, never over the user's files or onto a repository of theirs.
            match std::fs::read_dir(&d) {
                Ok(mut entries) => {
                    if entries.next().is_some() {
                        return Err(Error::state(
                            format!(
                                "`{}` is not empty; the demo makes its sample repository only in an empty or new directory, and nothing was changed",
                                d.display()
                            ),
                            Some("pass a new directory with --dir, or leave --dir out for a temporary one".to_owned()),
                        ));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    std::fs::create_dir_all(&d)
                        .map_err(|e| Error::io(format!("cannot create {}", d.display()), e))?;
                }
                Err(e) => {
                    return Err(Error::UserFile {
                        path: d.clone(),
                        problem: format!("cannot be used for the demo: {e}"),
                        hint: Some("pass a new directory with --dir".to_owned()),
                    });
                }
            }
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
    // The sample is ours, made just now: its tests (cargo test) may run.
    let conf = tlv4_core::trust::Configuration::read(store.workdir())?;
    let (_, setup) = super::trust::head_setup(&store, &conf.config);
    tlv4_core::trust::trust_read(store.workdir(), &conf.files, &conf.config, &setup)?;
    ctx.ui
        .status("trusted the sample repository (its tests run: `git tlv4 trust --show` there)");
    // The demo runs the builtin agent it announces, whatever agents the user chose for
    // their own repositories (`git config --global tlv4.agent …`): named for the session as
    // `--agent builtin` would, it replaces every other choice, now and on a later `resume`.
    let builtin = vec!["builtin".to_owned()];
    let opts = StartOptions {
        pipeline: Some("full-lifecycle".into()),
        yes: true,
        completion: Some(Completion::Keep),
        agents: builtin.clone(),
        ..StartOptions::default()
    };
    let (sid, _) = start(&store, "Add a search command to the notes tool", &opts)?;
    ctx.ui.status(format!(
        "started {sid} (full-lifecycle, builtin agent, gates approved when they pass)"
    ));
    let flags = RunFlags {
        no_run: false,
        completion: Some(CompletionArg::Keep),
        agent: builtin,
        ..RunFlags::default()
    };
    super::drive::drive(ctx, &store, &sid, &flags)?;

    let (tip, state) = store.read_state(&sid)?;
    let p = state.progress();
    let mut out = format!(
        "\nsession {sid}: {} ({}/{} tasks completed, {} failed), tip {}\n\n",
        state.session.status.as_str(),
        p.completed,
        p.total,
        p.failed,
        short_id(&tip.to_string())
    );
    out.push_str("tasks:\n");
    for t in state.ordered() {
        let summary = t
            .result
            .as_ref()
            .map(|r| r.reason.clone().unwrap_or(r.summary.clone()))
            .unwrap_or_default();
        out.push_str(&format!(
            "  {:<16} {:<12} {:<11} {}\n",
            t.id.as_str(),
            t.role,
            state.display_status(t),
            summary
        ));
    }
    out.push_str("\nhistory (oldest first):\n");
    for e in store.log(&sid, None)?.iter().rev() {
        out.push_str(&format!("  {} {}\n", short_id(&e.commit), e.subject));
    }
    let dir_in_tree = tlv4_store::store::session_dir(&sid);
    let files = store.read_folder(tip_tree(&store, tip)?, &dir_in_tree, &["tasks", "runs"])?;
    out.push_str(&format!(
        "\nartifacts (in the branch, under {dir_in_tree}/):\n"
    ));
    for name in files.keys().filter(|k| {
        k.starts_with("spec/")
            || k.starts_with("plan/")
            || k.starts_with("artifacts/")
            || k.starts_with("discussions/")
    }) {
        out.push_str(&format!("  {name}\n"));
    }
    if let Some(pause) = &state.control.pause {
        out.push_str(&format!("\npaused ({}): {}\n", pause.kind, pause.reason));
    }
    out.push_str(&format!(
        "\nlook around:\n  cd {}\n  git tlv4 status\n  git tlv4 log\n  git log --graph --oneline tlv4/{sid}\n  \
         git show tlv4/{sid}:{dir_in_tree}/spec/product-brief.md\n  git notes --ref=tlv4/{sid} list\n",
        dir.display()
    ));
    ctx.ui.out(out.trim_end());
    Ok(())
}

fn tip_tree(store: &Store, tip: gix::ObjectId) -> Result<gix::ObjectId> {
    store.commit_tree(tip)
}
