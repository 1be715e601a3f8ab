//! Checks on comments, for every parsed language: code left in comments.

use super::{Hit, Input};
use crate::quality::review::syntax::Syntax;

/// Runs the comment checks.
pub fn check(input: &Input<'_>, syntax: &Syntax<'_>, out: &mut Vec<Hit>) {
    let _ = (input, syntax, out);
}
