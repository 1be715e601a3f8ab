//! The parses, the prose heuristic and the lexer, on small files of each language.

use super::lexer::*;
use super::prose::*;
use super::*;

fn parse(grammar: Grammar, text: &str) -> Syntax<'_> {
    Syntax::parse(grammar, text).expect("parses")
}

#[test]
fn comments_strings_and_code_are_told_apart() {
    let go = "package x\n\n// TODO: later\nfunc f() { ctx := context.TODO(); s := \"TODO\" }\n";
    let s = parse(Grammar::Go, go);
    let at = |needle: &str, nth: usize| go.match_indices(needle).nth(nth).unwrap().0;
    assert_eq!(s.place(at("TODO", 0)), Place::Comment);
    assert_eq!(s.place(at("TODO", 1)), Place::Code);
    assert_eq!(s.place(at("TODO", 2)), Place::String);

    let py = "x = f\"select {name} from t\"  # note\n";
    let s = parse(Grammar::Python, py);
    assert_eq!(s.place(py.find("select").unwrap()), Place::String);
    assert_eq!(s.place(py.find("name").unwrap()), Place::Code);
    assert_eq!(s.place(py.find("note").unwrap()), Place::Comment);

    let js = "const q = `a ${b + \"c\"} d`; // e\n";
    let s = parse(Grammar::JavaScript, js);
    assert_eq!(s.place(js.find('b').unwrap()), Place::Code);
    assert_eq!(s.place(js.find("c\"").unwrap()), Place::String);
    assert_eq!(s.place(js.find(" d").unwrap() + 1), Place::String);
    assert_eq!(s.place(js.find('e').unwrap()), Place::Comment);
}

#[test]
fn functions_have_qualified_names_and_whole_spans() {
    let py = "class A:\n    def m(self):\n        return 1\n\ndef g():\n    def inner():\n        pass\n    return inner\n";
    let names: Vec<(String, Range<usize>)> = parse(Grammar::Python, py)
        .functions()
        .into_iter()
        .map(|f| (f.name, f.lines))
        .collect();
    assert_eq!(
        names,
        vec![
            ("A.m".to_owned(), 1..3),
            ("g".to_owned(), 4..8),
            ("g.inner".to_owned(), 5..7)
        ]
    );
    let rs = "impl Foo {\n    fn a(&self) {}\n}\nfn b() {\n}\n";
    let names: Vec<String> = parse(Grammar::Rust, rs)
        .functions()
        .into_iter()
        .map(|f| f.name)
        .collect();
    assert_eq!(names, vec!["Foo::a", "b"]);
    let js = "const f = () => {\n  return 1;\n};\nclass C { m() {} }\n";
    let names: Vec<String> = parse(Grammar::JavaScript, js)
        .functions()
        .into_iter()
        .map(|f| f.name)
        .collect();
    assert_eq!(names, vec!["f", "C.m"]);
}

#[test]
fn rust_test_code_and_entry_points_are_found_by_syntax() {
    let rs = "fn main() {}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n";
    let s = parse(Grammar::Rust, rs);
    assert_eq!(s.test_lines(), vec![2..7, 4..6]);
    assert!(is_program(Grammar::Rust, rs));
    assert!(!is_program(Grammar::Rust, "pub fn lib() {}\n"));
    assert!(is_program(Grammar::Go, "package main\n\nfunc main() {}\n"));
    assert!(!is_program(Grammar::Go, "package util\n"));
    assert!(is_program(
        Grammar::Python,
        "def f():\n    pass\n\nif __name__ == '__main__':\n    f()\n"
    ));
    assert!(is_program(
        Grammar::JavaScript,
        "#!/usr/bin/env node\nrun();\n"
    ));
    assert!(is_program(
        Grammar::Python,
        "#!/usr/bin/env python\nimport argparse\n"
    ));
    assert!(!is_program(Grammar::Python, "import argparse\n"));
    // Found anywhere in the file, at the start of a line only.
    let late = "use std::io;\r\n// calls fn main(\r\nstruct S;\r\nasync fn main() {}\r\n";
    assert!(is_program(Grammar::Rust, late));
    assert!(is_program(Grammar::Rust, "mod a;\npub fn main() {}\n"));
    assert!(!is_program(
        Grammar::Rust,
        "// fn main() {}\n    fn main() {}\n"
    ));
    assert!(!is_program(Grammar::Rust, "pub(crate) fn main() {}\n"));
    assert!(is_program(Grammar::Go, "// x\npackage main\r\n"));
    assert!(!is_program(
        Grammar::Go,
        "// package main\npackage mainly\n"
    ));
    assert!(is_program(
        Grammar::Python,
        "x = '__main__'\nif __name__ == \"__main__\":\n    f()\n"
    ));
    assert!(!is_program(
        Grammar::Python,
        "    if __name__ == '__main__':\n"
    ));
}

#[test]
fn a_focused_parse_reads_only_the_items_around_the_focus() {
    let py = "import os\n\n\n@decorator\ndef a():\n    return 1\n\n\ndef b():\n    x = 2\n    return x\n\n\nclass C:\n    def m(self):\n        pass\n";
    let at = py.find("x = 2").unwrap();
    let w = windows(Grammar::Python, py, &[at..at + 6]);
    assert_eq!(&py[w[0].clone()], "def b():\n    x = 2\n    return x\n\n\n");
    let s = Syntax::parse_focused(Grammar::Python, py, Some(vec![at..at + 6])).unwrap();
    let names: Vec<String> = s.functions().into_iter().map(|f| f.name).collect();
    assert_eq!(names, vec!["b"]);
    // Decorators and attributes above an item are part of its window.
    let at = py.find("return 1").unwrap();
    assert!(py[windows(Grammar::Python, py, &[at..at + 1])[0].clone()].starts_with("@decorator\n"));
    let rs =
        "use x;\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {\n        f();\n    }\n}\n";
    let at = rs.find("f();").unwrap();
    let s = Syntax::parse_focused(Grammar::Rust, rs, Some(vec![at..at + 4])).unwrap();
    assert_eq!(s.test_lines(), vec![2..9, 4..8]);
    // A window that cuts an item (column-0 text inside a string) has parse errors: the
    // whole file is parsed instead, and the functions are all there.
    let py =
        "def a():\n    s = \"\"\"\nnot an item\n\"\"\"\n    return s\n\n\ndef b():\n    pass\n";
    let at = py.find("return s").unwrap();
    let s = Syntax::parse_focused(Grammar::Python, py, Some(vec![at..at + 8])).unwrap();
    assert!(!s.root().has_error());
    assert_eq!(s.functions().len(), 1, "only `a` holds the focus");
}

#[test]
fn items_are_cut_at_code_in_column_0_not_inside_strings_or_comments() {
    let starts = |g, text: &str| -> Vec<String> {
        item_starts(g, text, 0..text.len(), b"")
            .into_iter()
            .map(|at| text[at..].lines().next().unwrap_or("").to_owned())
            .collect()
    };
    let rs = "/*!\nCrate docs\n*/\n\nuse x;\n\n/// Doc.\n#[derive(Debug)]\nstruct S;\n\nfn doc() -> &'static str {\n    r#\"\nText in column 0\n\"#\n}\n\nfn f<'a>(c: char) -> bool {\n    c == '\"'\n}\n\nconst B: &[u8] = br\"\nx\n\";\nfn g() {}\n";
    assert_eq!(
        starts(Grammar::Rust, rs),
        vec![
            "/*!",
            "use x;",
            "/// Doc.",
            "fn doc() -> &'static str {",
            "fn f<'a>(c: char) -> bool {",
            "const B: &[u8] = br\"",
            "fn g() {}"
        ]
    );
    let py = "def a():\n    s = \"\"\"\nnot an item\n\"\"\"\n    return s\n# comment\n\n@decorator\ndef b():\n    pass\n";
    assert_eq!(starts(Grammar::Python, py), vec!["def a():", "@decorator"]);
    let go = "package p\n\nfunc f() string {\n\treturn `\n# not a comment\nnot an item\n`\n}\n\nfunc g() {}\n";
    assert_eq!(
        starts(Grammar::Go, go),
        vec!["package p", "func f() string {", "func g() {}"]
    );
    let js = "const t = `\nline\n${x}\n`;\n/* a\nb */\nfunction f() {}\n";
    assert_eq!(
        starts(Grammar::JavaScript, js),
        vec!["const t = `", "/* a",]
    );
    // A `where` clause, a body's brace, an `else:` in column 0 go on with the item.
    let rs = "fn f<T>(t: T)\nwhere\n    T: Clone,\n{\n    t;\n}\nfn g() {}\n";
    assert_eq!(
        starts(Grammar::Rust, rs),
        vec!["fn f<T>(t: T)", "fn g() {}"]
    );
    let py = "if x:\n    a()\nelse:\n    b()\ntry:\n    c()\nexcept E:\n    pass\n";
    assert_eq!(starts(Grammar::Python, py), vec!["if x:", "try:"]);
    // One window per item the focus reaches, in order.
    let text = "fn a() {}\n\nfn b() {\n    x();\n}\n\nfn c() {}\n";
    let from = text.find("x();").unwrap();
    let to = text.find("fn c").unwrap() + 3;
    let w: Vec<&str> = windows(Grammar::Rust, text, &[from..to])
        .into_iter()
        .map(|r| &text[r])
        .collect();
    assert_eq!(w, vec!["fn b() {\n    x();\n}\n\n", "fn c() {}\n"]);
}

#[test]
fn a_large_block_of_members_is_parsed_as_its_head_the_members_reached_and_its_tail() {
    let body: String = (0..70)
        .map(|i| format!("        let v{i} = {i};\n"))
        .collect();
    let fns: String = (0..40).map(|i| format!("    fn f{i}() {{}}\n")).collect();
    let rs = format!(
        "use x;\n\n/// S.\nimpl S {{\n    /// New.\n    pub fn new() -> S {{\n{body}    }}\n{fns}    fn last() {{\n        y();\n    }}\n}}\n"
    );
    let at = rs.find("y();").unwrap();
    let w = member_windows(Grammar::Rust, &rs, &[at..at + 4]);
    let texts: Vec<&str> = w.iter().map(|(r, _)| &rs[r.clone()]).collect();
    assert_eq!(
        texts,
        vec![
            "/// S.\nimpl S {\n",
            "    fn last() {\n        y();\n    }\n",
            "}\n"
        ]
    );
    assert_eq!(w[1].1, Some((0, 2)));
    // Parsed together they are an impl: the method keeps its qualified name.
    let ranges: Vec<Range<usize>> = w.iter().map(|(r, _)| r.clone()).collect();
    let s = Syntax::parse_items(Grammar::Rust, &rs, None, Some(ranges)).unwrap();
    assert!(!s.root().has_error());
    let names: Vec<String> = s.functions().into_iter().map(|f| f.name).collect();
    assert_eq!(names, vec!["S::last"]);
    // A long function is not a block of members: it stays whole.
    let f = format!("fn long() {{\n{body}}}\n");
    let at = f.find("v3 ").unwrap();
    assert_eq!(windows(Grammar::Rust, &f, &[at..at + 2]), vec![0..f.len()]);
    // A Python class: its head and the method reached (no tail).
    let methods: String = (0..40)
        .map(|i| format!("    def m{i}(self):\n        pass\n"))
        .collect();
    let py = format!("class C(Base):\n    x = 1\n{methods}    def last(self):\n        return 2\n");
    let at = py.find("return 2").unwrap();
    let w = windows(Grammar::Python, &py, &[at..at + 8]);
    let texts: Vec<&str> = w.iter().map(|r| &py[r.clone()]).collect();
    assert_eq!(
        texts,
        vec![
            "class C(Base):\n",
            "    def last(self):\n        return 2\n"
        ]
    );
}

#[test]
fn included_ranges_are_merged_and_placed_by_row_and_column() {
    let text = "ab\ncd\nef\n";
    let r = ts_ranges(text, &[0..3, 3..6, 7..9]);
    assert_eq!(r.len(), 2);
    assert_eq!((r[0].start_byte, r[0].end_byte), (0, 6));
    assert_eq!(r[0].end_point, tree_sitter::Point { row: 2, column: 0 });
    assert_eq!(r[1].start_point, tree_sitter::Point { row: 2, column: 1 });
    assert_eq!(r[1].end_point, tree_sitter::Point { row: 3, column: 0 });
}

#[test]
fn every_grammar_loads_and_parses() {
    for (g, text) in [
        (Grammar::Python, "x = 1\n"),
        (Grammar::Rust, "fn f() {}\n"),
        (Grammar::JavaScript, "let x = <a/>;\n"),
        (Grammar::TypeScript, "let x: number = 1;\n"),
        (Grammar::Tsx, "let x = <a/>;\n"),
        (Grammar::Go, "package x\n"),
    ] {
        assert!(!parse(g, text).root().has_error(), "{g:?}");
    }
}

#[test]
fn doc_comments_are_told_from_ordinary_ones() {
    let rs = "/// let x = f();\n// let y = g();\nfn a() {}\n";
    let s = parse(Grammar::Rust, rs);
    let docs: Vec<bool> = s.comments.iter().map(|c| c.doc).collect();
    assert_eq!(docs, vec![true, false]);
}

#[test]
fn prose_is_told_from_code_without_a_parse() {
    let prose = "If deactivate_worker() returns 0, every worker thread\nis currently idle.\n";
    for g in [
        Grammar::Rust,
        Grammar::Python,
        Grammar::Go,
        Grammar::JavaScript,
    ] {
        assert!(is_prose(g, prose), "{g:?}");
        assert!(Syntax::parse_clean(g, prose).is_none(), "{g:?}");
    }
    // Names side by side with keywords between them, a name and its type, words in
    // quotes: code.
    for (g, code) in [
        (
            Grammar::Rust,
            "pub unsafe fn f(x: &mut Self) -> impl Iterator<Item = u8> {}\n",
        ),
        (Grammar::Rust, "let msg = \"three words here\";\n"),
        (Grammar::Rust, "println!(any words at all);\n"),
        (Grammar::Rust, "#[doc(alias = x)]\nstruct S;\n"),
        (
            Grammar::Python,
            "from a import b\nif x is not None: print x\n",
        ),
        (Grammar::Python, "return a if b else c\n"),
        (
            Grammar::Go,
            "var x, y int\nfunc (s *S) F(a any, b string) {}\n",
        ),
        (
            Grammar::JavaScript,
            "export default async function f() {}\nfor (const a of b) {}\n",
        ),
        (Grammar::JavaScript, "const el = <p>Hello big world</p>;\n"),
        (
            Grammar::TypeScript,
            "declare module foo {}\nlet x = y as unknown as Z;\n",
        ),
    ] {
        assert!(!is_prose(g, code), "{g:?}: {code}");
        assert!(Syntax::parse_clean(g, code).is_some(), "{g:?}: {code}");
    }
}

#[test]
fn a_clean_parse_refuses_text_with_an_error() {
    assert!(Syntax::parse_clean(Grammar::Rust, "fn f( {\n").is_none());
    assert!(Syntax::parse_clean(Grammar::Rust, "fn f() { let x = f(1, 2); }\n").is_some());
    assert!(Syntax::parse_clean(Grammar::Python, "x = (1,\n").is_none());
    // The parser is usable again after a text with an error.
    assert!(Syntax::parse_clean(Grammar::Python, "x = f(1)\n").is_some());
}
