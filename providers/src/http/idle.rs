//! [`IdleBody`]: a response body that ends with a timeout after a silence.

use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use http_body::Body as _;
use tokio::time::{Instant, Sleep};

use super::transport_error;
use crate::{Provider, ProviderError, TimeoutPhase};

/// A response body as a stream of byte chunks; a silence longer than `idle` ends it with
/// [`ProviderError::Timeout`] (phase [`TimeoutPhase::Idle`]).
///
/// A streamed answer brings a chunk every few milliseconds, so the timer is not moved per
/// chunk (a timer-wheel update under its lock, each time): a chunk only notes when it came,
/// and the timer, when it fires, is moved to `idle` after the last chunk if one came since.
pub(super) struct IdleBody {
    provider: Provider,
    body: reqwest::Body,
    idle: Duration,
    /// Fires at the latest `idle` after the last chunk (earlier, then moved).
    silence: Pin<Box<Sleep>>,
    /// When the last chunk (or the response's head) came.
    heard: Instant,
    ended: bool,
}

impl IdleBody {
    pub(super) fn new(provider: Provider, body: reqwest::Body, idle: Duration) -> Self {
        let heard = Instant::now();
        IdleBody {
            provider,
            body,
            idle,
            silence: Box::pin(tokio::time::sleep_until(heard + idle)),
            heard,
            ended: false,
        }
    }
}

impl Stream for IdleBody {
    type Item = Result<Bytes, ProviderError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        while !this.ended {
            match Pin::new(&mut this.body).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    this.heard = Instant::now();
                    // Trailers carry no answer: skipped.
                    if let Ok(bytes) = frame.into_data() {
                        return Poll::Ready(Some(Ok(bytes)));
                    }
                    continue;
                }
                Poll::Ready(Some(Err(err))) => {
                    this.ended = true;
                    return Poll::Ready(Some(Err(transport_error(
                        this.provider,
                        Duration::ZERO,
                        err,
                    ))));
                }
                Poll::Ready(None) => this.ended = true,
                Poll::Pending => {
                    ready!(this.silence.as_mut().poll(cx));
                    let deadline = this.heard + this.idle;
                    if deadline <= Instant::now() {
                        this.ended = true;
                        return Poll::Ready(Some(Err(ProviderError::Timeout {
                            provider: this.provider,
                            phase: TimeoutPhase::Idle,
                            after: this.idle,
                        })));
                    }
                    // Chunks came since the timer was set: it waits for the rest of the silence
                    // allowed after the last one (polled again by the loop, so it wakes us).
                    this.silence.as_mut().reset(deadline);
                }
            }
        }
        Poll::Ready(None)
    }
}
