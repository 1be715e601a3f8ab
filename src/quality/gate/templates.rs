//! The sections each spec file must have: the literal headings of its template part in
//! `specs/templates/`, read through `specdoc::template` as the builtin writer reads them, so
//! writer and gate agree.

use super::spec::Part;
use crate::specdoc::md::GATE as MD;
use crate::specdoc::template;

/// The spec template and part name a file follows.
fn source(part: Part) -> (&'static str, &'static str) {
    match part {
        Part::Brief => ("product-brief", "brief"),
        Part::RequirementsIndex => ("requirements", "index"),
        Part::Functional => ("requirements", "functional"),
        Part::NonFunctional => ("requirements", "non-functional"),
        Part::ArchitectureIndex => ("architecture", "index"),
        Part::Adr => ("architecture", "adr"),
        Part::EpicsIndex => ("epics", "index"),
        Part::Epic => ("epics", "epic"),
    }
}

/// The headings a file of `part` must have (those its template writes literally, without a
/// placeholder), in template order. The H1 title holds a placeholder and is not counted.
pub fn required(part: Part) -> Vec<String> {
    let (template, name) = source(part);
    template::named(template)
        .and_then(|t| template::part(t, name))
        .map(|text| {
            template::literal_headings(&MD, text)
                .into_iter()
                .map(|(_, h)| h)
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
