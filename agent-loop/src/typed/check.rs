//! Reading a typed run's answer: JSON first, then the schema that was sent (feature
//! `validate`), then the Rust type. The schema comes before serde because it names every
//! violation at once, each with its path; serde stays the last word because the type and its
//! schema can disagree (formats the schema only hints at, custom deserialisers).

use serde::de::DeserializeOwned;
use serde_json::Value;

/// At most this many violations are listed in a correction or an error; the rest are counted.
const MAX_VIOLATIONS: usize = 8;

/// At most this many characters of one violation's message (a message may quote the whole
/// offending value).
const MAX_MESSAGE: usize = 200;

/// The schema a typed run's answers are checked against, compiled once per run.
pub(super) struct Checker {
    #[cfg(feature = "validate")]
    validator: Option<jsonschema::Validator>,
}

impl Checker {
    /// A checker for `schema`. A schema the validator cannot compile (a dialect it does not
    /// know) leaves the check to serde alone, with a warning: the provider was sent it anyway.
    pub(super) fn new(schema: Option<&Value>) -> Self {
        #[cfg(feature = "validate")]
        {
            let validator = schema.and_then(|schema| match jsonschema::validator_for(schema) {
                Ok(validator) => Some(validator),
                Err(error) => {
                    tracing::warn!(%error, "the typed run's schema cannot be compiled; answers are checked by their type alone");
                    None
                }
            });
            Checker { validator }
        }
        #[cfg(not(feature = "validate"))]
        {
            let _ = schema;
            Checker {}
        }
    }

    /// `text` read as a `T`, or what is wrong with it: not JSON, every violation of the
    /// schema (path and message), or serde's complaint.
    pub(super) fn check<T: DeserializeOwned>(&self, text: &str) -> Result<T, String> {
        let value: Value = serde_json::from_str(unfenced(text))
            .map_err(|error| format!("the answer is not JSON ({error})"))?;
        #[cfg(feature = "validate")]
        if let Some(validator) = &self.validator {
            let violations: Vec<String> = validator
                .iter_errors(&value)
                .map(|error| violation(&error.instance_path().to_string(), &error.to_string()))
                .collect();
            if !violations.is_empty() {
                return Err(listed(&violations));
            }
        }
        serde_json::from_value(value).map_err(|error| error.to_string())
    }
}

/// `text` without the Markdown code fence or blank lines that models without native
/// structured output often put around JSON.
fn unfenced(text: &str) -> &str {
    let trimmed = text.trim();
    trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))
        .map_or(trimmed, str::trim)
}

/// One violation: where (a JSON pointer, `/` for the whole answer) and what, its message cut
/// to [`MAX_MESSAGE`] characters.
#[cfg_attr(not(feature = "validate"), allow(dead_code))]
fn violation(path: &str, message: &str) -> String {
    let path = if path.is_empty() { "/" } else { path };
    let mut cut: String = message.chars().take(MAX_MESSAGE).collect();
    if cut.len() < message.len() {
        cut.push('…');
    }
    format!("at `{path}`: {cut}")
}

/// The violations as one sentence: the first [`MAX_VIOLATIONS`], and how many more.
#[cfg_attr(not(feature = "validate"), allow(dead_code))]
fn listed(violations: &[String]) -> String {
    let shown = violations.len().min(MAX_VIOLATIONS);
    let mut text = format!(
        "{} schema violation{}: {}",
        violations.len(),
        if violations.len() == 1 { "" } else { "s" },
        violations[..shown].join("; ")
    );
    if violations.len() > shown {
        text.push_str(&format!("; and {} more", violations.len() - shown));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_and_blank_lines_are_looked_past() {
        let checker = Checker::new(None);
        let value: Vec<u8> = checker.check("\n```json\n[1, 2]\n```\n").unwrap();
        assert_eq!(value, [1, 2]);
        let value: Vec<u8> = checker.check(" [3] ").unwrap();
        assert_eq!(value, [3]);
        assert!(checker.check::<Vec<u8>>("[\"a\"]").is_err());
        let error = checker.check::<Vec<u8>>("three").unwrap_err();
        assert!(error.starts_with("the answer is not JSON"), "{error}");
    }

    #[test]
    fn long_messages_and_lists_are_bounded() {
        let long = "x".repeat(1000);
        let one = violation("", &long);
        assert!(
            one.starts_with("at `/`: xxx") && one.ends_with('…'),
            "{one}"
        );
        assert!(one.chars().count() < MAX_MESSAGE + 20);
        let many: Vec<String> = (0..20)
            .map(|i| violation(&format!("/{i}"), "bad"))
            .collect();
        let text = listed(&many);
        assert!(
            text.starts_with("20 schema violations: at `/0`: bad"),
            "{text}"
        );
        assert!(text.ends_with("; and 12 more"), "{text}");
        assert!(!text.contains("`/8`"), "{text}");
    }

    #[cfg(feature = "validate")]
    #[test]
    fn every_violation_is_named_with_its_path() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"age": {"type": "integer", "minimum": 0}, "name": {"type": "string"}},
            "required": ["age", "name"],
        });
        let checker = Checker::new(Some(&schema));
        let error = checker
            .check::<Value>(r#"{"age": -3, "name": 7}"#)
            .unwrap_err();
        assert!(error.starts_with("2 schema violations: "), "{error}");
        assert!(
            error.contains("at `/age`: -3 is less than the minimum of 0"),
            "{error}"
        );
        assert!(
            error.contains("at `/name`: 7 is not of type \"string\""),
            "{error}"
        );
    }
}
