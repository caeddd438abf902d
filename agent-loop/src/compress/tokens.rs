//! [`TokenCounter`]: how many tokens a message costs a model.

use std::fmt;

use messages::{ContentPart, Message};
use providers::ModelInfo;
#[cfg(feature = "tiktoken")]
use providers::Provider;

/// Bytes of text per token assumed where no tokenizer is available (Anthropic, Gemini,
/// OpenAI-compatible servers, unknown models).
///
/// Calibrated against tiktoken's `o200k_base` (the test `calibration_overestimates_o200k`
/// prints the figures): over 265 KB of this project's text — seeds, reference notes, provider
/// fixture READMEs, SSE and JSON fixtures, Rust source — `o200k_base` averages 3.85 bytes per
/// token (English prose 4.9, Markdown tables 3.2–3.8, JSON 3.3, SSE with base64 signatures
/// 1.8, box-drawing diagrams 6.0). At 3.4 the estimate overestimates `o200k_base` by 13 % on
/// that corpus. Counting high is deliberate: the other providers' tokenizers have smaller
/// vocabularies than `o200k_base` and need more tokens for the same text, and an estimate that
/// is high starts compression a little early rather than overflowing the window. The test
/// fails if the ratio leaves 1.0–1.35.
pub const ESTIMATED_BYTES_PER_TOKEN: f64 = 3.4;

/// Tokens added per message for its role and framing (OpenAI documents 3 to 4).
pub const MESSAGE_OVERHEAD_TOKENS: usize = 4;

/// Tokens assumed per image, whatever its size: Anthropic's cost of a 1.15 megapixel image,
/// more than OpenAI's (765 at high detail, 1024²) or Gemini's (258). An image's URL or bytes are
/// never counted as text: a `data:` URL would count as hundreds of thousands of tokens.
pub const IMAGE_TOKENS: usize = 1_600;

/// Counts tokens of messages for one model: exactly with tiktoken for OpenAI models it knows
/// (feature `tiktoken`), else by [`ESTIMATED_BYTES_PER_TOKEN`].
///
/// Text, tool calls (name and arguments), tool results and reasoning text are counted;
/// signatures and encrypted reasoning are opaque to the model and are not. Each message adds
/// [`MESSAGE_OVERHEAD_TOKENS`]; each image [`IMAGE_TOKENS`]; other binary parts (PDFs, audio)
/// count their size in bytes by the estimate.
///
/// ```
/// use agent_loop::TokenCounter;
/// use messages::Message;
/// use providers::{ModelInfo, Provider};
///
/// let claude = TokenCounter::for_model(&ModelInfo::lookup(Provider::Anthropic, "claude-sonnet-4"));
/// assert!(!claude.is_exact());
/// // 34 bytes of text: ceil(34 / 3.4) = 10 tokens, plus the message overhead.
/// assert_eq!(claude.count(&Message::human("What is the capital city of France")), 10 + 4);
/// ```
#[derive(Clone, Copy)]
pub struct TokenCounter {
    #[cfg(feature = "tiktoken")]
    bpe: Option<&'static tiktoken_rs::CoreBPE>,
}

impl TokenCounter {
    /// The counter for `model`: tiktoken's encoding for OpenAI models tiktoken knows, the
    /// estimate for everything else.
    pub fn for_model(model: &ModelInfo) -> TokenCounter {
        #[cfg(feature = "tiktoken")]
        {
            let bpe = (model.provider == Provider::OpenAi)
                .then(|| tiktoken_rs::tokenizer::get_tokenizer(&model.id.to_ascii_lowercase()))
                .flatten()
                .and_then(|tokenizer| tiktoken_rs::bpe_for_tokenizer(tokenizer).ok());
            TokenCounter { bpe }
        }
        #[cfg(not(feature = "tiktoken"))]
        {
            let _ = model;
            TokenCounter::estimate()
        }
    }

    /// Builds tiktoken's encodings now (o200k for current OpenAI models, cl100k for older ones)
    /// instead of on the first count: building one takes ~0.2 s of CPU, which a server should
    /// spend at start, on a blocking thread, rather than inside its first answer.
    /// Without the `tiktoken` feature there is nothing to build.
    pub fn preload() {
        #[cfg(feature = "tiktoken")]
        for model in ["gpt-4o", "gpt-4"] {
            let _ = TokenCounter::for_model(&ModelInfo::lookup(providers::Provider::OpenAi, model));
        }
    }

    /// The calibrated estimate, for any model.
    pub fn estimate() -> TokenCounter {
        TokenCounter {
            #[cfg(feature = "tiktoken")]
            bpe: None,
        }
    }

    /// Whether counts come from the model's own tokenizer.
    pub fn is_exact(&self) -> bool {
        #[cfg(feature = "tiktoken")]
        {
            self.bpe.is_some()
        }
        #[cfg(not(feature = "tiktoken"))]
        {
            false
        }
    }

    /// Tokens of one text.
    pub fn text(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        #[cfg(feature = "tiktoken")]
        if let Some(bpe) = self.bpe {
            return bpe.encode_ordinary(text).len();
        }
        estimate_bytes(text.len())
    }

    /// Tokens of one message, overhead included.
    pub fn count(&self, message: &Message) -> usize {
        MESSAGE_OVERHEAD_TOKENS + self.parts(&message.parts)
    }

    /// Tokens of some parts (no message overhead).
    pub fn parts(&self, parts: &[ContentPart]) -> usize {
        parts.iter().map(|part| self.part(part)).sum()
    }

    fn part(&self, part: &ContentPart) -> usize {
        match part {
            ContentPart::Text { text, reasoning } => {
                self.text(text) + reasoning.as_ref().map_or(0, |r| self.text(&r.text))
            }
            ContentPart::ImageUrl { .. } => IMAGE_TOKENS,
            ContentPart::Binary { mime_type, .. } if mime_type.starts_with("image/") => {
                IMAGE_TOKENS
            }
            ContentPart::Binary { data, .. } => estimate_bytes(data.len()),
            ContentPart::Reasoning(reasoning) => self.text(&reasoning.text),
            ContentPart::ToolCall(call) => {
                self.text(&call.name)
                    + self.text(&call.arguments)
                    + call.reasoning.as_ref().map_or(0, |r| self.text(&r.text))
            }
            ContentPart::ToolResponse(response) => {
                self.text(&response.name) + self.text(&response.content)
            }
        }
    }
}

impl fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenCounter")
            .field("exact", &self.is_exact())
            .finish()
    }
}

/// The estimate for `bytes` bytes of text: rounded up, so any text is at least one token.
fn estimate_bytes(bytes: usize) -> usize {
    // Exact for any realistic size (below 2^52 bytes).
    (bytes as f64 / ESTIMATED_BYTES_PER_TOKEN).ceil() as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(feature = "tiktoken")]
    use providers::Provider;

    #[test]
    fn estimate_rounds_up_and_skips_media_bytes() {
        let counter = TokenCounter::estimate();
        assert_eq!(counter.text("a"), 1);
        assert_eq!(counter.text(""), 0);
        let image = Message::new(
            messages::Role::Human,
            vec![ContentPart::image_url(format!(
                "data:image/png;base64,{}",
                "A".repeat(1_000_000)
            ))],
        );
        assert_eq!(
            counter.count(&image),
            MESSAGE_OVERHEAD_TOKENS + IMAGE_TOKENS
        );
    }

    #[cfg(feature = "tiktoken")]
    #[test]
    fn openai_models_count_with_their_encoding() {
        let counter = TokenCounter::for_model(&ModelInfo::lookup(Provider::OpenAi, "gpt-4o"));
        assert!(counter.is_exact());
        // "hello world" is two o200k tokens.
        assert_eq!(counter.text("hello world"), 2);
        let unknown = TokenCounter::for_model(&ModelInfo::unknown(Provider::OpenAi, "llama-3"));
        assert!(!unknown.is_exact());
    }

    /// The calibration of [`ESTIMATED_BYTES_PER_TOKEN`]: over real documents the estimate
    /// stays above `o200k_base`'s count, by no more than 35 %.
    #[cfg(feature = "tiktoken")]
    #[test]
    fn calibration_overestimates_o200k() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let files = [
            "../shared/seeds/002_e1db3e74ac3d121f.txt",
            "../shared/seeds/004_d6043d305c256316.txt",
            "../shared/reference/pentagi_cast_and_gent.md",
            "providers/tests/fixtures/WIRE.md",
            "providers/tests/fixtures/anthropic/README.md",
            "providers/tests/fixtures/anthropic/stream_thinking_tool_use.sse",
            "providers/tests/fixtures/openai/README.md",
            "ARCHITECTURE.md",
            "chain-ast/src/summarize/mod.rs",
            "providers/tests/fixtures/openai/chat_tool_call.json",
            "providers/tests/fixtures/gemini/stream_function_call_signature.sse",
        ];
        let bpe = TokenCounter::for_model(&ModelInfo::lookup(Provider::OpenAi, "gpt-4o"));
        let estimate = TokenCounter::estimate();
        let (mut exact, mut estimated, mut bytes) = (0, 0, 0);
        for file in files {
            let Ok(text) = std::fs::read_to_string(format!("{root}/{file}")) else {
                continue;
            };
            let tokens = bpe.text(&text);
            eprintln!(
                "{file}: {} bytes, {tokens} o200k tokens, {:.2} bytes/token",
                text.len(),
                text.len() as f64 / tokens as f64
            );
            bytes += text.len();
            exact += tokens;
            estimated += estimate.text(&text);
        }
        assert!(bytes > 20_000, "the corpus is readable ({bytes} bytes)");
        let ratio = estimated as f64 / exact as f64;
        eprintln!(
            "corpus: {bytes} bytes, {exact} o200k tokens, {:.2} bytes/token; estimate {estimated} ({ratio:.3}x)",
            bytes as f64 / exact as f64
        );
        assert!(
            (1.0..1.35).contains(&ratio),
            "estimate / o200k = {ratio:.3}"
        );
    }
}
