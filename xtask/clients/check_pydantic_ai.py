"""pydantic-ai against `skein serve`: an agent with a tool, and one with a `NativeOutput` schema,
on the echo model (which calls every offered tool, then answers; and answers a schema with a
valid instance). See `checks.py` for how the xtask runs it."""

from pydantic_ai import Agent, NativeOutput
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from checks import BASE_URL, SKEIN_TOKEN, check, expect, run_checks
from expected import City, expect_city

POPULATION = 2102650


def echo_model():
    return OpenAIChatModel("echo", provider=OpenAIProvider(base_url=BASE_URL, api_key=SKEIN_TOKEN))


@check
def tool():
    agent = Agent(echo_model(), instructions="Look the population up with the tool.")
    asked = []

    @agent.tool_plain
    def city_population(name: str) -> int:
        """The population of a city."""
        asked.append(name)
        return POPULATION

    result = agent.run_sync("How many people live in Paris?")
    expect(asked, "the tool was never called")
    expect(isinstance(result.output, str), f"output: expected text, got {result.output!r}")
    # The echo model's answer after a tool round quotes the tool results it was sent.
    expect(str(POPULATION) in result.output, f"the tool's result is not in {result.output!r}")
    return f"tool called with {asked[0]!r}, answer of {len(result.output)} chars"


@check
def native_output():
    agent = Agent(echo_model(), output_type=NativeOutput(City))
    result = agent.run_sync("Describe Paris.")
    return expect_city(result.output, "output")


if __name__ == "__main__":
    run_checks()
