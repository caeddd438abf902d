//! [`EchoEmbedding`]: the offline `echo` embedding model.

use async_trait::async_trait;
use sha2::{Digest as _, Sha256};

use super::{EmbeddingInput, EmbeddingModel, EmbeddingRequest, Embeddings};
use crate::{ECHO_MODEL_ID, Provider, ProviderError};

/// The vectors' length when a request names none.
pub const ECHO_DEFAULT_DIMENSIONS: u32 = 16;
/// The longest vector it makes (OpenAI's largest model has 3072).
pub const ECHO_MAX_DIMENSIONS: u32 = 4096;

/// The `echo` embedding model: no key, no network. Each input is hashed (SHA-256) into a
/// unit vector of the requested dimensions ([`ECHO_DEFAULT_DIMENSIONS`] by default), so the
/// same input always gives the same vector, on every machine, and different inputs almost
/// surely different ones. Usage counts whitespace-separated words (a token array: its
/// tokens), as the `echo` chat model counts them.
#[derive(Clone, Copy, Debug, Default)]
pub struct EchoEmbedding;

#[async_trait]
impl EmbeddingModel for EchoEmbedding {
    fn model_id(&self) -> &str {
        ECHO_MODEL_ID
    }

    async fn embed(&self, request: &EmbeddingRequest) -> Result<Embeddings, ProviderError> {
        let dimensions = request.dimensions.unwrap_or(ECHO_DEFAULT_DIMENSIONS);
        if dimensions == 0 || dimensions > ECHO_MAX_DIMENSIONS {
            return Err(ProviderError::Unsupported {
                provider: Provider::OpenAi,
                what: format!(
                    "{dimensions} dimensions: `echo` makes vectors of 1 to {ECHO_MAX_DIMENSIONS}"
                ),
            });
        }
        let (vectors, tokens) = match &request.input {
            EmbeddingInput::Texts(texts) => (
                texts
                    .iter()
                    .map(|text| unit_vector(text.as_bytes(), dimensions))
                    .collect(),
                texts
                    .iter()
                    .map(|text| text.split_whitespace().count())
                    .sum::<usize>(),
            ),
            EmbeddingInput::Tokens(arrays) => (
                arrays
                    .iter()
                    .map(|tokens| {
                        let bytes: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
                        unit_vector(&bytes, dimensions)
                    })
                    .collect(),
                arrays.iter().map(Vec::len).sum::<usize>(),
            ),
        };
        Ok(Embeddings {
            vectors,
            input_tokens: u64::try_from(tokens).unwrap_or(u64::MAX),
        })
    }
}

/// `input` hashed into a unit vector of `dimensions`: SHA-256 of the input, then SHA-256 of
/// that digest and a block counter for every eight components (four bytes each, read as a
/// value in [-1, 1]), scaled to length 1.
fn unit_vector(input: &[u8], dimensions: u32) -> Vec<f32> {
    let seed = Sha256::digest(input);
    let mut vector = Vec::with_capacity(dimensions as usize);
    let mut block: u32 = 0;
    while vector.len() < dimensions as usize {
        let digest = Sha256::new()
            .chain_update(seed)
            .chain_update(block.to_le_bytes())
            .finalize();
        for word in digest.chunks_exact(4) {
            let bits = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
            // An integer below 2^24 is exact in an f32.
            let unit = (bits >> 8) as f32 / ((1u32 << 24) - 1) as f32;
            vector.push(unit * 2.0 - 1.0);
        }
        block += 1;
    }
    vector.truncate(dimensions as usize);
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in &mut vector {
            *x /= norm;
        }
    }
    vector
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_deterministic_unit_vectors() {
        let a = unit_vector(b"Hello", 3);
        assert_eq!(a, unit_vector(b"Hello", 3));
        assert_ne!(a, unit_vector(b"Hello!", 3));
        let norm: f32 = a.iter().map(|x| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-6, "{norm}");
        // Longer vectors start with other components (rescaled), never repeat a block.
        let long = unit_vector(b"Hello", 20);
        assert_eq!(long.len(), 20);
        assert_ne!(long[..8], long[8..16]);
    }
}
