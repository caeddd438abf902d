use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use messages::{ToolCall, ToolSpec};
use text_format::{
    FormattedSection, Line, SectionNameError, TextFormat, TextSection, strip_code_fence,
};

use crate::json::Json;
use crate::run::{Prepared, Rendering, Runner, collect};
use crate::{
    ExecutionContext, MediaTransform, ToolChain, ToolChainError, ToolChainResult, ToolObserver,
    ToolSet,
};

/// The default name of the section the model writes tool calls in.
pub const DEFAULT_SECTION: &str = "action";

pub(crate) mod sealed {
    use serde_json::Value;

    use crate::ToolSet;
    use crate::calls::{Requested, SyntaxError};

    /// What a text call syntax provides. Sealed: the syntaxes are this crate's.
    pub trait Syntax {
        /// `JSON`, `YAML`.
        const NAME: &'static str;
        /// One call, for error messages.
        const EXAMPLE: &'static str;
        /// How to write calls, for the prompt.
        const GUIDANCE: &'static str;
        /// The calls in `body` (the section without a surrounding code fence, non-empty).
        fn parse(body: &str, tools: &ToolSet) -> Result<Vec<Requested>, SyntaxError>;
        /// A tool output as the model reads it.
        fn render(value: &serde_json::Value) -> String;
        /// The `  Parameters: …` lines of the tool catalog.
        fn describe_parameters(schema: &Value) -> String;
    }
}

/// A syntax in which models write tool calls: [`Json`] or [`Yaml`](crate::Yaml). Sealed.
pub trait CallSyntax: sealed::Syntax + Send + Sync + 'static {}

/// A [`ToolChain`] for calls written as text in syntax `S`. Use the aliases
/// [`JsonToolChain`] and [`YamlToolChain`](crate::YamlToolChain).
pub struct TextToolChain<S> {
    runner: Runner,
    section: TextSection,
    syntax: PhantomData<fn() -> S>,
}

/// Tool calls as JSON in the `action` section, outputs as compact JSON (text outputs as is).
///
/// The model writes one call or an array of calls:
///
/// ```text
/// {"tool": "get_customer_info", "args": {"id": "C001"}}
/// [{"tool": "get_customer_info", "args": {"id": "C001"}}, {"tool": "get_flight", "args": {"number": "AA100"}}]
/// ```
///
/// Also accepted, because models write them: a code fence around the JSON, several values one
/// after another, `name` for `tool`, `arguments` for `args`, arguments as a JSON string, and no
/// `args` for a tool without input. Unknown keys are ignored.
pub type JsonToolChain = TextToolChain<Json>;

impl<S> Clone for TextToolChain<S> {
    fn clone(&self) -> Self {
        TextToolChain {
            runner: self.runner.clone(),
            section: self.section.clone(),
            syntax: PhantomData,
        }
    }
}

impl<S: CallSyntax> fmt::Debug for TextToolChain<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TextToolChain")
            .field("syntax", &S::NAME)
            .field("section", &self.section.name())
            .field("tools", &self.runner.tools)
            .finish_non_exhaustive()
    }
}

impl<S: CallSyntax> TextToolChain<S> {
    /// A chain over `tools`, reading calls from the [`DEFAULT_SECTION`].
    pub fn new(tools: ToolSet) -> Self {
        TextToolChain {
            runner: Runner { tools, media: None },
            section: Self::section_named(DEFAULT_SECTION)
                .expect("the default section name is valid"),
            syntax: PhantomData,
        }
    }

    /// Reads calls from the section `name` instead.
    pub fn with_section_name(mut self, name: impl Into<String>) -> Result<Self, SectionNameError> {
        self.section = Self::section_named(name)?;
        Ok(self)
    }

    fn section_named(name: impl Into<String>) -> Result<TextSection, SectionNameError> {
        let description = format!(
            "Tool calls, in the {} format described under Available tools.",
            S::NAME
        );
        TextSection::new(name, description)
    }

    /// Passes every media part through `transform` (resize, re-encode, drop).
    #[must_use]
    pub fn with_media_transform(mut self, transform: impl MediaTransform + 'static) -> Self {
        self.runner.media = Some(Arc::new(transform));
        self
    }

    /// The tools.
    pub fn tools(&self) -> &ToolSet {
        &self.runner.tools
    }

    /// The name of the tool-call section.
    pub fn section_name(&self) -> &str {
        self.section.name()
    }

    fn malformed(&self, message: String, line: Option<Line>) -> ToolChainError {
        ToolChainError::MalformedCalls {
            syntax: S::NAME,
            section: self.section.name().to_owned(),
            message,
            line,
            example: S::EXAMPLE,
        }
    }
}

#[async_trait]
impl<S: CallSyntax> ToolChain for TextToolChain<S> {
    async fn execute_observed(
        &self,
        ctx: &ExecutionContext,
        content: &str,
        format: &dyn TextFormat,
        observer: &dyn ToolObserver,
    ) -> Result<ToolChainResult, ToolChainError> {
        let body = strip_code_fence(content);
        let requested = if body.is_empty() {
            Vec::new()
        } else {
            S::parse(body, &self.runner.tools).map_err(|error| {
                let line = error.line.and_then(|number| {
                    body.lines()
                        .nth(number - 1)
                        .map(|text| Line::new(number, text))
                });
                self.malformed(error.message, line)
            })?
        };
        let prepared = requested
            .into_iter()
            .enumerate()
            .map(|(i, call)| Prepared {
                call: ToolCall::new(format!("call_{}", i + 1), call.name, call.arguments),
                input: call.input,
            })
            .collect();
        let rendering = Rendering {
            output: S::render,
            error_prefix: "Error: ",
        };
        let records = self.runner.run(ctx, prepared, &rendering, observer).await;
        let collected = collect(records);
        let mut sections = Vec::with_capacity(collected.outputs.len());
        let mut media = Vec::new();
        for (call, (content, call_media)) in collected.raw.calls.iter().zip(collected.outputs) {
            // A call without a usable name is reported under `error`, the section for errors
            // that belong to no tool.
            let name = if call.name.is_empty() {
                "error"
            } else {
                &call.name
            };
            sections.push(FormattedSection::new(name, content));
            media.extend(call_media);
        }
        Ok(ToolChainResult {
            text: format.format_sections(&sections),
            media,
            raw: collected.raw,
        })
    }

    fn describe_tools(&self) -> String {
        let tools = &self.runner.tools;
        if tools.is_empty() {
            return String::new();
        }
        let mut text = String::from("Available tools:\n");
        for tool in tools {
            text.push_str(&format!("\n- {}: {}\n", tool.name(), tool.description()));
            text.push_str(&S::describe_parameters(&tool.spec().parameters));
        }
        text.push('\n');
        text.push_str(S::GUIDANCE);
        text.push_str(&format!(
            "\n\nWrite tool calls in the `{}` section. Calls in one section run in parallel; each \
             result comes back in a section named after its tool.",
            self.section.name()
        ));
        text
    }

    fn tool_specs(&self) -> Vec<ToolSpec> {
        self.runner.tools.specs()
    }

    fn section(&self) -> TextSection {
        self.section.clone()
    }
}
