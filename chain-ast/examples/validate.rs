//! Validates a chain, repairs it and prints its tree.
//!
//! ```sh
//! cargo run -p chain-ast --example validate                  # a built-in broken chain
//! cargo run -p chain-ast --example validate -- chain.json    # a transcript file
//! ```

use std::process::ExitCode;

use chain_ast::{ChainAst, message_size};
use messages::{Message, ToolCall};

fn main() -> ExitCode {
    let chain = match std::env::args().nth(1) {
        Some(path) => match std::fs::read_to_string(&path)
            .map_err(|error| error.to_string())
            .and_then(|text| {
                messages::transcript::from_json(&text).map_err(|error| error.to_string())
            }) {
            Ok(chain) => chain,
            Err(error) => {
                eprintln!("cannot read {path}: {error}");
                return ExitCode::FAILURE;
            }
        },
        None => demo_chain(),
    };

    println!(
        "{} messages, {} bytes",
        chain.len(),
        chain.iter().map(message_size).sum::<usize>()
    );
    match ChainAst::new(&chain, false) {
        Ok(ast) => {
            println!("valid\n\n{ast}");
            return ExitCode::SUCCESS;
        }
        Err(error) => println!("invalid: {error}\n"),
    }

    let (ast, repairs) = ChainAst::repair(&chain);
    println!("repaired {} problems:", repairs.len());
    for repair in &repairs {
        println!("- {repair}");
    }
    println!("\n{ast}");
    match ast.validate() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("the repaired chain is still invalid: {error}");
            ExitCode::FAILURE
        }
    }
}

/// A chain with three problems: two human messages in a row, a call without a response and a
/// tool message after a plain answer.
fn demo_chain() -> Vec<Message> {
    vec![
        Message::system("You are a helpful assistant."),
        Message::human("What's the weather in Paris?"),
        Message::human("And in Rome?"),
        Message::ai_tool_calls(
            Some("Let me check both.".into()),
            vec![
                ToolCall::new("call_1", "get_weather", r#"{"city": "Paris"}"#),
                ToolCall::new("call_2", "get_weather", r#"{"city": "Rome"}"#),
            ],
        ),
        Message::tool_response("call_1", "get_weather", "Paris: 18°C, clear"),
        Message::ai("Paris is clear at 18°C; Rome did not answer."),
        Message::tool_response("call_2", "get_weather", "Rome: 24°C, sunny"),
    ]
}
