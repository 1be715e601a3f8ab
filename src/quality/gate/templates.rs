//! The sections each spec file must have: the literal headings of its template part in
//! `specs/templates/` (the same templates the writer fills, so writer and gate agree).

use super::spec::Part;
use crate::specdoc::md::GATE as MD;

const BRIEF: &str = include_str!("../../../specs/templates/product-brief.md");
const REQUIREMENTS: &str = include_str!("../../../specs/templates/requirements.md");
const ARCHITECTURE: &str = include_str!("../../../specs/templates/architecture.md");
const EPICS: &str = include_str!("../../../specs/templates/epics.md");

/// The template and part name a file follows.
fn source(part: Part) -> (&'static str, &'static str) {
    match part {
        Part::Brief => (BRIEF, "brief"),
        Part::RequirementsIndex => (REQUIREMENTS, "index"),
        Part::Functional => (REQUIREMENTS, "functional"),
        Part::NonFunctional => (REQUIREMENTS, "non-functional"),
        Part::ArchitectureIndex => (ARCHITECTURE, "index"),
        Part::Adr => (ARCHITECTURE, "adr"),
        Part::EpicsIndex => (EPICS, "index"),
        Part::Epic => (EPICS, "epic"),
    }
}

/// The text of part `name` of `template`, without its marker line.
fn part_text<'t>(template: &'t str, name: &str) -> Option<&'t str> {
    let marker = format!("<!-- part: {name} -->\n");
    let start = template
        .match_indices(&marker)
        .find(|(at, _)| *at == 0 || template.as_bytes()[at - 1] == b'\n')?
        .0
        + marker.len();
    let rest = &template[start..];
    let end = rest.find("\n<!-- part: ").map_or(rest.len(), |e| e + 1);
    Some(&rest[..end])
}

/// The headings a file of `part` must have (those its template writes literally, without a
/// placeholder), in template order. The H1 title holds a placeholder and is not counted.
pub fn required(part: Part) -> Vec<String> {
    let (template, name) = source(part);
    part_text(template, name)
        .map(|text| {
            MD.headings(text)
                .into_iter()
                .filter(|h| !h.text.contains("{{"))
                .map(|h| h.text)
                .collect()
        })
        .unwrap_or_default()
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
                !required(part).is_empty(),
                "{part:?} has no required heading"
            );
        }
        let brief = required(Part::Brief);
        assert!(brief.iter().any(|h| h == "Open Questions"), "{brief:?}");
        assert!(
            brief.iter().any(|h| h == "Goals & Success Metrics"),
            "{brief:?}"
        );
        assert!(!required(Part::Epic).iter().any(|h| h.contains("STORY")));
    }
}
