//! `git tlv4 start`: create the session branch and dispatch the pipeline.

use std::collections::BTreeMap;

use crate::coordinator::{PipelineSpec, Supervision};
use crate::error::{Error, Result};
use crate::model::{Event, EventKind, SCHEMA_VERSION, Session, SessionId, SessionStatus, State};
use crate::store::{Store, session_ref};

use super::Ctx;

/// Arguments of `start`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Pipeline to run (see `git tlv4 pipelines`; default: `session.pipeline` in .tlv4.toml)
    #[arg(long, value_name = "NAME")]
    pub pipeline: Option<String>,
    /// Leave out the supervisor checkpoints
    #[arg(long)]
    pub no_supervision: bool,
    /// Stop after dispatching the tasks
    #[arg(long)]
    pub no_run: bool,
    /// What the team should do
    #[arg(value_name = "TASK TEXT")]
    pub text: String,
}

/// Files every session starts with, relative to its folder.
fn initial_files() -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for (name, title) in [
        ("learnings", "Learnings"),
        ("decisions", "Decisions"),
        ("conventions", "Conventions"),
        ("issues", "Issues"),
    ] {
        files.insert(
            format!("wisdom/{name}.md"),
            format!("# {title}\n").into_bytes(),
        );
    }
    files.insert(
        "explorations/cache-index.json".into(),
        b"{\n  \"entries\": []\n}\n".to_vec(),
    );
    files
}

/// Creates the session and returns its id.
pub fn start(store: &Store, args: &Args) -> Result<(SessionId, State)> {
    let text = args.text.trim();
    if text.is_empty() {
        return Err(Error::Invalid(
            "the task text is empty; say what the team should do".into(),
        ));
    }
    let base = store.head_commit()?;
    let config = crate::config::Config::load(store.workdir())?;
    let spec = PipelineSpec::load(store.workdir())?;
    let pipeline = args.pipeline.clone().unwrap_or(config.session.pipeline);
    let supervision = if args.no_supervision || !config.session.supervision {
        Supervision::Off
    } else {
        Supervision::On
    };
    let date = crate::clock::today_compact();
    let mut n = 1;
    loop {
        let sid = SessionId::from_text(text, &date, n);
        n += 1;
        if store.try_ref(&session_ref(&sid))?.is_some() {
            continue;
        }
        let tasks = spec.dispatch(&pipeline, supervision, &sid, text)?;
        let now = crate::clock::now_rfc3339();
        let session = Session {
            schema: SCHEMA_VERSION,
            id: sid.clone(),
            task: text.to_owned(),
            pipeline: pipeline.clone(),
            supervision: supervision == Supervision::On,
            status: SessionStatus::Active,
            base: base.to_string(),
            created_at: now.clone(),
            updated_at: now,
            events: 0,
            forked_from: None,
        };
        let started = State {
            session: session.clone(),
            tasks: BTreeMap::new(),
        };
        let dispatched = State {
            session,
            tasks: tasks.iter().map(|t| (t.id.clone(), t.clone())).collect(),
        };
        let listing: Vec<String> = tasks
            .iter()
            .map(|t| {
                let deps: Vec<&str> = t.blocked_by.iter().map(|d| d.as_str()).collect();
                if deps.is_empty() {
                    format!("{} ({})", t.id, t.role)
                } else {
                    format!("{} ({}) <- {}", t.id, t.role, deps.join(", "))
                }
            })
            .collect();
        let steps = vec![
            (
                started,
                initial_files(),
                Event::session(
                    EventKind::SessionStarted,
                    format!("Task: {text}\nPipeline: {pipeline}\nBase: {base}"),
                )
                .with("Pipeline", pipeline.clone())
                .with("Base", base.to_string()),
            ),
            (
                dispatched,
                BTreeMap::new(),
                Event::session(
                    EventKind::TasksDispatched,
                    format!("{} tasks:\n{}", tasks.len(), listing.join("\n")),
                )
                .with("Pipeline", pipeline.clone()),
            ),
        ];
        match store.create_session(base, steps) {
            Ok(written) => return Ok((sid, written.state)),
            // Someone took the id between the check and the create: take the next one.
            Err(Error::Conflict { .. }) if n < 100 => continue,
            Err(e) => return Err(e),
        }
    }
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let store = ctx.store()?;
    let (sid, state) = start(&store, &args)?;
    let head = store.head_branch();
    ctx.ui.status(format!(
        "started session {sid}: pipeline {}{}, {} tasks, from {} {}",
        state.session.pipeline,
        if state.session.supervision {
            ""
        } else {
            " without supervision"
        },
        state.tasks.len(),
        super::short(&state.session.base),
        head.as_deref()
            .map_or("(detached HEAD)".to_owned(), |h| format!(
                "({})",
                h.trim_start_matches("refs/heads/")
            )),
    ));
    if store.repo().is_dirty().unwrap_or(false) {
        ctx.ui.warn("the working tree has uncommitted changes; the session forks from the last commit and does not see them");
    }
    if !args.no_run {
        ctx.ui.status("the scheduling loop is not part of this build yet: stopping after dispatch, as with --no-run");
    }
    ctx.ui.status(format!(
        "see it with `git tlv4 status` or `git log tlv4/{sid}`"
    ));
    ctx.ui.out(sid.as_str());
    Ok(())
}
