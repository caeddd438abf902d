use std::fmt;

/// The longest section name accepted, in bytes (the limit providers put on tool names).
pub const MAX_SECTION_NAME_LEN: usize = 64;

/// A section a model is asked to write, such as `thinking`, `action` or `answer`.
///
/// A section has a name, a description (the guidance shown to the model by
/// [`TextFormat::describe_structure`](crate::TextFormat::describe_structure)), and two rules that
/// [`TextFormat::parse`](crate::TextFormat::parse) enforces: whether it is *required* and whether
/// it *may repeat*. By default a section is optional and may repeat, which is what a ReAct loop
/// wants for `thinking` and `action`.
///
/// ```
/// use text_format::TextSection;
///
/// let answer = TextSection::new("answer", "Your final answer.")?
///     .required(true)
///     .repeatable(false);
/// assert_eq!(answer.name(), "answer");
/// assert!(answer.is_required());
/// assert!(!answer.may_repeat());
/// # Ok::<(), text_format::SectionNameError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextSection {
    name: String,
    description: String,
    required: bool,
    repeatable: bool,
}

impl TextSection {
    /// An optional, repeatable section.
    ///
    /// The name must be 1 to 64 ASCII letters, digits, `_`, `-` or `.`: a name both formats can
    /// write (`# name`, `<name>`) and the same alphabet providers allow for tool names.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Result<Self, SectionNameError> {
        let name = name.into();
        validate_name(&name)?;
        Ok(TextSection {
            name,
            description: description.into(),
            required: false,
            repeatable: true,
        })
    }

    /// Sets whether parsing fails when the section is missing.
    #[must_use]
    pub fn required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }

    /// Sets whether the section may appear more than once.
    #[must_use]
    pub fn repeatable(mut self, repeatable: bool) -> Self {
        self.repeatable = repeatable;
        self
    }

    /// The name, as registered (parsing matches it case-insensitively).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The guidance shown to the model.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Whether parsing fails when the section is missing.
    pub fn is_required(&self) -> bool {
        self.required
    }

    /// Whether the section may appear more than once.
    pub fn may_repeat(&self) -> bool {
        self.repeatable
    }
}

/// Why a name cannot be a section name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SectionNameError {
    /// The name is empty.
    #[error("a section name must not be empty")]
    Empty,
    /// The name is longer than [`MAX_SECTION_NAME_LEN`] bytes.
    #[error("section name `{name}` is {len} bytes long; the limit is {MAX_SECTION_NAME_LEN}")]
    TooLong {
        /// The rejected name.
        name: String,
        /// Its length in bytes.
        len: usize,
    },
    /// The name holds a character outside `A-Z a-z 0-9 _ - .`.
    #[error(
        "section name `{name}` contains {found:?}; use only ASCII letters, digits, `_`, `-` and `.`"
    )]
    InvalidChar {
        /// The rejected name.
        name: String,
        /// The first character that is not allowed.
        found: char,
    },
}

fn validate_name(name: &str) -> Result<(), SectionNameError> {
    if name.is_empty() {
        return Err(SectionNameError::Empty);
    }
    if name.len() > MAX_SECTION_NAME_LEN {
        return Err(SectionNameError::TooLong {
            name: name.to_owned(),
            len: name.len(),
        });
    }
    match name.chars().find(|&c| !is_name_char(c)) {
        Some(found) => Err(SectionNameError::InvalidChar {
            name: name.to_owned(),
            found,
        }),
        None => Ok(()),
    }
}

/// Whether `c` may appear in a section name.
pub(crate) fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// One section of model *input*: a name and its already-rendered content.
///
/// [`TextFormat::format_sections`](crate::TextFormat::format_sections) turns a list of these into
/// the text a model reads, e.g. a tool observation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FormattedSection {
    /// The section name (for tool observations: the tool's name).
    pub name: String,
    /// The section's content, written as is.
    pub content: String,
}

impl FormattedSection {
    /// A section named `name` holding `content`.
    pub fn new(name: impl Into<String>, content: impl Into<String>) -> Self {
        FormattedSection {
            name: name.into(),
            content: content.into(),
        }
    }
}

impl fmt::Display for TextSection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}
