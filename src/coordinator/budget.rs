//! The session's budget in the loop: before a task is handed to an agent, what the session
//! spent (its ledger, summed over the whole history), what the runs in progress hold in
//! reserve, and the task's own reserve must fit the budget — the session's, and its role's.
//! So parallel tasks overshoot by at most one reserve, and workers on other machines, which
//! read the same history, share one budget. A run that crosses its task's bound is stopped
//! by the meter (the drivers ask it as tokens arrive).

use std::collections::BTreeMap;

use tlv4_core::config::budget::{BudgetConfig, Price};
use tlv4_core::error::Result;
use tlv4_core::ledger::{Ledger, Spent};
use tlv4_core::model::{Pause, PauseKind, Settings, TaskId};
use tlv4_core::store::Store;

/// What a run is expected to cost before it starts: its task's bound where one is set, else
/// the median of this repository's earlier runs of its role and agent, else nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Reserve {
    pub usd: f64,
    pub tokens: u64,
}

/// The medians of earlier runs by role and agent, for reserves.
pub(crate) type Medians = BTreeMap<(String, String), Reserve>;

/// The budget state of one loop.
pub(crate) struct Budget {
    config: BudgetConfig,
    prices: BTreeMap<String, Price>,
    ledger: Ledger,
    spent: Spent,
    /// The session's bounds as it started (`settings.budget_*`).
    base: (Option<f64>, Option<u64>),
    medians: Medians,
    /// This repository's earlier sessions, for the medians `medians` does not have.
    history: Option<tlv4_core::ledger::estimate::History>,
    /// The reserves of the runs in progress, with their roles.
    held: BTreeMap<TaskId, (String, Reserve)>,
}

/// Why a task may not start now.
#[derive(Debug, Clone)]
pub(crate) struct Refusal {
    pub task: TaskId,
    pub reason: String,
}

impl Budget {
    pub(crate) fn new(
        config: BudgetConfig,
        prices: BTreeMap<String, Price>,
        medians: Medians,
    ) -> Budget {
        Budget {
            config,
            prices,
            ledger: Ledger::default(),
            spent: Spent::default(),
            base: (None, None),
            medians,
            history: None,
            held: BTreeMap::new(),
        }
    }

    /// Reads this repository's earlier sessions (all but `sid`) for the reserves of roles
    /// without a task bound — only when the session has a budget to keep.
    pub(crate) fn read_history(
        &mut self,
        store: &Store,
        sid: &tlv4_core::model::SessionId,
        settings: &Settings,
    ) -> Result<()> {
        self.base = (settings.budget_usd, settings.budget_tokens);
        if self.bounded() && self.history.is_none() {
            self.history = Some(tlv4_core::ledger::estimate::History::read(
                store,
                &self.prices,
                Some(sid),
            )?);
        }
        Ok(())
    }

    /// Whether anything bounds this session at all (nothing to read otherwise).
    fn bounded(&self) -> bool {
        self.base.0.is_some() || self.base.1.is_some() || self.config != BudgetConfig::default()
    }

    /// Reads what the history up to `tip` adds to the ledger.
    pub(crate) fn refresh(
        &mut self,
        store: &Store,
        tip: gix::ObjectId,
        settings: &Settings,
    ) -> Result<()> {
        self.base = (settings.budget_usd, settings.budget_tokens);
        if !self.bounded() {
            return Ok(());
        }
        let before = self.ledger.runs.len();
        self.ledger.refresh(store, tip)?;
        if before != self.ledger.runs.len() || self.spent.runs == 0 {
            self.spent = self.ledger.spent(&self.prices);
        }
        Ok(())
    }

    /// The session's bounds now: as it started plus every raise its history records.
    pub(crate) fn session_bounds(&self) -> (Option<f64>, Option<u64>) {
        let usd = self.base.0.map(|b| b + self.ledger.raised_usd);
        let tokens = self.base.1.map(|b| {
            u64::try_from(
                i64::try_from(b)
                    .unwrap_or(i64::MAX)
                    .saturating_add(self.ledger.raised_tokens),
            )
            .unwrap_or(0)
        });
        (usd, tokens)
    }

    /// The per-run bounds of `role`: dollars and tokens.
    pub(crate) fn task_bounds(&self, role: &str) -> (Option<f64>, Option<u64>) {
        self.config.task_bounds(role)
    }

    /// The token bound of a run of `role` on `model`: its `task_tokens`, and its `task_usd`
    /// turned into output tokens at the model's price (the dearer kind) where `[prices]`
    /// has one; the smaller of the two.
    pub(crate) fn token_bound(&self, role: &str, model: Option<&str>) -> Option<u64> {
        let (usd, tokens) = self.task_bounds(role);
        let priced = usd
            .zip(model.and_then(|m| self.prices.get(m)))
            .and_then(|(usd, p)| {
                (p.output_per_mtok > 0.0).then(|| (usd / p.output_per_mtok * 1_000_000.0) as u64)
            });
        match (tokens, priced) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The reserve of a run of `role` by `agent`.
    pub(crate) fn reserve(&self, role: &str, agent: &str) -> Reserve {
        let (usd, tokens) = self.task_bounds(role);
        let median = self
            .medians
            .get(&(role.to_owned(), agent.to_owned()))
            .copied()
            .or_else(|| {
                let r = self.history.as_ref()?.reserve(role, agent)?;
                Some(Reserve {
                    usd: r.usd,
                    tokens: r.tokens,
                })
            })
            .unwrap_or_default();
        Reserve {
            usd: usd.unwrap_or(median.usd),
            tokens: tokens.unwrap_or(median.tokens),
        }
    }

    /// Whether task `task` of `role` may start on `agent` now; holds its reserve if so.
    pub(crate) fn admit(
        &mut self,
        task: &TaskId,
        role: &str,
        agent: &str,
    ) -> std::result::Result<(), Refusal> {
        if !self.bounded() {
            return Ok(());
        }
        let r = self.reserve(role, agent);
        self.admit_reserve(task, role, agent, r)
    }

    /// Whether best-of task `task` of `role` may start a candidate on each of `agents` now:
    /// the reserves of all of them are held before the first starts.
    pub(crate) fn admit_all(
        &mut self,
        task: &TaskId,
        role: &str,
        agents: &[&str],
    ) -> std::result::Result<(), Refusal> {
        if !self.bounded() {
            return Ok(());
        }
        let r = agents.iter().fold(Reserve::default(), |a, agent| {
            let b = self.reserve(role, agent);
            Reserve {
                usd: a.usd + b.usd,
                tokens: a.tokens + b.tokens,
            }
        });
        let label = format!("{} candidates: {}", agents.len(), agents.join(", "));
        self.admit_reserve(task, role, &label, r)
    }

    fn admit_reserve(
        &mut self,
        task: &TaskId,
        role: &str,
        agent: &str,
        r: Reserve,
    ) -> std::result::Result<(), Refusal> {
        let held = |only: Option<&str>| {
            self.held
                .values()
                .filter(|(ro, _)| only.is_none_or(|o| o == ro))
                .fold(Reserve::default(), |a, (_, b)| Reserve {
                    usd: a.usd + b.usd,
                    tokens: a.tokens + b.tokens,
                })
        };
        let money = |v: f64| format!("${v:.4}");
        let mut checks = Vec::new();
        let (usd, tokens) = self.session_bounds();
        let all = held(None);
        checks.push((
            "the session's",
            usd,
            tokens,
            (self.spent.usd, self.spent.tokens),
            all,
        ));
        let role_bounds = self.config.roles.get(role).cloned().unwrap_or_default();
        if role_bounds.session_usd.is_some() || role_bounds.session_tokens.is_some() {
            checks.push((
                "the role's",
                role_bounds.session_usd,
                role_bounds.session_tokens,
                self.spent.of_role(role),
                held(Some(role)),
            ));
        }
        for (whose, usd, tokens, (spent_usd, spent_tokens), held) in checks {
            if let Some(b) = usd
                && spent_usd + held.usd + r.usd > b + 1e-9
            {
                return Err(Refusal {
                    task: task.clone(),
                    reason: format!(
                        "{task} ({role}, {agent}) would take {whose} dollar budget of {} over: spent {}, {} reserved for the runs in progress, {} reserved for this one",
                        money(b),
                        money(spent_usd),
                        money(held.usd),
                        money(r.usd)
                    ),
                });
            }
            if let Some(b) = tokens
                && spent_tokens + held.tokens + r.tokens > b
            {
                return Err(Refusal {
                    task: task.clone(),
                    reason: format!(
                        "{task} ({role}, {agent}) would take {whose} token budget of {b} over: spent {spent_tokens}, {} reserved for the runs in progress, {} reserved for this one",
                        held.tokens, r.tokens
                    ),
                });
            }
        }
        self.held.insert(task.clone(), (role.to_owned(), r));
        Ok(())
    }

    /// Gives back the reserve of `task`, whose run ended.
    pub(crate) fn release(&mut self, task: &TaskId) {
        self.held.remove(task);
    }

    /// Holds what the run of `task` (`role`) spent — `input`/`cached`/`output` tokens, its
    /// reported dollars or `model`'s price — in place of its reserve, while its result waits
    /// to be recorded (a worker's batch): the ledger does not see it yet, the budget must.
    pub(crate) fn hold_spent(
        &mut self,
        task: &TaskId,
        role: &str,
        usage: tlv4_core::ledger::RunUsage,
    ) {
        if !self.bounded() {
            return;
        }
        let usd = usage.usd(&self.prices).unwrap_or(0.0);
        let spent = Reserve {
            usd,
            tokens: usage.tokens(),
        };
        self.held.insert(task.clone(), (role.to_owned(), spent));
    }

    /// The pause of a session whose next task does not fit its budget.
    pub(crate) fn pause(&self, refusal: &Refusal) -> Pause {
        let by = self.spent.describe();
        let mut reason = refusal.reason.clone();
        if !by.is_empty() {
            reason.push_str(&format!("; spent by role and agent: {by}"));
        }
        if self.spent.unpriced > 0 {
            reason.push_str(&format!(
                "; {} run(s) reported no dollars and have no [prices] entry",
                self.spent.unpriced
            ));
        }
        let (usd, tokens) = self.session_bounds();
        let mut next = Vec::new();
        if usd.is_some() || tokens.is_none() {
            next.push("git tlv4 resume --budget-usd +N".to_owned());
        }
        if tokens.is_some() {
            next.push("git tlv4 resume --budget-tokens +N".to_owned());
        }
        next.extend(["git tlv4 cost".to_owned(), "git tlv4 abort".to_owned()]);
        Pause {
            kind: PauseKind::Budget,
            task: Some(refusal.task.clone()),
            reason,
            next,
            until: None,
        }
    }
}

/// Where a session stands against its budget, for `status`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Standing {
    /// The dollar budget in force (as started, plus raises), if any.
    pub usd: Option<f64>,
    /// The token budget in force, if any.
    pub tokens: Option<u64>,
    /// Dollars spent over the whole history.
    pub spent_usd: f64,
    /// Tokens spent over the whole history.
    pub spent_tokens: u64,
}

impl Standing {
    /// `$0.0246 of $0.0350 (70%) · 4112 of 10000 tokens (41%)`.
    pub fn line(&self) -> String {
        let pct = |a: f64, b: f64| {
            if b > 0.0 {
                format!(" ({:.0}%)", a / b * 100.0)
            } else {
                String::new()
            }
        };
        let mut parts = Vec::new();
        if let Some(b) = self.usd {
            parts.push(format!(
                "${:.4} of ${b:.4}{}",
                self.spent_usd,
                pct(self.spent_usd, b)
            ));
        }
        if let Some(b) = self.tokens {
            parts.push(format!(
                "{} of {b} tokens{}",
                self.spent_tokens,
                pct(self.spent_tokens as f64, b as f64)
            ));
        }
        parts.join(" · ")
    }
}

/// Where session `sid` (at `tip`, with `settings`) stands against its budget; `None` when it
/// has none. `prices` price the runs that reported no dollars.
pub fn standing(
    store: &Store,
    tip: gix::ObjectId,
    settings: &Settings,
    prices: BTreeMap<String, Price>,
) -> Result<Option<Standing>> {
    if settings.budget_usd.is_none() && settings.budget_tokens.is_none() {
        return Ok(None);
    }
    let mut b = Budget::new(BudgetConfig::default(), prices, Medians::new());
    b.refresh(store, tip, settings)?;
    let (usd, tokens) = b.session_bounds();
    Ok(Some(Standing {
        usd,
        tokens,
        spent_usd: b.spent.usd,
        spent_tokens: b.spent.tokens,
    }))
}

/// The `[prices]` of the configuration session `sid` runs with (none when it cannot be read:
/// the runs that reported no dollars are then unpriced, as `cost` says).
pub fn pinned_prices(store: &Store, sid: &tlv4_core::model::SessionId) -> BTreeMap<String, Price> {
    tlv4_core::trust::pinned(store, sid)
        .ok()
        .and_then(|(files, _)| tlv4_core::trust::Configuration::of(files, store.workdir()).ok())
        .map(|c| c.config.prices)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(config: &str, medians: Medians) -> Budget {
        let config: BudgetConfig = toml::from_str(config).unwrap();
        let mut b = Budget::new(config, BTreeMap::new(), medians);
        b.base = (b.config.session_usd, b.config.session_tokens);
        b
    }

    fn id(s: &str) -> TaskId {
        s.parse().unwrap()
    }

    #[test]
    fn parallel_tasks_overshoot_by_at_most_one_reserve() {
        let mut b = budget("session_usd = 1.0\ntask_usd = 0.3\n", Medians::new());
        assert!(b.admit(&id("IMPL-001"), "executor", "cc").is_ok());
        assert!(b.admit(&id("IMPL-002"), "executor", "cc").is_ok());
        assert!(b.admit(&id("IMPL-003"), "executor", "cc").is_ok());
        // 0.9 held: a fourth reserve would take it to 1.2.
        let r = b.admit(&id("IMPL-004"), "executor", "cc").unwrap_err();
        assert!(
            r.reason
                .contains("$0.9000 reserved for the runs in progress"),
            "{}",
            r.reason
        );
        b.release(&id("IMPL-001"));
        assert!(b.admit(&id("IMPL-004"), "executor", "cc").is_ok());
    }

    #[test]
    fn a_reserve_is_the_task_bound_else_the_median_of_the_role_and_agent() {
        let mut medians = Medians::new();
        medians.insert(
            ("analyst".into(), "cc".into()),
            Reserve {
                usd: 0.25,
                tokens: 900,
            },
        );
        let b = budget(
            "session_tokens = 1000\n[roles.executor]\ntask_tokens = 50\n",
            medians,
        );
        assert_eq!(
            b.reserve("analyst", "cc"),
            Reserve {
                usd: 0.25,
                tokens: 900
            }
        );
        assert_eq!(b.reserve("analyst", "cx"), Reserve::default());
        assert_eq!(b.reserve("executor", "cc").tokens, 50);
    }

    #[test]
    fn a_role_budget_bounds_that_role_alone() {
        let mut b = budget(
            "[roles.critic]\nsession_tokens = 100\ntask_tokens = 60\n",
            Medians::new(),
        );
        assert!(b.admit(&id("X-001"), "critic", "cc").is_ok());
        let r = b.admit(&id("X-002"), "critic", "cc").unwrap_err();
        assert!(
            r.reason.contains("the role's token budget of 100"),
            "{}",
            r.reason
        );
        assert!(b.admit(&id("IMPL-001"), "executor", "cc").is_ok());
    }

    #[test]
    fn a_dollar_bound_becomes_tokens_at_the_models_price() {
        let mut b = budget("task_usd = 0.5\ntask_tokens = 300000\n", Medians::new());
        b.prices.insert(
            "m".into(),
            Price {
                input_per_mtok: 1.0,
                output_per_mtok: 2.0,
                cached_input_per_mtok: None,
            },
        );
        assert_eq!(b.token_bound("executor", Some("m")), Some(250_000));
        assert_eq!(b.token_bound("executor", Some("other")), Some(300_000));
        assert_eq!(b.token_bound("executor", None), Some(300_000));
    }
}
