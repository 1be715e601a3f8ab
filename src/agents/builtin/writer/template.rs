//! The templates: the writer's own, which hold the text of every document it writes, and the
//! spec templates, which say what a document must contain.
//!
//! The writer's templates (`specs/templates/builtin/`) are minijinja templates rendered over
//! plain data: the code decides what a document says (ids, lists, counts, choices) and the
//! template says it. The spec templates (`specs/templates/*.md`, parts marked
//! `<!-- part: NAME -->`) are the contract that agents and the readiness gate read too; the
//! writer checks its output against the headings they require.

use crate::specdoc::md::WRITER;

pub(super) use crate::agents::builtin::template::{fill, fill_and_read};

/// The text of part `name` of `template`, without its marker line.
pub fn part<'t>(template: &'t str, name: &str) -> Result<&'t str, String> {
    let marker = format!("<!-- part: {name} -->\n");
    let start = line_start_find(template, &marker)
        .ok_or_else(|| format!("the template has no part `{name}`"))?
        + marker.len();
    let rest = &template[start..];
    let end = line_start_find(rest, "<!-- part: ").unwrap_or(rest.len());
    Ok(&rest[..end])
}

/// The first position of `needle` at the start of a line.
fn line_start_find(hay: &str, needle: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = hay[from..].find(needle) {
        let at = from + at;
        if at == 0 || hay.as_bytes()[at - 1] == b'\n' {
            return Some(at);
        }
        from = at + needle.len();
    }
    None
}

/// The headings a part writes out literally (those holding no placeholder), in order, as
/// `(level, text)`. The frontmatter and placeholder headings are not counted.
pub fn required_headings(part: &str) -> Vec<(usize, String)> {
    WRITER
        .headings(part)
        .into_iter()
        .filter(|h| !h.text.contains("{{"))
        .map(|h| (h.level, h.text))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_writers_templates_compile() {
        let none = serde_json::json!({"feedback": []});
        assert_eq!(fill("revision-notes.md", &none).unwrap(), "");
        // A value the template needs and the data lacks is an error.
        assert!(fill("revision-notes.md", &serde_json::json!({"feedback": ["a"]})).is_err());
        let notes = serde_json::json!({"task_id": "DRAFT-001-R1", "feedback": ["a", "b"]});
        let text = fill("revision-notes.md", &notes).unwrap();
        assert!(text.starts_with("## Revision Notes\n\nThis version was written by DRAFT-001-R1"));
        assert!(text.contains("\n> a\n>\n> b\n\n"));
        // Values are inserted verbatim and never rendered again.
        let braces = serde_json::json!({"task_id": "T", "feedback": ["{{ z }}"]});
        assert!(
            fill("revision-notes.md", &braces)
                .unwrap()
                .contains("\n> {{ z }}\n")
        );
    }

    #[test]
    fn parts_and_placeholders() {
        let template = "<!-- header `part: x` -->\n<!-- part: a -->\n# {{t}}\n\n## Fixed\n\n{{x}}\n\n\n{{y}}\n<!-- part: b -->\nB {{t}}\n";
        let a = part(template, "a").unwrap();
        assert_eq!(a, "# {{t}}\n\n## Fixed\n\n{{x}}\n\n\n{{y}}\n");
        assert_eq!(part(template, "b").unwrap(), "B {{t}}\n");
        assert!(part(template, "c").is_err());
        assert_eq!(required_headings(a), vec![(2, "Fixed".to_owned())]);
    }
}
