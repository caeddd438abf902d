// The Vercel AI SDK (`ai` + `@ai-sdk/openai`) against `skein serve`: `generateObject` on the echo
// model over Responses and Chat Completions, and `streamText` over the Responses provider with a
// tool and a reasoning step (a replayed Anthropic model with signed thinking: the second step
// reaches the provider only if its signature survives). See `checks.mjs`.

import { createOpenAI } from '@ai-sdk/openai';
import { generateObject, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';

import { BASE_URL, SKEIN_TOKEN, TIMEOUT_MS, check, expect, expectEqual, runChecks } from './checks.mjs';

const provider = createOpenAI({ baseURL: BASE_URL, apiKey: SKEIN_TOKEN });

const City = z.object({
  name: z.string(),
  country: z.string(),
  population: z.number().int(),
  landmarks: z.array(z.string()),
});

// anthropic/stream_thinking_tool_use.sse, then anthropic/stream_text_after_tool.sse
const FIXED_VERSION_THINKING =
  'The user wants me to:\n1. Use the fixed_version tool\n2. Tell them the version\n' +
  '3. Make a short joke about it\n\nLet me first call the fixed_version tool to see what ' +
  'version it returns.';
const FIXED_VERSION_ANSWER =
  "The version is **0.32a0**.\n\nHere's a joke about it: \n\nLooks like this version is still " +
  "in alpha testing... I guess you could say it's going through a \"0.32a good time\" before " +
  "becoming stable! \u{1f604}\n\n(It's at version 0.32a, which means it's far from 1.0, so " +
  'plenty of room to grow!)';

async function objectFrom(model) {
  const { object } = await generateObject({
    model,
    schema: City,
    prompt: 'Describe Paris.',
    maxRetries: 0,
    abortSignal: AbortSignal.timeout(TIMEOUT_MS),
  });
  const parsed = City.safeParse(object);
  expect(parsed.success, `the object does not validate: ${JSON.stringify(object)}`);
  return `City(name=${JSON.stringify(object.name)}, population=${object.population})`;
}

check('generate-object-responses', () => objectFrom(provider.responses('echo')));

check('generate-object-chat', () => objectFrom(provider.chat('echo')));

check('stream-text-tool-with-reasoning-over-responses', async () => {
  const calls = [];
  let streamError;
  const result = streamText({
    model: provider.responses('claude-haiku-4-5-20251001'),
    prompt:
      'Use the fixed_version tool. Then tell me the version and make one short joke about it. ' +
      'Think about it first. [replay:anthropic-thinking-tool]',
    tools: {
      fixed_version: tool({
        description: 'Return a fixed test version string',
        inputSchema: z.object({}),
        execute: async (input) => {
          calls.push(input);
          return '0.32a0';
        },
      }),
    },
    stopWhen: stepCountIs(3),
    maxRetries: 0,
    abortSignal: AbortSignal.timeout(TIMEOUT_MS),
    onError: ({ error }) => {
      streamError ??= error;
    },
  });
  // Drain the stream, so that an error inside it reaches `onError`.
  for await (const part of result.fullStream) {
    if (part.type === 'error') streamError ??= part.error;
  }
  if (streamError) throw streamError;
  const steps = await result.steps;
  expectEqual(calls.length, 1, 'fixed_version calls');
  expect(steps.length >= 2, `expected a tool step and an answer step, got ${steps.length} step(s)`);
  expectEqual(steps[0].reasoningText, FIXED_VERSION_THINKING, 'reasoning of the first step');
  expectEqual(
    steps[0].toolCalls.map((call) => call.toolName),
    ['fixed_version'],
    'tool calls of the first step',
  );
  expectEqual(await result.text, FIXED_VERSION_ANSWER, 'text of the last step');
  return `reasoning + fixed_version, then ${FIXED_VERSION_ANSWER.length} chars`;
});

await runChecks();
