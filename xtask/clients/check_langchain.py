"""langchain-openai against `skein serve`: a `bind_tools` round trip over a recorded OpenAI
stream; `with_structured_output` with `json_schema`, `json_mode` and `function_calling` on the
echo model; `use_responses_api=True`. See `checks.py` for how the xtask runs it."""

from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from checks import (
    BASE_URL,
    SKEIN_TOKEN,
    TIMEOUT_SECONDS,
    check,
    expect,
    expect_equal,
    run_checks,
)
from expected import (
    MULTIPLY_ANSWER,
    MULTIPLY_ARGUMENTS,
    MULTIPLY_PROMPT,
    MULTIPLY_RESULT,
    OPENAI_TEXT,
    City,
    expect_city,
)


def chat_model(model, **settings):
    return ChatOpenAI(
        model=model,
        base_url=BASE_URL,
        api_key=SKEIN_TOKEN,
        max_retries=0,
        timeout=TIMEOUT_SECONDS,
        **settings,
    )


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


def text_of(message):
    # `text` is a property in langchain-core 1.x and was a method before.
    text = message.text
    return text() if callable(text) else text


@check
def bind_tools_round_trip():
    model = chat_model("gpt-4o-mini", streaming=True).bind_tools([multiply])
    messages = [HumanMessage(MULTIPLY_PROMPT)]
    first = model.invoke(messages)
    expect_equal([call["name"] for call in first.tool_calls], ["multiply"], "tool calls")
    call = first.tool_calls[0]
    expect_equal(call["args"], MULTIPLY_ARGUMENTS, "arguments")
    result = multiply.invoke(call)
    expect_equal(result.content, MULTIPLY_RESULT, "tool result")
    second = model.invoke([*messages, first, result])
    expect_equal(text_of(second), MULTIPLY_ANSWER, "follow-up text")
    return f"multiply{call['args']} -> {MULTIPLY_RESULT} -> {len(text_of(second))} chars"


@check
def structured_output_json_schema():
    answer = chat_model("echo").with_structured_output(City, method="json_schema")
    return expect_city(answer.invoke("Describe Paris."), "json_schema answer")


@check
def structured_output_json_mode():
    # JSON mode sends no schema, so the client can only promise a JSON object.
    answer = chat_model("echo").with_structured_output(method="json_mode")
    value = answer.invoke("Describe Paris as a JSON object.")
    expect(isinstance(value, dict), f"json_mode answer: expected a dict, got {value!r}")
    return f"a JSON object with keys {sorted(value)[:4]}"


@check
def structured_output_function_calling():
    answer = chat_model("echo").with_structured_output(City, method="function_calling")
    return expect_city(answer.invoke("Describe Paris."), "function_calling answer")


@check
def use_responses_api():
    model = chat_model("gpt-4o-mini", use_responses_api=True)
    answer = model.invoke("Answer YES. [replay:openai-text]")
    expect_equal(text_of(answer), OPENAI_TEXT, "text")
    return repr(text_of(answer))


if __name__ == "__main__":
    run_checks()
