//! The `echo` model answers a JSON Schema response format with an instance of the schema.

use futures::executor::block_on;
use proptest::prelude::*;
use providers::testing::EchoModel;
use providers::{ChatModel, ChatOptions, ChatRequest, Message, ResponseFormat};
use serde_json::{Value, json};

/// Schemas of the kinds structured-output clients send: objects with required properties,
/// arrays, bounded numbers and strings, enums, nullable types, `anyOf` and `$ref`s.
fn schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(json!({"type": "string"})),
        (0u64..5, 5u64..40)
            .prop_map(|(min, max)| json!({"type": "string", "minLength": min, "maxLength": max})),
        (-50i64..50)
            .prop_map(|min| json!({"type": "integer", "minimum": min, "maximum": min + 10})),
        (-5.0f64..5.0).prop_map(|min| json!({"type": "number", "exclusiveMinimum": min})),
        Just(json!({"type": "boolean"})),
        Just(json!({"type": ["string", "null"]})),
        Just(json!({"enum": ["red", "green", 3]})),
        Just(json!({"type": "string", "format": "date"})),
        Just(json!({"$ref": "#/$defs/Point"})),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::btree_map("[a-z]{1,6}", inner.clone(), 1..4).prop_map(
                |properties| {
                    let required: Vec<&String> = properties.keys().collect();
                    json!({
                        "type": "object",
                        "properties": properties,
                        "required": required,
                        "additionalProperties": false
                    })
                }
            ),
            (inner.clone(), 0u64..3)
                .prop_map(|(items, min)| json!({"type": "array", "items": items, "minItems": min})),
            (inner.clone(), inner).prop_map(|(a, b)| json!({"anyOf": [a, b]})),
        ]
    })
    .prop_map(|mut schema| {
        if let Value::Object(map) = &mut schema {
            map.insert(
                "$defs".into(),
                json!({"Point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}}),
            );
        }
        schema
    })
}

proptest! {
    #[test]
    fn echo_answers_are_valid_for_the_schema(schema in schema(), prompt in "[a-zA-Z ]{0,30}") {
        let request = ChatRequest::new(vec![Message::human(prompt)]).with_options(ChatOptions {
            response_format: Some(ResponseFormat::json_schema("answer", schema.clone())),
            ..ChatOptions::default()
        });
        let answer = block_on(EchoModel::new().complete(request)).expect("answers");
        let instance: Value = serde_json::from_str(&answer.message.text()).expect("JSON");
        let validator = jsonschema::validator_for(&schema).expect("valid schema");
        let errors: Vec<String> = validator.iter_errors(&instance).map(|e| e.to_string()).collect();
        prop_assert!(errors.is_empty(), "{instance} for {schema}: {errors:?}");
    }
}

#[test]
fn free_strings_hold_the_prompt_and_json_object_gets_an_object() {
    let ask = |format: ResponseFormat| {
        let request =
            ChatRequest::new(vec![Message::human("Ada Lovelace")]).with_options(ChatOptions {
                response_format: Some(format),
                ..ChatOptions::default()
            });
        let answer = block_on(EchoModel::new().complete(request)).expect("answers");
        serde_json::from_str::<Value>(&answer.message.text()).expect("JSON")
    };
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}
        },
        "required": ["name", "age", "tags"]
    });
    assert_eq!(
        ask(ResponseFormat::json_schema("person", schema)),
        json!({"name": "Ada Lovelace", "age": 0, "tags": ["a"]})
    );
    assert!(ask(ResponseFormat::JsonObject).is_object());
}

/// Clients' "JSON mode" asks for any JSON object and puts the schema in the system prompt
/// (instructor's words below): the echo model answers an instance of that schema, so their
/// validation passes offline. A prompt with no schema in it still gets the report.
#[test]
fn json_mode_answers_the_schema_in_the_system_prompt() {
    let ask = |system: &str| {
        let request = ChatRequest::new(vec![Message::system(system), Message::human("Ada is 36")])
            .with_options(ChatOptions {
                response_format: Some(ResponseFormat::JsonObject),
                ..ChatOptions::default()
            });
        let answer = block_on(EchoModel::new().complete(request)).expect("answers");
        serde_json::from_str::<Value>(&answer.message.text()).expect("JSON")
    };
    let system = "As a genius expert, your task is to understand the content and provide the \
        parsed objects in json that match the following json_schema:\n\n{\n  \"properties\": {\n    \
        \"name\": {\"title\": \"Name\", \"type\": \"string\"},\n    \"age\": {\"minimum\": 0, \
        \"title\": \"Age\", \"type\": \"integer\"}\n  },\n  \"required\": [\"name\", \"age\"],\n  \
        \"title\": \"User\",\n  \"type\": \"object\"\n}\n\nMake sure to return an instance of the \
        JSON, not the schema itself";
    assert_eq!(ask(system), json!({"name": "Ada is 36", "age": 0}));
    let report = ask("Answer in JSON. {not json} {\"a\": 1}");
    assert_eq!(report["prompt"], "Ada is 36", "{report}");
}
