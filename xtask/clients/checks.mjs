// What the JS client scripts of `cargo xtask clients` share (the Python twin is `checks.py`).
//
// The xtask starts `skein serve` (echo model, and OpenAI, Anthropic and Gemini models answered by
// recorded streams), copies the scripts beside its `node_modules` and runs each
// `check_*.mjs` with SKEIN_URL (the server's base URL) and SKEIN_TOKEN (its bearer token).
// A check asserts only on what the client returns; each prints one line, `PASS name: summary`
// or `FAIL name: reason`, where the reason of an HTTP error is Skein's status and message as
// the client reported them. A model call is answered by a recording when its text holds
// `[replay:SCENARIO]` (see `xtask/openai_sdk/replay.py`).

export const SKEIN_URL = process.env.SKEIN_URL;
export const SKEIN_TOKEN = process.env.SKEIN_TOKEN;
export const BASE_URL = `${SKEIN_URL}/v1`;
// Bounded, so that a stalled answer fails its check instead of hanging CI.
export const TIMEOUT_MS = 30_000;

const checks = [];

/** Registers a check: an async function returning a one-line summary. */
export function check(name, run) {
  checks.push({ name, run });
}

export function expect(condition, message) {
  if (!condition) throw new Error(message);
}

export function expectEqual(actual, expected, what) {
  const [a, e] = [JSON.stringify(actual), JSON.stringify(expected)];
  if (a !== e) throw new Error(`${what}: expected ${e}, got ${a}`);
}

/** Why a check failed: the HTTP status and Skein's message when an error in the chain carries
 * one (the AI SDK's `APICallError`, the openai SDK's `APIError`), else the error itself. */
export function reason(error) {
  const seen = new Set();
  for (let current = error; current && !seen.has(current); current = current.cause) {
    seen.add(current);
    const status = current.statusCode ?? current.status;
    if (Number.isInteger(status)) {
      return `HTTP ${status}: ${messageOf(current)}`;
    }
    if (Array.isArray(current.errors) && current.errors.length > 0) {
      return reason(current.errors[current.errors.length - 1]);
    }
  }
  return `${error?.name ?? 'Error'}: ${oneLine(error?.message ?? String(error))}`;
}

function messageOf(error) {
  const body = error.responseBody ?? error.error;
  if (typeof body === 'string') {
    try {
      return oneLine(JSON.parse(body)?.error?.message ?? body);
    } catch {
      return oneLine(body);
    }
  }
  if (body && typeof body === 'object') {
    return oneLine(body.message ?? body.error?.message ?? JSON.stringify(body));
  }
  return oneLine(error.message);
}

function oneLine(text) {
  return String(text).split(/\s+/).join(' ').trim();
}

/** Runs every check in order; a failure is a line, never a crash. */
export async function runChecks() {
  for (const { name, run } of checks) {
    try {
      const summary = await run();
      console.log(`PASS ${name}: ${summary ?? 'ok'}`);
    } catch (error) {
      console.log(`FAIL ${name}: ${reason(error)}`);
      console.error(error);
    }
  }
}
