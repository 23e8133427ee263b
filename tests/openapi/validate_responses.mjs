// Validates a real server's recorded answers against the OpenAPI document (docs/architecture.md,
// "OpenAPI"), so that the document cannot drift from the code:
//
//   node tests/openapi/validate_responses.mjs docs/openapi.json RECORDS_JSON
//
// RECORDS_JSON is an array of {method, path, query, status, content_type, headers, body}
// (headers: the X-Drover-* ones; body: the parsed JSON, or the text), written by
// tests/openapi/responses_test.cc. Each record must match an operation of the document (its path
// template, integer parameters as digits), its status must be one the operation lists
// (`default` covers only the front's generic errors, never a recorded answer), its content type
// one the response lists, each required header of the response must be there and match its
// schema, and a JSON body must validate against the response's schema (Ajv, JSON Schema
// 2020-12, the dialect of OpenAPI 3.1). Every
// operation must have at least one 2xx and one 4xx answer among the records. Prints each
// problem and "N answers validated against M operations, P problems"; exit 1 on any problem.

import { readFileSync } from "node:fs";
import { importOrExplain } from "./packages.mjs";

const [documentFile, recordsFile] = process.argv.slice(2);
if (!documentFile || !recordsFile) {
  console.error("usage: node validate_responses.mjs OPENAPI_JSON RECORDS_JSON");
  process.exit(2);
}
const document = JSON.parse(readFileSync(documentFile, "utf8"));
const records = JSON.parse(readFileSync(recordsFile, "utf8"));

// The whole document is one schema resource, so that "#/components/schemas/X" resolves; the
// OpenAPI keywords around the schemas (paths, info, ...) are not JSON Schema keywords.
const { default: Ajv2020 } = await importOrExplain("ajv/dist/2020.js");
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema({ ...document, $id: "openapi.json" });

const pointer = (...parts) =>
  parts.map((part) => String(part).replaceAll("~", "~0").replaceAll("/", "~1")).join("/");
const deref = (node) =>
  node && node.$ref
    ? node.$ref.slice(2).split("/").reduce((at, part) =>
        at[part.replaceAll("~1", "/").replaceAll("~0", "~")], document)
    : node;

// Each operation with the regular expression of its path.
const operations = [];
for (const [path, item] of Object.entries(document.paths)) {
  for (const [method, operation] of Object.entries(item)) {
    const types = {};
    for (const parameter of (operation.parameters ?? []).map(deref)) {
      if (parameter.in === "path") types[parameter.name] = parameter.schema.type;
    }
    const source = path.replace(/\{([^}]+)\}/g, (_, name) =>
      types[name] === "integer" ? "\\d+" : "[^/]+");
    operations.push({
      name: `${method.toUpperCase()} ${path}`, path, method, operation,
      regex: new RegExp(`^${source}$`), ok: 0, errors: 0,
    });
  }
}

const problems = [];
for (const record of records) {
  const what = `${record.method} ${record.path}${record.query} -> ${record.status}`;
  const match = operations.find((o) => o.method === record.method.toLowerCase() &&
                                       o.regex.test(record.path));
  if (!match) {
    problems.push(`${what}: no operation of the document matches`);
    continue;
  }
  const response = deref(match.operation.responses[String(record.status)]);
  if (!response) {
    problems.push(`${what}: ${match.name} does not list status ${record.status}: ` +
                  JSON.stringify(record.body).slice(0, 300));
    continue;
  }
  if (record.status < 300) ++match.ok; else if (record.status < 500) ++match.errors;
  for (const [name, header] of Object.entries(response.headers ?? {})) {
    const value = record.headers?.[name];
    if (value === undefined) {
      if (header.required) problems.push(`${what}: header ${name} is missing`);
      continue;
    }
    const typed = header.schema?.type === "integer" && /^-?\d+$/.test(value) ? Number(value) : value;
    if (!ajv.validate(header.schema ?? {}, typed)) {
      problems.push(`${what}: header ${name}: '${value}' ${ajv.errorsText(ajv.errors)}`);
    }
  }
  const type = record.content_type.split(";")[0].trim();
  const content = response.content ?? {};
  if (!(type in content)) {
    problems.push(`${what}: content type '${type}' is not among ${Object.keys(content)}`);
    continue;
  }
  if (type !== "application/json") continue;
  // The response's own pointer, or the shared response it refers to.
  const listed = match.operation.responses[String(record.status)];
  const at = listed.$ref
    ? listed.$ref.slice(2)
    : pointer("paths", match.path, match.method, "responses", String(record.status));
  const schemaRef = `openapi.json#/${at}/${pointer("content", type, "schema")}`;
  const validate = ajv.getSchema(schemaRef);
  if (!validate(record.body)) {
    for (const error of validate.errors) {
      problems.push(`${what}: body${error.instancePath} ${error.message}` +
                    (error.params?.additionalProperty
                      ? ` ('${error.params.additionalProperty}')` : "") +
                    ` [schema ${error.schemaPath}]`);
    }
  }
}
for (const o of operations) {
  if (o.ok === 0) problems.push(`${o.name}: no 2xx answer was recorded`);
  if (o.errors === 0 && o.operation.security?.length !== 0) {
    problems.push(`${o.name}: no 4xx answer was recorded`);
  }
}
for (const problem of problems) console.log(`FAIL ${problem}`);
console.log(`${records.length} answers validated against ${operations.length} operations, ` +
            `${problems.length} problems`);
process.exit(problems.length === 0 ? 0 : 1);
