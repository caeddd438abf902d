//! [`Redactor`]: removes secrets (API keys, bearer tokens) from text before anyone reads it.
//!
//! A provider, an MCP server or a search backend that echoes the credential it was sent (in an
//! error body, a JSON-RPC error, a tool result) must not hand it to whoever reads that text: a
//! client, a log, the conversation store. Every crate that quotes such text redacts it with
//! this one type: the secrets it was told about, in every form they may be quoted in, plus the
//! value after any credential header or parameter name (`Authorization: Bearer …`,
//! `x-api-key: …`, `?key=…`), whoever set it.

/// What a removed secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Shortest end of a secret that is removed when a text ends with it (an excerpt cut inside
/// the key): shorter ends are too likely to be ordinary text.
const MIN_SECRET_TAIL: usize = 6;

/// Secrets shorter than this (not real keys, but configurable) are removed only where they
/// stand as a whole word, so that a key `x` does not erase every `x` of a message.
const MIN_SUBSTRING_SECRET: usize = 8;

/// Header and parameter names whose values are credentials wherever they appear in a text
/// (`Authorization: Bearer …`, `"x-api-key": "…"`, `?key=…`).
const CREDENTIAL_NAMES: &[&str] = &[
    "proxy-authorization",
    "authorization",
    "x-goog-api-key",
    "x-api-key",
    "api-key",
    "api_key",
    "apikey",
];

/// Authentication schemes kept in front of a redacted credential.
const SCHEMES: &[&str] = &["bearer", "basic", "token"];

/// Removes secrets from text: the values it was given, and any credential header or parameter
/// value whoever set it.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Each secret in the forms it may be quoted in (as is, JSON-escaped), longest first.
    secrets: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor {{ secrets: {} }}", self.secrets.len())
    }
}

impl Redactor {
    /// A redactor that knows no secret yet (it still removes credential header and
    /// parameter values).
    pub fn new() -> Self {
        Redactor::default()
    }

    /// Whether it knows no secret.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// Learns `secret`: as given, trimmed, and (for a credential header value such as
    /// `Bearer sk-…`, which may be echoed without its scheme) the part after its first space;
    /// each also as it reads inside a JSON string. An empty secret is ignored.
    pub fn add(&mut self, secret: &str) {
        self.add_form(secret);
        let trimmed = secret.trim();
        self.add_form(trimmed);
        if let Some((_, token)) = trimmed.split_once(' ') {
            self.add_form(token.trim());
        }
    }

    /// [`add`](Self::add), by value.
    #[must_use]
    pub fn with(mut self, secret: &str) -> Self {
        self.add(secret);
        self
    }

    /// Learns every secret `other` knows.
    pub fn extend(&mut self, other: &Redactor) {
        for secret in &other.secrets {
            if !self.secrets.contains(secret) {
                self.secrets.push(secret.clone());
            }
        }
        self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }

    fn add_form(&mut self, secret: &str) {
        if secret.is_empty() {
            return;
        }
        let escaped = serde_json::to_string(secret).unwrap_or_default();
        let escaped = escaped
            .strip_prefix('"')
            .and_then(|e| e.strip_suffix('"'))
            .unwrap_or_default();
        for form in [
            secret.to_owned(),
            escaped.to_owned(),
            escaped.replace('/', "\\/"),
        ] {
            if !form.is_empty() && !self.secrets.contains(&form) {
                self.secrets.push(form);
            }
        }
        // Longest first, so a secret containing another is removed whole.
        self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }

    /// `text` without any configured secret, any credential header or parameter value, and
    /// without a trailing start of a secret (a quote cut inside the key).
    pub fn redact(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for secret in &self.secrets {
            if !text.contains(secret.as_str()) {
                continue;
            }
            text = if secret.len() >= MIN_SUBSTRING_SECRET {
                text.replace(secret.as_str(), REDACTED)
            } else {
                replace_words(&text, secret)
            };
        }
        self.redact_cut_tail(&mut text);
        redact_credentials(&text)
    }

    fn redact_cut_tail(&self, text: &mut String) {
        let body_end = text.strip_suffix('…').map_or(text.len(), str::len);
        for secret in &self.secrets {
            let longest = secret.len().saturating_sub(1);
            for k in (MIN_SECRET_TAIL..=longest).rev() {
                if !secret.is_char_boundary(k) {
                    continue;
                }
                if text[..body_end].ends_with(&secret[..k]) {
                    text.replace_range(body_end - k..body_end, REDACTED);
                    return;
                }
            }
        }
    }

    /// Redacts `text` in place (it is replaced only when something was removed).
    pub fn redact_in_place(&self, text: &mut String) {
        let clean = self.redact(text);
        if clean != *text {
            *text = clean;
        }
    }

    /// Redacts every string of `value` (object keys included) in place.
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(text) => self.redact_in_place(text),
            serde_json::Value::Array(items) => {
                for item in items {
                    self.redact_json(item);
                }
            }
            serde_json::Value::Object(map) => {
                let entries = std::mem::take(map);
                for (mut key, mut item) in entries {
                    self.redact_in_place(&mut key);
                    self.redact_json(&mut item);
                    map.insert(key, item);
                }
            }
            _ => {}
        }
    }
}

/// `text` with every occurrence of `word` not touching a letter, digit, `-` or `_` replaced.
fn replace_words(text: &str, word: &str) -> String {
    let is_word =
        |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || matches!(c, '-' | '_'));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(found) = text[at..].find(word) {
        let start = at + found;
        let end = start + word.len();
        out.push_str(&text[at..start]);
        if is_word(text[..start].chars().next_back()) || is_word(text[end..].chars().next()) {
            out.push_str(word);
        } else {
            out.push_str(REDACTED);
        }
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// `text` with the value after every credential name (`Authorization: Bearer x`,
/// `"x-api-key":"x"`, `key=x`) and after every `Bearer ` replaced by [`REDACTED`].
fn redact_credentials(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    // (start, end) byte ranges of values to remove.
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for name in CREDENTIAL_NAMES.iter().chain(&["bearer"]) {
        let mut from = 0;
        while let Some(found) = lower[from..].find(name) {
            let start = from + found;
            from = start + name.len();
            if let Some(range) = value_after(text, &lower, start, name) {
                ranges.push(range);
            }
        }
    }
    // `?key=…` / `&key=…`: Gemini's key as a query parameter.
    for marker in ["?key=", "&key="] {
        let mut from = 0;
        while let Some(found) = lower[from..].find(marker) {
            let start = from + found + marker.len();
            from = start;
            let end = token_end(text, start);
            if end > start {
                ranges.push((start, end));
            }
        }
    }
    if ranges.is_empty() {
        return text.to_owned();
    }
    ranges.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in ranges {
        if start < at {
            // Overlapping ranges (`Authorization: Bearer x` is found twice): extend.
            if end > at {
                at = end;
            }
            continue;
        }
        out.push_str(&text[at..start]);
        out.push_str(REDACTED);
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// The value following credential name `name` found at `start`, if the name is used as a
/// header, field or parameter there (followed by `:` or `=`; for `bearer`, by a space).
fn value_after(text: &str, lower: &str, start: usize, name: &str) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    // The name must not be the end of a longer word (`x-api-key` inside `proxy-x-api-key` is
    // fine either way, `keyboard` is not a match for anything here).
    if start > 0 && bytes[start - 1].is_ascii_alphanumeric() {
        return None;
    }
    let mut at = start + name.len();
    if name == "bearer" {
        if !bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
            return None;
        }
    } else {
        // Closing quote of a JSON key, spaces, then `:` or `=`.
        while bytes
            .get(at)
            .is_some_and(|b| matches!(b, b'"' | b'\'' | b' ' | b'\\'))
        {
            at += 1;
        }
        if !bytes.get(at).is_some_and(|b| matches!(b, b':' | b'=')) {
            return None;
        }
        at += 1;
    }
    while bytes
        .get(at)
        .is_some_and(|b| matches!(b, b'"' | b'\'' | b' ' | b'\t' | b'\\'))
    {
        at += 1;
    }
    // `Authorization: Bearer x`: keep the scheme, remove what follows it.
    for scheme in SCHEMES {
        if lower[at..].starts_with(scheme)
            && bytes.get(at + scheme.len()).is_some_and(|b| *b == b' ')
        {
            at += scheme.len();
            while bytes.get(at).is_some_and(|b| *b == b' ') {
                at += 1;
            }
            break;
        }
    }
    let end = token_end(text, at);
    (end > at).then_some((at, end))
}

/// Where a credential starting at `start` ends: at whitespace, a quote, a separator or the
/// end of the text.
fn token_end(text: &str, start: usize) -> usize {
    text[start..]
        .find(|c: char| {
            c.is_whitespace() || matches!(c, '"' | '\'' | ',' | ';' | '&' | '}' | '\\' | '<' | '>')
        })
        .map_or(text.len(), |end| start + end)
}

/// Whether a header, parameter or environment variable of this name carries a credential (its
/// value is a secret to redact, never to show).
pub fn looks_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "authorization",
        "key",
        "token",
        "secret",
        "cookie",
        "password",
    ]
    .iter()
    .any(|word| name.contains(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor() -> Redactor {
        Redactor::new()
            .with("sk-server-SECRET-0123456789")
            .with("Bearer proxy-SECRET-99")
    }

    #[test]
    fn known_secrets_are_removed_in_every_form() {
        let r = redactor();
        for text in [
            "Incorrect API key provided: sk-server-SECRET-0123456789.",
            r#"{"echo": "sk-server-SECRET-0123456789"}"#,
            "token proxy-SECRET-99 refused",
            "cut inside the key: sk-server-SECR…",
            "cut inside the key: sk-server-SE",
        ] {
            let clean = r.redact(text);
            assert!(!clean.contains("SECRET"), "{text} -> {clean}");
            assert!(!clean.contains("sk-server-SE"), "{text} -> {clean}");
            assert!(clean.contains(REDACTED), "{text} -> {clean}");
        }
        assert_eq!(r.redact("nothing to hide"), "nothing to hide");
    }

    #[test]
    fn short_secrets_are_removed_only_as_whole_words() {
        let r = Redactor::new().with("x");
        assert_eq!(
            r.redact("Proxy-Authorization max"),
            "Proxy-Authorization max"
        );
        assert_eq!(r.redact("key x refused"), "key [REDACTED] refused");
    }

    #[test]
    fn credential_headers_and_parameters_are_removed_whoever_set_them() {
        let r = Redactor::default();
        for (text, kept) in [
            (
                "Authorization: Bearer abc.def-ghi",
                "Authorization: Bearer ",
            ),
            (
                r#"{"authorization":"Bearer abc.def"}"#,
                r#"{"authorization":"Bearer "#,
            ),
            (r#"headers: {"x-api-key": "abc123"}"#, r#"{"x-api-key": ""#),
            ("x-goog-api-key=AIzaXYZ; next", "x-goog-api-key="),
            ("GET /v1beta/models?key=AIzaXYZ&alt=sse", "?key="),
            ("proxy-authorization: Basic dXNlcjpwYXNz", "Basic "),
            (r#"{\"authorization\": \"Bearer abc\"}"#, "Bearer "),
        ] {
            let clean = r.redact(text);
            assert!(clean.contains(REDACTED), "{text} -> {clean}");
            assert!(clean.contains(kept), "{text} -> {clean}");
            for secret in ["abc", "AIzaXYZ", "dXNlcjpwYXNz"] {
                assert!(!clean.contains(secret), "{text} -> {clean}");
            }
        }
        assert_eq!(r.redact("the keyboard is fine"), "the keyboard is fine");
        assert_eq!(
            r.redact("authorization failed for this request"),
            "authorization failed for this request"
        );
    }

    #[test]
    fn json_strings_and_keys_are_redacted_and_the_rest_kept() {
        let r = redactor();
        let mut value = serde_json::json!({
            "error": {"message": "bad token sk-server-SECRET-0123456789", "code": 401},
            "sk-server-SECRET-0123456789": [true, "proxy-SECRET-99"],
        });
        r.redact_json(&mut value);
        let text = value.to_string();
        assert!(!text.contains("SECRET"), "{text}");
        assert_eq!(value["error"]["code"], 401);
    }

    #[test]
    fn extend_learns_the_other_secrets() {
        let mut r = Redactor::new();
        assert!(r.is_empty());
        r.extend(&redactor());
        assert!(!r.redact("sk-server-SECRET-0123456789").contains("SECRET"));
    }
}
