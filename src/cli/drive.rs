//! Running a session from the command line: the loop, its progress display, and what to say
//! when it stops.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::Duration;

use crate::agents::roster::{Overrides, Roster};
use crate::coordinator::complete::{self, Done};
use crate::coordinator::run::{self, Progress, RunEnd};
use tlv4_core::error::{Error, Result, exit};
use tlv4_core::model::{Completion, Role, SessionId};
use tlv4_core::store::Store;

use super::Ctx;

/// Flags shared by the commands that run the loop.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RunFlags {
    /// Record the decision only; do not run the pipeline on
    #[arg(long)]
    pub no_run: bool,
    /// Completion action when every task is done
    #[arg(long, value_enum, value_name = "ACTION")]
    pub completion: Option<CompletionArg>,
    /// The agent for every role (NAME), or for one role (ROLE=NAME); NAME is an agent of
    /// .tlv4.toml or a driver (claude, codex, gemini, qwen, opencode, aider, builtin)
    #[arg(long, value_name = "[ROLE=]NAME")]
    pub agent: Vec<String>,
    /// Replay the recorded agent runs of session SID instead of calling any agent
    #[arg(long, value_name = "SID")]
    pub replay: Option<String>,
    /// The agents of the session's best-of candidates (`--best-of` of `start`, kept in its
    /// settings), whose drivers the roster makes.
    #[arg(skip)]
    pub best_of: Vec<String>,
}

/// A completion action on the command line (`--completion`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompletionArg {
    /// Ask on a terminal; keep the session otherwise
    Interactive,
    /// Move the session to refs/tlv4/archive/<SID> and remove its branches
    Archive,
    /// Leave the session branch as it is
    Keep,
    /// Write the result without the run records on the branch tlv4-export/<SID>
    Export,
}

impl From<CompletionArg> for Completion {
    fn from(arg: CompletionArg) -> Completion {
        match arg {
            CompletionArg::Interactive => Completion::Interactive,
            CompletionArg::Archive => Completion::Archive,
            CompletionArg::Keep => Completion::Keep,
            CompletionArg::Export => Completion::Export,
        }
    }
}

/// The agents of a run with the repository configuration `conf` (the working tree's, or
/// the session's pinned one): `.tlv4.toml` changed by `--agent` and `--replay`. What the
/// repository supplies (agents it defines or names, the files they run, overrides of the
/// specs) must be trusted.
pub(crate) fn roster(
    store: &Store,
    conf: &tlv4_core::trust::Configuration,
    flags: &RunFlags,
) -> Result<Roster> {
    let root = store.workdir();
    let (files, config) = (&conf.files, &conf.config);
    let mut best_of = flags.best_of.clone();
    best_of.extend(config.best_of.agents.iter().cloned());
    let overrides = Overrides {
        agents: flags.agent.clone(),
        replay: flags.replay.clone(),
        best_of,
    };
    config.snapshot.limits()?;
    let specs = crate::agents::prompt::RoleSpecs::from_files(files)?;
    let known = crate::coordinator::roster_names();
    let roster = Roster::load_with(config, &overrides, root, Some(&specs), &known)?;
    let needed = tlv4_core::trust::needed(root, files, config, roster.configured_specs())?;
    tlv4_core::trust::check(&tlv4_core::trust::Stored::of(config), &needed)?;
    roster.preflight()?;
    roster.sandbox_required(config.sandbox.required)?;
    Ok(roster)
}

/// Runs the session's loop with progress on stderr, then reports how it ended.
pub(crate) fn drive(ctx: &Ctx<'_>, store: &Store, sid: &SessionId, flags: &RunFlags) -> Result<()> {
    drive_read(ctx, store, sid, flags, None)
}

/// [`drive`] with `read`, the working tree's configuration when the caller has just read it
/// and pinned the session to it (`start`), so that the command reads it once.
pub(crate) fn drive_read(
    ctx: &Ctx<'_>,
    store: &Store,
    sid: &SessionId,
    flags: &RunFlags,
    read: Option<tlv4_core::trust::Configuration>,
) -> Result<()> {
    if flags.no_run {
        ctx.ui.status(format!(
            "stopped after recording; continue with `git tlv4 resume --session {sid}`"
        ));
        return Ok(());
    }
    let (roster, mut conf, flags, worktrees) = session_roster_read(ctx, store, sid, flags, read)?;
    offer_trust_for_tests(ctx, store, sid, &mut conf, worktrees)?;
    let mut view = View::new(View::fancy(ctx));
    let opts = run::RunOptions {
        conf: Some(conf.clone()),
        worker: None,
    };
    let end = run::run(store, sid, roster, opts, &mut |p| view.show(ctx, p))?;
    view.clear();
    ctx.exit.set(exit_code(&end));
    match end {
        RunEnd::Completed => {
            let (tip, state) = store.read_state(sid)?;
            let p = state.progress();
            // Every task done is not the whole story: say what did not pass.
            let concerns = super::outcome::of(store, &state, tip)
                .map(|o| o.concerns)
                .unwrap_or_default();
            ctx.ui.status(format!(
                "session {sid} completed: {}/{} tasks{}",
                p.completed,
                p.total,
                if concerns.is_empty() {
                    String::new()
                } else {
                    ", but not everything passed (`git tlv4 status` has the outcome):".to_owned()
                }
            ));
            for c in &concerns {
                ctx.ui.status(format!("  {c}"));
            }
            let action = flags
                .completion
                .map_or(state.control.settings.completion.clone(), Completion::from);
            // `--yes` runs unattended to the end: nothing is asked, the session is kept.
            let action = match action {
                Completion::Interactive if state.control.settings.auto_approve => Completion::Keep,
                Completion::Interactive => ask_completion(ctx),
                action => action,
            };
            let done = complete::apply(store, sid, &action, conf.config.session.export_spec);
            let hooks = tlv4_core::hooks::Hooks::load(
                store.repo().common_dir(),
                store.workdir(),
                conf.config.hooks_path.as_deref(),
            );
            let (outcome, reference) = match &done {
                Ok(Done::Archived(r)) => ("archived", Some(r.clone())),
                Ok(Done::Kept) => ("kept", None),
                Ok(Done::Exported(b)) => ("exported", Some(b.clone())),
                Err(_) => ("kept", None),
            };
            let payload = serde_json::json!({
                "event": "completion", "session": sid, "action": action, "outcome": outcome,
                "ref": reference,
            });
            if let Some(run) = hooks.run("completion", &payload, store.workdir()) {
                let said = run.message.trim().to_owned();
                if !run.ok {
                    ctx.ui.warn(format!("the completion hook failed: {said}"));
                } else if !said.is_empty() {
                    ctx.ui.status(format!("completion hook: {said}"));
                }
            }
            match done {
                Ok(Done::Archived(r)) => ctx.ui.status(format!(
                    "archived: the session is kept at {r}; its branches are removed"
                )),
                Ok(Done::Kept) => ctx
                    .ui
                    .status(format!("kept: the session stays on branch tlv4/{sid}")),
                Ok(Done::Exported(b)) => ctx.ui.status(format!(
                    "exported: {} holds the result without the run records",
                    tlv4_core::store::refs::short_branch(&b)
                )),
                // The reference's rule: if the completion action fails, keep the session.
                Err(e) => {
                    ctx.ui.warn(format!(
                        "completion action `{action}` failed: {e}; the session is kept as it is"
                    ));
                }
            }
            Ok(())
        }
        RunEnd::Paused(p) => {
            ctx.ui
                .status(format!("session {sid} paused ({}): {}", p.kind, p.reason));
            ctx.ui.status("next:");
            for n in &p.next {
                ctx.ui.status(format!("  {n}"));
            }
            Ok(())
        }
        RunEnd::Aborted => {
            ctx.ui.status(format!("session {sid} is aborted"));
            Ok(())
        }
        RunEnd::RunningElsewhere(tasks) => Err(running_elsewhere(sid, &tasks)),
        RunEnd::Waiting(ready) => Err(waiting_for_others(sid, &ready)),
        RunEnd::Interrupted(signal, ids) => {
            let list: Vec<&str> = ids.iter().map(|t| t.as_str()).collect();
            Err(Error::Interrupted {
                signal,
                message: if list.is_empty() {
                    "nothing was running".into()
                } else {
                    format!("returned to pending: {}", list.join(", "))
                },
            })
        }
    }
}

/// The exit status of a run that ended with `end`, when it ended without an error: 0 when
/// every task is done, [`exit::WAITING`] or [`exit::STALLED`] when it paused, 1 when the
/// session was aborted under it.
pub(crate) fn exit_code(end: &RunEnd) -> i32 {
    match end {
        RunEnd::Completed => exit::OK,
        RunEnd::Paused(p) => exit::for_pause(&p.kind),
        RunEnd::Aborted => exit::ERROR,
        RunEnd::RunningElsewhere(_) | RunEnd::Waiting(_) => exit::CONFLICT,
        RunEnd::Interrupted(signal, _) => exit::for_signal(*signal),
    }
}

/// The agents session `sid` runs with here: the ones its start chose (when it started in
/// this repository) unless `flags` choose, with its pinned configuration, every one of them
/// trusted on this machine. Also returns that configuration and the flags in effect.
pub(crate) fn session_roster(
    ctx: &Ctx<'_>,
    store: &Store,
    sid: &SessionId,
    flags: &RunFlags,
) -> Result<(Roster, tlv4_core::trust::Configuration, RunFlags)> {
    let (roster, conf, flags, _) = session_roster_read(ctx, store, sid, flags, None)?;
    Ok((roster, conf, flags))
}

/// [`session_roster`] with `read`, the working tree's configuration when the session was
/// just pinned to it; else the working tree's files are read here, once, to compare with
/// the pinned ones. The last value says whether the configuration returned is also the
/// working tree's.
pub(crate) fn session_roster_read(
    ctx: &Ctx<'_>,
    store: &Store,
    sid: &SessionId,
    flags: &RunFlags,
    read: Option<tlv4_core::trust::Configuration>,
) -> Result<(Roster, tlv4_core::trust::Configuration, RunFlags, bool)> {
    // The agents chosen on the command line when the session started hold for its later
    // runs, unless this run chooses its own.
    let mut flags = flags.clone();
    if flags.agent.is_empty() && flags.replay.is_none() {
        let (_, state) = store.read_state(sid)?;
        let recorded = state.control.settings.agents.clone();
        // The session's settings travel with its branch; only a choice made here (kept in
        // the local pinned record) is the user's own.
        if !recorded.is_empty()
            && tlv4_core::trust::pinned_agents(store, sid).as_deref() != Some(recorded.as_slice())
        {
            return Err(Error::state(
                format!(
                    "session {sid} records the agents chosen when it started (--agent {}), and it was not started in this repository",
                    recorded.join(" --agent ")
                ),
                Some(
                    "choose this run's agents on the command line: `--agent NAME` (or `--agent builtin`)"
                        .into(),
                ),
            ));
        }
        flags.agent = recorded;
        flags.replay = state.control.settings.replay.clone();
    }
    if let Some(b) = store.read_state(sid)?.1.control.settings.best_of {
        flags.best_of = b.agents;
    }
    // The session runs with the configuration it started with, whatever the working tree
    // holds now.
    let (conf, changed) = match read {
        Some(conf) => (conf, Vec::new()),
        None => {
            let current = tlv4_core::trust::Files::read(store.workdir())?;
            let (files, changed) = tlv4_core::trust::pinned_against(store, sid, current)?;
            (
                tlv4_core::trust::Configuration::of(files, store.workdir())?,
                changed,
            )
        }
    };
    if !changed.is_empty() {
        ctx.ui.warn(format!(
            "the working tree's configuration differs from the one session {sid} started with ({}); the session runs with its own, pinned in {} (`git tlv4 resume --reconfigure` takes the working tree's)",
            changed.join(", "),
            tlv4_core::trust::LOCK
        ));
    }
    let roster = roster(store, &conf, &flags)?;
    if !roster.is_builtin() {
        let who: Vec<String> = roster
            .describe()
            .into_iter()
            .map(|(role, name)| format!("{role}={name}"))
            .collect();
        ctx.ui.status(format!("agents: {}", who.join(", ")));
    }
    Ok((roster, conf, flags, changed.is_empty()))
}

/// Before a run whose tester would run the repository's own test command in a repository
/// that is not trusted: on a terminal, show what would run and offer to trust it. Off a
/// terminal, or in a session started with `--yes` (which never stops at a question), nothing
/// is asked; the tester then fails its task saying why. `conf` is the configuration the run
/// read (its trust record is updated when the user trusts); `worktrees` says whether it is
/// also the working tree's, which trust covers (else that is read, once).
fn offer_trust_for_tests(
    ctx: &Ctx<'_>,
    store: &Store,
    sid: &SessionId,
    conf: &mut tlv4_core::trust::Configuration,
    worktrees: bool,
) -> Result<()> {
    let root = store.workdir();
    if tlv4_core::trust::Stored::of(&conf.config).trusted()
        || !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal())
    {
        return Ok(());
    }
    let (tip, state) = store.read_state(sid)?;
    if state.control.settings.auto_approve {
        return Ok(());
    }
    let testing = state.tasks.values().any(|t| {
        t.role == Role::Tester && !matches!(t.status, tlv4_core::model::TaskStatus::Completed)
    });
    if !testing {
        return Ok(());
    }
    let code = crate::agents::CodeTree::from_tree(store.repo(), store.commit_tree(tip)?)?;
    let Some((command, evidence)) = crate::quality::tester::detected_command(&code) else {
        return Ok(());
    };
    let read;
    let current = if worktrees {
        &*conf
    } else {
        read = tlv4_core::trust::Configuration::read(root)?;
        &read
    };
    let (_, setup) = super::trust::head_setup(store, &current.config);
    let covered = tlv4_core::trust::everything(root, &current.files, &current.config, &setup)?;
    let mut context = format!(
        "this repository is not trusted; its tests would run with your rights:\n  {command}   (from {evidence})\n"
    );
    if !covered.is_empty() {
        context.push_str("trust would also cover (details: `git tlv4 trust --show`):\n");
        for i in &covered {
            context.push_str(&format!("  {} ({})\n", i.path, i.why));
        }
    }
    let answer = ctx.ui.ask(&context, "trust this repository now? [y/N]");
    if matches!(answer.as_deref(), Some("y" | "Y" | "yes")) {
        let items = tlv4_core::trust::trust_read(root, &current.files, &current.config, &setup)?;
        // The run goes on with what was just stored, without reading it back.
        conf.config.trust_record = Some(tlv4_core::trust::record_of(&items).format());
        ctx.ui.status(format!(
            "trusted: {} file(s) and the repository's tests",
            items.len()
        ));
    }
    Ok(())
}

/// Asks for the completion action on a terminal; keeps the session otherwise.
fn ask_completion(ctx: &Ctx<'_>) -> Completion {
    let answer = ctx.ui.ask(
        "",
        "every task is done: [a]rchive, [k]eep, or [e]xport? [k]",
    );
    match answer.as_deref().and_then(|a| a.chars().next()) {
        Some('a' | 'A') => Completion::Archive,
        Some('e' | 'E') => Completion::Export,
        _ => Completion::Keep,
    }
}

/// Progress: bars on a terminal, one plain line per change otherwise.
pub(crate) struct View {
    bars: Option<(
        indicatif::MultiProgress,
        indicatif::ProgressBar,
        BTreeMap<String, indicatif::ProgressBar>,
    )>,
    /// What the loop last said it waits for, and the minutes left then (a plain view says
    /// it again when either changes).
    waited: Option<(String, u64)>,
}

impl View {
    /// Whether progress is drawn as bars: on a terminal that can redraw lines. A dumb one
    /// (`TERM=dumb`: Emacs shells, some CI logs) gets the plain lines, since indicatif draws
    /// nothing there, not even what it is asked to print above the bars.
    pub(crate) fn fancy(ctx: &Ctx<'_>) -> bool {
        !ctx.ui.is_quiet()
            && std::io::stderr().is_terminal()
            && std::env::var_os("TERM").is_some_and(|t| !t.is_empty() && t != "dumb")
            && !indicatif::ProgressDrawTarget::stderr().is_hidden()
    }

    pub(crate) fn new(fancy: bool) -> View {
        if !fancy {
            return View {
                bars: None,
                waited: None,
            };
        }
        let multi = indicatif::MultiProgress::new();
        let overall = multi.add(indicatif::ProgressBar::new(0));
        overall.set_style(
            indicatif::ProgressStyle::with_template("{bar:30.cyan/blue} {pos}/{len} tasks  {msg}")
                .expect("a valid template")
                .progress_chars("=> "),
        );
        View {
            bars: Some((multi, overall, BTreeMap::new())),
            waited: None,
        }
    }

    pub(crate) fn show(&mut self, ctx: &Ctx<'_>, p: Progress) {
        let Some((multi, overall, running)) = &mut self.bars else {
            match p {
                Progress::Started { task, role } => {
                    ctx.ui.status(format!("{task} started ({role})"))
                }
                Progress::Finished {
                    task,
                    ok,
                    summary,
                    seconds,
                } => ctx.ui.status(format!(
                    "{task} {} in {seconds:.1}s: {summary}",
                    if ok { "completed" } else { "FAILED" }
                )),
                Progress::Note(n) => ctx.ui.status(n),
                Progress::Waiting { why, left_ms } => {
                    let minutes = left_ms / 60_000;
                    if self.waited.as_ref() != Some(&(why.clone(), minutes)) {
                        ctx.ui.status(format!("{why}: {} left", countdown(left_ms)));
                        self.waited = Some((why, minutes));
                    }
                }
                Progress::Count { .. } | Progress::Tokens { .. } => {}
            }
            return;
        };
        match p {
            Progress::Started { task, role } => {
                let bar = multi.add(indicatif::ProgressBar::new_spinner());
                bar.set_style(
                    indicatif::ProgressStyle::with_template("  {spinner} {msg} {elapsed}")
                        .expect("a valid template"),
                );
                bar.enable_steady_tick(Duration::from_millis(120));
                bar.set_message(crate::agents::meter::progress_line(
                    task.as_str(),
                    &role,
                    "",
                    0,
                ));
                running.insert(task.to_string(), bar);
            }
            Progress::Finished {
                task, ok, summary, ..
            } => {
                if let Some(bar) = running.remove(task.as_str()) {
                    bar.finish_and_clear();
                    multi.remove(&bar);
                }
                let _ = multi.println(format!(
                    "{} {task}: {summary}",
                    if ok { "done" } else { "FAILED" }
                ));
            }
            Progress::Tokens {
                task,
                role,
                tokens,
                step,
            } => {
                if let Some(bar) = running.get(task.as_str()) {
                    bar.set_message(crate::agents::meter::progress_line(
                        task.as_str(),
                        &role,
                        &step,
                        tokens,
                    ));
                }
            }
            Progress::Note(n) => {
                let _ = multi.println(n);
            }
            Progress::Count { done, total } => {
                overall.set_length(total as u64);
                overall.set_position(done as u64);
            }
            Progress::Waiting { why, left_ms } => {
                overall.set_message(format!("{why}: {} left", countdown(left_ms)));
                if left_ms <= 1000 {
                    overall.set_message("");
                }
            }
        }
    }

    pub(crate) fn clear(&mut self) {
        if let Some((multi, overall, running)) = &mut self.bars {
            for bar in running.values() {
                bar.finish_and_clear();
            }
            overall.finish_and_clear();
            let _ = multi.clear();
        }
    }
}

/// `1h 02m 05s`, `4m 10s`, `9s`: what is left of a wait.
fn countdown(ms: u64) -> String {
    let s = ms.div_ceil(1000);
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m {s:02}s"),
        (h, m, s) => format!("{h}h {m:02}m {s:02}s"),
    }
}

/// The error of a loop that found its remaining work in progress under other owners (exit 3):
/// it waits for nobody and pauses nothing.
pub(crate) fn running_elsewhere(sid: &SessionId, tasks: &[run::Elsewhere]) -> Error {
    let list: Vec<String> = tasks
        .iter()
        .map(|t| {
            let how = if t.alive {
                "running"
            } else {
                "left by a process that is gone"
            };
            format!("{} ({how}, {})", t.task, t.owner)
        })
        .collect();
    let orphaned = tasks.iter().any(|t| !t.alive);
    Error::conflict(
        format!(
            "session {sid}: nothing left to run here; in progress elsewhere: {}",
            list.join(", ")
        ),
        Some(if orphaned {
            format!(
                "`git tlv4 resume --session {sid}` returns tasks of processes that are gone to pending"
            )
        } else {
            format!("wait for it to finish, or run `git tlv4 resume --session {sid}` once it has")
        }),
    )
}

/// The error of a worker that found ready tasks only of roles it does not take (exit 3).
pub(crate) fn waiting_for_others(sid: &SessionId, ready: &[tlv4_core::model::TaskId]) -> Error {
    let list: Vec<&str> = ready.iter().map(|t| t.as_str()).collect();
    Error::conflict(
        format!(
            "session {sid}: nothing left for this worker's roles; ready for other roles: {}",
            list.join(", ")
        ),
        Some("run a worker that takes their roles (`git tlv4 worker --role ROLE`)".into()),
    )
}
