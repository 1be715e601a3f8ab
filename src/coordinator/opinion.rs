//! An agent's opinion on a code review (`[roles] reviewer = "NAME"`): the rules of the
//! review run first, and the agent's findings and verdict are added on top — the stricter
//! verdict counts, its findings join the report — never used instead. An agent that fails or
//! answers out of contract leaves the rules' review, with a warning.

use crate::agents::command::{Driver, RunContext};
use crate::agents::{Outcome, TaskInput, TaskOutput};
use tlv4_core::model::Verdict;
use tlv4_review::REPORT_PATH;
use tlv4_store::store::Store;
use tlv4_store::worktree::ReadOnlyView;

use super::worker::RunData;

/// What the agent hands over, in `artifacts/<TASK>-agent-review.json`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Opinion {
    verdict: String,
    #[serde(default)]
    findings: Vec<Finding>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Finding {
    severity: String,
    #[serde(default)]
    file: String,
    #[serde(default)]
    line: Option<u64>,
    reason: String,
}

/// How strict a code-review verdict is.
fn rank(verdict: &str) -> u8 {
    match verdict {
        "BLOCK" => 2,
        "CONDITIONAL" => 1,
        _ => 0,
    }
}

/// Asks `driver` for its review of the change `input`'s task judges and folds it into the
/// rules' `output` and `verdict`. Returns the run (for the record) and warnings.
pub(crate) fn add(
    driver: &dyn Driver,
    input: &TaskInput,
    qctx: &crate::quality::QualityContext,
    output: &mut TaskOutput,
    verdict: &mut Option<Verdict>,
) -> (Option<RunData>, Vec<String>) {
    let name = driver.name().to_owned();
    let path = format!("artifacts/{}-agent-review.json", input.task.id);
    let mut asked = TaskInput {
        session: input.session.clone(),
        task: input.task.clone(),
        folder: input.folder.clone(),
        code: input.code.clone(),
    };
    asked.task.description = format!(
        "PURPOSE: Review the change of this session (base {base}..{tip}) as a second reviewer\n\
         TASK:\n  - Read the diff and the plan\n  - List the findings that matter, with severity (critical, high, medium, low), file, line and reason\n  - Give a verdict: APPROVE, CONDITIONAL or BLOCK\n\
         CONTEXT:\n  - The rules of git-tlv4 reviewed it already: {rules}\n\
         EXPECTED: {path} (a JSON object: verdict, findings: [{{severity, file, line, reason}}])\n\
         CONSTRAINTS: Read only; write nothing but {path}\n",
        base = qctx.base,
        tip = qctx.tip,
        rules = verdict
            .as_ref()
            .map_or("no verdict".to_owned(), |v| format!(
                "{} — {}",
                v.verdict, v.summary
            )),
    );
    let ran = (|| -> tlv4_core::error::Result<_> {
        if !driver.checkout() {
            let ctx = RunContext {
                max_usd: None,
                workdir: std::env::temp_dir(),
                run_dir: None,
                attempt: input.task.attempts,
                meter: Default::default(),
                deadline: None,
                env: None,
                shell: None,
            };
            return driver.run(&asked, &ctx);
        }
        let store = Store::from_repo(qctx.repo.to_thread_local())?;
        let view = ReadOnlyView::create(&store, qctx.tip)?;
        let ctx = RunContext {
            max_usd: None,
            workdir: view.path().to_path_buf(),
            run_dir: None,
            attempt: input.task.attempts,
            meter: Default::default(),
            deadline: None,
            env: None,
            shell: None,
        };
        let out = driver.run(&asked, &ctx);
        let _ = view.remove();
        out
    })();
    let out = match ran {
        Ok(out) => out,
        Err(e) => {
            return (
                None,
                vec![format!(
                    "the {name} review did not run ({e}); the rules alone judged"
                )],
            );
        }
    };
    let run = RunData {
        prompt: out.prompt.clone(),
        raw: out.raw.clone(),
        transcript: out.transcript.clone(),
        usage: out.usage.clone(),
        refusals: Vec::new(),
    };
    let parsed = match &out.output.outcome {
        Outcome::Failed(why) => Err(why.clone()),
        Outcome::Completed => out
            .output
            .files
            .iter()
            .find(|(p, _)| *p == path)
            .ok_or_else(|| format!("it wrote no {path}"))
            .and_then(|(_, bytes)| {
                let o = serde_json::from_slice::<Opinion>(bytes)
                    .map_err(|e| format!("{path} is not a review: {e}"))?;
                match o.verdict.as_str() {
                    "APPROVE" | "CONDITIONAL" | "BLOCK" => Ok((o, bytes.clone())),
                    v => Err(format!(
                        "verdict `{v}` is not APPROVE, CONDITIONAL or BLOCK"
                    )),
                }
            }),
    };
    let (opinion, bytes) = match parsed {
        Ok(found) => found,
        Err(why) => {
            return (
                Some(run),
                vec![format!(
                    "the {name} review gave no opinion ({why}); the rules alone judged"
                )],
            );
        }
    };
    // The report gets the agent's section; the stricter verdict counts.
    let mut section = format!(
        "\n## Second review: agent {name}\n\nVerdict: {}\n\n",
        opinion.verdict
    );
    if opinion.findings.is_empty() {
        section.push_str("No findings.\n");
    }
    for f in &opinion.findings {
        let at = match (f.file.as_str(), f.line) {
            ("", _) => String::new(),
            (file, Some(l)) => format!(" `{file}:{l}`"),
            (file, None) => format!(" `{file}`"),
        };
        section.push_str(&format!("- **{}**{at}: {}\n", f.severity, f.reason));
    }
    match output.files.iter_mut().find(|(p, _)| p == REPORT_PATH) {
        Some((_, report)) => report.extend_from_slice(section.as_bytes()),
        None => output
            .files
            .push((REPORT_PATH.to_owned(), section.clone().into_bytes())),
    }
    output.files.push((path, bytes));
    if let Some(v) = verdict.as_mut()
        && rank(&opinion.verdict) > rank(&v.verdict)
    {
        v.summary = format!(
            "{} (raised from {} by agent {name}: {} finding(s))",
            opinion.verdict,
            v.verdict,
            opinion.findings.len()
        );
        v.verdict = opinion.verdict.clone();
        output.summary = v.summary.clone();
    }
    (Some(run), Vec::new())
}
