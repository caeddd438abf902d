//! [`TokenLogprob`]: how likely each output token was, as the provider reported it.
//!
//! The shape is OpenAI's (`choices[].logprobs.content[]` of Chat Completions): each adapter
//! reads its provider's form into it once, where the answer is parsed, so every consumer sees
//! one shape whichever provider answered.

use serde::{Deserialize, Deserializer, Serialize};

/// One output token with its log probability and, when asked for, the most likely tokens at
/// its position.
///
/// ```
/// use providers::TokenLogprob;
///
/// let token: TokenLogprob = serde_json::from_str(
///     r#"{"token": "Hello", "logprob": -0.31, "bytes": [72, 101, 108, 108, 111],
///         "top_logprobs": [{"token": "Hello", "logprob": -0.31, "bytes": null}]}"#,
/// )?;
/// assert_eq!(token.token, "Hello");
/// assert_eq!(token.top_logprobs[0].logprob, -0.31);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenLogprob {
    /// The token's text.
    pub token: String,
    /// Its natural log probability (OpenAI reports `-9999.0` for a token outside the 20 most
    /// likely).
    pub logprob: f64,
    /// The token's UTF-8 bytes, when the provider sends them (OpenAI does: a character may be
    /// split across tokens, and only the bytes put it back together); Gemini does not.
    #[serde(default)]
    pub bytes: Option<Vec<u8>>,
    /// The most likely tokens at this position, most likely first (empty unless
    /// [`top_logprobs`](crate::ChatOptions::top_logprobs) asked for them).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub top_logprobs: Vec<TopLogprob>,
}

/// A likely token at one position of the output.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TopLogprob {
    /// The token's text.
    pub token: String,
    /// Its natural log probability.
    pub logprob: f64,
    /// The token's UTF-8 bytes, when the provider sends them.
    #[serde(default)]
    pub bytes: Option<Vec<u8>>,
}

/// `null` reads as an empty list (compatible servers send `"top_logprobs": null`).
fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// Reads a provider's list of token log probabilities kept raw in its event, leniently: `null`,
/// an empty list and a list that is not one of tokens (a compatible server's own shape) are
/// none, so log probabilities never cost an answer its text.
#[cfg(feature = "openai")]
pub(crate) fn read_list<T, F>(raw: &str, what: &'static str, into: F) -> Option<Vec<TokenLogprob>>
where
    T: serde::de::DeserializeOwned,
    F: FnMut(T) -> TokenLogprob,
{
    let raw = raw.trim();
    if raw == "null" || raw == "[]" {
        return None;
    }
    match serde_json::from_str::<Vec<T>>(raw) {
        Ok(list) if !list.is_empty() => Some(list.into_iter().map(into).collect()),
        Ok(_) => None,
        Err(err) => {
            tracing::warn!("a provider's {what} cannot be read ({err}); they are left out");
            None
        }
    }
}
