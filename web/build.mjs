// Builds the dashboard into dist/: the bundle (esbuild, minified, names hashed by content so the
// server may cache them forever) and index.html naming it. Prints each file's size and the
// gzipped total (docs/benchmarks.md records it).
import { build } from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { gzipSync } from 'node:zlib';

rmSync('dist', { recursive: true, force: true });
mkdirSync('dist/assets', { recursive: true });
const result = await build({
  entryPoints: ['src/main.js'],
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2020'],
  outdir: 'dist/assets',
  entryNames: 'app-[hash]',
  assetNames: '[name]-[hash]',
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
});
const outputs = Object.keys(result.metafile.outputs);
const js = outputs.find((f) => f.endsWith('.js'));
const css = outputs.find((f) => f.endsWith('.css'));
writeFileSync('dist/index.html', `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Drover</title>
${css ? `<link rel="stylesheet" href="/assets/${basename(css)}">` : ''}
<script type="module" src="/assets/${basename(js)}"></script>
</head><body><div id="app"></div>
<noscript>The Drover dashboard needs JavaScript; the CLI and the HTTP API do not.</noscript>
</body></html>
`);
let raw = 0;
let gzipped = 0;
for (const file of [...outputs, 'dist/index.html']) {
  const bytes = readFileSync(file);
  raw += bytes.length;
  gzipped += gzipSync(bytes, { level: 9 }).length;
}
console.log(`dashboard: ${outputs.length + 1} files, ${raw} bytes, ${gzipped} bytes gzipped`);
