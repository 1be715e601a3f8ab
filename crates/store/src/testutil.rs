//! Helpers shared by the unit tests of this crate and those above: the hermetic `git` and
//! test repository of `tlv4-core`, and a session to work on.

pub use tlv4_core::testutil::*;

/// Starts a session on `store`'s `HEAD` holding `tasks` (id and role, all pending, none
/// blocked), as the coordinator's `start` would write it in its first event: the tests of
/// this crate need a session, not a pipeline.
pub fn start_session(
    store: &crate::store::Store,
    text: &str,
    pipeline: &str,
    tasks: &[(&str, &str)],
) -> tlv4_core::model::SessionId {
    use tlv4_core::model::{Event, EventKind, Priority, Role, Session, State, Task, TaskStatus};
    let base = store.head_commit().expect("a HEAD commit");
    let tree = store.commit_tree(base).expect("its tree");
    let (sid, _) = store
        .free_id(text, &tlv4_core::clock::today_compact(), 1, tree)
        .expect("a free id");
    let now = tlv4_core::clock::now_rfc3339();
    let tasks = tasks
        .iter()
        .map(|&(id, role)| {
            let task = Task {
                id: id.parse().expect("a task id"),
                role: Role::from(role),
                status: TaskStatus::Pending,
                blocked_by: Vec::new(),
                phase: "implementation".into(),
                priority: Priority::P0,
                discuss: None,
                inner_loop: false,
                attempts: 0,
                description: format!("{id} of the test session"),
                owner: None,
                result: None,
            };
            (task.id.clone(), task)
        })
        .collect();
    let state = State {
        session: Session::new(sid.clone(), text, pipeline, false, base.to_string(), now),
        tasks,
        control: Default::default(),
    };
    let event = Event::session(EventKind::SessionStarted, format!("Task: {text}"))
        .with("Pipeline", pipeline)
        .with("Base", base.to_string());
    store
        .create_session(base, vec![(state, Default::default(), event)])
        .expect("the session is created");
    sid
}
