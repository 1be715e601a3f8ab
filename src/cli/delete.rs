//! `git tlv4 delete`: remove a session's refs, never the only copy of its work.
//!
//! A session holds work that exists nowhere else when its code differs from its base and is
//! neither exported (`tlv4-export/<SID>`) nor reachable from a ref outside the session (merged),
//! or when a task branch or a kept run (`refs/tlv4/runs/<SID>/…`) holds commits that neither the
//! session's tip nor any other ref reaches. Such a session is refused; `--archive` archives it
//! instead (`refs/tlv4/archive/<SID>`, unmerged task work kept under `refs/tlv4/runs/`, as the
//! `archive` completion action does), which keeps every commit and frees the branch namespace.

use tlv4_core::error::{Error, Result};
use tlv4_core::model::{Event, EventKind, SessionId};
use tlv4_store::store::{Store, TOOL_REF_PREFIX, archive_ref, notes_ref, session_ref};

use super::Ctx;
use tlv4_core::text::short_id;

/// Arguments of `delete`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Archive the session instead when it holds work that exists nowhere else (every commit
    /// stays reachable from refs/tlv4/)
    #[arg(long)]
    pub archive: bool,
    /// Say what would be removed or archived, and change nothing
    #[arg(long)]
    pub dry_run: bool,
}

/// Every ref of a session that `delete` removes, with its tip: the session branch or its
/// archive, its task branches, its kept runs, its trust pin and its message notes. The export branch is the
/// session's result and is left alone.
fn session_refs(store: &Store, sid: &SessionId) -> Result<Vec<(String, gix::ObjectId)>> {
    let mut refs = Vec::new();
    for name in [session_ref(sid), archive_ref(sid), notes_ref(sid)] {
        if let Some(id) = store.try_ref(&name)? {
            refs.push((name, id));
        }
    }
    refs.extend(crate::coordinator::complete::task_branches(store, sid)?);
    // Kept runs `refs/tlv4/runs/<SID>/…`, the trust pin `refs/tlv4/pinned/<SID>`, and
    // whatever else the tool keeps per session under `refs/tlv4/<what>/<SID>` (the archive
    // is named above).
    refs.extend(
        store
            .refs_with_prefix(TOOL_REF_PREFIX)?
            .into_iter()
            .filter(|(n, _)| {
                *n != archive_ref(sid) && n.split('/').any(|part| part == sid.as_str())
            }),
    );
    Ok(refs)
}

/// Commits reachable from `tips` that no ref outside `ours` (and no commit of `also`) reaches.
fn unique_commits(
    store: &Store,
    tips: &[gix::ObjectId],
    also: &[gix::ObjectId],
    ours: &[(String, gix::ObjectId)],
) -> Result<usize> {
    if tips.is_empty() {
        return Ok(0);
    }
    let mut args: Vec<String> = vec!["rev-list".into(), "--count".into()];
    args.extend(tips.iter().map(|t| t.to_string()));
    args.push("--not".into());
    args.extend(also.iter().map(|t| t.to_string()));
    args.extend(ours.iter().map(|(n, _)| format!("--exclude={n}")));
    args.push("--all".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let count = tlv4_core::git::run(store.workdir(), &args)?;
    Ok(count.trim().parse().unwrap_or(usize::MAX))
}

/// What of a session exists nowhere else, one line each (empty: nothing).
pub(crate) fn unique_work(
    store: &Store,
    sid: &SessionId,
    refs: &[(String, gix::ObjectId)],
) -> Result<Vec<String>> {
    let mut found = Vec::new();
    let tip = store.tip(sid)?;
    let (_, state) = store.read_state(sid)?;
    let base = &state.session.base;
    let code_changed = !tlv4_core::git::output(
        store.workdir(),
        &[
            "diff",
            "--quiet",
            base,
            &tip.to_string(),
            "--",
            ".",
            ":(exclude).tlv4",
        ],
    )?
    .status
    .success();
    let exported = store
        .try_ref(&tlv4_store::store::refs::export_ref(sid))?
        .is_some();
    if code_changed && !exported && unique_commits(store, &[tip], &[], refs)? > 0 {
        found.push(format!(
            "its code differs from the base {} and is neither exported nor merged",
            short_id(base)
        ));
    }
    for (name, id) in refs {
        let kept_work = name.starts_with(tlv4_store::store::refs::RUNS_REF_PREFIX)
            || name.starts_with(&format!("{}.", session_ref(sid)));
        if kept_work {
            let n = unique_commits(store, &[*id], &[tip], refs)?;
            if n > 0 {
                found.push(format!(
                    "{} holds {n} commit(s) the session never merged",
                    tlv4_store::store::refs::short_branch(name)
                ));
            }
        }
    }
    Ok(found)
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let (store, sid) = ctx.session()?;
    let refs = session_refs(&store, &sid)?;
    let live = store.try_ref(&session_ref(&sid))?.is_some();
    let work = unique_work(&store, &sid, &refs)?;
    let verb = if args.dry_run { "would " } else { "" };
    if !work.is_empty() {
        if !(args.archive && live) {
            let what = work.join("; ");
            return Err(Error::state(
                format!(
                    "session {sid} holds work that exists nowhere else: {what}; nothing was deleted"
                ),
                Some(if live {
                    format!(
                        "archive it instead (every commit stays under refs/tlv4/): `git tlv4 delete --archive --session {sid}`; or land it first: `git tlv4 export --session {sid}`"
                    )
                } else {
                    format!(
                        "it is archived, so nothing is lost; to delete it, land its work first (`git merge tlv4-export/{sid}` after an export) or keep it"
                    )
                }),
            ));
        }
        for w in &work {
            ctx.ui.status(format!("kept: {w}"));
        }
        if args.dry_run {
            ctx.ui.status(format!(
                "would archive session {sid} to {}",
                archive_ref(&sid)
            ));
            return Ok(());
        }
        let done = crate::coordinator::complete::archive_with(&store, &sid, || {
            let w = store.transact(&sid, |_| {
                Ok(Some(
                    Event::session(
                        EventKind::UserDecision,
                        format!("delete --archive: archived to {}", archive_ref(&sid)),
                    )
                    .with("Decision", "archive"),
                ))
            })?;
            Ok(w.expect("the change always writes").commit)
        })?;
        if let crate::coordinator::complete::Done::Archived(r) = done {
            ctx.ui.status(format!(
                "archived session {sid} to {r}; its branches are removed"
            ));
        }
        return Ok(());
    }
    // Nothing would be lost: every ref of the session goes.
    for (name, _) in &refs {
        if name.starts_with(tlv4_store::store::refs::BRANCH_PREFIX) {
            store.ensure_not_checked_out(name)?;
        }
    }
    for (name, id) in &refs {
        if !args.dry_run {
            store.delete_ref(name, *id)?;
        }
        ctx.ui.status(format!(
            "{verb}delete {name} ({})",
            short_id(&id.to_string())
        ));
    }
    if store
        .try_ref(&tlv4_store::store::refs::export_ref(&sid))?
        .is_some()
    {
        ctx.ui
            .status(format!("kept tlv4-export/{sid}, the session's result"));
    }
    ctx.ui.status(format!(
        "{verb}delete session {sid}: nothing it held is lost"
    ));
    Ok(())
}
