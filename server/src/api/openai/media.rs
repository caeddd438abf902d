//! Media content parts of both OpenAI endpoints as Skein parts: images by URL or `data:` URL,
//! inline files and audio. Uploaded files (`file_id`) are refused by name: this server keeps
//! no files.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use messages::ContentPart;

use crate::api::openai::error::OpenAiError;

/// An image part at `field`: a `data:` URL decoded (kept as the URL when `detail` asks for a
/// resolution, which only a URL carries), any other URL passed on with its `detail`.
pub(crate) fn image(
    field: &str,
    url: &str,
    detail: Option<String>,
) -> Result<ContentPart, OpenAiError> {
    if !url.starts_with("data:") {
        let scheme_ok = ["https://", "http://", "gs://"].iter().any(|scheme| {
            url.get(..scheme.len())
                .is_some_and(|s| s.eq_ignore_ascii_case(scheme))
        });
        if !scheme_ok {
            return Err(OpenAiError::invalid(
                field,
                format!("`{field}` must be an `https:` URL or a `data:` URL"),
            ));
        }
        return Ok(ContentPart::ImageUrl {
            url: url.to_owned(),
            detail,
        });
    }
    let (media_type, bytes) = data_url(field, url)?;
    if detail.is_some() {
        return Ok(ContentPart::ImageUrl {
            url: url.to_owned(),
            detail,
        });
    }
    Ok(ContentPart::binary(media_type, bytes))
}

/// An inline file at `field`: `file_data` as a `data:` URL, or bare base64 whose type the
/// `filename`'s extension tells.
pub(crate) fn file_data(
    field: &str,
    data: &str,
    filename: Option<&str>,
) -> Result<ContentPart, OpenAiError> {
    if data.starts_with("data:") {
        let (media_type, bytes) = data_url(&format!("{field}.file_data"), data)?;
        return Ok(ContentPart::binary(media_type, bytes));
    }
    let Some(media_type) = filename.and_then(type_of_name) else {
        return Err(OpenAiError::invalid(
            format!("{field}.file_data"),
            format!(
                "`{field}.file_data` is bare base64 and {}, so its type is unknown; send \
                 `data:<type>;base64,…`",
                match filename {
                    Some(name) => format!("the extension of `{name}` names no known type"),
                    None => "there is no `filename`".to_owned(),
                }
            ),
        ));
    };
    let bytes = base64(&format!("{field}.file_data"), data)?;
    Ok(ContentPart::binary(media_type, bytes))
}

/// An `input_audio` part at `field`: base64 `data` in `format` (`wav` or `mp3`).
pub(crate) fn audio(field: &str, data: &str, format: &str) -> Result<ContentPart, OpenAiError> {
    let media_type = match format {
        "wav" => "audio/wav",
        "mp3" => "audio/mpeg",
        other => {
            return Err(OpenAiError::invalid(
                format!("{field}.input_audio.format"),
                format!("`{field}.input_audio.format` is `{other}`; use wav or mp3"),
            ));
        }
    };
    let bytes = base64(&format!("{field}.input_audio.data"), data)?;
    Ok(ContentPart::binary(media_type, bytes))
}

/// The refusal of an uploaded file's id at `field`.
pub(crate) fn file_id(field: &str) -> OpenAiError {
    OpenAiError::invalid(
        field,
        format!(
            "`{field}` names an uploaded file, but this server keeps no files (there is no \
             /v1/files); send the content inline (`file_data`, or a URL)"
        ),
    )
}

/// The type and bytes of a base64 `data:` URL at `field`.
fn data_url(field: &str, url: &str) -> Result<(String, Vec<u8>), OpenAiError> {
    let rest = url.strip_prefix("data:").unwrap_or(url);
    let Some((media_type, data)) = rest.split_once(";base64,") else {
        return Err(OpenAiError::invalid(
            field,
            format!("`{field}` is a `data:` URL that is not base64; send `data:<type>;base64,…`"),
        ));
    };
    if media_type.is_empty() {
        return Err(OpenAiError::invalid(
            field,
            format!("`{field}` is a `data:` URL without a type; send `data:<type>;base64,…`"),
        ));
    }
    Ok((media_type.to_ascii_lowercase(), base64(field, data)?))
}

fn base64(field: &str, data: &str) -> Result<Vec<u8>, OpenAiError> {
    STANDARD
        .decode(data.trim())
        .map_err(|err| OpenAiError::invalid(field, format!("`{field}` is not valid base64: {err}")))
}

/// The type a file name's extension implies, for the types providers take.
fn type_of_name(name: &str) -> Option<&'static str> {
    let (_, extension) = name.rsplit_once('.')?;
    Some(match extension.to_ascii_lowercase().as_str() {
        "pdf" => "application/pdf",
        "txt" => "text/plain",
        "md" => "text/markdown",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "json" => "application/json",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "wav" => "audio/wav",
        "mp3" => "audio/mpeg",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_keep_their_detail() {
        assert_eq!(
            image("f", "https://x.test/a.png", Some("low".into())).unwrap(),
            ContentPart::ImageUrl {
                url: "https://x.test/a.png".into(),
                detail: Some("low".into())
            }
        );
        assert_eq!(
            image("f", "data:image/png;base64,iVBO", None).unwrap(),
            ContentPart::binary("image/png", STANDARD.decode("iVBO").unwrap())
        );
        assert!(matches!(
            image("f", "data:image/png;base64,iVBO", Some("high".into())).unwrap(),
            ContentPart::ImageUrl {
                detail: Some(_),
                ..
            }
        ));
        let error = image("f", "ftp://x/a.png", None).unwrap_err();
        assert!(format!("{error:?}").contains("`f`"), "{error:?}");
    }

    #[test]
    fn files_by_data_url_or_bare_base64_with_a_known_name() {
        assert_eq!(
            file_data("f", "data:application/pdf;base64,JVBERg==", None).unwrap(),
            ContentPart::binary("application/pdf", b"%PDF".to_vec())
        );
        assert_eq!(
            file_data("f", "JVBERg==", Some("report.PDF")).unwrap(),
            ContentPart::binary("application/pdf", b"%PDF".to_vec())
        );
        let error = file_data("f", "JVBERg==", None).unwrap_err();
        assert!(format!("{error:?}").contains("`f.file_data`"), "{error:?}");
        let error = file_data("f", "JVBERg==", Some("x.zzz")).unwrap_err();
        assert!(format!("{error:?}").contains("`x.zzz`"), "{error:?}");
    }

    #[test]
    fn audio_formats() {
        assert_eq!(
            audio("f", "UklGRg==", "wav").unwrap(),
            ContentPart::binary("audio/wav", b"RIFF".to_vec())
        );
        let error = audio("f", "UklGRg==", "flac").unwrap_err();
        assert!(
            format!("{error:?}").contains("f.input_audio.format"),
            "{error:?}"
        );
    }
}
