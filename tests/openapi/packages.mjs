// The npm packages of tests/openapi, installed by `make openapi-deps` (`make test` runs it):
// importOrExplain imports one, or exits 1 saying how to install them. The tests fail without
// them; they are never skipped.

export async function importOrExplain(name) {
  try {
    return await import(name);
  } catch (e) {
    console.error(`FAIL: the npm package ${name} is not installed (${e.message}).`);
    console.error("Install the packages of tests/openapi with `make openapi-deps` " +
                  "(npm ci --prefix tests/openapi).");
    process.exit(1);
  }
}
