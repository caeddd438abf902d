//! The text protocol (ReAct): the model writes `thinking`, `action` and `answer`
//! sections; actions run through a text [`ToolChain`] and come back as observations.

use text_format::{FormattedSection, ParseError, TextFormat, TextSection};
use toolchain::{DEFAULT_SECTION, JsonToolChain, ToolChain, ToolSet, YamlToolChain};

use crate::TextSyntax;

/// The section the model reasons in.
pub const THINKING_SECTION: &str = "thinking";
/// The section the model answers in; a reply with an answer and no action ends the run.
pub const ANSWER_SECTION: &str = "answer";

/// How the protocol works, for the system prompt.
const REACT_GUIDANCE: &str = "Work on the task step by step. In each reply, first reason in the \
thinking section. Then either call tools in the action section, or, when you need no more tools, \
give your final answer to the user in the answer section; never both in one reply. After an action \
you receive the tools' results in an observation; continue from there.";

/// Told to a model whose reply had neither an action nor an answer.
const NO_ACTION_OR_ANSWER: &str = "Your response had neither an action nor an answer. Call tools \
in the action section, or write your final answer in the answer section.";

/// The sections, the format and the call syntax of a text-protocol agent.
pub(crate) struct TextProtocol {
    format: Box<dyn TextFormat>,
    syntax: TextSyntax,
}

/// What a reply asked for.
pub(crate) enum Reply {
    /// Tool calls: the contents of the action sections.
    Actions(Vec<String>),
    /// The final answer.
    Answer(String),
    /// Neither: the observation telling the model what was wrong.
    Invalid(String),
}

impl TextProtocol {
    /// Registers the `thinking`, `action` and `answer` sections with `format`.
    pub(crate) fn new(mut format: Box<dyn TextFormat>, syntax: TextSyntax) -> TextProtocol {
        let sections = [
            (THINKING_SECTION, "Your reasoning about what to do next."),
            (
                DEFAULT_SECTION,
                "Tool calls, in the format described under available tools.",
            ),
            (
                ANSWER_SECTION,
                "Your final answer to the user, once you need no more tools.",
            ),
        ];
        for (name, description) in sections {
            // The names are valid section names.
            if let Ok(section) = TextSection::new(name, description) {
                format.register_section(section);
            }
        }
        TextProtocol { format, syntax }
    }

    /// The format of replies and observations.
    pub(crate) fn format(&self) -> &dyn TextFormat {
        self.format.as_ref()
    }

    /// The chain that runs the calls of an `action` section over `tools`.
    pub(crate) fn chain(&self, tools: ToolSet) -> Box<dyn ToolChain> {
        match self.syntax {
            TextSyntax::Json => Box::new(JsonToolChain::new(tools)),
            TextSyntax::Yaml => Box::new(YamlToolChain::new(tools)),
        }
    }

    /// The system prompt: the caller's `behavior`, the protocol, the tools and the output
    /// format, each a section of the format.
    pub(crate) fn system_prompt(&self, behavior: Option<&str>, chain: &dyn ToolChain) -> String {
        let format = self.format();
        let tools = chain.describe_tools();
        let structure = format.describe_structure();
        let sections = [
            ("behavior", behavior.unwrap_or_default()),
            ("re_act", REACT_GUIDANCE),
            ("available_tools", tools.as_str()),
            ("output_format", structure.as_str()),
        ];
        sections
            .iter()
            .filter(|(_, content)| !content.is_empty())
            .map(|(name, content)| format.format_section(name, content))
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// Reads a reply. An action wins over an answer in the same reply.
    pub(crate) fn read(&self, output: &str) -> (Reply, Vec<String>) {
        let parsed = match self.format.parse(output) {
            Ok(parsed) => parsed,
            Err(error) => return (Reply::Invalid(self.parse_error(&error, output)), Vec::new()),
        };
        let thinking = parsed
            .get(THINKING_SECTION)
            .into_iter()
            .map(str::to_owned)
            .collect();
        let actions: Vec<String> = parsed
            .get(DEFAULT_SECTION)
            .into_iter()
            .map(str::to_owned)
            .collect();
        let reply = if !actions.is_empty() {
            Reply::Actions(actions)
        } else if let Some(answer) = parsed.first(ANSWER_SECTION) {
            Reply::Answer(answer.to_owned())
        } else {
            Reply::Invalid(self.observation("error", NO_ACTION_OR_ANSWER))
        };
        (reply, thinking)
    }

    /// One observation section, formatted (and wrapped) by the format.
    pub(crate) fn observation(&self, name: &str, content: &str) -> String {
        self.format
            .format_sections(&[FormattedSection::new(name, content)])
    }

    /// The feedback for a reply that does not parse.
    fn parse_error(&self, error: &ParseError, raw: &str) -> String {
        self.observation(
            "error",
            &format!(
                "Format parse error: {error}\n\nYour response could not be parsed. Please ensure \
                 your response follows the expected format.\n\nYour raw response was:\n{raw}\n\n\
                 Please try again with proper formatting."
            ),
        )
    }
}
