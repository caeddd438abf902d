//! Tool-call id templates: make and check ids in a provider's format.
//!
//! Providers shape their tool-call ids differently (OpenAI `call_…`, Anthropic `toolu_…`, Kimi
//! `name:0`), and some reject ids of another shape. A template describes a shape:
//!
//! | piece | means |
//! |---|---|
//! | `{r:LEN:SET}` | `LEN` random characters from `SET` |
//! | `{f}` | the tool's name (`function` when the name is empty) |
//! | anything else | itself |
//!
//! `SET` is one of `d`/`digit` (0-9), `l`/`lower` (a-z), `u`/`upper` (A-Z), `a`/`alpha`
//! (a-z, A-Z), `x`/`alnum` (0-9, a-z, A-Z), `h`/`hex` (0-9, a-f), `H`/`HEX` (0-9, A-F),
//! `b`/`base62` (0-9, A-Z, a-z). A brace group that is not one of the two placeholders is
//! literal text (so `{r:5:zzz}` is just those nine characters), as is a random run longer than
//! [`MAX_RANDOM_RUN`] characters. Parsing never fails.
//!
//! Examples: OpenAI `call_{r:24:b}`, Anthropic `toolu_{r:24:b}`, Bedrock `tooluse_{r:22:x}`,
//! Gemini `{r:8:x}`, DeepSeek `call_{r:2:d}_{r:24:b}`, Kimi `{f}:{r:1:d}`, Qwen `call_{r:24:h}`.
//! Random characters come from the thread's cryptographically secure generator (`rand::rng()`).
//!
//! ```
//! use chain_ast::IdTemplate;
//!
//! let template = IdTemplate::new("toolu_{r:24:b}");
//! let id = template.generate("get_weather");
//! assert_eq!(id.len(), 30);
//! assert!(template.check(&id, "get_weather").is_ok());
//! assert!(template.check("call_abc", "get_weather").is_err());
//!
//! let kimi = IdTemplate::new("{f}:{r:1:d}");
//! assert!(kimi.generate("get_number").starts_with("get_number:"));
//! ```

use std::convert::Infallible;
use std::fmt;
use std::str::FromStr;

use rand::seq::IndexedRandom;

use crate::TOOL_CALL_ID_TEMPLATE;

/// The longest random run a `{r:LEN:SET}` placeholder may ask for; longer ones are literal text.
pub const MAX_RANDOM_RUN: usize = 1024;

/// A character set of a random run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Charset {
    Digit,
    Lower,
    Upper,
    Alpha,
    Alnum,
    Hex,
    HexUpper,
    Base62,
}

impl Charset {
    fn from_name(name: &str) -> Option<Charset> {
        Some(match name {
            "d" | "digit" => Charset::Digit,
            "l" | "lower" => Charset::Lower,
            "u" | "upper" => Charset::Upper,
            "a" | "alpha" => Charset::Alpha,
            "x" | "alnum" => Charset::Alnum,
            "h" | "hex" => Charset::Hex,
            "H" | "HEX" => Charset::HexUpper,
            "b" | "base62" => Charset::Base62,
            _ => return None,
        })
    }

    fn chars(self) -> &'static [u8] {
        match self {
            Charset::Digit => b"0123456789",
            Charset::Lower => b"abcdefghijklmnopqrstuvwxyz",
            Charset::Upper => b"ABCDEFGHIJKLMNOPQRSTUVWXYZ",
            Charset::Alpha => b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
            Charset::Alnum => b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
            Charset::Hex => b"0123456789abcdef",
            Charset::HexUpper => b"0123456789ABCDEF",
            Charset::Base62 => b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Charset::Digit => "a digit",
            Charset::Lower => "a lowercase letter",
            Charset::Upper => "an uppercase letter",
            Charset::Alpha => "a letter",
            Charset::Alnum | Charset::Base62 => "a letter or digit",
            Charset::Hex => "a lowercase hex digit",
            Charset::HexUpper => "an uppercase hex digit",
        }
    }

    fn contains(self, c: char) -> bool {
        u8::try_from(c).is_ok_and(|byte| self.chars().contains(&byte))
    }
}

/// One piece of a template.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Random(usize, Charset),
    Function,
}

/// A tool-call id template; see the [module docs](self) for the syntax.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdTemplate {
    source: String,
    segments: Vec<Segment>,
}

impl IdTemplate {
    /// Parses a template. Never fails: what is not a placeholder is literal text.
    pub fn new(template: &str) -> IdTemplate {
        let mut segments = Vec::new();
        let mut literal = String::new();
        let mut rest = template;
        while let Some(start) = rest.find('{') {
            let (before, from_brace) = rest.split_at(start);
            literal.push_str(before);
            match placeholder(from_brace) {
                Some((segment, length)) => {
                    if !literal.is_empty() {
                        segments.push(Segment::Literal(std::mem::take(&mut literal)));
                    }
                    segments.push(segment);
                    rest = from_brace.get(length..).unwrap_or_default();
                }
                None => {
                    literal.push('{');
                    rest = from_brace.get(1..).unwrap_or_default();
                }
            }
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            segments.push(Segment::Literal(literal));
        }
        IdTemplate {
            source: template.to_owned(),
            segments,
        }
    }

    /// The template's text.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// A new id for a call of `function_name`.
    pub fn generate(&self, function_name: &str) -> String {
        let mut rng = rand::rng();
        let mut id = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Literal(text) => id.push_str(text),
                Segment::Function => id.push_str(function_or_default(function_name)),
                Segment::Random(length, charset) => id.extend(
                    (0..*length)
                        .filter_map(|_| charset.chars().choose(&mut rng))
                        .map(|&byte| char::from(byte)),
                ),
            }
        }
        id
    }

    /// Checks that `id`, the id of a call of `function_name`, has this template's shape.
    ///
    /// # Errors
    ///
    /// [`IdMismatch::Length`] if the id has the wrong number of characters (checked first), else
    /// [`IdMismatch::Char`] at the first character that does not fit.
    pub fn check(&self, id: &str, function_name: &str) -> Result<(), IdMismatch> {
        let function_name = function_or_default(function_name);
        let expected: usize = self
            .segments
            .iter()
            .map(|segment| match segment {
                Segment::Literal(text) => text.chars().count(),
                Segment::Random(length, _) => *length,
                Segment::Function => function_name.chars().count(),
            })
            .sum();
        let found = id.chars().count();
        if found != expected {
            return Err(IdMismatch::Length {
                id: id.to_owned(),
                template: self.source.clone(),
                expected,
                found,
            });
        }
        let mut chars = id.chars().enumerate();
        let mismatch = |(position, found): (usize, char), expected: String| IdMismatch::Char {
            id: id.to_owned(),
            template: self.source.clone(),
            position,
            expected,
            found,
        };
        for segment in &self.segments {
            match segment {
                Segment::Literal(text) => check_literal(&mut chars, text, &mismatch)?,
                Segment::Function => check_literal(&mut chars, function_name, &mismatch)?,
                Segment::Random(length, charset) => {
                    for at in chars.by_ref().take(*length) {
                        if !charset.contains(at.1) {
                            return Err(mismatch(at, charset.describe().to_owned()));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Checks that the next characters are `text`.
fn check_literal(
    chars: &mut impl Iterator<Item = (usize, char)>,
    text: &str,
    mismatch: &impl Fn((usize, char), String) -> IdMismatch,
) -> Result<(), IdMismatch> {
    for (expected, at) in text.chars().zip(chars) {
        if at.1 != expected {
            return Err(mismatch(at, format!("{expected:?}")));
        }
    }
    Ok(())
}

fn function_or_default(name: &str) -> &str {
    if name.is_empty() { "function" } else { name }
}

/// The placeholder at the start of `text` (which starts with `{`) and its length in bytes.
fn placeholder(text: &str) -> Option<(Segment, usize)> {
    if text.starts_with("{f}") {
        return Some((Segment::Function, 3));
    }
    let inner = text.strip_prefix("{r:")?;
    let end = inner.find('}')?;
    let (length, charset) = inner.get(..end)?.split_once(':')?;
    if length.is_empty() || !length.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let length: usize = length.parse().ok().filter(|&n| n <= MAX_RANDOM_RUN)?;
    let charset = Charset::from_name(charset)?;
    Some((Segment::Random(length, charset), "{r:".len() + end + 1))
}

impl Default for IdTemplate {
    /// [`TOOL_CALL_ID_TEMPLATE`], `call_{r:24:x}`.
    fn default() -> Self {
        IdTemplate::new(TOOL_CALL_ID_TEMPLATE)
    }
}

impl From<&str> for IdTemplate {
    fn from(template: &str) -> Self {
        IdTemplate::new(template)
    }
}

impl FromStr for IdTemplate {
    type Err = Infallible;

    fn from_str(template: &str) -> Result<Self, Self::Err> {
        Ok(IdTemplate::new(template))
    }
}

impl fmt::Display for IdTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// An id that does not have a template's shape.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdMismatch {
    /// The id has the wrong number of characters.
    #[error(
        "tool call id {id:?} does not match template {template:?}: expected {expected} characters, \
         got {found}"
    )]
    Length {
        /// The id.
        id: String,
        /// The template's text.
        template: String,
        /// Characters the template makes.
        expected: usize,
        /// Characters the id has.
        found: usize,
    },
    /// A character does not fit the template.
    #[error(
        "tool call id {id:?} does not match template {template:?} at character {position}: \
         expected {expected}, got {found:?}"
    )]
    Char {
        /// The id.
        id: String,
        /// The template's text.
        template: String,
        /// 0-based character position.
        position: usize,
        /// What the template wants there.
        expected: String,
        /// The character found.
        found: char,
    },
}
