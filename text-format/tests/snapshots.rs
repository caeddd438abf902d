//! Exact texts a model reads: formatting and `describe_structure`.

use text_format::{FormattedSection, MarkdownFormat, TextFormat, TextSection, XmlFormat};

fn customer_sections() -> Vec<FormattedSection> {
    vec![
        FormattedSection::new("get_customer_info", r#"{"id":"C001","name":"John"}"#),
        FormattedSection::new(
            "get_flight_info",
            r#"{"flight":"AA100","status":"on time"}"#,
        ),
    ]
}

fn react<F: TextFormat>(mut format: F) -> F {
    format.register_section(TextSection::new("thinking", "Think step by step.").unwrap());
    format.register_section(
        TextSection::new("action", "Tool calls, as described under Available tools.").unwrap(),
    );
    format.register_section(TextSection::new("answer", "Write your final answer here.").unwrap());
    format
}

#[test]
fn format_section_is_exactly_the_seed_shape() {
    assert_eq!(
        MarkdownFormat::new().format_section("search", "result"),
        "# search\nresult"
    );
    assert_eq!(
        XmlFormat::new().format_section("search", "result"),
        "<search>\nresult\n</search>"
    );
}

#[test]
fn empty_results_format_to_the_empty_string() {
    assert_eq!(MarkdownFormat::new().format_sections(&[]), "");
    assert_eq!(XmlFormat::new().format_sections(&[]), "");
}

#[test]
fn markdown_format_sections() {
    insta::assert_snapshot!(MarkdownFormat::new().format_sections(&customer_sections()));
}

#[test]
fn xml_format_sections() {
    insta::assert_snapshot!(XmlFormat::new().format_sections(&customer_sections()));
}

#[test]
fn markdown_describe_structure() {
    assert_eq!(MarkdownFormat::new().describe_structure(), "");
    insta::assert_snapshot!(react(MarkdownFormat::new()).describe_structure());
}

#[test]
fn xml_describe_structure() {
    assert_eq!(XmlFormat::new().describe_structure(), "");
    insta::assert_snapshot!(react(XmlFormat::new()).describe_structure());
}

#[test]
fn describe_structure_states_the_rules() {
    let format = XmlFormat::new()
        .strict(true)
        .with_section(
            TextSection::new("thinking", "Your reasoning.")
                .unwrap()
                .repeatable(false),
        )
        .with_section(
            TextSection::new("answer", "Your answer.")
                .unwrap()
                .required(true),
        );
    insta::assert_snapshot!(format.describe_structure());
}
