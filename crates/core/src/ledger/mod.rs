//! What a session spent, and what it may spend: the run records (`usage.json`) of its whole
//! history priced with `[prices]`, the raises its decisions recorded, and the reserves the
//! loop holds for runs in progress. The store finds the records (`Store::spent_since`); this
//! module adds them up. `estimate` reads the ledgers of earlier sessions for what a pipeline
//! will cost here.

use std::collections::BTreeMap;

use crate::config::budget::Price;

/// One run's usage as its record (`runs/<TASK>/<attempt>/usage.json`, or a critic's under it)
/// has it.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize, serde::Serialize)]
pub struct RunUsage {
    /// The task.
    pub task: String,
    /// Its role (`critic` for a discuss critic's run).
    pub role: String,
    /// The agent that did the work.
    pub agent: String,
    /// The model, where known.
    #[serde(default)]
    pub model: Option<String>,
    /// Input tokens (cached ones included).
    #[serde(default)]
    pub input_tokens: u64,
    /// Of the input tokens, those read from the service's cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Output tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// US dollars, as the agent reported them.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Wall-clock seconds.
    #[serde(default)]
    pub seconds: f64,
}

impl RunUsage {
    /// Input + output tokens.
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// The run's dollars: as reported, else priced with its model's entry of `prices`;
    /// `None` when neither says.
    pub fn usd(&self, prices: &BTreeMap<String, Price>) -> Option<f64> {
        self.cost_usd.or_else(|| {
            let price = prices.get(self.model.as_deref()?)?;
            Some(price.cost(
                self.input_tokens,
                self.cached_input_tokens,
                self.output_tokens,
            ))
        })
    }
}
