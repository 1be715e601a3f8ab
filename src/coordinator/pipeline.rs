//! Pipelines as data (`specs/pipelines.toml`) and their dispatch into tasks.
//!
//! The file names roles, task metadata and, per pipeline, the task graph. Loading checks the
//! file strictly (unknown keys, unknown roles, dangling edges, cycles) and reports the file and
//! line; dispatch turns one pipeline into the `Task` records a session starts with.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use tlv4_core::error::{Error, Result};
use tlv4_core::model::{Priority, Role, SessionId, Task, TaskId, TaskStatus};

/// A task of a pipeline's graph: its id, role, the tasks it waits for, its track.
type GraphNode = (TaskId, String, Vec<TaskId>, Option<String>);

/// The pipelines file compiled into the binary.
pub const BUILTIN: &str = include_str!("../../specs/pipelines.toml");
/// Where a repository may put its own pipelines file, relative to the working tree root.
pub const OVERRIDE_PATH: &str = ".tlv4/specs/pipelines.toml";

/// Whether supervisor checkpoints are dispatched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Supervision {
    /// Checkpoint tasks run at their places.
    On,
    /// Checkpoint tasks are left out and their edges bridged.
    Off,
}

/// A parsed and validated pipelines file.
#[derive(Debug, Clone)]
pub struct PipelineSpec {
    file: String,
    text: String,
    doc: Document,
}

#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    schema: u32,
    role: BTreeMap<String, RoleSpec>,
    task: BTreeMap<String, TaskSpec>,
    pipeline: BTreeMap<String, PipelineDef>,
    #[serde(default)]
    specialist: BTreeMap<String, SpecialistSpec>,
}

/// A specialist and the signals that call for it.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecialistSpec {
    /// Prefix of its task id (`SECURITY-001`).
    pub prefix: String,
    /// P0 blocks the work downstream; P1 runs beside it.
    pub priority: Priority,
    /// Every one of these signals must have been reported.
    pub signals: Vec<String>,
    /// What it is for.
    pub purpose: String,
    /// What it checks.
    pub checks: Vec<String>,
}

/// A role: who does one kind of work.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleSpec {
    /// Prefix of its task ids.
    pub prefix: String,
    /// Further prefixes it owns (`QUALITY`, `IMPROVE` for the reviewer).
    #[serde(default)]
    pub additional_prefixes: Vec<String>,
    /// Whether one worker runs its serial chain of tasks.
    pub inner_loop: bool,
    /// Whether its tasks are checkpoints, left out when supervision is off.
    #[serde(default)]
    pub checkpoint: bool,
    /// One line about the role.
    pub summary: String,
}

#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskSpec {
    role: String,
    phase: String,
    priority: Priority,
    #[serde(default)]
    discuss: Option<String>,
    purpose: String,
    success: String,
    steps: Vec<String>,
    expected: String,
    constraints: String,
}

#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PipelineDef {
    summary: String,
    tasks: Vec<PipelineTask>,
}

#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PipelineTask {
    id: String,
    #[serde(default)]
    blocked_by: Vec<String>,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    track: Option<String>,
}

impl PipelineSpec {
    /// The pipelines of the repository at `workdir`: its override if present, else the builtin.
    pub fn load(workdir: &Path) -> Result<PipelineSpec> {
        PipelineSpec::from_files(&tlv4_core::trust::Files::read(workdir)?)
    }

    /// The pipelines of a repository configuration (a working tree's or a session's pinned
    /// one): its override if present, else the builtin.
    pub fn from_files(files: &tlv4_core::trust::Files) -> Result<PipelineSpec> {
        match files.text(OVERRIDE_PATH)? {
            Some(text) => PipelineSpec::parse(OVERRIDE_PATH, text),
            None => PipelineSpec::builtin(),
        }
    }

    /// The builtin pipelines.
    pub fn builtin() -> Result<PipelineSpec> {
        PipelineSpec::parse("specs/pipelines.toml (builtin)", BUILTIN)
    }

    /// Parses and validates `text`, naming `file` in errors.
    pub fn parse(file: &str, text: &str) -> Result<PipelineSpec> {
        let doc: Document = toml::from_str(text).map_err(|e| Error::Config {
            file: file.to_owned(),
            line: e.span().map_or(1, |s| line_of(text, s.start)),
            message: e.message().trim().to_owned(),
        })?;
        let spec = PipelineSpec {
            file: file.to_owned(),
            text: text.to_owned(),
            doc,
        };
        spec.validate()?;
        Ok(spec)
    }

    /// Pipeline names with their summaries.
    pub fn pipelines(&self) -> impl Iterator<Item = (&str, &str)> {
        self.doc
            .pipeline
            .iter()
            .map(|(k, v)| (k.as_str(), v.summary.as_str()))
    }

    /// Whether a pipeline of that name exists.
    pub fn has(&self, name: &str) -> bool {
        self.doc.pipeline.contains_key(name)
    }

    /// The names of the roles the pipelines define.
    pub fn role_names(&self) -> impl Iterator<Item = &str> {
        self.doc.role.keys().map(String::as_str)
    }

    /// Every specialist, by name.
    pub fn specialists(&self) -> &BTreeMap<String, SpecialistSpec> {
        &self.doc.specialist
    }

    /// The description of the task a specialist runs.
    pub fn specialist_description(
        &self,
        name: &str,
        sid: &SessionId,
        evidence: &[String],
    ) -> String {
        let Some(s) = self.doc.specialist.get(name) else {
            return String::new();
        };
        let mut d = format!(
            "PURPOSE: {} | Success: a report of findings with the files they concern\nTASK:\n",
            s.purpose
        );
        for c in &s.checks {
            d.push_str(&format!("  - Check {c}\n"));
        }
        d.push_str(&format!(
            "CONTEXT:\n  - Session: {sid}\n  - Signals: {}\n",
            s.signals.join(", ")
        ));
        if !evidence.is_empty() {
            d.push_str(&format!("  - Evidence: {}\n", evidence.join(", ")));
        }
        d.push_str(&format!("EXPECTED: artifacts/{}-001-report.md\nCONSTRAINTS: Read only\n---\nInnerLoop: false\nRoleSpec: specs/roles/{name}.md\n", s.prefix));
        d
    }

    fn error_at(&self, needle: &str, message: String) -> Error {
        let line = self
            .text
            .find(needle)
            .map_or(1, |at| line_of(&self.text, at));
        Error::Config {
            file: self.file.clone(),
            line,
            message,
        }
    }

    fn validate(&self) -> Result<()> {
        if self.doc.schema != 1 {
            return Err(self.error_at(
                "schema",
                format!("unknown schema {}; this build reads 1", self.doc.schema),
            ));
        }
        for (id, t) in &self.doc.task {
            let anchor = format!("[task.{id}]");
            let tid: TaskId = id
                .parse()
                .map_err(|e: tlv4_core::model::IdError| self.error_at(&anchor, e.to_string()))?;
            let Some(role) = self.doc.role.get(&t.role) else {
                return Err(self.error_at(
                    &anchor,
                    format!("task `{id}` names unknown role `{}`", t.role),
                ));
            };
            let prefix = tid.prefix();
            if role.prefix != prefix && !role.additional_prefixes.iter().any(|p| p == prefix) {
                return Err(self.error_at(
                    &anchor,
                    format!(
                        "task `{id}` has prefix `{prefix}`, which role `{}` does not own",
                        t.role
                    ),
                ));
            }
        }
        let mut prefixes = BTreeSet::new();
        for (name, s) in &self.doc.specialist {
            let anchor = format!("[specialist.{name}]");
            if s.signals.is_empty() {
                return Err(self.error_at(&anchor, format!("specialist `{name}` names no signals")));
            }
            if !prefixes.insert(s.prefix.clone())
                || self.doc.role.values().any(|r| r.prefix == s.prefix)
            {
                return Err(self.error_at(
                    &anchor,
                    format!("specialist `{name}` reuses the prefix `{}`", s.prefix),
                ));
            }
        }
        for name in self.doc.pipeline.keys() {
            self.graph(name, Supervision::On)?;
            self.graph(name, Supervision::Off)?;
        }
        Ok(())
    }

    /// The task graph of pipeline `name` ([`GraphNode`]s) in file order, with
    /// checkpoints bridged when supervision is off. Errors name the file and line.
    fn graph(&self, name: &str, supervision: Supervision) -> Result<Vec<GraphNode>> {
        let def = self
            .doc
            .pipeline
            .get(name)
            .ok_or_else(|| Error::Invalid(format!("unknown pipeline `{name}`")))?;
        let anchor = format!("[pipeline.{name}]");
        let mut nodes: Vec<GraphNode> = Vec::new();
        let mut seen = BTreeSet::new();
        for t in &def.tasks {
            let id: TaskId = t.id.parse().map_err(|e: tlv4_core::model::IdError| {
                self.error_at(&anchor, format!("pipeline `{name}`: {e}"))
            })?;
            if !seen.insert(id.clone()) {
                return Err(self.error_at(
                    &anchor,
                    format!("pipeline `{name}` lists task `{id}` twice"),
                ));
            }
            let Some(meta) = self.doc.task.get(&t.id) else {
                return Err(self.error_at(
                    &anchor,
                    format!("pipeline `{name}` uses task `{id}`, which has no [task.{id}] table"),
                ));
            };
            let role = t.role.clone().unwrap_or_else(|| meta.role.clone());
            if !self.doc.role.contains_key(&role) {
                return Err(self.error_at(
                    &anchor,
                    format!("pipeline `{name}`: task `{id}` names unknown role `{role}`"),
                ));
            }
            let mut deps = Vec::new();
            for d in &t.blocked_by {
                let dep: TaskId = d.parse().map_err(|e: tlv4_core::model::IdError| {
                    self.error_at(&anchor, format!("pipeline `{name}`: {e}"))
                })?;
                deps.push(dep);
            }
            nodes.push((id, role, deps, t.track.clone()));
        }
        for (id, _, deps, _) in &nodes {
            for d in deps {
                if !seen.contains(d) {
                    return Err(self.error_at(&anchor, format!("pipeline `{name}`: task `{id}` is blocked by `{d}`, which the pipeline does not have")));
                }
            }
        }
        if let Some(cycle) = find_cycle(&nodes) {
            let path: Vec<&str> = cycle.iter().map(TaskId::as_str).collect();
            return Err(self.error_at(
                &anchor,
                format!(
                    "pipeline `{name}` has a dependency cycle: {}",
                    path.join(" -> ")
                ),
            ));
        }
        if supervision == Supervision::Off {
            let checkpoints: BTreeMap<TaskId, Vec<TaskId>> = nodes
                .iter()
                .filter(|(_, role, _, _)| self.doc.role[role].checkpoint)
                .map(|(id, _, deps, _)| (id.clone(), deps.clone()))
                .collect();
            nodes.retain(|(id, _, _, _)| !checkpoints.contains_key(id));
            for (_, _, deps, _) in &mut nodes {
                // Bridge until no checkpoint is left (a checkpoint may wait for another one).
                while let Some(pos) = deps.iter().position(|d| checkpoints.contains_key(d)) {
                    let cp = deps.remove(pos);
                    for d in &checkpoints[&cp] {
                        if !deps.contains(d) {
                            deps.push(d.clone());
                        }
                    }
                }
            }
        }
        Ok(nodes)
    }

    /// The tasks a session running pipeline `name` starts with.
    pub fn dispatch(
        &self,
        name: &str,
        supervision: Supervision,
        sid: &SessionId,
        text: &str,
    ) -> Result<Vec<Task>> {
        if !self.has(name) {
            let known: Vec<&str> = self.doc.pipeline.keys().map(String::as_str).collect();
            return Err(Error::Invalid(format!(
                "unknown pipeline `{name}`; known pipelines: {}",
                known.join(", ")
            )));
        }
        let nodes = self.graph(name, supervision)?;
        let mut per_role: BTreeMap<&str, usize> = BTreeMap::new();
        for (_, role, _, _) in &nodes {
            *per_role.entry(role.as_str()).or_default() += 1;
        }
        let mut tasks = Vec::new();
        for (id, role, deps, track) in &nodes {
            let meta = &self.doc.task[id.as_str()];
            let role_spec = &self.doc.role[role];
            let inner_loop = role_spec.inner_loop && per_role[role.as_str()] >= 2;
            let upstream: Vec<String> = deps
                .iter()
                .map(|d| format!("{d}: {}", self.doc.task[d.as_str()].expected))
                .collect();
            let mut description = format!(
                "PURPOSE: {} | Success: {}\nTASK:\n",
                meta.purpose, meta.success
            );
            for s in &meta.steps {
                description.push_str(&format!("  - {s}\n"));
            }
            // The description is read line by line (`KEY: value`): the request goes on one
            // line, so that none of its lines is taken as a key or a separator.
            description.push_str(&format!(
                "CONTEXT:\n  - Session: {sid}\n  - Request: {}\n",
                text.split_whitespace().collect::<Vec<_>>().join(" ")
            ));
            if let Some(track) = track {
                description.push_str(&format!("  - Track: {track}\n"));
            }
            if !upstream.is_empty() {
                description.push_str(&format!(
                    "  - Upstream artifacts: {}\n",
                    upstream.join("; ")
                ));
            }
            description.push_str(&format!(
                "EXPECTED: {}\nCONSTRAINTS: {}\n---\nInnerLoop: {inner_loop}\nRoleSpec: specs/roles/{role}.md\n",
                meta.expected, meta.constraints
            ));
            tasks.push(Task {
                id: id.clone(),
                role: Role::from(role.as_str()),
                status: TaskStatus::Pending,
                blocked_by: deps.clone(),
                phase: meta.phase.clone(),
                priority: meta.priority,
                discuss: meta.discuss.clone(),
                inner_loop,
                attempts: 0,
                description,
                owner: None,
                result: None,
            });
        }
        Ok(tasks)
    }
}

/// A cycle in the graph, as the ids along it (first repeated at the end), if there is one.
fn find_cycle(nodes: &[(TaskId, String, Vec<TaskId>, Option<String>)]) -> Option<Vec<TaskId>> {
    let edges: BTreeMap<&TaskId, &Vec<TaskId>> =
        nodes.iter().map(|(id, _, deps, _)| (id, deps)).collect();
    // 0 = unvisited, 1 = on the stack, 2 = done
    let mut mark: BTreeMap<&TaskId, u8> = BTreeMap::new();
    fn visit<'a>(
        id: &'a TaskId,
        edges: &BTreeMap<&'a TaskId, &'a Vec<TaskId>>,
        mark: &mut BTreeMap<&'a TaskId, u8>,
        stack: &mut Vec<&'a TaskId>,
    ) -> Option<Vec<TaskId>> {
        match mark.get(id).copied().unwrap_or(0) {
            2 => return None,
            1 => {
                let start = stack.iter().position(|s| *s == id).unwrap_or(0);
                let mut cycle: Vec<TaskId> = stack[start..].iter().map(|s| (*s).clone()).collect();
                cycle.push(id.clone());
                return Some(cycle);
            }
            _ => {}
        }
        mark.insert(id, 1);
        stack.push(id);
        for dep in edges.get(id).map(|d| d.iter()).into_iter().flatten() {
            if let Some((key, _)) = edges.get_key_value(dep)
                && let Some(c) = visit(key, edges, mark, stack)
            {
                return Some(c);
            }
        }
        stack.pop();
        mark.insert(id, 2);
        None
    }
    for (id, _, _, _) in nodes {
        let mut stack = Vec::new();
        if let Some(c) = visit(id, &edges, &mut mark, &mut stack) {
            return Some(c);
        }
    }
    None
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(tasks: &[Task]) -> Vec<(String, Vec<String>)> {
        tasks
            .iter()
            .map(|t| {
                (
                    t.id.to_string(),
                    t.blocked_by.iter().map(ToString::to_string).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn builtin_spec_only_with_and_without_supervision() {
        let spec = PipelineSpec::builtin().unwrap();
        let sid: SessionId = "TLV4-x-20261129".parse().unwrap();
        let on = spec
            .dispatch("spec-only", Supervision::On, &sid, "x")
            .unwrap();
        assert_eq!(on.len(), 8);
        let off = spec
            .dispatch("spec-only", Supervision::Off, &sid, "x")
            .unwrap();
        assert_eq!(
            ids(&off),
            vec![
                ("RESEARCH-001".into(), vec![]),
                ("DRAFT-001".into(), vec!["RESEARCH-001".into()]),
                ("DRAFT-002".into(), vec!["DRAFT-001".into()]),
                ("DRAFT-003".into(), vec!["DRAFT-002".into()]),
                ("DRAFT-004".into(), vec!["DRAFT-003".into()]),
                ("QUALITY-001".into(), vec!["DRAFT-004".into()]),
            ]
        );
        assert!(
            off.iter()
                .filter(|t| t.role == Role::Writer)
                .all(|t| t.inner_loop)
        );
        assert!(
            off.iter()
                .filter(|t| t.role != Role::Writer)
                .all(|t| !t.inner_loop)
        );
    }

    #[test]
    fn builtin_full_lifecycle() {
        let spec = PipelineSpec::builtin().unwrap();
        let sid: SessionId = "TLV4-x-20261129".parse().unwrap();
        let on = spec
            .dispatch("full-lifecycle", Supervision::On, &sid, "x")
            .unwrap();
        assert_eq!(on.len(), 13);
        let off = spec
            .dispatch("full-lifecycle", Supervision::Off, &sid, "x")
            .unwrap();
        assert_eq!(off.len(), 10);
        let plan = off.iter().find(|t| t.id.as_str() == "PLAN-001").unwrap();
        assert_eq!(
            plan.blocked_by,
            vec!["QUALITY-001".parse::<TaskId>().unwrap()]
        );
        let imp = off.iter().find(|t| t.id.as_str() == "IMPL-001").unwrap();
        assert_eq!(imp.blocked_by, vec!["PLAN-001".parse::<TaskId>().unwrap()]);
    }

    fn with_pipeline(tasks: &str) -> String {
        let base = BUILTIN.split("[pipeline.spec-only]").next().unwrap();
        format!("{base}[pipeline.bad]\nsummary = \"x\"\ntasks = [\n{tasks}\n]\n")
    }

    #[test]
    fn invalid_graphs_are_reported_with_a_line() {
        let cycle = with_pipeline(
            r#"{ id = "DRAFT-001", blocked_by = ["DRAFT-002"] }, { id = "DRAFT-002", blocked_by = ["DRAFT-001"] }"#,
        );
        let err = PipelineSpec::parse("p.toml", &cycle)
            .unwrap_err()
            .to_string();
        assert!(err.contains("cycle") && err.starts_with("p.toml:"), "{err}");
        let dangling = with_pipeline(r#"{ id = "DRAFT-001", blocked_by = ["RESEARCH-001"] }"#);
        let err = PipelineSpec::parse("p.toml", &dangling)
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not have"), "{err}");
        let role = with_pipeline(r#"{ id = "DRAFT-001", role = "wizard" }"#);
        let err = PipelineSpec::parse("p.toml", &role)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown role `wizard`"), "{err}");
        let key = BUILTIN.replace(
            "inner_loop = false\nsummary = \"Explores",
            "inner_lop = false\nsummary = \"Explores",
        );
        let err = PipelineSpec::parse("p.toml", &key).unwrap_err().to_string();
        assert!(err.contains("inner_lop"), "{err}");
    }
}
