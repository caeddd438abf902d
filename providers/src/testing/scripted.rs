//! [`ScriptedModel`]: replays scripted responses in order.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use messages::{Reasoning, ToolCall};

use super::{replay, word_deltas};
use crate::assemble::{Chunk, UsageUpdate};
use crate::{
    ChatModel, ChatRequest, ChatResponse, EventStream, FinishReason, ModelInfo, Provider,
    ProviderError, Usage, collect,
};

/// A model that answers each request with the next scripted response and records the
/// requests it got.
///
/// ```
/// use std::time::Duration;
/// use providers::testing::{ScriptedModel, ScriptedResponse};
/// use providers::{ChatModel, ChatRequest, FinishReason, Message, Usage};
///
/// # tokio_test_block_on(async {
/// let model = ScriptedModel::new([
///     ScriptedResponse::new()
///         .reasoning("The user wants the weather.")
///         .tool_call("call_1", "get_weather", r#"{"city":"Paris"}"#),
///     ScriptedResponse::text("It is sunny in Paris.")
///         .usage(Usage { input_tokens: 20, output_tokens: 6, ..Default::default() })
///         .delay(Duration::from_millis(1)),
/// ]);
///
/// let first = model.complete(ChatRequest::new(vec![Message::human("Weather?")])).await?;
/// assert_eq!(first.finish_reason, FinishReason::ToolCalls);
/// assert_eq!(first.message.tool_calls().next().map(|c| c.name.as_str()), Some("get_weather"));
///
/// let second = model.complete(ChatRequest::new(vec![Message::human("And now?")])).await?;
/// assert_eq!(second.message.text(), "It is sunny in Paris.");
/// assert_eq!(model.requests().len(), 2);
/// assert_eq!(model.remaining(), 0);
/// # Ok::<(), providers::ProviderError>(())
/// # });
/// # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Debug)]
pub struct ScriptedModel {
    info: ModelInfo,
    script: Mutex<VecDeque<ScriptedResponse>>,
    received: Mutex<Received>,
    /// Whether a copy of each request is kept for [`ScriptedModel::requests`].
    keeps_requests: bool,
}

/// The requests a [`ScriptedModel`] got: how many, and those it kept.
#[derive(Debug, Default)]
struct Received {
    count: usize,
    kept: Vec<ChatRequest>,
}

impl ScriptedModel {
    /// A model that will give these responses, in order. Its [`ModelInfo`] is that of an
    /// unknown OpenAI-protocol model named `scripted`; see [`ScriptedModel::with_info`].
    pub fn new(responses: impl IntoIterator<Item = ScriptedResponse>) -> Self {
        ScriptedModel {
            info: ModelInfo::unknown(Provider::OpenAi, "scripted"),
            script: Mutex::new(responses.into_iter().collect()),
            received: Mutex::new(Received::default()),
            keeps_requests: true,
        }
    }

    /// The same model keeping no copy of the requests it gets ([`ScriptedModel::requests`]
    /// stays empty): for benchmarks of long runs, where keeping every request would cost more
    /// than what is measured.
    pub fn unrecorded(mut self) -> Self {
        self.keeps_requests = false;
        self
    }

    /// The same model reporting `info` (e.g. a small context window for compression tests).
    pub fn with_info(mut self, info: ModelInfo) -> Self {
        self.info = info;
        self
    }

    /// Appends a response to the script.
    pub fn push(&self, response: ScriptedResponse) {
        lock(&self.script).push_back(response);
    }

    /// Every request received so far, in order (none for an
    /// [`unrecorded`](ScriptedModel::unrecorded) model).
    pub fn requests(&self) -> Vec<ChatRequest> {
        lock(&self.received).kept.clone()
    }

    /// How many scripted responses are left.
    pub fn remaining(&self) -> usize {
        lock(&self.script).len()
    }

    /// Counts a request and keeps it (made by `request`) unless the model is unrecorded;
    /// returns its number.
    fn receive(&self, request: impl FnOnce() -> ChatRequest) -> usize {
        let mut received = lock(&self.received);
        received.count += 1;
        if self.keeps_requests {
            received.kept.push(request());
        }
        received.count
    }

    /// The answer to request number `number`: the next scripted response.
    fn next(&self, number: usize) -> Result<EventStream, ProviderError> {
        let Some(response) = lock(&self.script).pop_front() else {
            return Err(ProviderError::config(format!(
                "ScriptedModel got request #{number} but its script has only {} response(s); script one more",
                number - 1
            )));
        };
        if let Some(error) = response.refuse {
            return Err(error);
        }
        Ok(replay(response.chunks, response.delay, response.fail))
    }
}

#[async_trait]
impl ChatModel for ScriptedModel {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        collect(self.next(self.receive(|| request))?).await
    }

    async fn stream(&self, request: ChatRequest) -> Result<EventStream, ProviderError> {
        self.next(self.receive(|| request))
    }

    /// Copies the request only to keep it (not when [`unrecorded`](ScriptedModel::unrecorded)).
    async fn stream_borrowed(&self, request: &ChatRequest) -> Result<EventStream, ProviderError> {
        self.next(self.receive(|| request.clone()))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panicking test thread must not hide the script from the others.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One scripted answer, built in the order its parts are streamed.
#[derive(Debug, Default)]
pub struct ScriptedResponse {
    chunks: Vec<Chunk>,
    delay: Duration,
    refuse: Option<ProviderError>,
    fail: Option<ProviderError>,
    blocks: usize,
}

impl ScriptedResponse {
    /// An empty answer (add parts with the builder methods).
    pub fn new() -> Self {
        Self::default()
    }

    /// An answer with this text.
    pub fn text(text: &str) -> Self {
        Self::new().with_text(text)
    }

    /// A request that fails before streaming starts: `stream` and `complete` return `error`.
    pub fn error(error: ProviderError) -> Self {
        ScriptedResponse {
            refuse: Some(error),
            ..Self::default()
        }
    }

    /// Appends text, streamed word by word.
    pub fn with_text(mut self, text: &str) -> Self {
        self.chunks
            .extend(word_deltas(text).into_iter().map(Chunk::Text));
        self
    }

    /// Appends a reasoning block with this text, streamed word by word.
    pub fn reasoning(self, text: &str) -> Self {
        self.reasoning_block(Reasoning {
            text: text.to_owned(),
            ..Default::default()
        })
    }

    /// Appends a reasoning block with opaque fields (signature, encrypted data, id).
    pub fn reasoning_block(mut self, reasoning: Reasoning) -> Self {
        let key = self.blocks;
        self.blocks += 1;
        for text in word_deltas(&reasoning.text) {
            self.chunks.push(Chunk::ReasoningDelta { key, text });
        }
        self.chunks.push(Chunk::ReasoningSet {
            key,
            fields: reasoning,
        });
        self.chunks.push(Chunk::ReasoningEnd { key });
        self
    }

    /// Appends a tool call; its arguments are streamed in two pieces.
    pub fn tool_call(self, id: &str, name: &str, arguments: &str) -> Self {
        self.tool_call_with(ToolCall::new(id, name, arguments))
    }

    /// Appends a tool call (with reasoning attached, if it has some).
    pub fn tool_call_with(mut self, call: ToolCall) -> Self {
        let key = self.blocks;
        self.blocks += 1;
        let split = call.arguments.len() / 2;
        let split = (0..=split)
            .rev()
            .find(|&i| call.arguments.is_char_boundary(i))
            .unwrap_or(0);
        let (head, tail) = call.arguments.split_at(split);
        self.chunks.push(Chunk::ToolCallStart {
            key,
            id: call.id.clone(),
            name: call.name.clone(),
            reasoning: call.reasoning.clone().map(Box::new),
        });
        for piece in [head, tail] {
            self.chunks.push(Chunk::ToolCallArgs {
                key,
                arguments: piece.to_owned(),
            });
        }
        self.chunks.push(Chunk::ToolCallEnd { key });
        self
    }

    /// Sets the usage reported at the end.
    pub fn usage(mut self, usage: Usage) -> Self {
        self.chunks.push(Chunk::Usage(UsageUpdate::from(usage)));
        self
    }

    /// Sets the finish reason (by default `ToolCalls` when the answer calls tools, else `Stop`).
    pub fn finish(mut self, finish: FinishReason) -> Self {
        self.chunks.push(Chunk::Finish(finish));
        self
    }

    /// Waits this long before each event after the first (a slow model).
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Streams everything scripted so far, then fails with `error` instead of finishing.
    pub fn fail_mid_stream(mut self, error: ProviderError) -> Self {
        self.fail = Some(error);
        self
    }
}
