//! The targets: what each is asked and how its server-sent events are read.

use std::borrow::Cow;

use serde::Deserialize;

/// The model name every target is asked for; each relay maps it to the loopback provider.
pub(crate) const MODEL: &str = "gpt-4o-mini";

/// What one server-sent event meant to the client.
pub(crate) enum Seen {
    /// A piece of answer text.
    Text(String),
    /// The stream's end marker.
    Done,
    /// An error event (its payload).
    Error(String),
    /// Anything else (a start event, usage, a comment).
    Other,
}

/// A server under test: how to ask it for an answer and how to read its stream.
#[derive(Clone)]
pub(crate) struct Target {
    /// The row's name.
    pub(crate) name: &'static str,
    /// The streaming endpoint.
    pub(crate) url: String,
    /// The JSON body of a request asking `prompt`.
    pub(crate) body: BodyFn,
    /// How its events are read.
    pub(crate) read: Reader,
}

/// Builds the JSON body of a request asking a prompt.
pub(crate) type BodyFn = fn(&str) -> String;

/// How a target's server-sent events say what they carry.
#[derive(Clone, Copy)]
pub(crate) enum Reader {
    /// OpenAI Chat Completions: unnamed `data:` chunks, text in `choices[].delta.content`,
    /// ended by `data: [DONE]`.
    Chunks,
    /// Named events (Skein's Chat Shell, OpenAI Responses): the text is one field of one
    /// event's JSON payload, one event ends the stream, others are errors.
    Named(NamedEvents),
}

#[derive(Clone, Copy)]
pub(crate) struct NamedEvents {
    /// The event that carries a piece of answer text.
    delta: &'static str,
    /// Its payload's field that holds the text.
    field: TextField,
    /// The event that ends a whole answer.
    done: &'static str,
    /// Events that end the stream with an error.
    errors: &'static [&'static str],
}

#[derive(Clone, Copy)]
enum TextField {
    Text,
    Delta,
}

/// Skein's Chat Shell events (`POST /v1/response`).
pub(crate) const CHAT_SHELL_EVENTS: NamedEvents = NamedEvents {
    delta: "content.delta",
    field: TextField::Text,
    done: "response.done",
    errors: &["response.error", "response.cancelled"],
};

/// OpenAI Responses events (`POST /v1/responses` with `"stream": true`).
pub(crate) const RESPONSES_EVENTS: NamedEvents = NamedEvents {
    delta: "response.output_text.delta",
    field: TextField::Delta,
    done: "response.completed",
    errors: &["response.failed", "response.incomplete", "error"],
};

impl Reader {
    /// Reads one server-sent event: its `event:` name (empty when it has none) and `data:`
    /// text.
    pub(crate) fn read(self, event: &str, data: &str) -> Seen {
        match self {
            Reader::Chunks => chat_completions_read(event, data),
            Reader::Named(named) => named.read(event, data),
        }
    }
}

/// The text fields a named event's payload may carry.
#[derive(Deserialize)]
struct TextPayload<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
}

impl NamedEvents {
    fn read(self, event: &str, data: &str) -> Seen {
        if event == self.delta {
            return match serde_json::from_str::<TextPayload<'_>>(data) {
                Ok(payload) => {
                    let text = match self.field {
                        TextField::Text => payload.text,
                        TextField::Delta => payload.delta,
                    };
                    match text {
                        Some(text) => Seen::Text(text.into_owned()),
                        None => Seen::Error(format!("{event} without its text: {data}")),
                    }
                }
                Err(err) => Seen::Error(format!("unreadable {event} ({err}): {data}")),
            };
        }
        if event == self.done {
            Seen::Done
        } else if self.errors.contains(&event) {
            Seen::Error(format!("{event}: {data}"))
        } else {
            Seen::Other
        }
    }
}

/// `POST /v1/response` (Skein's Chat Shell API).
pub(crate) fn chat_shell_body(prompt: &str) -> String {
    serde_json::json!({
        "model_config": {"model_id": MODEL},
        "input": {"text": prompt},
    })
    .to_string()
}

/// `POST /v1/responses` (OpenAI's Responses API), streaming.
pub(crate) fn responses_body(prompt: &str) -> String {
    serde_json::json!({
        "model": MODEL,
        "input": prompt,
        "stream": true,
    })
    .to_string()
}

/// `POST /v1/chat/completions` (OpenAI's Chat Completions API), streaming.
pub(crate) fn chat_completions_body(prompt: &str) -> String {
    serde_json::json!({
        "model": MODEL,
        "messages": [{"role": "user", "content": prompt}],
        "stream": true,
    })
    .to_string()
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
}

fn chat_completions_read(event: &str, data: &str) -> Seen {
    if event == "error" {
        return Seen::Error(data.to_owned());
    }
    if data == "[DONE]" {
        return Seen::Done;
    }
    match serde_json::from_str::<Chunk<'_>>(data) {
        Ok(Chunk {
            error: Some(error), ..
        }) => Seen::Error(error.to_string()),
        Ok(chunk) => {
            let text: String = chunk
                .choices
                .iter()
                .filter_map(|choice| choice.delta.as_ref()?.content.as_deref())
                .collect();
            if text.is_empty() {
                Seen::Other
            } else {
                Seen::Text(text)
            }
        }
        Err(err) => Seen::Error(format!("unreadable chunk ({err}): {data}")),
    }
}

/// The rows, in report order.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Direct,
    SkeinResponse,
    SkeinChat,
    SkeinResponses,
    Nginx,
    LiteLlm,
}

impl Kind {
    pub(crate) const ALL: [Kind; 6] = [
        Kind::Direct,
        Kind::SkeinResponse,
        Kind::SkeinChat,
        Kind::SkeinResponses,
        Kind::Nginx,
        Kind::LiteLlm,
    ];

    /// The `skein serve` rows.
    pub(crate) const SKEIN: [Kind; 3] =
        [Kind::SkeinResponse, Kind::SkeinChat, Kind::SkeinResponses];

    /// The id `--only` takes (one of `bench::gateway_options::TARGETS`).
    pub(crate) fn id(self) -> &'static str {
        match self {
            Kind::Direct => "direct",
            Kind::SkeinResponse => "skein",
            Kind::SkeinChat => "skein-chat",
            Kind::SkeinResponses => "skein-responses",
            Kind::Nginx => "nginx",
            Kind::LiteLlm => "litellm",
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Direct => "provider direct (floor)",
            Kind::SkeinResponse => "skein serve /v1/response",
            Kind::SkeinChat => "skein serve /v1/chat/completions",
            Kind::SkeinResponses => "skein serve /v1/responses",
            Kind::Nginx => "nginx /v1/chat/completions",
            Kind::LiteLlm => "LiteLLM proxy /v1/chat/completions",
        }
    }

    /// Whether this row is a `skein serve` endpoint.
    pub(crate) fn is_skein(self) -> bool {
        Kind::SKEIN.contains(&self)
    }
}
