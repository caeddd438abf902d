#!/usr/bin/env python3
"""Independent fold of the third-party wire corpus into expected answers.

Usage: python3 providers/tests/wire_corpus/fold.py [--check]

Reads every recorded stream under providers/tests/fixtures/wire_corpus/<folder>/ and writes
providers/tests/wire_corpus/expected/<folder>/<file name>.json: what a user of the stream
reads. `--check` writes nothing and exits 1 when a committed file differs from what the fold
gives now. Standard library only.

This script is deliberately NOT a port of Skein's decoders (providers/src). It is written from
the providers' public API references (OpenAI Chat Completions streaming chunks, OpenAI Responses
streaming events, Anthropic Messages streaming, Gemini streamGenerateContent) and from the bytes
themselves. Where the expected answer is expressed in Skein's vocabulary (FinishReason, Usage),
it follows the meaning Skein documents for those types (providers/src/response.rs and the
adapter module docs), not what Skein's code happens to do.

Framing (identical in wire_corpus.rs, which builds the bytes it feeds the decoders)
-----------------------------------------------------------------------------------
* `.txt` / `.sse` files, and `.chunks.txt` files whose first non-blank line starts with
  `data:` or `event:`, are raw SSE bodies and are used byte for byte.
* Other `.chunks.txt` files hold one JSON payload per line (blank lines skipped, a trailing
  CR dropped). Each line becomes `event: <type>\ndata: <line>\n\n` for Anthropic and
  Responses (<type> = the payload's top-level string `type`; a line that is not a JSON object
  with a string `type` gets no `event:` line) and `data: <line>\n\n` for Chat and Gemini;
  Chat bodies end with `data: [DONE]\n\n`.
* The bytes are then read as the WHATWG server-sent-events spec says: lines end at CRLF, LF
  or CR; `:` lines are comments; one leading space after `field:` is dropped; `data` lines join
  with LF; a blank line dispatches an event (none when its data is empty); an event not
  terminated by a blank line when the body ends is discarded. A body that is not UTF-8 is a
  protocol error.

Outcome of a stream
-------------------
* `{"error": {"kind": "stream", "retryable": b}}` when the provider reports an error in the
  stream (OpenAI `error` chunk / Responses `error` event or `response.failed`, Anthropic
  `error` event, Gemini `error` object). `retryable` is decided by the error's type or code
  alone, whichever event carried it: OpenAI `server_error`, `rate_limit_exceeded` (and
  `overloaded_error`) are transient, `insufficient_quota` and everything else are not;
  Anthropic `overloaded_error`, `api_error`, `rate_limit_error`, `timeout_error` are transient;
  Gemini `UNAVAILABLE`, `INTERNAL`, `DEADLINE_EXCEEDED`, `RESOURCE_EXHAUSTED` are transient.
* `{"error": "truncated"}` when the body ends before the provider said the answer is complete:
  Chat without `[DONE]` and without a `finish_reason`; Responses without `response.completed`
  / `response.incomplete`; Anthropic without `message_stop` and without a `stop_reason`;
  Gemini without a `finishReason` or `promptFeedback.blockReason` (the Gemini stream has no
  terminator). A stop reason is enough to know the content is complete.
* `{"error": "protocol"}` when the stream breaks the protocol: an event payload that is not
  JSON, or an Anthropic `message_start` for another message id while the first message is still
  open (no `message_stop` yet). A repeated `message_start` with the same id is a duplicate and
  is ignored, except that its usage counts like any later usage report.
* Otherwise an answer. Reading stops at the provider's terminator (`[DONE]`, the first
  `response.completed` / `response.incomplete`, `message_stop`): recordings that hold several
  answers back to back yield the first one.

What an answer holds
--------------------
* `id`, `model`: the provider's response id and model name (Chat: the first non-empty `id` /
  `model` of any chunk, Azure sends `""` placeholders first; Responses: `response.id` /
  `response.model`; Anthropic: `message_start.message`; Gemini: `responseId` / `modelVersion`).
* `text`: every piece of visible answer text, concatenated in stream order. Chat: `delta.content`
  (a string, or Mistral's array of typed chunks whose `{"type":"text"}` items are text) and
  `delta.refusal`; an empty string is no text. Responses: `output_text` and `refusal` content of
  `message` items, per content part the concatenated `*.delta` events, or the part's final text
  (`*.done`, `content_part.done`, `output_item.done`) when no delta came. Anthropic: `text`
  blocks (`text_delta`, and the text a block starts with). Gemini: `text` of parts that are not
  `thought: true`.
* `reasoning.text`: all reasoning text concatenated. Chat: `delta.reasoning_content` (or
  `delta.reasoning`) and Mistral `{"type":"thinking","thinking":[{"type":"text",...}]}`
  chunks. Responses: per `reasoning` item, its summary parts (deltas, or final text when no
  delta came) joined with "\n\n" (Skein's documented separator for summary parts), or its
  `reasoning_text` content when it has no summary. Anthropic: `thinking` blocks. Gemini: parts
  with `thought: true`.
* `reasoning.blocks`: the text of each reasoning block, in order, where the wire delimits
  blocks: each Anthropic `thinking` / `redacted_thinking` block, each Responses `reasoning`
  item, and for Chat each run of reasoning not interrupted by visible text or a tool call.
  `null` for Gemini, whose wire has no block boundary for thoughts.
* `reasoning.opaque`: the opaque values the caller must send back unchanged, in stream order,
  except those riding on tool calls: `{"id": …}` (Responses reasoning item id), `{"signature": …}`
  (Anthropic thinking signature; Gemini `thoughtSignature` on a text, thought or other part),
  `{"encrypted": …}` (Responses `encrypted_content` of the finished item; Anthropic
  `redacted_thinking.data`). Per block the order is id, signature, encrypted. Empty strings are
  placeholders, not values.
* `tool_calls`: client function calls in stream order: `id` (`null` where the provider issues
  none and Skein mints one, i.e. Gemini calls without an id), `name`, `arguments` as the wire
  assembled them, `signature` (Gemini `thoughtSignature` of the call, else null).
  - Chat: `delta.tool_calls` keyed by `index`; `arguments` pieces concatenated.
  - Responses: `function_call` items (`call_id`, `name`, the finished item's `arguments`, else
    the `function_call_arguments.done` text, else the deltas) and `custom_tool_call` items
    (client-defined tools with free-form input: `input`). Built-in tool items (web_search_call,
    file_search_call, code_interpreter_call, image_generation_call, mcp_*, shell_call,
    local_shell_call, apply_patch_call, tool_search_call, program, compaction, ...) are not
    client function calls and are skipped with their events.
  - Anthropic: `tool_use` blocks, including whole ones in `message_start.message.content`:
    the concatenated `input_json_delta` pieces, or when none carried text, the block's own
    `input` JSON (`{}` for a tool without arguments). Server-tool blocks (`server_tool_use`,
    `*_tool_result`, `mcp_tool_use`, ...) are skipped with their deltas. A block still open
    when the message ends counts as it stands.
  - Gemini: each `functionCall` part is one call; a call streamed in pieces (`willContinue`,
    `partialArgs` with `jsonPath` and string/number/bool/null values, string pieces of one path
    appended) ends with a piece without `willContinue` (or at the end of the stream). A call
    without arguments has `{}`. Gemini arguments are JSON objects on the wire, so
    `arguments_compare` is `json` for Gemini (compare parsed values) and `exact` elsewhere.
* `finish`: Skein's FinishReason: Chat `stop`→"stop", `length`→"length",
  `tool_calls`/`function_call`→"tool_calls", `content_filter`→"content_filter"; Anthropic
  `end_turn`/`stop_sequence`→"stop", `max_tokens`/`model_context_window_exceeded`→"length",
  `tool_use`→"tool_calls", `refusal`→"content_filter"; Responses `completed`→"stop",
  `incomplete` with `max_output_tokens`→"length", `content_filter`→"content_filter"; Gemini
  `STOP`→"stop", `MAX_TOKENS`→"length", safety reasons (and a prompt `blockReason` of the same
  names) →"content_filter"; any other raw value →{"other": raw}. As Skein documents, a "stop"
  (or no reason at all) becomes "tool_calls" when the answer holds client tool calls.
* `usage` (Skein's Usage: input = the whole prompt, output = everything generated including
  reasoning): Chat `prompt_tokens`, `completion_tokens`, `prompt_tokens_details.cached_tokens`
  (DeepSeek `prompt_cache_hit_tokens`), `completion_tokens_details.reasoning_tokens` from the
  last usage object; when `total_tokens` shows that `completion_tokens` left the reasoning out
  (prompt + completion + reasoning == total != prompt + completion, as xAI reports) output is
  completion + reasoning. Responses `input_tokens`, `output_tokens`, `cached_tokens`,
  `cache_write_tokens`, `reasoning_tokens` of the final response. Anthropic: the latest value of
  each field over `message_start` and `message_delta` (cumulative), input = `input_tokens` +
  `cache_read_input_tokens` + `cache_creation_input_tokens`, cached = cache reads,
  cache_creation = cache writes, reasoning = `output_tokens_details.thinking_tokens`. Gemini:
  the last `usageMetadata` (each is a complete snapshot), input = `promptTokenCount` +
  `toolUsePromptTokenCount`, output = `candidatesTokenCount` + `thoughtsTokenCount`, cached =
  `cachedContentTokenCount`, reasoning = `thoughtsTokenCount`. Missing counts are 0.
* Only the first choice / candidate (index 0) is read: Skein never asks for more.
* `notes`: what the fold skipped or decided, for the reader; not compared.
* `stream`, `decoder` (`chat`, `responses`, `anthropic`, `gemini`: which public decoder reads
  the folder), `framing` (`raw` or `chunks`), `body_bytes` and `body_fnv1a64` (length and
  FNV-1a 64 hash of the framed body: the Rust test checks that it frames identically).
"""

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.normpath(os.path.join(HERE, "..", "fixtures", "wire_corpus"))
EXPECTED = os.path.join(HERE, "expected")

# Which decoder reads which folder.
FOLDERS = {
    "anthropic-sdk-python": "anthropic",
    "vercel-ai-anthropic": "anthropic",
    "openai-python": "chat",
    "vercel-ai-openai-chat": "chat",
    "vercel-ai-openai-compatible": "chat",
    "vercel-ai-google": "gemini",
    "vercel-ai-openai-responses": "responses",
}


class Protocol(Exception):
    """The stream breaks its protocol."""


class StreamError(Exception):
    """The provider reported an error in the stream."""

    def __init__(self, retryable):
        super().__init__(retryable)
        self.retryable = retryable


# --------------------------------------------------------------------------------------------
# Framing and SSE


def is_raw_sse(name, data):
    if not name.endswith(".chunks.txt"):
        return True
    for line in data.split(b"\n"):
        if line.strip():
            return line.startswith(b"data:") or line.startswith(b"event:")
    return False


def frame(name, data, decoder):
    """The SSE body the decoders are fed (see the module docs)."""
    if is_raw_sse(name, data):
        return data
    out = bytearray()
    for line in data.split(b"\n"):
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            continue
        if decoder in ("anthropic", "responses"):
            kind = None
            try:
                payload = json.loads(line.decode("utf-8"))
                if isinstance(payload, dict) and isinstance(payload.get("type"), str):
                    kind = payload["type"]
            except ValueError:
                pass
            if kind is not None:
                out += b"event: " + kind.encode("utf-8") + b"\n"
        out += b"data: " + line + b"\n\n"
    if decoder == "chat":
        out += b"data: [DONE]\n\n"
    return bytes(out)


def sse_events(body):
    """(event type, data) of each dispatched event, per the WHATWG EventSource parser."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise Protocol(f"body is not UTF-8: {err}") from err
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = re.split(r"\r\n|\r|\n", text)
    # The text after the last line terminator is an unterminated line: discarded with the
    # event it belongs to.
    lines = lines[:-1]
    events = []
    kind, data = "", []
    for line in lines:
        if line == "":
            if data:
                events.append((kind or "message", "\n".join(data)))
            kind, data = "", []
            continue
        if line.startswith(":"):
            continue
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "event":
            kind = value
        elif field == "data":
            data.append(value)
    return events


def after(answer, events, position, terminator):
    rest = len(events) - position - 1
    if rest:
        answer.note(f"{rest} events after the first {terminator} are not read (another answer)")


def parse_json(data):
    try:
        return json.loads(data)
    except ValueError as err:
        raise Protocol(f"event payload is not JSON: {err}: {data[:80]!r}") from err


def count(value):
    """A token count from the wire, 0 when absent or not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return int(value)


def fnv1a64(data):
    """FNV-1a (64 bit) of the framed body, so that the Rust test can check it feeds the
    decoders exactly the bytes this fold read."""
    value = 0xCBF29CE484222325
    for byte in data:
        value ^= byte
        value = (value * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# --------------------------------------------------------------------------------------------
# The answer being built


class Answer:
    def __init__(self):
        self.id = None
        self.model = None
        self.text = []
        self.blocks = []  # reasoning blocks: dict(text, id, signature, encrypted)
        self.calls = []  # dict(id, name, arguments, signature)
        self.finish = None  # Skein FinishReason (before the tool-call rule)
        self.usage = None
        self.notes = []
        # ("block", block) / ("opaque", {"signature": …}) in stream order: where the opaque
        # values of reasoning blocks and of other parts (Gemini text, images) come.
        self.events_order = []

    def note(self, text):
        if text not in self.notes:
            self.notes.append(text)

    def new_block(self, **fields):
        block = {"text": "", "id": None, "signature": None, "encrypted": None}
        block.update(fields)
        self.blocks.append(block)
        self.events_order.append(("block", block))
        return block

    def loose_signature(self, signature):
        if signature:
            self.events_order.append(("opaque", {"signature": signature}))

    def result(self, blocks_defined=True, arguments_compare="exact"):
        opaque = []
        for kind, item in self.events_order:
            if kind == "block":
                for field in ("id", "signature", "encrypted"):
                    if item[field]:
                        opaque.append({field: item[field]})
            else:
                opaque.append(item)
        finish = self.finish
        if self.calls and finish in (None, "stop"):
            finish = "tool_calls"
        if finish is None:
            finish = "stop"
        blocks = [b["text"] for b in self.blocks if has_content(b)]
        return {
            "id": self.id,
            "model": self.model,
            "text": "".join(self.text),
            "reasoning": {
                "text": "".join(blocks),
                "blocks": blocks if blocks_defined else None,
                "opaque": opaque,
            },
            "tool_calls": [
                {
                    "id": c["id"],
                    "name": c["name"],
                    "arguments": c["arguments"],
                    "signature": c.get("signature"),
                }
                for c in self.calls
            ],
            "arguments_compare": arguments_compare,
            "finish": finish,
            "usage": self.usage or zero_usage(),
        }


def has_content(block):
    return bool(block["text"] or block["id"] or block["signature"] or block["encrypted"])


def zero_usage():
    return {"input": 0, "output": 0, "cached_input": 0, "cache_creation": 0, "reasoning": 0}


def other(raw):
    return {"other": raw}


# --------------------------------------------------------------------------------------------
# OpenAI Chat Completions (and compatible servers)

CHAT_FINISH = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}

OPENAI_TRANSIENT = {"server_error", "rate_limit_exceeded", "overloaded_error"}


def openai_retryable(kind, code):
    values = [v for v in (kind, code) if isinstance(v, str)]
    if "insufficient_quota" in values:
        return False
    return any(v in OPENAI_TRANSIENT for v in values)


def fold_chat(events, answer):
    calls = {}  # key -> call
    order = []
    done = False
    finish_seen = False
    usage = None
    reasoning_open = None  # the current run of reasoning
    for position, (_, data) in enumerate(events):
        if data.strip() == "[DONE]":
            done = True
            after(answer, events, position, "[DONE]")
            break
        chunk = parse_json(data)
        if not isinstance(chunk, dict):
            raise Protocol("a chunk that is not a JSON object")
        error = chunk.get("error")
        if error:
            if isinstance(error, dict):
                raise StreamError(openai_retryable(error.get("type"), error.get("code")))
            raise StreamError(False)
        if answer.id is None and chunk.get("id"):
            answer.id = chunk["id"]
        if answer.model is None and chunk.get("model"):
            answer.model = chunk["model"]
        for choice in chunk.get("choices") or []:
            if (choice.get("index") or 0) != 0:
                answer.note("choices other than index 0 are not read")
                continue
            delta = choice.get("delta") or {}
            pieces = []  # ("reasoning" | "text", str) in the order the delta holds them
            reasoning = delta.get("reasoning_content")
            if not isinstance(reasoning, str) or reasoning == "":
                reasoning = delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                pieces.append(("reasoning", reasoning))
            content = delta.get("content")
            if isinstance(content, str):
                if content:
                    pieces.append(("text", content))
            elif isinstance(content, list):
                answer.note("delta.content is an array of typed chunks (Mistral)")
                for item in content:
                    if not isinstance(item, dict):
                        continue
                    if item.get("type") == "text" and isinstance(item.get("text"), str):
                        if item["text"]:
                            pieces.append(("text", item["text"]))
                    elif item.get("type") == "thinking":
                        for inner in item.get("thinking") or []:
                            if isinstance(inner, dict) and isinstance(inner.get("text"), str):
                                if inner["text"]:
                                    pieces.append(("reasoning", inner["text"]))
                    else:
                        answer.note(f"content chunk type {item.get('type')!r} skipped")
            refusal = delta.get("refusal")
            if isinstance(refusal, str) and refusal:
                pieces.append(("text", refusal))
            for kind, piece in pieces:
                if kind == "reasoning":
                    if reasoning_open is None:
                        reasoning_open = answer.new_block()
                    reasoning_open["text"] += piece
                else:
                    reasoning_open = None
                    answer.text.append(piece)
            for call in delta.get("tool_calls") or []:
                reasoning_open = None
                key = call.get("index")
                call_id = call.get("id") or None
                if key is None:
                    # No `index`: a known id continues its call, a new id starts one, and an
                    # id-less piece continues the last call.
                    known = [k for k in order if call_id and calls[k]["id"] == call_id]
                    if known:
                        key = known[0]
                    elif call_id:
                        key = ("id", call_id)
                    else:
                        key = order[-1] if order else 0
                if key not in calls:
                    calls[key] = {"id": "", "name": "", "arguments": "", "signature": None}
                    order.append(key)
                entry = calls[key]
                if call_id and not entry["id"]:
                    entry["id"] = call_id
                function = call.get("function") or {}
                if function.get("name") and not entry["name"]:
                    entry["name"] = function["name"]
                if isinstance(function.get("arguments"), str):
                    entry["arguments"] += function["arguments"]
            reason = choice.get("finish_reason")
            if reason:
                finish_seen = True
                answer.finish = CHAT_FINISH.get(reason, other(reason))
        if isinstance(chunk.get("usage"), dict):
            usage = chunk["usage"]
    if not done and not finish_seen:
        return "truncated"
    answer.calls = [calls[k] for k in order]
    if usage is not None:
        prompt = count(usage.get("prompt_tokens"))
        completion = count(usage.get("completion_tokens"))
        details = usage.get("completion_tokens_details") or {}
        reasoning = count(details.get("reasoning_tokens"))
        total = usage.get("total_tokens")
        output = completion
        if (
            reasoning
            and isinstance(total, int)
            and total != prompt + completion
            and total == prompt + completion + reasoning
        ):
            output = completion + reasoning
            answer.note("completion_tokens excludes reasoning_tokens (total_tokens says so)")
        prompt_details = usage.get("prompt_tokens_details") or {}
        cached = prompt_details.get("cached_tokens")
        if cached is None:
            cached = usage.get("prompt_cache_hit_tokens")
        answer.usage = {
            "input": prompt,
            "output": output,
            "cached_input": count(cached),
            "cache_creation": 0,
            "reasoning": reasoning,
        }
    return None


# --------------------------------------------------------------------------------------------
# OpenAI Responses

CLIENT_CALL_ITEMS = ("function_call", "custom_tool_call")


def fold_responses(events, answer):
    items = {}  # output_index -> item state
    order = []
    done = False
    for position, (event, data) in enumerate(events):
        payload = parse_json(data)
        if not isinstance(payload, dict):
            raise Protocol("an event payload that is not a JSON object")
        kind = payload.get("type") or event
        index = payload.get("output_index")
        if kind in ("response.created", "response.in_progress", "response.queued"):
            response = payload.get("response") or {}
            if answer.id is None and response.get("id"):
                answer.id = response["id"]
            if answer.model is None and response.get("model"):
                answer.model = response["model"]
        elif kind == "response.output_item.added":
            item = payload.get("item") or {}
            if index is None:
                index = len(order)
            state = {
                "type": item.get("type"),
                "parts": {},  # content / summary index -> {"deltas": [...] | None, "final": str}
                "item": item,
                "final": None,
                "args_deltas": None,
                "args_done": None,
            }
            if index not in items:
                order.append(index)
            items[index] = state
            if state["type"] not in CLIENT_CALL_ITEMS + ("message", "reasoning"):
                answer.note(f"{state['type']} items skipped (not a client function call)")
        elif kind in (
            "response.output_text.delta",
            "response.refusal.delta",
            "response.reasoning_summary_text.delta",
            "response.reasoning_text.delta",
        ):
            delta = payload.get("delta")
            state = items.get(index)
            if state is None or not isinstance(delta, str):
                continue
            part = part_of(state, kind, payload)
            part["deltas"] = (part["deltas"] or []) + [delta]
        elif kind in (
            "response.output_text.done",
            "response.refusal.done",
            "response.reasoning_summary_text.done",
            "response.reasoning_text.done",
        ):
            state = items.get(index)
            text = payload.get("refusal") if kind == "response.refusal.done" else payload.get("text")
            if state is not None and isinstance(text, str):
                part_of(state, kind, payload)["final"] = text
        elif kind in ("response.content_part.done", "response.reasoning_summary_part.done"):
            state = items.get(index)
            part = payload.get("part") or {}
            text = part.get("refusal") if part.get("type") == "refusal" else part.get("text")
            if state is not None and isinstance(text, str):
                target = part_of(state, kind, payload)
                if target["final"] is None:
                    target["final"] = text
        elif kind in ("response.content_part.added", "response.reasoning_summary_part.added"):
            state = items.get(index)
            if state is not None:
                part_of(state, kind, payload)
        elif kind in ("response.function_call_arguments.delta", "response.custom_tool_call_input.delta"):
            state = items.get(index)
            delta = payload.get("delta")
            if state is not None and isinstance(delta, str):
                state["args_deltas"] = (state["args_deltas"] or "") + delta
        elif kind in ("response.function_call_arguments.done", "response.custom_tool_call_input.done"):
            state = items.get(index)
            value = payload.get("arguments") if "arguments" in kind else payload.get("input")
            if state is not None and isinstance(value, str):
                state["args_done"] = value
        elif kind == "response.output_item.done":
            item = payload.get("item") or {}
            if index is None or index not in items:
                index = index if index is not None else len(order)
                order.append(index)
                items[index] = {
                    "type": item.get("type"),
                    "parts": {},
                    "item": item,
                    "final": None,
                    "args_deltas": None,
                    "args_done": None,
                }
            items[index]["final"] = item
        elif kind in ("response.completed", "response.incomplete"):
            response = payload.get("response") or {}
            answer.usage = responses_usage(response.get("usage"))
            status = response.get("status")
            if kind == "response.incomplete" or status == "incomplete":
                reason = (response.get("incomplete_details") or {}).get("reason")
                answer.finish = {
                    "max_output_tokens": "length",
                    "content_filter": "content_filter",
                }.get(reason, other(reason or "incomplete"))
            else:
                answer.finish = "stop"
            done = True
            after(answer, events, position, kind)
            break
        elif kind == "response.failed":
            error = (payload.get("response") or {}).get("error") or {}
            raise StreamError(openai_retryable(error.get("type"), error.get("code")))
        elif kind == "error":
            error = payload.get("error")
            if isinstance(error, dict):
                raise StreamError(openai_retryable(error.get("type"), error.get("code")))
            # The documented form: `code`, `message` and `param` at the top level.
            raise StreamError(openai_retryable(None, payload.get("code")))
    if not done:
        return "truncated"
    for index in order:
        state = items[index]
        item = state["final"] or state["item"]
        kind = state["type"] or item.get("type")
        if kind == "message":
            finals = {}
            for position, part in enumerate(item.get("content") or []):
                if isinstance(part, dict):
                    text = part.get("refusal") if part.get("type") == "refusal" else part.get("text")
                    if isinstance(text, str):
                        finals[position] = text
            for position in sorted(set(state["parts"]) | set(finals)):
                part = state["parts"].get(position, {"deltas": None, "final": None})
                answer.text.append(part_text(part, finals.get(position), answer))
        elif kind == "reasoning":
            summary = item.get("summary") or []
            content = item.get("content") or []
            summary_finals = {i: p.get("text") for i, p in enumerate(summary) if isinstance(p, dict)}
            content_finals = {i: p.get("text") for i, p in enumerate(content) if isinstance(p, dict)}
            summary_parts = {k[1]: v for k, v in state["parts"].items() if k[0] == "summary"}
            content_parts = {k[1]: v for k, v in state["parts"].items() if k[0] == "content"}
            texts = [
                part_text(summary_parts.get(i, {"deltas": None, "final": None}), summary_finals.get(i), answer)
                for i in sorted(set(summary_parts) | set(summary_finals))
            ]
            if not texts:
                texts = [
                    part_text(content_parts.get(i, {"deltas": None, "final": None}), content_finals.get(i), answer)
                    for i in sorted(set(content_parts) | set(content_finals))
                ]
            encrypted = item.get("encrypted_content")
            answer.new_block(
                text="\n\n".join(texts),
                id=item.get("id") or (state["item"].get("id")),
                encrypted=encrypted if isinstance(encrypted, str) and encrypted else None,
            )
        elif kind in CLIENT_CALL_ITEMS:
            field = "arguments" if kind == "function_call" else "input"
            final_args = state["final"].get(field) if state["final"] else None
            if isinstance(final_args, str):
                arguments = final_args
            elif state["args_done"] is not None:
                arguments = state["args_done"]
            elif state["args_deltas"] is not None:
                arguments = state["args_deltas"]
            else:
                arguments = item.get(field) if isinstance(item.get(field), str) else ""
            if kind == "custom_tool_call":
                answer.note("custom_tool_call: a client-defined tool; its free-form input is the arguments")
            answer.calls.append(
                {
                    "id": item.get("call_id") or state["item"].get("call_id") or "",
                    "name": item.get("name") or state["item"].get("name") or "",
                    "arguments": arguments,
                    "signature": None,
                }
            )
    return None


def part_of(state, kind, payload):
    """The content / summary part an event is about, keyed ("content"|"summary", index)."""
    if "summary" in kind:
        key = ("summary", payload.get("summary_index") or 0)
    else:
        key = ("content", payload.get("content_index") or 0)
    if state["type"] == "message":
        key = key[1]
    return state["parts"].setdefault(key, {"deltas": None, "final": None})


def part_text(part, item_final, answer=None):
    if part["deltas"] is not None:
        streamed = "".join(part["deltas"])
        final = part["final"] if part["final"] is not None else item_final
        if answer is not None and final is not None and final != streamed:
            answer.note(
                "the deltas and the finished text of a part disagree (a trimmed recording): "
                "the deltas, what was streamed, are kept"
            )
        return streamed
    if part["final"] is not None:
        return part["final"]
    return item_final or ""


def responses_usage(usage):
    if not isinstance(usage, dict):
        return None
    inputs = usage.get("input_tokens_details") or {}
    outputs = usage.get("output_tokens_details") or {}
    return {
        "input": count(usage.get("input_tokens")),
        "output": count(usage.get("output_tokens")),
        "cached_input": count(inputs.get("cached_tokens")),
        "cache_creation": count(inputs.get("cache_write_tokens")),
        "reasoning": count(outputs.get("reasoning_tokens")),
    }


# --------------------------------------------------------------------------------------------
# Anthropic Messages

ANTHROPIC_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}

ANTHROPIC_TRANSIENT = {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}


def fold_anthropic(events, answer, raw_lines):
    message_id = None
    started = False
    stopped = False
    stop_reason_seen = False
    blocks = {}  # index -> open block state
    fields = {}  # latest value of each usage field

    def usage_update(usage):
        if not isinstance(usage, dict):
            return
        for key in (
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ):
            if isinstance(usage.get(key), (int, float)) and not isinstance(usage.get(key), bool):
                fields[key] = usage[key]
        details = usage.get("output_tokens_details")
        if isinstance(details, dict) and isinstance(details.get("thinking_tokens"), int):
            fields["thinking_tokens"] = details["thinking_tokens"]

    def open_block(index, block, whole):
        kind = block.get("type")
        state = {"type": kind}
        if kind == "text":
            if isinstance(block.get("text"), str) and block["text"]:
                answer.text.append(block["text"])
        elif kind == "thinking":
            state["block"] = answer.new_block(
                text=block.get("thinking") or "",
                signature=block.get("signature") or None,
            )
        elif kind == "redacted_thinking":
            state["block"] = answer.new_block(encrypted=block.get("data") or None)
        elif kind == "tool_use":
            initial = block.get("input")
            if initial is None:
                initial = {}
            text = compact(initial)
            if whole and not any(text in line for line in raw_lines):
                raise SystemExit(f"cannot find the raw JSON of a tool_use input: {text}")
            state["call"] = {
                "id": block.get("id") or "",
                "name": block.get("name") or "",
                "arguments": "",
                "signature": None,
                "initial": text,
            }
            answer.calls.append(state["call"])
        else:
            answer.note(f"{kind} blocks skipped (not text, thinking or a client tool call)")
            state["type"] = "skipped"
        blocks[index] = state

    for position, (event, data) in enumerate(events):
        payload = parse_json(data)
        if not isinstance(payload, dict):
            raise Protocol("an event payload that is not a JSON object")
        kind = payload.get("type") or event
        if kind == "message_start":
            message = payload.get("message") or {}
            if started:
                if message.get("id") != message_id:
                    raise Protocol(
                        f"message_start for {message.get('id')!r} while {message_id!r} is open"
                    )
                answer.note("a duplicate message_start for the same message is ignored (its usage counts)")
                usage_update(message.get("usage"))
                continue
            started = True
            message_id = message.get("id")
            answer.id = message.get("id")
            answer.model = message.get("model")
            usage_update(message.get("usage"))
            for position, block in enumerate(message.get("content") or []):
                if isinstance(block, dict):
                    open_block(("start", position), block, whole=True)
            if message.get("stop_reason"):
                stop_reason_seen = True
                reason = message["stop_reason"]
                answer.finish = ANTHROPIC_FINISH.get(reason, other(reason))
        elif kind == "content_block_start":
            block = payload.get("content_block")
            if isinstance(block, dict):
                open_block(payload.get("index"), block, whole=False)
        elif kind == "content_block_delta":
            index = payload.get("index")
            delta = payload.get("delta") or {}
            state = blocks.get(index)
            dkind = delta.get("type")
            if state is not None and state["type"] == "skipped":
                continue
            if dkind == "text_delta":
                if state is None:
                    answer.note("text_delta for a block that never started: kept as text")
                if state is None or state["type"] == "text":
                    if isinstance(delta.get("text"), str):
                        answer.text.append(delta["text"])
            elif dkind == "thinking_delta":
                if state is None:
                    state = {"type": "thinking", "block": answer.new_block()}
                    blocks[index] = state
                if state["type"] == "thinking" and isinstance(delta.get("thinking"), str):
                    state["block"]["text"] += delta["thinking"]
            elif dkind == "signature_delta":
                if state is not None and state["type"] == "thinking":
                    signature = delta.get("signature")
                    if isinstance(signature, str) and signature:
                        state["block"]["signature"] = (state["block"]["signature"] or "") + signature
            elif dkind == "input_json_delta":
                if state is not None and state["type"] == "tool_use":
                    if isinstance(delta.get("partial_json"), str):
                        state["call"]["arguments"] += delta["partial_json"]
            elif dkind == "citations_delta":
                pass
            else:
                answer.note(f"{dkind} deltas skipped")
        elif kind == "content_block_stop":
            blocks.pop(payload.get("index"), None)
        elif kind == "message_delta":
            delta = payload.get("delta") or {}
            if delta.get("stop_reason"):
                stop_reason_seen = True
                reason = delta["stop_reason"]
                answer.finish = ANTHROPIC_FINISH.get(reason, other(reason))
            usage_update(payload.get("usage"))
        elif kind == "message_stop":
            stopped = True
            after(answer, events, position, "message_stop")
            break
        elif kind == "error":
            error = payload.get("error") or {}
            raise StreamError(error.get("type") in ANTHROPIC_TRANSIENT)
    if not stopped and not stop_reason_seen:
        return "truncated"
    for call in answer.calls:
        if call["arguments"] == "":
            call["arguments"] = call["initial"]
        del call["initial"]
    read = fields.get("cache_read_input_tokens", 0)
    write = fields.get("cache_creation_input_tokens", 0)
    if fields:
        answer.usage = {
            "input": count(fields.get("input_tokens")) + count(read) + count(write),
            "output": count(fields.get("output_tokens")),
            "cached_input": count(read),
            "cache_creation": count(write),
            "reasoning": count(fields.get("thinking_tokens")),
        }
    return None


# --------------------------------------------------------------------------------------------
# Gemini

GEMINI_FILTER = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
GEMINI_TRANSIENT = {"UNAVAILABLE", "INTERNAL", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED"}


def gemini_finish(reason):
    if reason == "STOP":
        return "stop"
    if reason == "MAX_TOKENS":
        return "length"
    if reason in GEMINI_FILTER:
        return "content_filter"
    return other(reason)


def json_path(path):
    """`$.a.b[0].c` → ["a", "b", 0, "c"]."""
    if not isinstance(path, str) or not path.startswith("$"):
        raise Protocol(f"partialArgs jsonPath {path!r}")
    tokens = []
    for name, number, quoted in re.findall(r"\.([A-Za-z0-9_\-]+)|\[(\d+)\]|\['([^']*)'\]", path[1:]):
        if number:
            tokens.append(int(number))
        else:
            tokens.append(name or quoted)
    return tokens


def set_path(root, tokens, value, append):
    node = root
    for position, token in enumerate(tokens):
        last = position == len(tokens) - 1
        child = [] if (not last and isinstance(tokens[position + 1], int)) else {}
        if isinstance(token, int):
            while len(node) <= token:
                node.append(None)
            if last:
                if append and isinstance(node[token], str) and isinstance(value, str):
                    node[token] += value
                else:
                    node[token] = value
            else:
                if node[token] is None:
                    node[token] = child
                node = node[token]
        else:
            if last:
                if append and isinstance(node.get(token), str) and isinstance(value, str):
                    node[token] += value
                else:
                    node[token] = value
            else:
                if token not in node:
                    node[token] = child
                node = node[token]


def fold_gemini(events, answer):
    finish_seen = False
    usage = None
    call = None  # the call being streamed in pieces
    for _, data in events:
        if not data.strip():
            continue
        payload = parse_json(data)
        responses = payload if isinstance(payload, list) else [payload]
        for response in responses:
            if not isinstance(response, dict):
                raise Protocol("a response that is not a JSON object")
            error = response.get("error")
            if error:
                status = error.get("status") if isinstance(error, dict) else None
                raise StreamError(status in GEMINI_TRANSIENT)
            if answer.id is None and response.get("responseId"):
                answer.id = response["responseId"]
            if answer.model is None and response.get("modelVersion"):
                answer.model = response["modelVersion"]
            for candidate in response.get("candidates") or []:
                if (candidate.get("index") or 0) != 0:
                    answer.note("candidates other than index 0 are not read")
                    continue
                for part in (candidate.get("content") or {}).get("parts") or []:
                    call = gemini_part(part, answer, call)
                reason = candidate.get("finishReason")
                if reason:
                    finish_seen = True
                    answer.finish = gemini_finish(reason)
            feedback = response.get("promptFeedback") or {}
            if feedback.get("blockReason"):
                finish_seen = True
                answer.note("the prompt was blocked (promptFeedback.blockReason)")
                if answer.finish is None:
                    answer.finish = gemini_finish(feedback["blockReason"])
            if isinstance(response.get("usageMetadata"), dict):
                usage = response["usageMetadata"]
    if call is not None:
        answer.note("a streamed function call had no final piece: it ends with the stream")
    if not finish_seen:
        return "truncated"
    for entry in answer.calls:
        entry["arguments"] = compact(entry.pop("args"))
    if usage is not None:
        thoughts = count(usage.get("thoughtsTokenCount"))
        answer.usage = {
            "input": count(usage.get("promptTokenCount")) + count(usage.get("toolUsePromptTokenCount")),
            "output": count(usage.get("candidatesTokenCount")) + thoughts,
            "cached_input": count(usage.get("cachedContentTokenCount")),
            "cache_creation": 0,
            "reasoning": thoughts,
        }
    return None


def gemini_part(part, answer, call):
    """Folds one part; returns the call still being streamed (or None)."""
    signature = part.get("thoughtSignature") or None
    function = part.get("functionCall")
    if not part.get("thought") and answer.blocks:
        # Any other part ends the run of thoughts.
        answer.blocks[-1]["closed"] = True
    if isinstance(function, dict):
        empty = not any(function.get(key) for key in ("name", "args", "partialArgs", "id"))
        if call is None and empty and not function.get("willContinue"):
            answer.note("an empty functionCall piece with no call being streamed is ignored")
            return None
        if call is not None and function.get("name") and call["name"]:
            answer.note("a new named functionCall ended the call being streamed")
            call = None
        if call is None:
            args = function.get("args")
            call = {
                "id": function.get("id") or None,
                "name": function.get("name") or "",
                "args": args if isinstance(args, dict) else {},
                "signature": signature,
            }
            answer.calls.append(call)
        else:
            if function.get("name") and not call["name"]:
                call["name"] = function["name"]
            if function.get("id") and not call["id"]:
                call["id"] = function["id"]
            if signature and not call["signature"]:
                call["signature"] = signature
            if isinstance(function.get("args"), dict):
                call["args"].update(function["args"])
        for partial in function.get("partialArgs") or []:
            answer.note("function call arguments streamed as partialArgs")
            tokens = json_path(partial.get("jsonPath"))
            if "stringValue" in partial:
                set_path(call["args"], tokens, partial["stringValue"], append=True)
            elif "numberValue" in partial:
                set_path(call["args"], tokens, partial["numberValue"], append=False)
            elif "boolValue" in partial:
                set_path(call["args"], tokens, partial["boolValue"], append=False)
            elif "nullValue" in partial:
                set_path(call["args"], tokens, None, append=False)
        return call if function.get("willContinue") else None
    if part.get("thought"):
        text = part.get("text") if isinstance(part.get("text"), str) else ""
        if not answer.blocks or answer.blocks[-1].get("closed"):
            block = answer.new_block()
        else:
            block = answer.blocks[-1]
        block["text"] += text
        if signature:
            block["signature"] = signature
            block["closed"] = True
        return call
    if signature:
        answer.loose_signature(signature)
    if isinstance(part.get("text"), str):
        answer.text.append(part["text"])
    else:
        skipped = [key for key in part if key not in ("thoughtSignature", "thought")]
        answer.note(f"parts with {', '.join(skipped) or 'nothing'} skipped (not text)")
    return call


# --------------------------------------------------------------------------------------------


def fold_file(folder, name):
    decoder = FOLDERS[folder]
    raw = open(os.path.join(CORPUS, folder, name), "rb").read()
    body = frame(name, raw, decoder)
    answer = Answer()
    outcome = None
    error = None
    try:
        events = sse_events(body)
        raw_lines = body.decode("utf-8").splitlines()
        if decoder == "chat":
            outcome = fold_chat(events, answer)
        elif decoder == "responses":
            outcome = fold_responses(events, answer)
        elif decoder == "anthropic":
            outcome = fold_anthropic(events, answer, raw_lines)
        else:
            outcome = fold_gemini(events, answer)
    except Protocol as err:
        error = "protocol"
        answer.note(str(err))
    except StreamError as err:
        error = {"kind": "stream", "retryable": err.retryable}
    if outcome == "truncated":
        error = "truncated"
    header = {
        "stream": f"{folder}/{name}",
        "decoder": decoder,
        "framing": "raw" if is_raw_sse(name, raw) else "chunks",
        "body_bytes": len(body),
        "body_fnv1a64": fnv1a64(body),
    }
    if error is not None:
        result = dict(header, error=error)
    else:
        result = dict(
            header,
            **answer.result(
                blocks_defined=decoder != "gemini",
                arguments_compare="json" if decoder == "gemini" else "exact",
            ),
        )
    result["notes"] = answer.notes
    return result


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    written = 0
    for folder in sorted(FOLDERS):
        for name in sorted(os.listdir(os.path.join(CORPUS, folder))):
            if name == "README.md":
                continue
            result = fold_file(folder, name)
            text = json.dumps(result, indent=2, ensure_ascii=False) + "\n"
            path = os.path.join(EXPECTED, folder, name + ".json")
            if check:
                try:
                    current = open(path, encoding="utf-8").read()
                except FileNotFoundError:
                    current = None
                if current != text:
                    stale.append(path)
            else:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8", newline="\n") as out:
                    out.write(text)
            written += 1
    if check:
        for path in stale:
            print(f"stale: {path}", file=sys.stderr)
        sys.exit(1 if stale else 0)
    print(f"wrote {written} expected answers under {EXPECTED}")


if __name__ == "__main__":
    main()
