//! The spec templates (`specs/templates/*.md`): what each spec document must contain, the
//! one contract that agents, the builtin writer and the readiness gate read. A template holds
//! parts marked `<!-- part: NAME -->` on a line of their own, one per [`Part`]; the headings a
//! part writes out literally (those without a placeholder) are the headings a document of that
//! part must have, and its frontmatter the keys (and the fixed values) the builtin writer
//! writes.

use std::collections::BTreeMap;

use super::md::{self, GATE as MD};

/// The template part a spec file follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// `spec/product-brief.md`.
    Brief,
    /// `spec/requirements/_index.md`.
    RequirementsIndex,
    /// `REQ-NNN-<slug>.md`.
    Functional,
    /// `NFR-<cat>-NNN-<slug>.md`.
    NonFunctional,
    /// `spec/architecture/_index.md`.
    ArchitectureIndex,
    /// `ADR-NNN-<slug>.md`.
    Adr,
    /// `spec/epics/_index.md`.
    EpicsIndex,
    /// `EPIC-NNN-<slug>.md`.
    Epic,
}

impl Part {
    /// Whether it is one item of a document rather than its main file.
    pub fn is_item(self) -> bool {
        matches!(
            self,
            Part::Functional | Part::NonFunctional | Part::Adr | Part::Epic
        )
    }

    /// Its text in its spec template.
    fn text(self) -> &'static str {
        let (template, name) = match self {
            Part::Brief => ("product-brief", "brief"),
            Part::RequirementsIndex => ("requirements", "index"),
            Part::Functional => ("requirements", "functional"),
            Part::NonFunctional => ("requirements", "non-functional"),
            Part::ArchitectureIndex => ("architecture", "index"),
            Part::Adr => ("architecture", "adr"),
            Part::EpicsIndex => ("epics", "index"),
            Part::Epic => ("epics", "epic"),
        };
        named(template)
            .and_then(|t| part(t, name))
            .expect("every part is in its embedded template")
    }

    /// The headings a file of this part must have (those its template writes literally,
    /// without a placeholder), in template order. The H1 title holds a placeholder and is
    /// not counted.
    pub fn required(self) -> Vec<String> {
        literal_headings(self.text())
    }

    /// Each heading a file of this part must have, with its section in `text`, or `None`
    /// where `text` lacks it: a heading of any level whose title is the same once
    /// normalised.
    pub fn sections(self, text: &str) -> Vec<(String, Option<&str>)> {
        let hs = MD.headings(text);
        self.required()
            .into_iter()
            .map(|want| {
                let n = md::norm(&want);
                let at = hs.iter().position(|h| md::norm(&h.text) == n);
                let body = at.map(|i| md::section_at(text, &hs, i));
                (want, body)
            })
            .collect()
    }

    /// The frontmatter its template writes: every key, with its value where the template
    /// fixes one (`phase: 3`) and a `{{placeholder}}` where each document has its own.
    pub fn frontmatter(self) -> BTreeMap<String, String> {
        MD.frontmatter(self.text()).unwrap_or_default()
    }
}

/// The spec template `name` (`product-brief`, `requirements`, `architecture`, `epics`).
pub fn named(name: &str) -> Option<&'static str> {
    Some(match name {
        "product-brief" => include_str!("../../../specs/templates/product-brief.md"),
        "requirements" => include_str!("../../../specs/templates/requirements.md"),
        "architecture" => include_str!("../../../specs/templates/architecture.md"),
        "epics" => include_str!("../../../specs/templates/epics.md"),
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

/// The headings `part` writes out literally (those holding no placeholder), in order. The
/// frontmatter and placeholder headings are not counted.
fn literal_headings(part: &str) -> Vec<String> {
    MD.headings(part)
        .into_iter()
        .filter(|h| !h.text.contains("{{"))
        .map(|h| h.text)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_requires_headings() {
        for part in [
            Part::Brief,
            Part::RequirementsIndex,
            Part::Functional,
            Part::NonFunctional,
            Part::ArchitectureIndex,
            Part::Adr,
            Part::EpicsIndex,
            Part::Epic,
        ] {
            assert!(
                !part.required().is_empty(),
                "{part:?} has no required heading"
            );
            assert!(part.frontmatter().contains_key("document_type"), "{part:?}");
        }
        let brief = Part::Brief.required();
        assert!(brief.iter().any(|h| h == "Open Questions"), "{brief:?}");
        assert!(
            brief.iter().any(|h| h == "Goals & Success Metrics"),
            "{brief:?}"
        );
        assert!(!Part::Epic.required().iter().any(|h| h.contains("STORY")));
        assert_eq!(Part::Functional.frontmatter()["phase"], "3");
        let doc = "# T\n\n## Description\n\nd\n\n## user story\n\n";
        let sections = Part::Functional.sections(doc);
        assert_eq!(sections[0], ("Description".to_owned(), Some("\nd\n\n")));
        assert_eq!(sections[1].1, Some("\n"));
        assert_eq!(sections[2].1, None);
    }

    #[test]
    fn parts_and_placeholders() {
        let template = "<!-- header `part: x` -->\n<!-- part: a -->\n# {{t}}\n\n## Fixed\n\n{{x}}\n\n\n{{y}}\n<!-- part: b -->\nB {{t}}\n";
        let a = part(template, "a").unwrap();
        assert_eq!(a, "# {{t}}\n\n## Fixed\n\n{{x}}\n\n\n{{y}}\n");
        assert_eq!(part(template, "b").unwrap(), "B {{t}}\n");
        assert!(part(template, "c").is_none());
        assert_eq!(literal_headings(a), ["Fixed"]);
        assert!(named("epics").is_some_and(|t| part(t, "epic").is_some()));
        assert!(named("nothing").is_none());
    }
}
