//! Prompt texts (`describe_tools`, the section guidance) and the specs offered to providers.

use crate::common;

use common::{GetCustomerInfo, GetFlightInfo, Screenshot};
use toolchain::{JsonToolChain, ToolChain, ToolSet};

fn tools() -> ToolSet {
    ToolSet::new()
        .with(GetCustomerInfo)
        .and_then(|tools| tools.with(GetFlightInfo))
        .and_then(|tools| tools.with(Screenshot))
        .unwrap()
}

#[test]
fn json_describe_tools() {
    insta::assert_snapshot!(JsonToolChain::new(tools()).describe_tools());
}

#[cfg(feature = "yaml")]
#[test]
fn yaml_describe_tools() {
    insta::assert_snapshot!(toolchain::YamlToolChain::new(tools()).describe_tools());
}

#[test]
fn no_tools_nothing_to_describe() {
    assert_eq!(JsonToolChain::new(ToolSet::new()).describe_tools(), "");
}

#[test]
fn the_section_to_register() {
    let section = JsonToolChain::new(tools()).section();
    assert_eq!(section.name(), "action");
    assert_eq!(
        section.description(),
        "Tool calls, in the JSON format described under Available tools."
    );
    assert!(!section.is_required());
    assert!(section.may_repeat());
}

#[test]
fn tool_specs_are_provider_shaped() {
    // Inlined object schemas without `$schema` / `title`, field docs as descriptions.
    insta::assert_json_snapshot!(JsonToolChain::new(tools()).tool_specs());
}
