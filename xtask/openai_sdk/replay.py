"""A fake OpenAI, Anthropic and Gemini on loopback that answers with recorded provider traffic.

`cargo xtask openai-sdk` points `skein serve` at this server, so that every provider call Skein
makes is answered with the exact bytes of a fixture from `providers/tests/fixtures/`.

A request names its scenario with `[replay:NAME]` in its text (the client puts it in the user
message and Skein forwards it to the provider). The turn of the conversation is the number of
assistant messages the request carries (`model` for Gemini), so a follow-up after a tool call
gets the fixture recorded for that follow-up. A follow-up is only answered when it carries what
the real provider needed to continue (the tool call id, the tool's result, a signature): a
client that dropped them would be refused by the real provider too, here with a 400 in that
provider's error shape that names what is missing.

Usage: replay.py --fixtures DIR --port-file FILE --log FILE
The server binds a free loopback port and writes it to FILE once it accepts connections.
"""

import argparse
import json
import os
import re
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MARKER = re.compile(r"\[replay:([a-z0-9-]+)\]")

# Scenario -> protocol, then per mode (`stream` / `json`) one answer per turn: the fixture, and
# the string values the request must hold for that turn (taken from the recorded follow-up
# request of the same conversation).
SCENARIOS = {
    # Non-stream text answer.
    "openai-text": {
        "protocol": "openai",
        "json": [("openai/chat_text.json", [])],
    },
    # "Hello!" with the log probabilities of its two tokens (written from the API reference:
    # no recording asked for them).
    "openai-logprobs": {
        "protocol": "openai",
        "stream": [("reference/openai_chat_stream_logprobs.sse", [])],
        "json": [("reference/openai_chat_logprobs.json", [])],
    },
    # A `multiply` tool call, then the text answering its result.
    "openai-tool-call": {
        "protocol": "openai",
        "stream": [
            ("openai/chat_stream_tool_call.sse", []),
            (
                "openai/chat_stream_text_after_tool.sse",
                ["call_1EYWDzueHEp8OsB8jJSEp7WB", "2869461"],
            ),
        ],
        "json": [("openai/chat_tool_call.json", [])],
    },
    # Signed thinking and a `fixed_version` tool call, then the text answering its result; the
    # follow-up must carry the thinking's signature, as Anthropic refuses thinking without it.
    "anthropic-thinking-tool": {
        "protocol": "anthropic",
        "stream": [
            ("anthropic/stream_thinking_tool_use.sse", []),
            (
                "anthropic/stream_text_after_tool.sse",
                [
                    "toolu_01825dXWLSoJwCst1qTsiWdb",
                    "0.32a0",
                    "EoQDCm0IDhgCKkCDzGs2kL2PgnDCZU/nM2wG2P1VIXCRHVnhDDzBQxNF1fl4QBXEKLxRItNJ2MwFd"
                    "W9eeZPhsxSQIxD54cv3zs29MhljbGF1ZGUtaGFpa3UtNC01LTIwMjUxMDAxOABCCHRoaW5raW5nE"
                    "gy/OWlwTmmqUjC6L70aDJ4P0R5NfuIe9U5zAiIwCxPduXS2UxCNxJCee3i91qK3cAyAgxCjL2wkQ"
                    "5UD56iX1hXGOyuNaiH5k+dF5OCQKsQBxiAo+NjC61hV8nRYtaiP+C4inOcuMKuTG9Z1rysxTXkKB"
                    "Tl3oMiOlnEPHHPpKpg4sYF2G5VoTg8JTon20hdZw4GfTEVupnU1qAmnMqyAgke9SoV7HBW/PyA/F"
                    "xL/q33xJ2gKFiD+BsgI9Z0koMmFKCvm2MoYE6u+ONEwKdFQXL1FKRW6t/bYbJGrLJLwxilsL82h9"
                    "j4xjggjMn8Npvpn+zsrDPW/8PuLd4Pu+/EsjoneYwyxQQtUVgzhVGhhANWRjSBwUxgB",
                ],
            ),
        ],
        "json": [("anthropic/message_thinking_tool_use.json", [])],
    },
    # A `get_country` call with a thought signature, then the text answering its result; the
    # follow-up must carry the signature (its opening, the same in either base64 alphabet), as
    # Gemini refuses a call sent back without it.
    "gemini-function-call": {
        "protocol": "gemini",
        "stream": [
            ("gemini/stream_function_call_signature.sse", []),
            (
                "gemini/stream_text_after_function_call.sse",
                ["get_country", "Mexico", "EpwICpkIAXLI2nxlU6gsWZaZHRYkX1orzuM8vSUFwaAt1JRxEC2hJzPAcAu3PWaK"],
            ),
        ],
    },
    # Plain text in three events.
    "gemini-text": {
        "protocol": "gemini",
        "stream": [("gemini/stream_text.sse", [])],
    },
}

GEMINI_PATH = re.compile(r"^/v1beta/models/([^/:]+):(streamGenerateContent|generateContent)$")


class Replay(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "skein-openai-sdk-replay"

    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        self.server.log(f"{self.address_string()} {format % args}")

    def do_GET(self):
        self.answer_error(None, 404, f"replay: no GET route {self.path}")

    def do_POST(self):
        body = self.read_body()
        path, _, query = self.path.partition("?")
        if path == "/v1/chat/completions":
            protocol = "openai"
        elif path == "/v1/messages":
            protocol = "anthropic"
        elif GEMINI_PATH.match(path):
            protocol = "gemini"
        else:
            self.answer_error(None, 404, f"replay: no route POST {path}")
            return
        try:
            request = json.loads(body)
        except ValueError as err:
            self.answer_error(protocol, 400, f"replay: the body is not JSON: {err}")
            return
        self.server.log(f"request {protocol} {self.path}: {body.decode('utf-8', 'replace')}")
        if protocol == "gemini":
            stream = GEMINI_PATH.match(path).group(2) == "streamGenerateContent"
            if stream and "alt=sse" not in query.split("&"):
                self.answer_error(protocol, 400, "replay: only `alt=sse` streams are recorded")
                return
        else:
            stream = request.get("stream") is True
        try:
            fixture = choose(protocol, request, stream)
        except Refusal as refusal:
            self.answer_error(protocol, 400, f"replay: {refusal}")
            return
        with open(os.path.join(self.server.fixtures, fixture), "rb") as file:
            data = file.read()
        self.server.log(f"answer {fixture} ({len(data)} bytes)")
        self.send_response(200)
        self.send_header(
            "Content-Type", "text/event-stream" if stream else "application/json"
        )
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    # Trailers, up to the blank line that ends them.
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def answer_error(self, protocol, status, message):
        """An error in the shape the provider of `protocol` uses, so Skein reads it as one."""
        self.server.log(f"error {status}: {message}")
        if protocol == "anthropic":
            body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
        elif protocol == "gemini":
            body = {"error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}}
        else:
            body = {
                "error": {
                    "message": message,
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            }
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Refusal(Exception):
    """A request no recorded answer fits."""


def choose(protocol, request, stream):
    """The fixture answering `request`, or a Refusal saying why none does."""
    names = MARKER.findall(json.dumps(request, ensure_ascii=False))
    if not names:
        raise Refusal("the request names no scenario (`[replay:NAME]` in a message)")
    name = names[-1]
    scenario = SCENARIOS.get(name)
    if scenario is None:
        raise Refusal(f"unknown scenario `{name}`; known: {', '.join(sorted(SCENARIOS))}")
    if scenario["protocol"] != protocol:
        raise Refusal(f"scenario `{name}` is recorded for {scenario['protocol']}, not {protocol}")
    mode = "stream" if stream else "json"
    turns = scenario.get(mode)
    if turns is None:
        raise Refusal(f"scenario `{name}` has no {mode} recording")
    turn = assistant_turns(protocol, request)
    if turn >= len(turns):
        raise Refusal(
            f"scenario `{name}` ({mode}) has {len(turns)} turn(s); the request carries {turn} "
            "assistant message(s)"
        )
    fixture, required = turns[turn]
    held = set(strings(request))
    missing = [value for value in required if not any(value in string for string in held)]
    if missing:
        raise Refusal(
            f"scenario `{name}` turn {turn + 1}: the request lacks {missing!r}, which the "
            "provider needs to continue the conversation"
        )
    return fixture


def assistant_turns(protocol, request):
    if protocol == "gemini":
        return sum(1 for content in request.get("contents", []) if content.get("role") == "model")
    return sum(1 for message in request.get("messages", []) if message.get("role") == "assistant")


def strings(value):
    """Every string value in a JSON document (keys excluded)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fixtures, log_path):
        super().__init__(("127.0.0.1", 0), Replay)
        self.fixtures = fixtures
        self.log_file = open(log_path, "a", encoding="utf-8")
        self.log_lock = threading.Lock()

    def log(self, line):
        with self.log_lock:
            self.log_file.write(line + "\n")
            self.log_file.flush()

    def handle_error(self, request, client_address):
        self.log(f"error serving {client_address}:\n{traceback.format_exc()}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    for scenario in SCENARIOS.values():
        for mode in ("stream", "json"):
            for fixture, _ in scenario.get(mode, []):
                if not os.path.isfile(os.path.join(args.fixtures, fixture)):
                    sys.exit(f"replay: fixture {fixture} not found under {args.fixtures}")
    server = Server(args.fixtures, args.log)
    port = server.server_address[1]
    # Written whole, then renamed, so that a reader never sees a partial port.
    partial = args.port_file + ".partial"
    with open(partial, "w", encoding="utf-8") as file:
        file.write(str(port))
    os.replace(partial, args.port_file)
    server.log(f"listening on 127.0.0.1:{port}")
    server.serve_forever()


if __name__ == "__main__":
    main()
