//! The one place calls are executed, for every chain: lookup, input, budget, deadline,
//! cancellation, panics, media transform, events, bounded concurrency, call order.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use futures::future::{self, Either};
use futures::{FutureExt, StreamExt, stream};
use messages::{ContentPart, ToolCall};
use serde_json::Value;
use tracing::Instrument;

use crate::{
    ExecutionContext, MediaTransform, RawToolCallResult, RawToolChainResult, Source, ToolError,
    ToolEvent, ToolObserver, ToolResult, ToolSet,
};

/// A call ready to run: the call as recorded, and its input or why there is none.
pub(crate) struct Prepared {
    pub(crate) call: ToolCall,
    pub(crate) input: Result<Value, ToolError>,
}

/// A finished call.
pub(crate) struct Record {
    pub(crate) call: ToolCall,
    pub(crate) result: Result<ToolResult<Value>, ToolError>,
    /// What the model reads for this call.
    pub(crate) content: String,
    pub(crate) duration: Duration,
}

/// How a chain turns outcomes into text for the model.
pub(crate) struct Rendering {
    pub(crate) output: fn(&Value) -> String,
    pub(crate) error_prefix: &'static str,
}

impl Rendering {
    fn content(&self, result: &Result<ToolResult<Value>, ToolError>) -> String {
        match result {
            Ok(result) => (self.output)(&result.text),
            // A silent exit is how the run ends, not a failure: a conversation continued later
            // must not show the model a failed tool.
            Err(error @ ToolError::SilentExit { .. }) => error.to_string(),
            Err(error) => format!("{}{error}", self.error_prefix),
        }
    }
}

/// The tools and the media hook every chain holds.
#[derive(Clone, Default)]
pub(crate) struct Runner {
    pub(crate) tools: ToolSet,
    pub(crate) media: Option<Arc<dyn MediaTransform>>,
}

impl Runner {
    /// Runs `calls`, at most `ctx.max_concurrency()` at once, and returns them in call order.
    pub(crate) async fn run(
        &self,
        ctx: &ExecutionContext,
        calls: Vec<Prepared>,
        rendering: &Rendering,
        observer: &dyn ToolObserver,
    ) -> Vec<Record> {
        let mut records: Vec<Option<Record>> =
            std::iter::repeat_with(|| None).take(calls.len()).collect();
        let mut running = stream::iter(calls.into_iter().enumerate())
            .map(|(index, prepared)| self.run_one(ctx, index, prepared, rendering, observer))
            .buffer_unordered(ctx.max_concurrency());
        while let Some((index, record)) = running.next().await {
            if let Some(slot) = records.get_mut(index) {
                *slot = Some(record);
            }
        }
        records.into_iter().flatten().collect()
    }

    async fn run_one(
        &self,
        ctx: &ExecutionContext,
        index: usize,
        prepared: Prepared,
        rendering: &Rendering,
        observer: &dyn ToolObserver,
    ) -> (usize, Record) {
        let Prepared { call, input } = prepared;
        if ctx.is_cancelled() {
            let result = Err(ToolError::Cancelled {
                tool: call.name.clone(),
            });
            let content = rendering.content(&result);
            let duration = Duration::ZERO;
            return (
                index,
                Record {
                    call,
                    result,
                    content,
                    duration,
                },
            );
        }
        observer.on_event(&ToolEvent::Started { index, call: &call });
        let started = Instant::now();
        let (result, mut sources) = match self.invoke(ctx, &call, input).await {
            Ok((mut result, sources)) => {
                if let Some(transform) = &self.media {
                    result.media = std::mem::take(&mut result.media)
                        .into_iter()
                        .filter_map(|part| transform.transform(&call.name, part))
                        .collect();
                }
                (Ok(result), sources)
            }
            Err(error) => (Err(error), Vec::new()),
        };
        // Before anything reads the outcome: the events, the model and the store see it
        // redacted alike.
        let result = match ctx.redactor() {
            Some(redactor) => {
                for source in &mut sources {
                    source.redact(redactor);
                }
                redact(redactor, result)
            }
            None => result,
        };
        let duration = started.elapsed();
        let content = rendering.content(&result);
        observer.on_event(&ToolEvent::Finished {
            index,
            call: &call,
            outcome: result.as_ref().map(|result| &result.text),
            media: result
                .as_ref()
                .map_or(&[], |result| result.media.as_slice()),
            sources: &sources,
            content: &content,
            duration,
        });
        (
            index,
            Record {
                call,
                result,
                content,
                duration,
            },
        )
    }

    async fn invoke(
        &self,
        ctx: &ExecutionContext,
        call: &ToolCall,
        input: Result<Value, ToolError>,
    ) -> Result<(ToolResult<Value>, Vec<Source>), ToolError> {
        // A call with no usable name says so, rather than "unknown tool \"\"".
        let input = match input {
            Err(error @ ToolError::InvalidCall { .. }) => return Err(error),
            input => input,
        };
        let tool = self
            .tools
            .get(&call.name)
            .ok_or_else(|| ToolError::UnknownTool {
                name: call.name.clone(),
                available: match self.tools.names().collect::<Vec<_>>().join(", ") {
                    names if names.is_empty() => "none".to_owned(),
                    names => names,
                },
            })?;
        let input = input?;
        let bound = ctx.call_deadline(&call.name);
        if let Some((deadline, error)) = &bound
            && *deadline <= Instant::now()
        {
            return Err(error.clone());
        }
        ctx.take_call(&call.name)?;

        let span = tracing::info_span!(parent: ctx.span(), "tool_call", tool = %call.name, call_id = %call.id);
        let running = AssertUnwindSafe(tool.call_json_with_sources(ctx, input))
            .catch_unwind()
            .map(|outcome| {
                outcome.unwrap_or_else(|panic| {
                    Err(ToolError::Panicked {
                        tool: call.name.clone(),
                        message: panic_message(panic.as_ref()),
                    })
                })
            })
            .instrument(span);
        let bounded = async {
            match bound {
                None => running.await,
                Some((deadline, error)) => tokio::time::timeout_at(deadline, running)
                    .await
                    .unwrap_or(Err(error)),
            }
        };
        // `select` polls the call first: one that finishes at once never registers with the
        // cancellation token (a lock per call), which keeps dispatch cheap.
        let cancelled = ctx.cancellation().cancelled();
        match future::select(pin!(bounded), pin!(cancelled)).await {
            Either::Left((result, _)) => result,
            Either::Right(((), _)) => Err(ToolError::Cancelled {
                tool: call.name.clone(),
            }),
        }
    }
}

/// `result` without the secrets `redactor` knows: in its output's strings, its text media
/// and its error. (The call's sources are redacted beside it.)
fn redact(
    redactor: &messages::Redactor,
    result: Result<ToolResult<Value>, ToolError>,
) -> Result<ToolResult<Value>, ToolError> {
    match result {
        Ok(mut result) => {
            redactor.redact_json(&mut result.text);
            for part in &mut result.media {
                if let ContentPart::Text { text, .. } = part {
                    redactor.redact_in_place(text);
                }
            }
            Ok(result)
        }
        Err(error) => Err(error.redacted(redactor)),
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|message| (*message).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panicked with a non-text payload".to_owned())
}

/// The parts every chain builds from finished calls.
pub(crate) struct Collected {
    pub(crate) raw: RawToolChainResult,
    /// Per call: what the model reads and the media, in call order.
    pub(crate) outputs: Vec<(String, Vec<ContentPart>)>,
}

pub(crate) fn collect(records: Vec<Record>) -> Collected {
    let mut raw = RawToolChainResult::default();
    let mut outputs = Vec::with_capacity(records.len());
    for Record {
        call,
        result,
        content,
        duration,
    } in records
    {
        let (output, media, error) = match result {
            Ok(result) => (Some(result.text), result.media, None),
            Err(error) => (None, Vec::new(), Some(error)),
        };
        raw.results.push(RawToolCallResult {
            name: call.name.clone(),
            output,
            duration,
        });
        raw.errors.push(error);
        raw.calls.push(call);
        outputs.push((content, media));
    }
    Collected { raw, outputs }
}
