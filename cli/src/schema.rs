//! `skein run --schema`: a JSON Schema given inline, in a file, or in `llm`'s concise form.

use providers::ResponseFormat;
use serde_json::{Map, Value, json};

use crate::CliError;

/// The response format `--schema VALUE` asks for: `VALUE` is a JSON Schema (inline JSON or a
/// file holding one) or a concise list of fields, `"name, age int, bio: their bio"` (one field
/// per comma or line: a name, an optional type `str`, `int`, `float` or `bool`, and an optional
/// description after `:`), as `llm --schema` takes them.
pub(crate) fn response_format(value: &str) -> Result<ResponseFormat, CliError> {
    let trimmed = value.trim();
    let schema = if trimmed.starts_with('{') {
        parse_json(trimmed, "the --schema argument")?
    } else if std::path::Path::new(trimmed).is_file() {
        let text = std::fs::read_to_string(trimmed).map_err(|error| {
            CliError::Usage(format!("--schema: cannot read `{trimmed}`: {error}"))
        })?;
        parse_json(&text, &format!("`{trimmed}`"))?
    } else {
        concise(trimmed)?
    };
    Ok(ResponseFormat::json_schema("response", schema))
}

fn parse_json(text: &str, what: &str) -> Result<Value, CliError> {
    match serde_json::from_str::<Value>(text) {
        Ok(schema @ Value::Object(_)) => Ok(schema),
        Ok(_) => Err(CliError::Usage(format!(
            "--schema: {what} is JSON but not a JSON Schema object"
        ))),
        Err(error) => Err(CliError::Usage(format!(
            "--schema: {what} is not valid JSON ({error}); give a JSON Schema, a file holding \
             one, or fields such as \"name, age int, bio: their bio\""
        ))),
    }
}

/// `llm`'s concise schema: an object whose every field is required.
fn concise(spec: &str) -> Result<Value, CliError> {
    let separator = if spec.contains('\n') { '\n' } else { ',' };
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut faults = Vec::new();
    for field in spec
        .split(separator)
        .map(str::trim)
        .filter(|f| !f.is_empty())
    {
        let (head, description) = match field.split_once(':') {
            Some((head, description)) => (head.trim(), Some(description.trim())),
            None => (field, None),
        };
        let mut words = head.split_whitespace();
        let (Some(name), kind, None) = (words.next(), words.next(), words.next()) else {
            faults.push(format!("`{field}`"));
            continue;
        };
        let kind = match kind.unwrap_or("str") {
            "str" | "string" => "string",
            "int" | "integer" => "integer",
            "float" | "number" => "number",
            "bool" | "boolean" => "boolean",
            _ => {
                faults.push(format!("`{field}` (types: str, int, float, bool)"));
                continue;
            }
        };
        let mut property = json!({"type": kind});
        if let Some(description) = description.filter(|d| !d.is_empty()) {
            property["description"] = json!(description);
        }
        properties.insert(name.to_owned(), property);
        required.push(name.to_owned());
    }
    if !faults.is_empty() || properties.is_empty() {
        return Err(CliError::Usage(format!(
            "--schema: cannot read field(s) {}; give a JSON Schema, a file holding one, or \
             fields such as \"name, age int, bio: their bio\"",
            if faults.is_empty() {
                "(none given)".to_owned()
            } else {
                faults.join(", ")
            }
        )));
    }
    Ok(json!({
        "type": "object",
        "properties": properties,
        "required": required,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concise_fields_become_an_object_schema() {
        let format = response_format("name, age int, bio: their bio").unwrap();
        assert_eq!(
            format.schema().unwrap(),
            &json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "age": {"type": "integer"},
                    "bio": {"type": "string", "description": "their bio"}
                },
                "required": ["name", "age", "bio"]
            })
        );
    }

    #[test]
    fn inline_json_and_every_bad_field_named() {
        let format = response_format(r#"{"type": "object"}"#).unwrap();
        assert_eq!(format.schema().unwrap(), &json!({"type": "object"}));
        let error = response_format("name, age integr, a b c")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("`age integr`") && error.contains("`a b c`"),
            "{error}"
        );
        assert!(response_format("{not json").is_err());
    }
}
