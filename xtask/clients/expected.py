"""The schemas and recorded values the Python client checks share."""

from pydantic import BaseModel


class City(BaseModel):
    """The structured answer every schema check asks for: the echo model answers a schema with
    a valid instance, so the client must return one that validates."""

    name: str
    country: str
    population: int
    landmarks: list[str]


def expect_city(value, what):
    """`value` is a `City` the client parsed (pydantic validated it on the way)."""
    if not isinstance(value, City):
        raise AssertionError(f"{what}: expected a City, got {value!r}")
    return f"City(name={value.name!r}, population={value.population})"


# openai/chat_text.json: the answer to "Answer YES."
OPENAI_TEXT = "YES"

# reference/openai_chat_logprobs.json and reference/openai_chat_stream_logprobs.sse: "Hello!"
# with each token's log probability and its two most likely tokens.
LOGPROBS_TEXT = "Hello!"
LOGPROBS_TOKENS = [
    ("Hello", -0.31725305, [72, 101, 108, 108, 111], [("Hello", -0.31725305), ("Hi", -1.3190403)]),
    ("!", -0.02380986, [33], [("!", -0.02380986), (" there", -3.787621)]),
]

# openai/chat_stream_tool_call.sse, then openai/chat_stream_text_after_tool.sse
MULTIPLY_ARGUMENTS = {"a": 1231, "b": 2331}
MULTIPLY_CALL_ID = "call_1EYWDzueHEp8OsB8jJSEp7WB"
MULTIPLY_RESULT = "2869461"
MULTIPLY_ANSWER = "The result of \\( 1231 \\times 2331 \\) is \\( 2,869,461 \\)."
MULTIPLY_PROMPT = "What is 1231 * 2331? Use the multiply tool. [replay:openai-tool-call]"

# gemini/stream_text.sse: the numbers 1 to 30, one per line.
GEMINI_TEXT = "\n".join(str(number) for number in range(1, 31))

# gemini/stream_function_call_signature.sse, then gemini/stream_text_after_function_call.sse
COUNTRY_RESULT = "Mexico"
CAPITAL_ANSWER = "The capital of Mexico is Mexico City."
