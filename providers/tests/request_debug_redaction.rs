//! `Debug` of a request never shows a credential: a request's `extra_headers` may carry one
//! (an `Authorization` or `x-api-key` of a proxy when no key is configured), and requests are
//! what a caller logs with `{:?}`. Header names stay visible, as `ModelConfig` shows them.

use providers::{ChatOptions, ChatRequest, Message};

#[test]
fn credential_headers_are_redacted_in_debug_output() {
    let options = ChatOptions {
        extra_headers: [
            (
                "Authorization".to_owned(),
                "Bearer sk-live-secret".to_owned(),
            ),
            ("x-api-key".to_owned(), "key-secret-2".to_owned()),
            ("X-Session-Token".to_owned(), "tok-secret-3".to_owned()),
            ("x-team".to_owned(), "platform".to_owned()),
        ]
        .into(),
        ..ChatOptions::default()
    };
    let request = ChatRequest::new(vec![Message::human("hi")]).with_options(options.clone());
    for shown in [
        format!("{options:?}"),
        format!("{request:?}"),
        format!("{request:#?}"),
    ] {
        for secret in ["sk-live-secret", "key-secret-2", "tok-secret-3"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(
            shown.contains("Authorization") && shown.contains("<redacted>"),
            "{shown}"
        );
        assert!(
            shown.contains("platform"),
            "other headers stay visible: {shown}"
        );
        assert!(shown.contains("temperature"), "{shown}");
    }
}

/// End-user ids and the caller's metadata identify people: `Debug` says they are there, never
/// what they are; sampling options stay visible.
#[test]
fn end_user_ids_and_metadata_values_are_redacted_in_debug_output() {
    let options = ChatOptions {
        user: Some("alice@example.com".to_owned()),
        safety_identifier: Some("sha-of-alice".to_owned()),
        metadata: [("customer".to_owned(), "acme-secret-deal".to_owned())].into(),
        seed: Some(42),
        ..ChatOptions::default()
    };
    let shown = format!("{options:?}");
    for private in ["alice@example.com", "sha-of-alice", "acme-secret-deal"] {
        assert!(!shown.contains(private), "{shown}");
    }
    assert!(
        shown.contains("customer"),
        "metadata keys stay visible: {shown}"
    );
    assert!(shown.contains("seed: Some(42)"), "{shown}");
}
