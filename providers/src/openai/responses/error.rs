//! The Responses API's in-stream failures: `response.failed` (and a failed status in a
//! non-streamed answer) read into the same `ProviderError` an `error` event with that code
//! gives, so whether a retry may help depends on the code, not on which event carried it. HTTP
//! error bodies are the shared OpenAI envelope (`openai/error.rs`).

use std::borrow::Cow;

use serde::Deserialize;

use crate::ProviderError;
use crate::http::sse::MaybeText;
use crate::openai::error::{WireError, stream_error};

#[derive(Deserialize)]
pub(super) struct ResponseError<'a> {
    #[serde(default, borrow)]
    code: MaybeText<'a>,
    #[serde(rename = "type", default, borrow)]
    kind: MaybeText<'a>,
    #[serde(default, borrow)]
    message: MaybeText<'a>,
}

impl ResponseError<'_> {
    /// The same error as an `error` event with this code would be: whether a retry may help
    /// depends on the code, not on which event reported it.
    pub(super) fn into_error(self) -> ProviderError {
        let message = self
            .message
            .0
            .unwrap_or(Cow::Borrowed("the response failed"));
        stream_error(WireError::Object {
            message: Some(message),
            kind: self.kind.0,
            code: self.code.0.map(Cow::into_owned),
        })
    }
}

/// The error of a failed response: its `error` object, or a plain failure when it has none.
pub(super) fn failed(error: Option<ResponseError<'_>>) -> ProviderError {
    match error {
        Some(error) => error.into_error(),
        None => stream_error(WireError::Text("the response failed".into())),
    }
}
