//! The request and answer of `POST /v1/embeddings`, in OpenAI's shapes.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// Most inputs in one request (OpenAI's own limit).
pub(crate) const MAX_INPUTS: usize = 2048;

/// The request.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingsRequest {
    /// What to embed: a string, an array of strings, an array of token ids, or an array of
    /// token-id arrays (OpenAI models only). At most 2048 inputs, none empty.
    #[schema(schema_with = input_schema)]
    pub input: Value,
    /// The embedding model: `echo` (offline), an OpenAI model (`text-embedding-3-small`, …) or
    /// a Gemini one (`gemini-embedding-001`, …).
    pub model: String,
    /// `float` (the default) or `base64` (little-endian 32-bit floats).
    #[serde(default)]
    pub encoding_format: Option<EncodingFormat>,
    /// The vectors' length, for models that can shorten theirs.
    #[serde(default)]
    #[schema(minimum = 1)]
    pub dimensions: Option<u32>,
    /// The end user, passed on to OpenAI.
    #[serde(default)]
    pub user: Option<String>,
}

/// Its unknown fields are refused while it is read (`deny_unknown_fields`).
impl crate::api::body::KeepsUnknown for EmbeddingsRequest {}

/// How vectors are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum EncodingFormat {
    /// JSON numbers.
    #[default]
    Float,
    /// Base64 of the little-endian 32-bit floats.
    Base64,
}

/// The answer.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct EmbeddingList {
    /// Always `list`.
    pub object: &'static str,
    /// One per input, in order.
    pub data: Vec<EmbeddingObject>,
    /// The model, as the request named it.
    pub model: String,
    /// Tokens used.
    pub usage: EmbeddingUsage,
}

/// One vector.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct EmbeddingObject {
    /// Always `embedding`.
    pub object: &'static str,
    /// The input's position.
    pub index: usize,
    /// The vector: numbers, or a base64 string with `encoding_format: base64`.
    #[schema(value_type = Object)]
    pub embedding: Value,
}

/// Tokens used.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct EmbeddingUsage {
    /// Tokens of the inputs (0 where the provider counts none: Gemini).
    pub prompt_tokens: u64,
    /// The same: embeddings generate nothing.
    pub total_tokens: u64,
}

/// `input`'s schema: one of the four shapes OpenAI takes.
fn input_schema() -> utoipa::openapi::Schema {
    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, Type};

    let text = || {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
    };
    let token = || {
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(0))
            .maximum(Some(u32::MAX))
    };
    let array = |items: Schema| {
        ArrayBuilder::new()
            .items(RefOr::T(items))
            .min_items(Some(1))
            .max_items(Some(MAX_INPUTS))
    };
    OneOfBuilder::new()
        .item(text())
        .item(array(Schema::Object(text().build())))
        .item(array(Schema::Object(token().build())))
        .item(array(Schema::Array(
            array(Schema::Object(token().build())).build(),
        )))
        .description(Some(
            "A string, an array of strings, an array of token ids, or an array of token-id \
             arrays",
        ))
        .build()
        .into()
}
