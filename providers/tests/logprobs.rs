//! Log probabilities read off the wire of each provider that has them, streamed and not, from
//! the bodies in `tests/fixtures/reference` (written from the API references: no recording
//! asked for log probabilities). Expected values are those of the fixtures.

#[cfg(feature = "gemini")]
use crate::gemini_common;
#[cfg(feature = "openai")]
use crate::support;

#[cfg(feature = "openai")]
use providers::{ApiFormat, model_from_config};
use providers::{ChatOptions, ChatRequest, Message, StreamEvent, TokenLogprob, TopLogprob};
#[cfg(feature = "openai")]
use serde_json::Value;
#[cfg(feature = "openai")]
use support::{Canned, Replay, config, delta_text, fixture_text, streamed};

fn asked() -> ChatRequest {
    ChatRequest {
        options: ChatOptions {
            logprobs: true,
            top_logprobs: Some(2),
            ..ChatOptions::default()
        },
        ..ChatRequest::new(vec![Message::human("Hello!")])
    }
}

fn top(token: &str, logprob: f64, bytes: Option<&[u8]>) -> TopLogprob {
    TopLogprob {
        token: token.into(),
        logprob,
        bytes: bytes.map(<[u8]>::to_vec),
    }
}

/// The two tokens of the OpenAI reference example (`Hello`, `!`), with or without the bytes
/// (the Responses API's text events carry none).
#[cfg(feature = "openai")]
fn openai_tokens(with_bytes: bool) -> Vec<TokenLogprob> {
    let bytes = |b: &'static [u8]| with_bytes.then_some(b);
    vec![
        TokenLogprob {
            token: "Hello".into(),
            logprob: -0.31725305,
            bytes: bytes(b"Hello").map(<[u8]>::to_vec),
            top_logprobs: vec![
                top("Hello", -0.31725305, bytes(b"Hello")),
                top("Hi", -1.3190403, bytes(&[72, 105])),
            ],
        },
        TokenLogprob {
            token: "!".into(),
            logprob: -0.02380986,
            bytes: bytes(&[33]).map(<[u8]>::to_vec),
            top_logprobs: vec![
                top("!", -0.02380986, bytes(&[33])),
                top(" there", -3.787621, bytes(&[32, 116, 104, 101, 114, 101])),
            ],
        },
    ]
}

/// The log probabilities of each text delta: those of the `Logprobs` event just before it.
fn per_delta(events: &[StreamEvent]) -> Vec<(String, Vec<TokenLogprob>)> {
    let mut out = Vec::new();
    let mut waiting = None;
    for event in events {
        match event {
            StreamEvent::Logprobs(tokens) => waiting = Some(tokens.clone()),
            StreamEvent::TextDelta(text) => {
                out.push((text.clone(), waiting.take().unwrap_or_default()));
            }
            _ => {}
        }
    }
    out
}

#[cfg(feature = "openai")]
mod openai {
    use super::*;

    const CHAT: &str = "/v1/chat/completions";
    const RESPONSES: &str = "/v1/responses";

    fn chat(replay: &Replay) -> Box<dyn providers::ChatModel> {
        model_from_config(&config("gpt-4o-mini", &format!("{}/v1", replay.url()))).unwrap()
    }

    fn responses(replay: &Replay) -> Box<dyn providers::ChatModel> {
        let mut cfg = config("gpt-4.1", &format!("{}/v1", replay.url()));
        cfg.api_format = Some(ApiFormat::Responses);
        model_from_config(&cfg).unwrap()
    }

    #[tokio::test]
    async fn a_whole_chat_answer_carries_the_tokens_of_its_choice() {
        let replay = Replay::fixture(CHAT, "reference/openai_chat_logprobs.json").await;
        let response = chat(&replay).complete(asked()).await.unwrap();
        assert_eq!(response.message.text(), "Hello!");
        assert_eq!(response.logprobs, Some(openai_tokens(true)));
        let sent = &replay.requests().await[0];
        assert_eq!(
            (&sent["logprobs"], &sent["top_logprobs"]),
            (&true.into(), &2.into())
        );
    }

    #[tokio::test]
    async fn each_streamed_chat_token_comes_just_before_its_text() {
        let replay = Replay::fixture(CHAT, "reference/openai_chat_stream_logprobs.sse").await;
        let (events, response) = streamed(chat(&replay).as_ref(), asked()).await.unwrap();
        let [hello, bang] = <[TokenLogprob; 2]>::try_from(openai_tokens(true)).unwrap();
        assert_eq!(
            per_delta(&events),
            [("Hello".into(), vec![hello]), ("!".into(), vec![bang])]
        );
        // The role chunk's empty list and the finish chunk's null are no tokens.
        let lists = events
            .iter()
            .filter(|event| matches!(event, StreamEvent::Logprobs(_)))
            .count();
        assert_eq!(lists, 2);
        assert_eq!(response.logprobs, Some(openai_tokens(true)));
    }

    #[tokio::test]
    async fn a_chat_answer_not_asked_for_them_has_none() {
        let replay = Replay::fixture(CHAT, "openai/chat_stream_text_after_tool.sse").await;
        let request = ChatRequest::new(vec![Message::human("Hello!")]);
        let (events, response) = streamed(chat(&replay).as_ref(), request).await.unwrap();
        assert!(!delta_text(&events).is_empty());
        assert!(
            !events
                .iter()
                .any(|event| matches!(event, StreamEvent::Logprobs(_)))
        );
        assert_eq!(response.logprobs, None);
    }

    #[tokio::test]
    async fn responses_text_deltas_carry_their_tokens_without_bytes() {
        let replay =
            Replay::fixture(RESPONSES, "reference/openai_responses_stream_logprobs.sse").await;
        let (events, response) = streamed(responses(&replay).as_ref(), asked())
            .await
            .unwrap();
        let [hello, bang] = <[TokenLogprob; 2]>::try_from(openai_tokens(false)).unwrap();
        assert_eq!(
            per_delta(&events),
            [("Hello".into(), vec![hello]), ("!".into(), vec![bang])]
        );
        assert_eq!(response.logprobs, Some(openai_tokens(false)));
        let sent = &replay.requests().await[0];
        assert_eq!(sent["top_logprobs"], 2);
        assert!(
            sent["include"]
                .as_array()
                .unwrap()
                .contains(&"message.output_text.logprobs".into())
        );
    }

    #[tokio::test]
    async fn a_whole_responses_answer_reads_the_tokens_of_its_output_text() {
        // The non-streamed body is the response object the stream's `response.completed`
        // carries.
        let sse = fixture_text("reference/openai_responses_stream_logprobs.sse");
        let completed = sse
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .map(|data| serde_json::from_str::<Value>(data).unwrap())
            .find(|event| event["type"] == "response.completed")
            .unwrap();
        let body = completed["response"].to_string();
        let replay = Replay::sequence(
            RESPONSES,
            vec![Canned::fixture("reference/openai_chat_logprobs.json").body(body)],
        )
        .await;
        let response = responses(&replay).complete(asked()).await.unwrap();
        assert_eq!(response.message.text(), "Hello!");
        assert_eq!(response.logprobs, Some(openai_tokens(true)));
    }
}

#[cfg(feature = "gemini")]
#[tokio::test]
async fn gemini_chosen_and_top_candidates_become_tokens_before_their_text() {
    let (replay, events, response) = gemini_common::stream(
        "gemini-2.5-flash",
        "reference/gemini_stream_logprobs.sse",
        asked(),
    )
    .await;
    let hello = TokenLogprob {
        token: "Hello".into(),
        logprob: -0.052,
        bytes: None,
        top_logprobs: vec![top("Hello", -0.052, None), top("Hi", -2.98, None)],
    };
    let bang = TokenLogprob {
        token: "!".into(),
        logprob: -0.0043,
        bytes: None,
        top_logprobs: vec![top("!", -0.0043, None), top(",", -5.47, None)],
    };
    assert_eq!(
        per_delta(&events),
        [
            ("Hello".into(), vec![hello.clone()]),
            ("!".into(), vec![bang.clone()])
        ]
    );
    assert_eq!(response.logprobs, Some(vec![hello, bang]));
    let sent = &replay.requests().await[0];
    assert_eq!(sent["generationConfig"]["responseLogprobs"], true);
    assert_eq!(sent["generationConfig"]["logprobs"], 2);
}
