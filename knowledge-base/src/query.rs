//! Turning what a user or a model typed into a safe full-text query.
//!
//! Nothing of the input reaches the query syntax of SQLite FTS5 or PostgreSQL's
//! `websearch_to_tsquery`: each word (split at white space) keeps only its letters and digits,
//! becomes a quoted phrase of those (so `previous_response_id` is the phrase `"previous
//! response id"`, as the index tokenised it), and the phrases are joined with OR. Quotes,
//! `*`, `-`, `^`, `:`, parentheses and the words `NEAR`, `AND`, `OR`, `NOT` are thus plain
//! text or nothing.
//!
//! English stop words (`a`, `the`, `of`, …) are left out: OR'ed in, they match nearly every
//! passage, so "rotating a token" found passages whose only match was "a". The list is
//! PostgreSQL's `english` one, so both backends search the same words.

/// Most phrases a query keeps.
const MAX_PHRASES: usize = 32;
/// Most words a phrase keeps.
const MAX_WORDS: usize = 8;
/// Most characters a word keeps.
const MAX_WORD_CHARS: usize = 64;

/// PostgreSQL's `english` stop words (Snowball's list), sorted for a binary search.
const STOP_WORDS: [&str; 127] = [
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "did",
    "do",
    "does",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "s",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Whether every word of a phrase is a stop word: such a phrase matches nearly everything.
fn only_stop_words(words: &[String]) -> bool {
    words.iter().all(|word| {
        STOP_WORDS
            .binary_search(&word.to_lowercase().as_str())
            .is_ok()
    })
}

/// The phrases of a query: each a list of words of letters and digits only.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Phrases(Vec<Vec<String>>);

impl Phrases {
    pub(crate) fn parse(query: &str) -> Phrases {
        let mut phrases: Vec<Vec<String>> = Vec::new();
        for word in query.split_whitespace() {
            let words: Vec<String> = word
                .split(|c: char| !c.is_alphanumeric())
                .filter(|part| !part.is_empty())
                .take(MAX_WORDS)
                .map(|part| part.chars().take(MAX_WORD_CHARS).collect())
                .collect();
            if words.is_empty() || only_stop_words(&words) {
                continue;
            }
            let duplicate = phrases.iter().any(|known| {
                known.len() == words.len()
                    && known
                        .iter()
                        .zip(&words)
                        .all(|(a, b)| a.to_lowercase() == b.to_lowercase())
            });
            if !duplicate {
                phrases.push(words);
            }
            if phrases.len() == MAX_PHRASES {
                break;
            }
        }
        Phrases(phrases)
    }

    /// Whether nothing searchable is left.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// An FTS5 query: `"a" OR "b c"`.
    pub(crate) fn fts5(&self) -> String {
        self.join(" OR ")
    }

    /// A `websearch_to_tsquery` query: `"a" or "b c"`.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn websearch(&self) -> String {
        self.join(" or ")
    }

    fn join(&self, or: &str) -> String {
        self.0
            .iter()
            .map(|words| format!("\"{}\"", words.join(" ")))
            .collect::<Vec<_>>()
            .join(or)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_become_quoted_phrases_of_letters_and_digits() {
        let phrases = Phrases::parse("previous_response_id  WAL mode* -x \"NEAR( b");
        assert_eq!(
            phrases.fts5(),
            r#""previous response id" OR "WAL" OR "mode" OR "x" OR "NEAR" OR "b""#
        );
        assert_eq!(
            phrases.websearch(),
            r#""previous response id" or "WAL" or "mode" or "x" or "NEAR" or "b""#
        );
    }

    #[test]
    fn stop_words_are_left_out_unless_part_of_a_phrase() {
        assert!(STOP_WORDS.is_sorted());
        assert_eq!(
            Phrases::parse("rotating A token, The of").fts5(),
            r#""rotating" OR "token""#
        );
        assert_eq!(Phrases::parse("out_of_date").fts5(), r#""out of date""#);
        assert!(Phrases::parse("what is it").is_empty());
    }

    #[test]
    fn punctuation_only_is_empty_and_repeats_are_dropped() {
        assert!(Phrases::parse(r#" "" ) ( * - ^ : "#).is_empty());
        assert_eq!(Phrases::parse("wal WAL Wal").fts5(), r#""wal""#);
    }

    #[test]
    fn long_queries_are_bounded() {
        let query = "word ".repeat(100) + &(0..100).map(|i| format!("w{i} ")).collect::<String>();
        assert_eq!(Phrases::parse(&query).0.len(), MAX_PHRASES);
    }
}
