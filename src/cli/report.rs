//! `git tlv4 report`: one self-contained static HTML page about a session — its events, its
//! task graph (inline SVG), gate and checkpoint verdicts, review findings with the code around
//! each line, test results per iteration, the candidates of best-of tasks side by side with
//! their diffs (`report/candidates.rs`), discussions and messages, and cost.
//!
//! Everything on the page comes from the session's branch and notes, and much of it is text an
//! agent wrote: the page is rendered with minijinja from `report.html` with HTML auto-escaping
//! on, so no value becomes markup. The page loads nothing: no scripts at all, styles inline,
//! the graph laid out by the graph's ranks as SVG (`report/svg.rs`), with no Graphviz needed.

use std::io::Write;
use std::path::PathBuf;

use tlv4_core::error::{Error, Result};
use tlv4_store::store::{HistoryEntry, REVIEW_NOTES_REF, Store, session_dir};

use super::Ctx;
use super::graph::Graph;
use tlv4_core::text::short_id;

mod candidates;
mod svg;

/// Arguments of `report`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write the page to FILE (`-` for standard output; default: <SID>.html here)
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The page template; see the module comment.
const TEMPLATE: &str = include_str!("report.html");

/// Lines of code shown before and after a finding's line.
const CONTEXT_LINES: usize = 3;

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let (store, sid) = ctx.session()?;
    let page = render(&store, &sid)?;
    match args.output.as_deref() {
        Some(p) if p.as_os_str() == "-" => {
            ctx.ui
                .out_bytes(page.as_bytes())
                .map_err(|e| Error::io("cannot write the report to standard output", e))?;
        }
        given => {
            let path =
                given.map_or_else(|| ctx.cwd.join(format!("{sid}.html")), |p| ctx.cwd.join(p));
            write_file(&path, page.as_bytes())?;
            ctx.ui.status(format!("wrote {}", path.display()));
        }
    }
    Ok(())
}

/// Writes `bytes` to `path`. A new or regular file is written through a temporary file beside
/// it, so that a failed write leaves an earlier report whole; anything else (`/dev/stdout`, a
/// FIFO, a symbolic link) is written into, never replaced.
fn write_file(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    // A path that cannot take the page is bad input (exit 1), not an internal failure.
    let what = |e: std::io::Error| {
        Error::Invalid(format!(
            "cannot write the report to `{}`: {e}",
            path.display()
        ))
    };
    let replaceable = match std::fs::symlink_metadata(path) {
        Ok(m) => m.file_type().is_file(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => return Err(what(e)),
    };
    if !replaceable {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(path)
            .map_err(what)?;
        return f.write_all(bytes).and_then(|()| f.flush()).map_err(what);
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    // Made like any file the user writes: 0666 less the umask (a temporary file is 0600).
    let mut tmp = tempfile::Builder::new()
        .prefix(".tlv4-report")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(what)?;
    tmp.write_all(bytes).map_err(what)?;
    tmp.persist(path).map_err(|e| what(e.error))?;
    Ok(())
}

/// The whole page for session `sid`.
pub(super) fn render(store: &Store, sid: &tlv4_core::model::SessionId) -> Result<String> {
    let (tip, state) = store.read_state(sid)?;
    let history = store.history(sid, None)?;
    let events: Vec<_> = history
        .iter()
        .filter_map(|h| match h {
            HistoryEntry::Event(e) => Some(e.clone()),
            HistoryEntry::Other(_) => None,
        })
        .collect();
    let graph = Graph::of(&state, &events);
    let tree = store.commit_tree(tip)?;
    let folder = store.read_folder(tree, &session_dir(sid), &["runs"])?;
    let text = |path: &str| {
        folder
            .get(path)
            .map(|b| String::from_utf8_lossy(b).into_owned())
    };

    let verdicts: Vec<_> = state
        .control
        .verdicts
        .iter()
        .map(|(task, v)| {
            let report = if task.starts_with("QUALITY") {
                text("spec/readiness-report.md")
            } else {
                text(&format!("artifacts/{task}-report.md"))
            };
            serde_json::json!({
                "task": task,
                "verdict": v.verdict,
                "score": v.score,
                "summary": v.summary,
                "class": verdict_class(&v.verdict),
                "report": report,
            })
        })
        .collect();

    let mut tests: Vec<(u64, serde_json::Value)> = folder
        .iter()
        .filter(|(p, _)| p.starts_with("artifacts/test-runs/") && p.ends_with(".json"))
        .filter_map(|(_, b)| serde_json::from_slice::<serde_json::Value>(b).ok())
        .map(|v| (v["iteration"].as_u64().unwrap_or(0), v))
        .collect();
    tests.sort_by_key(|(n, _)| *n);
    let tests: Vec<_> = tests
        .into_iter()
        .map(|(_, mut v)| {
            let class = verdict_class(v["verdict"].as_str().unwrap_or(""));
            v["class"] = class.into();
            v
        })
        .collect();

    let discussions: Vec<_> = folder
        .iter()
        .filter(|(p, _)| p.starts_with("discussions/") && p.ends_with(".md"))
        .map(|(p, b)| serde_json::json!({"path": p, "text": String::from_utf8_lossy(b)}))
        .collect();

    let (total, cost) = super::cost::totals(store, sid, &["role", "agent", "model"])?;
    let messages = store.messages(sid)?.messages;

    let timeline: Vec<_> = history
        .iter()
        .rev()
        .map(|h| match h {
            HistoryEntry::Event(e) => serde_json::json!({
                "commit": short_id(&e.commit),
                "seq": e.seq,
                "time": e.time,
                "event": e.event,
                "task": e.task,
                "subject": e.subject,
                "summary": e.summary,
                "trailers": e.trailers.iter()
                    .filter(|(k, _)| !matches!(k.as_str(),
                        "Tlv4-Session" | "Tlv4-Event" | "Tlv4-Task" | "Tlv4-Role" | "Tlv4-Seq"))
                    .map(|(k, v)| format!("{}: {v}", k.trim_start_matches("Tlv4-")))
                    .collect::<Vec<_>>(),
            }),
            HistoryEntry::Other(c) => serde_json::json!({
                "commit": short_id(&c.commit),
                "time": c.time,
                "event": "not an event",
                "subject": c.subject,
                "summary": c.summary,
                "trailers": [],
            }),
        })
        .collect();

    let data = serde_json::json!({
        "session": state.session,
        "tip": tip.to_string(),
        "progress": state.progress(),
        "tasks": state.ordered().into_iter().map(|t| serde_json::json!({
            "task": t,
            "state": state.display_status(t),
        })).collect::<Vec<_>>(),
        "pause": state.control.pause,
        "graph": svg::layout(&graph),
        "legend": super::graph::STATUSES.iter().map(|s| {
            let (fill, stroke) = super::graph::colours(s);
            serde_json::json!({"status": s, "fill": fill, "stroke": stroke})
        }).collect::<Vec<_>>(),
        "timeline": timeline,
        "verdicts": verdicts,
        "reviews": reviews(store, &history)?,
        "tests": tests,
        "discussions": discussions,
        "messages": messages,
        "cost": {"total": total, "by": cost},
        "best_of": candidates::data(store, sid, tip, &state)?,
    });
    let mut env = minijinja::Environment::new();
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Lenient);
    env.add_template("report.html", TEMPLATE)
        .map_err(|e| Error::Invalid(format!("the report template does not parse: {e}")))?;
    env.get_template("report.html")
        .and_then(|t| t.render(minijinja::value::Serde(&data)))
        .map_err(|e| Error::Invalid(format!("cannot render the report: {e}")))
}

/// The CSS class of a verdict: good, warn or bad.
fn verdict_class(verdict: &str) -> &'static str {
    match verdict.to_ascii_lowercase().as_str() {
        "pass" | "approve" | "low" | "consensus" => "good",
        "fail" | "block" | "high" | "fix_required" | "divergent" => "bad",
        _ => "warn",
    }
}

/// Every review noted on a commit of the session's history (a REVIEW task notes the tip it
/// started from), oldest first, each finding with the lines around it on the reviewed side.
fn reviews(store: &Store, history: &[HistoryEntry]) -> Result<Vec<serde_json::Value>> {
    let mut out = Vec::new();
    for h in history.iter().rev() {
        let (commit, subject) = match h {
            HistoryEntry::Event(e) => (&e.commit, &e.subject),
            HistoryEntry::Other(c) => (&c.commit, &c.subject),
        };
        let id: gix::ObjectId = commit
            .parse()
            .map_err(|e| Error::Git(format!("bad commit id `{commit}`: {e}")))?;
        let Some(bytes) = store.note(REVIEW_NOTES_REF, id)? else {
            continue;
        };
        let Ok(mut note) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
            continue;
        };
        let new_tree = note["new"]
            .as_str()
            .and_then(|s| s.parse::<gix::ObjectId>().ok())
            .map(|id| store.commit_tree(id).unwrap_or(id));
        if let Some(findings) = note["findings"].as_array_mut() {
            for f in findings {
                let (Some(file), Some(line)) = (f["file"].as_str(), f["line"].as_u64()) else {
                    continue;
                };
                let Some(tree) = new_tree else { continue };
                let Ok(Some(blob)) = store.read_blob_at(tree, file) else {
                    continue;
                };
                f["code"] = code_around(&String::from_utf8_lossy(&blob), line as usize).into();
            }
        }
        note["commit"] = short_id(commit).into();
        note["event"] = subject.as_str().into();
        let class = verdict_class(note["verdict"].as_str().unwrap_or(""));
        note["class"] = class.into();
        out.push(note);
    }
    Ok(out)
}

/// The lines around 1-based `line` of `text`: `{n, text, hit}` each.
fn code_around(text: &str, line: usize) -> Vec<serde_json::Value> {
    let first = line.saturating_sub(CONTEXT_LINES).max(1);
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .skip(first - 1)
        .take(line + CONTEXT_LINES + 1 - first)
        .map(|(n, l)| serde_json::json!({"n": n, "text": l, "hit": n == line}))
        .collect()
}
