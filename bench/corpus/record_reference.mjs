// Records ONNX Runtime's outputs for a corpus model on deterministic inputs, for the CI corpus test
// (tests/python/test_corpus_models.py): writes NAME.reference.json (inputs as generation rules; outputs as lists,
// shapes, types) into DIR.
//   node bench/corpus/record_reference.mjs .models/corpus/silero_vad_v5.onnx DIR --shape input=1x512 --fill sr=16000
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ort = (await import(path.join(repo, '.deps/ort-node/node_modules/onnxruntime-node/dist/index.js'))).default;
const [model, dir, ...rest] = process.argv.slice(2);
const shapes = {}, fills = {};
for (let i = 0; i < rest.length; i += 2) {
  const [name, value] = rest[i + 1].split('=');
  if (rest[i] === '--shape') shapes[name] = value.split('x').map(Number);
  else if (rest[i] === '--fill') fills[name] = Number(value);
  else throw new Error(`unknown option ${rest[i]}`);
}
// The same inputs the Python test rebuilds, exactly: for float input k, x_i = u / 2^30 - 1 with
// u = (1103515245 * i + 12345 + 7919 * k) mod 2^31 (integer arithmetic, exact in both languages), or the
// --fill value. Noise-like on purpose: a pure tone leaves spectral bins near 0, where models that take a log
// amplify rounding differences that mean nothing.
const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 1 });
const feeds = {}, inputs = {};
session.inputMetadata.forEach((meta, k) => {
  const shape = shapes[meta.name] ?? meta.shape.map((d) => (typeof d === 'number' ? d : 1));
  const count = shape.reduce((a, b) => a * b, 1);
  if (meta.type === 'int64') {
    feeds[meta.name] = new ort.Tensor('int64', new BigInt64Array(count).fill(BigInt(fills[meta.name] ?? 0)), shape);
  } else {
    const data = new Float32Array(count);
    for (let i = 0; i < count; ++i) {
      const u = (1103515245 * i + 12345 + 7919 * k) % 2147483648;
      data[i] = fills[meta.name] ?? Math.fround(u / 1073741824 - 1);
    }
    feeds[meta.name] = new ort.Tensor('float32', data, shape);
  }
  inputs[meta.name] = { type: meta.type, shape, fill: fills[meta.name] ?? null, index: k };
});
const results = await session.run(feeds);
const outputs = {};
for (const [name, t] of Object.entries(results))
  outputs[name] = { type: t.type, shape: t.dims, values: Array.from(t.data, Number) };
const base = path.join(dir, path.basename(model, '.onnx'));
fs.writeFileSync(`${base}.reference.json`, JSON.stringify({ ort_version: ort.env.versions.node, inputs, outputs }));
console.log(`${base}.reference.json`);
