//! Starting a session: analyse the text, dispatch the pipeline, create the branch.

use std::collections::BTreeMap;

use super::analysis;
use super::pipeline::{PipelineSpec, Supervision};
use tlv4_core::error::{Error, Result};
use tlv4_core::model::{
    Completion, Control, Event, EventKind, Session, SessionId, Settings, State,
};
use tlv4_core::store::Store;

/// How to start.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// The pipeline; chosen from the text when `None`.
    pub pipeline: Option<String>,
    /// Leave out the checkpoints.
    pub no_supervision: bool,
    /// Approve gates whose verdict passes.
    pub yes: bool,
    /// Overrides `session.max_parallel`.
    pub max_parallel: Option<u32>,
    /// Overrides `[budget] session_usd`.
    pub budget_usd: Option<f64>,
    /// Overrides `[budget] session_tokens`.
    pub budget_tokens: Option<u64>,
    /// Overrides `session.completion`.
    pub completion: Option<Completion>,
    /// `--agent` values, kept for the session's later runs.
    pub agents: Vec<String>,
    /// `--replay SID`, kept likewise.
    pub replay: Option<String>,
    /// Whether code tasks' agents get their CLI's shell (the caller decides: where the
    /// kernel's sandbox is full); kept as the session's `settings.shell`.
    pub shell: bool,
    /// Overrides `[best_of]`.
    pub best_of: Option<tlv4_core::model::BestOf>,
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

/// Creates the session for `text` and returns its id and first state.
pub fn start(store: &Store, text: &str, opts: &StartOptions) -> Result<(SessionId, State)> {
    start_with(store, text, opts, None)
}

/// [`start`] with `conf`, the working tree's configuration, when the caller has read it
/// already (`None`: read here, once the text and the base commit passed their checks).
pub fn start_with(
    store: &Store,
    text: &str,
    opts: &StartOptions,
    conf: Option<&tlv4_core::trust::Configuration>,
) -> Result<(SessionId, State)> {
    let text = text.trim();
    if text.is_empty() {
        return Err(Error::Invalid(
            "the task text is empty; say what the team should do".into(),
        ));
    }
    let base = store.head_commit()?;
    // The session folder goes to `.tlv4/sessions/<SID>/` of the base tree: a committed file
    // there would be replaced by it on the session branch.
    let base_tree = store.commit_tree(base)?;
    for path in [".tlv4", ".tlv4/sessions"] {
        if store.read_blob_at(base_tree, path)?.is_some() {
            return Err(Error::state(
                format!(
                    "`{path}` is a file in the commit HEAD is on ({}), where git tlv4 keeps its \
                     session folders; nothing was changed",
                    &base.to_string()[..7]
                ),
                Some(format!(
                    "rename it in a commit of your own (`git mv {path} NEW-NAME && git commit`), then start again"
                )),
            ));
        }
    }
    // What the session runs with from now on: pinned in its folder and a local ref.
    let read;
    let conf = match conf {
        Some(c) => c,
        None => {
            read = tlv4_core::trust::Configuration::read(store.workdir())?;
            &read
        }
    };
    let (pinned, config) = (&conf.files, &conf.config);
    let spec = PipelineSpec::from_files(pinned)?;
    // Every file of the repository's configuration is read before anything is written: a
    // broken override is found now, not by the task that first needs it.
    crate::agents::prompt::RoleSpecs::from_files(pinned)?;
    tlv4_review::RuleSet::from_files(pinned)?;
    // A pipeline the configuration names must exist (the default may be missing from a
    // repository's own pipelines file, as long as `--pipeline` or the text picks another).
    if config.is_set("session.pipeline") && !spec.has(&config.session.pipeline) {
        let known: Vec<&str> = spec.pipelines().map(|(name, _)| name).collect();
        return Err(config.value_error(
            "session.pipeline",
            format!(
                "unknown pipeline `{}`; known pipelines: {}",
                config.session.pipeline,
                known.join(", ")
            ),
        ));
    }
    let (pipeline, reason) = match &opts.pipeline {
        Some(p) => (p.clone(), "named with --pipeline".to_owned()),
        None => analysis::select_pipeline(text, &config.session.pipeline),
    };
    let analysis = analysis::analyze(text, reason);
    let supervision = if opts.no_supervision || !config.session.supervision {
        Supervision::Off
    } else {
        Supervision::On
    };
    let control = control(opts, config, &analysis)?;
    let date = tlv4_core::clock::today_compact();
    let base_tree = store.commit_tree(base)?;
    let mut n = 1;
    loop {
        // Free against refs and the base tree; the create below is the final, atomic check.
        let (sid, taken) = store.free_id(text, &date, n, base_tree)?;
        n = taken + 1;
        let mut tasks = spec.dispatch(&pipeline, supervision, &sid, text)?;
        // The discuss round set and each round's mode, as the configuration chooses them.
        crate::quality::discuss::assign_rounds(
            &mut tasks,
            config.discuss.rounds.as_deref().unwrap_or("current"),
            &config.discuss.mode,
        )
        .map_err(|(key, message)| config.value_error(&key, message))?;
        let first = First {
            sid: &sid,
            text,
            base,
            pipeline: &pipeline,
            supervision,
            analysis: &analysis,
            control: &control,
        };
        let steps = first.events(&tasks, pinned);
        match store.create_session(base, steps) {
            Ok(written) => {
                tlv4_core::trust::pin(store, &sid, pinned, &opts.agents)?;
                return Ok((sid, written.state));
            }
            // Someone took the id between the check and the create: take the next one.
            Err(Error::Conflict { .. }) if n < 100 => continue,
            Err(e) => return Err(e),
        }
    }
}

/// The session's control settings: the options, else the configuration.
fn control(
    opts: &StartOptions,
    config: &tlv4_core::config::Config,
    analysis: &tlv4_core::model::Analysis,
) -> Result<Control> {
    let completion = opts
        .completion
        .clone()
        .unwrap_or(config.session.completion.clone());
    if let Completion::Other(name) = &completion {
        return Err(Error::Invalid(format!(
            "unknown completion action `{name}`; use one of {}",
            Completion::known_names().join(", ")
        )));
    }
    let max_parallel = opts.max_parallel.unwrap_or(config.session.max_parallel);
    if max_parallel == 0 {
        return Err(Error::Invalid("max_parallel must be at least 1".into()));
    }
    let best_of = match &opts.best_of {
        Some(b) => b.several().then(|| b.clone()),
        None => config
            .best_of
            .read()
            .map_err(|m| config.value_error("best_of", m))?,
    };
    Ok(Control {
        analysis: Some(analysis.clone()),
        settings: Settings {
            best_of,
            budget_usd: opts.budget_usd.or(config.budget.session_usd),
            budget_tokens: opts.budget_tokens.or(config.budget.session_tokens),
            max_parallel,
            auto_approve: opts.yes,
            completion,
            agents: opts.agents.clone(),
            replay: opts.replay.clone(),
            shell: opts.shell,
        },
        ..Control::default()
    })
}

/// What the first two events of a new session say: started, then its tasks dispatched.
struct First<'a> {
    sid: &'a SessionId,
    text: &'a str,
    base: gix::ObjectId,
    pipeline: &'a str,
    supervision: Supervision,
    analysis: &'a tlv4_core::model::Analysis,
    control: &'a Control,
}

impl First<'_> {
    /// The states, files and events of the session's first two commits, `tasks` dispatched
    /// and the configuration `pinned`.
    fn events(
        &self,
        tasks: &[tlv4_core::model::Task],
        pinned: &tlv4_core::trust::Files,
    ) -> Vec<(State, BTreeMap<String, Vec<u8>>, Event)> {
        let First {
            sid,
            text,
            base,
            pipeline,
            supervision,
            analysis,
            control,
        } = *self;
        let now = tlv4_core::clock::now_rfc3339();
        let session = Session::new(
            sid.clone(),
            text,
            pipeline,
            supervision == Supervision::On,
            base.to_string(),
            now,
        );
        let started = State {
            session: session.clone(),
            tasks: BTreeMap::new(),
            control: control.clone(),
        };
        let dispatched = State {
            session,
            tasks: tasks.iter().map(|t| (t.id.clone(), t.clone())).collect(),
            control: control.clone(),
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
        let mut files = initial_files();
        files.insert(
            tlv4_core::trust::LOCK.into(),
            tlv4_core::trust::lock_text(pinned).into_bytes(),
        );
        files.insert(
            "task-analysis.json".into(),
            task_analysis_json(text, pipeline, analysis, tasks),
        );
        vec![
        (
            started,
            files,
            Event::session(
                EventKind::SessionStarted,
                format!(
                    "Task: {text}\nPipeline: {pipeline} ({})\nComplexity: {} ({})\nBase: {base}",
                    analysis.pipeline_reason, analysis.level, analysis.score
                ),
            )
            .with("Pipeline", pipeline)
            .with("Base", base.to_string()),
        ),
        (
            dispatched,
            BTreeMap::new(),
            Event::session(EventKind::TasksDispatched, format!("{} tasks:\n{}", tasks.len(), listing.join("\n")))
                .with("Pipeline", pipeline),
        ),
    ]
    }
}

/// `task-analysis.json`, in the shape the reference's analysis step writes.
fn task_analysis_json(
    text: &str,
    pipeline: &str,
    a: &tlv4_core::model::Analysis,
    tasks: &[tlv4_core::model::Task],
) -> Vec<u8> {
    let graph: serde_json::Map<String, serde_json::Value> = tasks
        .iter()
        .map(|t| {
            (
                t.id.to_string(),
                serde_json::json!({ "role": t.role, "blockedBy": t.blocked_by, "priority": t.priority }),
            )
        })
        .collect();
    let value = serde_json::json!({
        "task_description": text,
        "pipeline_type": pipeline,
        "pipeline_reason": a.pipeline_reason,
        "capabilities": a.capabilities,
        "dependency_graph": graph,
        "complexity": { "score": a.score, "level": a.level, "reasons": a.reasons },
    });
    let mut out = serde_json::to_vec_pretty(&value).expect("a JSON value serialises");
    out.push(b'\n');
    out
}
