//! Checks on the parse of rust files.

use super::{Hit, Input};
use crate::quality::review::syntax::Syntax;

/// Runs the rust checks.
pub fn check(input: &Input<'_>, syntax: &Syntax<'_>, out: &mut Vec<Hit>) {
    let _ = (input, syntax, out);
}
