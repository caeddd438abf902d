//! A model's answer as it streams, logged as it passes.

use std::pin::Pin;
use std::task::{Context, Poll, Waker, ready};

use agent_loop::CancellationToken;
use conversation_tree::{NodeId, ResponseStatus};
use futures::stream::BoxStream;
use futures::{Future as _, Stream, StreamExt as _};
use providers::{ProviderError, StreamEvent};
use tokio::sync::oneshot;
use tokio_util::sync::WaitForCancellationFutureOwned;

use super::Meter;
use super::answer::{Events, Failure, PendingLog, Stopped};

/// `events` logged as they pass, `meter` noting their first output and usage: the item that ends them (`Done`, a failure, or the
/// cancellation `cancel` asks for) is passed on only after the log holds the answer and how it
/// ended (and `told` knows its node). A stream dropped before its end (the client went away)
/// is logged as cancelled.
pub(super) fn logged(
    events: BoxStream<'static, Result<StreamEvent, ProviderError>>,
    pending: PendingLog,
    meter: Meter,
    told: oneshot::Sender<NodeId>,
    cancel: CancellationToken,
) -> Events {
    Box::pin(Logged {
        events,
        pending,
        meter,
        told: Some(told),
        cancelled: Box::pin(cancel.clone().cancelled_owned()),
        cancelled_waker: None,
        cancel,
        ending: None,
        ended: false,
    })
}

/// The stream of [`logged`]. One value across the answer: its cancellation is waited for by
/// one future registered once, and nothing is moved from item to item.
struct Logged {
    events: BoxStream<'static, Result<StreamEvent, ProviderError>>,
    pending: PendingLog,
    /// Notes the first output (for the tree's log and the caller's) and the usage.
    meter: Meter,
    told: Option<oneshot::Sender<NodeId>>,
    cancel: CancellationToken,
    /// Wakes the stream when `cancel` is cancelled while the provider is silent.
    cancelled: Pin<Box<WaitForCancellationFutureOwned>>,
    /// The waker `cancelled` holds, once it is waiting.
    cancelled_waker: Option<Waker>,
    /// The last item, held until its log is written.
    ending: Option<Ending>,
    ended: bool,
}

/// The item that ends the answer, and the log being written (`None` when nothing is logged).
struct Ending {
    item: Result<StreamEvent, Stopped>,
    written: Option<oneshot::Receiver<Option<NodeId>>>,
}

impl Logged {
    /// Ready once the answer is cancelled; pending with the task's waker left to wake it then.
    ///
    /// Polled after every event the provider is silent after, so it is polled only when the
    /// waker changed: a poll of the cancellation takes its lock, and the connection polls the
    /// stream with the same waker from event to event.
    fn poll_cancelled(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if let Some(waker) = &self.cancelled_waker
            && waker.will_wake(cx.waker())
        {
            return if self.cancel.is_cancelled() {
                Poll::Ready(())
            } else {
                Poll::Pending
            };
        }
        let polled = self.cancelled.as_mut().poll(cx);
        if polled.is_pending() {
            self.cancelled_waker = Some(cx.waker().clone());
        }
        polled
    }
}

impl Stream for Logged {
    type Item = Result<StreamEvent, Stopped>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.ended {
            return Poll::Ready(None);
        }
        if this.ending.is_none() {
            let next = match this.events.poll_next_unpin(cx) {
                // A cancellation wins over an event that came with it, as if it came first.
                Poll::Ready(_) if this.cancel.is_cancelled() => None,
                Poll::Ready(next) => Some(next),
                Poll::Pending => {
                    ready!(this.poll_cancelled(cx));
                    None
                }
            };
            let item = match next {
                None => Err(Stopped::Cancelled),
                Some(Some(Ok(event))) => {
                    this.meter.see(&event);
                    this.pending.answer.push_ref(&event);
                    if !this.pending.answer.is_done() {
                        return Poll::Ready(Some(Ok(event)));
                    }
                    Ok(event)
                }
                // A stream that already began can only report its failure in-band.
                Some(Some(Err(error))) => Err(Stopped::Failed(Failure::Provider(error))),
                Some(None) => Err(Stopped::Failed(Failure::Provider(
                    ProviderError::StreamTruncated {
                        provider: None,
                        detail: "the provider's stream ended before the answer was whole".into(),
                    },
                ))),
            };
            let status = match &item {
                Ok(_) => ResponseStatus::Completed,
                Err(stopped) => stopped.status(),
            };
            let written = this.pending.write(status, None);
            this.ending = Some(Ending { item, written });
        }
        let Some(Ending { written, .. }) = &mut this.ending else {
            unreachable!("the ending was just set");
        };
        if let Some(written) = written {
            let node = ready!(Pin::new(written).poll(cx)).ok().flatten();
            if let (Some(node), Some(told)) = (node, this.told.take()) {
                let _ = told.send(node);
            }
        }
        this.ended = true;
        Poll::Ready(this.ending.take().map(|ending| ending.item))
    }
}
