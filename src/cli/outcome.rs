//! What a completed session came to: the verdicts that matter (gate, review, tests), what
//! it changed in the code against its base, and how to land it. `status` shows it.

use tlv4_core::error::Result;
use tlv4_core::model::State;
use tlv4_store::store::Store;

/// The outcome of a completed session, in `status --json` as `outcome`.
#[derive(Debug, serde::Serialize)]
pub struct OutcomeJson {
    /// `ready` when every verdict passed and the code changed; `attention` otherwise.
    pub state: &'static str,
    /// The last verdict of each kind that ran: `gate`, `review`, `tests`.
    pub verdicts: Vec<KindVerdict>,
    /// Why it needs attention, one line each (empty when ready).
    pub concerns: Vec<String>,
    /// What changed in the code against the base, `.tlv4/` left out.
    pub changed: Changed,
    /// Where it stands on its way in: the export branch, if made, and whether `HEAD` has it.
    pub export: Option<String>,
    /// Whether the export branch is merged into `HEAD`.
    pub landed: bool,
    /// The commands that land it, in order.
    pub land: Vec<String>,
}

/// One verdict of [`OutcomeJson`].
#[derive(Debug, serde::Serialize)]
pub struct KindVerdict {
    /// `gate`, `review` or `tests`.
    pub kind: &'static str,
    /// The task that gave it.
    pub task: String,
    /// The verdict as recorded (`PASS`, `CONDITIONAL`, `pass`, …).
    pub verdict: String,
    /// Its score, when it scores.
    pub score: Option<f64>,
    /// Its one line.
    pub summary: String,
}

/// The code diff against the base, `.tlv4/` left out.
#[derive(Debug, Default, serde::Serialize)]
pub struct Changed {
    /// Files changed.
    pub files: usize,
    /// Lines added.
    pub insertions: u64,
    /// Lines removed.
    pub deletions: u64,
    /// `path +added -removed` for each file (binary files count no lines).
    pub stat: Vec<String>,
}

/// The kinds reported, by the task prefix that gives them.
const KINDS: [(&str, &str); 3] = [
    ("QUALITY-", "gate"),
    ("REVIEW-", "review"),
    ("TEST-", "tests"),
];

/// The outcome of `state` at `tip`.
pub(super) fn of(store: &Store, state: &State, tip: gix::ObjectId) -> Result<OutcomeJson> {
    let sid = &state.session.id;
    let mut verdicts = Vec::new();
    let mut concerns = Vec::new();
    for (prefix, kind) in KINDS {
        // Ids sort as they were made: `REVIEW-001` < `REVIEW-001-R1` < `REVIEW-002`.
        let Some((task, v)) = state
            .control
            .verdicts
            .iter()
            .rfind(|(id, _)| id.starts_with(prefix))
        else {
            continue;
        };
        let ok = match kind {
            "gate" => v.verdict == "PASS",
            "review" => v.verdict == "APPROVE",
            _ => v.verdict == "pass" && v.score.is_none_or(|s| s >= 95.0),
        };
        if !ok {
            concerns.push(format!("{kind} {task}: {}", v.summary));
        }
        verdicts.push(KindVerdict {
            kind,
            task: task.clone(),
            verdict: v.verdict.clone(),
            score: v.score,
            summary: v.summary.clone(),
        });
    }
    let changed = changed(store, &state.session.base, tip)?;
    if changed.files == 0 {
        concerns.push("the code is unchanged against the base: nothing to land".into());
    }
    let export_ref = tlv4_store::store::refs::export_ref(sid);
    let export = store.try_ref(&export_ref)?;
    let landed = match (export, store.head_commit().ok()) {
        (Some(e), Some(head)) => store.is_ancestor(e, head)?,
        _ => false,
    };
    let mut land = Vec::new();
    if export.is_none() {
        land.push(format!("git tlv4 export --session {sid}"));
    }
    if !landed {
        land.push(format!("git merge tlv4-export/{sid}"));
    }
    Ok(OutcomeJson {
        state: if concerns.is_empty() {
            "ready"
        } else {
            "attention"
        },
        verdicts,
        concerns,
        changed,
        export: export.map(|_| export_ref),
        landed,
        land,
    })
}

/// `git diff --numstat BASE TIP`, `.tlv4/` left out.
fn changed(store: &Store, base: &str, tip: gix::ObjectId) -> Result<Changed> {
    let tip = tip.to_string();
    let text = tlv4_core::git::run(
        store.workdir(),
        &[
            "diff",
            "--numstat",
            "--no-renames",
            base,
            &tip,
            "--",
            ".",
            ":(exclude).tlv4",
        ],
    )?;
    let mut out = Changed::default();
    for line in text.lines() {
        let mut parts = line.splitn(3, '\t');
        let (Some(added), Some(removed), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (a, r) = (added.parse().unwrap_or(0), removed.parse().unwrap_or(0));
        out.files += 1;
        out.insertions += a;
        out.deletions += r;
        out.stat.push(format!("{path} +{a} -{r}"));
    }
    Ok(out)
}

impl OutcomeJson {
    /// The lines `status` prints.
    pub fn lines(&self) -> String {
        let mut out = format!(
            "  outcome   {}\n",
            if self.concerns.is_empty() {
                "ready to land"
            } else {
                "needs attention: the tasks completed, but not everything passed"
            }
        );
        for v in &self.verdicts {
            out.push_str(&format!(
                "            {:<7}{}: {}\n",
                v.kind, v.task, v.summary
            ));
        }
        for c in &self.concerns {
            out.push_str(&format!("            ! {c}\n"));
        }
        let c = &self.changed;
        out.push_str(&format!(
            "  changed   {} file(s), +{} -{} against the base (.tlv4/ left out)\n",
            c.files, c.insertions, c.deletions
        ));
        for s in c.stat.iter().take(20) {
            out.push_str(&format!("            {s}\n"));
        }
        if c.stat.len() > 20 {
            out.push_str(&format!("            … and {} more\n", c.stat.len() - 20));
        }
        if self.landed {
            out.push_str("  landed    the export branch is merged into HEAD\n");
        } else {
            out.push_str("  land it   ");
            out.push_str(&self.land.join(", then "));
            out.push('\n');
        }
        out
    }
}
