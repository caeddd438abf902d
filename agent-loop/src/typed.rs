//! Typed (structured) runs: [`Agent::run_typed`] asks for JSON valid for a Rust type's schema
//! and reads the answer into it.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::{Agent, AgentError, AgentInput, AgentOutcome, ResponseFormat};

/// What a typed run returns: the answer read into `T`, and the run itself.
#[derive(Debug)]
pub struct Typed<T> {
    /// The final answer, parsed.
    pub value: T,
    /// The run (its `text` is the JSON answer). When the first answer had to be corrected, the
    /// conversation holds both answers and the correction.
    pub outcome: AgentOutcome,
}

impl Agent {
    /// Runs the agent on `input` with every answer asked for as JSON valid for the schema
    /// `schemars` derives for `T` (sent natively as each provider's structured-output field),
    /// and reads the final answer into `T`. Tools still work in the same run: the model calls
    /// them, then answers in the schema.
    ///
    /// A provider that cannot guarantee the schema may answer off it: the model is then told
    /// what was wrong (serde's message, with the path to the value) and asked once more.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use agent_loop::Agent;
    /// use providers::testing::EchoModel;
    ///
    /// #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    /// struct Person {
    ///     name: String,
    ///     age: u32,
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let agent = Agent::builder().model(Arc::new(EchoModel::new())).build()?;
    /// // The offline `echo` model answers a schema with an instance of it, built from the prompt.
    /// let person = agent.run_typed::<Person>("Ada").await?.value;
    /// assert_eq!(person.name, "Ada");
    /// assert_eq!(person.age, 0);
    /// # Ok::<(), agent_loop::AgentError>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    ///
    /// As [`run`](Agent::run), and [`AgentError::InvalidOutput`] (holding the last answer and
    /// what is wrong with it) when the corrected answer is not a valid `T` either.
    pub async fn run_typed<T: JsonSchema + DeserializeOwned>(
        &self,
        input: impl Into<AgentInput>,
    ) -> Result<Typed<T>, AgentError> {
        let mut inner = (*self.inner).clone();
        inner.options.response_format = Some(ResponseFormat::for_type::<T>());
        let agent = Agent {
            inner: std::sync::Arc::new(inner),
        };
        let outcome = agent.run(input).await?;
        let error = match parse::<T>(&outcome.text) {
            Ok(value) => return Ok(Typed { value, outcome }),
            Err(error) => error,
        };
        let correction = AgentInput::text(format!(
            "Your answer is not valid for the required JSON schema: {error}. Answer again with \
             only the JSON value, valid for the schema."
        ))
        .with_history(outcome.messages);
        let outcome = agent.run(correction).await?;
        match parse::<T>(&outcome.text) {
            Ok(value) => Ok(Typed { value, outcome }),
            Err(error) => Err(AgentError::InvalidOutput {
                type_name: std::any::type_name::<T>().to_owned(),
                text: outcome.text,
                error: error.to_string(),
            }),
        }
    }
}

/// `text` read as a `T`. Models without native structured output often wrap JSON in a
/// Markdown code fence or surround it with blank lines; both are looked past.
fn parse<T: DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    let trimmed = text.trim();
    let unfenced = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))
        .map_or(trimmed, str::trim);
    serde_json::from_str(unfenced)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn fences_and_blank_lines_are_looked_past() {
        let value: Vec<u8> = parse("\n```json\n[1, 2]\n```\n").unwrap();
        assert_eq!(value, [1, 2]);
        let value: Vec<u8> = parse(" [3] ").unwrap();
        assert_eq!(value, [3]);
        assert!(parse::<Vec<u8>>("[\"a\"]").is_err());
    }
}
