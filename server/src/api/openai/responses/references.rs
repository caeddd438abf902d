//! `item_reference` input items: `{"type": "item_reference", "id": "rs_…"}` stands for an
//! output item of a stored response (`rs_…` reasoning, `msg_…` message, `fc_…` function
//! call), as OpenAI's Responses API lets a client refer to what it stored instead of sending
//! it again. The Vercel AI SDK sends reasoning this way after a reasoning step.
//!
//! An item id is `<kind>_<response suffix>_<position>`, so it names its response
//! (`resp_<response suffix>`), which is read back from the tree as `GET /v1/responses/{id}`
//! reads it: only the caller's own responses, so another caller's item is as unknown as one
//! that never existed.

use std::collections::HashMap;

use serde_json::Value;
use service::Principal;

use super::encode::ResponseObject;
use super::handlers::{from_node, stored};
use crate::api::openai::error::OpenAiError;
use crate::api::state::App;

/// Replaces every `item_reference` in `input` by the stored item it names. Unknown ids (and
/// other callers') are refused together, in one 400 naming each of them.
pub(crate) async fn resolve(
    app: &App,
    caller: Principal,
    input: &mut Option<Value>,
) -> Result<(), OpenAiError> {
    let Some(Value::Array(items)) = input else {
        return Ok(());
    };
    let mut responses: HashMap<String, Option<ResponseObject>> = HashMap::new();
    let mut unknown: Vec<(usize, String)> = Vec::new();
    for (index, item) in items.iter_mut().enumerate() {
        if item.get("type").and_then(Value::as_str) != Some("item_reference") {
            continue;
        }
        let Some(id) = item.get("id").and_then(Value::as_str).map(str::to_owned) else {
            return Err(OpenAiError::invalid(
                format!("input[{index}].id"),
                format!(
                    "`input[{index}]` is an `item_reference` without an `id`; name the item \
                     (`rs_…`, `msg_…` or `fc_…`)"
                ),
            ));
        };
        let found = match response_of(&id) {
            Some(response_id) => {
                if !responses.contains_key(&response_id) {
                    let response = match stored(app, caller, &response_id).await? {
                        Some(node) => Some(from_node(app, &response_id, &node).await?),
                        None => None,
                    };
                    responses.insert(response_id.clone(), response);
                }
                responses
                    .get(&response_id)
                    .and_then(Option::as_ref)
                    .and_then(|response| response.output.iter().find(|out| out.id() == id))
                    .and_then(|out| serde_json::to_value(out).ok())
            }
            None => None,
        };
        match found {
            Some(stored_item) => *item = stored_item,
            None => unknown.push((index, id)),
        }
    }
    match unknown.first() {
        None => Ok(()),
        Some((first, _)) => {
            let named = unknown
                .iter()
                .map(|(index, id)| format!("`{id}` (input[{index}])"))
                .collect::<Vec<_>>()
                .join(", ");
            Err(OpenAiError::invalid(
                format!("input[{first}].id"),
                format!(
                    "Item not found: {named}. No stored response of yours holds it (it was \
                     created with `store: false`, by another caller, or never); send the item \
                     itself instead of a reference"
                ),
            ))
        }
    }
}

/// The id of the response an item id belongs to: `rs_abc_0` → `resp_abc`.
fn response_of(item_id: &str) -> Option<String> {
    let (kind, rest) = item_id.split_once('_')?;
    if !matches!(kind, "rs" | "msg" | "fc") {
        return None;
    }
    let (suffix, position) = rest.rsplit_once('_')?;
    if suffix.is_empty() || position.is_empty() || !position.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(format!("resp_{suffix}"))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::response_of;

    proptest! {
        /// Every id this server writes names its response; any other string names none or
        /// some `resp_…` label, which the owner check then judges: nothing panics.
        #[test]
        fn item_ids_name_their_response(
            kind in prop::sample::select(vec!["rs", "msg", "fc"]),
            suffix in "[0-9a-f]{32}",
            position in 0usize..1000,
            anything in ".{0,80}",
        ) {
            let id = format!("{kind}_{suffix}_{position}");
            prop_assert_eq!(response_of(&id), Some(format!("resp_{suffix}")));
            if let Some(label) = response_of(&anything) {
                prop_assert!(label.starts_with("resp_"));
            }
        }
    }

    #[test]
    fn an_item_id_names_its_response() {
        assert_eq!(response_of("rs_abc_0").as_deref(), Some("resp_abc"));
        assert_eq!(response_of("msg_abc_12").as_deref(), Some("resp_abc"));
        assert_eq!(response_of("fc_a_b_1").as_deref(), Some("resp_a_b"));
        for not_ours in ["rs_abc", "call_abc_0", "rs__0", "rs_abc_x", "", "fc_abc_"] {
            assert_eq!(response_of(not_ours), None, "{not_ours}");
        }
    }
}
