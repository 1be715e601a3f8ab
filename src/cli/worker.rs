//! `git tlv4 worker`: run a session's tasks from this clone, with the session's tip on a
//! shared remote: each claim is the task's lease ref, created there only if absent and
//! renewed while the worker works; results go to the session in atomic batches
//! (`specs/state-format.md` §18.6, §18.10).

use std::time::Duration;

use crate::coordinator::lease::WorkerOptions;
use crate::coordinator::run::{self, Progress, RunEnd};
use tlv4_core::error::{Error, Result};
use tlv4_core::model::SessionId;
use tlv4_store::store::{Remote, Store};

use super::Ctx;
use super::drive::{RunFlags, View};

/// The lease of a claim when none is given (`--lease`).
pub(crate) const DEFAULT_LEASE: Duration = Duration::from_secs(60);
/// The clock skew allowed between workers when none is given (`--skew`).
pub(crate) const DEFAULT_SKEW: Duration = Duration::from_secs(10);

/// Arguments of `worker`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The remote every claim and result goes through (a configured remote or a URL)
    #[arg(long, value_name = "REMOTE")]
    pub remote: String,
    /// Serve every live session of the remote (default: the one --session names, or the
    /// remote's only one)
    #[arg(long)]
    pub all: bool,
    /// Take only tasks of this role (repeat for more; default: every role)
    #[arg(long = "role", value_name = "ROLE")]
    pub roles: Vec<String>,
    /// Run at most N tasks at once (default: the session's max_parallel)
    #[arg(long, value_name = "N")]
    pub max_parallel: Option<u32>,
    /// Stop when nothing is ready for this worker, instead of waiting for other workers' tasks
    #[arg(long)]
    pub once: bool,
    /// How long a claim holds its task without renewal, in seconds (renewed every third of it)
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_LEASE.as_secs_f64(), allow_negative_numbers = true)]
    pub lease: f64,
    /// How far the clocks of two workers may differ, in seconds: a lease counts as run out
    /// only this long after its end
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_SKEW.as_secs_f64(), allow_negative_numbers = true)]
    pub skew: f64,
    /// The agent for every role (NAME), or for one role (ROLE=NAME), as for `start`
    #[arg(long, value_name = "[ROLE=]NAME")]
    pub agent: Vec<String>,
}

impl Args {
    /// The loop's options for `remote`.
    fn options(&self, remote: &Remote) -> Result<WorkerOptions> {
        let secs = |what: &str, v: f64, min: f64| {
            if v.is_finite() && v >= min && v <= 86_400.0 {
                Ok(Duration::from_secs_f64(v))
            } else {
                Err(Error::Invalid(format!(
                    "--{what} {v}: give seconds from {min} to 86400"
                )))
            }
        };
        if self.max_parallel == Some(0) {
            return Err(Error::Invalid("--max-parallel must be at least 1".into()));
        }
        Ok(WorkerOptions {
            remote: remote.clone(),
            roles: self.roles.clone(),
            max_parallel: self.max_parallel,
            once: self.once,
            lease: secs("lease", self.lease, 0.5)?,
            skew: secs("skew", self.skew, 0.0)?,
        })
    }
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let remote = Remote::new(&args.remote)?;
    let store = ctx.store()?;
    if args.all && ctx.session.is_some() {
        return Err(Error::Invalid(
            "`--all` and `--session` cannot be used together".to_owned(),
        ));
    }
    let opts = args.options(&remote)?;
    let flags = RunFlags {
        agent: args.agent.clone(),
        ..RunFlags::default()
    };
    let served = if !args.all {
        let sid = match &ctx.session {
            Some(name) => name
                .parse::<SessionId>()
                .map_err(|_| Error::UnknownSession {
                    name: name.clone(),
                    known: Vec::new(),
                })?,
            None => only_live_session(&store, &remote)?,
        };
        serve(ctx, &store, &sid, &flags, opts).map(|(end, started)| {
            // A worker that leaves work to others did what it could: that is no failure.
            if !matches!(end, RunEnd::RunningElsewhere(_) | RunEnd::Waiting(_)) {
                ctx.exit.set(super::drive::exit_code(&end));
            }
            started
        })
    } else {
        serve_all(ctx, &store, &remote, &flags, opts)
    };
    // What it cost on the wire, said whether the run ended well or not.
    let tasks = served.as_ref().ok().copied();
    ctx.ui
        .status(stats_line(&remote, tasks, &store.remote_stats()));
    served.map(|_| ())
}

/// The worker's closing line: what it did through the remote (`specs/state-format.md` §18.6).
fn stats_line(remote: &Remote, tasks: Option<usize>, s: &tlv4_store::store::RemoteStats) -> String {
    let tasks = match tasks {
        Some(n) => format!("{n} task(s) run, "),
        None => String::new(),
    };
    format!(
        "worker {}:{}: {tasks}{} event(s) written through `{}`, {} refused because the remote had moved and retried ({:.2} per event); {} claim(s) taken, {} refused (taken first by another worker), {} batch(es), {} turn(s) waited for; {} fetch(es) in {:.2}s, {} push(es) in {:.2}s ({} refused in all)",
        tlv4_core::host::name(),
        std::process::id(),
        s.events,
        remote.name,
        s.retries,
        s.retries_per_event(),
        s.claims,
        s.claims_refused,
        s.batches,
        s.turns_refused,
        s.fetches,
        s.fetch_ms as f64 / 1000.0,
        s.pushes + s.refused,
        s.push_ms as f64 / 1000.0,
        s.refused,
    )
}

/// The only live session of `remote`.
fn only_live_session(store: &Store, remote: &Remote) -> Result<SessionId> {
    let live = live_sessions(store, remote)?;
    match live.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(Error::state(
            format!("`{}` has no live session", remote.name),
            Some(format!(
                "start one there: `git tlv4 start --remote {} …`",
                remote.name
            )),
        )),
        more => Err(Error::state(
            format!(
                "`{}` has several live sessions: {}",
                remote.name,
                more.iter()
                    .map(SessionId::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Some("choose one with `--session SID`, or serve them all with `--all`".into()),
        )),
    }
}

fn live_sessions(store: &Store, remote: &Remote) -> Result<Vec<SessionId>> {
    Ok(store
        .remote_sessions(remote)?
        .into_iter()
        .filter(|s| s.state == "live")
        .filter_map(|s| s.id.parse().ok())
        .collect())
}

/// Serves every live session of the remote, one pass over them at a time, each until nothing
/// is ready for this worker; until none has work left (or after one pass, with `--once`).
fn serve_all(
    ctx: &Ctx<'_>,
    store: &Store,
    remote: &Remote,
    flags: &RunFlags,
    opts: WorkerOptions,
) -> Result<usize> {
    let mut total = 0;
    loop {
        let mut open = 0;
        let mut ran = 0;
        for sid in live_sessions(store, remote)? {
            let pass = WorkerOptions {
                once: true,
                ..opts.clone()
            };
            let (end, started) = serve(ctx, store, &sid, flags, pass)?;
            ran += started;
            if matches!(end, RunEnd::RunningElsewhere(_) | RunEnd::Waiting(_)) {
                open += 1;
            }
        }
        total += ran;
        if opts.once || open == 0 {
            return Ok(total);
        }
        if ran == 0 {
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

/// Runs session `sid` as a worker until it ends (or, `opts.once`, until nothing is ready for
/// this worker); reports how it ended. Returns the end and how many tasks this worker started.
pub(crate) fn serve(
    ctx: &Ctx<'_>,
    store: &Store,
    sid: &SessionId,
    flags: &RunFlags,
    opts: WorkerOptions,
) -> Result<(RunEnd, usize)> {
    let remote = opts.remote.clone();
    let tip = store.fetch_session(&remote, sid)?;
    store.forward_local(sid, tip)?;
    // The agents run here, so they must be trusted here: a worker refuses what the session's
    // configuration names that this machine has not trusted.
    let (roster, conf, _) = super::drive::session_roster(ctx, store, sid, flags)?;
    ctx.ui.status(format!(
        "worker {}:{} on session {sid} through `{}` (lease {:.1}s)",
        tlv4_core::host::name(),
        std::process::id(),
        remote.name,
        opts.lease.as_secs_f64()
    ));
    let once = opts.once;
    let mut view = View::new(View::fancy(ctx));
    let mut started = 0;
    let opts = run::RunOptions {
        conf: Some(conf),
        worker: Some(opts),
    };
    let end = run::run(store, sid, roster, opts, &mut |p| {
        if matches!(p, Progress::Started { .. }) {
            started += 1;
        }
        view.show(ctx, p)
    });
    view.clear();
    // The messages the tasks sent travel too, merged with the other workers'.
    if let Err(e) = store.sync_notes(&remote, sid) {
        ctx.ui
            .warn(format!("the messages of {sid} stay here for now: {e}"));
    }
    let end = end?;
    match &end {
        RunEnd::Completed => {
            let (_, state) = store.read_state(sid)?;
            let p = state.progress();
            ctx.ui.status(format!(
                "session {sid} completed: {}/{} tasks (its completion action is left to the clone that started it)",
                p.completed, p.total
            ));
        }
        RunEnd::Paused(p) => {
            ctx.ui
                .status(format!("session {sid} paused ({}): {}", p.kind, p.reason));
            for n in &p.next {
                ctx.ui.status(format!("  next: {n}"));
            }
        }
        RunEnd::Aborted => ctx.ui.status(format!("session {sid} is aborted")),
        RunEnd::RunningElsewhere(tasks) if once => {
            let list: Vec<String> = tasks
                .iter()
                .map(|t| format!("{} ({})", t.task, t.owner))
                .collect();
            ctx.ui.status(format!(
                "session {sid}: nothing more for this worker now; in progress elsewhere: {}",
                list.join(", ")
            ));
        }
        RunEnd::Waiting(ready) if once => {
            let list: Vec<&str> = ready.iter().map(|t| t.as_str()).collect();
            ctx.ui.status(format!(
                "session {sid}: nothing more for this worker's roles; ready for others: {}",
                list.join(", ")
            ));
        }
        RunEnd::RunningElsewhere(tasks) => return Err(super::drive::running_elsewhere(sid, tasks)),
        RunEnd::Waiting(ready) => return Err(super::drive::waiting_for_others(sid, ready)),
        RunEnd::Interrupted(signal, ids) => {
            let list: Vec<&str> = ids.iter().map(|t| t.as_str()).collect();
            return Err(Error::Interrupted {
                signal: *signal,
                message: if list.is_empty() {
                    "nothing was running".into()
                } else {
                    format!("returned to pending: {}", list.join(", "))
                },
            });
        }
    }
    Ok((end, started))
}
