//! The spec templates (`specs/templates/*.md`): what each spec document must contain, the
//! one contract that agents, the builtin writer and the readiness gate read. A template holds
//! parts marked `<!-- part: NAME -->` on a line of their own; the headings a part writes out
//! literally (those without a placeholder) are the headings a document of that part must have.

use super::md::Dialect;

/// The spec template `name` (`product-brief`, `requirements`, `architecture`, `epics`).
pub fn named(name: &str) -> Option<&'static str> {
    Some(match name {
        "product-brief" => include_str!("../../specs/templates/product-brief.md"),
        "requirements" => include_str!("../../specs/templates/requirements.md"),
        "architecture" => include_str!("../../specs/templates/architecture.md"),
        "epics" => include_str!("../../specs/templates/epics.md"),
        _ => return None,
    })
}

/// The text of part `name` of `template`, without its marker line: up to the next marker or
/// the end.
pub fn part<'t>(template: &'t str, name: &str) -> Option<&'t str> {
    let marker = format!("<!-- part: {name} -->\n");
    let start = line_start_find(template, &marker)? + marker.len();
    let rest = &template[start..];
    let end = line_start_find(rest, "<!-- part: ").unwrap_or(rest.len());
    Some(&rest[..end])
}

/// The first position of `needle` at the start of a line.
fn line_start_find(hay: &str, needle: &str) -> Option<usize> {
    hay.match_indices(needle)
        .map(|(at, _)| at)
        .find(|&at| at == 0 || hay.as_bytes()[at - 1] == b'\n')
}

/// The headings `part` writes out literally (those holding no placeholder), in order, as
/// `(level, text)` read in `dialect`. The frontmatter and placeholder headings are not
/// counted.
pub fn literal_headings(dialect: &Dialect, part: &str) -> Vec<(usize, String)> {
    dialect
        .headings(part)
        .into_iter()
        .filter(|h| !h.text.contains("{{"))
        .map(|h| (h.level, h.text))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::specdoc::md::WRITER;

    #[test]
    fn parts_and_placeholders() {
        let template = "<!-- header `part: x` -->\n<!-- part: a -->\n# {{t}}\n\n## Fixed\n\n{{x}}\n\n\n{{y}}\n<!-- part: b -->\nB {{t}}\n";
        let a = part(template, "a").unwrap();
        assert_eq!(a, "# {{t}}\n\n## Fixed\n\n{{x}}\n\n\n{{y}}\n");
        assert_eq!(part(template, "b").unwrap(), "B {{t}}\n");
        assert!(part(template, "c").is_none());
        assert_eq!(literal_headings(&WRITER, a), vec![(2, "Fixed".to_owned())]);
        assert!(named("epics").is_some_and(|t| part(t, "epic").is_some()));
        assert!(named("nothing").is_none());
    }
}
