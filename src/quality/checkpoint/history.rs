//! What a checkpoint reads besides the documents: the session state at the tip it started
//! from, the event log up to that tip, and the message bus.

use std::collections::{BTreeMap, BTreeSet};

use crate::agents::TaskInput;
use crate::quality::QualityContext;
use tlv4_core::model::{Message, State, TaskId, TaskStatus};
use tlv4_specdoc::spec::{self, Kind, Spec};
use tlv4_store::store::{LoggedEvent, Store};

/// The session as the checkpoint sees it; each part is `None` when it could not be read,
/// with the reason in `problems`.
pub(super) struct History {
    /// The state at the tip the checkpoint started from.
    pub state: Option<State>,
    /// Events up to that tip, newest first.
    pub events: Option<Vec<LoggedEvent>>,
    /// Messages of the bus, oldest first.
    pub messages: Option<Vec<Message>>,
    /// Bus lines that were not messages.
    pub unreadable: usize,
    /// Why a part is missing.
    pub problems: Vec<String>,
}

impl History {
    /// Reads the session of `input` from the repository of `ctx`.
    pub(super) fn read(input: &TaskInput, ctx: &QualityContext) -> History {
        let mut h = History {
            state: None,
            events: None,
            messages: None,
            unreadable: 0,
            problems: Vec::new(),
        };
        let store = match Store::from_repo(ctx.repo.to_thread_local()) {
            Ok(s) => s,
            Err(e) => {
                h.problems
                    .push(format!("the repository cannot be opened: {e}"));
                return h;
            }
        };
        let sid = &input.session.id;
        match store.state_at(sid, ctx.tip) {
            Ok(state) => h.state = Some(state),
            Err(e) => h
                .problems
                .push(format!("the session state cannot be read: {e}")),
        }
        match store.log_from(sid, ctx.tip, None) {
            Ok(events) if !events.is_empty() => h.events = Some(events),
            Ok(_) => h.problems.push("the event log is empty".into()),
            Err(e) => h
                .problems
                .push(format!("the event log cannot be read: {e}")),
        }
        match store.messages(sid) {
            Ok(list) => {
                h.unreadable = list.unreadable.len();
                h.messages = Some(list.messages);
            }
            Err(e) => h
                .problems
                .push(format!("the message bus cannot be read: {e}")),
        }
        h
    }

    /// The `state_update` published for `task`, if any.
    pub(super) fn state_update(&self, task: &str) -> Option<&serde_json::Value> {
        self.messages.as_ref()?.iter().rev().find_map(|m| {
            let data = m.data.as_ref()?;
            (data["task"].as_str() == Some(task) && data["state_update"].is_object())
                .then(|| &data["state_update"])
        })
    }
}

/// One task the checkpoint looks back on.
#[derive(Debug, Clone)]
pub(super) struct ScopeTask {
    /// Its id.
    pub id: TaskId,
    /// Its role.
    pub role: String,
    /// Its status at the tip.
    pub status: Option<TaskStatus>,
    /// The paths its EXPECTED line names.
    pub expected: Vec<String>,
    /// The artifacts its last attempt reported.
    pub reported: Vec<String>,
    /// The kinds of document it produces.
    pub kinds: Vec<Kind>,
}

/// The checkpoint's scope: the tasks it waits for and everything they depend on.
#[derive(Debug, Clone, Default)]
pub(super) struct Scope {
    /// In dependency order.
    pub tasks: Vec<ScopeTask>,
    /// The tasks the checkpoint waits for directly.
    pub direct: Vec<TaskId>,
}

impl Scope {
    /// The scope of the checkpoint task of `input`, from the state when there is one, else
    /// its `blocked_by` standing for every document of `spec`.
    pub(super) fn of(input: &TaskInput, state: Option<&State>, spec: &Spec) -> Scope {
        let direct = input.task.blocked_by.clone();
        let Some(state) = state else {
            // Without the state the graph is unknown: the direct tasks stand for every
            // document the folder holds, and nothing is known to be expected.
            let tasks = direct
                .iter()
                .map(|id| ScopeTask {
                    id: id.clone(),
                    role: String::new(),
                    status: None,
                    expected: Vec::new(),
                    reported: Vec::new(),
                    kinds: Kind::ALL.into_iter().filter(|k| spec.has(*k)).collect(),
                })
                .collect();
            return Scope { tasks, direct };
        };
        let mut wanted: BTreeSet<TaskId> = BTreeSet::new();
        let mut stack: Vec<TaskId> = direct.clone();
        while let Some(id) = stack.pop() {
            if id == input.task.id || !wanted.insert(id.clone()) {
                continue;
            }
            if let Some(t) = state.tasks.get(&id) {
                stack.extend(t.blocked_by.iter().cloned());
            }
        }
        let mut tasks = Vec::new();
        for t in state.ordered() {
            if !wanted.contains(&t.id) {
                continue;
            }
            let expected = t
                .description
                .lines()
                .find_map(|l| l.trim().strip_prefix("EXPECTED:"))
                .map(paths)
                .unwrap_or_default();
            tasks.push(ScopeTask {
                kinds: kinds(&expected, &t.phase),
                id: t.id.clone(),
                role: t.role.to_string(),
                status: Some(t.status),
                expected,
                reported: t
                    .result
                    .as_ref()
                    .map(|r| r.artifacts.clone())
                    .unwrap_or_default(),
            });
        }
        // Tasks named in blocked_by but unknown to the state still count, with nothing expected.
        for id in &direct {
            if !tasks.iter().any(|t| &t.id == id) {
                tasks.push(ScopeTask {
                    id: id.clone(),
                    role: String::new(),
                    status: None,
                    expected: Vec::new(),
                    reported: Vec::new(),
                    kinds: Vec::new(),
                });
            }
        }
        Scope { tasks, direct }
    }

    /// The kinds of document produced in scope.
    pub(super) fn kinds(&self) -> BTreeSet<Kind> {
        self.tasks
            .iter()
            .flat_map(|t| t.kinds.iter().copied())
            .collect()
    }

    /// Whether a document of `kind` is produced in scope.
    pub(super) fn has(&self, kind: Kind) -> bool {
        self.tasks.iter().any(|t| t.kinds.contains(&kind))
    }

    /// The kinds the directly awaited tasks produce.
    pub(super) fn direct_kinds(&self) -> BTreeSet<Kind> {
        self.tasks
            .iter()
            .filter(|t| self.direct.contains(&t.id))
            .flat_map(|t| t.kinds.iter().copied())
            .collect()
    }
}

/// The pipeline-folder paths of an EXPECTED line (`spec/requirements/`; prose such as "a commit
/// on the task branch" names none).
fn paths(line: &str) -> Vec<String> {
    line.split([',', ';', ' '])
        .map(|p| {
            p.trim()
                .trim_matches(|c| c == '`' || c == '"' || c == '\'')
                .trim_end_matches('.')
        })
        .filter(|p| p.contains('/') && !p.starts_with('/') && !p.contains(".."))
        .map(str::to_owned)
        .collect()
}

fn kinds(expected: &[String], phase: &str) -> Vec<Kind> {
    let mut out: Vec<Kind> = expected
        .iter()
        .filter_map(|p| Kind::of_expected(p))
        .collect();
    if out.is_empty() {
        out.extend(Kind::of_phase(phase));
    }
    out.sort();
    out.dedup();
    out
}

/// Whether `path` (a file, or a folder ending in `/`) is in `spec`'s folder; the readiness
/// report is looked for under both of its locations.
pub(super) fn present(folder: &BTreeMap<String, Vec<u8>>, path: &str) -> bool {
    if path.ends_with('/') {
        return folder.keys().any(|k| k.starts_with(path));
    }
    if folder.contains_key(path) {
        return true;
    }
    Kind::of_expected(path) == Some(Kind::Readiness)
        && spec::READINESS.iter().any(|p| folder.contains_key(*p))
}

/// Every text of the documents of `kinds`, for word searches.
pub(super) fn corpus(spec: &Spec, kinds: &BTreeSet<Kind>) -> String {
    let mut out = String::new();
    for k in kinds {
        for (_, t) in spec.texts_of(*k) {
            out.push_str(t);
            out.push('\n');
        }
    }
    out
}
