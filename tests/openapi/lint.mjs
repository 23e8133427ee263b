// Lints the OpenAPI document with Redocly's linter (the engine of `redocly lint`, without the
// CLI's 200 MB of documentation tooling), its `recommended` rules plus those below, every
// problem an error: the document must be valid OpenAPI 3.1 and clean.
//
//   node tests/openapi/lint.mjs docs/openapi.json
//
// Prints each problem as FILE POINTER: RULE: MESSAGE and "N problems"; exit 1 when any.

import { resolve } from "node:path";
import { importOrExplain } from "./packages.mjs";

const file = process.argv[2];
if (!file) {
  console.error("usage: node lint.mjs OPENAPI_JSON");
  process.exit(2);
}

const { createConfig, lint } = await importOrExplain("@redocly/openapi-core");
const config = await createConfig({
  extends: ["recommended"],
  rules: {
    // Every operation has an id and a summary, paths are unambiguous, examples valid.
    "operation-operationId": "error",
    "operation-operationId-unique": "error",
    "operation-summary": "error",
    "no-ambiguous-paths": "error",
    "no-invalid-media-type-examples": "error",
    "no-unused-components": "error",
    "security-defined": "error",
    // GET /v1/health answers no 4xx of its own (405, 408, ... are every route's `default`);
    // every other operation has its 401 (tests/openapi/validate_responses.mjs sees them).
    "operation-4xx-response": "off",
    // The API has no licence of its own to name.
    "info-license": "off",
    "info-license-url": "off",
  },
});
const problems = await lint({ ref: resolve(file), config });
for (const problem of problems) {
  const where = problem.location?.[0]?.pointer ?? "";
  console.log(`${file} ${where}: ${problem.ruleId}: ${problem.message}`);
}
console.log(`${problems.length} problems`);
process.exit(problems.length === 0 ? 0 : 1);
