"""What the Python client scripts of `cargo xtask clients` share.

The xtask starts `skein serve` (echo model, and OpenAI, Anthropic and Gemini models answered by
recorded streams) and runs each `check_*.py` with:
  SKEIN_URL        the server's base URL (`http://127.0.0.1:PORT`)
  SKEIN_TOKEN      the bearer token it accepts
  CLIENT_WORK_DIR  an empty folder the script owns (its working directory)
  CLIENT_BIN_DIR   the virtualenv's `bin` folder (where the `llm` CLI is)

A check is a function decorated with `@check`; it asserts only on what the client returns and
returns a one-line summary. `run_checks()` runs them in order and prints one line per check,
`PASS name: summary` or `FAIL name: reason`, where the reason of an HTTP error is the status
and the message Skein answered, as the client reported them. A failed check does not stop the
others; the script exits 0 once every check ran (the xtask counts the lines).

A model call is answered by a recording when its text holds `[replay:SCENARIO]` (see
`xtask/openai_sdk/replay.py`); the expected values of those calls are taken from the recordings
under `providers/tests/fixtures/`, named next to each value.
"""

import asyncio
import inspect
import os
import sys
import traceback

SKEIN_URL = os.environ["SKEIN_URL"]
SKEIN_TOKEN = os.environ["SKEIN_TOKEN"]
BASE_URL = f"{SKEIN_URL}/v1"
WORK_DIR = os.environ["CLIENT_WORK_DIR"]
BIN_DIR = os.environ["CLIENT_BIN_DIR"]

# Bounded, so that a stalled answer fails its check instead of hanging CI.
TIMEOUT_SECONDS = 30

CHECKS = []


class CheckFailed(Exception):
    pass


def check(function):
    CHECKS.append(function)
    return function


def expect(condition, message):
    if not condition:
        raise CheckFailed(message)


def expect_equal(actual, expected, what):
    if actual != expected:
        raise CheckFailed(f"{what}: expected {expected!r}, got {actual!r}")


def expect_instance(value, kind, what):
    if not isinstance(value, kind):
        raise CheckFailed(f"{what}: expected a {kind.__name__}, got {value!r}")


def openai_client(asynchronous=False):
    """The openai SDK's client for Skein, without retries so every status reaches the check."""
    import openai

    kind = openai.AsyncOpenAI if asynchronous else openai.OpenAI
    return kind(base_url=BASE_URL, api_key=SKEIN_TOKEN, max_retries=0, timeout=TIMEOUT_SECONDS)


def reason(error):
    """Why a check failed: the HTTP status and Skein's message when the client (or an error it
    wraps) got an HTTP error, else the exception itself."""
    seen = set()
    current = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        status = getattr(current, "status_code", None)
        if isinstance(status, int):
            return f"HTTP {status}: {message_of(current)}"
        current = current.__cause__ or current.__context__
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if not isinstance(error, CheckFailed) else text


def message_of(error):
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return inner["message"]
        return str(body)
    if body:
        return " ".join(str(body).split())
    text = " ".join(str(getattr(error, "message", error)).split())
    return f"{text} (no error body)"


def run_checks():
    for function in CHECKS:
        name = function.__name__.replace("_", "-")
        try:
            summary = function()
            if inspect.iscoroutine(summary):
                summary = asyncio.run(summary)
            print(f"PASS {name}: {summary or 'ok'}", flush=True)
        except Exception as error:  # noqa: BLE001 - every failure is a line, never a crash
            print(f"FAIL {name}: {reason(error)}", flush=True)
            traceback.print_exc(file=sys.stderr)
