//! The result contract: an agent's answer ends with one fenced `json` block (or a bare JSON
//! object) holding `summary`, `state_update`, and for document tasks `files`. This module
//! finds that block, checks it, and turns it into a [`TaskOutput`].
//!
//! Every problem is reported as a [`ContractError`] worded for the agent: the driver appends
//! it to the prompt and asks again (at most twice), then fails the task and keeps the raw
//! answer in the run record.

use std::fmt;

use serde_json::{Map, Value};

use super::{Outcome, StateUpdate, TaskOutput};

/// Keys of the reference's state update that the coordinator fills in itself; an agent that
/// sends them is not wrong, they are just dropped.
const REFERENCE_KEYS: [&str; 4] = ["status", "task_id", "ref", "artifact_path"];
/// Keys of the result object.
const RESULT_KEYS: [&str; 4] = ["summary", "state_update", "files", "error"];
/// A summary is one line of at most this many characters.
const SUMMARY_CHARS: usize = 300;

/// What a task hands over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deliverable {
    /// Documents for the pipeline folder, in `files`.
    Documents,
    /// Changes in the working directory; `files` must stay empty.
    Code,
}

impl Deliverable {
    /// What `role` hands over.
    pub fn of(role: &tlv4_core::model::Role) -> Deliverable {
        if role.writes_code() {
            Deliverable::Code
        } else {
            Deliverable::Documents
        }
    }
}

/// Why an answer does not meet the contract, in words for the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContractError {
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ContractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ContractError {}

fn err(message: impl Into<String>) -> ContractError {
    ContractError {
        message: message.into(),
    }
}

/// Finds, parses and checks the result in `text`, the agent's final answer.
#[cfg(test)]
pub fn parse(text: &str, deliverable: Deliverable) -> Result<TaskOutput, ContractError> {
    parse_in(text, deliverable, None)
}

/// [`parse`], for an agent that ran in `workdir`: paths it reports as absolute paths inside
/// that directory are made relative, as agents often write them that way.
pub fn parse_in(
    text: &str,
    deliverable: Deliverable,
    workdir: Option<&std::path::Path>,
) -> Result<TaskOutput, ContractError> {
    let block = extract(text)?;
    let value: Value = serde_json::from_str(block)
        .map_err(|e| err(format!("the result block is not valid JSON: {e}")))?;
    let Value::Object(mut obj) = value else {
        return Err(err("the result block must hold one JSON object"));
    };
    if let Some(k) = obj.keys().find(|k| !RESULT_KEYS.contains(&k.as_str())) {
        return Err(err(format!(
            "the result object has an unknown key `{k}`; its keys are {}",
            RESULT_KEYS.map(|k| format!("`{k}`")).join(", ")
        )));
    }

    let summary = match obj.remove("summary") {
        Some(Value::String(s)) => s,
        Some(_) => return Err(err("`summary` must be a string")),
        None => return Err(err("the result object has no `summary`")),
    };
    let summary: String = summary
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .chars()
        .take(SUMMARY_CHARS)
        .collect();
    if summary.is_empty() {
        return Err(err("`summary` is empty; give one line saying what you did"));
    }

    let mut update = match obj.remove("state_update") {
        Some(Value::Object(m)) => m,
        Some(_) => return Err(err("`state_update` must be an object")),
        None => return Err(err("the result object has no `state_update`")),
    };
    for k in REFERENCE_KEYS {
        update.remove(k);
    }
    let mut state_update: StateUpdate = serde_json::from_value(Value::Object(update))
        .map_err(|e| err(format!("`state_update` does not fit the contract: {e}")))?;
    state_update
        .validate()
        .map_err(|e| err(format!("`state_update`: {e}")))?;
    for f in &mut state_update.files_modified {
        *f = relative_to(f, workdir);
        check_relative(f).map_err(|why| err(format!("`files_modified` entry `{f}` {why}")))?;
    }

    let files = match obj.remove("files") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => {
            return Err(err(
                "`files` must be an object mapping paths to file contents",
            ));
        }
    };
    if deliverable == Deliverable::Code && !files.is_empty() {
        return Err(err(
            "this is a code task: change the files in your working directory and leave `files` \
             out (it is only for documents of the pipeline folder)",
        ));
    }
    let mut out_files = Vec::with_capacity(files.len());
    for (path, content) in files {
        let path = path.strip_prefix("./").map(str::to_owned).unwrap_or(path);
        tlv4_core::layout::validate_pipeline_path(&path)
            .map_err(|e| err(format!("`files`: {e}")))?;
        let Value::String(content) = content else {
            return Err(err(format!(
                "`files`: the content of `{path}` must be a string holding the whole file"
            )));
        };
        out_files.push((path, content.into_bytes()));
    }
    if deliverable == Deliverable::Documents && state_update.files_modified.is_empty() {
        state_update.files_modified = out_files.iter().map(|(p, _)| p.clone()).collect();
    }

    let outcome = match obj.remove("error") {
        None | Some(Value::Null) => Outcome::Completed,
        Some(Value::String(e)) if e.trim().is_empty() => Outcome::Completed,
        Some(Value::String(e)) => {
            Outcome::Failed(format!("the agent could not do the task: {}", e.trim()))
        }
        Some(_) => return Err(err("`error` must be a string")),
    };
    Ok(TaskOutput {
        outcome,
        summary,
        files: out_files,
        state_update,
    })
}

/// The text of the result: the body of the last fenced block tagged `json`, else of the
/// last untagged fenced block that holds an object, else a JSON object that ends the text.
pub fn extract(text: &str) -> Result<&str, ContractError> {
    let blocks = fenced_blocks(text);
    if let Some(b) = blocks.iter().rev().find(|b| b.is_json()) {
        return if b.closed {
            Ok(b.body)
        } else {
            Err(err(
                "the ```json block is not closed; the answer may have been cut off — end it with \
                 a line of three backticks",
            ))
        };
    }
    if let Some(b) = blocks
        .iter()
        .rev()
        .find(|b| b.closed && b.info.is_empty() && b.body.trim_start().starts_with('{'))
    {
        return Ok(b.body);
    }
    if let Some(obj) = trailing_object(text) {
        return Ok(obj);
    }
    Err(err(
        "no result block found: end your answer with one fenced code block tagged `json` \
         holding the result object (`summary`, `state_update`, and `files` for documents)",
    ))
}

/// `path` without a leading `./`, or relative to `workdir` if it is an absolute path inside it.
fn relative_to(path: &str, workdir: Option<&std::path::Path>) -> String {
    let p = std::path::Path::new(path);
    if let Some(dir) = workdir
        && p.is_absolute()
    {
        let canonical = dir.canonicalize().ok();
        for base in std::iter::once(dir).chain(canonical.as_deref()) {
            if let Ok(rel) = p.strip_prefix(base)
                && let Some(rel) = rel.to_str()
                && !rel.is_empty()
            {
                return rel.to_owned();
            }
        }
    }
    path.strip_prefix("./").unwrap_or(path).to_owned()
}

/// Whether `rel` is a plain relative path that stays where it starts.
fn check_relative(rel: &str) -> Result<(), &'static str> {
    if rel.trim().is_empty() {
        return Err("is empty");
    }
    if rel.starts_with('/') || rel.starts_with('~') || rel.contains('\\') || rel.contains('\0') {
        return Err("must be a path relative to your working directory");
    }
    if rel.split('/').any(|c| c == "..") {
        return Err("leaves your working directory");
    }
    Ok(())
}

/// One fenced block of a markdown text.
struct Block<'a> {
    info: String,
    body: &'a str,
    closed: bool,
}

impl Block<'_> {
    fn is_json(&self) -> bool {
        self.info
            .split_whitespace()
            .next()
            .is_some_and(|w| w.eq_ignore_ascii_case("json"))
    }
}

/// The fenced blocks of `text`, in order: a line starting with three or more backticks
/// opens one, a line of at least as many backticks alone closes it.
fn fenced_blocks(text: &str) -> Vec<Block<'_>> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, String, usize)> = None; // (fence length, info, body start)
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let t = line.trim();
        let ticks = t.chars().take_while(|&c| c == '`').count();
        match &open {
            None if ticks >= 3 => {
                let info = t[ticks..].trim();
                if !info.contains('`') {
                    open = Some((ticks, info.to_owned(), offset));
                }
            }
            Some((n, _, _)) if ticks >= *n && ticks == t.len() => {
                let (_, info, body_start) = open.take().expect("a block is open");
                blocks.push(Block {
                    info,
                    body: &text[body_start..start],
                    closed: true,
                });
            }
            _ => {}
        }
    }
    if let Some((_, info, body_start)) = open {
        blocks.push(Block {
            info,
            body: &text[body_start.min(text.len())..],
            closed: false,
        });
    }
    blocks
}

/// A JSON object that ends `text`, beginning at the start of a line (or inside one of the
/// last lines).
fn trailing_object(text: &str) -> Option<&str> {
    let end = text.trim_end();
    if !end.ends_with('}') {
        return None;
    }
    let mut candidates: Vec<usize> = Vec::new();
    let mut offset = 0;
    for line in end.split_inclusive('\n') {
        let lead = line.len() - line.trim_start().len();
        if line.trim_start().starts_with('{') {
            candidates.push(offset + lead);
        }
        offset += line.len();
    }
    let last_lines = end.rmatch_indices('\n').take(5).map(|(i, _)| i + 1);
    for line_start in last_lines.chain([0]) {
        if let Some(i) = end[line_start..].find('{') {
            candidates.push(line_start + i);
        }
    }
    candidates.sort_unstable();
    candidates.dedup();
    let from = candidates.len().saturating_sub(200);
    candidates[from..].iter().find_map(|&pos| {
        let slice = &end[pos..];
        match serde_json::from_str::<Value>(slice) {
            Ok(Value::Object(_)) => Some(slice),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"summary": "wrote the brief", "state_update": {"key_findings": ["one"], "decisions": ["d because r"], "verification": "self-validated"}, "files": {"spec/product-brief.md": "hello\n"}}"#;

    fn fenced(json: &str) -> String {
        format!("Some prose.\n\n```json\n{json}\n```\n")
    }

    #[test]
    fn the_last_json_block_wins() {
        let text = format!(
            "First try:\n```json\n{{\"summary\": \"old\"}}\n```\nAn example in rust:\n```rust\nfn main() {{}}\n```\n{}",
            fenced(GOOD)
        );
        let out = parse(&text, Deliverable::Documents).unwrap();
        assert_eq!(out.outcome, Outcome::Completed);
        assert_eq!(out.summary, "wrote the brief");
        assert_eq!(
            out.files,
            vec![("spec/product-brief.md".to_owned(), b"hello\n".to_vec())]
        );
        assert_eq!(
            out.state_update.files_modified,
            vec!["spec/product-brief.md"]
        );
        assert_eq!(out.state_update.key_findings, vec!["one"]);
    }

    #[test]
    fn file_contents_may_hold_fences() {
        let json = serde_json::json!({
            "summary": "s",
            "state_update": {"key_findings": []},
            "files": {"spec/a.md": "# A\n\n```json\n{}\n```\n"}
        });
        let text = format!(
            "```json\n{}\n```",
            serde_json::to_string_pretty(&json).unwrap()
        );
        let out = parse(&text, Deliverable::Documents).unwrap();
        assert_eq!(out.files[0].1, b"# A\n\n```json\n{}\n```\n");
    }

    #[test]
    fn a_bare_trailing_object_or_untagged_block_is_accepted() {
        let text = format!("All done. Result:\n{GOOD}\n");
        assert_eq!(
            parse(&text, Deliverable::Documents).unwrap().summary,
            "wrote the brief"
        );
        let text = format!("Result: {GOOD}");
        assert!(parse(&text, Deliverable::Documents).is_ok());
        let text = format!("```\n{GOOD}\n```\n");
        assert!(parse(&text, Deliverable::Documents).is_ok());
    }

    #[test]
    fn reference_keys_are_dropped_and_errors_become_failures() {
        let json = r#"{"summary": "no", "error": "the spec is missing", "state_update": {"status": "task_complete", "task_id": "X", "ref": "a.md", "key_findings": []}}"#;
        let out = parse(&fenced(json), Deliverable::Code).unwrap();
        assert_eq!(
            out.outcome,
            Outcome::Failed("the agent could not do the task: the spec is missing".into())
        );
    }

    #[test]
    fn contract_violations_say_what_is_wrong() {
        let cases: &[(String, &str)] = &[
            ("I did it, trust me.".into(), "no result block found"),
            ("```json\n{\"summary\": \"x\",\n".into(), "not closed"),
            (fenced("{\"summary\": \"x\",}"), "not valid JSON"),
            (fenced("[1, 2]"), "one JSON object"),
            (fenced(r#"{"summary": "x"}"#), "no `state_update`"),
            (fenced(r#"{"state_update": {}}"#), "no `summary`"),
            (
                fenced(r#"{"summary": " ", "state_update": {}}"#),
                "`summary` is empty",
            ),
            (
                fenced(r#"{"summary": "x", "state_update": {}, "extra": 1}"#),
                "unknown key `extra`",
            ),
            (
                fenced(r#"{"summary": "x", "state_update": {"findings": []}}"#),
                "unknown field `findings`",
            ),
            (
                fenced(
                    r#"{"summary": "x", "state_update": {"key_findings": ["1","2","3","4","5","6"]}}"#,
                ),
                "at most 5",
            ),
            (
                fenced(&format!(
                    r#"{{"summary": "x", "state_update": {{"key_findings": ["{}"]}}}}"#,
                    "y".repeat(120)
                )),
                "100 characters",
            ),
            (
                fenced(r#"{"summary": "x", "state_update": {}, "files": {"../escape.md": "x"}}"#),
                "escapes the pipeline folder",
            ),
            (
                fenced(r#"{"summary": "x", "state_update": {}, "files": {"/abs.md": "x"}}"#),
                "relative path",
            ),
            (
                fenced(r#"{"summary": "x", "state_update": {}, "files": {"tasks/X.toml": "x"}}"#),
                "session's own state",
            ),
            (
                fenced(r#"{"summary": "x", "state_update": {}, "files": {"a.md": 3}}"#),
                "must be a string",
            ),
            (
                fenced(r#"{"summary": "x", "state_update": {"files_modified": ["../x"]}}"#),
                "leaves your working directory",
            ),
        ];
        for (text, want) in cases {
            let e = parse(text, Deliverable::Documents).unwrap_err();
            assert!(e.message.contains(want), "{text}\n=> {e}\nwanted: {want}");
        }
        let e = parse(&fenced(GOOD), Deliverable::Code).unwrap_err();
        assert!(e.message.contains("this is a code task"), "{e}");
    }

    #[test]
    fn paths_inside_the_workdir_are_made_relative() {
        let dir = tempfile::tempdir().unwrap();
        let abs = dir.path().join("src/a.rs");
        let json = serde_json::json!({
            "summary": "s",
            "state_update": {"files_modified": [abs, "./b.rs", "c.rs"]},
        });
        let text = fenced(&json.to_string());
        let out = parse_in(&text, Deliverable::Code, Some(dir.path())).unwrap();
        assert_eq!(
            out.state_update.files_modified,
            vec!["src/a.rs", "b.rs", "c.rs"]
        );
        let e = parse(&text, Deliverable::Code).unwrap_err();
        assert!(
            e.message.contains("relative to your working directory"),
            "{e}"
        );
        let json = r#"{"summary": "s", "state_update": {}, "files": {"./spec/a.md": "x"}}"#;
        let out = parse(&fenced(json), Deliverable::Documents).unwrap();
        assert_eq!(out.files[0].0, "spec/a.md");
    }

    #[test]
    fn summaries_are_one_line() {
        let json = r#"{"summary": "\n first line \nsecond", "state_update": {}}"#;
        assert_eq!(
            parse(&fenced(json), Deliverable::Code).unwrap().summary,
            "first line"
        );
    }
}
