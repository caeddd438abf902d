//! The canonical transcript format: its exact JSON, round trips, and errors on bad input.

use messages::{
    ContentPart, Message, Reasoning, Role, ToolCall, ToolResponse, TranscriptError, transcript,
};
use proptest::prelude::*;

fn every_part_kind() -> Vec<Message> {
    vec![
        Message::system("You are a helpful assistant."),
        Message::new(
            Role::Human,
            vec![
                ContentPart::text("What is in this picture, and how hot is it there?"),
                ContentPart::ImageUrl {
                    url: "https://example.com/cat.png".into(),
                    detail: Some("low".into()),
                },
                ContentPart::binary("image/png", vec![0x89, b'P', b'N', b'G', 0, 255]),
            ],
        ),
        Message::new(
            Role::Ai,
            vec![
                ContentPart::Reasoning(Reasoning {
                    id: Some("rs_1".into()),
                    text: "The user wants the weather.".into(),
                    signature: Some("EqQBCkYIBxgCKkA=".into()),
                    encrypted: None,
                }),
                ContentPart::Reasoning(Reasoning {
                    encrypted: Some("gAAAAAB…redacted".into()),
                    ..Default::default()
                }),
                ContentPart::Text {
                    text: "Let me check.".into(),
                    reasoning: Some(Reasoning::signature("sig-text")),
                },
                ContentPart::ToolCall(ToolCall {
                    id: "call_1".into(),
                    name: "get_weather".into(),
                    arguments: r#"{"city":"Paris"}"#.into(),
                    reasoning: Some(Reasoning::signature("sig-call")),
                }),
            ],
        ),
        Message::new(
            Role::Tool,
            vec![
                ContentPart::ToolResponse(ToolResponse::new("call_1", "get_weather", "18°C")),
                ContentPart::image_url("data:image/png;base64,iVBORw0KGgo="),
            ],
        ),
        Message::ai("It is 18°C."),
    ]
}

#[test]
fn transcript_json_of_every_part_kind() {
    let chain = every_part_kind();
    let json = transcript::to_json(&chain);
    insta::assert_snapshot!(json);
    assert_eq!(transcript::from_json(&json).unwrap(), chain);
}

#[test]
fn binary_is_standard_base64() {
    let json = serde_json::to_value(ContentPart::binary(
        "application/octet-stream",
        b"hello".to_vec(),
    ))
    .unwrap();
    assert_eq!(json["data"], "aGVsbG8=");
    assert_eq!(json["type"], "binary");
}

#[test]
fn text_joins_text_parts_only() {
    let mut msg = Message::ai_tool_calls(Some("a".into()), vec![ToolCall::new("1", "f", "{}")]);
    msg.parts.push(ContentPart::Reasoning(Reasoning {
        text: "hidden".into(),
        ..Default::default()
    }));
    msg.parts.push(ContentPart::text("b"));
    assert_eq!(msg.text(), "a\nb");
    assert_eq!(Message::new(Role::Ai, vec![]).text(), "");
}

#[test]
fn constructors_build_the_documented_shapes() {
    assert_eq!(Message::system("s").role, Role::System);
    assert_eq!(Message::human("h").parts, vec![ContentPart::text("h")]);
    let calls = Message::ai_tool_calls(None, vec![ToolCall::new("id", "n", "{}")]);
    assert_eq!(calls.role, Role::Ai);
    assert_eq!(calls.parts.len(), 1);
    assert_eq!(calls.tool_calls().next().unwrap().name, "n");
    let response = Message::tool_response("id", "n", "out");
    assert_eq!(
        response.tool_responses().next().unwrap(),
        &ToolResponse::new("id", "n", "out")
    );
    assert!(ContentPart::image_url("u").is_media());
    assert!(!ContentPart::text("t").is_media());
    assert!(Reasoning::default().is_empty());
    assert!(!Reasoning::signature("s").is_empty());
    assert_eq!(Role::Ai.to_string(), "ai");
}

#[test]
fn unknown_role_is_a_located_error() {
    let err = transcript::from_json("[\n  {\"role\": \"robot\", \"parts\": []}\n]").unwrap_err();
    let TranscriptError::Invalid { line, message, .. } = &err;
    assert_eq!(*line, 2);
    assert!(message.contains("unknown variant `robot`"), "{message}");
    assert!(err.to_string().contains("line 2"), "{err}");
}

#[test]
fn unknown_part_type_and_bad_base64_are_errors() {
    let err = transcript::from_json(r#"[{"role":"ai","parts":[{"type":"video","url":"x"}]}]"#)
        .unwrap_err();
    assert!(err.to_string().contains("unknown variant `video`"), "{err}");
    let err = transcript::from_json(
        r#"[{"role":"ai","parts":[{"type":"binary","mime_type":"a/b","data":"!!"}]}]"#,
    )
    .unwrap_err();
    assert!(err.to_string().contains("not valid base64"), "{err}");
}

#[test]
fn malformed_json_is_an_error_not_a_panic() {
    for bad in [
        "",
        "{",
        "[",
        "[{]",
        "null",
        "{\"role\":\"ai\"}",
        "[{\"role\":\"ai\"}]",
    ] {
        assert!(transcript::from_json(bad).is_err(), "{bad:?} was accepted");
    }
    assert_eq!(transcript::from_json("[]").unwrap(), vec![]);
}

fn arb_reasoning() -> impl Strategy<Value = Reasoning> {
    (
        proptest::option::of(".{0,8}"),
        ".{0,8}",
        proptest::option::of(".{0,8}"),
        proptest::option::of(".{0,8}"),
    )
        .prop_map(|(id, text, signature, encrypted)| Reasoning {
            id,
            text,
            signature,
            encrypted,
        })
}

fn arb_part() -> impl Strategy<Value = ContentPart> {
    prop_oneof![
        (".{0,16}", proptest::option::of(arb_reasoning()))
            .prop_map(|(text, reasoning)| ContentPart::Text { text, reasoning }),
        (".{0,16}", proptest::option::of("[a-z]{0,4}"))
            .prop_map(|(url, detail)| ContentPart::ImageUrl { url, detail }),
        (
            "[a-z]+/[a-z]+",
            proptest::collection::vec(any::<u8>(), 0..32)
        )
            .prop_map(|(mime_type, data)| ContentPart::Binary { mime_type, data }),
        arb_reasoning().prop_map(ContentPart::Reasoning),
        (
            ".{0,8}",
            ".{0,8}",
            ".{0,16}",
            proptest::option::of(arb_reasoning())
        )
            .prop_map(
                |(id, name, arguments, reasoning)| ContentPart::ToolCall(ToolCall {
                    id,
                    name,
                    arguments,
                    reasoning
                })
            ),
        (".{0,8}", ".{0,8}", ".{0,16}").prop_map(|(id, name, content)| ContentPart::ToolResponse(
            ToolResponse::new(id, name, content)
        )),
    ]
}

fn arb_message() -> impl Strategy<Value = Message> {
    (
        prop_oneof![
            Just(Role::System),
            Just(Role::Human),
            Just(Role::Ai),
            Just(Role::Tool)
        ],
        proptest::collection::vec(arb_part(), 0..5),
    )
        .prop_map(|(role, parts)| Message { role, parts })
}

proptest! {
    #[test]
    fn any_transcript_round_trips(chain in proptest::collection::vec(arb_message(), 0..6)) {
        let json = transcript::to_json(&chain);
        prop_assert_eq!(transcript::from_json(&json).unwrap(), chain.clone());
        prop_assert_eq!(transcript::from_slice(json.as_bytes()).unwrap(), chain);
    }

    #[test]
    fn arbitrary_text_is_read_or_refused_never_panics(text in ".{0,200}") {
        // Whatever is accepted must be a transcript that writes back to an equal one.
        if let Ok(chain) = transcript::from_json(&text) {
            prop_assert_eq!(transcript::from_json(&transcript::to_json(&chain)).unwrap(), chain);
        }
    }
}
