//! `skein models`: the model registry, with context windows and which keys are set.

use std::io::Write;

use clap::Args;
use clap::builder::PossibleValuesParser;
use providers::{ECHO_MODEL_ID, ModelInfo, Provider};
use serde_json::json;
use service::keys::{ProviderKeys, key_variable};

use crate::CliError;

/// Arguments of `skein models`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  skein models                    the registry, and which provider keys are set
  skein models --provider google  only Gemini models
  skein models --json             the same as JSON, for scripts")]
pub(crate) struct ModelsArgs {
    /// Only models of this provider: openai, anthropic or google.
    #[arg(long, value_parser = PossibleValuesParser::new(registry_providers()))]
    provider: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &ModelsArgs, out: &mut impl Write) -> Result<(), CliError> {
    let keys = ProviderKeys::from_env();
    let models: Vec<ModelInfo> = ModelInfo::all()
        .filter(|info| {
            args.provider
                .as_deref()
                .is_none_or(|wanted| info.provider.as_str() == wanted)
        })
        .collect();
    if args.json {
        let keys_json: serde_json::Map<_, _> = Provider::ALL
            .into_iter()
            .map(|provider| {
                let variable = key_variable(provider).to_owned();
                (variable, json!(keys.get(provider).is_some()))
            })
            .collect();
        let rows: Vec<_> = models
            .iter()
            .map(|info| {
                json!({
                    "id": info.id,
                    "provider": info.provider.as_str(),
                    "context_window": info.context_window,
                    "max_output_tokens": info.max_output_tokens,
                    "reasoning": info.supports_reasoning,
                    "vision": info.supports_vision,
                    "key_set": keys.get(info.provider).is_some(),
                })
            })
            .collect();
        let document = json!({"keys": keys_json, "models": rows, "debug_model": ECHO_MODEL_ID});
        writeln!(out, "{}", serde_json::to_string_pretty(&document)?)?;
        return Ok(());
    }

    let status: Vec<String> = Provider::ALL
        .into_iter()
        .map(|provider| {
            let state = if keys.get(provider).is_some() {
                "set"
            } else {
                "not set"
            };
            format!("{} {state}", key_variable(provider))
        })
        .collect();
    writeln!(out, "Keys: {}", status.join(", "))?;
    writeln!(out)?;
    writeln!(
        out,
        "{:<10} {:<24} {:>10} {:>11}  {:<9} {:<6} KEY",
        "PROVIDER", "MODEL", "CONTEXT", "MAX OUTPUT", "REASONING", "VISION"
    )?;
    for info in &models {
        writeln!(
            out,
            "{:<10} {:<24} {:>10} {:>11}  {:<9} {:<6} {}",
            info.provider.as_str(),
            info.id,
            thousands(info.context_window),
            thousands(info.max_output_tokens),
            yes_no(info.supports_reasoning),
            yes_no(info.supports_vision),
            key_state(&keys, info.provider),
        )?;
    }
    if args.provider.is_none() {
        writeln!(
            out,
            "{:<10} {:<24} {:>10} {:>11}  {:<9} {:<6} not needed",
            "debug", ECHO_MODEL_ID, "-", "-", "-", "-"
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "Any other model id works too: ids are routed by prefix (gpt-, o1-, o3-, claude-, gemini-), \
         unknown ids go to OpenAI-compatible servers (--base-url). Without keys, `echo` answers offline."
    )?;
    if args.provider.is_none() {
        writeln!(
            out,
            "OpenRouter ({}): skein run --provider openrouter -m vendor/model (e.g. \
             anthropic/claude-sonnet-4.5); its openai/, anthropic/, google/ and deepseek/ models have \
             the figures above.",
            key_variable(Provider::OpenRouter)
        )?;
    }
    Ok(())
}

/// The names of the providers with models in the registry (OpenRouter serves the others'
/// models and has none of its own), in [`Provider::ALL`] order.
fn registry_providers() -> Vec<&'static str> {
    Provider::ALL
        .into_iter()
        .filter(|provider| ModelInfo::all().any(|info| info.provider == *provider))
        .map(Provider::as_str)
        .collect()
}

fn key_state(keys: &ProviderKeys, provider: Provider) -> String {
    if keys.get(provider).is_some() {
        "set".to_owned()
    } else {
        format!("missing ({})", key_variable(provider))
    }
}

fn yes_no(value: bool) -> &'static str {
    if value { "yes" } else { "no" }
}

/// `128000` → `128,000`.
fn thousands(value: u32) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::thousands;

    #[test]
    fn groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(2_097_152), "2,097,152");
    }
}
