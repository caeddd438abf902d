"""The `llm` CLI against `skein serve`: `--schema`, `-o seed 1` and a tool (`--functions`), with
the echo model registered as an OpenAI-compatible model in `extra-openai-models.yaml` under an
`LLM_USER_PATH` this script owns. See `checks.py` for how the xtask runs it."""

import json
import os
import subprocess

from checks import BASE_URL, BIN_DIR, SKEIN_TOKEN, WORK_DIR, CheckFailed, check, expect
from checks import expect_equal, run_checks

USER_PATH = os.path.join(WORK_DIR, "llm")
MODEL = "skein-echo"
CALLS_FILE = os.path.join(WORK_DIR, "multiply-calls.jsonl")


def configure():
    os.makedirs(USER_PATH, exist_ok=True)
    with open(os.path.join(USER_PATH, "extra-openai-models.yaml"), "w", encoding="utf-8") as file:
        file.write(
            f"- model_id: {MODEL}\n"
            "  model_name: echo\n"
            f"  api_base: {json.dumps(BASE_URL)}\n"
            "  api_key_name: skein\n"
            "  supports_schema: true\n"
            "  supports_tools: true\n"
        )
    with open(os.path.join(USER_PATH, "keys.json"), "w", encoding="utf-8") as file:
        json.dump({"skein": SKEIN_TOKEN}, file)


def llm(*args):
    """`llm prompt -m skein-echo ARGS…`: its stdout, or a failure carrying what it printed."""
    environment = {**os.environ, "LLM_USER_PATH": USER_PATH}
    done = subprocess.run(
        [os.path.join(BIN_DIR, "llm"), "prompt", "-m", MODEL, "--no-log", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
        check=False,
    )
    if done.returncode != 0:
        printed = " ".join((done.stderr or done.stdout).split())
        raise CheckFailed(f"llm exited with {done.returncode}: {printed}")
    return done.stdout


@check
def schema():
    output = llm("--schema", "name, country, population int", "Describe Paris.")
    try:
        value = json.loads(output)
    except ValueError as error:
        raise CheckFailed(f"not JSON ({error}): {output!r}") from None
    expect(isinstance(value, dict), f"expected an object, got {value!r}")
    expect_equal(sorted(value), ["country", "name", "population"], "keys")
    expect(isinstance(value["name"], str) and isinstance(value["country"], str), f"{value!r}")
    expect(isinstance(value["population"], int), f"population is not an int: {value!r}")
    return json.dumps(value)


@check
def option_seed():
    # The echo model answers `{"raw": text}` with the text.
    output = llm("-o", "seed", "1", '{"raw": "Hello!"}')
    expect_equal(output.strip(), "Hello!", "output")
    return repr(output.strip())


@check
def functions_tool():
    code = (
        "import json\n"
        "def multiply(a: int, b: int) -> int:\n"
        '    """Multiply two numbers."""\n'
        f"    with open({CALLS_FILE!r}, 'a') as file:\n"
        "        file.write(json.dumps([a, b]) + '\\n')\n"
        "    return a * b\n"
    )
    output = llm("--functions", code, "What is 3 times 4? Use the tool.")
    expect(os.path.exists(CALLS_FILE), f"the tool was never called; llm printed {output!r}")
    with open(CALLS_FILE, encoding="utf-8") as file:
        calls = [json.loads(line) for line in file]
    expect(all(isinstance(n, int) for call in calls for n in call), f"arguments: {calls!r}")
    expect(output.strip(), "no answer after the tool round")
    return f"multiply called {len(calls)} time(s), then {len(output.strip())} chars"


if __name__ == "__main__":
    configure()
    run_checks()
