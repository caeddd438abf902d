//! A non-streamed Messages answer → [`Chunk`]s, in the order a stream of it would give them,
//! so `complete` and [`collect`](crate::collect()) of `stream` agree.

use std::borrow::Cow;

use super::error::stream_error;
use super::wire::{PROVIDER, UsageTotals, WireMessage, close_block, finish_reason, open_block};
use crate::ProviderError;
use crate::assemble::Chunk;
use crate::http::sse::Skipped;

/// The chunks of a whole `message` body.
pub(crate) fn chunks(body: &str) -> Result<Vec<Chunk>, ProviderError> {
    let message: WireMessage<'_> = serde_json::from_str(body).map_err(|err| {
        ProviderError::decode(
            PROVIDER,
            format!("invalid JSON in a Messages answer: {err}"),
            body,
        )
    })?;
    if message.kind.0.as_deref() == Some("error") || message.error.is_some() {
        return Err(stream_error(message.error));
    }
    let mut out = vec![Chunk::Started {
        id: message.id.0.map(Cow::into_owned),
        model: message.model.0.map(Cow::into_owned),
    }];
    let mut skipped = Skipped::default();
    for (key, block) in message.content.into_iter().enumerate() {
        let state = open_block(key, block, &mut out, &mut skipped);
        close_block(key, state, &mut out);
    }
    if let Some(reason) = message.stop_reason.non_empty() {
        out.push(Chunk::Finish(finish_reason(&reason)));
    }
    if let Some(usage) = message.usage.0 {
        out.push(UsageTotals::default().update(usage));
    }
    out.push(Chunk::Done);
    Ok(out)
}
