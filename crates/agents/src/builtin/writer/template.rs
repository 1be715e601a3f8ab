//! The writer's templates (`specs/templates/builtin/`), rendered through the builtin agent's
//! one environment (`agents/builtin/template.rs`) over plain data: the code decides what a
//! document says (ids, lists, counts, choices) and the template says it. What a document
//! must contain is the spec templates' (`tlv4_specdoc::template`), which agents and the
//! readiness gate read too; `validate` checks the writer's output against them.

pub(super) use crate::builtin::template::{fill, fill_and_read};

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
}
