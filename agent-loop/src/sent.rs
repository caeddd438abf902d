//! [`SentChain`]: the chain sent to the model, with the request that lends it.

use std::fmt;

use chain_ast::{BodyPair, ChainAst, Header};
use messages::{ContentPart, Message, Role, ToolSpec};
use providers::ChatRequest;

use crate::ChatOptions;

/// The chain sent to the model as a [`ChainAst`] (what compression and the chain rules work
/// on), and the same messages, flat and in order, in the [`ChatRequest`] the next model call
/// borrows.
///
/// A round adds its answer and tool messages to both, so a request costs what the round
/// added, not a copy of the whole conversation: the request is kept from round to round
/// instead of being rebuilt from the chain. Only a chain replaced whole (compressed, or read
/// from a stored summary) is flattened again. Fields are private and every change goes
/// through a method that changes both alike.
#[derive(Clone, Default)]
pub(crate) struct SentChain {
    chain: ChainAst,
    /// `chain`'s messages, with the tools and options of the last request (boxed: the
    /// context holding it moves from step to step).
    request: Box<ChatRequest>,
}

impl SentChain {
    /// `chain`, and a request holding its messages.
    pub(crate) fn new(chain: ChainAst) -> SentChain {
        SentChain {
            request: Box::new(ChatRequest::new(chain.messages())),
            chain,
        }
    }

    /// The chain.
    pub(crate) fn chain(&self) -> &ChainAst {
        &self.chain
    }

    /// The chain, consuming both.
    pub(crate) fn into_chain(self) -> ChainAst {
        self.chain
    }

    /// The chain, taken out for compression: until [`put_back`](Self::put_back) or
    /// [`replace`](Self::replace) the chain is empty and the request keeps its messages.
    pub(crate) fn take(&mut self) -> ChainAst {
        std::mem::take(&mut self.chain)
    }

    /// The chain taken out by [`take`](Self::take), unchanged.
    pub(crate) fn put_back(&mut self, chain: ChainAst) {
        self.chain = chain;
    }

    /// A new chain (compressed, or read from a stored summary): the request's messages are
    /// flattened from it again.
    pub(crate) fn replace(&mut self, chain: ChainAst) {
        self.request.messages = chain.messages();
        self.chain = chain;
    }

    /// The system message of the chain's first section set to `system` (the system message
    /// is always the first one sent).
    pub(crate) fn set_system(&mut self, system: Message) {
        let mut sections = std::mem::take(&mut self.chain).into_sections();
        if let Some(first) = sections.first_mut() {
            let human = first.header().human().cloned();
            first.set_header(Header::new(Some(system.clone()), human).unwrap_or_default());
            let messages = &mut self.request.messages;
            match messages.first_mut() {
                Some(first) if first.role == Role::System => *first = system,
                _ => messages.insert(0, system),
            }
        }
        self.chain = ChainAst::from_sections(sections);
    }

    /// A body pair added to the last section: an answer and the tool messages answering it.
    /// Nothing is added when the roles are wrong or the chain has no section (a run's chain
    /// always starts with a human message, and the loop builds answers and tool messages).
    pub(crate) fn add_body_pair(&mut self, answer: Message, tools: Vec<Message>) {
        let sent = (answer.clone(), tools.clone());
        let added = BodyPair::new(answer, tools)
            .and_then(|pair| self.chain.add_body_pair(pair))
            .is_ok();
        if added {
            let (answer, tools) = sent;
            self.request.messages.push(answer);
            self.request.messages.extend(tools);
        }
    }

    /// Human parts appended as [`ChainAst::append_human_parts`] appends them: to the trailing
    /// human message, or as a new one.
    pub(crate) fn append_human(&mut self, parts: Vec<ContentPart>) {
        // A trailing human message is the last section's header with no body pair after it,
        // which is what the chain extends.
        match self.request.messages.last_mut() {
            Some(last) if last.role == Role::Human => last.parts.extend(parts.iter().cloned()),
            _ => self
                .request
                .messages
                .push(Message::new(Role::Human, parts.clone())),
        }
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

/// The chain only: the request holds the same messages.
impl fmt::Debug for SentChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.chain.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use messages::ToolCall;

    use super::*;

    /// The request's messages, checked against the chain's whatever the build (the check in
    /// `request` runs in debug builds only).
    fn lent(sent: &mut SentChain) -> Vec<Message> {
        let messages = sent
            .request(Vec::new(), &ChatOptions::default())
            .messages
            .clone();
        assert_eq!(messages, sent.chain().messages());
        messages
    }

    /// Every change made to the chain is made to the request alike.
    #[test]
    fn the_request_follows_every_change_of_the_chain() {
        let start = [Message::human("question")];
        let mut sent = SentChain::new(ChainAst::new(&start, false).expect("a valid chain"));
        assert_eq!(lent(&mut sent), start);

        sent.set_system(Message::system("first"));
        sent.set_system(Message::system("second"));
        assert_eq!(lent(&mut sent)[0], Message::system("second"));

        sent.append_human(vec![ContentPart::text("more")]);
        assert_eq!(lent(&mut sent).len(), 2);

        let call = ToolCall::new("c1", "tool", "{}");
        let answer = Message::ai_tool_calls(None, vec![call]);
        sent.add_body_pair(answer, vec![Message::tool_response("c1", "tool", "result")]);
        assert_eq!(lent(&mut sent).len(), 4);

        // Not a body pair: nothing is added to either.
        sent.add_body_pair(Message::human("wrong role"), Vec::new());
        assert_eq!(lent(&mut sent).len(), 4);

        sent.append_human(vec![ContentPart::text("next question")]);
        sent.add_body_pair(Message::ai("answer"), Vec::new());
        assert_eq!(lent(&mut sent).len(), 6);

        let chain = sent.take();
        sent.put_back(chain);
        assert_eq!(lent(&mut sent).len(), 6);

        let shorter = [Message::system("second"), Message::human("summary")];
        sent.replace(ChainAst::new(&shorter, false).expect("a valid chain"));
        assert_eq!(lent(&mut sent), shorter);
    }

    /// A tool choice goes only with tools.
    #[test]
    fn no_tool_choice_without_tools() {
        let start = [Message::human("question")];
        let mut sent = SentChain::new(ChainAst::new(&start, false).expect("a valid chain"));
        let options = ChatOptions {
            tool_choice: Some(providers::ToolChoice::Required),
            ..ChatOptions::default()
        };
        assert_eq!(sent.request(Vec::new(), &options).options.tool_choice, None);
        let tools = vec![ToolSpec {
            name: "tool".to_owned(),
            description: "A tool.".to_owned(),
            parameters: serde_json::json!({"type": "object"}),
        }];
        let request = sent.request(tools, &options);
        assert_eq!(request.options.tool_choice, options.tool_choice);
    }
}
