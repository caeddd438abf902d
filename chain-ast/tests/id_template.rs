//! Tool-call id templates: generate, check, round trips, error
//! details and edge cases.

use chain_ast::{IdMismatch, IdTemplate};
use proptest::prelude::*;

#[test]
fn generate_from_pattern() {
    let id = IdTemplate::new("call_{r:24:x}").generate("f");
    assert_eq!(id.len(), 29);
    assert!(id.starts_with("call_"));
    assert!(id[5..].chars().all(|c| c.is_ascii_alphanumeric()));

    let digits = IdTemplate::new("{r:12:d}").generate("f");
    assert!(digits.len() == 12 && digits.chars().all(|c| c.is_ascii_digit()));
    let hex = IdTemplate::new("{r:16:h}").generate("f");
    assert!(hex.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')));
    let upper_hex = IdTemplate::new("{r:16:HEX}").generate("f");
    assert!(
        upper_hex
            .chars()
            .all(|c| matches!(c, '0'..='9' | 'A'..='F'))
    );
    let lower = IdTemplate::new("{r:10:lower}").generate("f");
    assert!(lower.chars().all(|c| c.is_ascii_lowercase()));
    let upper = IdTemplate::new("{r:10:u}").generate("f");
    assert!(upper.chars().all(|c| c.is_ascii_uppercase()));
    let alpha = IdTemplate::new("{r:10:alpha}").generate("f");
    assert!(alpha.chars().all(|c| c.is_ascii_alphabetic()));

    assert_eq!(
        IdTemplate::new("{f}").generate("get_weather"),
        "get_weather"
    );
    assert_eq!(IdTemplate::new("{f}").generate(""), "function");
    // Two ids from one template differ (24 random characters).
    let template = IdTemplate::default();
    assert_ne!(template.generate("f"), template.generate("f"));
}

#[test]
fn validate_pattern() {
    let template = IdTemplate::new("toolu_{r:24:b}");
    assert!(
        template
            .check("toolu_0123456789abcdefghijklmn", "f")
            .is_ok()
    );
    assert!(
        template
            .check("call_0123456789abcdefghijklmn", "f")
            .is_err()
    );
    assert!(
        template
            .check("toolu_0123456789abcdefghijklm_", "f")
            .is_err()
    );
    let kimi = IdTemplate::new("{f}:{r:1:d}");
    assert!(kimi.check("get_number:7", "get_number").is_ok());
    assert!(kimi.check("get_number:x", "get_number").is_err());
    assert!(kimi.check("get_other:7", "get_number").is_err());
}

#[test]
fn validate_pattern_error_details() {
    let template = IdTemplate::new("call_{r:4:d}");
    assert_eq!(
        template.check("call_12", "f"),
        Err(IdMismatch::Length {
            id: "call_12".into(),
            template: "call_{r:4:d}".into(),
            expected: 9,
            found: 7
        })
    );
    let error = template
        .check("call_12a4", "f")
        .expect_err("a letter where a digit belongs");
    assert_eq!(
        error,
        IdMismatch::Char {
            id: "call_12a4".into(),
            template: "call_{r:4:d}".into(),
            position: 7,
            expected: "a digit".into(),
            found: 'a',
        }
    );
    assert_eq!(
        error.to_string(),
        "tool call id \"call_12a4\" does not match template \"call_{r:4:d}\" at character 7: expected a digit, got 'a'"
    );
    let literal = template
        .check("cell_1234", "f")
        .expect_err("literal mismatch");
    assert!(matches!(
        literal,
        IdMismatch::Char {
            position: 1,
            found: 'e',
            ..
        }
    ));
    assert!(literal.to_string().contains("expected 'a'"), "{literal}");
}

#[test]
fn pattern_edge_cases() {
    let cases = [
        ("toolu_{r:24:b}", "f", 30),
        ("call_{r:24:x}", "f", 29),
        ("chatcmpl-tool-{r:32:h}", "f", 46),
        ("tool_{r:20:l}_{r:15:x}", "f", 41),
        ("{r:4:u}-{r:4:u}-{r:4:u}-{r:12:h}", "f", 27),
        ("{f}:{r:1:d}", "get_number", 12),
        ("", "f", 0),
        ("literal_only", "f", 12),
        ("prefix_{f}_suffix", "tool", 18),
    ];
    for (source, function, length) in cases {
        let template = IdTemplate::new(source);
        let id = template.generate(function);
        assert_eq!(id.len(), length, "{source}");
        template
            .check(&id, function)
            .unwrap_or_else(|error| panic!("{source}: {error}"));
    }
    assert_eq!(
        IdTemplate::new("literal_only").generate("f"),
        "literal_only"
    );
    assert_eq!(
        IdTemplate::new("prefix_{f}_suffix").generate("tool"),
        "prefix_tool_suffix"
    );
    // What is not a placeholder is literal text.
    for literal in [
        "{r:5:zzz}",
        "{r::x}",
        "{r:5x}",
        "{g}",
        "{",
        "}{",
        "{r:5:x",
        "{r:99999999999999999999999:x}",
    ] {
        assert_eq!(IdTemplate::new(literal).generate("f"), literal, "{literal}");
        assert!(
            IdTemplate::new(literal).check(literal, "f").is_ok(),
            "{literal}"
        );
    }
    // Runs above the limit are literal too, so a template cannot ask for gigabytes.
    let huge = format!("{{r:{}:x}}", chain_ast::id_template::MAX_RANDOM_RUN + 1);
    assert_eq!(IdTemplate::new(&huge).generate("f"), huge);
    assert_eq!(IdTemplate::new("{r:1024:x}").generate("f").len(), 1024);
    assert_eq!(
        "call_{r:2:d}".parse::<IdTemplate>().map(|t| t.to_string()),
        Ok("call_{r:2:d}".to_owned())
    );
}

fn template_source() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-z_:.-]{0,5}",
        Just("{f}".to_owned()),
        (
            0usize..30,
            prop_oneof![
                Just("d"),
                Just("digit"),
                Just("l"),
                Just("lower"),
                Just("u"),
                Just("upper"),
                Just("a"),
                Just("alpha"),
                Just("x"),
                Just("alnum"),
                Just("h"),
                Just("hex"),
                Just("H"),
                Just("HEX"),
                Just("b"),
                Just("base62"),
                Just("zzz"),
            ]
        )
            .prop_map(|(length, set)| format!("{{r:{length}:{set}}}")),
        "\\PC{0,3}",
    ];
    proptest::collection::vec(piece, 0..5).prop_map(|pieces| pieces.concat())
}

proptest! {
    /// Every generated id passes the check of its template, and has the length the check wants.
    #[test]
    fn generate_and_validate_round_trip(source in template_source(), function in "[a-z_]{0,8}") {
        let template = IdTemplate::new(&source);
        let id = template.generate(&function);
        prop_assert_eq!(template.check(&id, &function), Ok(()));
        prop_assert_eq!(template.as_str(), source.as_str());
    }

    /// Parsing, generating and checking never panic, whatever the text.
    #[test]
    fn any_text_is_a_template(source in "\\PC{0,40}", id in "\\PC{0,40}") {
        let template = IdTemplate::new(&source);
        let generated = template.generate("f");
        prop_assert!(template.check(&generated, "f").is_ok());
        let _ = template.check(&id, "f");
    }
}
