//! OpenRouter's stream: Chat Completions chunks, with upstream failures reported in-band.

use crate::assemble::Chunk;
use crate::http::sse::EventParser;
use crate::openai::stream::ChatStreamParser;
use crate::{Provider, ProviderError, http};

/// The Chat stream parser, with in-stream errors judged by their numeric code.
#[derive(Debug, Default)]
pub(crate) struct StreamParser(ChatStreamParser);

impl EventParser for StreamParser {
    const FINISH_REASON_COMPLETES: bool = ChatStreamParser::FINISH_REASON_COMPLETES;
    const MISSING_END: &'static str = ChatStreamParser::MISSING_END;

    fn parse(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        self.0.parse(event, data, out).map_err(retryable_by_code)
    }
}

/// OpenRouter puts the upstream HTTP status in an in-stream error's `code` (`{"error":
/// {"code": 502, "message": "Provider returned error"}}` after a 200): the same failure as an
/// HTTP 502, so retried like one. Errors of the shared Chat parser are OpenRouter's here.
pub(crate) fn retryable_by_code(mut error: ProviderError) -> ProviderError {
    match &mut error {
        ProviderError::Stream {
            provider,
            error_type,
            retryable,
            ..
        } => {
            *provider = Provider::OpenRouter;
            let status = error_type
                .as_deref()
                .and_then(|code| code.parse::<u16>().ok());
            *retryable |= status.is_some_and(http::retryable_status);
        }
        ProviderError::Decode { provider, .. } => *provider = Provider::OpenRouter,
        // The rest come from the shared SSE driver, which already names OpenRouter.
        _ => {}
    }
    error
}
