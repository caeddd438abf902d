// The openai npm SDK against `skein serve`: `chat.completions.parse` with `zodResponseFormat` on
// the echo model, which answers a schema with a valid instance. See `checks.mjs`.

import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';

import { BASE_URL, SKEIN_TOKEN, TIMEOUT_MS, check, expect, runChecks } from './checks.mjs';

const client = new OpenAI({ baseURL: BASE_URL, apiKey: SKEIN_TOKEN, maxRetries: 0, timeout: TIMEOUT_MS });

const City = z.object({
  name: z.string(),
  country: z.string(),
  population: z.number().int(),
  landmarks: z.array(z.string()),
});

check('zod-response-format-parse', async () => {
  const completion = await client.chat.completions.parse({
    model: 'echo',
    messages: [{ role: 'user', content: 'Describe Paris.' }],
    response_format: zodResponseFormat(City, 'city'),
  });
  const message = completion.choices[0].message;
  expect(!message.refusal, `refusal: ${message.refusal}`);
  const parsed = City.safeParse(message.parsed);
  expect(parsed.success, `parsed does not validate: ${JSON.stringify(message.parsed)}`);
  return `City(name=${JSON.stringify(message.parsed.name)}, population=${message.parsed.population})`;
});

await runChecks();
