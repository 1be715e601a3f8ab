//! `git tlv4 review`: score a diff (not built yet).

use crate::error::{Error, Result};

use super::Ctx;

/// Arguments of `review`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A revision range (`A..B`, or `REV` for `REV^..REV`) or a task id of the session
    pub target: String,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(_ctx: &Ctx<'_>, _args: Args) -> Result<()> {
    Err(Error::Invalid("review is not built yet".into()))
}
