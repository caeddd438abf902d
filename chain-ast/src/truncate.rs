//! Cutting a long text in the middle: [`truncate_middle`].

/// `text` cut to `limit` characters with a notice in the middle saying how much went, or
/// `None` if it fits: 60 % of the kept characters from the start, 40 % from the end, so a
/// reader sees both how the text opens and how it ends, and knows it is incomplete. Cuts fall
/// on character boundaries.
///
/// ```
/// let text = format!("{}{}", "a".repeat(600), "b".repeat(400));
/// let cut = chain_ast::truncate_middle(&text, 100).expect("longer than 100 characters");
/// assert!(cut.starts_with(&"a".repeat(60)) && cut.ends_with(&"b".repeat(40)));
/// assert!(cut.contains("Original: 1000 chars, kept 100 chars (10%)"));
/// assert_eq!(chain_ast::truncate_middle("short", 100), None);
/// ```
pub fn truncate_middle(text: &str, limit: usize) -> Option<String> {
    // Bytes bound characters: a text of at most `limit` bytes fits without counting.
    if text.len() <= limit {
        return None;
    }
    let total = text.chars().count();
    if total <= limit {
        return None;
    }
    let head = limit * 6 / 10;
    let tail = limit - head;
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(total - tail)
        .map_or(text.len(), |(i, _)| i);
    let removed = total - limit;
    Some(format!(
        "{}\n\n[... Middle content truncated. Original: {total} chars, kept {limit} chars ({}%), \
         removed {removed} chars from middle ...]\n\n{}",
        &text[..head_end],
        limit * 100 / total,
        &text[tail_start..],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_head_and_tail_and_says_what_went() {
        let text = format!("{}{}", "a".repeat(600), "b".repeat(400));
        let cut = truncate_middle(&text, 100).expect("too long");
        assert!(cut.starts_with(&"a".repeat(60)));
        assert!(cut.ends_with(&"b".repeat(40)));
        assert!(cut.contains(
            "[... Middle content truncated. Original: 1000 chars, kept 100 chars (10%), removed \
             900 chars from middle ...]"
        ));
        assert_eq!(truncate_middle("short", 100), None);
        // Multi-byte characters are cut on character boundaries.
        assert!(truncate_middle(&"é".repeat(300), 100).is_some());
        // Nothing kept but the notice.
        let none = truncate_middle("abc", 0).expect("longer than nothing");
        assert!(none.contains("kept 0 chars (0%)"));
    }
}
