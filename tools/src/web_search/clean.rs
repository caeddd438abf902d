//! Text from what search backends send: HTML tags dropped, entities decoded, white space
//! collapsed, long snippets cut.

/// `text` cut to `max` characters, ending with `…` when cut.
pub(super) fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", text[..end].trim_end()),
        None => text.to_owned(),
    }
}

/// Tags that mark up words rather than separate them.
const INLINE_TAGS: [&str; 9] = ["a", "b", "em", "i", "mark", "small", "span", "strong", "u"];

/// Text from a snippet that may hold HTML: tags (`<strong>`, `</b>`, `<br/>`, comments) are
/// dropped, entities (`&amp;`, `&#39;`, `&#x27;`) decoded, and runs of whitespace become one
/// space. A `<` that does not open a tag (`a < b`) stays.
pub(super) fn clean_text(text: &str) -> String {
    let mut stripped = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        stripped.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let opens_tag = after
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '/' || c == '!');
        match after.find('>') {
            Some(end) if opens_tag => {
                // An inline tag (`<strong>Rust</strong>'s`) joins what surrounds it; any other
                // (`a<br>b`, `</p><p>`) separates it.
                let name = after[..end]
                    .trim_start_matches('/')
                    .split(|c: char| c.is_whitespace() || c == '/')
                    .next()
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                if !INLINE_TAGS.contains(&name.as_str()) {
                    stripped.push(' ');
                }
                rest = &after[end + 1..];
            }
            _ => {
                stripped.push('<');
                rest = after;
            }
        }
    }
    stripped.push_str(rest);
    let decoded = decode_entities(&stripped);
    decoded.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` with HTML character references decoded (the named ones search engines use, and
/// every numeric one); an unknown or malformed reference stays as written.
fn decode_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('&') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let decoded = after
            .find(';')
            .filter(|&end| end > 0 && end <= 10)
            .and_then(|end| entity(&after[..end]).map(|c| (c, end)));
        match decoded {
            Some((c, end)) => {
                out.push(c);
                rest = &after[end + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn entity(name: &str) -> Option<char> {
    if let Some(number) = name.strip_prefix('#') {
        let code = match number.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => number.parse().ok()?,
        };
        return char::from_u32(code).filter(|c| *c != '\0');
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "ndash" => '–',
        "mdash" => '—',
        "hellip" => '…',
        "laquo" => '«',
        "raquo" => '»',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "middot" => '·',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_become_plain_text() {
        assert_eq!(
            clean_text("The <strong>Rust</strong> Programming Language &amp; more&hellip;"),
            "The Rust Programming Language & more…"
        );
        assert_eq!(clean_text("It&#39;s &#x27;fast&#x27;"), "It's 'fast'");
        assert_eq!(clean_text("line<br/>break"), "line break");
        assert_eq!(clean_text("a < b and c > d"), "a < b and c > d");
        assert_eq!(clean_text("&lt;strong&gt; is a tag"), "<strong> is a tag");
        assert_eq!(clean_text("  spaced \n\t out  "), "spaced out");
        assert_eq!(clean_text("AT&T &bogus; &#xZZ; &"), "AT&T &bogus; &#xZZ; &");
        assert_eq!(clean_text("<!-- note -->kept"), "kept");
        assert_eq!(clean_text("unclosed <b tag"), "unclosed <b tag");
        assert_eq!(clean_text("&#0; &#1114112;"), "&#0; &#1114112;");
    }

    #[test]
    fn long_snippets_are_cut_on_a_character() {
        assert_eq!(cut("héllo wörld", 5), "héllo…");
        assert_eq!(cut("short", 5), "short");
    }
}
