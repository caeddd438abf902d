//! Properties: `parse(format_sections(s)) == s` for everything a format can express, and no
//! input whatsoever makes a parser panic.

use proptest::prelude::*;
use text_format::{
    FormattedSection, MarkdownFormat, TextFormat, TextSection, XmlFormat, strip_code_fence,
};

/// Section names: the whole alphabet `TextSection` accepts.
fn name() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_.-]{1,20}"
}

/// Prose lines neither format reads as structure: no line starts with `#`, no `<`, no fences.
fn prose() -> impl Strategy<Value = String> {
    "[A-Za-z0-9 .,:;!?(){}\"'_-]{0,30}( *\n[A-Za-z0-9 .,:;!?(){}\"'_-]{0,30}){0,4}"
}

/// Content: prose, optionally with a fenced block holding lines that look like sections of
/// either format (they must stay content), trimmed and non-empty (empty sections are dropped and
/// contents are trimmed by design).
fn content(names: Vec<String>) -> impl Strategy<Value = String> {
    let fake =
        proptest::sample::select(names).prop_map(|name| format!("# {name}\n<{name}>x</{name}>"));
    (prose(), proptest::option::of(fake), prose())
        .prop_map(|(before, fenced, after)| match fenced {
            Some(fake) => format!("{before}\n```text\n{fake}\n```\n{after}"),
            None => format!("{before}\n{after}"),
        })
        .prop_map(|text| text.trim().to_owned())
        .prop_filter("empty sections are dropped", |text| !text.is_empty())
}

/// 1 to 6 sections over a registered set of distinct (case-insensitively) names.
fn sections() -> impl Strategy<Value = (Vec<String>, Vec<FormattedSection>)> {
    // `observation` is the XML wrapper's tag: registered, it would be one section around all.
    let section_name = name()
        .prop_map(|n| n.to_ascii_lowercase())
        .prop_filter("the observation wrapper", |n| n != "observation");
    proptest::collection::btree_map(section_name, Just(()), 1..5)
        .prop_map(|names| names.into_keys().collect::<Vec<_>>())
        .prop_flat_map(|names| {
            let section = (
                proptest::sample::select(names.clone()),
                content(names.clone()),
            )
                .prop_map(|(name, content)| FormattedSection::new(name, content));
            (Just(names), proptest::collection::vec(section, 1..6))
        })
}

fn round_trip<F: TextFormat>(mut format: F, names: &[String], sections: &[FormattedSection]) {
    for name in names {
        format.register_section(TextSection::new(name.clone(), "").unwrap());
    }
    let text = format.format_sections(sections);
    let parsed = format
        .parse(&text)
        .unwrap_or_else(|err| panic!("{err}\n---\n{text}"));
    let expected: Vec<(String, String)> = sections
        .iter()
        .map(|section| (section.name.clone(), section.content.clone()))
        .collect();
    assert_eq!(parsed.into_entries(), expected, "\n---\n{text}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn markdown_round_trips((names, sections) in sections()) {
        round_trip(MarkdownFormat::new(), &names, &sections);
    }

    #[test]
    fn xml_round_trips((names, sections) in sections()) {
        round_trip(XmlFormat::new(), &names, &sections);
    }

    #[test]
    fn xml_round_trips_unregistered(sections in proptest::collection::vec(
        (name(), "[A-Za-z0-9 .,:;!?]{1,40}").prop_filter_map("trimmed, non-empty", |(name, content)| {
            let content = content.trim().to_owned();
            (!content.is_empty()).then(|| FormattedSection::new(name, content))
        }),
        1..5,
    )) {
        // With nothing registered the <observation> wrapper is the one top-level section and
        // its content is exactly the formatted sections.
        let format = XmlFormat::new();
        let text = format.format_sections(&sections);
        let parsed = format.parse(&text).unwrap();
        let inner: Vec<String> = sections.iter().map(|s| format.format_section(&s.name, &s.content)).collect();
        let inner = inner.join("\n");
        prop_assert_eq!(parsed.first("observation"), Some(inner.as_str()));
    }
}

/// Model output built from the pieces parsers care about, to reach their corners quickly.
fn hostile() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("# ".to_owned()),
        Just("#".to_owned()),
        Just("\n".to_owned()),
        Just("\r\n".to_owned()),
        Just("```".to_owned()),
        Just("~~~".to_owned()),
        Just("<answer>".to_owned()),
        Just("</answer>".to_owned()),
        Just("<thinking>".to_owned()),
        Just("</ThInKiNg>".to_owned()),
        Just("<".to_owned()),
        Just(">".to_owned()),
        Just("</".to_owned()),
        Just("answer".to_owned()),
        Just(" ".to_owned()),
        Just(":".to_owned()),
        Just("é漢🦀".to_owned()),
        any::<String>(),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

fn formats() -> Vec<Box<dyn TextFormat>> {
    let thinking = TextSection::new("thinking", "t").unwrap();
    let answer = TextSection::new("answer", "a")
        .unwrap()
        .required(true)
        .repeatable(false);
    vec![
        Box::new(MarkdownFormat::new()),
        Box::new(XmlFormat::new()),
        Box::new(
            MarkdownFormat::new()
                .with_section(thinking.clone())
                .with_section(answer.clone()),
        ),
        Box::new(
            XmlFormat::new()
                .with_section(thinking.clone())
                .with_section(answer.clone()),
        ),
        Box::new(
            MarkdownFormat::new()
                .strict(true)
                .with_section(thinking.clone())
                .with_section(answer.clone()),
        ),
        Box::new(
            XmlFormat::new()
                .strict(true)
                .with_section(thinking)
                .with_section(answer),
        ),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn no_output_makes_a_parser_panic(output in hostile()) {
        for format in formats() {
            // Any result is fine; the property is that parsing returns.
            if let Ok(parsed) = format.parse(&output) {
                // What is returned is trimmed and non-empty.
                for (_, content) in parsed.iter() {
                    prop_assert!(!content.is_empty());
                    prop_assert_eq!(content, content.trim());
                }
            }
        }
        let _ = strip_code_fence(&output);
    }

    #[test]
    fn arbitrary_strings_never_panic(output in any::<String>()) {
        for format in formats() {
            let _ = format.parse(&output);
        }
    }
}
