//! Token meters: how many tokens a running agent has produced so far, for the progress line
//! of its task. The coordinator gives each task's run a [`Meter`] in its
//! [`RunContext`](super::command::RunContext) and reads it while the task runs; the driver
//! adds to it as tokens arrive (the `openai` driver per streamed chunk, CLI drivers where
//! their event stream reports usage). A meter nobody reads costs one atomic add.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A shared count of tokens; clones count into the same total. The default meter counts
/// nowhere.
#[derive(Debug, Clone, Default)]
pub struct Meter(Option<Arc<AtomicU64>>);

impl Meter {
    /// A meter at zero.
    pub fn new() -> Meter {
        Meter(Some(Arc::new(AtomicU64::new(0))))
    }

    /// Counts `n` more tokens.
    pub fn add(&self, n: u64) {
        if let Some(c) = &self.0 {
            c.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The tokens counted so far.
    pub fn read(&self) -> u64 {
        self.0.as_ref().map_or(0, |c| c.load(Ordering::Relaxed))
    }
}

/// The progress line of a running task: `RESEARCH-001 (analyst)`, then ` · 312 tokens` once
/// tokens arrive.
pub fn progress_line(task: &str, role: &str, tokens: u64) -> String {
    match tokens {
        0 => format!("{task} ({role})"),
        1 => format!("{task} ({role}) · 1 token"),
        n => format!("{task} ({role}) · {n} tokens"),
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
    fn the_progress_line_shows_tokens_once_they_arrive() {
        assert_eq!(
            progress_line("RESEARCH-001", "analyst", 0),
            "RESEARCH-001 (analyst)"
        );
        assert_eq!(
            progress_line("RESEARCH-001", "analyst", 312),
            "RESEARCH-001 (analyst) · 312 tokens"
        );
        assert_eq!(progress_line("X-1", "critic", 1), "X-1 (critic) · 1 token");
    }
}
