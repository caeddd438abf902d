//! The `Display` tree of every predefined chain: strict construction (the tree, or the error)
//! and the repaired tree with the repairs made.
#![cfg(feature = "testing")]

use chain_ast::ChainAst;
use chain_ast::testing::*;
use messages::Message;

fn render(chain: &[Message]) -> String {
    let strict = match ChainAst::new(chain, false) {
        Ok(ast) => format!("strict: ok\n{ast}"),
        Err(error) => format!("strict: {error}\n"),
    };
    let (ast, repairs) = ChainAst::repair(chain);
    let listed: String = repairs
        .iter()
        .map(|repair| format!("- {repair}\n"))
        .collect();
    format!("{strict}\nrepairs made: {}\n{listed}{ast}", repairs.len())
}

macro_rules! snapshot {
    ($($name:ident => $chain:expr),* $(,)?) => {$(
        #[test]
        fn $name() {
            insta::assert_snapshot!(stringify!($name), render(&$chain));
        }
    )*};
}

snapshot! {
    empty => empty_chain(),
    system_only => system_only_chain(),
    human_only => human_only_chain(),
    system_human => system_human_chain(),
    basic_conversation => basic_conversation_chain(),
    with_tool => chain_with_tool(),
    with_single_tool_response => chain_with_single_tool_response(),
    with_multiple_tools => chain_with_multiple_tools(),
    with_multiple_tool_responses => chain_with_multiple_tool_responses(),
    with_multiple_sections => chain_with_multiple_sections(),
    with_consecutive_humans => chain_with_consecutive_humans(),
    with_missing_tool_response => chain_with_missing_tool_response(),
    with_unexpected_tool => chain_with_unexpected_tool(),
    with_summarization => chain_with_summarization(),
    with_summarization_and_other_pairs => chain_with_summarization_and_other_pairs(),
    provider_switch => provider_switch_chain(false),
    provider_switch_with_reasoning => provider_switch_chain(true),
}
