//! Server-sent events → adapter parser → [`Assembler`] → [`EventStream`].

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures::{Stream, StreamExt};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::assemble::{Assembler, Chunk};
use crate::error::excerpt;
use crate::{EventStream, Limit, Provider, ProviderError, StreamEvent};

mod frames;

use frames::{FrameError, Frames};

/// A provider's stream format: reads one SSE event at a time into [`Chunk`]s.
///
/// Implementations keep whatever per-stream state their wire format needs (ids seen, the
/// block a delta belongs to) and push [`Chunk::Done`] when the provider says the answer is
/// complete (`[DONE]`, `response.completed`, `message_stop`).
pub(crate) trait EventParser: Send + Unpin + 'static {
    /// Parses one event. `event` is the SSE event name (`message` when the server sent none).
    /// An error ends the stream with that error (bad JSON, an in-band provider error).
    fn parse(&mut self, event: &str, data: &str, out: &mut Vec<Chunk>)
    -> Result<(), ProviderError>;

    /// Whether a body that ends after a finish reason but before the format's terminator is
    /// a complete answer (compatible servers that omit `[DONE]`, a lost `message_stop`).
    const FINISH_REASON_COMPLETES: bool;

    /// What the format sends to end a stream, named in the truncation error when the body
    /// ends without it (and without a finish reason, where that is enough).
    const MISSING_END: &'static str;
}

/// Decodes a body of SSE bytes with `parser`. The stream ends after [`StreamEvent::Done`] or
/// the first error; dropping it drops `body` (and with it the connection). An event (or line)
/// longer than `max_event` bytes ends it with [`ProviderError::LimitExceeded`] before the
/// framing buffers more than that (plus one read).
pub(crate) fn decode<S, B, P>(
    provider: Provider,
    body: S,
    parser: P,
    max_event: usize,
) -> EventStream
where
    S: Stream<Item = Result<B, ProviderError>> + Send + 'static,
    B: AsRef<[u8]>,
    P: EventParser,
{
    // The SSE framing is `frames.rs` on sseer's line parser, not eventsource-stream (the crate
    // the project brief names): eventsource-stream parses every line char by char with nom and
    // copies the rest of its buffer after each line, which alone cost 1.0-1.7 µs of CPU per
    // event on the recorded streams, over the whole 1 µs per delta budget. Measurements:
    // BENCHMARKS.md, "providers" and "the stream consumer against its floor".
    Box::pin(Driver {
        provider,
        body: Box::pin(body),
        body_ended: false,
        frames: Frames::new(max_event),
        max_event,
        parser,
        assembler: Assembler::default(),
        chunks: Vec::new(),
        events: Vec::new(),
        error: None,
        finished: false,
    })
}

/// [`decode`] for a recorded body in pieces of any type and size (replays, benchmarks).
pub(crate) fn decode_recorded<S, B, P>(provider: Provider, body: S, parser: P) -> EventStream
where
    S: Stream<Item = B> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    P: EventParser,
{
    decode(
        provider,
        body.map(Ok),
        parser,
        crate::Limits::DEFAULT_MAX_SSE_EVENT_BYTES,
    )
}

/// The stream [`decode`] returns: body reads in, [`StreamEvent`]s out.
struct Driver<S, P> {
    provider: Provider,
    body: Pin<Box<S>>,
    body_ended: bool,
    frames: Frames,
    /// The cap `frames` enforces, for its error.
    max_event: usize,
    parser: P,
    assembler: Assembler,
    /// Reused between events: the parser's output.
    chunks: Vec<Chunk>,
    /// The assembler's output not yet handed out, last first (handed out by `pop`).
    events: Vec<StreamEvent>,
    /// The error that ends the stream once `events` are handed out.
    error: Option<ProviderError>,
    finished: bool,
}

impl<S, B, P> Stream for Driver<S, P>
where
    S: Stream<Item = Result<B, ProviderError>>,
    B: AsRef<[u8]>,
    P: EventParser,
{
    type Item = Result<StreamEvent, ProviderError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if !this.events.is_empty() {
                return Poll::Ready(this.events.pop().map(Ok));
            }
            if let Some(error) = this.error.take() {
                return Poll::Ready(Some(Err(error)));
            }
            if this.finished {
                return Poll::Ready(None);
            }
            let mut step = match this.frames.next_event() {
                Ok(Some((event, data))) => this.parser.parse(event, data, &mut this.chunks),
                Ok(None) if !this.body_ended => match ready!(this.body.as_mut().poll_next(cx)) {
                    Some(Ok(bytes)) => {
                        this.frames.push(bytes.as_ref());
                        continue;
                    }
                    Some(Err(err)) => Err(err),
                    None => {
                        this.body_ended = true;
                        this.frames.end();
                        continue;
                    }
                },
                Ok(None) => {
                    this.finished = true;
                    let finish_seen = this.assembler.has_finish_reason()
                        || this.chunks.iter().any(|c| matches!(c, Chunk::Finish(_)));
                    if P::FINISH_REASON_COMPLETES && finish_seen {
                        this.chunks.push(Chunk::Done);
                        Ok(())
                    } else {
                        Err(truncated(this.provider, P::MISSING_END))
                    }
                }
                Err(FrameError::Utf8(err)) => Err(ProviderError::decode(
                    this.provider,
                    format!("the event stream is not UTF-8: {err}"),
                    "",
                )),
                Err(FrameError::TooLong) => Err(ProviderError::LimitExceeded {
                    provider: this.provider,
                    limit: Limit::SseEvent,
                    what: "an SSE event (or line)".into(),
                    max: this.max_event as u64,
                }),
            };
            // Breaking out drops the rest of the drain: `chunks` is empty either way.
            for chunk in this.chunks.drain(..) {
                if let Err(overflow) = this.assembler.push(chunk, &mut this.events) {
                    step = step.and(Err(overflow.into_error(this.provider)));
                    break;
                }
            }
            this.events.reverse();
            // Events parsed before an error are still delivered, then the error ends the stream.
            if let Err(err) = step {
                this.error = Some(err);
                this.finished = true;
            }
            if this.assembler.is_done() {
                this.finished = true;
            }
        }
    }
}

/// Reads `stream` up to its first event after [`StreamEvent::Started`] and returns the
/// stream again from its start, or the error that came before any content.
#[cfg_attr(
    not(any(feature = "anthropic", feature = "gemini")),
    allow(dead_code, reason = "used by `HttpClient::post_sse_retrying_start`")
)]
pub(crate) async fn until_content(mut stream: EventStream) -> Result<EventStream, ProviderError> {
    let mut head = Vec::new();
    while let Some(item) = stream.next().await {
        let event = item?;
        let started = matches!(event, StreamEvent::Started { .. });
        head.push(Ok(event));
        if !started {
            break;
        }
    }
    Ok(Box::pin(futures::stream::iter(head).chain(stream)))
}

/// A truncation error for `provider`'s stream.
pub(crate) fn truncated(provider: Provider, detail: impl Into<String>) -> ProviderError {
    ProviderError::StreamTruncated {
        provider: Some(provider),
        detail: detail.into(),
    }
}

/// Parses an event's JSON payload, or a decode error quoting it. An object whose fields do
/// not have the shape the parser reads is said to be so; anything else (broken JSON, or JSON
/// that is not an object, which no event is) is invalid JSON for a stream event.
pub(crate) fn json<'a, T: serde::Deserialize<'a>>(
    provider: Provider,
    data: &'a str,
) -> Result<T, ProviderError> {
    serde_json::from_str(data).map_err(|err| ProviderError::Decode {
        provider,
        message: if err.is_data() && data.trim_start().starts_with('{') {
            format!("a stream event whose fields do not have the documented shape: {err}")
        } else {
            format!("invalid JSON in a stream event: {err}")
        },
        excerpt: excerpt(data),
    })
}

/// [`json`] for an event payload, which is always a JSON object (serde would otherwise read a
/// struct of optional fields from an array, positionally).
pub(crate) fn event_json<'a, T: serde::Deserialize<'a>>(
    provider: Provider,
    data: &'a str,
) -> Result<T, ProviderError> {
    if !data.trim_start().starts_with('{') {
        return Err(ProviderError::Decode {
            provider,
            message: "invalid JSON in a stream event: expected a JSON object".into(),
            excerpt: excerpt(data),
        });
    }
    json(provider, data)
}

/// Reads `field` of an event of type `event` (kept as raw JSON until the event's type said the
/// field is needed). A value of another shape is a [`ProviderError::Decode`] naming the event
/// type and the field: the event is JSON, just not what the protocol documents.
#[cfg_attr(
    not(any(feature = "openai", feature = "anthropic")),
    allow(dead_code, reason = "Gemini's events have no type to dispatch on")
)]
pub(crate) fn field<'a, T: serde::Deserialize<'a>>(
    provider: Provider,
    event: &str,
    field: &str,
    raw: &'a RawValue,
) -> Result<T, ProviderError> {
    serde_json::from_str(raw.get()).map_err(|err| ProviderError::Decode {
        provider,
        message: format!(
            "the `{field}` of a `{event}` event does not have the documented shape: {err}"
        ),
        excerpt: excerpt(raw.get()),
    })
}

/// A string field read leniently: a JSON string (borrowed from the event when it has no
/// escapes), and `None` for `null`, a missing field or a value of another type. For fields
/// whose odd shape must not cost the rest of the event (ids, names, finish reasons, text
/// pieces of optional extensions).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct MaybeText<'a>(pub(crate) Option<Cow<'a, str>>);

impl<'a> MaybeText<'a> {
    /// The text, unless it is missing or empty (an empty string is a placeholder).
    pub(crate) fn non_empty(self) -> Option<Cow<'a, str>> {
        self.0.filter(|text| !text.is_empty())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for MaybeText<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(MaybeTextVisitor(PhantomData))
    }
}

struct MaybeTextVisitor<'a>(PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for MaybeTextVisitor<'a> {
    type Value = MaybeText<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(MaybeText(Some(Cow::Borrowed(v))))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(MaybeText(Some(Cow::Owned(v.to_owned()))))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(MaybeText(Some(Cow::Owned(v))))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(MaybeText(None))
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(MaybeText(None))
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(MaybeText(None))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(MaybeText(None))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(MaybeText(None))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(MaybeText(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(MaybeText(None))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(MaybeText(None))
    }
}

/// `deserialize_with` for a block or list index from the wire: a non-negative integer, else
/// `None` (missing, `null`, `-1` as some proxies send, a fraction, a string). For formats that
/// place what an index-less fragment belongs to by other means (ids, the last item); where the
/// index is the only way to place a block, read it with [`index_field`].
#[cfg(feature = "openai")]
pub(crate) fn lenient_index<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    d.deserialize_any(LenientIndex)
}

/// Reads what [`wire_index`] accepts straight from the event (every text delta of a Chat
/// Completions stream has an index: a second parse of its text per delta showed in profiles).
#[cfg(feature = "openai")]
struct LenientIndex;

#[cfg(feature = "openai")]
impl<'de> Visitor<'de> for LenientIndex {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a non-negative integer")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(usize::try_from(v).ok())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

/// A wire index as a key: a non-negative integer that fits `usize` (`-1`, `1e26`, `0.5`, a
/// string are not).
#[cfg(any(feature = "openai", feature = "anthropic"))]
fn wire_index(raw: &RawValue) -> Option<usize> {
    serde_json::from_str::<u64>(raw.get())
        .ok()
        .and_then(|n| usize::try_from(n).ok())
}

/// Reads the index `field` of an event of type `event` whose payload is `data`: `None` when it
/// is absent or `null`. Any other value that is not a non-negative integer is a
/// [`ProviderError::Decode`] naming the event, the field and the value: what the event carries
/// (a tool call, its arguments) cannot be placed, and skipping it would lose it without a word.
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) fn index_field(
    provider: Provider,
    event: &str,
    field: &str,
    raw: Option<&RawValue>,
    data: &str,
) -> Result<Option<usize>, ProviderError> {
    match raw {
        None => Ok(None),
        Some(raw) if raw.get() == "null" => Ok(None),
        Some(raw) => wire_index(raw).map(Some).ok_or_else(|| {
            ProviderError::decode(
                provider,
                format!(
                    "the `{field}` of a `{event}` event is {}, not a non-negative integer that \
                     fits a key: what the event carries (a tool call, its arguments, a text \
                     block) cannot be placed, so the answer is refused rather than lose it",
                    excerpt(raw.get())
                ),
                data,
            )
        }),
    }
}

/// `deserialize_with` for a list that some servers send as `null`: `null` is an empty list.
pub(crate) fn nullable_list<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// Event, item, block and part types a parser met but does not model: each is skipped (what
/// the answer holds besides is kept) and named once per stream in a `debug` line.
#[derive(Debug, Default)]
pub(crate) struct Skipped {
    named: Vec<String>,
}

impl Skipped {
    /// Most distinct types named per stream (a hostile stream could invent endless ones).
    const MAX_NAMED: usize = 64;

    /// Notes that a `what` (`event`, `output item`, `content block`, …) of type `kind` was
    /// skipped.
    pub(crate) fn note(&mut self, provider: Provider, what: &str, kind: &str) {
        if self.named.len() >= Self::MAX_NAMED || self.named.iter().any(|seen| seen == kind) {
            return;
        }
        self.named.push(kind.to_owned());
        tracing::debug!(
            "{provider}: skipping {what} of type `{kind}`, which Skein does not model; the rest of the answer is kept"
        );
    }
}
