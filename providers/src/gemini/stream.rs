//! `GenerateContentResponse`s → [`Chunk`]s: each `alt=sse` event, the non-streamed body, and
//! the JSON array `streamGenerateContent` returns without `alt=sse`.
//!
//! A stream event holds only the new parts (text is incremental, a `functionCall` arrives
//! whole, or, with Vertex AI's streamed function call arguments, in pieces that are put back
//! together into one call), repeats the cumulative `usageMetadata`, and the last one carries
//! `finishReason`. The stream has no terminator: it is complete when it ends after a finish
//! reason. A candidate's `logprobsResult` (with `responseLogprobs`) covers the tokens of its
//! event and comes before its text. Parts Skein does not model (inline data, code execution, …) are skipped and named
//! once at `debug` level.

use std::borrow::Cow;
use std::time::{SystemTime, UNIX_EPOCH};

use messages::{Reasoning, ToolCall};
use serde::Deserialize;
use serde::de::IgnoredAny;

use super::MINTED_ID_PREFIX;
use super::error::{ErrorEnvelope, WireError, stream_error};
use crate::assemble::{Chunk, UsageUpdate};
use crate::http::sse::{EventParser, MaybeText, Skipped, event_json, json, nullable_list};
use crate::wire_numbers::Lenient;
use crate::{FinishReason, Provider, ProviderError, TokenLogprob, TopLogprob};

const PROVIDER: Provider = Provider::Google;
/// Key of the open reasoning block: thought parts in a row form one block.
const THOUGHTS: usize = 0;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response<'a> {
    #[serde(default, borrow)]
    candidates: Vec<Candidate<'a>>,
    #[serde(default)]
    usage_metadata: Lenient<UsageMetadata>,
    #[serde(borrow)]
    model_version: Option<Cow<'a, str>>,
    #[serde(borrow)]
    response_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    prompt_feedback: Option<PromptFeedback<'a>>,
    #[serde(borrow)]
    error: Option<WireError<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate<'a> {
    #[serde(borrow)]
    content: Option<Content<'a>>,
    #[serde(borrow)]
    finish_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    index: u32,
    /// Kept raw: present only when log probabilities were asked for.
    #[serde(default, borrow)]
    logprobs_result: Option<&'a serde_json::value::RawValue>,
}

/// A candidate's `logprobsResult`: one chosen token per decoding step, and at each step the
/// most likely tokens (`topCandidates[i]` is step `i`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogprobsResult {
    #[serde(default, deserialize_with = "nullable_list")]
    chosen_candidates: Vec<LogprobsCandidate>,
    #[serde(default, deserialize_with = "nullable_list")]
    top_candidates: Vec<TopCandidates>,
}

#[derive(Deserialize)]
struct TopCandidates {
    #[serde(default, deserialize_with = "nullable_list")]
    candidates: Vec<LogprobsCandidate>,
}

/// A token and its log probability (`tokenId` is not kept: OpenAI's shape has no place for
/// it).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogprobsCandidate {
    #[serde(default)]
    token: String,
    #[serde(default)]
    log_probability: f64,
}

/// The `Logprobs` chunk of a candidate's `logprobsResult`, when it has chosen tokens; one that
/// cannot be read is left out (with a warning), never the answer's text.
fn logprobs(raw: &serde_json::value::RawValue) -> Option<Chunk> {
    let result: LogprobsResult = match serde_json::from_str(raw.get()) {
        Ok(result) => result,
        Err(err) => {
            tracing::warn!("Gemini's logprobsResult cannot be read ({err}); it is left out");
            return None;
        }
    };
    if result.chosen_candidates.is_empty() {
        return None;
    }
    let mut top = result.top_candidates.into_iter();
    let tokens = result
        .chosen_candidates
        .into_iter()
        .map(|chosen| TokenLogprob {
            token: chosen.token,
            logprob: chosen.log_probability,
            bytes: None,
            top_logprobs: top
                .next()
                .map(|step| {
                    step.candidates
                        .into_iter()
                        .map(|candidate| TopLogprob {
                            token: candidate.token,
                            logprob: candidate.log_probability,
                            bytes: None,
                        })
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect();
    Some(Chunk::Logprobs(tokens))
}

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(default, borrow)]
    parts: Vec<Part<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part<'a> {
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default)]
    thought: bool,
    #[serde(default, borrow)]
    thought_signature: MaybeText<'a>,
    #[serde(borrow)]
    function_call: Option<FunctionCall<'a>>,
    // Parts Skein does not model, named when skipped.
    inline_data: Option<IgnoredAny>,
    file_data: Option<IgnoredAny>,
    executable_code: Option<IgnoredAny>,
    code_execution_result: Option<IgnoredAny>,
    function_response: Option<IgnoredAny>,
}

impl Part<'_> {
    /// The type of a part that is neither text, thought nor call.
    fn other_kind(&self) -> &'static str {
        if self.inline_data.is_some() {
            "inlineData"
        } else if self.file_data.is_some() {
            "fileData"
        } else if self.executable_code.is_some() {
            "executableCode"
        } else if self.code_execution_result.is_some() {
            "codeExecutionResult"
        } else if self.function_response.is_some() {
            "functionResponse"
        } else {
            "(empty)"
        }
    }
}

/// A `functionCall`: whole (`name`, `args`), or one piece of a call streamed in pieces
/// (Vertex AI's `streamFunctionCallArguments`): the first piece has the `name` and
/// `willContinue: true`, the next ones `partialArgs` (a JSON path and a value; string values
/// of one path come in pieces to append), and the piece without `willContinue` ends the call.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FunctionCall<'a> {
    #[serde(default, borrow)]
    name: MaybeText<'a>,
    /// An object; absent for a call without arguments.
    args: Option<serde_json::Map<String, serde_json::Value>>,
    /// Only some deployments issue call ids.
    #[serde(default, borrow)]
    id: MaybeText<'a>,
    #[serde(default, borrow, deserialize_with = "nullable_list")]
    partial_args: Vec<PartialArg<'a>>,
    #[serde(default)]
    will_continue: Option<bool>,
}

/// One streamed argument value.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartialArg<'a> {
    #[serde(default, borrow)]
    json_path: MaybeText<'a>,
    #[serde(borrow)]
    string_value: Option<Cow<'a, str>>,
    number_value: Option<serde_json::Number>,
    bool_value: Option<bool>,
    null_value: Option<IgnoredAny>,
}

/// A call being streamed in pieces.
#[derive(Debug)]
struct PendingCall {
    id: Option<String>,
    name: String,
    args: serde_json::Value,
    signature: Option<Reasoning>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageMetadata {
    #[serde(default, deserialize_with = "crate::wire_numbers::token_count")]
    prompt_token_count: Option<u64>,
    #[serde(default, deserialize_with = "crate::wire_numbers::token_count")]
    candidates_token_count: Option<u64>,
    #[serde(default, deserialize_with = "crate::wire_numbers::token_count")]
    cached_content_token_count: Option<u64>,
    #[serde(default, deserialize_with = "crate::wire_numbers::token_count")]
    thoughts_token_count: Option<u64>,
    /// Prompt tokens of tool results Gemini fetched itself (search, code execution).
    #[serde(default, deserialize_with = "crate::wire_numbers::token_count")]
    tool_use_prompt_token_count: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback<'a> {
    #[serde(borrow)]
    block_reason: Option<Cow<'a, str>>,
}

impl From<UsageMetadata> for UsageUpdate {
    /// Each report is complete and cumulative, so every field is set.
    fn from(usage: UsageMetadata) -> Self {
        // Counts are at most `MAX_TOKEN_COUNT` each, so the sums cannot overflow; saturating
        // anyway keeps that true whatever the bound becomes.
        let count = |n: Option<u64>| n.unwrap_or(0);
        let thoughts = count(usage.thoughts_token_count);
        UsageUpdate {
            input_tokens: Some(
                count(usage.prompt_token_count)
                    .saturating_add(count(usage.tool_use_prompt_token_count)),
            ),
            output_tokens: Some(count(usage.candidates_token_count).saturating_add(thoughts)),
            cached_input_tokens: Some(count(usage.cached_content_token_count)),
            cache_creation_tokens: None,
            reasoning_tokens: Some(thoughts),
        }
    }
}

/// `finishReason` (and a prompt's `blockReason`) as a [`FinishReason`].
fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => {
            FinishReason::ContentFilter
        }
        other => FinishReason::Other(other.to_owned()),
    }
}

/// Per-answer state shared by streamed and non-streamed answers: whether `Started` was sent,
/// what minted ids continue from, and the call being streamed in pieces.
#[derive(Debug, Default)]
struct Answer {
    started: bool,
    /// The first `responseId`, the stem of minted ids.
    stem: Option<String>,
    calls: usize,
    pending: Option<PendingCall>,
    skipped: Skipped,
}

impl Answer {
    fn response(
        &mut self,
        response: Response<'_>,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        if let Some(error) = response.error {
            return Err(stream_error(error));
        }
        if !self.started {
            self.started = true;
            self.stem = Some(id_stem(response.response_id.as_deref()));
            out.push(Chunk::Started {
                id: response.response_id.map(Cow::into_owned),
                model: response.model_version.map(Cow::into_owned),
            });
        }
        // Only the first candidate is read: Skein never asks for `candidateCount > 1`.
        for candidate in response.candidates.into_iter().filter(|c| c.index == 0) {
            // Before the parts: they describe this event's text.
            out.extend(candidate.logprobs_result.and_then(logprobs));
            for part in candidate.content.into_iter().flat_map(|c| c.parts) {
                self.part(part, out)?;
            }
            if let Some(reason) = candidate.finish_reason {
                // The answer is complete: so is a call whose last piece never came.
                self.end_call(out);
                out.push(Chunk::Finish(finish_reason(&reason)));
            }
        }
        if let Some(reason) = response.prompt_feedback.and_then(|f| f.block_reason) {
            self.end_call(out);
            out.push(Chunk::Finish(finish_reason(&reason)));
        }
        if let Some(usage) = response.usage_metadata.0 {
            out.push(Chunk::Usage(usage.into()));
        }
        Ok(())
    }

    fn part(&mut self, part: Part<'_>, out: &mut Vec<Chunk>) -> Result<(), ProviderError> {
        // An empty signature is a placeholder, not a value to send back.
        let signature = part
            .thought_signature
            .0
            .as_deref()
            .filter(|signature| !signature.is_empty())
            .map(Reasoning::signature);
        if let Some(call) = part.function_call {
            return self.call_piece(call, signature, out);
        }
        if part.thought {
            let text = part.text.map(Cow::into_owned).unwrap_or_default();
            out.push(Chunk::ReasoningDelta {
                key: THOUGHTS,
                text,
            });
            // A signature closes the run of thoughts it signs.
            if let Some(signature) = signature {
                out.push(Chunk::ReasoningSet {
                    key: THOUGHTS,
                    fields: signature,
                });
                out.push(Chunk::ReasoningEnd { key: THOUGHTS });
            }
        } else {
            // The signature goes first so that it lands on the part this text starts or
            // continues, not on an earlier signed one.
            if let Some(signature) = signature {
                out.push(Chunk::TextReasoning(signature));
            }
            match part.text {
                Some(text) => out.push(Chunk::Text(text.into_owned())),
                None => self.skipped.note(PROVIDER, "part", part.other_kind()),
            }
        }
        Ok(())
    }

    /// A `functionCall` part: a whole call, or a piece of one streamed in pieces.
    fn call_piece(
        &mut self,
        call: FunctionCall<'_>,
        signature: Option<Reasoning>,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        let name = call.name.non_empty();
        // A named piece while a named call is open starts the next call.
        if name.is_some() && self.pending.as_ref().is_some_and(|p| !p.name.is_empty()) {
            self.end_call(out);
        }
        let pending = self.pending.get_or_insert_with(|| PendingCall {
            id: None,
            name: String::new(),
            args: serde_json::Value::Object(serde_json::Map::new()),
            signature: None,
        });
        if let Some(name) = name
            && pending.name.is_empty()
        {
            pending.name = name.into_owned();
        }
        if pending.id.is_none() {
            pending.id = call.id.non_empty().map(Cow::into_owned);
        }
        if pending.signature.is_none() {
            pending.signature = signature;
        }
        if let (Some(args), serde_json::Value::Object(into)) = (call.args, &mut pending.args) {
            into.extend(args);
        }
        for partial in call.partial_args {
            apply_partial(&mut pending.args, partial)?;
        }
        if call.will_continue != Some(true) {
            self.end_call(out);
        }
        Ok(())
    }

    /// Emits the call being assembled, if any. A call that never got a name cannot be made:
    /// it is skipped (named at `debug` level), never handed out with an empty name.
    fn end_call(&mut self, out: &mut Vec<Chunk>) {
        let Some(call) = self.pending.take() else {
            return;
        };
        if call.name.is_empty() {
            self.skipped
                .note(PROVIDER, "functionCall", "(pieces without a name)");
            return;
        }
        let id = match call.id {
            Some(id) => id,
            None => self.mint(),
        };
        out.push(Chunk::ToolCall(Box::new(ToolCall {
            id,
            name: call.name,
            arguments: call.args.to_string(),
            reasoning: call.signature,
        })));
    }

    /// `gemini_call_<responseId>_<n>`: unique per answer (`responseId` is) and per call.
    fn mint(&mut self) -> String {
        let stem = self.stem.get_or_insert_with(|| id_stem(None));
        let id = format!("{MINTED_ID_PREFIX}{stem}_{}", self.calls);
        self.calls += 1;
        id
    }
}

/// Most elements a streamed array argument may have (an index is never a size).
const MAX_ARRAY_ELEMENTS: usize = crate::MAX_OPEN_BLOCKS;

/// One step of a `partialArgs` JSON path.
#[derive(Debug, PartialEq)]
enum Step<'a> {
    Key(Cow<'a, str>),
    Index(usize),
}

/// The steps of an RFC 9535 path as Gemini writes them: `$.a.b[0]['c d']`.
fn json_path(path: &str) -> Option<Vec<Step<'_>>> {
    let mut rest = path.strip_prefix('$')?;
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            if end == 0 {
                return None;
            }
            steps.push(Step::Key(Cow::Borrowed(&after[..end])));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix("['") {
            let end = after.find("']")?;
            steps.push(Step::Key(Cow::Borrowed(&after[..end])));
            rest = &after[end + 2..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            steps.push(Step::Index(after[..end].parse().ok()?));
            rest = &after[end + 1..];
        } else {
            return None;
        }
    }
    Some(steps)
}

/// Applies one streamed argument to `args`: a string piece is appended to the string at its
/// path, any other value replaces what is there; containers on the way are made as needed.
fn apply_partial(
    args: &mut serde_json::Value,
    partial: PartialArg<'_>,
) -> Result<(), ProviderError> {
    use serde_json::Value;
    let path = partial.json_path.0.unwrap_or_default();
    let bad = |why: &str| {
        ProviderError::decode(
            PROVIDER,
            format!("a streamed function call argument (`partialArgs`) has {why}"),
            &path,
        )
    };
    let steps = json_path(&path).ok_or_else(|| bad("a JSON path Skein cannot read"))?;
    let (value, append) = match (
        partial.string_value,
        partial.number_value,
        partial.bool_value,
        partial.null_value,
    ) {
        (Some(text), ..) => (Value::String(text.into_owned()), true),
        (None, Some(number), ..) => (Value::Number(number), false),
        (None, None, Some(flag), _) => (Value::Bool(flag), false),
        (None, None, None, Some(_)) => (Value::Null, false),
        (None, None, None, None) => return Ok(()),
    };
    let mut node = args;
    for step in steps {
        node = match step {
            Step::Key(key) => {
                if !node.is_object() {
                    *node = Value::Object(serde_json::Map::new());
                }
                let Value::Object(map) = node else {
                    unreachable!("made an object above")
                };
                map.entry(key.into_owned()).or_insert(Value::Null)
            }
            Step::Index(index) => {
                if index >= MAX_ARRAY_ELEMENTS {
                    return Err(bad("an array index past the cap"));
                }
                if !node.is_array() {
                    *node = Value::Array(Vec::new());
                }
                let Value::Array(list) = node else {
                    unreachable!("made an array above")
                };
                if list.len() <= index {
                    list.resize(index + 1, Value::Null);
                }
                &mut list[index]
            }
        };
    }
    match (node, value) {
        (Value::String(text), Value::String(piece)) if append => text.push_str(&piece),
        (node, value) => *node = value,
    }
    Ok(())
}

/// The `responseId` made safe for every provider's id syntax (Anthropic accepts only
/// `[A-Za-z0-9_-]`), or, without one, a value unique to this process and moment.
fn id_stem(response_id: Option<&str>) -> String {
    let cleaned: String = response_id
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        .collect();
    if !cleaned.is_empty() {
        return cleaned;
    }
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    format!("{nanos:x}{:x}", COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// Parses the `data:` payloads of a `streamGenerateContent?alt=sse` stream.
#[derive(Debug, Default)]
pub(crate) struct StreamParser {
    answer: Answer,
}

impl EventParser for StreamParser {
    fn parse(
        &mut self,
        _event: &str,
        data: &str,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        let trimmed = data.trim_start();
        if trimmed.is_empty() {
            return Ok(());
        }
        // An event may hold an array of responses (a proxy relaying the array form).
        if trimmed.starts_with('[') {
            let responses: Vec<Response<'_>> = json(PROVIDER, data)?;
            for response in responses {
                self.answer.response(response, out)?;
            }
            return Ok(());
        }
        self.answer.response(event_json(PROVIDER, data)?, out)
    }

    const FINISH_REASON_COMPLETES: bool = true;

    const MISSING_END: &'static str = "no finishReason before the stream ended";
}

/// A non-streamed answer as chunks, in the order a stream would give them. The body is one
/// `GenerateContentResponse`, or a JSON array of them (`streamGenerateContent` without
/// `alt=sse`, which some proxies return for either method).
pub(crate) fn response_chunks(body: &str) -> Result<Vec<Chunk>, ProviderError> {
    // An array is checked first: serde would also read a struct from an array, positionally.
    let responses: Vec<Response<'_>> = if body.trim_start().starts_with('[') {
        json(PROVIDER, body)?
    } else if let Ok(envelope) = serde_json::from_str::<ErrorEnvelope<'_>>(body) {
        return Err(stream_error(envelope.error));
    } else {
        vec![json(PROVIDER, body)?]
    };
    let mut answer = Answer::default();
    let mut out = Vec::new();
    for response in responses {
        answer.response(response, &mut out)?;
    }
    answer.end_call(&mut out);
    out.push(Chunk::Done);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finish_reasons() {
        assert_eq!(finish_reason("STOP"), FinishReason::Stop);
        assert_eq!(finish_reason("MAX_TOKENS"), FinishReason::Length);
        assert_eq!(finish_reason("SAFETY"), FinishReason::ContentFilter);
        assert_eq!(
            finish_reason("PROHIBITED_CONTENT"),
            FinishReason::ContentFilter
        );
        assert_eq!(
            finish_reason("MALFORMED_FUNCTION_CALL"),
            FinishReason::Other("MALFORMED_FUNCTION_CALL".into())
        );
    }

    #[test]
    fn usage_counts_thoughts_as_output_and_cache_as_part_of_the_prompt() {
        let usage: UsageMetadata = serde_json::from_str(
            r#"{"promptTokenCount": 1000, "cachedContentTokenCount": 800, "candidatesTokenCount": 50,
                "thoughtsTokenCount": 200, "toolUsePromptTokenCount": 30, "totalTokenCount": 1280}"#,
        )
        .expect("parses");
        assert_eq!(
            UsageUpdate::from(usage),
            UsageUpdate {
                input_tokens: Some(1030),
                output_tokens: Some(250),
                cached_input_tokens: Some(800),
                cache_creation_tokens: None,
                reasoning_tokens: Some(200),
            }
        );
    }

    #[test]
    fn minted_ids_are_safe_and_unique() {
        assert_eq!(
            id_stem(Some("QUVVadTSNJ6_qtsPvN7J8Q0")),
            "QUVVadTSNJ6_qtsPvN7J8Q0"
        );
        assert_eq!(id_stem(Some("a/b+c=")), "abc");
        let (a, b) = (id_stem(None), id_stem(Some("//")));
        assert_ne!(a, b);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn a_one_element_array_is_a_response_not_an_error() {
        let chunks = response_chunks(
            r#"[{"candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}]"#,
        )
        .expect("parses");
        assert!(chunks.contains(&Chunk::Text("hi".into())));
        let error = response_chunks(r#"[{"error": {"message": "boom", "status": "INTERNAL"}}]"#);
        assert!(
            matches!(
                error,
                Err(ProviderError::Stream {
                    retryable: true,
                    ..
                })
            ),
            "{error:?}"
        );
    }

    #[test]
    fn blocked_prompt_finishes_with_content_filter() {
        let chunks = response_chunks(
            r#"{"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 7}}"#,
        )
        .expect("parses");
        assert!(chunks.contains(&Chunk::Finish(FinishReason::ContentFilter)));
        assert_eq!(chunks.last(), Some(&Chunk::Done));
    }
}
