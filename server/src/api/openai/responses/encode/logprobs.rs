//! Log probabilities in the two shapes the Responses API gives them: with `bytes` on an
//! `output_text` part, without on the text events (`response.output_text.delta` / `.done`).

use providers::{TokenLogprob, TopLogprob};
use serde::Serialize;
use utoipa::ToSchema;

/// The log probability of one token of an `output_text` part.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct OutputLogprob {
    /// The token's text.
    pub token: String,
    /// Its natural log probability.
    pub logprob: f64,
    /// Its UTF-8 bytes: the provider's, or, where it sends none (Gemini, and OpenAI's text
    /// events), those of `token`.
    pub bytes: Vec<u8>,
    /// The most likely tokens at this position, as many as `top_logprobs` asked for.
    pub top_logprobs: Vec<OutputTopLogprob>,
}

/// A likely token at one position of an `output_text` part.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct OutputTopLogprob {
    /// The token's text.
    pub token: String,
    /// Its natural log probability.
    pub logprob: f64,
    /// Its UTF-8 bytes: the provider's, or, where it sends none, those of `token`.
    pub bytes: Vec<u8>,
}

/// The log probability of one token of a text event.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct TextLogprob {
    /// The token's text.
    pub token: String,
    /// Its natural log probability.
    pub logprob: f64,
    /// The most likely tokens at this position.
    pub top_logprobs: Vec<TextTopLogprob>,
}

/// A likely token at one position of a text event.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct TextTopLogprob {
    /// The token's text.
    pub token: String,
    /// Its natural log probability.
    pub logprob: f64,
}

fn bytes(token: &str, bytes: &Option<Vec<u8>>) -> Vec<u8> {
    bytes.clone().unwrap_or_else(|| token.as_bytes().to_vec())
}

impl From<&TokenLogprob> for OutputLogprob {
    fn from(token: &TokenLogprob) -> Self {
        OutputLogprob {
            token: token.token.clone(),
            logprob: token.logprob,
            bytes: bytes(&token.token, &token.bytes),
            top_logprobs: token
                .top_logprobs
                .iter()
                .map(|top: &TopLogprob| OutputTopLogprob {
                    token: top.token.clone(),
                    logprob: top.logprob,
                    bytes: bytes(&top.token, &top.bytes),
                })
                .collect(),
        }
    }
}

impl From<&OutputLogprob> for TextLogprob {
    fn from(token: &OutputLogprob) -> Self {
        TextLogprob {
            token: token.token.clone(),
            logprob: token.logprob,
            top_logprobs: token
                .top_logprobs
                .iter()
                .map(|top| TextTopLogprob {
                    token: top.token.clone(),
                    logprob: top.logprob,
                })
                .collect(),
        }
    }
}
