"""The official `openai` Python SDK against a live `skein serve`.

Run by `cargo xtask openai-sdk`, which starts the servers and sets:
  SKEIN_URL          the server whose providers are the replay server (`replay.py`)
  SKEIN_KEYLESS_URL  a server with no provider key or endpoint (only `echo` answers)
  SKEIN_TOKEN        the bearer token both accept
The main server also runs the reference MCP server `@modelcontextprotocol/server-everything`
as `everything`, the label of the Responses `mcp` tool checks.

Each check talks to Skein through the SDK only and asserts on the objects the SDK returns.
Expected values are those of the recordings the replay server answers with (named next to each
value), never values read off Skein's own answers. One line is printed per check; the first
failure ends the run with a non-zero status.

A new check is a function decorated with `@check`, given the SDK client; checks run in the
order they are defined and return a one-line summary. A check whose conversation must survive
a restart calls `restart_skein()` between its turns: the main server is stopped with SIGTERM
and started again on the same port and store (the request goes to the xtask on stdout, its
answer comes back on stdin).
"""

import json
import os
import sys
import time
import traceback

import openai

SKEIN_URL = os.environ["SKEIN_URL"]
SKEIN_KEYLESS_URL = os.environ["SKEIN_KEYLESS_URL"]
SKEIN_TOKEN = os.environ["SKEIN_TOKEN"]

# The line the xtask reads as a request to restart the main server, and its answer.
RESTART_REQUEST = "@@xtask restart-skein"
RESTART_DONE = "restarted"

# Bounded, so a stalled stream fails the check instead of hanging CI; no retries, so that every
# status Skein answers reaches the check as it was sent.
TIMEOUT_SECONDS = 30


def sdk_client(base_url=SKEIN_URL, api_key=SKEIN_TOKEN):
    return openai.OpenAI(
        base_url=f"{base_url}/v1", api_key=api_key, max_retries=0, timeout=TIMEOUT_SECONDS
    )


class CheckFailed(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise CheckFailed(message)


def expect_equal(actual, expected, what):
    if actual != expected:
        raise CheckFailed(f"{what}: expected {expected!r}, got {actual!r}")


CHECKS = []


def check(function):
    CHECKS.append(function)
    return function


def restart_skein():
    """Restarts the main server (SIGTERM, then the same command on the same port and store)."""
    print(RESTART_REQUEST, flush=True)
    answer = sys.stdin.readline().strip()
    if answer != RESTART_DONE:
        raise CheckFailed(f"the xtask could not restart skein: {answer or 'no answer'}")


# --- What the recordings hold (providers/tests/fixtures/…) -------------------------------------

# openai/chat_text.json
OPENAI_TEXT = "YES"
OPENAI_TEXT_USAGE = (146, 3, 149)

# openai/chat_stream_tool_call.sse (and its .request.json / .followup.request.json)
MULTIPLY_TOOL = {
    "type": "function",
    "function": {
        "name": "multiply",
        "description": "Multiply two numbers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}
MULTIPLY_CALL_ID = "call_1EYWDzueHEp8OsB8jJSEp7WB"
MULTIPLY_ARGUMENTS = {"a": 1231, "b": 2331}
MULTIPLY_USAGE = (54, 20, 74)
MULTIPLY_RESULT = "2869461"
# openai/chat_stream_text_after_tool.sse
MULTIPLY_ANSWER = "The result of \\( 1231 \\times 2331 \\) is \\( 2,869,461 \\)."
MULTIPLY_ANSWER_USAGE = (87, 26, 113)

# openai/chat_tool_call.json
POPULATION_CALL_ID = "call_TTY8UFNo7rNCaOBUNtlRSvMG"
POPULATION_CALL = ("lookup_population", {"country": "Crumpet"})
POPULATION_USAGE = (92, 17, 109)

# anthropic/stream_thinking_tool_use.sse (and its .followup.request.json)
FIXED_VERSION_TOOL = {
    "type": "function",
    "function": {
        "name": "fixed_version",
        "description": "Return a fixed test version string",
        "parameters": {"type": "object", "properties": {}},
    },
}
FIXED_VERSION_THINKING = (
    "The user wants me to:\n1. Use the fixed_version tool\n2. Tell them the version\n"
    "3. Make a short joke about it\n\nLet me first call the fixed_version tool to see what "
    "version it returns."
)
FIXED_VERSION_SIGNATURE = (
    "EoQDCm0IDhgCKkCDzGs2kL2PgnDCZU/nM2wG2P1VIXCRHVnhDDzBQxNF1fl4QBXEKLxRItNJ2MwFdW9eeZPhsxSQIxD5"
    "4cv3zs29MhljbGF1ZGUtaGFpa3UtNC01LTIwMjUxMDAxOABCCHRoaW5raW5nEgy/OWlwTmmqUjC6L70aDJ4P0R5NfuI"
    "e9U5zAiIwCxPduXS2UxCNxJCee3i91qK3cAyAgxCjL2wkQ5UD56iX1hXGOyuNaiH5k+dF5OCQKsQBxiAo+NjC61hV8n"
    "RYtaiP+C4inOcuMKuTG9Z1rysxTXkKBTl3oMiOlnEPHHPpKpg4sYF2G5VoTg8JTon20hdZw4GfTEVupnU1qAmnMqyAg"
    "ke9SoV7HBW/PyA/FxL/q33xJ2gKFiD+BsgI9Z0koMmFKCvm2MoYE6u+ONEwKdFQXL1FKRW6t/bYbJGrLJLwxilsL82"
    "h9j4xjggjMn8Npvpn+zsrDPW/8PuLd4Pu+/EsjoneYwyxQQtUVgzhVGhhANWRjSBwUxgB"
)
FIXED_VERSION_CALL_ID = "toolu_01825dXWLSoJwCst1qTsiWdb"
FIXED_VERSION_USAGE = (598, 92, 690)
FIXED_VERSION_RESULT = "0.32a0"
# anthropic/stream_text_after_tool.sse
FIXED_VERSION_ANSWER = (
    "The version is **0.32a0**.\n\nHere's a joke about it: \n\nLooks like this version is still "
    'in alpha testing... I guess you could say it\'s going through a "0.32a good time" before '
    "becoming stable! \U0001f604\n\n(It's at version 0.32a, which means it's far from 1.0, so "
    "plenty of room to grow!)"
)
FIXED_VERSION_ANSWER_USAGE = (707, 89, 796)

# anthropic/message_thinking_tool_use.json
COUNTRY_THINKING = (
    'The user is asking about the largest city in "the user country". To answer this question, '
    "I first need to determine what country the user is from. I have access to a function "
    'called "get_user_country" that can help me find out the user\'s country. Once I know the '
    "country, I can then provide information about its largest city.\n\nLet me call the "
    "get_user_country function first."
)
COUNTRY_SIGNATURE_START = "EqEECkYICxgCKkAo3UA4WwDbB8ihhpykVCsPx6iMzwNTNP8dePIgYjNpu2EWrt5J"
COUNTRY_SIGNATURE_END = "SkcXhw9EK5/JwYAQ=="
COUNTRY_TEXT = (
    "I'll help you find the largest city in your country. First, let me determine which "
    "country you're from."
)
COUNTRY_CALL_ID = "toolu_01YGzqpRE16Vricda3Aqcejo"
COUNTRY_USAGE = (398, 155, 553)

# gemini/stream_text.sse: the numbers 1 to 30, one per line, in three events.
GEMINI_TEXT = "\n".join(str(number) for number in range(1, 31))
# Its last usageMetadata: prompt 18, candidates 80, thoughts 35, total 133; OpenAI counts the
# thoughts among the completion tokens.
GEMINI_USAGE = (18, 115, 133)

# gemini/stream_function_call_signature.sse, then gemini/stream_text_after_function_call.sse
COUNTRY_TOOL = {
    "type": "function",
    "name": "get_country",
    "description": "",
    "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
}
CAPITAL_ANSWER = "The capital of Mexico is Mexico City."
CAPITAL_ANSWER_USAGE = (257, 8, 265)

# The Responses API declares a function at the top level of the tool.
MULTIPLY_RESPONSES_TOOL = {"type": "function", **MULTIPLY_TOOL["function"]}
FIXED_VERSION_RESPONSES_TOOL = {"type": "function", **FIXED_VERSION_TOOL["function"]}


# --- Helpers over SDK objects ------------------------------------------------------------------


def user(text):
    return [{"role": "user", "content": text}]


def usage_triple(usage):
    expect(usage is not None, "no usage")
    return (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)


def extra(model, field):
    """A field the SDK's types do not declare (kept by the SDK in `model_extra`)."""
    return (model.model_extra or {}).get(field)


class Collected:
    """A streamed answer put together from `ChatCompletionChunk`s, checking what every chunk of
    one answer must agree on."""

    def __init__(self, stream):
        self.chunks = list(stream)
        expect(self.chunks, "the stream held no chunk")
        self.content = ""
        self.reasoning = ""
        self.reasoning_details = []
        self.calls = {}
        self.finish_reasons = []
        ids = {chunk.id for chunk in self.chunks}
        expect(len(ids) == 1, f"chunks of one answer carry several ids: {sorted(ids)}")
        for chunk in self.chunks:
            expect_equal(chunk.object, "chat.completion.chunk", "chunk object")
            for choice in chunk.choices:
                expect_equal(choice.index, 0, "choice index")
                delta = choice.delta
                self.content += delta.content or ""
                self.reasoning += extra(delta, "reasoning_content") or ""
                self.reasoning_details += extra(delta, "reasoning_details") or []
                for piece in delta.tool_calls or []:
                    call = self.calls.setdefault(
                        piece.index, {"id": None, "type": None, "name": None, "arguments": ""}
                    )
                    if piece.id is not None:
                        expect(call["id"] is None, f"call {piece.index} got a second id")
                        call["id"] = piece.id
                    if piece.type is not None:
                        call["type"] = piece.type
                    if piece.function is not None:
                        if piece.function.name is not None:
                            call["name"] = piece.function.name
                        call["arguments"] += piece.function.arguments or ""
                if choice.finish_reason is not None:
                    self.finish_reasons.append(choice.finish_reason)
        first = self.chunks[0]
        expect(
            first.choices and first.choices[0].delta.role == "assistant",
            "the first chunk does not carry role `assistant`",
        )
        expect(
            len(self.finish_reasons) == 1,
            f"expected one finish_reason, got {self.finish_reasons}",
        )
        self.finish_reason = self.finish_reasons[0]

    def usage(self):
        """The usage of the last chunk, which must be the only chunk carrying one."""
        last = self.chunks[-1]
        expect(last.usage is not None, "the last chunk carries no usage")
        expect_equal(last.choices, [], "choices of the usage chunk")
        expect(
            all(chunk.usage is None for chunk in self.chunks[:-1]),
            "a chunk before the last carries usage",
        )
        return last.usage

    def only_call(self):
        expect_equal(sorted(self.calls), [0], "tool call indexes")
        call = self.calls[0]
        expect_equal(call["type"], "function", "tool call type")
        return call


def streamed(client, **request):
    """A chat completion streamed with usage in its last chunk, put together."""
    return Collected(
        client.chat.completions.create(
            **request, stream=True, stream_options={"include_usage": True}
        )
    )


def calling(call, **fields):
    """The assistant message that made `call` (an `only_call()` dict), with `fields` added."""
    return {
        "role": "assistant",
        "content": None,
        **fields,
        "tool_calls": [
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": call["arguments"]},
            }
        ],
    }


def check_totals(usage):
    expect_equal(
        usage.total_tokens,
        usage.prompt_tokens + usage.completion_tokens,
        "total_tokens (prompt + completion)",
    )


def arguments_of(text):
    try:
        return json.loads(text)
    except ValueError as err:
        raise CheckFailed(f"tool call arguments are not JSON ({err}): {text!r}") from err


# --- Checks --------------------------------------------------------------------------------


@check
def models_list(client):
    models = list(client.models.list())
    ids = [model.id for model in models]
    expect("echo" in ids, f"`echo` is not listed: {ids}")
    expect(all(model.object == "model" for model in models), "an entry is not a `model`")
    return f"{len(ids)} models, echo among them"


@check
def echo_non_stream(client):
    answer = client.chat.completions.create(model="echo", messages=user('{"raw": "Hello!"}'))
    expect_equal(answer.object, "chat.completion", "object")
    expect_equal(answer.model, "echo", "model")
    expect_equal(len(answer.choices), 1, "choices")
    choice = answer.choices[0]
    expect_equal(choice.message.role, "assistant", "role")
    expect_equal(choice.message.content, "Hello!", "content")
    expect_equal(choice.finish_reason, "stop", "finish_reason")
    check_totals(answer.usage)
    return f"{choice.message.content!r}, finish {choice.finish_reason}"


@check
def echo_stream_include_usage(client):
    answer = streamed(
        client,
        model="echo",
        messages=user('{"raw": "Hello!"}'),
    )
    expect_equal(answer.content, "Hello!", "streamed content")
    expect_equal(answer.finish_reason, "stop", "finish_reason")
    usage = answer.usage()
    check_totals(usage)
    return f"{len(answer.chunks)} chunks, {answer.content!r}, usage last {usage_triple(usage)}"


@check
def echo_stream_without_usage(client):
    answer = Collected(
        client.chat.completions.create(
            model="echo", messages=user('{"raw": "Hello!"}'), stream=True
        )
    )
    expect_equal(answer.content, "Hello!", "streamed content")
    expect(all(chunk.usage is None for chunk in answer.chunks), "a chunk carries usage")
    return f"{len(answer.chunks)} chunks, none with usage"


@check
def openai_text_non_stream(client):
    answer = client.chat.completions.create(
        model="gpt-4o-mini", messages=user("Answer YES. [replay:openai-text]")
    )
    message = answer.choices[0].message
    expect_equal(message.content, OPENAI_TEXT, "content")
    expect_equal(answer.choices[0].finish_reason, "stop", "finish_reason")
    expect_equal(usage_triple(answer.usage), OPENAI_TEXT_USAGE, "usage")
    return f"{message.content!r}, usage {usage_triple(answer.usage)}"


@check
def openai_tool_call_round_trip(client):
    question = user("What is 1231 * 2331? [replay:openai-tool-call]")
    first = streamed(
        client,
        model="gpt-4o-mini",
        messages=question,
        tools=[MULTIPLY_TOOL],
    )
    call = first.only_call()
    expect_equal(call["id"], MULTIPLY_CALL_ID, "tool call id")
    expect_equal(call["name"], "multiply", "tool call name")
    expect_equal(arguments_of(call["arguments"]), MULTIPLY_ARGUMENTS, "tool call arguments")
    expect_equal(first.finish_reason, "tool_calls", "finish_reason")
    expect_equal(usage_triple(first.usage()), MULTIPLY_USAGE, "usage")

    # The client ran the tool; the SDK's own stream helper accumulates the answer to its result.
    followup = question + [
        calling(call),
        {"role": "tool", "tool_call_id": call["id"], "content": MULTIPLY_RESULT},
    ]
    with client.chat.completions.stream(
        model="gpt-4o-mini",
        messages=followup,
        tools=[MULTIPLY_TOOL],
        stream_options={"include_usage": True},
    ) as stream:
        completion = stream.get_final_completion()
    message = completion.choices[0].message
    expect_equal(message.content, MULTIPLY_ANSWER, "follow-up content")
    expect_equal(completion.choices[0].finish_reason, "stop", "follow-up finish_reason")
    expect_equal(usage_triple(completion.usage), MULTIPLY_ANSWER_USAGE, "follow-up usage")
    return f"{call['name']}({call['arguments']}) id {call['id']}, then {message.content!r}"


@check
def openai_tool_call_non_stream(client):
    answer = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=user("Population of Crumpet? [replay:openai-tool-call]"),
        tools=[
            {
                "type": "function",
                "function": {
                    "name": "lookup_population",
                    "parameters": {
                        "type": "object",
                        "properties": {"country": {"type": "string"}},
                    },
                },
            }
        ],
    )
    choice = answer.choices[0]
    expect_equal(choice.finish_reason, "tool_calls", "finish_reason")
    calls = choice.message.tool_calls or []
    expect_equal(len(calls), 1, "tool calls")
    expect_equal(calls[0].id, POPULATION_CALL_ID, "tool call id")
    expect_equal(
        (calls[0].function.name, arguments_of(calls[0].function.arguments)),
        POPULATION_CALL,
        "tool call",
    )
    expect_equal(usage_triple(answer.usage), POPULATION_USAGE, "usage")
    return f"{calls[0].function.name}({calls[0].function.arguments}) id {calls[0].id}"


@check
def anthropic_reasoning_tool_call_round_trip(client):
    model = "claude-haiku-4-5-20251001"
    question = user(
        "Use the fixed_version tool. Then tell me the version and make one short joke about "
        "it. Think about it first. [replay:anthropic-thinking-tool]"
    )
    first = streamed(
        client,
        model=model,
        messages=question,
        tools=[FIXED_VERSION_TOOL],
    )
    expect_equal(first.reasoning, FIXED_VERSION_THINKING, "reasoning_content")
    expect_equal(len(first.reasoning_details), 1, "reasoning_details items")
    detail = first.reasoning_details[0]
    expect_equal(detail.get("type"), "reasoning.text", "reasoning_details[0].type")
    expect_equal(detail.get("text"), FIXED_VERSION_THINKING, "reasoning_details[0].text")
    expect_equal(detail.get("signature"), FIXED_VERSION_SIGNATURE, "reasoning_details[0].signature")
    call = first.only_call()
    expect_equal(call["id"], FIXED_VERSION_CALL_ID, "tool call id")
    expect_equal(call["name"], "fixed_version", "tool call name")
    expect_equal(arguments_of(call["arguments"]), {}, "tool call arguments")
    expect_equal(first.finish_reason, "tool_calls", "finish_reason")
    expect_equal(usage_triple(first.usage()), FIXED_VERSION_USAGE, "usage")

    # The reasoning goes back as the chunks gave it; the replay server answers the follow-up
    # only if the signature and the call reach Anthropic.
    followup = question + [
        calling(
            call,
            reasoning_content=first.reasoning,
            reasoning_details=first.reasoning_details,
        ),
        {"role": "tool", "tool_call_id": call["id"], "content": FIXED_VERSION_RESULT},
    ]
    second = streamed(
        client,
        model=model,
        messages=followup,
        tools=[FIXED_VERSION_TOOL],
    )
    expect_equal(second.content, FIXED_VERSION_ANSWER, "follow-up content")
    expect_equal(second.finish_reason, "stop", "follow-up finish_reason")
    expect_equal(usage_triple(second.usage()), FIXED_VERSION_ANSWER_USAGE, "follow-up usage")
    return (
        f"reasoning {len(first.reasoning)} chars + signature, call {call['id']}, "
        f"then {len(second.content)} chars of answer"
    )


@check
def anthropic_reasoning_non_stream(client):
    answer = client.chat.completions.create(
        model="claude-sonnet-4-20250514",
        messages=user(
            "What is the largest city in the user country? [replay:anthropic-thinking-tool]"
        ),
        tools=[
            {
                "type": "function",
                "function": {
                    "name": "get_user_country",
                    "parameters": {"type": "object", "properties": {}},
                },
            }
        ],
    )
    choice = answer.choices[0]
    message = choice.message
    expect_equal(extra(message, "reasoning_content"), COUNTRY_THINKING, "reasoning_content")
    details = extra(message, "reasoning_details") or []
    expect_equal(len(details), 1, "reasoning_details items")
    signature = details[0].get("signature") or ""
    expect(
        signature.startswith(COUNTRY_SIGNATURE_START) and signature.endswith(COUNTRY_SIGNATURE_END),
        f"reasoning_details[0].signature is not the recorded one: {signature!r}",
    )
    expect_equal(message.content, COUNTRY_TEXT, "content")
    calls = message.tool_calls or []
    expect_equal(len(calls), 1, "tool calls")
    expect_equal(calls[0].id, COUNTRY_CALL_ID, "tool call id")
    expect_equal(calls[0].function.name, "get_user_country", "tool call name")
    expect_equal(arguments_of(calls[0].function.arguments), {}, "tool call arguments")
    expect_equal(choice.finish_reason, "tool_calls", "finish_reason")
    expect_equal(usage_triple(answer.usage), COUNTRY_USAGE, "usage")
    return f"reasoning {len(COUNTRY_THINKING)} chars + signature, text, call {calls[0].id}"


@check
def gemini_text_stream(client):
    answer = streamed(
        client,
        model="gemini-2.5-flash",
        messages=user("Count from 1 to 30, one number per line. [replay:gemini-text]"),
    )
    expect_equal(answer.content, GEMINI_TEXT, "content")
    expect_equal(answer.finish_reason, "stop", "finish_reason")
    expect_equal(usage_triple(answer.usage()), GEMINI_USAGE, "usage")
    return f"1..30 in {len(answer.chunks)} chunks, usage {GEMINI_USAGE}"


@check
def error_bad_token(client):
    intruder = sdk_client(api_key="not-the-token")
    try:
        intruder.chat.completions.create(model="echo", messages=user("hi"))
    except openai.AuthenticationError as err:
        expect_equal(err.status_code, 401, "status")
        return f"AuthenticationError {err.status_code}: {err.message}"
    raise CheckFailed("a wrong bearer token was accepted")


@check
def error_n(client):
    try:
        client.chat.completions.create(model="echo", messages=user("hi"), n=2)
    except openai.BadRequestError as err:
        expect(isinstance(err.body, dict), f"the error body is not an object: {err.body!r}")
        expect_equal(err.body.get("param"), "n", 'body["param"]')
        return f"BadRequestError param {err.param!r}: {err.message}"
    raise CheckFailed("`n: 2` was accepted")


@check
def error_unknown_field(client):
    try:
        client.chat.completions.create(
            model="echo", messages=user("hi"), extra_body={"frobnicate": True}
        )
    except openai.BadRequestError as err:
        expect(isinstance(err.body, dict), f"the error body is not an object: {err.body!r}")
        expect_equal(err.body.get("param"), "frobnicate", 'body["param"]')
        return f"BadRequestError param {err.param!r}"
    raise CheckFailed("an unknown field was accepted")


@check
def responses_mcp_tool_unknown_label(client):
    # The SDK's own `Mcp` tool param and `McpApprovalResponse` input item reach the server
    # as OpenAI documents them: a label no configured server has is a 400 on that field.
    try:
        client.responses.create(
            model="echo",
            input="hi",
            tools=[{"type": "mcp", "server_label": "mail", "require_approval": "never"}],
        )
    except openai.BadRequestError as err:
        expect_equal(err.body.get("param"), "tools[0].server_label", 'body["param"]')
    else:
        raise CheckFailed("an mcp tool naming no configured server was accepted")
    try:
        client.responses.create(
            model="echo",
            input=[
                {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True},
            ],
        )
    except openai.BadRequestError as err:
        expect_equal(err.body.get("param"), "input[0].approval_request_id", 'body["param"]')
        return f"BadRequestError params tools[0].server_label, {err.param!r}"
    raise CheckFailed("an mcp_approval_response for no pending request was accepted")


@check
def error_unkeyed_model(client):
    keyless = sdk_client(base_url=SKEIN_KEYLESS_URL)
    try:
        keyless.chat.completions.create(model="claude-haiku-4-5-20251001", messages=user("hi"))
    except openai.NotFoundError as err:
        expect_equal(err.code, "model_not_found", "code")
        expect_equal(err.param, "model", "param")
        return f"NotFoundError {err.code}: {err.message}"
    raise CheckFailed("a model whose provider has no key was accepted")


@check
def answers_after_restart(client):
    restart_skein()
    # The same SDK client: its pooled connections died with the old process.
    answer = client.chat.completions.create(model="echo", messages=user('{"raw": "Hello!"}'))
    expect_equal(answer.choices[0].message.content, "Hello!", "content after the restart")
    return "SIGTERM, same port and store, the same SDK client answered again"


# --- The Responses API ---------------------------------------------------------------------------


def responses_usage(usage):
    return (usage.input_tokens, usage.output_tokens, usage.total_tokens)


def function_calls(response):
    return [item for item in response.output if item.type == "function_call"]


def streamed_response(client, **request):
    """The final response of a raw `responses.create(stream=True)` stream, checking the order
    and numbering of its events on the way."""
    events = list(client.responses.create(**request, stream=True))
    expect(events, "no events")
    expect_equal(events[0].type, "response.created", "first event")
    numbers = [event.sequence_number for event in events]
    expect_equal(numbers, list(range(len(events))), "sequence numbers")
    last = events[-1]
    expect_equal(last.type, "response.completed", "last event")
    expect_equal(last.response.id, events[0].response.id, "the id of the last event")
    return last.response


def final_response(client, **request):
    """The final response of a stream accumulated by the SDK's own stream helper, which checks
    the events' identities on the way."""
    with client.responses.stream(**request) as stream:
        return stream.get_final_response()


def call_output(call, output):
    """The input item answering the function call `call` with `output`."""
    return {"type": "function_call_output", "call_id": call.call_id, "output": output}


@check
def responses_openai_tool_round_trip(client):
    tools = [MULTIPLY_RESPONSES_TOOL]
    first = final_response(
        client,
        model="gpt-4o-mini",
        input="What is 1231 * 2331? [replay:openai-tool-call]",
        tools=tools,
    )
    calls = function_calls(first)
    expect_equal(len(calls), 1, "function calls")
    expect_equal(calls[0].call_id, MULTIPLY_CALL_ID, "call_id")
    expect_equal(calls[0].name, "multiply", "name")
    expect_equal(arguments_of(calls[0].arguments), MULTIPLY_ARGUMENTS, "arguments")
    expect_equal(responses_usage(first.usage), MULTIPLY_USAGE, "usage")

    second = streamed_response(
        client,
        model="gpt-4o-mini",
        previous_response_id=first.id,
        input=[call_output(calls[0], MULTIPLY_RESULT)],
        tools=tools,
    )
    expect_equal(second.output_text, MULTIPLY_ANSWER, "follow-up output_text")
    expect_equal(second.previous_response_id, first.id, "previous_response_id")
    expect_equal(responses_usage(second.usage), MULTIPLY_ANSWER_USAGE, "follow-up usage")
    read = client.responses.retrieve(second.id)
    expect_equal(read.output_text, MULTIPLY_ANSWER, "retrieved output_text")
    expect_equal(read.status, "completed", "retrieved status")
    return f"{calls[0].name} {calls[0].call_id} -> {second.id}: {second.output_text!r}"


@check
def responses_anthropic_reasoning_across_a_restart(client):
    model = "claude-haiku-4-5-20251001"
    tools = [FIXED_VERSION_RESPONSES_TOOL]
    first = streamed_response(
        client,
        model=model,
        input=(
            "Use the fixed_version tool. Then tell me the version and make one short joke "
            "about it. Think about it first. [replay:anthropic-thinking-tool]"
        ),
        tools=tools,
    )
    reasoning = [item for item in first.output if item.type == "reasoning"]
    expect_equal(len(reasoning), 1, "reasoning items")
    expect_equal(reasoning[0].summary[0].text, FIXED_VERSION_THINKING, "reasoning summary")
    calls = function_calls(first)
    expect_equal(calls[0].call_id, FIXED_VERSION_CALL_ID, "call_id")
    expect_equal(responses_usage(first.usage), FIXED_VERSION_USAGE, "usage")

    # The conversation lives in the tree: a new server process continues it, and the replay
    # server answers only if the thinking's signature reaches Anthropic.
    restart_skein()
    second = streamed_response(
        client,
        model=model,
        previous_response_id=first.id,
        input=[call_output(calls[0], FIXED_VERSION_RESULT)],
        tools=tools,
    )
    expect_equal(second.output_text, FIXED_VERSION_ANSWER, "follow-up output_text")
    expect_equal(responses_usage(second.usage), FIXED_VERSION_ANSWER_USAGE, "follow-up usage")
    return f"reasoning + {calls[0].call_id}, restart, then {len(second.output_text)} chars"


@check
def responses_gemini_function_call_round_trip(client):
    tools = [COUNTRY_TOOL]
    first = final_response(
        client,
        model="gemini-2.5-flash",
        input="What is the capital of the user country? Call the tool [replay:gemini-function-call]",
        tools=tools,
    )
    calls = function_calls(first)
    expect_equal([call.name for call in calls], ["get_country"], "function calls")
    expect_equal(arguments_of(calls[0].arguments), {}, "arguments")

    # Gemini needs the call's thought signature back: the tree holds it.
    second = final_response(
        client,
        model="gemini-2.5-flash",
        previous_response_id=first.id,
        input=[call_output(calls[0], json.dumps({"return_value": "Mexico"}))],
        tools=tools,
    )
    expect_equal(second.output_text, CAPITAL_ANSWER, "follow-up output_text")
    expect_equal(responses_usage(second.usage), CAPITAL_ANSWER_USAGE, "follow-up usage")
    return f"get_country, then {second.output_text!r}"


@check
def responses_echo_non_stream_and_errors(client):
    answer = client.responses.create(model="echo", input='{"raw": "Hello!"}')
    expect_equal(answer.output_text, "Hello!", "output_text")
    expect_equal(answer.status, "completed", "status")
    try:
        client.responses.create(model="echo", input="x", previous_response_id="resp_nothing")
    except openai.NotFoundError as err:
        expect_equal(err.body.get("param"), "previous_response_id", "error param")
    else:
        raise CheckFailed("an unknown previous_response_id was accepted")
    try:
        client.responses.retrieve("resp_nothing")
    except openai.NotFoundError:
        pass
    else:
        raise CheckFailed("an unknown response was retrieved")
    return f"{answer.id}: {answer.output_text!r}; NotFoundError for unknown ids"


@check
def responses_background_poll_and_resume(client):
    # The echo model answers the words one by one, 50 ms apart: long enough to be seen running.
    words = "one two three four five six"
    created = client.responses.create(
        model="echo", input=json.dumps({"raw": words, "delay_ms": 50}), background=True
    )
    expect_equal(created.status, "queued", "status when created")
    expect_equal(created.background, True, "background")
    read = created
    deadline = time.monotonic() + 30
    while read.status in ("queued", "in_progress"):
        expect(time.monotonic() < deadline, f"{created.id} still {read.status} after 30 s")
        time.sleep(0.05)
        read = client.responses.retrieve(created.id)
    expect_equal(read.status, "completed", "polled status")
    expect_equal(read.output_text, words, "polled output_text")

    # The stored events again, in full, then from the middle: the same events, same numbers.
    full = list(client.responses.retrieve(created.id, stream=True))
    expect_equal(
        [event.sequence_number for event in full], list(range(len(full))), "sequence numbers"
    )
    expect_equal(full[0].type, "response.created", "first replayed event")
    expect_equal(full[-1].type, "response.completed", "last replayed event")
    expect_equal(full[-1].response.output_text, words, "replayed output_text")
    after = len(full) // 2
    tail = list(client.responses.retrieve(created.id, stream=True, starting_after=after))
    expect_equal(
        [event.model_dump() for event in tail],
        [event.model_dump() for event in full[after + 1 :]],
        f"the events after {after}",
    )
    try:
        client.responses.create(model="echo", input="x", background=True, store=False)
    except openai.BadRequestError as err:
        expect_equal(err.body.get("param"), "background", "error param")
    else:
        raise CheckFailed("background with store=False was accepted")
    return f"{created.id}: queued -> completed, {len(full)} events, tail after {after} equal"


# --- The Responses `mcp` tool, run here against server-everything ------------------------------

# The MCP server the xtask configures: `@modelcontextprotocol/server-everything` over stdio.
EVERYTHING = "everything"
# Its `echo` tool answers `Echo: {message}` (its dist/tools/echo.js).
ECHO_TOOL = "echo"


def echo_call(message):
    """The echo model's input that makes it call `everything`'s `echo` tool with `message` (the
    model names a tool as Skein offers it, `{server}__{tool}`); once the results are in, it
    answers with a JSON report of them."""
    return json.dumps(
        {"tool_calls": [{"name": f"{EVERYTHING}__{ECHO_TOOL}", "arguments": {"message": message}}]}
    )


def mcp_tool(**fields):
    return {"type": "mcp", "server_label": EVERYTHING, **fields}


def items(response, kind):
    return [item for item in response.output if item.type == kind]


def approval(request_id, approve, reason=None):
    item = {"type": "mcp_approval_response", "approval_request_id": request_id, "approve": approve}
    if reason is not None:
        item["reason"] = reason
    return item


def paused_echo(client, message):
    """A response whose `echo` call with `message` waits for approval (the default policy of an
    `mcp` tool is to ask), checked as OpenAI documents it: the server's tools listed, one
    approval request for the call, nothing run; the response and its approval request."""
    response = client.responses.create(model="echo", input=echo_call(message), tools=[mcp_tool()])
    expect_equal(response.status, "completed", "status of a response waiting for approval")
    expect_equal(items(response, "mcp_call"), [], "mcp_call items before approval")
    requests = items(response, "mcp_approval_request")
    expect_equal(len(requests), 1, "mcp_approval_request items")
    request = requests[0]
    expect_equal(request.server_label, EVERYTHING, "approval request server_label")
    expect_equal(request.name, ECHO_TOOL, "approval request name")
    expect_equal(arguments_of(request.arguments), {"message": message}, "approval arguments")
    return response, request


@check
def responses_mcp_approval_requested_and_retrieved(client):
    response, request = paused_echo(client, "hi")
    listed = items(response, "mcp_list_tools")
    expect_equal(len(listed), 1, "mcp_list_tools items")
    expect_equal(listed[0].server_label, EVERYTHING, "mcp_list_tools server_label")
    expect(listed[0].error is None, f"listing failed: {listed[0].error}")
    tools = {tool.name: tool for tool in listed[0].tools}
    expect(ECHO_TOOL in tools, f"no echo among the listed tools {sorted(tools)}")
    # server-everything's echo takes one string, `message`.
    schema = tools[ECHO_TOOL].input_schema
    expect_equal(schema.get("type"), "object", "echo input_schema type")
    expect_equal(schema["properties"]["message"]["type"], "string", "echo `message` type")
    expect("message" in schema.get("required", []), f"`message` not required in {schema}")
    # Every listed tool is the server's own name, never Skein's `{server}__{tool}`.
    prefixed = [name for name in tools if name.startswith(f"{EVERYTHING}__")]
    expect_equal(prefixed, [], "listed tool names carrying the server prefix")

    stored = client.responses.retrieve(response.id)
    expect_equal(
        [item.model_dump() for item in stored.output],
        [item.model_dump() for item in response.output],
        "the retrieved response's output",
    )
    expect_equal(stored.status, response.status, "the retrieved response's status")
    return f"{len(tools)} tools listed, approval request {request.id} for echo, retrieve equal"


@check
def responses_mcp_approved_call_runs_once(client):
    paused, request = paused_echo(client, "hi")
    answer = [approval(request.id, True)]
    ran = client.responses.create(
        model="echo", previous_response_id=paused.id, input=answer, tools=[mcp_tool()]
    )
    expect_equal(ran.status, "completed", "status")
    expect_equal(ran.previous_response_id, paused.id, "previous_response_id")
    calls = items(ran, "mcp_call")
    expect_equal(len(calls), 1, "mcp_call items")
    call = calls[0]
    expect_equal(call.server_label, EVERYTHING, "mcp_call server_label")
    expect_equal(call.name, ECHO_TOOL, "mcp_call name")
    expect_equal(arguments_of(call.arguments), {"message": "hi"}, "mcp_call arguments")
    expect_equal(call.approval_request_id, request.id, "mcp_call approval_request_id")
    expect_equal(call.output, "Echo: hi", "mcp_call output (server-everything's echo)")
    expect(call.error is None, f"an approved call failed: {call.error}")
    expect("Echo: hi" in ran.output_text, f"the model did not read the output: {ran.output_text!r}")

    # A pause is answered once: the same approval again is a conflict.
    try:
        client.responses.create(
            model="echo", previous_response_id=paused.id, input=answer, tools=[mcp_tool()]
        )
    except openai.ConflictError as err:
        expect_equal(err.status_code, 409, "status")
        return f"{call.id}: {call.output!r}; the same approval again: ConflictError {err.code}"
    raise CheckFailed("the same approval was accepted twice")


@check
def responses_mcp_rejected_call_tells_the_model_why(client):
    reason = "not that message"
    paused, request = paused_echo(client, "secret")
    declined = client.responses.create(
        model="echo",
        previous_response_id=paused.id,
        input=[approval(request.id, False, reason)],
        tools=[mcp_tool()],
    )
    calls = items(declined, "mcp_call")
    expect_equal(len(calls), 1, "mcp_call items")
    call = calls[0]
    expect_equal(call.status, "failed", "status of a declined call")
    expect_equal(call.approval_request_id, request.id, "mcp_call approval_request_id")
    expect(call.output is None, f"a declined call has an output: {call.output!r}")
    expect(call.error is not None, "a declined call has no error")
    expect(reason in json.dumps(call.error.model_dump()), f"no reason in {call.error!r}")
    text = declined.output_text
    expect(reason in text, f"the model did not read the reason: {text!r}")
    expect("Echo: secret" not in text, f"the declined call ran: {text!r}")
    return f"{call.id}: failed ({call.error.type}), the model read {reason!r}"


@check
def responses_mcp_stream_without_approval(client):
    events = list(
        client.responses.create(
            model="echo",
            input=echo_call("streamed"),
            tools=[mcp_tool(require_approval="never")],
            stream=True,
        )
    )
    types = [event.type for event in events]
    expect_equal(
        [event.sequence_number for event in events], list(range(len(events))), "sequence numbers"
    )
    # The documented MCP events, in the order a listing and a call make them.
    wanted = [
        "response.created",
        "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed",
        "response.mcp_call.in_progress",
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.mcp_call.completed",
        "response.completed",
    ]
    at = 0
    for event_type in types:
        if at < len(wanted) and event_type == wanted[at]:
            at += 1
    expect(at == len(wanted), f"{wanted[at:]} missing or out of order in {types}")
    expect_equal(types[-1], "response.completed", "last event")
    done = next(event for event in events if event.type == "response.mcp_call_arguments.done")
    expect_equal(arguments_of(done.arguments), {"message": "streamed"}, "arguments.done")
    final = events[-1].response
    calls = items(final, "mcp_call")
    expect_equal(len(calls), 1, "mcp_call items of the final response")
    expect_equal(calls[0].output, "Echo: streamed", "mcp_call output")
    expect(calls[0].approval_request_id is None, "a call needing no approval names a request")
    expect_equal(items(final, "mcp_approval_request"), [], "approval requests")

    # The SDK's own stream helper puts the same response together from the events.
    helped = final_response(
        client,
        model="echo",
        input=echo_call("helped"),
        tools=[mcp_tool(require_approval="never")],
    )
    expect_equal(items(helped, "mcp_call")[0].output, "Echo: helped", "stream helper mcp_call")
    return f"{len(events)} events, mcp_call output {calls[0].output!r}; stream helper agrees"


@check
def responses_mcp_unknown_approval_request(client):
    paused, request = paused_echo(client, "hi")
    unknown = "mcpr_not_issued"
    try:
        client.responses.create(
            model="echo",
            previous_response_id=paused.id,
            input=[approval(unknown, True)],
            tools=[mcp_tool()],
        )
    except openai.BadRequestError as err:
        expect(unknown in err.message, f"the message does not name {unknown}: {err.message!r}")
    else:
        raise CheckFailed(f"an approval for {unknown} was accepted")
    # The response is still waiting: the right id runs the call.
    ran = client.responses.create(
        model="echo",
        previous_response_id=paused.id,
        input=[approval(request.id, True)],
        tools=[mcp_tool()],
    )
    expect_equal(items(ran, "mcp_call")[0].output, "Echo: hi", "output after a wrong id")
    return f"BadRequestError naming {unknown}, then {request.id} ran"


def main():
    client = sdk_client()
    print(f"openai SDK {openai.__version__} against {SKEIN_URL}", flush=True)
    for function in CHECKS:
        name = function.__name__
        started = time.monotonic()
        try:
            summary = function(client)
        except CheckFailed as err:
            print(f"FAIL {name}: {err}", flush=True)
            return 1
        except openai.APIStatusError as err:
            print(
                f"FAIL {name}: the SDK raised {type(err).__name__} (HTTP {err.status_code}): "
                f"{err.message}; body {err.body!r}",
                flush=True,
            )
            return 1
        except Exception as err:  # noqa: BLE001 - any other failure is the check's failure
            print(f"FAIL {name}: {type(err).__name__}: {err}", flush=True)
            traceback.print_exc()
            return 1
        elapsed = time.monotonic() - started
        print(f"ok   {name} ({elapsed:.2f}s): {summary}", flush=True)
    print(f"openai SDK: all {len(CHECKS)} checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
