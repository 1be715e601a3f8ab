//! The `openai` driver against the scripted server behaving as real models and inference
//! servers do: streaming, going on after the answer, never stopping, refusing long prompts.

use crate::agents::{Server, model_server_repo_with};
use crate::common::TestRepo;

/// Starts `pipeline` with every role on agent `local`; the session id.
fn start(repo: &TestRepo, pipeline: &str) -> String {
    let out = repo.runs(&[
        "start",
        "--pipeline",
        pipeline,
        "--yes",
        "--no-supervision",
        "--agent",
        "local",
        "--completion",
        "keep",
        "a pipeline on a model",
    ]);
    out.lines().next().unwrap().trim().to_owned()
}

fn status(repo: &TestRepo, sid: &str) -> serde_json::Value {
    repo.json(&["--session", sid, "status", "--json"])
}

/// A file of a task's run record.
fn record(repo: &TestRepo, sid: &str, task: &str, file: &str) -> String {
    repo.git(&[
        "show",
        &format!("tlv4/{sid}:.tlv4/sessions/{sid}/runs/{task}/1/{file}"),
    ])
}

/// The requests the server got for `task`.
fn requests_of(server: &Server, task: &str) -> Vec<serde_json::Value> {
    server
        .requests()
        .into_iter()
        .filter(|r| {
            r["body"]["messages"][1]["content"]
                .as_str()
                .unwrap_or("")
                .contains(&format!("- Task: {task}\n"))
        })
        .collect()
}

/// A pipeline `two`: an analyst's research, then a writer's notes built on it.
fn two_step_pipeline(repo: &TestRepo) {
    let task = |id: &str, role: &str| {
        format!(
            "[task.{id}]\nrole = \"{role}\"\nphase = \"notes\"\npriority = \"P0\"\npurpose = \"p\"\n\
             success = \"s\"\nsteps = []\nexpected = \"artifacts/\"\nconstraints = \"c\"\n"
        )
    };
    let text = format!(
        "schema = 1\n[role.analyst]\nprefix = \"RESEARCH\"\ninner_loop = false\nsummary = \"x\"\n\
         [role.writer]\nprefix = \"DRAFT\"\ninner_loop = false\nsummary = \"x\"\n{}{}\
         [pipeline.two]\nsummary = \"two\"\ntasks = [{{ id = \"RESEARCH-001\" }}, \
         {{ id = \"DRAFT-001\", blocked_by = [\"RESEARCH-001\"] }}]\n",
        task("RESEARCH-001", "analyst"),
        task("DRAFT-001", "writer")
    );
    repo.write(".tlv4/specs/pipelines.toml", &text);
    repo.ok(&["trust"]);
}

#[test]
fn streamed_answers_carry_the_bound_and_are_assembled() {
    let (server, repo) = model_server_repo_with("stream", "m", "timeout = \"60s\"\n");
    repo.wide_pipeline(1);
    let sid = start(&repo, "wide");
    let s = status(&repo, &sid);
    assert_eq!(s["session"]["status"], "completed", "{s}");
    assert_eq!(
        repo.git(&["show", &format!("tlv4/{sid}:served-IMPL-001.txt")]),
        "written through the openai driver for IMPL-001\n"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let body = &requests[0]["body"];
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_tokens"], 8192, "the executor's default bound");
    // The usage the server reported in its last chunk.
    let usage: serde_json::Value =
        serde_json::from_str(&record(&repo, &sid, "IMPL-001", "usage.json")).unwrap();
    assert_eq!(usage["input_tokens"], 900, "{usage}");
    let answer = record(&repo, &sid, "IMPL-001", "answer.txt");
    let chunks = answer.matches("\"chat.completion.chunk\"").count() as u64;
    assert_eq!(usage["output_tokens"].as_u64(), Some(chunks - 1), "{usage}");
    assert!(answer.trim_end().ends_with("data: [DONE]"), "{answer}");
    let transcript = record(&repo, &sid, "IMPL-001", "transcript.txt");
    assert!(transcript.contains("streamed:") && transcript.contains("ended with [DONE]"));
    assert!(
        transcript.contains("output bound 8192 tokens"),
        "{transcript}"
    );
    repo.fsck();
}

#[test]
fn a_model_that_goes_on_after_its_result_is_cut_off() {
    let (server, repo) = model_server_repo_with(
        "garbage",
        "m",
        "timeout = \"60s\"\nmax_output_tokens = 3000\n",
    );
    repo.wide_pipeline(1);
    let sid = start(&repo, "wide");
    let s = status(&repo, &sid);
    assert_eq!(s["session"]["status"], "completed", "{s}");
    assert!(
        repo.git(&["ls-tree", "--name-only", &format!("tlv4/{sid}")])
            .contains("served-IMPL-001.txt")
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0]["body"]["max_tokens"], 3000,
        "the configured bound"
    );
    // The record keeps what was read: the answer and the few chunks read after it.
    let answer = record(&repo, &sid, "IMPL-001", "answer.txt");
    assert!(
        answer.contains("blah1 ") && answer.contains("blah17 "),
        "{answer}"
    );
    assert!(!answer.contains("blah18 "), "{answer}");
    let written = server.garbage_written();
    assert_eq!(written.len(), 1, "the server saw its client hang up");
    assert!(written[0] < 10_000_000);
    let transcript = record(&repo, &sid, "IMPL-001", "transcript.txt");
    assert!(transcript.contains("result block complete, the stream closed by git-tlv4"));
    repo.fsck();
}

#[test]
fn a_model_that_never_answers_fails_with_what_arrived() {
    let (server, repo) = model_server_repo_with(
        "forever",
        "m",
        "timeout = \"60s\"\nmax_output_tokens = 40\n",
    );
    repo.wide_pipeline(1);
    let sid = start(&repo, "wide");
    let task = repo.task(&sid, "IMPL-001");
    assert_eq!(task["status"], "failed", "{task}");
    let reason = task["result"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("agent `local` (openai): its result was rejected 3 times; the last problem: your answer reached the output bound of 40 tokens before its result block began"),
        "{reason}"
    );
    // Three answers, each closed at the bound (40 and a slack of 16 chunks).
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{requests:?}");
    assert!(requests.iter().all(|r| r["body"]["max_tokens"] == 40));
    assert_eq!(server.garbage_written().len(), 3);
    let answer = record(&repo, &sid, "IMPL-001", "answer.txt");
    assert_eq!(answer.matches("data: ").count(), 56, "{answer}");
    assert!(answer.contains("blah56 ") && !answer.contains("blah57 "));
    let usage: serde_json::Value =
        serde_json::from_str(&record(&repo, &sid, "IMPL-001", "usage.json")).unwrap();
    assert_eq!(usage["output_tokens"], 3 * 56, "{usage}");
    assert_eq!(usage["input_tokens"], 0, "{usage}");
    repo.fsck();
}

#[test]
fn a_prompt_over_the_context_fails_at_once_and_fits_once_configured() {
    // The analyst hands over a 200 KB document; the writer builds on it.
    let mode = "context=8192,huge=200000";
    let (server, repo) = model_server_repo_with(mode, "m", "timeout = \"60s\"\n");
    two_step_pipeline(&repo);
    let sid = start(&repo, "two");
    let research = repo.task(&sid, "RESEARCH-001");
    assert_eq!(research["status"], "completed", "{research}");
    let draft = repo.task(&sid, "DRAFT-001");
    assert_eq!(draft["status"], "failed", "{draft}");
    let reason = draft["result"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(
            "agent `local` (openai): the server refused the prompt as longer than the model's context"
        ),
        "{reason}"
    );
    assert!(reason.contains(" characters, ~"), "{reason}");
    assert!(
        reason.contains("tokens as the server counted them"),
        "{reason}"
    );
    assert!(
        reason.contains("the server's limit is 8192 tokens"),
        "{reason}"
    );
    assert!(
        reason.contains("Set `context_tokens = 8192` under [agents.local]"),
        "{reason}"
    );
    assert_eq!(requests_of(&server, "DRAFT-001").len(), 1, "not sent again");

    // With the context configured, the prompt is built to fit: the large document is
    // summarised, and the run record says so.
    let (server, repo) =
        model_server_repo_with(mode, "m", "timeout = \"60s\"\ncontext_tokens = 8192\n");
    two_step_pipeline(&repo);
    let sid = start(&repo, "two");
    let draft = repo.task(&sid, "DRAFT-001");
    assert_eq!(draft["status"], "completed", "{draft}");
    let requests = requests_of(&server, "DRAFT-001");
    assert_eq!(requests.len(), 1);
    let body = &requests[0]["body"];
    assert_eq!(body["max_tokens"], 4096, "half the context");
    let size: usize = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().len())
        .sum();
    assert!(size <= (8192 - 4096 - 256) * 3, "{size}");
    let path = "artifacts/RESEARCH-001-served.md";
    let prompt = record(&repo, &sid, "DRAFT-001", "prompt.md");
    assert!(prompt.contains("shown as a summary only"), "{prompt}");
    assert!(prompt.contains(&format!("- {path} (")), "{prompt}");
    assert!(
        prompt.contains("Headings:\n## Finding 2\n## Finding 3\n"),
        "headings are kept: {prompt}"
    );
    let transcript = record(&repo, &sid, "DRAFT-001", "transcript.txt");
    assert!(
        transcript.contains(&format!(
            "summarised to fit (headings and first lines only): {path} ("
        )),
        "{transcript}"
    );
    repo.fsck();
}
