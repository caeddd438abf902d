//! Typed (structured) runs: [`Agent::run_typed`] asks for JSON valid for a Rust type's schema
//! and reads the answer into it.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::{Agent, AgentError, AgentInput, AgentOutcome, ResponseFormat};

mod check;

use check::Checker;

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
    /// Every answer is checked in three steps: it must be JSON (a Markdown code fence around
    /// it is looked past), valid for the schema that was sent (with the default feature
    /// `validate`; every violation is named with its path), and readable as a `T` by serde
    /// (the last word: a type and its schema can disagree).
    ///
    /// A provider that cannot guarantee the schema may answer off it: the model is then told
    /// every violation and asked once more. One that enforces it while sampling
    /// ([`ChatModel::guarantees_schema`](providers::ChatModel::guarantees_schema): OpenAI's
    /// strict schemas) is not asked again, since a second answer under the same constraint
    /// would fail the same way: an invalid answer there (cut short by the token limit, say)
    /// is an error at once.
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
    /// everything wrong with it) when the last answer is not a valid `T`.
    pub async fn run_typed<T: JsonSchema + DeserializeOwned>(
        &self,
        input: impl Into<AgentInput>,
    ) -> Result<Typed<T>, AgentError> {
        let format = ResponseFormat::for_type::<T>();
        let checker = Checker::new(format.schema());
        let guaranteed = self.inner.model.guarantees_schema(&format);
        let mut inner = (*self.inner).clone();
        inner.options.response_format = Some(format);
        let agent = Agent {
            inner: std::sync::Arc::new(inner),
        };
        let outcome = agent.run(input).await?;
        let error = match checker.check::<T>(&outcome.text) {
            Ok(value) => return Ok(Typed { value, outcome }),
            Err(error) if guaranteed => return Err(invalid::<T>(outcome.text, error, 1)),
            Err(error) => error,
        };
        let correction = AgentInput::text(format!(
            "Your answer is not valid for the required JSON schema: {error}. Answer again with \
             only the JSON value, valid for the schema."
        ))
        .with_history(outcome.messages);
        let outcome = agent.run(correction).await?;
        match checker.check::<T>(&outcome.text) {
            Ok(value) => Ok(Typed { value, outcome }),
            Err(error) => Err(invalid::<T>(outcome.text, error, 2)),
        }
    }
}

/// The error of a typed run whose `attempts`-th answer, `text`, is still not a valid `T`.
fn invalid<T>(text: String, error: String, attempts: usize) -> AgentError {
    AgentError::InvalidOutput {
        type_name: std::any::type_name::<T>().to_owned(),
        text,
        error,
        attempts,
    }
}
