"""openai-agents against `skein serve`: its default Responses model and
`OpenAIChatCompletionsModel`, each running an agent with a function tool and a Pydantic
`output_type` on the echo model (which calls every offered tool, then answers the output schema
with a valid instance). Tracing is off: nothing leaves loopback. See `checks.py`."""

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)

from checks import check, expect, openai_client, run_checks
from expected import City, expect_city

set_tracing_disabled(True)


async def run_agent(model_class):
    asked = []

    @function_tool
    def city_population(name: str) -> int:
        """The population of a city."""
        asked.append(name)
        return 2102650

    agent = Agent(
        name="geographer",
        instructions="Describe the city the user names; look its population up with the tool.",
        tools=[city_population],
        output_type=City,
        model=model_class(model="echo", openai_client=openai_client(asynchronous=True)),
    )
    result = await Runner.run(agent, "Describe Paris.", max_turns=4)
    expect(asked, "the function tool was never called")
    return f"tool called with {asked[0]!r}; " + expect_city(result.final_output, "final_output")


@check
async def responses_model_tool_and_output_type():
    return await run_agent(OpenAIResponsesModel)


@check
async def chat_completions_model_tool_and_output_type():
    return await run_agent(OpenAIChatCompletionsModel)


if __name__ == "__main__":
    run_checks()
