//! Arbitrary model output never panics the call parsers: whatever the model writes in its
//! action section, a text chain returns a result or a typed error, and every call it reads
//! is answered.

use crate::common;

use common::{block_on, tools};
use proptest::prelude::*;
use toolchain::{ExecutionContext, JsonToolChain, NativeToolChain, ToolCall, ToolChain, XmlFormat};

/// Text built from the pieces call parsers care about.
fn hostile() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just("\"tool\"".to_owned()),
        Just("\"args\"".to_owned()),
        Just("\"noop\"".to_owned()),
        Just("\"get_customer_info\"".to_owned()),
        Just(":".to_owned()),
        Just(",".to_owned()),
        Just("tool: ".to_owned()),
        Just("args:".to_owned()),
        Just("- ".to_owned()),
        Just("\n".to_owned()),
        Just("  ".to_owned()),
        Just("```".to_owned()),
        Just("&a *a !!str |".to_owned()),
        Just("null".to_owned()),
        Just("0x1F".to_owned()),
        any::<String>(),
    ];
    proptest::collection::vec(piece, 0..30).prop_map(|pieces| pieces.concat())
}

fn check(chain: &dyn ToolChain, content: &str) -> Result<(), TestCaseError> {
    let result = block_on(chain.execute(&ExecutionContext::new(), content, &XmlFormat::new()));
    if let Ok(result) = result {
        prop_assert_eq!(result.raw.results.len(), result.raw.calls.len());
        prop_assert_eq!(result.raw.errors.len(), result.raw.calls.len());
        prop_assert_eq!(result.text.is_empty(), result.raw.is_empty());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(768))]

    #[test]
    fn json_calls_never_panic(content in hostile()) {
        check(&JsonToolChain::new(tools()), &content)?;
    }

    #[cfg(feature = "yaml")]
    #[test]
    fn yaml_calls_never_panic(content in hostile()) {
        check(&toolchain::YamlToolChain::new(tools()), &content)?;
    }

    #[test]
    fn native_arguments_never_panic(name in "[a-z_]{0,20}|noop|get_customer_info", arguments in hostile()) {
        let round = block_on(NativeToolChain::new(tools()).execute(
            &ExecutionContext::new(),
            &[ToolCall::new("id", name, arguments)],
        ));
        prop_assert_eq!(round.messages.len(), 1);
    }
}
