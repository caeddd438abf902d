//! Call ids that carry the call's thought signature, for answers the server does not keep.
//!
//! Gemini signs each function call it makes and checks the signature when the call comes
//! back on the next request of the tool round. A kept answer gives it back from the
//! conversation tree; an answer created with `store: false` is kept nowhere, so the signature
//! must travel with the client. On `/v1/responses` a Gemini signature belongs to the
//! `function_call` item (Gemini sends no reasoning item), and the one field of that item every
//! client sends back is its `call_id`: the `function_call_output` is paired by it, so
//! openai-python's `model_dump`, the Agents SDK, LangChain and the Vercel AI SDK all keep it
//! verbatim, while each drops fields the API reference does not document. A reasoning item's
//! `encrypted_content` would not do: LangChain and the Vercel AI SDK (with `store: false`)
//! resend reasoning items only when they asked for encrypted reasoning with `include`, and a
//! reasoning item names no call, so parallel calls' signatures could not be told apart.
//!
//! The carried id is `<id>~s1.<signature bytes, base64url>` (`~s1t.` when the signature is
//! not standard base64, with its UTF-8 text instead). `~`, `.`, `-` and `_` are URL-safe, and
//! OpenAI's call ids are free-form strings, so clients store and resend it unchanged. A
//! Gemini signature is a few hundred bytes to a few kilobytes, which every client tested
//! keeps. The provider gets the original id back, the signature on the call.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use messages::{Reasoning, ToolCall};

use crate::api::openai::error::OpenAiError;

/// Begins a signature carried as its bytes (the signature was standard base64).
const BYTES: &str = "~s1.";
/// Begins a signature carried as its text.
const TEXT: &str = "~s1t.";
/// Longest carrier taken back: the request body limit bounds it too, but one field should
/// not hold what no provider issues.
const MAX_CARRIER: usize = 64 * 1024;

/// The id a client that keeps nothing gets for `call`: its id with the signature attached
/// when it has one, else its id.
pub(crate) fn carrying(call: &ToolCall) -> String {
    let Some(signature) = call
        .reasoning
        .as_ref()
        .and_then(|reasoning| reasoning.signature.as_deref())
        .filter(|signature| !signature.is_empty())
    else {
        return call.id.clone();
    };
    // Gemini writes signatures in standard base64: carried as their bytes they take no more
    // room than the signature itself (a quarter less than its text encoded again), and
    // decode back to the same text.
    match STANDARD.decode(signature) {
        Ok(bytes) if STANDARD.encode(&bytes) == signature => {
            format!("{}{BYTES}{}", call.id, URL_SAFE_NO_PAD.encode(bytes))
        }
        _ => format!("{}{TEXT}{}", call.id, URL_SAFE_NO_PAD.encode(signature)),
    }
}

/// A call id as a client sent it back, in `field`: the original id, and the signature it
/// carried as the call's reasoning. An id without a carrier is returned as it is.
///
/// # Errors
///
/// A carrier that this server cannot have written (no id before it, a payload that is not
/// base64url, too long, or text that is not UTF-8): a 400 naming `field`.
pub(crate) fn parse(field: &str, id: String) -> Result<(String, Option<Reasoning>), OpenAiError> {
    // The payload is base64url, which has no `~`: the last `~` begins the carrier, if any.
    let Some(start) = id.rfind('~') else {
        return Ok((id, None));
    };
    let tail = &id[start..];
    let (payload, text) = if let Some(payload) = tail.strip_prefix(TEXT) {
        (payload, true)
    } else if let Some(payload) = tail.strip_prefix(BYTES) {
        (payload, false)
    } else {
        return Ok((id, None));
    };
    let garbled = |why: &str| {
        OpenAiError::invalid(
            field,
            format!(
                "`{field}` carries a thought signature that {why}; send the call id back exactly \
                 as the response gave it"
            ),
        )
    };
    if start == 0 {
        return Err(garbled("follows no call id"));
    }
    if payload.is_empty() || payload.len() > MAX_CARRIER {
        return Err(garbled(&format!(
            "is {} characters long (1 to {MAX_CARRIER} expected)",
            payload.len()
        )));
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|_| garbled("is not base64url"))?;
    let signature = if text {
        String::from_utf8(bytes).map_err(|_| garbled("is not UTF-8 text"))?
    } else {
        STANDARD.encode(bytes)
    };
    let mut id = id;
    id.truncate(start);
    Ok((id, Some(Reasoning::signature(signature))))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The first 400 characters of the signature in `gemini/stream_function_call_signature.sse`.
    const GEMINI: &str = "EpwICpkIAXLI2nxlU6gsWZaZHRYkX1orzuM8vSUFwaAt1JRxEC2hJzPAcAu3PWaKz7X+PIyTTqF+ZIQPF+fQzkaRCbrxB0Qrem/xwR4S46oFxYiOF7EVa6pCBb9iu2uvCKrv5b7ezGzYqLD9glcNsLL3rA5OIsft4ec4qTT8NGd2SDdHB6WKrJ/K3rQHxoDQnB9JpnVTbtsaJoMWdFpnJcd7P7yxfdfgzO0aS6rGp+ch2yiKxsdQGan4QCdA0vCjfDcCBaxAuAVVaVSc6C7fioR1po2xPtQR/GJHzJuHKahKxN/X31DwhImJgP0WbFFCzZ8oLULvhSq3WDjEKmuSx5orPFDSud6Nr8ZN8UOn6GBkqQq3IKLdsdennT9L4HrABm3S7fpMyiuWPFhG";

    fn signed(id: &str, signature: &str) -> ToolCall {
        ToolCall {
            reasoning: Some(Reasoning::signature(signature)),
            ..ToolCall::new(id, "get_country", "{}")
        }
    }

    #[test]
    fn a_gemini_signature_rides_in_the_id_and_comes_back_whole() {
        let call = signed("gemini_call_abc_0", GEMINI);
        let id = carrying(&call);
        assert!(id.starts_with("gemini_call_abc_0~s1."), "{id}");
        // No longer than the two joined.
        assert!(
            id.len() <= call.id.len() + BYTES.len() + GEMINI.len(),
            "{id}"
        );
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-~.".contains(&b)),
            "{id}"
        );
        let (back, reasoning) = parse("input[1].call_id", id).unwrap();
        assert_eq!(back, "gemini_call_abc_0");
        assert_eq!(reasoning, Some(Reasoning::signature(GEMINI)));
    }

    #[test]
    fn a_signature_that_is_not_standard_base64_rides_as_text() {
        for signature in ["skip_thought_signature_validator", "sig", "é~."] {
            let id = carrying(&signed("call_1", signature));
            assert!(id.starts_with("call_1~s1t."), "{id}");
            let (back, reasoning) = parse("f", id).unwrap();
            assert_eq!(back, "call_1");
            assert_eq!(reasoning, Some(Reasoning::signature(signature)));
        }
    }

    #[test]
    fn ids_without_a_signature_stay_as_they_are() {
        assert_eq!(carrying(&ToolCall::new("call_1", "f", "{}")), "call_1");
        assert_eq!(carrying(&signed("call_1", "")), "call_1");
        for id in ["call_1", "a~b", "x~s2.AAAA", "~", "tool~s1"] {
            assert_eq!(parse("f", id.to_owned()).unwrap(), (id.to_owned(), None));
        }
    }

    #[test]
    fn a_garbled_carrier_is_refused_naming_the_field() {
        for id in [
            "~s1.AAAA",
            "call_1~s1.",
            "call_1~s1.A",
            "call_1~s1.AA==",
            "call_1~s1.AA+/",
            "call_1~s1t._w",
        ] {
            let error = parse("input[3].call_id", id.to_owned()).unwrap_err();
            assert_eq!(error.status(), 400, "{id}");
            assert_eq!(
                error.body().error.param.as_deref(),
                Some("input[3].call_id")
            );
            assert!(
                error.body().error.message.contains("`input[3].call_id`"),
                "{id}: {}",
                error.body().error.message
            );
        }
        let long = format!("call_1~s1.{}", "A".repeat(MAX_CARRIER + 4));
        assert_eq!(parse("f", long).unwrap_err().status(), 400);
    }

    proptest! {
        #[test]
        fn any_id_is_taken_or_refused_never_a_panic(id in ".{0,64}", tail in "[A-Za-z0-9_~.=+/-]{0,24}") {
            for id in [id.clone(), format!("{id}~s1.{tail}"), format!("{id}~s1t.{tail}")] {
                if let Err(error) = parse("f", id) {
                    prop_assert_eq!(error.status(), 400);
                }
            }
        }

        #[test]
        fn every_signature_comes_back(id in "[A-Za-z0-9_-]{1,24}", signature in ".{1,64}") {
            let (back, reasoning) = parse("f", carrying(&signed(&id, &signature))).unwrap();
            prop_assert_eq!(back, id);
            prop_assert_eq!(reasoning, Some(Reasoning::signature(signature)));
        }
    }
}
