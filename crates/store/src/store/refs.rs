//! Every ref name git-tlv4 reads or writes, built here and nowhere else
//! (`specs/state-format.md` names the same refs).
//!
//! | ref | what |
//! |---|---|
//! | `refs/heads/tlv4/<SID>` | a session branch |
//! | `refs/heads/tlv4/<SID>.<TASK>` | a task branch |
//! | `refs/notes/tlv4/<SID>` | the session's message bus |
//! | `refs/notes/tlv4-review` | review scores |
//! | `refs/heads/tlv4-export/<SID>` | a session's code, exported as one commit |
//! | `refs/tlv4/archive/<SID>` | an archived session |
//! | `refs/tlv4/runs/<SID>/<TASK>/<n>` | unmerged work of attempt `n` |
//! | `refs/tlv4/leases/<SID>/<TASK>` | a worker's lease on a remote |
//! | `refs/tlv4/pinned/<SID>` | the configuration a session started with (local only) |
//! | `refs/tlv4-remote/<remote>/…` | refs fetched from a remote |

use tlv4_core::model::{SessionId, TaskId};

/// Where branches live.
pub const BRANCH_PREFIX: &str = "refs/heads/";
/// Where notes live.
pub const NOTES_PREFIX: &str = "refs/notes/";
/// Ref namespace of session branches (and task branches `tlv4/<SID>.<TASK>`).
pub const SESSION_REF_PREFIX: &str = "refs/heads/tlv4/";
/// Ref namespace of message-bus notes.
pub const NOTES_REF_PREFIX: &str = "refs/notes/tlv4/";
/// The notes ref of review scores.
pub const REVIEW_NOTES_REF: &str = "refs/notes/tlv4-review";
/// Where `export` puts a session's code as one commit on the base.
pub const EXPORT_REF_PREFIX: &str = "refs/heads/tlv4-export/";
/// The namespace of the tool's own refs outside branches and notes (archives, kept runs).
pub const TOOL_REF_PREFIX: &str = "refs/tlv4/";
/// Where an archived session stays reachable: outside `refs/heads`, so branch listings
/// no longer show it.
pub const ARCHIVE_REF_PREFIX: &str = "refs/tlv4/archive/";
/// Where unmerged work is kept: `refs/tlv4/runs/<SID>/<TASK>/<n>`.
pub const RUNS_REF_PREFIX: &str = "refs/tlv4/runs/";
/// Where the leases of claimed tasks live on a remote: `refs/tlv4/leases/<SID>/<TASK>`.
pub const LEASE_REF_PREFIX: &str = "refs/tlv4/leases/";
/// Under it, on a shared remote, the workers' claims on best-of candidates: a prefix of its
/// own, which the loop's look at the remote does not fetch.
pub const CLAIM_REF_PREFIX: &str = "refs/tlv4/claims/";
/// Where the configuration a session started with is kept (never pushed: it may hold
/// secrets).
pub const PINNED_REF_PREFIX: &str = "refs/tlv4/pinned/";
/// Where the refs fetched from a remote are kept: `refs/tlv4-remote/<remote>/<ref without refs/>`.
pub const REMOTE_MIRROR_PREFIX: &str = "refs/tlv4-remote/";

/// The full ref name of a session branch.
pub fn session_ref(sid: &SessionId) -> String {
    format!("{SESSION_REF_PREFIX}{sid}")
}

/// The full ref name of the branch of task `task` in session `sid`.
pub fn task_ref(sid: &SessionId, task: &TaskId) -> String {
    format!("{}{task}", task_ref_prefix(sid))
}

/// The prefix every task branch of session `sid` starts with: `refs/heads/tlv4/<SID>.`.
pub fn task_ref_prefix(sid: &SessionId) -> String {
    format!("{SESSION_REF_PREFIX}{sid}.")
}

/// The full ref name of a session's message notes.
pub fn notes_ref(sid: &SessionId) -> String {
    format!("{NOTES_REF_PREFIX}{sid}")
}

/// The full ref name of an archived session.
pub fn archive_ref(sid: &SessionId) -> String {
    format!("{ARCHIVE_REF_PREFIX}{sid}")
}

/// The branch `export` writes a session's code to.
pub fn export_ref(sid: &SessionId) -> String {
    format!("{EXPORT_REF_PREFIX}{sid}")
}

/// The prefix of the refs keeping unmerged work of `task`: `refs/tlv4/runs/<SID>/<TASK>/`.
pub fn runs_prefix(sid: &SessionId, task: &TaskId) -> String {
    format!("{RUNS_REF_PREFIX}{sid}/{task}/")
}

/// The ref that keeps the unmerged work of attempt `attempt` of `task`.
pub fn attempt_ref(sid: &SessionId, task: &TaskId, attempt: u32) -> String {
    format!("{}{attempt}", runs_prefix(sid, task))
}

/// The ref that keeps candidate `number` of attempt `attempt` of `task` (best of N): e.g.
/// `…/IMPL-001/2-c3`, which no attempt ref (`…/IMPL-001/2`) can be.
pub fn candidate_ref(sid: &SessionId, task: &TaskId, attempt: u32, number: u32) -> String {
    format!("{}{attempt}-c{number}", runs_prefix(sid, task))
}

/// The prefix of the claims on candidates of `task` of session `sid`.
pub fn candidate_claims_prefix(sid: &SessionId, task: &TaskId) -> String {
    format!("{CLAIM_REF_PREFIX}{sid}/{task}/")
}

/// The claim on candidate `number` of `task` (of the attempt its lease names).
pub fn candidate_claim_ref(sid: &SessionId, task: &TaskId, number: u32) -> String {
    format!("{}c{number}", candidate_claims_prefix(sid, task))
}

/// The lease ref of `task` of session `sid`.
pub fn lease_ref(sid: &SessionId, task: &TaskId) -> String {
    format!("{LEASE_REF_PREFIX}{sid}/{task}")
}

/// The local ref keeping the configuration session `sid` started with.
pub fn pinned_ref(sid: &SessionId) -> String {
    format!("{PINNED_REF_PREFIX}{sid}")
}

/// A branch name without `refs/heads/`, as the git CLI and the user write it; any other
/// name as it is.
pub fn short_branch(full: &str) -> &str {
    full.strip_prefix(BRANCH_PREFIX).unwrap_or(full)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_those_of_the_state_format() {
        let sid: SessionId = "TLV4-a-20261129".parse().unwrap();
        let task: TaskId = "IMPL-001".parse().unwrap();
        assert_eq!(session_ref(&sid), "refs/heads/tlv4/TLV4-a-20261129");
        assert_eq!(
            task_ref(&sid, &task),
            "refs/heads/tlv4/TLV4-a-20261129.IMPL-001"
        );
        assert_eq!(notes_ref(&sid), "refs/notes/tlv4/TLV4-a-20261129");
        assert_eq!(archive_ref(&sid), "refs/tlv4/archive/TLV4-a-20261129");
        assert_eq!(export_ref(&sid), "refs/heads/tlv4-export/TLV4-a-20261129");
        assert_eq!(
            attempt_ref(&sid, &task, 2),
            "refs/tlv4/runs/TLV4-a-20261129/IMPL-001/2"
        );
        assert_eq!(
            lease_ref(&sid, &task),
            "refs/tlv4/leases/TLV4-a-20261129/IMPL-001"
        );
        assert_eq!(pinned_ref(&sid), "refs/tlv4/pinned/TLV4-a-20261129");
        assert_eq!(short_branch(&session_ref(&sid)), "tlv4/TLV4-a-20261129");
        assert_eq!(short_branch("refs/tags/x"), "refs/tags/x");
    }
}
