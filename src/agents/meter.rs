//! Token meters: how many tokens a running agent has produced so far, and which step its
//! task is at, for the progress line of the task. The coordinator gives each task's run a
//! [`Meter`] in its [`RunContext`](super::command::RunContext) and reads it while the task
//! runs; the driver adds to it as tokens arrive (the `openai` driver per streamed chunk, CLI
//! drivers where their event stream reports usage), and the worker names each step as it
//! starts it (the agent running, the snapshot, the tests, the review…). A driver whose
//! service failed (an HTTP API that answers 5xx, refuses the credentials or cannot be reached)
//! says so on the meter, so that a caller with a circuit breaker for API errors (the
//! discussion protocol) can tell them from an agent that answered badly. A meter nobody reads
//! costs one atomic add.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A shared count of tokens and the current step; clones count into the same total. The
/// default meter counts nowhere.
#[derive(Debug, Clone, Default)]
pub struct Meter(Option<Arc<Counts>>);

#[derive(Debug, Default)]
struct Counts {
    tokens: AtomicU64,
    /// The task's bound in tokens; 0: none.
    bound: AtomicU64,
    /// The task's bound in dollars, as `f64` bits; 0: none.
    max_usd: AtomicU64,
    step: Mutex<String>,
    api_error: Mutex<Option<String>>,
    /// Why the run was asked to stop by its caller (another candidate won), if it was.
    cancelled: Mutex<Option<String>>,
    /// What stops the agent's process when it is cancelled.
    stop: tlv4_core::process::Stop,
}

impl Meter {
    /// A meter at zero.
    pub fn new() -> Meter {
        Meter(Some(Arc::default()))
    }

    /// A meter at zero that a run must stop at once it has counted more than `bound` tokens
    /// (`None`: no bound). The drivers ask [`Meter::over_bound`] as tokens arrive.
    pub fn bounded(bound: Option<u64>) -> Meter {
        let m = Meter::new();
        if let (Some(c), Some(b)) = (&m.0, bound) {
            c.bound.store(b.max(1), Ordering::Relaxed);
        }
        m
    }

    /// Sets the run's dollar bound, for a CLI with a bound of its own (see
    /// [`RunContext::max_usd`](super::command::RunContext::max_usd)).
    pub fn set_max_usd(&self, usd: Option<f64>) {
        if let (Some(c), Some(u)) = (&self.0, usd.filter(|u| *u > 0.0)) {
            c.max_usd.store(u.to_bits(), Ordering::Relaxed);
        }
    }

    /// Asks the run to stop for `why` (its work is kept like any interrupted run's): the
    /// drivers that run a process stop it.
    pub fn cancel(&self, why: impl Into<String>) {
        if let Some(c) = &self.0 {
            *c.cancelled.lock().unwrap_or_else(|p| p.into_inner()) = Some(why.into());
            c.stop.request();
        }
    }

    /// Why the run was cancelled, if it was.
    pub fn cancelled(&self) -> Option<String> {
        self.0.as_ref().and_then(|c| {
            c.cancelled
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
        })
    }

    /// The stop request [`Meter::cancel`] makes, for the process a driver runs; a default
    /// meter's never fires.
    pub fn stopper(&self) -> tlv4_core::process::Stop {
        self.0.as_ref().map(|c| c.stop.clone()).unwrap_or_default()
    }

    /// The run's dollar bound, if it has one.
    pub fn max_usd(&self) -> Option<f64> {
        self.0
            .as_ref()
            .map(|c| c.max_usd.load(Ordering::Relaxed))
            .filter(|b| *b != 0)
            .map(f64::from_bits)
    }

    /// The bound in tokens, if the run has one.
    pub fn bound(&self) -> Option<u64> {
        self.0
            .as_ref()
            .map(|c| c.bound.load(Ordering::Relaxed))
            .filter(|b| *b > 0)
    }

    /// `(counted, bound)` once the tokens counted are over the bound: the driver stops the
    /// run and answers [`Error::OverBound`](tlv4_core::error::Error::OverBound).
    pub fn over_bound(&self) -> Option<(u64, u64)> {
        let bound = self.bound()?;
        let n = self.read();
        (n > bound).then_some((n, bound))
    }

    /// Counts `n` more tokens.
    pub fn add(&self, n: u64) {
        if let Some(c) = &self.0 {
            c.tokens.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The tokens counted so far.
    pub fn read(&self) -> u64 {
        self.0
            .as_ref()
            .map_or(0, |c| c.tokens.load(Ordering::Relaxed))
    }

    /// Names the step the task has started (`agent claude running`, `running the tests`).
    pub fn step(&self, step: impl Into<String>) {
        if let Some(c) = &self.0
            && let Ok(mut s) = c.step.lock()
        {
            *s = step.into();
        }
    }

    /// Says that the agent's service failed, and why (the run then ends failed).
    pub fn api_error(&self, why: impl Into<String>) {
        if let Some(c) = &self.0
            && let Ok(mut e) = c.api_error.lock()
        {
            *e = Some(why.into());
        }
    }

    /// Why the agent's service failed, if its driver said it did.
    pub fn api_failure(&self) -> Option<String> {
        self.0
            .as_ref()
            .and_then(|c| c.api_error.lock().ok().and_then(|e| e.clone()))
    }

    /// The step last named, or an empty string.
    pub fn current_step(&self) -> String {
        self.0
            .as_ref()
            .and_then(|c| c.step.lock().ok().map(|s| s.clone()))
            .unwrap_or_default()
    }
}

/// The error of agent `agent`'s run stopped at its bound, given [`Meter::over_bound`]'s
/// `(counted, bound)`: "1,234 tokens counted, bound 1,000".
pub fn over_bound_error(agent: &str, (counted, bound): (u64, u64)) -> tlv4_core::error::Error {
    tlv4_core::error::Error::OverBound {
        agent: agent.to_owned(),
        detail: format!(
            "{} tokens counted, bound {}",
            thousands(counted),
            thousands(bound)
        ),
    }
}

/// `n` with a comma between each group of three digits.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The progress line of a running task: `RESEARCH-001 (analyst)`, then its step once one is
/// named (`RESEARCH-001 (analyst): agent builtin running`), then ` · 312 tokens` once tokens
/// arrive.
pub fn progress_line(task: &str, role: &str, step: &str, tokens: u64) -> String {
    let step = if step.is_empty() {
        String::new()
    } else {
        format!(": {step}")
    };
    match tokens {
        0 => format!("{task} ({role}){step}"),
        1 => format!("{task} ({role}){step} · 1 token"),
        n => format!("{task} ({role}){step} · {n} tokens"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_count_into_one_total_and_the_default_counts_nowhere() {
        let m = Meter::new();
        let worker = m.clone();
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let w = worker.clone();
                std::thread::spawn(move || (0..250).for_each(|_| w.add(1)))
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        worker.add(12);
        assert_eq!(m.read(), 1012);
        let none = Meter::default();
        none.add(5);
        assert_eq!(none.read(), 0);
    }

    #[test]
    fn a_run_over_its_bound_says_by_how_much() {
        let m = Meter::bounded(Some(1000));
        m.add(1000);
        assert_eq!(m.over_bound(), None);
        m.add(234);
        let e = over_bound_error("claude", m.over_bound().unwrap());
        assert_eq!(
            e.to_string(),
            "agent `claude` was stopped at the task's bound: 1,234 tokens counted, bound 1,000"
        );
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }

    #[test]
    fn the_progress_line_shows_tokens_once_they_arrive() {
        assert_eq!(
            progress_line("RESEARCH-001", "analyst", "", 0),
            "RESEARCH-001 (analyst)"
        );
        assert_eq!(
            progress_line("RESEARCH-001", "analyst", "", 312),
            "RESEARCH-001 (analyst) · 312 tokens"
        );
        assert_eq!(
            progress_line("X-1", "critic", "", 1),
            "X-1 (critic) · 1 token"
        );
        assert_eq!(
            progress_line("TEST-001", "tester", "running the tests", 0),
            "TEST-001 (tester): running the tests"
        );
        assert_eq!(
            progress_line("IMPL-001", "executor", "agent claude running", 9),
            "IMPL-001 (executor): agent claude running · 9 tokens"
        );
    }

    #[test]
    fn cli_drivers_count_the_tokens_their_events_report() {
        use crate::agents::command::tests::{ctx, spec, writer_input};
        use crate::agents::command::{CliDriver, Driver};
        use crate::agents::presets::preset;
        for (cli, tokens) in [("codex", 300), ("claude", 456)] {
            let work = tempfile::tempdir().unwrap();
            let log = work.path().join("log");
            let s = spec(
                cli,
                &format!("fake-{cli}"),
                &[
                    ("FAKE_AGENT_MODE", "ok"),
                    ("FAKE_AGENT_LOG", log.to_str().unwrap()),
                ],
            );
            let driver = CliDriver::new("agent1", &s, work.path(), preset(cli).unwrap()).unwrap();
            let (_d, input) = writer_input();
            let mut c = ctx(work.path());
            c.meter = Meter::new();
            let out = driver.run(&input, &c).unwrap();
            assert_eq!(out.usage.output_tokens, tokens, "{cli}");
            assert_eq!(
                c.meter.read(),
                tokens,
                "{cli}: counted from its stdout events"
            );
        }
        // A CLI whose output tells nothing while it runs counts nothing.
        let work = tempfile::tempdir().unwrap();
        let s = spec("gemini", "fake-gemini", &[("FAKE_AGENT_MODE", "ok")]);
        let driver = CliDriver::new("agent1", &s, work.path(), preset("gemini").unwrap()).unwrap();
        let (_d, input) = writer_input();
        let mut c = ctx(work.path());
        c.meter = Meter::new();
        driver.run(&input, &c).unwrap();
        assert_eq!(c.meter.read(), 0);
    }

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
        let store = tlv4_core::store::Store::discover(dir.path()).unwrap();
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
}
