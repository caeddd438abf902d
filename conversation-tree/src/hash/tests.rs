//! Golden hashes and hashing invariants.
//!
//! The golden hex values were computed outside this crate, from the encoding the module docs
//! specify: Python's `hashlib.sha256` over
//! `json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`. A change of
//! encoding fails here; a change on purpose needs new values and a migration.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use messages::{ContentPart, Message, Reasoning, Role, ToolCall, ToolResponse};
use proptest::prelude::*;
use serde_json::Value;

use super::canonical::canonical_json;
use super::document::{MessageDoc, PromptDoc};
use super::*;
use crate::HashOptions;

const PNG: [u8; 12] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2, 3];

fn weather_call(arguments: &str) -> ToolCall {
    ToolCall::new("call_1", "get_weather", arguments)
}

#[test]
fn golden_attachment_hashes() {
    let bytes = "0f6c3a09018d44c79811cb205e1e03f0f214fdd8728f82e6e92aaaf95da5ee49";
    assert_eq!(
        attachment_hash(&ContentPart::binary("image/png", PNG)).as_deref(),
        Some(bytes)
    );
    // A base64 data URL carries the bytes: it hashes like them, MIME type aside.
    let data_url = format!("data:image/jpeg;base64,{}", STANDARD.encode(PNG));
    assert_eq!(
        attachment_hash(&ContentPart::image_url(data_url)).as_deref(),
        Some(bytes)
    );
    assert_eq!(
        attachment_hash(&ContentPart::image_url("https://example.com/cat.png")).as_deref(),
        Some("url:89f18b17905ce590a4bc6105cf89117b5fd294b67bd1702849aaf446ec1abbd8")
    );
    assert_eq!(
        attachment_hash(&ContentPart::image_url("file:///tmp/cat.png")).as_deref(),
        Some("path:83b8f6fd671767a96fa4e142843bba551e58bbd1b46276c73dc798e069bb2709")
    );
    assert_eq!(attachment_hash(&ContentPart::text("not media")), None);
}

#[test]
fn golden_tool_call_hashes() {
    let expected = "a7dd0c1c0cf6e1eb2f5fcfb93c90c8b519af5392c36fc3e2ca7488b402511432";
    assert_eq!(
        tool_call_hash(&weather_call(
            r#"{"city":"Paris","units":{"temp":"C","wind":"kmh"}}"#
        )),
        expected
    );
    // Key order, whitespace and the call id are not part of it.
    let mut reordered = weather_call(
        "{\n  \"units\": { \"wind\": \"kmh\", \"temp\": \"C\" },\n  \"city\": \"Paris\"\n}",
    );
    reordered.id = "toolu_other".to_owned();
    assert_eq!(tool_call_hash(&reordered), expected);
    // Arguments that are not JSON are hashed as written, apart from any JSON value.
    assert_eq!(
        tool_call_hash(&weather_call("{city: Paris")),
        "7db52347a18b1a0c16235796c62bc649d125411473be4d1cee3a8605e83a6d1e"
    );
    // Providers send "" or "{}" for a call without arguments.
    let empty = "697b7eec864588509134e0092cc4d5bce9e8235087895f9f9024bdcf61e90bf5";
    assert_eq!(tool_call_hash(&ToolCall::new("a", "now", "")), empty);
    assert_eq!(tool_call_hash(&ToolCall::new("b", "now", " {} ")), empty);
}

#[test]
fn golden_tool_result_hashes() {
    let response = ToolResponse::new("call_1", "get_weather", "18°C");
    assert_eq!(
        tool_result_hash(&response, &[]),
        "8e81b7621bf1c8c3147aaf0c4df77eb35c25fc4e1227f0e37eac0d0b8e7d3b09"
    );
    assert_eq!(
        tool_result_hash(&response, &[ContentPart::binary("image/png", PNG)]),
        "bf9d8dbf71fcddd3cb1e811fb945679c904b566c9e86be5b44633d01f4339dff"
    );
    let mut other_id = response.clone();
    other_id.tool_call_id = "call_2".to_owned();
    assert_eq!(
        tool_result_hash(&other_id, &[]),
        tool_result_hash(&response, &[])
    );
}

#[test]
fn golden_prompt_hashes() {
    let turn = [
        Message::system("You are helpful"),
        Message::human("Capital of France?"),
    ];
    assert_eq!(
        prompt_hash(&turn, &HashOptions::default()),
        "647d3aee6985f721028247a1c34dc5df0fdb5135a76b4a46bc6cb3ef6b4f2a54"
    );
    let options = HashOptions {
        temperature: Some(0.0),
        max_tokens: Some(256),
        // A set: order and duplicates do not count.
        stop: vec!["END".into(), "\n\n".into(), "END".into()],
    };
    assert_eq!(
        prompt_hash(&[Message::human("Capital of France?")], &options),
        "93678e9c7309545f347d5eb4337386c4a0338cce321eca4a16531bf0b07ca1f3"
    );
    let media = Message::new(
        Role::Human,
        vec![
            ContentPart::text("Größe? 日本語 🎉\tline\n"),
            ContentPart::binary("image/png", PNG),
            ContentPart::ImageUrl {
                url: "https://example.com/cat.png".into(),
                detail: Some("high".into()),
            },
        ],
    );
    assert_eq!(
        prompt_hash(&[media], &HashOptions::default()),
        "c2a37bacc62b823f73f7ef4e4fb13624894c8c14807078fb54c025160b3dd295"
    );
    let tool = Message::new(
        Role::Tool,
        vec![
            ContentPart::ToolResponse(ToolResponse::new("call_1", "get_weather", "18°C")),
            ContentPart::binary("image/png", PNG),
        ],
    );
    assert_eq!(
        prompt_hash(&[tool], &HashOptions::default()),
        "a1a771e5e9c0791fab2d85902d61549d1272ec3716556f5d8b72b918b52b021d"
    );
}

#[test]
fn golden_response_hashes() {
    assert_eq!(
        response_hash(&Message::ai("Paris")),
        "499f12431b898055f95991b4fc0c30432d906a6a9de43947e427a4c337c8a91e"
    );
    let with_tools = Message::ai_tool_calls(
        Some("Let me check.".into()),
        vec![weather_call(
            r#"{"city":"Paris","units":{"temp":"C","wind":"kmh"}}"#,
        )],
    );
    let expected = "75740f470c0f8c1d479eb2a88ed51721ef19a665d12b3114ec93e368fa315f57";
    assert_eq!(response_hash(&with_tools), expected);
    // Reasoning, signatures and call ids are left out.
    let mut with_reasoning = with_tools.clone();
    with_reasoning.parts.insert(
        0,
        ContentPart::Reasoning(Reasoning {
            id: Some("rs_1".into()),
            text: "The user wants weather.".into(),
            signature: Some("sig".into()),
            encrypted: None,
        }),
    );
    if let Some(ContentPart::Text { reasoning, .. }) = with_reasoning.parts.get_mut(1) {
        *reasoning = Some(Reasoning::signature("gemini-sig"));
    }
    if let Some(ContentPart::ToolCall(call)) = with_reasoning.parts.get_mut(2) {
        call.id = "other".into();
    }
    assert_eq!(response_hash(&with_reasoning), expected);
}

#[test]
fn golden_path_hashes() {
    let root = "647d3aee6985f721028247a1c34dc5df0fdb5135a76b4a46bc6cb3ef6b4f2a54";
    let child = "93678e9c7309545f347d5eb4337386c4a0338cce321eca4a16531bf0b07ca1f3";
    assert_eq!(path_hash(None, root), root);
    assert_eq!(
        path_hash(Some(root), child),
        "ef1a760089e980e7cd03124907b32c52b16535243f910da025af928a07819e89"
    );
}

#[test]
fn only_a_zero_temperature_enters_the_prompt_hash() {
    let turn = [Message::human("Tell me a joke")];
    let at = |temperature| {
        prompt_hash(
            &turn,
            &HashOptions {
                temperature,
                ..Default::default()
            },
        )
    };
    assert_eq!(at(Some(0.7)), at(None));
    assert_eq!(at(Some(1.3)), at(None));
    assert_eq!(at(Some(0.0)), at(Some(-0.0)));
    assert_ne!(at(Some(0.0)), at(None));
    assert_eq!(at(Some(f64::NAN)), at(None));
}

#[test]
fn roles_and_part_order_count() {
    let options = HashOptions::default();
    let two = [Message::human("a"), Message::human("b")];
    let joined = [Message::human("a\nb")];
    assert_ne!(prompt_hash(&two, &options), prompt_hash(&joined, &options));
    assert_ne!(
        prompt_hash(&[Message::system("x")], &options),
        prompt_hash(&[Message::human("x")], &options)
    );
    assert_ne!(
        prompt_hash(&[Message::system(""), Message::human("x")], &options),
        prompt_hash(&[Message::human("x")], &options)
    );
}

#[test]
fn tool_specs_hash_ignores_schema_key_order() {
    let spec = |parameters: Value| messages::ToolSpec {
        name: "get_weather".into(),
        description: "Weather by city".into(),
        parameters,
    };
    let a = spec(serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}}}));
    let b: Value =
        serde_json::from_str(r#"{"properties": {"city": {"type": "string"}}, "type": "object"}"#)
            .unwrap_or_default();
    let one = tool_specs_hash(std::slice::from_ref(&a));
    assert_eq!(one, tool_specs_hash(&[spec(b)]));
    assert_ne!(one, tool_specs_hash(&[a.clone(), a]));
}

/// Writes `value` with every object's keys in reverse order and spaces between tokens.
fn reversed_json(value: &Value) -> String {
    match value {
        Value::Object(object) => {
            let entries: Vec<String> = object
                .iter()
                .rev()
                .map(|(key, value)| {
                    format!("{} : {}", Value::from(key.as_str()), reversed_json(value))
                })
                .collect();
            format!("{{ {} }}", entries.join(" , "))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(reversed_json).collect();
            format!("[ {} ]", items.join(" , "))
        }
        scalar => scalar.to_string(),
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map("[a-zA-Z_é]{1,8}", inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn part() -> impl Strategy<Value = ContentPart> {
    prop_oneof![
        ".{0,40}".prop_map(ContentPart::text),
        prop::collection::vec(any::<u8>(), 0..64)
            .prop_map(|data| ContentPart::binary("image/png", data)),
        ".{0,40}".prop_map(ContentPart::image_url),
        "[A-Za-z0-9+/=]{0,24}"
            .prop_map(|data| ContentPart::image_url(format!("data:image/png;base64,{data}"))),
        (".{0,12}", ".{0,40}").prop_map(|(name, arguments)| ContentPart::ToolCall(ToolCall::new(
            "id", name, arguments
        ))),
        (".{0,12}", ".{0,40}").prop_map(|(name, content)| ContentPart::ToolResponse(
            ToolResponse::new("id", name, content)
        )),
        ".{0,20}".prop_map(|text| ContentPart::Reasoning(Reasoning {
            text,
            ..Default::default()
        })),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    let role = prop_oneof![
        Just(Role::System),
        Just(Role::Human),
        Just(Role::Ai),
        Just(Role::Tool)
    ];
    (role, prop::collection::vec(part(), 0..6)).prop_map(|(role, parts)| Message::new(role, parts))
}

fn hash_options() -> impl Strategy<Value = HashOptions> {
    (
        prop::option::of(prop_oneof![Just(0.0), 0.0f64..2.0]),
        prop::option::of(any::<u32>()),
        prop::collection::vec(".{0,6}", 0..4),
    )
        .prop_map(|(temperature, max_tokens, stop)| HashOptions {
            temperature,
            max_tokens,
            stop,
        })
}

proptest! {
    /// Any arguments JSON, however its keys are ordered and spaced, hashes the same.
    #[test]
    fn tool_call_hash_ignores_key_order_and_whitespace(value in json_value()) {
        let compact = weather_call(&serde_json::to_string(&value).unwrap_or_default());
        let reordered = weather_call(&reversed_json(&value));
        prop_assert_eq!(tool_call_hash(&compact), tool_call_hash(&reordered));
    }

    /// The derived serialisations used for hashing are canonical JSON already: the same text
    /// the generic sorter writes for the same document.
    #[test]
    fn hash_documents_serialise_canonically(
        turn in prop::collection::vec(message(), 0..4),
        options in hash_options(),
    ) {
        let doc = PromptDoc::new(&turn, &options);
        let text = serde_json::to_string(&doc).unwrap_or_default();
        let value = serde_json::to_value(&doc).unwrap_or_default();
        prop_assert_eq!(&text, &canonical_json(&value));
        for message in &turn {
            let doc = MessageDoc::new(message);
            let text = serde_json::to_string(&doc).unwrap_or_default();
            prop_assert_eq!(text, canonical_json(&serde_json::to_value(&doc).unwrap_or_default()));
        }
    }

    /// Hashing accepts anything a message can hold (bad JSON arguments, bad data URLs, any
    /// text) and always gives 64 lowercase hex digits, the same each time.
    #[test]
    fn hashes_are_total_and_deterministic(
        turn in prop::collection::vec(message(), 0..4),
        options in hash_options(),
    ) {
        let is_hex = |hash: &str| hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        let first = prompt_hash(&turn, &options);
        prop_assert!(is_hex(&first));
        prop_assert_eq!(&first, &prompt_hash(&turn, &options));
        for message in &turn {
            prop_assert!(is_hex(&response_hash(message)));
        }
        prop_assert!(is_hex(&path_hash(Some(&first), &first)));
    }

    /// Temperatures above zero never move a node.
    #[test]
    fn sampling_temperatures_share_a_hash(turn in prop::collection::vec(message(), 0..3), temperature in 0.01f64..2.0) {
        let sampled = HashOptions { temperature: Some(temperature), ..Default::default() };
        prop_assert_eq!(prompt_hash(&turn, &sampled), prompt_hash(&turn, &HashOptions::default()));
    }
}
