//! MarkdownFormat parsing: the basic section cases plus the tolerances Skein adds.

use text_format::{Line, MarkdownFormat, ParseError, TextFormat, TextSection};

fn section(name: &str) -> TextSection {
    TextSection::new(name, format!("{name} content goes here...")).unwrap()
}

fn react() -> MarkdownFormat {
    MarkdownFormat::new()
        .with_section(section("thinking"))
        .with_section(section("action"))
        .with_section(section("answer"))
}

fn entries(format: &MarkdownFormat, output: &str) -> Vec<(String, String)> {
    format.parse(output).unwrap().into_entries()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(name, content)| (name.to_string(), content.to_string()))
        .collect()
}

#[test]
fn single_and_multiple_sections() {
    let format = react();
    assert_eq!(entries(&format, "# answer\n42"), pairs(&[("answer", "42")]));
    assert_eq!(
        entries(
            &format,
            "# thinking\nLet me see.\n\n# action\n{\"tool\": \"x\"}\n"
        ),
        pairs(&[("thinking", "Let me see."), ("action", "{\"tool\": \"x\"}")])
    );
}

#[test]
fn repeated_sections_keep_document_order() {
    let parsed = react()
        .parse("# action\nfirst\n# thinking\nmid\n# action\nsecond")
        .unwrap();
    assert_eq!(parsed.get("action"), ["first", "second"]);
    assert_eq!(
        parsed.iter().map(|(name, _)| name).collect::<Vec<_>>(),
        ["action", "thinking", "action"]
    );
}

#[test]
fn heading_case_colon_and_spacing_are_tolerated() {
    let format = react();
    assert_eq!(
        entries(&format, "# THINKING\nhm"),
        pairs(&[("thinking", "hm")])
    );
    assert_eq!(
        entries(&format, "#    Answer   \n42"),
        pairs(&[("answer", "42")])
    );
    assert_eq!(
        entries(&format, "# Answer:\n42"),
        pairs(&[("answer", "42")])
    );
    assert_eq!(
        entries(&format, "  #\tanswer ##\n42"),
        pairs(&[("answer", "42")])
    );
}

#[test]
fn leading_prose_crlf_and_trailing_whitespace() {
    let output = "Sure, here you go.\r\n\r\n# thinking  \r\nStep one.\r\nStep two.   \r\n# answer\r\n42\r\n\r\n";
    assert_eq!(
        entries(&react(), output),
        pairs(&[("thinking", "Step one.\nStep two."), ("answer", "42")])
    );
}

#[test]
fn empty_action_with_answer_terminates_instead_of_looping() {
    let parsed = react().parse("# action\n\n# answer\ndone").unwrap();
    assert!(!parsed.contains("action"));
    assert_eq!(parsed.first("answer"), Some("done"));
}

#[test]
fn sub_headings_and_hashes_are_content() {
    let output = "# answer\n## Step 1\nUse #hashtags.\n### Detail\n#not-a-heading";
    assert_eq!(
        react().parse(output).unwrap().first("answer"),
        Some("## Step 1\nUse #hashtags.\n### Detail\n#not-a-heading")
    );
}

#[test]
fn headings_inside_code_blocks_are_content() {
    let output =
        "# answer\nRun this:\n```bash\n# action\necho hi\n```\n~~~\n# thinking\n~~~\nDone.";
    let parsed = react().parse(output).unwrap();
    assert_eq!(parsed.len(), 1);
    assert_eq!(
        parsed.first("answer"),
        Some("Run this:\n```bash\n# action\necho hi\n```\n~~~\n# thinking\n~~~\nDone.")
    );
}

#[test]
fn an_unclosed_fence_does_not_swallow_later_sections() {
    let output = "# action\n```json\n{\"tool\": \"x\"}\n# answer\n42";
    let parsed = react().parse(output).unwrap();
    assert_eq!(parsed.first("action"), Some("```json\n{\"tool\": \"x\"}"));
    assert_eq!(parsed.first("answer"), Some("42"));
}

#[test]
fn a_fence_around_the_whole_answer_is_looked_into() {
    let output = "Here is my response:\n```markdown\n# thinking\nok\n# answer\n42\n```\n";
    assert_eq!(
        entries(&react(), output),
        pairs(&[("thinking", "ok"), ("answer", "42")])
    );
}

#[test]
fn unregistered_headings_end_the_section_and_are_skipped() {
    let output = "# action\n{\"tool\": \"x\"}\n# Observation\nmade up by the model\n# answer\n42";
    assert_eq!(
        entries(&react(), output),
        pairs(&[("action", "{\"tool\": \"x\"}"), ("answer", "42")])
    );
}

#[test]
fn strict_rejects_unregistered_headings_quoting_the_line() {
    let err = react()
        .strict(true)
        .parse("# thinking\nok\n# Observation\nx")
        .unwrap_err();
    assert_eq!(
        err,
        ParseError::UnknownSection {
            name: "Observation".into(),
            line: Line {
                number: 3,
                text: "# Observation".into()
            },
            expected: "`# thinking`, `# action`, `# answer`".into(),
        }
    );
    assert_eq!(
        err.to_string(),
        "unexpected section `Observation` at line 3: `# Observation`; only these sections are \
         allowed: `# thinking`, `# action`, `# answer`"
    );
}

#[test]
fn nothing_recognised_is_an_error() {
    let err = react().parse("I think the answer is 42.").unwrap_err();
    assert_eq!(
        err.to_string(),
        "no recognized sections found in the output (it starts at line 1: `I think the answer is \
         42.`); write your response in the sections `# thinking`, `# action`, `# answer`"
    );
    assert!(matches!(
        react().parse(""),
        Err(ParseError::NoSections {
            first_line: None,
            ..
        })
    ));
    assert!(matches!(
        react().parse("# other\ntext"),
        Err(ParseError::NoSections { .. })
    ));
}

#[test]
fn required_section_missing_quotes_the_last_line() {
    let format = MarkdownFormat::new()
        .with_section(section("thinking"))
        .with_section(section("answer").required(true));
    let err = format
        .parse("# thinking\nLet me work out\nthe total of")
        .unwrap_err();
    assert_eq!(
        err,
        ParseError::MissingSection {
            section: "answer".into(),
            hint: "as a heading line `# answer` followed by its content".into(),
            context: Some(Line {
                number: 3,
                text: "the total of".into()
            }),
        }
    );
}

#[test]
fn a_single_section_may_not_repeat() {
    let format = MarkdownFormat::new().with_section(section("answer").repeatable(false));
    let err = format.parse("# answer\n1\n\n# answer\n2").unwrap_err();
    assert_eq!(
        err.to_string(),
        "section `answer` appears more than once (again at line 4: `# answer`); write it once"
    );
}

#[test]
fn registration_is_idempotent_and_case_insensitive() {
    let mut format = MarkdownFormat::new();
    format.register_section(TextSection::new("Answer", "first").unwrap());
    format.register_section(TextSection::new("answer", "second").unwrap());
    assert_eq!(format.sections().len(), 1);
    assert_eq!(format.sections()[0].description(), "first");
    // Parsed names are the registered spelling.
    assert_eq!(entries(&format, "# ANSWER\nx"), pairs(&[("Answer", "x")]));
}

#[test]
fn with_nothing_registered_every_heading_is_a_section() {
    let format = MarkdownFormat::new();
    assert_eq!(
        entries(&format, "# get weather\nsunny\n# Notes\nnone"),
        pairs(&[("get weather", "sunny"), ("Notes", "none")])
    );
}

#[test]
fn section_names_are_validated() {
    assert!(TextSection::new("final_answer-2.v", "").is_ok());
    assert_eq!(
        TextSection::new("", "").unwrap_err().to_string(),
        "a section name must not be empty"
    );
    assert_eq!(
        TextSection::new("final answer", "")
            .unwrap_err()
            .to_string(),
        "section name `final answer` contains ' '; use only ASCII letters, digits, `_`, `-` and `.`"
    );
    assert!(TextSection::new("x".repeat(65), "").is_err());
}
