"""openai-python against `skein serve`: chat, streaming, log probabilities,
`chat.completions.parse`, Responses, `responses.parse`, embeddings, `models.retrieve`, and a
Gemini tool round continued by resending only what the SDK returned. See `checks.py` for how the xtask runs it."""

import json

from checks import check, expect, expect_equal, openai_client, run_checks
from expected import (
    CAPITAL_ANSWER,
    COUNTRY_RESULT,
    GEMINI_TEXT,
    LOGPROBS_TEXT,
    LOGPROBS_TOKENS,
    OPENAI_TEXT,
    City,
    expect_city,
)

client = openai_client()

# The offline embedding model the server documents.
EMBEDDING_MODEL = "echo"

COUNTRY_TOOL = {
    "type": "function",
    "function": {
        "name": "get_country",
        "description": "",
        "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
    },
}


@check
def chat():
    answer = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Answer YES. [replay:openai-text]"}]
    )
    expect_equal(answer.choices[0].message.content, OPENAI_TEXT, "content")
    return repr(answer.choices[0].message.content)


def tokens_of(logprobs):
    """(token, logprob, bytes, [(top token, top logprob)]) of each of `logprobs`' tokens."""
    return [
        (t.token, t.logprob, t.bytes, [(top.token, top.logprob) for top in t.top_logprobs])
        for t in logprobs
    ]


@check
def chat_logprobs():
    request = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Hello! [replay:openai-logprobs]"}],
        "logprobs": True,
        "top_logprobs": 2,
    }
    answer = client.chat.completions.create(**request)
    expect_equal(answer.choices[0].message.content, LOGPROBS_TEXT, "content")
    expect_equal(tokens_of(answer.choices[0].logprobs.content), LOGPROBS_TOKENS, "logprobs")
    streamed = []
    for chunk in client.chat.completions.create(**request, stream=True):
        for choice in chunk.choices:
            if choice.logprobs is not None:
                streamed.extend(choice.logprobs.content or [])
    expect_equal(tokens_of(streamed), LOGPROBS_TOKENS, "streamed logprobs")
    return f"{answer.choices[0].logprobs.content[0].token!r} {answer.choices[0].logprobs.content[0].logprob}"


@check
def chat_stream():
    stream = client.chat.completions.create(
        model="gemini-2.5-flash",
        messages=[{"role": "user", "content": "Count from 1 to 30. [replay:gemini-text]"}],
        stream=True,
    )
    text = "".join(
        chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices
    )
    expect_equal(text, GEMINI_TEXT, "streamed text")
    return f"{len(text)} chars"


@check
def chat_gemini_tool_round_resending_what_it_received():
    question = [
        {
            "role": "user",
            "content": "What is the capital of the user country? Call the tool "
            "[replay:gemini-function-call]",
        }
    ]
    stream = client.chat.completions.create(
        model="gemini-2.5-flash", messages=question, tools=[COUNTRY_TOOL], stream=True
    )
    calls = {}
    for chunk in stream:
        for choice in chunk.choices:
            for piece in choice.delta.tool_calls or []:
                call = calls.setdefault(piece.index, {"id": None, "name": None, "arguments": ""})
                call["id"] = piece.id or call["id"]
                if piece.function:
                    call["name"] = piece.function.name or call["name"]
                    call["arguments"] += piece.function.arguments or ""
    expect_equal([call["name"] for call in calls.values()], ["get_country"], "tool calls")
    call = calls[0]
    # What a client that keeps only the documented fields sends back.
    history = question + [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": call["arguments"] or "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(COUNTRY_RESULT)},
    ]
    stream = client.chat.completions.create(
        model="gemini-2.5-flash", messages=history, tools=[COUNTRY_TOOL], stream=True
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    expect_equal(text, CAPITAL_ANSWER, "follow-up text")
    return f"get_country, then {text!r}"


@check
def chat_parse():
    answer = client.chat.completions.parse(
        model="echo",
        messages=[{"role": "user", "content": "Describe Paris."}],
        response_format=City,
    )
    message = answer.choices[0].message
    expect(message.refusal is None, f"refusal: {message.refusal!r}")
    return expect_city(message.parsed, "message.parsed")


@check
def responses():
    answer = client.responses.create(
        model="gpt-4o-mini", input="Answer YES. [replay:openai-text]"
    )
    expect_equal(answer.output_text, OPENAI_TEXT, "output_text")
    return repr(answer.output_text)


@check
def responses_parse():
    answer = client.responses.parse(model="echo", input="Describe Paris.", text_format=City)
    return expect_city(answer.output_parsed, "output_parsed")


@check
def embeddings():
    inputs = ["the first text", "the second text"]
    # The SDK asks for base64 by default and decodes it to floats.
    first = client.embeddings.create(model=EMBEDDING_MODEL, input=inputs)
    expect_equal([item.index for item in first.data], [0, 1], "indexes")
    vectors = [item.embedding for item in first.data]
    expect(all(vectors) and all(isinstance(x, float) for v in vectors for x in v), "not floats")
    expect_equal(len(vectors[0]), len(vectors[1]), "dimensions of both vectors")
    again = client.embeddings.create(model=EMBEDDING_MODEL, input=inputs[0], encoding_format="float")
    expect_equal(again.data[0].embedding, vectors[0], "the same text's vector (float vs base64)")
    short = client.embeddings.create(model=EMBEDDING_MODEL, input=inputs[0], dimensions=8)
    expect_equal(len(short.data[0].embedding), 8, "dimensions=8")
    return f"2 x {len(vectors[0])} floats, deterministic, dimensions honoured"


@check
def models_retrieve():
    model = client.models.retrieve("echo")
    expect_equal(model.id, "echo", "id")
    expect_equal(model.object, "model", "object")
    return f"{model.id} owned by {model.owned_by}"


if __name__ == "__main__":
    run_checks()
