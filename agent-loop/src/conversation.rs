//! [`Conversation`]: the conversation as the run keeps it, sends it and lends it.

use std::fmt;

use chain_ast::{BodyPair, ChainAst, ChainError, Header};
use messages::{ContentPart, Message, Role, ToolSpec};
use providers::ChatRequest;

use crate::ChatOptions;

/// The conversation in its three forms: the chain sent to the model as a [`ChainAst`] (what
/// compression and the chain rules work on), the same messages flat and in order in the
/// [`ChatRequest`] the next model call borrows, and the whole transcript, uncompressed.
///
/// A round adds its answer and tool messages to each form, so a request costs what the round
/// added, not a copy of the whole conversation: the request is kept from round to round
/// instead of being rebuilt from the chain. Until the chain is compressed (or read from a
/// stored summary) the transcript *is* the request's messages, held once; from then on it is
/// kept apart. Only a chain replaced whole is flattened again. Fields are private and every
/// change goes through a method that changes every form alike.
#[derive(Clone, Default)]
pub(crate) struct Conversation {
    chain: ChainAst,
    /// `chain`'s messages, with the tools and options of the last request (boxed: the
    /// context holding it moves from step to step).
    request: Box<ChatRequest>,
    /// The whole conversation once it differs from the chain sent; until then it is
    /// `request.messages`.
    apart: Option<Vec<Message>>,
}

impl Conversation {
    /// `messages`, which must pass the chain rules, as a conversation.
    pub(crate) fn new(messages: Vec<Message>) -> Result<Conversation, ChainError> {
        // A chain built strictly flattens back to exactly its input.
        let chain = ChainAst::new(&messages, false)?;
        Ok(Conversation {
            chain,
            request: Box::new(ChatRequest::new(messages)),
            apart: None,
        })
    }

    /// The chain sent.
    pub(crate) fn chain(&self) -> &ChainAst {
        &self.chain
    }

    /// The whole conversation, uncompressed.
    pub(crate) fn transcript(&self) -> &[Message] {
        self.apart.as_deref().unwrap_or(&self.request.messages)
    }

    /// The chain and the transcript, consuming the conversation.
    pub(crate) fn into_parts(self) -> (ChainAst, Vec<Message>) {
        let transcript = self.apart.unwrap_or(self.request.messages);
        (self.chain, transcript)
    }

    /// The chain, taken out for compression: until [`put_back`](Self::put_back) or
    /// [`replace`](Self::replace) the chain is empty and the other forms are unchanged.
    pub(crate) fn take(&mut self) -> ChainAst {
        std::mem::take(&mut self.chain)
    }

    /// The chain taken out by [`take`](Self::take), unchanged.
    pub(crate) fn put_back(&mut self, chain: ChainAst) {
        self.chain = chain;
    }

    /// A new chain sent (compressed, or read from a stored summary), the transcript
    /// unchanged: the request's messages are flattened from it again.
    pub(crate) fn replace(&mut self, chain: ChainAst) {
        if self.apart.is_none() {
            self.apart = Some(std::mem::take(&mut self.request.messages));
        }
        self.request.messages = chain.messages();
        self.chain = chain;
    }

    /// The transcript kept apart from the chain sent (a copy), before a change that only
    /// one of them takes.
    fn keep_apart(&mut self) -> &mut Vec<Message> {
        self.apart
            .get_or_insert_with(|| self.request.messages.clone())
    }

    /// The system message set to `system`: in the transcript, and in the chain's first
    /// section (the system message is always the first one sent).
    pub(crate) fn set_system(&mut self, system: Message) {
        if self.chain.is_empty() {
            // The chain has no section to take it; the transcript does.
            put_first(self.keep_apart(), system);
            return;
        }
        if let Some(transcript) = &mut self.apart {
            put_first(transcript, system.clone());
        }
        let mut sections = std::mem::take(&mut self.chain).into_sections();
        if let Some(first) = sections.first_mut() {
            let human = first.header().human().cloned();
            first.set_header(Header::new(Some(system.clone()), human).unwrap_or_default());
        }
        self.chain = ChainAst::from_sections(sections);
        put_first(&mut self.request.messages, system);
    }

    /// A round: an answer and the tool messages answering it, added to the transcript and as
    /// a body pair of the chain's last section.
    pub(crate) fn add_round(&mut self, answer: Message, tools: Vec<Message>) {
        if let Some(transcript) = &mut self.apart {
            transcript.push(answer.clone());
            transcript.extend(tools.iter().cloned());
        }
        let sent = (answer.clone(), tools.clone());
        // The loop's answers and tool messages have the right roles, and a run's chain starts
        // with a human message, so the pair is always added; if it were not, the transcript
        // would still have the round.
        let added = BodyPair::new(answer, tools)
            .and_then(|pair| self.chain.add_body_pair(pair))
            .is_ok();
        let (answer, tools) = sent;
        let messages = if added {
            &mut self.request.messages
        } else {
            self.keep_apart()
        };
        messages.push(answer);
        messages.extend(tools);
    }

    /// Human parts: appended to the trailing human message, or as a new one (as
    /// [`ChainAst::append_human_parts`] does).
    pub(crate) fn append_human(&mut self, parts: Vec<ContentPart>) {
        if let Some(transcript) = &mut self.apart {
            add_human(transcript, parts.clone());
        }
        add_human(&mut self.request.messages, parts.clone());
        self.chain.append_human_parts(parts);
    }

    /// The next request: the chain lent, with the tools on offer and the agent's options. A
    /// tool choice goes only with tools: providers reject a `tool_choice` without tools, and
    /// the last request after the tool limit offers none on purpose.
    pub(crate) fn request(&mut self, tools: Vec<ToolSpec>, options: &ChatOptions) -> &ChatRequest {
        let mut options = options.clone();
        if tools.is_empty() {
            options.tool_choice = None;
        }
        self.request.tools = tools;
        self.request.options = options;
        debug_assert!(
            self.chain.iter_messages().eq(&self.request.messages),
            "the request's messages are the chain's"
        );
        &self.request
    }
}

/// `system` as the first message of `messages`: in place of a system message there, else
/// before the others.
fn put_first(messages: &mut Vec<Message>, system: Message) {
    match messages.first_mut() {
        Some(first) if first.role == Role::System => *first = system,
        _ => messages.insert(0, system),
    }
}

/// `parts` added to the trailing human message of `messages`, or as a new human message.
/// A chain's trailing human message is its last section's header with no body pair after
/// it, which is what [`ChainAst::append_human_parts`] extends.
fn add_human(messages: &mut Vec<Message>, parts: Vec<ContentPart>) {
    match messages.last_mut() {
        Some(last) if last.role == Role::Human => last.parts.extend(parts),
        _ => messages.push(Message::new(Role::Human, parts)),
    }
}

/// The chain and the transcript: the request holds the chain's messages again.
impl fmt::Debug for Conversation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Conversation")
            .field("chain", &self.chain)
            .field("transcript", &self.transcript())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use messages::ToolCall;

    use super::*;

    fn conversation(messages: &[Message]) -> Conversation {
        Conversation::new(messages.to_vec()).expect("a valid chain")
    }

    /// The request's messages, checked against the chain's whatever the build (the check in
    /// `request` runs in debug builds only).
    fn lent(conversation: &mut Conversation) -> Vec<Message> {
        let request = conversation.request(Vec::new(), &ChatOptions::default());
        let messages = request.messages.clone();
        assert_eq!(messages, conversation.chain().messages());
        messages
    }

    fn round(id: &str) -> (Message, Vec<Message>) {
        let call = ToolCall::new(id, "tool", "{}");
        let answer = Message::ai_tool_calls(None, vec![call]);
        (answer, vec![Message::tool_response(id, "tool", "result")])
    }

    /// Every change is made to every form alike; while the chain is not compressed the
    /// transcript is the chain sent.
    #[test]
    fn every_form_takes_every_change() {
        let start = [Message::human("question")];
        let mut conversation = conversation(&start);
        assert_eq!(lent(&mut conversation), start);

        conversation.set_system(Message::system("first"));
        conversation.set_system(Message::system("second"));
        conversation.append_human(vec![ContentPart::text("more")]);
        let (answer, tools) = round("c1");
        conversation.add_round(answer, tools);
        conversation.append_human(vec![ContentPart::text("next question")]);
        conversation.add_round(Message::ai("answer"), Vec::new());
        let chain = conversation.take();
        conversation.put_back(chain);

        let sent = lent(&mut conversation);
        assert_eq!(sent.len(), 6);
        assert_eq!(sent[0], Message::system("second"));
        assert_eq!(sent[1].parts.len(), 2);
        assert_eq!(conversation.transcript(), sent);
    }

    /// A chain replaced whole (compressed) is sent from then on; the transcript keeps the
    /// whole conversation and both take the next changes.
    #[test]
    fn a_replaced_chain_is_sent_and_the_transcript_kept() {
        let whole = [
            Message::system("system"),
            Message::human("old question"),
            Message::ai("old answer"),
            Message::human("question"),
        ];
        let mut conversation = conversation(&whole);
        let shorter = [Message::system("system"), Message::human("question")];
        conversation.replace(ChainAst::new(&shorter, false).expect("a valid chain"));
        assert_eq!(lent(&mut conversation), shorter);
        assert_eq!(conversation.transcript(), whole);

        conversation.set_system(Message::system("new system"));
        let (answer, tools) = round("c1");
        conversation.add_round(answer, tools);
        conversation.append_human(vec![ContentPart::text("next")]);
        let sent = lent(&mut conversation);
        assert_eq!(sent.len(), 5);
        let (chain, transcript) = conversation.into_parts();
        assert_eq!(chain.messages(), sent);
        assert_eq!(transcript.len(), 7);
        assert_eq!(transcript[0], Message::system("new system"));
        assert_eq!(transcript[3..], sent[1..]);
    }

    /// An answer the chain does not take (not an AI message) stays in the transcript only.
    #[test]
    fn a_round_the_chain_refuses_is_kept_in_the_transcript() {
        let start = [Message::human("question")];
        let mut conversation = conversation(&start);
        conversation.add_round(Message::human("wrong role"), Vec::new());
        assert_eq!(lent(&mut conversation), start);
        assert_eq!(conversation.transcript().len(), 2);
    }

    /// A tool choice goes only with tools.
    #[test]
    fn no_tool_choice_without_tools() {
        let mut conversation = conversation(&[Message::human("question")]);
        let options = ChatOptions {
            tool_choice: Some(providers::ToolChoice::Required),
            ..ChatOptions::default()
        };
        let request = conversation.request(Vec::new(), &options);
        assert_eq!(request.options.tool_choice, None);
        let tools = vec![ToolSpec {
            name: "tool".to_owned(),
            description: "A tool.".to_owned(),
            parameters: serde_json::json!({"type": "object"}),
        }];
        let request = conversation.request(tools, &options);
        assert_eq!(request.options.tool_choice, options.tool_choice);
    }
}
