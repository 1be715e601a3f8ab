//! The loop shows the tokens of a task while it runs: a driver counts them on its
//! [`Meter`](crate::agents::meter::Meter), the loop reports them as progress.

use crate::agents::meter::progress_line;

/// A driver that reports 312 tokens, then waits until the loop has shown them.
struct Counting(std::sync::Mutex<std::sync::mpsc::Receiver<()>>);

impl crate::agents::command::Driver for Counting {
    fn name(&self) -> &str {
        "counting"
    }
    fn checkout(&self) -> bool {
        false
    }
    fn run(
        &self,
        _input: &crate::agents::TaskInput,
        ctx: &crate::agents::command::RunContext,
    ) -> tlv4_core::Result<crate::agents::command::DriverOutput> {
        ctx.meter.add(312);
        let shown = self
            .0
            .lock()
            .unwrap()
            .recv_timeout(std::time::Duration::from_secs(60));
        Ok(crate::agents::command::DriverOutput {
            output: crate::agents::TaskOutput {
                outcome: crate::agents::Outcome::Completed,
                summary: format!("tokens shown: {}", shown.is_ok()),
                files: Vec::new(),
                state_update: Default::default(),
            },
            prompt: String::new(),
            raw: String::new(),
            transcript: None,
            usage: Default::default(),
        })
    }
}

#[test]
fn the_loop_shows_the_tokens_of_a_running_task() {
    use crate::coordinator::run::{self, Progress, RunEnd};
    let dir = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| tlv4_core::testutil::git(dir.path(), args);
    git(&["init", "-q"]);
    std::fs::write(dir.path().join("README.md"), "x\n").unwrap();
    git(&["add", "README.md"]);
    git(&["commit", "-q", "-m", "init"]);
    std::fs::create_dir_all(dir.path().join(".tlv4/specs")).unwrap();
    std::fs::write(
        dir.path().join(".tlv4/specs/pipelines.toml"),
        "schema = 1\n[role.executor]\nprefix = \"IMPL\"\ninner_loop = false\nsummary = \"x\"\n\
         [task.IMPL-001]\nrole = \"executor\"\nphase = \"implementation\"\npriority = \"P0\"\n\
         purpose = \"p\"\nsuccess = \"s\"\nsteps = []\nexpected = \"e\"\nconstraints = \"c\"\n\
         [pipeline.one]\nsummary = \"one\"\ntasks = [{ id = \"IMPL-001\" }]\n",
    )
    .unwrap();
    let store = tlv4_store::store::Store::discover(dir.path()).unwrap();
    let opts = crate::coordinator::StartOptions {
        pipeline: Some("one".into()),
        completion: Some(tlv4_core::model::Completion::Keep),
        ..Default::default()
    };
    let (sid, _) = crate::coordinator::start(&store, "count tokens", &opts).unwrap();
    let (go, wait) = std::sync::mpsc::channel();
    let roster = crate::agents::roster::Roster::of_driver(std::sync::Arc::new(Counting(
        std::sync::Mutex::new(wait),
    )));
    let mut lines = Vec::new();
    let mut summary = String::new();
    let end = run::run(
        &store,
        &sid,
        roster,
        run::RunOptions::default(),
        &mut |p| match p {
            Progress::Tokens {
                task,
                role,
                tokens,
                step,
            } => {
                lines.push(progress_line(task.as_str(), &role, &step, tokens));
                if tokens > 0 {
                    let _ = go.send(());
                }
            }
            Progress::Finished { summary: s, .. } => summary = s,
            _ => {}
        },
    )
    .unwrap();
    assert!(matches!(end, RunEnd::Completed), "{end:?}");
    assert_eq!(
        lines.last().map(String::as_str),
        Some("IMPL-001 (executor): agent counting running · 312 tokens"),
        "{lines:?}"
    );
    assert_eq!(summary, "tokens shown: true");
}
