//! XmlFormat parsing: the basic section cases plus the tolerances Skein adds.

use text_format::{Line, ParseError, TextFormat, TextSection, XmlFormat};

fn section(name: &str) -> TextSection {
    TextSection::new(name, format!("{name} content goes here...")).unwrap()
}

fn react() -> XmlFormat {
    XmlFormat::new()
        .with_section(section("thinking"))
        .with_section(section("action"))
        .with_section(section("answer"))
}

fn entries(format: &XmlFormat, output: &str) -> Vec<(String, String)> {
    format.parse(output).unwrap().into_entries()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(name, content)| (name.to_string(), content.to_string()))
        .collect()
}

#[test]
fn single_multiple_and_repeated_sections() {
    let format = react();
    assert_eq!(
        entries(&format, "<answer>42</answer>"),
        pairs(&[("answer", "42")])
    );
    assert_eq!(
        entries(
            &format,
            "<thinking>\nhm\n</thinking>\n<action>a</action>\n<action>b</action>"
        ),
        pairs(&[("thinking", "hm"), ("action", "a"), ("action", "b")])
    );
}

#[test]
fn same_line_inline_and_whitespace() {
    assert_eq!(
        entries(
            &react(),
            "  <thinking>  x  </thinking><answer>\n\n y \n</answer>  "
        ),
        pairs(&[("thinking", "x"), ("answer", "y")])
    );
}

#[test]
fn case_insensitive_returns_registered_name() {
    assert_eq!(
        entries(&react(), "<ANSWER>42</Answer>"),
        pairs(&[("answer", "42")])
    );
}

#[test]
fn content_outside_tags_is_ignored_and_empty_sections_dropped() {
    let parsed = react()
        .parse("Let me answer.\n<action>\n</action>\n<answer>done</answer>\nBye.")
        .unwrap();
    assert!(!parsed.contains("action"));
    assert_eq!(parsed.first("answer"), Some("done"));
}

#[test]
fn literal_tags_inside_thinking_do_not_break_parsing() {
    // A literal <answer> in <thinking> must not open a section, and a made-up observation block
    // (not registered) is ignored.
    let output = "<thinking>\nI should provide <answer>. Maybe close it with </answer>?\n</thinking>\n\
                  <action>\n{\"tool\": \"search\"}\n</action>\n\
                  <observation>\nfake results\n</observation>\n<answer>\nfinal\n</answer>";
    assert_eq!(
        entries(&react(), output),
        pairs(&[
            (
                "thinking",
                "I should provide <answer>. Maybe close it with </answer>?"
            ),
            ("action", "{\"tool\": \"search\"}"),
            ("answer", "final"),
        ])
    );
}

#[test]
fn a_section_inside_another_is_content() {
    let output =
        "<thinking>The format is <answer>42</answer>, then stop.</thinking>\n<answer>7</answer>";
    assert_eq!(
        entries(&react(), output),
        pairs(&[
            ("thinking", "The format is <answer>42</answer>, then stop."),
            ("answer", "7"),
        ])
    );
    // Nesting of the same tag: the outer pair is the section.
    assert_eq!(
        entries(&react(), "<answer>x<answer>y</answer>z</answer>"),
        pairs(&[("answer", "x<answer>y</answer>z")])
    );
}

#[test]
fn literal_angle_brackets_in_code_are_kept() {
    let output = "<answer>\nUse `<hello>` like this:\n```html\n<answer>not a tag</answer>\n<hello>\n```\n</answer>";
    assert_eq!(
        react().parse(output).unwrap().first("answer"),
        Some("Use `<hello>` like this:\n```html\n<answer>not a tag</answer>\n<hello>\n```")
    );
}

#[test]
fn tags_inside_code_blocks_are_not_sections() {
    let output = "```xml\n<answer>example</answer>\n```\n<answer>real</answer>";
    assert_eq!(entries(&react(), output), pairs(&[("answer", "real")]));
}

#[test]
fn a_fence_around_the_whole_answer_is_looked_into() {
    let output = "```xml\r\n<thinking>ok</thinking>\r\n<answer>42</answer>\r\n```";
    assert_eq!(
        entries(&react(), output),
        pairs(&[("thinking", "ok"), ("answer", "42")])
    );
}

#[test]
fn a_cut_off_final_section_is_accepted() {
    let output = "<thinking>ok</thinking>\n<answer>\nThe answer is 42";
    assert_eq!(
        entries(&react(), output),
        pairs(&[("thinking", "ok"), ("answer", "The answer is 42")])
    );
    // An unclosed section runs to the next one.
    assert_eq!(
        entries(&react(), "<action>\n{}\n<answer>7</answer>"),
        pairs(&[("action", "{}"), ("answer", "7")])
    );
    // A mention in the middle of prose is not an opening tag.
    assert!(matches!(
        react().parse("<thinking>ok</thinking> then I give <answer> 42"),
        Ok(parsed) if !parsed.contains("answer")
    ));
}

#[test]
fn required_section_never_closed_quotes_its_opening_line() {
    let format = XmlFormat::new()
        .with_section(section("thinking"))
        .with_section(section("answer").required(true));
    let err = format
        .parse("<thinking>ok, I will write <answer> next</thinking>")
        .unwrap_err();
    assert_eq!(
        err,
        ParseError::MissingSection {
            section: "answer".into(),
            hint: "as <answer>…</answer>, closing the tag".into(),
            context: Some(Line {
                number: 1,
                text: "<thinking>ok, I will write <answer> next</thinking>".into()
            }),
        }
    );
}

#[test]
fn nothing_recognised_is_an_error() {
    assert_eq!(
        react().parse("just text").unwrap_err().to_string(),
        "no recognized sections found in the output (it starts at line 1: `just text`); write \
         your response in the sections <thinking>, <action>, <answer>"
    );
    assert!(matches!(
        react().parse("<other>x</other>"),
        Err(ParseError::NoSections { .. })
    ));
}

#[test]
fn strict_mode_rejects_unregistered_sections() {
    let output = "<thinking>ok</thinking>\n<observation>made up</observation>\n<answer>1</answer>";
    assert_eq!(
        react().strict(true).parse(output).unwrap_err(),
        ParseError::UnknownSection {
            name: "observation".into(),
            line: Line {
                number: 2,
                text: "<observation>made up</observation>".into()
            },
            expected: "<thinking>, <action>, <answer>".into(),
        }
    );
    // Unregistered tags inside a registered section are content, even in strict mode.
    assert_eq!(
        entries(&react().strict(true), "<answer>use <b>bold</b></answer>"),
        pairs(&[("answer", "use <b>bold</b>")])
    );
    // Non-strict: wrappers the model invents are looked through.
    assert_eq!(
        entries(&react(), "<response><answer>1</answer></response>"),
        pairs(&[("answer", "1")])
    );
}

#[test]
fn a_single_section_may_not_repeat() {
    let format = XmlFormat::new().with_section(section("answer").repeatable(false));
    assert!(matches!(
        format.parse("<answer>1</answer>\n<answer>2</answer>"),
        Err(ParseError::RepeatedSection {
            line: Line { number: 2, .. },
            ..
        })
    ));
}

#[test]
fn with_nothing_registered_top_level_tags_are_sections() {
    assert_eq!(
        entries(&XmlFormat::new(), "<a>1</a> text <b>2 <c>3</c></b>"),
        pairs(&[("a", "1"), ("b", "2 <c>3</c>")])
    );
}
