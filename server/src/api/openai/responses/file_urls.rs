//! `input_file` parts given by `file_url`, fetched before the request is planned: no Skein
//! part carries a file by URL (an image URL is an image to every provider), and every provider
//! takes the bytes, so the file is fetched once, under the service's media fetching rules
//! (public addresses only unless the operator allows a host, size and time limits), and sent
//! inline as if the client had sent `file_data`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use tools::MediaFetcher;

use crate::api::openai::error::OpenAiError;

/// Replaces the `file_url` of each `input_file` part of `input` without `file_data` by the
/// fetched file as a `data:` URL.
pub(crate) async fn fetch_file_urls(
    fetcher: &MediaFetcher,
    input: Option<&mut Value>,
) -> Result<(), OpenAiError> {
    let Some(Value::Array(items)) = input else {
        return Ok(());
    };
    for (index, item) in items.iter_mut().enumerate() {
        let Some(Value::Array(parts)) = item.get_mut("content") else {
            continue;
        };
        for (part_index, part) in parts.iter_mut().enumerate() {
            let Value::Object(part) = part else { continue };
            if part.get("type").and_then(Value::as_str) != Some("input_file")
                || part.get("file_data").is_some_and(|data| !data.is_null())
            {
                continue;
            }
            let Some(url) = part.get("file_url").and_then(Value::as_str) else {
                continue;
            };
            let field = format!("input[{index}].content[{part_index}].file_url");
            let fetched = fetcher.fetch(url).await.map_err(|error| {
                OpenAiError::invalid(field.clone(), format!("`{field}`: {error}"))
            })?;
            let media_type = fetched
                .content_type
                .unwrap_or_else(|| "application/octet-stream".to_owned());
            let data = format!(
                "data:{media_type};base64,{}",
                STANDARD.encode(&fetched.bytes)
            );
            part.remove("file_url");
            part.insert("file_data".into(), Value::String(data));
        }
    }
    Ok(())
}
