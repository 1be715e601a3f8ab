//! Best of N: several candidates of one code task, each its agent's run in a detached checkout
//! of its own, each measured the same way on what it would become (merged into the session
//! tip: the project's tests, the review of its change, its size, its cost), ranked by one
//! written rule ([`record::RULE`]); the best is the task's result when it passes.
//!
//! Every candidate's snapshot is kept under `refs/tlv4/runs/<SID>/<TASK>/<attempt>-c<k>`
//! whatever becomes of it, with trailers saying what its run was; a run that starts again
//! after a crash takes the candidates an unfinished attempt left instead of running them
//! again. The task branch moves only to the candidate picked.

pub(crate) mod claims;
mod measure;
pub(crate) mod record;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use gix::ObjectId;

use super::worker::{
    RunData, SnapshotData, WorkResult, before_merge, checkout_context, reason, repo_root,
};
use crate::agents::command::{Driver, Usage};
use crate::agents::meter::Meter;
use crate::agents::{Outcome, TaskInput, TaskOutput};
use crate::quality::QualityContext;
use record::{Candidate, Candidates, UsageMeasure};
use tlv4_core::error::Result;
use tlv4_store::store::{Store, session_dir};
use tlv4_store::worktree::{self, SnapshotLimits, TaskWorktree};

/// How a best-of task runs: one driver per candidate, how many at once, and whether the
/// first perfect one ends the rest.
#[derive(Clone)]
pub(crate) struct Ask {
    pub drivers: Vec<Arc<dyn Driver>>,
    pub accept_first: bool,
    pub width: usize,
    /// A worker's claims on its remote: each candidate is claimed before it runs, its ref
    /// goes there as soon as it is kept, and other workers may run candidates beside.
    pub claims: Option<claims::Claims>,
}

/// What the record keeps of a best-of task beyond the picked candidate's result.
pub(crate) struct Chosen {
    pub record: Candidates,
    /// Each candidate's run, by number, for `runs/<TASK>/<attempt>/candidate-<k>/`.
    pub runs: BTreeMap<u32, RunData>,
}

/// One candidate once its run ended: its line of the record, and what the task's result takes
/// from it if it is picked.
struct Ran {
    candidate: Candidate,
    output: Option<TaskOutput>,
    run: Option<RunData>,
    left_out: Vec<String>,
    notes: Vec<String>,
}

/// Runs the candidates of `input`'s task that no earlier attempt left, measures every one,
/// and returns the picked candidate's result (or the task's failure when none passes).
pub(super) fn run(
    ask: &Ask,
    input: &TaskInput,
    qctx: &QualityContext,
    limits: &SnapshotLimits,
    hooks: &tlv4_core::hooks::Hooks,
    meter: &Meter,
) -> Result<WorkResult> {
    let store = Store::from_repo(qctx.repo.to_thread_local())?;
    let task = &input.task;
    let sid = &input.session.id;
    let mut notes = Vec::new();
    if let Some(kept) = worktree::set_aside(&store, sid, &task.id, qctx.tip, task.attempts)? {
        notes.push(format!(
            "{}: the unmerged work of an earlier attempt is kept at {kept}",
            task.id
        ));
    }
    let n = ask.drivers.len() as u32;
    let mut done: BTreeMap<u32, Ran> = BTreeMap::new();
    let known = Known::read(&store, input, qctx)?;
    take_finished(&store, input, qctx, ask, &known, meter, &mut done)?;
    let reused: Vec<String> = done
        .values()
        .filter(|r| r.candidate.reused)
        .map(|r| r.candidate.number.to_string())
        .collect();
    if !reused.is_empty() {
        notes.push(format!(
            "{}: candidate(s) {} of an attempt that did not finish taken as they were, not run again",
            task.id,
            reused.join(", ")
        ));
    }
    let accepted =
        AtomicBool::new(ask.accept_first && done.values().any(|r| r.candidate.perfect()));
    loop {
        let remaining: Vec<u32> = (1..=n).filter(|k| !done.contains_key(k)).collect();
        if remaining.is_empty() || accepted.load(Ordering::SeqCst) {
            break;
        }
        let (wave, keepers) = next_wave(&store, input, qctx, ask, &remaining)?;
        if wave.is_empty() {
            // Every one left is another worker's: wait for it, then take what it sent.
            meter.step(format!(
                "waiting for candidate(s) {} on other workers",
                remaining
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            std::thread::sleep(OTHERS_POLL);
            take_finished(&store, input, qctx, ask, &known, meter, &mut done)?;
            continue;
        }
        for ran in run_wave(ask, input, qctx, limits, meter, &wave, &accepted) {
            let ran = ran?;
            done.insert(ran.candidate.number, ran);
        }
        // Its claims go once its candidates are on the remote.
        drop(keepers);
        if ask.claims.is_some() {
            take_finished(&store, input, qctx, ask, &known, meter, &mut done)?;
        }
    }
    let mut result = conclude(&store, input, qctx, ask, done, notes);
    // The `before-merge` hook hears of the candidate picked, as of any code task's change.
    if let Some(snap) = &result.snapshot {
        meter.step("before-merge hook");
        before_merge(hooks, input, snap, &repo_root(qctx), &mut result.output);
    }
    Ok(result)
}

/// The outcome of a candidate whose agent a signal stopped (the run was interrupted, not the
/// candidate judged): such a candidate is kept, never taken, and runs again.
const INTERRUPTED: &str = "stopped: interrupted";

/// How often a worker that waits for candidates other workers run looks for them.
const OTHERS_POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// What a run of candidates compares earlier ones with, read once: the candidate refs the
/// task's recorded attempts name, and the code at the tip the candidates start from.
struct Known {
    recorded: Vec<String>,
    code_now: Vec<(String, ObjectId)>,
}

impl Known {
    fn read(store: &Store, input: &TaskInput, qctx: &QualityContext) -> Result<Known> {
        let tip_tree = store.commit_tree(qctx.tip)?;
        Ok(Known {
            recorded: recorded_refs(store, input, tip_tree)?,
            code_now: code_entries(store, tip_tree)?,
        })
    }
}

/// The candidates that are done and not in `done` yet — left by an attempt that did not
/// finish, or (a worker) sent by other workers — measured and added.
fn take_finished(
    store: &Store,
    input: &TaskInput,
    qctx: &QualityContext,
    ask: &Ask,
    known: &Known,
    meter: &Meter,
    done: &mut BTreeMap<u32, Ran>,
) -> Result<()> {
    for mut ran in earlier(store, input, ask, known, done)? {
        meter.step(format!("measuring candidate {}", ran.candidate.number));
        measure::measure(store, input, qctx, &mut ran.candidate)?;
        done.insert(ran.candidate.number, ran);
    }
    Ok(())
}

/// The candidates of `remaining` to run now, at most `width`: here, the first ones; a
/// worker, those it could claim (with their claims' keepers).
fn next_wave(
    store: &Store,
    input: &TaskInput,
    qctx: &QualityContext,
    ask: &Ask,
    remaining: &[u32],
) -> Result<(Vec<u32>, Vec<claims::Keeper>)> {
    let width = ask.width.max(1);
    let Some(c) = &ask.claims else {
        return Ok((remaining.iter().copied().take(width).collect(), Vec::new()));
    };
    let sid = &input.session.id;
    c.look(store, sid, &input.task.id)?;
    let (mut wave, mut keepers) = (Vec::new(), Vec::new());
    for &k in remaining {
        if wave.len() == width {
            break;
        }
        let what = (&input.task.id, input.task.attempts, k, qctx.tip);
        if let Some(keeper) = c.claim(store, &qctx.repo, sid, what)? {
            wave.push(k);
            keepers.push(keeper);
        }
    }
    Ok((wave, keepers))
}

/// Runs the candidates of `wave` side by side, each measured as it ends; with
/// `--accept-first`, a perfect one stops the others and sets `accepted`.
fn run_wave(
    ask: &Ask,
    input: &TaskInput,
    qctx: &QualityContext,
    limits: &SnapshotLimits,
    meter: &Meter,
    wave: &[u32],
    accepted: &AtomicBool,
) -> Vec<Result<Ran>> {
    let n = ask.drivers.len();
    meter.step(match wave {
        [k] => format!("candidate {k} of {n} running"),
        _ => format!(
            "candidates {} of {n} running",
            wave.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    });
    let meters: Vec<Meter> = wave
        .iter()
        .map(|_| {
            let m = Meter::bounded(meter.bound());
            m.set_max_usd(meter.max_usd());
            m
        })
        .collect();
    let results: Vec<Result<Ran>> = std::thread::scope(|s| {
        let handles: Vec<_> = wave
            .iter()
            .zip(&meters)
            .map(|(&k, m)| {
                let driver = Arc::clone(&ask.drivers[k as usize - 1]);
                let meters = &meters;
                s.spawn(move || {
                    let store = Store::from_repo(qctx.repo.to_thread_local())?;
                    let mut ran = candidate(&store, &*driver, input, qctx, limits, m, k)?;
                    share(&store, ask, &mut ran);
                    measure::measure(&store, input, qctx, &mut ran.candidate)?;
                    if ask.accept_first && ran.candidate.perfect() {
                        accepted.store(true, Ordering::SeqCst);
                        for other in meters {
                            other.cancel(format!(
                                "candidate {k} passed every test with an APPROVE review (--accept-first)"
                            ));
                        }
                    }
                    Ok(ran)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(tlv4_core::Error::Git(
                        "a candidate's thread panicked".into(),
                    ))
                })
            })
            .collect()
    });
    for m in &meters {
        meter.add(m.read());
    }
    results
}

/// Candidate `k` of a task another worker holds, run by this idle worker under its claim
/// (`keeper`, released once the candidate's ref is on the remote): its agent, its snapshot
/// kept and sent. What becomes of it is the holder's to say; nothing here is recorded.
pub(crate) fn help(
    ask: &Ask,
    input: &TaskInput,
    qctx: &QualityContext,
    limits: &SnapshotLimits,
    k: u32,
    keeper: claims::Keeper,
) -> Result<()> {
    let store = Store::from_repo(qctx.repo.to_thread_local())?;
    let driver = Arc::clone(&ask.drivers[k as usize - 1]);
    let mut ran = candidate(&store, &*driver, input, qctx, limits, &Meter::new(), k)?;
    share(&store, ask, &mut ran);
    drop(keeper);
    Ok(())
}

/// A worker's candidate goes to its remote as soon as it is kept (created only; a failure is
/// a note: the ref travels with the task's result all the same).
fn share(store: &Store, ask: &Ask, ran: &mut Ran) {
    let (Some(remote), Some(name), Some(commit)) = (
        ask.claims.as_ref().map(|c| &c.remote),
        &ran.candidate.reference,
        ran.candidate
            .commit
            .as_deref()
            .and_then(|c| c.parse::<ObjectId>().ok()),
    ) else {
        return;
    };
    let why = format!("candidate {}", ran.candidate.number);
    if let Err(e) = store.create_remote(remote, name, commit, &why) {
        ran.notes.push(format!(
            "candidate {} was not sent to `{}` yet: {e}",
            ran.candidate.number, remote.name
        ));
    }
}

/// Candidate `k`'s run: a detached checkout of the session tip, prepared as the task's own
/// would be, its agent, its snapshot kept under its ref (with trailers saying what the run
/// was), the checkout removed.
fn candidate(
    store: &Store,
    driver: &dyn Driver,
    input: &TaskInput,
    qctx: &QualityContext,
    limits: &SnapshotLimits,
    meter: &Meter,
    k: u32,
) -> Result<Ran> {
    let started = Instant::now();
    let task = &input.task;
    let name = driver.name().to_owned();
    let mut notes = Vec::new();
    let mut wt = TaskWorktree::candidate(
        store,
        &input.session.id,
        &task.id,
        qctx.tip,
        (task.role.as_str(), task.attempts),
        k,
    )?;
    let ctx = checkout_context(store, driver, &mut wt, input, qctx, meter, &mut notes);
    let ran = driver.run(input, &ctx);
    let seconds = started.elapsed().as_secs_f64();
    let (outcome, output, run) = match ran {
        Ok(out) => {
            let outcome = match &out.output.outcome {
                Outcome::Completed => "completed".to_owned(),
                Outcome::Failed(r) => format!("failed: {r}"),
            };
            let run = RunData {
                prompt: out.prompt,
                raw: out.raw,
                transcript: out.transcript,
                usage: out.usage,
                refusals: Vec::new(),
            };
            (outcome, Some(out.output), Some(run))
        }
        Err(e) => {
            let outcome = match meter.cancelled() {
                Some(why) => format!("stopped: {why}"),
                None => format!("failed: {}", reason(&name, &e)),
            };
            let run = (meter.read() > 0).then(|| RunData {
                prompt: String::new(),
                raw: String::new(),
                transcript: None,
                usage: Usage {
                    output_tokens: meter.read(),
                    ..Usage::default()
                },
                refusals: Vec::new(),
            });
            (outcome, None, run)
        }
    };
    // A run that ended because this process was signalled was interrupted, not answered.
    let outcome = match tlv4_core::process::signals::received() {
        Some(sig) if outcome != "completed" && meter.cancelled().is_none() => format!(
            "{INTERRUPTED} by {}",
            tlv4_core::process::signals::name(sig)
        ),
        _ => outcome,
    };
    let usage = run.as_ref().map(|r| r.usage.clone()).unwrap_or_default();
    let summary = output
        .as_ref()
        .map(|o| o.summary.clone())
        .unwrap_or_default();
    wt.add_trailers([
        (
            "Worker",
            format!("{}:{}", tlv4_core::host::name(), std::process::id()),
        ),
        ("Agent", name.clone()),
        ("Outcome", outcome.clone()),
        ("Summary", summary.clone()),
        ("Input-Tokens", usage.input_tokens.to_string()),
        ("Output-Tokens", usage.output_tokens.to_string()),
        (
            "Cost-Usd",
            usage
                .cost_usd
                .map_or("unknown".to_owned(), |c| c.to_string()),
        ),
        ("Seconds", format!("{seconds:.3}")),
    ]);
    let mut candidate = Candidate {
        number: k,
        worker: Some(format!(
            "{}:{}",
            tlv4_core::host::name(),
            std::process::id()
        )),
        agent: name,
        model: usage.model.clone(),
        parent: Some(qctx.tip.to_string()),
        outcome,
        summary,
        usage: UsageMeasure {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cost_usd: usage.cost_usd,
        },
        seconds,
        ..Candidate::default()
    };
    let mut left_out = Vec::new();
    match wt.snapshot(limits) {
        Ok(snap) => {
            let kept = snap.commit.or(snap.kept.as_ref().map(|k| k.commit));
            candidate.commit = kept.map(|c| c.to_string());
            candidate.reference = kept.map(|_| wt.branch().to_owned());
            candidate.changed = snap.changed.iter().map(|c| c.path.clone()).collect();
            left_out = snap.left_out.iter().map(ToString::to_string).collect();
            if !snap.refused.is_empty() && candidate.outcome == "completed" {
                let list: Vec<String> = snap.refused.iter().map(ToString::to_string).collect();
                candidate.outcome =
                    format!("failed: its changes were not taken: {}", list.join("; "));
            }
        }
        Err(e) => {
            if candidate.outcome == "completed" {
                candidate.outcome = format!("failed: its snapshot could not be taken: {e}");
            }
        }
    }
    match wt.remove() {
        Ok(Some(k)) => notes.push(format!(
            "{}: work of candidate {} not in its snapshot is kept at {}",
            task.id, candidate.number, k.name
        )),
        Ok(None) => {}
        Err(e) => notes.push(e.to_string()),
    }
    Ok(Ran {
        candidate,
        output,
        run,
        left_out,
        notes,
    })
}

/// The candidates an earlier attempt of the task left and did not record: kept under their
/// refs, started from a session tip with the same code as now, by the agent that candidate
/// number runs now. The latest attempt's, when several left one.
fn earlier(
    store: &Store,
    input: &TaskInput,
    ask: &Ask,
    known: &Known,
    done: &BTreeMap<u32, Ran>,
) -> Result<Vec<Ran>> {
    let task = &input.task;
    let sid = &input.session.id;
    let prefix = tlv4_store::store::refs::runs_prefix(sid, &task.id);
    let Known { recorded, code_now } = known;
    // A worker also takes what a worker before it sent to the remote.
    if let Some(c) = &ask.claims {
        for (name, commit) in store.fetch_prefix(&c.remote, &prefix).unwrap_or_default() {
            if store.try_ref(&name)?.is_none() {
                store.create_ref(&name, commit, "git-tlv4: a candidate from the remote")?;
            }
        }
    }
    let mut found: BTreeMap<u32, (u32, Ran)> = BTreeMap::new();
    for (name, commit) in store.refs_with_prefix(&prefix)? {
        let Some((attempt, k)) = name
            .strip_prefix(&prefix)
            .and_then(|rest| rest.split_once("-c"))
            .and_then(|(a, k)| Some((a.parse::<u32>().ok()?, k.parse::<u32>().ok()?)))
        else {
            continue;
        };
        if k == 0
            || k as usize > ask.drivers.len()
            || done.contains_key(&k)
            || recorded.contains(&name)
        {
            continue;
        }
        let Ok(c) = store.repo().find_commit(commit) else {
            continue;
        };
        let message = c.message_raw_sloppy().to_string();
        let trailer = |key: &str| {
            message
                .lines()
                .rev()
                .find_map(|l| l.strip_prefix(&format!("Tlv4-{key}: ")))
                .map(str::to_owned)
        };
        if trailer("Agent").as_deref() != Some(ask.drivers[k as usize - 1].name()) {
            continue;
        }
        let Some(parent) = c.parent_ids().next().map(|p| p.detach()) else {
            continue;
        };
        // Of an earlier attempt, a candidate is taken only where the code is the same; of
        // this one (run beside by another worker) it is taken all the same, and one that
        // started elsewhere counts as failed: its name is taken.
        let same_code = code_entries(store, store.commit_tree(parent)?)? == *code_now;
        if !same_code && attempt != task.attempts {
            continue;
        }
        if found.get(&k).is_some_and(|(a, _)| *a >= attempt) {
            continue;
        }
        let mut outcome = trailer("Outcome").unwrap_or_else(|| "completed".to_owned());
        // A run a signal stopped is not a candidate's answer: a later attempt runs it again
        // (in this one its name is taken: it counts as stopped).
        if outcome.starts_with(INTERRUPTED) && attempt != task.attempts {
            continue;
        }
        if !same_code {
            outcome = format!("failed: it started from {parent}, not from this attempt's tip");
        }
        let changed = store.changed_paths(parent, commit)?;
        let candidate = Candidate {
            number: k,
            agent: trailer("Agent").unwrap_or_default(),
            reference: Some(name.clone()),
            commit: Some(commit.to_string()),
            parent: Some(parent.to_string()),
            summary: trailer("Summary").unwrap_or_default(),
            changed,
            reused: attempt < task.attempts,
            worker: trailer("Worker"),
            usage: UsageMeasure {
                input_tokens: trailer("Input-Tokens")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
                output_tokens: trailer("Output-Tokens")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
                cost_usd: trailer("Cost-Usd").and_then(|v| v.parse().ok()),
            },
            seconds: trailer("Seconds")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0),
            outcome,
            ..Candidate::default()
        };
        let output = (candidate.outcome == "completed").then(|| TaskOutput {
            outcome: Outcome::Completed,
            summary: candidate.summary.clone(),
            files: Vec::new(),
            state_update: crate::agents::StateUpdate {
                files_modified: candidate.changed.clone(),
                verification: format!(
                    "candidate {k}, run by an attempt that did not finish (kept at {name}); measured again here"
                ),
                ..Default::default()
            },
        });
        let usage = Usage {
            input_tokens: candidate.usage.input_tokens,
            output_tokens: candidate.usage.output_tokens,
            cost_usd: candidate.usage.cost_usd,
            seconds: candidate.seconds,
            ..Usage::default()
        };
        let run = RunData {
            prompt: String::new(),
            raw: String::new(),
            transcript: None,
            usage,
            refusals: Vec::new(),
        };
        let ran = Ran {
            candidate,
            output,
            run: Some(run),
            left_out: Vec::new(),
            notes: Vec::new(),
        };
        found.insert(k, (attempt, ran));
    }
    Ok(found.into_values().map(|(_, r)| r).collect())
}

/// The candidate refs the task's recorded attempts name (in their `candidates.json`).
fn recorded_refs(store: &Store, input: &TaskInput, tip_tree: ObjectId) -> Result<Vec<String>> {
    let task = &input.task;
    let mut out = Vec::new();
    for attempt in 1..=task.attempts {
        let path = format!(
            "{}/runs/{}/{attempt}/{}",
            session_dir(&input.session.id),
            task.id,
            record::FILE
        );
        if let Some(bytes) = store.read_blob_at(tip_tree, &path)?
            && let Ok(rec) = serde_json::from_slice::<Candidates>(&bytes)
        {
            out.extend(rec.candidates.into_iter().filter_map(|c| c.reference));
        }
    }
    Ok(out)
}

/// The top-level entries of `tree` but `.tlv4`: the code, to compare two session tips by.
fn code_entries(store: &Store, tree: ObjectId) -> Result<Vec<(String, ObjectId)>> {
    let tree = store
        .repo()
        .find_tree(tree)
        .map_err(|e| tlv4_core::Error::git("cannot read a session tree", e))?;
    let decoded = tree
        .decode()
        .map_err(|e| tlv4_core::Error::git("cannot read a session tree", e))?;
    Ok(decoded
        .entries
        .iter()
        .filter(|e| e.filename != ".tlv4")
        .map(|e| (e.filename.to_string(), e.oid.to_owned()))
        .collect())
}

/// The task's result from its measured candidates: the picked one's, with the task branch
/// moved to it, or the task's failure naming the best one.
fn conclude(
    store: &Store,
    input: &TaskInput,
    qctx: &QualityContext,
    ask: &Ask,
    mut done: BTreeMap<u32, Ran>,
    mut notes: Vec<String>,
) -> WorkResult {
    let task = &input.task;
    let n = ask.drivers.len() as u32;
    let mut record = Candidates {
        task: task.id.to_string(),
        attempt: task.attempts,
        measured_on: qctx.tip.to_string(),
        accept_first: ask.accept_first,
        ..Candidates::default()
    };
    for k in 1..=n {
        match done.get(&k) {
            Some(ran) => record.candidates.push(ran.candidate.clone()),
            None => record.candidates.push(Candidate {
                number: k,
                agent: ask.drivers[k as usize - 1].name().to_owned(),
                outcome: "stopped: not started, an earlier candidate passed every test with an APPROVE review (--accept-first)".to_owned(),
                ..Candidate::default()
            }),
        }
    }
    record.rank();
    let mut runs = BTreeMap::new();
    for (k, ran) in &mut done {
        notes.append(&mut ran.notes);
        if let Some(run) = ran.run.take() {
            runs.insert(*k, run);
        }
    }
    let picked = record.picked.and_then(|k| done.remove(&k).map(|r| (k, r)));
    let (output, agent, snapshot) = match picked {
        Some((k, ran)) => {
            let c = &ran.candidate;
            let commit: Option<ObjectId> = c.commit.as_deref().and_then(|s| s.parse().ok());
            let mut output = ran.output.unwrap_or_else(|| {
                TaskOutput::failed(
                    format!("candidate {k} left no answer"),
                    "failed: no answer".to_owned(),
                )
            });
            output.summary = format!("best of {n}, candidate {k}: {}", output.summary);
            output.state_update.decisions.push(format!(
                "best of {n}: candidate {k} picked by the rule ({})",
                record.why
            ));
            if let Some(commit) = commit {
                move_branch(store, input, commit, k, &mut notes);
            }
            let snapshot = commit.map(|commit| SnapshotData {
                commit,
                parent: qctx.tip,
                changed: c.changed.clone(),
                refused: Vec::new(),
                left_out: ran.left_out.clone(),
                kept: c.reference.clone(),
            });
            (output, c.agent.clone(), snapshot)
        }
        None => {
            let best = record.best.unwrap_or(1);
            let reason = format!(
                "no candidate of {n} passes: {}; every candidate is kept and measured (`git tlv4 candidates {id}`): take the best with `git tlv4 pick {id} {best}`, or run them again with `git tlv4 resume --retry`",
                record.why,
                id = task.id
            );
            let summary = format!("failed: best of {n}, none passes");
            (
                TaskOutput::failed(reason, summary),
                "best-of".to_owned(),
                None,
            )
        }
    };
    let mut result = WorkResult::failed(&agent, String::new());
    result.output = output;
    result.snapshot = snapshot;
    result.notes = notes;
    result.candidates = Some(Box::new(Chosen { record, runs }));
    result
}

/// Moves the task branch to the picked candidate's commit: created there, or moved from where
/// it is (the session tip, or work the session has, once [`worktree::set_aside`] ran). A
/// branch someone has checked out stays; the note says so.
fn move_branch(
    store: &Store,
    input: &TaskInput,
    commit: ObjectId,
    k: u32,
    notes: &mut Vec<String>,
) {
    let branch = worktree::task_ref(&input.session.id, &input.task.id);
    let why = format!("git-tlv4: candidate {k} of {} picked", input.task.id);
    let moved = match store.try_ref(&branch) {
        Ok(None) => store.create_ref(&branch, commit, &why).map(|_| ()),
        Ok(Some(old)) if old == commit => Ok(()),
        Ok(Some(old)) => {
            if store.checked_out_in(&branch).is_empty() {
                store.update_ref(&branch, old, commit, &why)
            } else {
                Err(tlv4_core::Error::Invalid(format!(
                    "it is checked out in {}",
                    store.checked_out_in(&branch)[0].display()
                )))
            }
        }
        Err(e) => Err(e),
    };
    if let Err(e) = moved {
        notes.push(format!(
            "{}: the task branch was not moved to candidate {k} ({e}); the session has its change all the same",
            input.task.id
        ));
    }
}
