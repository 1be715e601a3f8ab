//! Discussions as sessions (`git tlv4 discuss`): a session whose pipeline is `discuss`, whose
//! first event holds the discussion's plan and whose every later event is one round of the
//! protocol ([`crate::quality::protocol`]), with each member's contribution and prompt, the
//! moderator's rating, `discussion.json` (the whole state) and the output document in the
//! session's tree. Resuming reads `discussion.json` at the tip and runs the next round: a
//! round that was recorded is never run again.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::agents::command::Driver;
use crate::agents::roster::Roster;
use crate::agents::{CodeTree, Outcome};
use crate::quality::protocol::agent::{RunLog, Runs, SeatMember, SeatModerator, Seated};
use crate::quality::protocol::{
    self, Cast, Decision, Discussion, End, Limits, Material, Member, Moderator, Preset, Status,
    builtin, record,
};
use tlv4_core::error::{Error, Result};
use tlv4_core::model::{
    Completion, Control, Event, EventKind, Pause, PauseKind, Session, SessionId, SessionStatus,
    Settings, State,
};
use tlv4_core::store::{Store, session_dir};

/// The pipeline name of a discussion session.
pub const PIPELINE: &str = "discuss";

/// How to start a discussion.
#[derive(Debug, Clone)]
pub struct DiscussOptions {
    /// What is discussed.
    pub topic: String,
    /// The preset.
    pub preset: Preset,
    /// The topic members' roles.
    pub members: Vec<String>,
    /// Documents of the base commit every member reads.
    pub artifacts: Vec<String>,
    /// The time limits.
    pub limits: Limits,
    /// The `{feature}` of the output document's name (default: the session's slug).
    pub feature: Option<String>,
    /// `--replay SID`, kept for the session's later runs.
    pub replay: Option<String>,
    /// The `--agent` values (`discuss.SEAT=NAME`) the seats got, kept for later runs.
    pub agents: Vec<String>,
}

/// What a discussion session keeps besides `discussion.json`: where its document goes.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Plan {
    /// The output document's path in the session's tree.
    document: String,
}

fn plan_path(slug: &str) -> String {
    format!("discussions/{slug}/plan.json")
}

/// Creates the discussion session and returns its id; nothing runs yet. The agents of the
/// seats are named by `roster` (`None` for the builtin ones).
pub fn start(
    store: &Store,
    opts: &DiscussOptions,
    roster: &Roster,
) -> Result<(SessionId, Discussion)> {
    start_with(store, opts, roster, None)
}

/// [`start`] with `files`, the working tree's configuration, when the caller has read it
/// already (`None`: read here).
pub fn start_with(
    store: &Store,
    opts: &DiscussOptions,
    roster: &Roster,
    files: Option<&tlv4_core::trust::Files>,
) -> Result<(SessionId, Discussion)> {
    let topic = opts.topic.trim();
    if topic.is_empty() {
        return Err(Error::Invalid(
            "the topic is empty; say what to discuss".into(),
        ));
    }
    let base = store.head_commit()?;
    let base_tree = store.commit_tree(base)?;
    let mut material = Vec::new();
    for path in &opts.artifacts {
        let rel = path.trim_start_matches("./");
        let bytes = store.read_blob_at(base_tree, rel)?.ok_or_else(|| {
            Error::state(
                format!("--artifact {path}: there is no such file in the commit HEAD is on"),
                Some("commit the document first: a session sees the commit it forks from".into()),
            )
        })?;
        String::from_utf8(bytes).map_err(|_| {
            Error::Invalid(format!("--artifact {path}: the file is not UTF-8 text"))
        })?;
        material.push(rel.to_owned());
    }
    let agent_of = |seat: &str| {
        roster
            .member(seat)
            .map_or("builtin".into(), |d| d.name().to_owned())
    };
    let mut discussion = Discussion::new(
        topic,
        opts.preset,
        &opts.members,
        agent_of,
        &agent_of(crate::agents::roster::MODERATOR),
        material,
        opts.limits,
    )
    .map_err(Error::Invalid)?;
    if let Some(from) = &opts.replay {
        discussion.notes.push(format!(
            "Replayed from session {from}: each agent seat answers, attempt for attempt, with that session's recorded runs; no agent is called."
        ));
    }
    let read;
    let pinned = match files {
        Some(f) => f,
        None => {
            read = tlv4_core::trust::Files::read(store.workdir())?;
            &read
        }
    };
    let date = tlv4_core::clock::today_compact();
    let mut n = 1;
    loop {
        let (sid, taken) = store.free_id(topic, &date, n, base_tree)?;
        n = taken + 1;
        let feature = opts.feature.clone().unwrap_or_else(|| feature_of(&sid));
        let plan = Plan {
            document: record::document_path(&crate::quality::protocol::slug(&feature), &discussion),
        };
        let now = tlv4_core::clock::now_rfc3339();
        let state = State {
            session: Session::new(sid.clone(), topic, PIPELINE, false, base.to_string(), now),
            tasks: BTreeMap::new(),
            control: Control {
                settings: Settings {
                    budget_tokens: None,
                    best_of: None,
                    budget_usd: None,
                    max_parallel: 1,
                    auto_approve: false,
                    completion: Completion::Keep,
                    agents: opts.agents.clone(),
                    replay: opts.replay.clone(),
                    // A discussion has no code tasks.
                    shell: false,
                },
                ..Control::default()
            },
        };
        let mut files = BTreeMap::new();
        files.insert(
            tlv4_core::trust::LOCK.into(),
            tlv4_core::trust::lock_text(pinned).into_bytes(),
        );
        let (p, b) = record::state_file(&discussion);
        files.insert(p, b);
        files.insert(plan_path(&discussion.slug), json(&plan));
        let seats: Vec<String> = discussion
            .seats
            .iter()
            .map(|s| format!("{} ({})", s.role, s.agent))
            .collect();
        let event = Event::session(
            EventKind::SessionStarted,
            format!(
                "Discussion: {topic}\nPreset: {}\nMembers: {}\nModerator: {}\nDocument: {}\nBase: {base}",
                opts.preset.as_str(),
                seats.join(", "),
                discussion.moderator,
                plan.document
            ),
        )
        .with("Pipeline", PIPELINE.to_owned())
        .with("Base", base.to_string());
        match store.create_session(base, vec![(state, files, event)]) {
            Ok(_) => {
                tlv4_core::trust::pin(store, &sid, pinned, &opts.agents)?;
                return Ok((sid, discussion));
            }
            Err(Error::Conflict { .. }) if n < 100 => continue,
            Err(e) => return Err(e),
        }
    }
}

/// The session's slug: its id without the prefix and the date.
fn feature_of(sid: &SessionId) -> String {
    let s = sid.as_str().trim_start_matches("TLV4-");
    let parts: Vec<&str> = s.split('-').collect();
    let date = parts
        .iter()
        .rposition(|p| p.len() == 8 && p.chars().all(|c| c.is_ascii_digit()))
        .unwrap_or(parts.len());
    parts[..date].join("-")
}

fn json<T: serde::Serialize>(v: &T) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(v).expect("a record serialises");
    out.push(b'\n');
    out
}

/// Whether session `state` is a discussion.
pub fn is_discussion(state: &State) -> bool {
    state.session.pipeline == PIPELINE
}

/// The discussion of session `sid` at `tip`.
pub fn read(store: &Store, sid: &SessionId, tip: gix::ObjectId) -> Result<Discussion> {
    let state = store.state_at(sid, tip)?;
    let slug = protocol::slug(&state.session.task);
    let tree = store.commit_tree(tip)?;
    let path = format!("{}/{}", session_dir(sid), record::state_path(&slug));
    let bytes = store.read_blob_at(tree, &path)?.ok_or_else(|| {
        Error::state(
            format!("session {sid} is not a discussion: it has no {path}"),
            None,
        )
    })?;
    let d: Discussion =
        serde_json::from_slice(&bytes).map_err(|e| Error::Invalid(format!("{path}: {e}")))?;
    if d.schema > protocol::SCHEMA {
        return Err(Error::state(
            format!(
                "{path} has format {}; this build reads up to {}",
                d.schema,
                protocol::SCHEMA
            ),
            Some("upgrade git-tlv4".into()),
        ));
    }
    Ok(d)
}

/// The cast of `d`: each seat's agent from `roster`, or the builtin member.
fn cast(d: &Discussion, roster: &Roster, session: &Session, code: &CodeTree, runs: &Runs) -> Cast {
    let roles: Vec<String> = d.seats.iter().map(|s| s.role.clone()).collect();
    let seated = |driver: Arc<dyn Driver>| Seated {
        driver,
        session: session.clone(),
        code: code.clone(),
        runs: runs.clone(),
        prefix: "DISCUSS-R".into(),
    };
    let members = d
        .seats
        .iter()
        .map(|s| {
            let m: Arc<dyn Member> = match roster.member(&s.role) {
                Some(driver) => Arc::new(SeatMember(seated(driver))),
                None => Arc::new(builtin::BuiltinMember::new(
                    &d.topic, &roles, &s.role, s.devil,
                )),
            };
            (s.role.clone(), m)
        })
        .collect();
    let moderator: Arc<dyn Moderator> = match roster.member(crate::agents::roster::MODERATOR) {
        Some(driver) => Arc::new(SeatModerator(seated(driver))),
        None => Arc::new(builtin::BuiltinModerator),
    };
    Cast { members, moderator }
}

/// What one call of [`advance`] saw happen, for the command's progress lines.
pub enum Progress<'a> {
    /// A round was recorded.
    Round(&'a protocol::RoundRecord),
}

/// Runs session `sid`'s discussion from its tip until it ends or waits for the user: one
/// event per round. Returns the discussion as it stands.
pub fn advance(
    store: &Store,
    sid: &SessionId,
    roster: &Roster,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Discussion> {
    let _running = Running::take(store, sid)?;
    loop {
        let tip = store.tip(sid)?;
        let state = store.state_at(sid, tip)?;
        if !is_discussion(&state) {
            return Err(Error::state(
                format!("session {sid} is not a discussion"),
                None,
            ));
        }
        let mut d = read(store, sid, tip)?;
        if d.status != Status::Running {
            return Ok(d);
        }
        let tree = store.commit_tree(tip)?;
        let base_tree = store.commit_tree(
            state
                .session
                .base
                .parse()
                .map_err(|_| Error::Git(format!("bad base {}", state.session.base)))?,
        )?;
        let mut material: Material = Vec::new();
        for path in &d.artifacts {
            let bytes = store.read_blob_at(base_tree, path)?.unwrap_or_default();
            material.push((path.clone(), String::from_utf8_lossy(&bytes).into_owned()));
        }
        let code = CodeTree::from_tree(store.repo(), tree)?;
        let runs = Runs::default();
        let c = cast(&d, roster, &state.session, &code, &runs);
        let before = d.rounds.len();
        protocol::step(&mut d, &c, &material);
        let logs = runs.drain();
        record_round(store, sid, before, &d, &logs)?;
        if let Some(r) = d.rounds.get(before) {
            progress(Progress::Round(r));
        }
    }
}

/// Held while this process runs a discussion's rounds (`.git/tlv4/discuss/<SID>.lock`,
/// holding its pid and start time): a second process refuses at once instead of asking every
/// member again for a round whose record only one of them could write. A lock whose process
/// is gone is taken over.
struct Running(std::path::PathBuf);

impl Running {
    fn take(store: &Store, sid: &SessionId) -> Result<Running> {
        let dir = store.repo().common_dir().join("tlv4").join("discuss");
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
        let path = dir.join(format!("{sid}.lock"));
        let me = format!(
            "{} {}\n",
            std::process::id(),
            tlv4_core::host::own_start_time().unwrap_or(0)
        );
        for _ in 0..3 {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    use std::io::Write as _;
                    f.write_all(me.as_bytes())
                        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
                    return Ok(Running(path));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let read = || std::fs::read_to_string(&path).unwrap_or_default();
                    let mut held = read();
                    if held.is_empty() {
                        // Its holder may be writing it this instant.
                        std::thread::sleep(std::time::Duration::from_millis(100));
                        held = read();
                    }
                    let mut words = held.split_whitespace().map(str::parse::<u64>);
                    let pid = words.next().and_then(|w| w.ok());
                    let start = words.next().and_then(|w| w.ok()).filter(|t| *t != 0);
                    if let Some(pid) = pid.and_then(|p| u32::try_from(p).ok())
                        && tlv4_core::host::process_alive(pid, start)
                    {
                        return Err(Error::conflict(
                            format!(
                                "the discussion of session {sid} is being run by process {pid}"
                            ),
                            Some("let it finish; `git tlv4 status` shows where it stands".into()),
                        ));
                    }
                    // Its process is gone: the lock is stale.
                    if read() == held {
                        let _ = std::fs::remove_file(&path);
                    }
                }
                Err(e) => {
                    return Err(Error::io(format!("cannot create {}", path.display()), e));
                }
            }
        }
        Err(Error::conflict(
            format!("the discussion of session {sid} is being run by another process"),
            Some("let it finish; `git tlv4 status` shows where it stands".into()),
        ))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Writes the round `d` ran after `before` rounds (or its end) as one event.
fn record_round(
    store: &Store,
    sid: &SessionId,
    before: usize,
    d: &Discussion,
    logs: &[RunLog],
) -> Result<()> {
    let rec = d.rounds.get(before);
    let mut files: Vec<(String, Vec<u8>)> =
        rec.map(|r| record::round_files(d, r)).unwrap_or_default();
    files.push(record::state_file(d));
    for log in logs {
        let dir = format!("runs/{}/{}", log.task, log.attempt);
        let text = log
            .output
            .output
            .files
            .iter()
            .find(|(p, _)| p == log.file)
            .map(|(_, b)| b.clone());
        let files_json: serde_json::Map<String, serde_json::Value> = text
            .iter()
            .map(|b| {
                (
                    log.file.to_owned(),
                    serde_json::Value::String(tlv4_core::git::blob_hex(
                        store.repo().object_hash(),
                        b,
                    )),
                )
            })
            .collect();
        let u = &log.output.usage;
        let outcome = match &log.output.output.outcome {
            Outcome::Completed => "completed".to_owned(),
            Outcome::Failed(r) => format!("failed: {r}"),
        };
        let result = serde_json::json!({
            "task": log.task, "role": log.role, "attempt": log.attempt, "agent": "",
            "model": u.model, "seconds": u.seconds, "outcome": outcome,
            "summary": log.output.output.summary, "state_update": log.output.output.state_update,
            "files": files_json,
        });
        files.push((format!("{dir}/result.json"), json(&result)));
        let usage = serde_json::json!({
            "task": log.task, "role": log.role, "attempt": log.attempt, "agent": agent_name(d, log.role.as_str(), &log.task),
            "model": u.model, "input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
            "cost_usd": u.cost_usd, "seconds": u.seconds,
        });
        files.push((format!("{dir}/usage.json"), json(&usage)));
        if let Some(b) = text {
            files.push((format!("{dir}/{}", log.file), b));
        }
        for (name, t) in [
            ("prompt.md", &log.output.prompt),
            ("answer.txt", &log.output.raw),
        ] {
            if !t.is_empty() {
                files.push((format!("{dir}/{name}"), t.clone().into_bytes()));
            }
        }
    }
    let plan: Plan = {
        let tree = store.commit_tree(store.tip(sid)?)?;
        let path = format!("{}/{}", session_dir(sid), plan_path(&d.slug));
        let bytes = store
            .read_blob_at(tree, &path)?
            .ok_or_else(|| Error::Invalid(format!("{path} is missing")))?;
        serde_json::from_slice(&bytes).map_err(|e| Error::Invalid(format!("{path}: {e}")))?
    };
    let document = record::document(d);
    let (kind, summary, trailers) = match rec {
        Some(r) => (
            EventKind::DiscussRound,
            round_summary(d, r),
            vec![
                (
                    "Round".to_owned(),
                    format!("{} {}", r.number, r.kind.as_str()),
                ),
                (
                    "State".to_owned(),
                    r.state.map_or("none", |s| s.as_str()).to_owned(),
                ),
            ],
        ),
        None => (
            EventKind::DiscussRound,
            format!(
                "No round ran: {}",
                d.notes.last().cloned().unwrap_or_default()
            ),
            vec![],
        ),
    };
    let expected = before;
    store.transact(sid, |txn| {
        // A round another process recorded meanwhile is not recorded twice.
        let now = txn.read_file(sid, &record::state_path(&d.slug))?;
        let rounds = now
            .and_then(|b| serde_json::from_slice::<Discussion>(&b).ok())
            .map_or(0, |x| x.rounds.len());
        if rounds != expected {
            return Err(Error::conflict(
                format!("the discussion of session {sid} was advanced by another process"),
                Some("let it finish; `git tlv4 status` shows where it stands".into()),
            ));
        }
        for (p, b) in &files {
            if p.starts_with("runs/") {
                txn.write_record(p, b.clone())?;
            } else {
                txn.write_file(p, b.clone())?;
            }
        }
        // The output document lives in the session's tree, where `export` carries it.
        let tree = txn.store().commit_tree(txn.tip)?;
        let doc_tree = put_document(txn.store(), tree, &plan.document, document.as_bytes())?;
        txn.replace_tree(doc_tree);
        let (status, pause) = match d.status {
            Status::Running => (SessionStatus::Active, None),
            Status::AwaitingDecision => (
                SessionStatus::Paused,
                Some(Pause {
                    until: None,
                    kind: PauseKind::Discuss,
                    task: None,
                    reason: "Unanimous agreement was detected and the members' reasons are much the same; check the diversity of the reasoning before adopting it.".into(),
                    next: vec![
                        format!("git tlv4 discuss --session {sid} --decide adopt"),
                        format!("git tlv4 discuss --session {sid} --decide challenge"),
                    ],
                }),
            ),
            Status::Ended(_) => (SessionStatus::Completed, None),
        };
        txn.state.session.status = status;
        txn.state.control.pause = pause;
        let mut event = Event::session(kind, summary.clone()).with("Discussion", d.slug.clone());
        for (k, v) in &trailers {
            event = event.with(&format!("Discussion-{k}"), v.clone());
        }
        if let Status::Ended(e) = d.status {
            event = event.with("Discussion-End", e.as_str().to_owned());
        }
        if d.status == Status::AwaitingDecision {
            event = event.with("Paused", PauseKind::Discuss.as_str());
        }
        Ok(Some(event))
    })?;
    Ok(())
}

fn agent_name(d: &Discussion, role: &str, task: &str) -> String {
    if task.ends_with("-MODERATOR") {
        return d.moderator.clone();
    }
    let seat = task.rsplit('-').next().unwrap_or(role).to_ascii_lowercase();
    d.seats
        .iter()
        .find(|s| s.role == seat)
        .map_or_else(|| role.to_owned(), |s| s.agent.clone())
}

/// `tree` with `bytes` at `path` (outside the pipeline folder).
fn put_document(
    store: &Store,
    tree: gix::ObjectId,
    path: &str,
    bytes: &[u8],
) -> Result<gix::ObjectId> {
    let git = |e: gix::Error| Error::git("cannot write the discussion document", e);
    let repo = store.repo();
    let blob = repo.write_blob(bytes).map_err(git)?.detach();
    let mut editor = repo.edit_tree(tree).map_err(git)?;
    editor
        .upsert(path, gix::object::tree::EntryKind::Blob, blob)
        .map_err(git)?;
    Ok(editor.write().map_err(git)?.detach())
}

/// The commit body of round `r`.
fn round_summary(d: &Discussion, r: &protocol::RoundRecord) -> String {
    let mut s = format!(
        "Round {} ({}) of \"{}\": {}",
        r.number,
        r.kind.title(),
        d.topic,
        r.state
            .map_or("not rated".into(), |x| x.as_str().to_owned())
    );
    s.push_str(&format!(
        "; next: {}",
        match r.next {
            protocol::Next::Round(k) => k.title().to_owned(),
            protocol::Next::Check => "false-consensus check".into(),
            protocol::Next::Stop => "end".into(),
        }
    ));
    for t in &r.turns {
        s.push_str(&format!(
            "\n{} ({}): {}",
            t.role,
            t.agent,
            match (&t.contribution, &t.unresponsive) {
                (Some(_), _) if t.sent_back.is_empty() => "contributed".to_owned(),
                (Some(_), _) => format!("contributed after {} send-back(s)", t.sent_back.len()),
                (None, Some(why)) => format!("unresponsive: {why}"),
                (None, None) => "no contribution".into(),
            }
        ));
    }
    for n in &r.notes {
        s.push_str(&format!("\n{n}"));
    }
    s
}

/// Records the user's decision at a surface consensus as one event; the discussion runs on
/// with the next [`advance`].
pub fn decide(store: &Store, sid: &SessionId, decision: Decision) -> Result<Discussion> {
    let tip = store.tip(sid)?;
    let mut d = read(store, sid, tip)?;
    d.decide(decision).map_err(|e| {
        Error::state(
            format!("session {sid}: {e}"),
            Some("`git tlv4 status` shows where it stands".into()),
        )
    })?;
    let (path, bytes) = record::state_file(&d);
    let plan: Plan = {
        let tree = store.commit_tree(tip)?;
        let p = format!("{}/{}", session_dir(sid), plan_path(&d.slug));
        serde_json::from_slice(&store.read_blob_at(tree, &p)?.unwrap_or_default())
            .map_err(|e| Error::Invalid(format!("{p}: {e}")))?
    };
    let document = record::document(&d);
    let word = match decision {
        Decision::Adopt => "adopt",
        Decision::Challenge => "challenge",
    };
    store.transact(sid, |txn| {
        txn.write_file(&path, bytes.clone())?;
        let tree = txn.store().commit_tree(txn.tip)?;
        let t = put_document(txn.store(), tree, &plan.document, document.as_bytes())?;
        txn.replace_tree(t);
        txn.state.control.pause = None;
        txn.state.session.status = match d.status {
            Status::Ended(_) => SessionStatus::Completed,
            _ => SessionStatus::Active,
        };
        Ok(Some(
            Event::session(
                EventKind::UserDecision,
                match decision {
                    Decision::Adopt => "discussion: the user adopted the consensus".to_owned(),
                    Decision::Challenge => {
                        "discussion: the user asked for more challenge".to_owned()
                    }
                },
            )
            .with("Decision", word.to_owned())
            .with("Discussion", d.slug.clone()),
        ))
    })?;
    Ok(d)
}

/// Where the output document of session `sid` is, in its tree.
pub fn document_path(store: &Store, sid: &SessionId) -> Result<String> {
    let tip = store.tip(sid)?;
    let d = read(store, sid, tip)?;
    let tree = store.commit_tree(tip)?;
    let p = format!("{}/{}", session_dir(sid), plan_path(&d.slug));
    let plan: Plan = serde_json::from_slice(&store.read_blob_at(tree, &p)?.unwrap_or_default())
        .map_err(|e| Error::Invalid(format!("{p}: {e}")))?;
    Ok(plan.document)
}

/// Whether a discussion's end is one the user should hear about as a problem.
pub fn troubled(end: End) -> bool {
    matches!(end, End::FellBack | End::ApiError | End::TimedOut)
}
