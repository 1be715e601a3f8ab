//! `git tlv4 graph`: the task graph a session really has, read from its tip and its events,
//! drawn as text, Mermaid or Graphviz DOT.
//!
//! The graph is the tasks of the tip tree (`tasks/*.toml`) with their `blocked_by` edges,
//! plus what the pipeline definition cannot know: revisions (`-R1`, an edge from the task
//! revised), fix iterations (`FIX-001`, `TEST-001-I2`), checkpoint and gate verdicts
//! (`control.toml`), the code merged by a task (its event's `Tlv4-Merged` trailer) and the
//! session a fork came from. Nodes are ranked by dependency depth: a task's rank is one more
//! than the highest rank of what it waits for. The report's inline SVG is laid out on the
//! same ranks.

use std::collections::BTreeMap;
use std::io::IsTerminal;

use tlv4_core::error::Result;
use tlv4_core::model::{Role, SessionId, State, TaskId};
use tlv4_store::store::Store;

use super::Ctx;
use tlv4_core::text::short_id;

/// Arguments of `graph`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Text lists the tasks by rank (dependency depth), each with what it waits for; it is coloured \
by status on a colour terminal (not with NO_COLOR set or TERM=dumb). Mermaid comes in a \
```mermaid fence, ready to paste into a pull request or issue; DOT renders with Graphviz \
(`git tlv4 graph --format dot | dot -Tsvg > graph.svg`).")]
pub struct Args {
    /// Output format: text, mermaid or dot
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    pub format: Format,
    /// Print the nodes and edges as JSON instead
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
}

/// A drawing format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Ranked listing for the terminal.
    Text,
    /// A Mermaid flowchart.
    Mermaid,
    /// A Graphviz digraph.
    Dot,
}

/// What a node is, beyond being a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum NodeKind {
    /// A task of the pipeline (or added by the coordinator: IMPL, specialists).
    Task,
    /// A revision of another task (`DRAFT-002-R1`).
    Revision,
    /// A fix task asked for by a test run (`FIX-001`).
    Fix,
    /// A later test run after a fix (`TEST-001-I2`).
    Iteration,
    /// A supervisor checkpoint (`CHECKPOINT-001`).
    Checkpoint,
    /// The spec readiness gate (`QUALITY-001`).
    Gate,
}

impl NodeKind {
    fn of(id: &TaskId, role: &Role) -> NodeKind {
        let s = id.as_str();
        if crate::coordinator::revise::base_id(id) != *id {
            NodeKind::Revision
        } else if id.prefix() == "FIX" {
            NodeKind::Fix
        } else if s
            .rsplit_once("-I")
            .is_some_and(|(_, n)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        {
            NodeKind::Iteration
        } else if id.prefix() == "CHECKPOINT" || *role == Role::Supervisor {
            NodeKind::Checkpoint
        } else if id.prefix() == "QUALITY" {
            NodeKind::Gate
        } else {
            NodeKind::Task
        }
    }
}

/// One task of the graph.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct Node {
    /// The task id.
    pub id: TaskId,
    /// Its role.
    pub role: String,
    /// Its pipeline phase.
    pub phase: String,
    /// `ready`, `blocked`, `in_progress`, `completed` or `failed`.
    pub status: &'static str,
    /// What kind of task it is.
    pub kind: NodeKind,
    /// Dependency depth, from 0.
    pub rank: usize,
    /// How many times it was claimed.
    pub attempts: u32,
    /// Its verdict, for a quality task (`pass`, `PASS`, `fix_required`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// The code it merged into the session (full commit id of the snapshot).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged: Option<String>,
}

/// What an edge says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum EdgeKind {
    /// `to` waits for `from` (`to`'s `blocked_by` names `from`).
    Depends,
    /// `to` is a revision of `from`.
    Revises,
}

/// One edge of the graph.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct Edge {
    /// Where it starts.
    pub from: TaskId,
    /// Where it ends.
    pub to: TaskId,
    /// What it says.
    pub kind: EdgeKind,
}

/// The task graph of a session at its tip.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct Graph {
    /// The format version of `graph --json`.
    pub schema: u32,
    /// The session.
    pub session: SessionId,
    /// The session's status.
    pub status: &'static str,
    /// The pipeline it runs.
    pub pipeline: String,
    /// For a fork: the session and event it was forked from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<tlv4_core::model::ForkOrigin>,
    /// The tasks, in dependency order.
    pub nodes: Vec<Node>,
    /// Dependencies first (in node order), then revisions.
    pub edges: Vec<Edge>,
}

impl Graph {
    /// Reads the graph of `sid` at its tip.
    pub(super) fn read(store: &Store, sid: &SessionId) -> Result<Graph> {
        let (tip, state) = store.read_state(sid)?;
        let events = store.log_from(sid, tip, None)?;
        Ok(Graph::of(&state, &events))
    }

    /// The graph of `state`, with the merges `events` (newest first) record.
    pub(super) fn of(state: &State, events: &[tlv4_store::store::LoggedEvent]) -> Graph {
        let mut merged: BTreeMap<&str, &str> = BTreeMap::new();
        for e in events {
            if let (Some(task), Some(m)) = (&e.task, e.trailer("Merged")) {
                // Newest first: the first one seen is the task's latest merge.
                merged.entry(task.as_str()).or_insert(m);
            }
        }
        let ordered = state.ordered();
        let mut rank: BTreeMap<&TaskId, usize> = BTreeMap::new();
        for t in &ordered {
            let r = t
                .blocked_by
                .iter()
                .filter_map(|d| rank.get(d))
                .map(|r| r + 1)
                .max()
                .unwrap_or(0);
            rank.insert(&t.id, r);
        }
        let nodes = ordered
            .iter()
            .map(|t| Node {
                id: t.id.clone(),
                role: t.role.to_string(),
                phase: t.phase.clone(),
                status: state.display_status(t),
                kind: NodeKind::of(&t.id, &t.role),
                rank: rank[&t.id],
                attempts: t.attempts,
                verdict: state
                    .control
                    .verdicts
                    .get(t.id.as_str())
                    .map(|v| v.verdict.clone()),
                merged: merged.get(t.id.as_str()).map(|m| (*m).to_owned()),
            })
            .collect();
        let mut edges = Vec::new();
        for t in &ordered {
            for d in t.blocked_by.iter().filter(|d| state.tasks.contains_key(*d)) {
                edges.push(Edge {
                    from: d.clone(),
                    to: t.id.clone(),
                    kind: EdgeKind::Depends,
                });
            }
        }
        for t in &ordered {
            if let Some(of) = revision_of(state, t) {
                edges.push(Edge {
                    from: of,
                    to: t.id.clone(),
                    kind: EdgeKind::Revises,
                });
            }
        }
        Graph {
            schema: super::JSON_SCHEMA,
            session: state.session.id.clone(),
            status: state.session.status.as_str(),
            pipeline: state.session.pipeline.clone(),
            forked_from: state.session.forked_from.clone(),
            nodes,
            edges,
        }
    }

    /// The nodes of each rank, in node order.
    pub(super) fn ranks(&self) -> Vec<Vec<&Node>> {
        let mut out: Vec<Vec<&Node>> = Vec::new();
        for n in &self.nodes {
            if out.len() <= n.rank {
                out.resize_with(n.rank + 1, Vec::new);
            }
            out[n.rank].push(n);
        }
        out
    }

    /// One line about the session: id, status, pipeline, and where a fork came from.
    pub(super) fn title(&self) -> String {
        let mut t = format!("{} ({}, {})", self.session, self.status, self.pipeline);
        if let Some(f) = &self.forked_from {
            t.push_str(&format!(
                ", forked from {} at {}",
                f.session,
                short_id(&f.event)
            ));
        }
        t
    }

    /// The ranked listing: one line per task, each with its status and what it waits for.
    pub(super) fn text(&self, colour: bool) -> String {
        let paint = |status: &str, text: &str| {
            if colour {
                format!("\x1b[{}m{text}\x1b[0m", ansi(status))
            } else {
                text.to_owned()
            }
        };
        let mut deps: BTreeMap<&TaskId, Vec<&str>> = BTreeMap::new();
        let mut revises: BTreeMap<&TaskId, &TaskId> = BTreeMap::new();
        for e in &self.edges {
            match e.kind {
                EdgeKind::Depends => deps.entry(&e.to).or_default().push(e.from.as_str()),
                EdgeKind::Revises => {
                    revises.insert(&e.to, &e.from);
                }
            }
        }
        let id_w = self.nodes.iter().map(|n| n.id.as_str().len()).max();
        let id_w = id_w.unwrap_or(0);
        let role_w = self.nodes.iter().map(|n| n.role.len()).max().unwrap_or(0);
        let mut out = format!("session {}\n", self.title());
        for (r, nodes) in self.ranks().iter().enumerate() {
            out.push_str(&format!("\nrank {r}\n"));
            for n in nodes {
                let mut line = format!(
                    "  {} {:<id_w$}  {:<role_w$}  {}",
                    paint(n.status, glyph(n.status)),
                    n.id.as_str(),
                    n.role,
                    paint(n.status, &format!("{:<11}", n.status)),
                );
                let mut notes = Vec::new();
                if let Some(v) = &n.verdict {
                    notes.push(format!("verdict {v}"));
                }
                if let Some(m) = &n.merged {
                    notes.push(format!("merged {}", short_id(m)));
                }
                if let Some(of) = revises.get(&n.id) {
                    notes.push(format!("revises {of}"));
                }
                match n.kind {
                    NodeKind::Fix => notes.push("fix".into()),
                    NodeKind::Iteration => notes.push("test iteration".into()),
                    _ => {}
                }
                if let Some(d) = deps.get(&n.id) {
                    notes.push(format!("<- {}", d.join(", ")));
                }
                if !notes.is_empty() {
                    line.push_str("  ");
                    line.push_str(&notes.join("  "));
                }
                out.push_str(line.trim_end());
                out.push('\n');
            }
        }
        out
    }

    /// A Mermaid flowchart in a ```mermaid fence: one node per task (class = its status),
    /// `-->` for a dependency, `-.->|revision|` for a revision.
    pub(super) fn mermaid(&self) -> String {
        let mut out = String::from("```mermaid\n---\n");
        out.push_str(&format!("title: \"{}\"\n", mermaid_text(&self.title())));
        out.push_str("---\nflowchart TD\n");
        for n in &self.nodes {
            out.push_str(&format!(
                "  {}[\"{}\"]:::{}\n",
                mermaid_id(&n.id),
                mermaid_text(&label(n)).replace('\n', "<br/>"),
                n.status
            ));
        }
        for e in &self.edges {
            let arrow = match e.kind {
                EdgeKind::Depends => "-->",
                EdgeKind::Revises => "-.->|revision|",
            };
            out.push_str(&format!(
                "  {} {arrow} {}\n",
                mermaid_id(&e.from),
                mermaid_id(&e.to)
            ));
        }
        for s in STATUSES {
            let (fill, stroke) = colours(s);
            out.push_str(&format!(
                "  classDef {s} fill:{fill},stroke:{stroke},color:#111\n"
            ));
        }
        out.push_str("```\n");
        out
    }

    /// A Graphviz digraph: boxes filled by status, dashed edges for revisions.
    pub(super) fn dot(&self) -> String {
        let mut out = format!("digraph {} {{\n", dot_string(self.session.as_str()));
        out.push_str(&format!(
            "  label={}; labelloc=t; rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n",
            dot_string(&self.title())
        ));
        for n in &self.nodes {
            let (fill, stroke) = colours(n.status);
            out.push_str(&format!(
                "  {} [label={}, fillcolor=\"{fill}\", color=\"{stroke}\", class=\"{}\"];\n",
                dot_string(n.id.as_str()),
                dot_string(&label(n)),
                n.status
            ));
        }
        for e in &self.edges {
            let attrs = match e.kind {
                EdgeKind::Depends => "",
                EdgeKind::Revises => " [style=dashed, label=\"revision\"]",
            };
            out.push_str(&format!(
                "  {} -> {}{attrs};\n",
                dot_string(e.from.as_str()),
                dot_string(e.to.as_str())
            ));
        }
        out.push_str("}\n");
        out
    }
}

/// The task a revision revises: the `Revision of:` line of its description (§6 of the state
/// format), else the task its id derives from.
fn revision_of(state: &State, t: &tlv4_core::model::Task) -> Option<TaskId> {
    let named = t
        .description
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("Revision of: "))
        .and_then(|s| s.trim().parse::<TaskId>().ok())
        .filter(|id| *id != t.id && state.tasks.contains_key(id));
    named.or_else(|| {
        let base = crate::coordinator::revise::base_id(&t.id);
        (base != t.id && state.tasks.contains_key(&base)).then_some(base)
    })
}

/// Every displayed status, for the legends.
pub(super) const STATUSES: [&str; 5] = ["completed", "in_progress", "ready", "blocked", "failed"];

/// Fill and stroke colours of a status (Mermaid, DOT and the report's SVG).
pub(super) fn colours(status: &str) -> (&'static str, &'static str) {
    match status {
        "completed" => ("#c8e6c9", "#2e7d32"),
        "in_progress" => ("#fff3c4", "#b28704"),
        "ready" => ("#cfe8fc", "#1565c0"),
        "failed" => ("#ffcdd2", "#c62828"),
        _ => ("#eeeeee", "#757575"),
    }
}

/// The ANSI SGR code of a status.
fn ansi(status: &str) -> &'static str {
    match status {
        "completed" => "32",
        "in_progress" => "33",
        "ready" => "36",
        "failed" => "31",
        _ => "2",
    }
}

/// A mark that says the status without colour.
fn glyph(status: &str) -> &'static str {
    match status {
        "completed" => "●",
        "in_progress" => "◐",
        "ready" => "○",
        "failed" => "✗",
        _ => "·",
    }
}

/// A node's label: the id, then role and status, then verdict and merge, one per line.
pub(super) fn label(n: &Node) -> String {
    let mut l = format!("{}\n{} · {}", n.id, n.role, n.status);
    if let Some(v) = &n.verdict {
        l.push_str(&format!("\nverdict {v}"));
    }
    if let Some(m) = &n.merged {
        l.push_str(&format!("\nmerged {}", short_id(m)));
    }
    l
}

/// A Mermaid node id: task ids have letters, digits and `-`; Mermaid ids take `_`.
fn mermaid_id(id: &TaskId) -> String {
    id.as_str().replace('-', "_")
}

/// Text inside a quoted Mermaid label: quotes and markup characters as entity codes.
fn mermaid_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '#' => out.push_str("#35;"),
            _ => out.push(c),
        }
    }
    out
}

/// A DOT quoted string.
fn dot_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            _ => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Whether stdout takes colour: a terminal, `NO_COLOR` unset or empty, `TERM` not `dumb`.
fn colour_stdout() -> bool {
    std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let (store, sid) = ctx.session()?;
    let graph = Graph::read(&store, &sid)?;
    if args.json {
        ctx.ui.json(&graph);
        return Ok(());
    }
    let text = match args.format {
        Format::Text => graph.text(colour_stdout()),
        Format::Mermaid => graph.mermaid(),
        Format::Dot => graph.dot(),
    };
    ctx.ui.out(text.trim_end());
    Ok(())
}
