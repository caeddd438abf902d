//! Reasoning given back to a resent history from the conversation tree.
//!
//! Most OpenAI clients resend only what they understood of an answer: the text and the tool
//! calls, without Gemini's `thoughtSignature` on a call or Anthropic's signed thinking block.
//! Both providers check them on the next request of a tool round (Gemini 3 refuses a call
//! without its signature; Anthropic with thinking on refuses a `tool_use` without the thinking
//! block before it). The tree matched the resent answers by content (reasoning and ids are
//! outside every hash) and holds each one whole, so the answers of the round in progress get
//! their reasoning back from there. Only the caller's own conversation is read (the gateway's
//! conversations are per owner), and only answers of the model now called: a provider gets
//! back the reasoning it issued, never another provider's.

use conversation_tree::{NodeId, Store, StoreError};
use messages::{ContentPart, Message, Reasoning, Role};

/// Restores the reasoning of the answers in `messages` that `matched` found stored
/// ([`agent_loop::Lookup::matched_answers`]) and that the client sent without any: those of the
/// turn in progress (after the last human message), answered by `model`. Returns how many
/// answers got their reasoning back.
pub(crate) async fn restore_reasoning(
    store: &dyn Store,
    model: &str,
    messages: &mut [Message],
    matched: &[(usize, NodeId)],
) -> Result<usize, StoreError> {
    // Providers check reasoning only within the turn in progress; earlier turns' reasoning is
    // dropped by them, so reading it back would cost a store read per turn for nothing.
    let turn_start = messages
        .iter()
        .rposition(|message| message.role == Role::Human)
        .map_or(0, |index| index + 1);
    let mut restored = 0;
    for &(index, node) in matched {
        let Some(sent) = messages.get(index) else {
            continue;
        };
        if index < turn_start || sent.role != Role::Ai || has_reasoning(sent) {
            continue;
        }
        let same_model = store
            .node(node)
            .await?
            .is_some_and(|stored| stored.model() == Some(model));
        if !same_model {
            continue;
        }
        let stored = store.turn(node).await?.response;
        if let Some(whole) = with_client_ids(sent, stored) {
            messages[index] = whole;
            restored += 1;
        }
    }
    Ok(restored)
}

/// Whether `message` carries reasoning a provider can check: a signature or encrypted data,
/// on a block, a text part or a call. Reasoning text alone (the Agents SDK sends reasoning
/// items back without their `encrypted_content`) is not enough for the provider, so such an
/// answer is restored too.
fn has_reasoning(message: &Message) -> bool {
    let opaque =
        |reasoning: &Reasoning| reasoning.signature.is_some() || reasoning.encrypted.is_some();
    message.parts.iter().any(|part| match part {
        ContentPart::Reasoning(reasoning) => opaque(reasoning),
        ContentPart::Text { reasoning, .. } => reasoning.as_ref().is_some_and(opaque),
        ContentPart::ToolCall(call) => call.reasoning.as_ref().is_some_and(opaque),
        _ => false,
    })
}

/// The stored answer with the calls renamed to the ids the client sent, which its tool
/// results answer; `None` when the two do not make the same number of calls.
fn with_client_ids(sent: &Message, mut stored: Message) -> Option<Message> {
    let ids: Vec<&str> = sent.tool_calls().map(|call| call.id.as_str()).collect();
    if ids.len() != stored.tool_calls().count() {
        return None;
    }
    let mut ids = ids.into_iter();
    for part in &mut stored.parts {
        if let ContentPart::ToolCall(call) = part {
            call.id = ids.next()?.to_owned();
        }
    }
    Some(stored)
}

#[cfg(test)]
mod tests {
    use messages::ToolCall;

    use super::*;

    #[test]
    fn the_stored_answer_takes_the_ids_the_client_sent() {
        let mut call = ToolCall::new("gemini_call_r_0", "get_country", "{}");
        call.reasoning = Some(Reasoning::signature("sig"));
        let stored = Message::new(Role::Ai, vec![ContentPart::ToolCall(call)]);
        let sent =
            Message::ai_tool_calls(None, vec![ToolCall::new("client_id", "get_country", "{}")]);
        let whole = with_client_ids(&sent, stored.clone()).unwrap();
        let calls: Vec<_> = whole.tool_calls().collect();
        assert_eq!(calls[0].id, "client_id");
        assert_eq!(
            calls[0]
                .reasoning
                .as_ref()
                .and_then(|r| r.signature.as_deref()),
            Some("sig")
        );
        assert!(has_reasoning(&whole));
        assert!(!has_reasoning(&sent));
        // Reasoning text without its signature is not what the provider checks.
        let summary_only = Message::new(
            Role::Ai,
            vec![ContentPart::Reasoning(Reasoning {
                text: "thinking".into(),
                ..Reasoning::default()
            })],
        );
        assert!(!has_reasoning(&summary_only));
        // Another number of calls is another answer: nothing is restored.
        assert_eq!(with_client_ids(&Message::ai("text"), stored), None);
    }
}
