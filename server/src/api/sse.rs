//! Server-sent events answers: each event serialised once, straight into the bytes that go out,
//! and every event that is ready when the connection asks for more sent as one body chunk.
//!
//! A relay pays per chunk, not per byte: each chunk is an HTTP chunk of its own and, when the
//! connection writes it before the next is ready, a `writev` of its own. An answer's events are
//! written here as `event: <name>\ndata: <json>\n\n` into one buffer while the stream has more
//! ready (a burst of deltas one read of the provider brought, a replayed answer, the first
//! events of a Responses stream), and the buffer goes out as one chunk when the stream has
//! nothing more for now, or when it holds [`BATCH_BYTES`]. A chunk that is ready may wait one
//! turn of the scheduler for the rest of what the provider's last read brought ([`Gather`]);
//! where waiting gains nothing (a relay with time to spare), chunks go at once.

mod gather;

use std::pin::Pin;
use std::task::{Context, Poll};

use agent_loop::WakeGated;
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::{BufMut as _, Bytes, BytesMut};
use futures::Stream;
use http::{HeaderValue, header};
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use serde::Serialize;

use self::gather::Gather;

/// A chunk grows to at most about this many bytes while more events are ready (one event may
/// pass it): the connection's unsent bytes are bounded near this size anyway, and a client
/// sees a long burst of events in pieces instead of all at its end.
pub(crate) const BATCH_BYTES: usize = 16 * 1024;

/// Room reserved before a batch is written: a text delta's event in any protocol fits.
const EVENT_BYTES: usize = 512;

/// A buffer made by [`Frames::make_room`]: the frames of a few dozen text deltas.
const BUFFER_BYTES: usize = 4096;

/// An event whose JSON is the same every time but for one string (a text delta's chunk):
/// rendered once around a mark, so that each event costs the escaping of its string alone
/// instead of the serialisation of the whole value.
#[derive(Debug)]
pub(crate) struct TextTemplate {
    before: Vec<u8>,
    after: Vec<u8>,
}

impl TextTemplate {
    /// The JSON of `render(mark)` cut around the mark's string; `None` when the mark is not
    /// in it exactly once (a value that already holds it).
    pub(crate) fn new<T: Serialize>(render: impl FnOnce(String) -> T) -> Option<Self> {
        const MARK: &str = "\u{1}text\u{1}";
        let json = serde_json::to_vec(&render(MARK.to_owned())).ok()?;
        let mark = serde_json::to_vec(MARK).ok()?;
        let find = |bytes: &[u8]| bytes.windows(mark.len()).position(|w| w == mark);
        let at = find(&json)?;
        if find(&json[at + 1..]).is_some() {
            return None;
        }
        Some(TextTemplate {
            before: json[..at].to_vec(),
            after: json[at + mark.len()..].to_vec(),
        })
    }
}

/// The events of a batch, as they will be sent.
#[derive(Debug, Default)]
pub(crate) struct Frames {
    bytes: BytesMut,
}

impl Frames {
    /// An event named `name` whose data is `data` as JSON.
    pub(crate) fn event(&mut self, name: &str, data: &impl Serialize) {
        self.bytes.put_slice(b"event: ");
        self.bytes.put_slice(name.as_bytes());
        self.bytes.put_u8(b'\n');
        self.json_data(data);
    }

    /// An event numbered `id` (its `id:` line, which a reconnecting client sends back as
    /// `Last-Event-ID`) named `name`, whose data is `data` as JSON.
    pub(crate) fn numbered_event(&mut self, id: u64, name: &str, data: &impl Serialize) {
        self.id(id);
        self.event(name, data);
    }

    /// The `id: <id>` line that opens a numbered event, whose other lines the caller writes.
    pub(crate) fn id(&mut self, id: u64) {
        self.bytes.put_slice(b"id: ");
        self.number(id);
        self.bytes.put_u8(b'\n');
    }

    /// `number` in decimal, inside a line the caller writes.
    pub(crate) fn number(&mut self, number: impl itoa::Integer) {
        self.bytes
            .put_slice(itoa::Buffer::new().format(number).as_bytes());
    }

    /// `text` as a JSON string, inside a line the caller writes.
    pub(crate) fn json_string(&mut self, text: &str) {
        // A string always serialises.
        let _ = serde_json::to_writer((&mut self.bytes).writer(), text);
    }

    /// An unnamed event whose data is `data` as JSON.
    pub(crate) fn data(&mut self, data: &impl Serialize) {
        self.json_data(data);
    }

    /// An unnamed event whose data is `template`'s JSON with `text` in its place.
    pub(crate) fn data_in(&mut self, template: &TextTemplate, text: &str) {
        self.bytes.put_slice(b"data: ");
        self.bytes.put_slice(&template.before);
        self.json_string(text);
        self.bytes.put_slice(&template.after);
        self.bytes.put_slice(b"\n\n");
    }

    /// Events already written out in the SSE format (stored ones, sent again as they were).
    pub(crate) fn raw(&mut self, bytes: &[u8]) {
        self.bytes.put_slice(bytes);
    }

    /// An unnamed event whose data is `text`, a single line (`[DONE]`).
    pub(crate) fn text(&mut self, text: &str) {
        debug_assert!(
            !text.contains(['\n', '\r']),
            "SSE data on one line: {text:?}"
        );
        self.bytes.put_slice(b"data: ");
        self.bytes.put_slice(text.as_bytes());
        self.bytes.put_slice(b"\n\n");
    }

    /// `data: <json>\n\n`. Compact JSON holds no line break (strings escape theirs), so one
    /// `data:` line carries it. A value that cannot be serialised (never one of ours) is
    /// sent as an event without data, as an empty string was before.
    fn json_data(&mut self, data: &impl Serialize) {
        let start = self.bytes.len();
        self.bytes.put_slice(b"data: ");
        if serde_json::to_writer((&mut self.bytes).writer(), data).is_ok() {
            self.bytes.put_slice(b"\n\n");
        } else {
            self.bytes.truncate(start);
            self.bytes.put_u8(b'\n');
        }
    }

    /// Room for at least one more event in the buffer, made a [`BUFFER_BYTES`] buffer at a
    /// time: for a writer whose taken bytes are kept a while (a run's record keeps its frames
    /// until they are stored), so that the buffer is not outgrown an event at a time.
    pub(crate) fn make_room(&mut self) {
        if self.bytes.capacity() - self.bytes.len() < EVENT_BYTES {
            self.bytes.reserve(BUFFER_BYTES);
        }
    }

    /// How many bytes are written and not taken yet.
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// What was written since the last take, as one chunk; the buffer's spare room (or the
    /// whole allocation, once the chunks sent from it are dropped) is reused.
    pub(crate) fn take(&mut self) -> Bytes {
        self.bytes.split().freeze()
    }
}

/// A `text/event-stream` answer (`Cache-Control: no-cache`) whose events are what `encode`
/// writes for each item of `items`.
pub(crate) fn response<S, F>(items: S, encode: F) -> Response
where
    S: Stream + Send + 'static,
    F: FnMut(S::Item, &mut Frames) + Send + Unpin + 'static,
{
    let body = EventBody {
        items: WakeGated::new(Box::pin(items)),
        encode,
        frames: Frames::default(),
        ended: false,
        gather: Gather::new(),
    };
    let mut response = Body::new(body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The body of [`response`]: polls the items while they are ready, then sends what they wrote.
///
/// The connection polls its body whenever its task runs (after each write, for its reads),
/// and polling a stream that is not ready can cost as much as taking an item from it (an
/// agent's run is polled through every layer down to the provider's socket). So once the items
/// are pending, they are polled again only after they have woken the task.
struct EventBody<S, F> {
    items: WakeGated<Pin<Box<S>>>,
    encode: F,
    frames: Frames,
    ended: bool,
    gather: Gather,
}

impl<S, F> HttpBody for EventBody<S, F>
where
    S: Stream,
    F: FnMut(S::Item, &mut Frames) + Unpin,
{
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        while !this.ended && this.frames.len() < BATCH_BYTES {
            match this.items.poll_next_gated(cx) {
                Poll::Ready(Some(item)) => {
                    if this.frames.len() == 0 {
                        this.frames.bytes.reserve(EVENT_BYTES);
                    } else {
                        this.gather.joined();
                    }
                    (this.encode)(item, &mut this.frames);
                }
                Poll::Ready(None) => this.ended = true,
                Poll::Pending => break,
            }
        }
        if this.frames.len() > 0 {
            if this.ended || this.frames.len() >= BATCH_BYTES {
                this.gather.send();
            } else if this.gather.wait(cx) {
                return Poll::Pending;
            }
            Poll::Ready(Some(Ok(Frame::data(this.frames.take()))))
        } else if this.ended {
            Poll::Ready(None)
        } else {
            Poll::Pending
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended && self.frames.len() == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures::StreamExt as _;
    use http_body_util::BodyExt as _;

    use super::*;

    async fn chunks(response: Response) -> Vec<Bytes> {
        let mut body = response.into_body();
        let mut chunks = Vec::new();
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame.expect("an infallible body").into_data() {
                chunks.push(data);
            }
        }
        chunks
    }

    #[tokio::test]
    async fn ready_events_go_out_as_one_chunk_in_the_sse_format() {
        let items = futures::stream::iter([1, 2]).chain(futures::stream::once(async { 0 }));
        let response = response(items, |n: u32, frames| match n {
            0 => frames.text("[DONE]"),
            1 => frames.event("count", &serde_json::json!({"n": n, "line": "a\nb"})),
            _ => frames.data(&n),
        });
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "text/event-stream"
        );
        assert_eq!(response.headers()[header::CACHE_CONTROL], "no-cache");
        let chunks = chunks(response).await;
        let text: Vec<&[u8]> = chunks.iter().map(|chunk| &chunk[..]).collect();
        assert_eq!(
            text,
            [
                &b"event: count\ndata: {\"line\":\"a\\nb\",\"n\":1}\n\ndata: 2\n\ndata: [DONE]\n\n"
                    [..]
            ]
        );
    }

    #[test]
    fn a_template_gives_the_json_of_the_value_it_was_rendered_from() {
        let render =
            |text: String| serde_json::json!({"id": "c-1", "choices": [{"content": text}], "n": 2});
        let template = TextTemplate::new(render).expect("the mark is in the value once");
        for text in ["w1 ", "a \"quoted\"\nline \u{1}", ""] {
            let mut templated = Frames::default();
            templated.data_in(&template, text);
            let mut serialised = Frames::default();
            serialised.data(&render(text.to_owned()));
            assert_eq!(templated.take(), serialised.take());
        }
        assert!(TextTemplate::new(|text: String| [text.clone(), text]).is_none());
    }

    #[tokio::test]
    async fn events_that_come_apart_go_out_apart() {
        let (sender, receiver) = futures::channel::mpsc::unbounded::<u32>();
        let mut body = response(receiver, |n, frames| frames.data(&n)).into_body();
        sender.unbounded_send(1).expect("open");
        let first = body.frame().await.expect("a frame").expect("infallible");
        assert_eq!(first.into_data().expect("data"), "data: 1\n\n");
        sender.unbounded_send(2).expect("open");
        drop(sender);
        let second = body.frame().await.expect("a frame").expect("infallible");
        assert_eq!(second.into_data().expect("data"), "data: 2\n\n");
        assert!(body.frame().await.is_none());
    }

    /// A stream that a task of its own fills one item at a time, through a one-slot channel
    /// (as a provider's connection hands over what one read brought); the items after the
    /// first are sent only once `go` is sent, and the stream ends after `last`.
    fn handed_over(last: u32) -> (tokio::sync::oneshot::Sender<()>, impl Stream<Item = u32>) {
        let (go, wait) = tokio::sync::oneshot::channel();
        let (sender, mut receiver) = tokio::sync::mpsc::channel(1);
        tokio::spawn(async move {
            sender.send(1).await.expect("open");
            wait.await.expect("told to go on");
            for n in 2..=last {
                sender.send(n).await.expect("open");
            }
        });
        (
            go,
            futures::stream::poll_fn(move |cx| receiver.poll_recv(cx)),
        )
    }

    /// On one worker, as `skein serve --workers 1` runs, and read by a task of its own, as
    /// a connection reads its response's body.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_burst_handed_over_one_at_a_time_goes_out_as_one_chunk() {
        let (go, items) = handed_over(7);
        let mut body = response(items, |n, frames| frames.data(&n)).into_body();
        let reader = tokio::spawn(async move {
            let mut go = Some(go);
            let mut chunks = Vec::new();
            while let Some(frame) = body.frame().await {
                chunks.push(frame.expect("infallible").into_data().expect("data"));
                if let Some(go) = go.take() {
                    go.send(()).expect("the producer waits");
                }
            }
            chunks
        });
        let chunks = reader.await.expect("the reader ends");
        // The first two chunks go at once (an answer's opening and its first delta).
        assert_eq!(
            chunks,
            [
                "data: 1\n\n",
                "data: 2\n\n",
                "data: 3\n\ndata: 4\n\ndata: 5\n\ndata: 6\n\ndata: 7\n\n"
            ]
        );
    }

    #[tokio::test]
    async fn a_held_chunk_goes_out_when_nothing_more_comes() {
        async fn next_chunk(body: &mut Body) -> Bytes {
            tokio::time::timeout(std::time::Duration::from_secs(10), body.frame())
                .await
                .expect("a chunk is not held until more comes")
                .expect("a frame")
                .expect("infallible")
                .into_data()
                .expect("data")
        }
        let (go, items) = handed_over(2);
        let never_ends = items.chain(futures::stream::pending());
        let mut body = response(never_ends, |n, frames| frames.data(&n)).into_body();
        assert_eq!(next_chunk(&mut body).await, "data: 1\n\n");
        go.send(()).expect("the producer waits");
        assert_eq!(next_chunk(&mut body).await, "data: 2\n\n");
    }

    #[test]
    fn pending_items_are_polled_again_only_once_they_woke_the_task() {
        let polls = Arc::new(AtomicUsize::new(0));
        let (sender, mut receiver) = futures::channel::mpsc::unbounded::<u32>();
        let counted = futures::stream::poll_fn({
            let polls = Arc::clone(&polls);
            move |cx| {
                polls.fetch_add(1, Ordering::Relaxed);
                receiver.poll_next_unpin(cx)
            }
        });
        let mut body = response(counted, |n, frames| frames.data(&n)).into_body();
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(Pin::new(&mut body).poll_frame(&mut cx).is_pending());
        assert!(Pin::new(&mut body).poll_frame(&mut cx).is_pending());
        assert_eq!(
            polls.load(Ordering::Relaxed),
            1,
            "polled again without a wake"
        );
        sender.unbounded_send(7).expect("open");
        let Poll::Ready(Some(Ok(frame))) = Pin::new(&mut body).poll_frame(&mut cx) else {
            panic!("the item that woke the task is not sent");
        };
        assert_eq!(frame.into_data().expect("data"), "data: 7\n\n");
        assert_eq!(
            polls.load(Ordering::Relaxed),
            3,
            "the item, then pending again"
        );
    }

    #[tokio::test]
    async fn a_long_burst_is_cut_near_the_batch_size() {
        let text = "x".repeat(1000);
        let items = futures::stream::iter(0..100);
        let chunks = chunks(response(items, move |_, frames| frames.data(&text))).await;
        assert!(chunks.len() > 1, "one chunk of {} bytes", chunks[0].len());
        for chunk in &chunks {
            assert!(chunk.len() < BATCH_BYTES + 1100, "{} bytes", chunk.len());
        }
        let total: usize = chunks.iter().map(Bytes::len).sum();
        assert_eq!(total, 100 * "data: \"\"\n\n".len() + 100 * 1000);
    }
}
