//! One section convention for an agent's text protocol, in both directions: **parse** what a
//! model wrote into named sections (`thinking`, `action`, `answer`…) and **format** what it
//! will read (tool observations) in the same convention.
//!
//! A ReAct-style agent registers the sections it asks for, puts
//! [`TextFormat::describe_structure`] in its system prompt, parses each reply with
//! [`TextFormat::parse`], and hands tool results back through
//! [`TextFormat::format_sections`]: the model sees one convention throughout.
//!
//! Two formats ship:
//!
//! | format | a section | observations |
//! |---|---|---|
//! | [`MarkdownFormat`] | `# name` heading, content below | sections joined by a blank line |
//! | [`XmlFormat`] | `<name>` … `</name>` | wrapped in `<observation>` … `</observation>` |
//!
//! Parsing accepts what real models write (prose before the first section, a code fence
//! around the whole answer, CRLF, trailing whitespace, any case in section names) and treats
//! anything inside a fenced code block as content. It fails with a typed [`ParseError`] that
//! quotes the offending line when a required section is missing, a single section repeats, or
//! (in strict mode) an unregistered section appears; the messages are written to be shown to the
//! model so it can correct itself.
//!
//! ```
//! use text_format::{FormattedSection, TextFormat, TextSection, XmlFormat};
//!
//! let mut format = XmlFormat::new();
//! format.register_section(TextSection::new("thinking", "Your reasoning.")?);
//! format.register_section(TextSection::new("answer", "Your final answer.")?.required(true));
//!
//! // The prompt text that teaches the model the format.
//! assert!(format.describe_structure().starts_with("Format your response using XML-style tags"));
//!
//! // Parsing: prose and a literal tag inside <thinking> do not confuse it.
//! let reply = "Sure!\n<thinking>I must put the result in <answer>.</thinking>\n<answer>\n42\n</answer>";
//! let parsed = format.parse(reply)?;
//! assert_eq!(parsed.first("thinking"), Some("I must put the result in <answer>."));
//! assert_eq!(parsed.first("answer"), Some("42"));
//!
//! // A missing required section is an error quoting where the output stopped.
//! let err = format.parse("<thinking>hmm</thinking>").unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "required section `answer` is missing (line 1: `<thinking>hmm</thinking>`); \
//!      write it as <answer>…</answer>, closing the tag"
//! );
//!
//! // Formatting an observation for the model.
//! let observation = format.format_sections(&[FormattedSection::new("search", "3 results")]);
//! assert_eq!(observation, "<observation>\n<search>\n3 results\n</search>\n</observation>");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Start reading at [`TextFormat`]; the parsing rules of each format are on [`MarkdownFormat`]
//! and [`XmlFormat`].

mod error;
mod format;
#[doc(hidden)]
pub mod fuzzing;
mod lines;
mod markdown;
mod parsed;
mod registry;
mod section;
mod xml;

pub use error::ParseError;
pub use format::TextFormat;
pub use lines::strip_code_fence;
pub use markdown::MarkdownFormat;
pub use parsed::{Line, ParsedSections};
pub use section::{FormattedSection, MAX_SECTION_NAME_LEN, SectionNameError, TextSection};
pub use xml::{OBSERVATION_TAG, XmlFormat};
