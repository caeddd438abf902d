use std::time::Duration;

use messages::{ContentPart, ToolCall};
use serde_json::Value;

use crate::{Source, ToolError};

/// A tool call starting or finishing, reported while a round runs.
///
/// Every call the chain dispatches produces one `Started` and then one `Finished` (unknown
/// tools and bad input included: they finish at once with their error). Calls skipped because
/// the run was cancelled before they started produce neither. Events of concurrent calls
/// interleave; `index` is the call's position in the round.
#[derive(Debug)]
pub enum ToolEvent<'a> {
    /// The call is about to run.
    Started {
        /// Position of the call in the round.
        index: usize,
        /// The call, with the provider's id (text chains mint `call_1`, `call_2`, …).
        call: &'a ToolCall,
    },
    /// The call finished.
    Finished {
        /// Position of the call in the round.
        index: usize,
        /// The call.
        call: &'a ToolCall,
        /// The tool's output, or why there is none.
        outcome: Result<&'a Value, &'a ToolError>,
        /// Media the call returned (after the media transform).
        media: &'a [ContentPart],
        /// The sources the call found (none when it failed).
        sources: &'a [Source],
        /// The text the model will read for this call (output or error).
        content: &'a str,
        /// How long the call took.
        duration: Duration,
    },
}

/// Receives [`ToolEvent`]s as calls start and finish, e.g. to stream `tool.start` /
/// `tool.done` events to a client.
///
/// Called synchronously on the task running the round, so it should be quick: push to a
/// channel rather than do I/O. Closures `Fn(&ToolEvent<'_>)` implement it, and `()` ignores
/// everything.
///
/// ```
/// use std::sync::Mutex;
/// use toolchain::{ToolEvent, ToolObserver};
///
/// let log = Mutex::new(Vec::new());
/// let observer = |event: &ToolEvent<'_>| {
///     if let ToolEvent::Finished { call, content, .. } = event {
///         log.lock().unwrap().push(format!("{}: {content}", call.name));
///     }
/// };
/// # fn takes(_: &dyn ToolObserver) {}
/// takes(&observer);
/// ```
pub trait ToolObserver: Send + Sync {
    /// Called for each event, in the order they happen.
    fn on_event(&self, event: &ToolEvent<'_>);
}

impl<F> ToolObserver for F
where
    F: Fn(&ToolEvent<'_>) + Send + Sync,
{
    fn on_event(&self, event: &ToolEvent<'_>) {
        self(event);
    }
}

impl ToolObserver for () {
    fn on_event(&self, _: &ToolEvent<'_>) {}
}

/// Rewrites media parts between the tool and the model, e.g. to downscale screenshots or drop
/// formats a provider does not take.
///
/// Closures `Fn(&str, ContentPart) -> Option<ContentPart>` implement it; the first argument is
/// the tool's name, `None` drops the part.
///
/// ```
/// use toolchain::{ContentPart, MediaTransform};
///
/// let only_png = |_tool: &str, part: ContentPart| match &part {
///     ContentPart::Binary { mime_type, .. } if mime_type != "image/png" => None,
///     _ => Some(part),
/// };
/// assert!(only_png.transform("screenshot", ContentPart::binary("image/bmp", vec![0])).is_none());
/// ```
pub trait MediaTransform: Send + Sync {
    /// The part to pass on in place of `part`, or `None` to drop it.
    fn transform(&self, tool: &str, part: ContentPart) -> Option<ContentPart>;
}

impl<F> MediaTransform for F
where
    F: Fn(&str, ContentPart) -> Option<ContentPart> + Send + Sync,
{
    fn transform(&self, tool: &str, part: ContentPart) -> Option<ContentPart> {
        self(tool, part)
    }
}
