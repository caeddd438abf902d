//! Builds one generated chain of N messages (`cargo run --release -p chain-ast --features testing
//! --example build_instructions -- N`), for counting the instructions of `ChainAst::new` with
//! `valgrind --tool=callgrind --toggle-collect='*ChainAst*new*'`: a count does not depend on
//! caches or on what else the machine runs, so it shows how the work itself scales.

use chain_ast::ChainAst;
use chain_ast::testing::{ChainConfig, generate_chain};

fn main() {
    let size: usize = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(10_000);
    let sections = size / 6;
    let pairs = sections * 3;
    let messages = generate_chain(&ChainConfig {
        include_system: true,
        sections,
        body_pairs_per_section: vec![3; sections],
        tools_for_body_pairs: (0..pairs).map(|pair| pair % 3 == 0).collect(),
        tool_calls_per_body_pair: vec![2; pairs],
        include_all_tool_responses: true,
    });
    let ast = ChainAst::new(&messages, false).expect("a generated chain is valid");
    println!("{} messages", ast.messages().len());
}
