// Side-by-side latency of Tessera and ONNX Runtime (CPU) on one model: same inputs, same thread count,
// alternating rounds in one process tree.
//
//   node bench/compare_ort.mjs --model build/bench_models/resnet50/model.onnx --threads 2 --dim batch=1
//
// ONNX Runtime is the npm package onnxruntime-node (scripts/fetch_onnxruntime.sh installs it into
// .deps/ort-node). Tessera runs as `build/tessera bench-server MODEL --threads N --input name=file.npy ...`,
// which times its runs in-process and answers over stdin/stdout; ONNX Runtime is timed around
// `await session.run(feeds)` here (so its numbers include the Node.js binding's small overhead).
//
// Procedure: both sessions are created, outputs are compared once (max abs diff), each side warms up, then
// `--config KEY=VALUE` (repeatable) passes a session config entry to Tessera. `--rounds` rounds run `--runs` iterations on each side (by default as many as fit in `--budget` seconds,
// estimated from the warm-up), alternating which side goes first, with a pause of `--settle` ms (default 100)
// before each side's round: both runtimes' worker threads spin-wait for a while after their last run (libgomp's a
// few ms, ONNX Runtime's pool ~30 ms), and without the pause they took a core from the side measured next (on 2
// cores, each stalled barrier cost that side a scheduler tick, 4 ms, in its first runs). Medians and
// p10/p90 are over all timed iterations. The 1-minute load average is recorded before and after, since the
// machine may be shared.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ortEntry = path.join(repo, '.deps/ort-node/node_modules/onnxruntime-node/dist/index.js');

function parseArgs(argv) {
  const args = { dims: {}, shapes: {}, fills: {}, threads: os.cpus().length, rounds: 10, runs: 0, budget: 60, warmup: 4, seed: 0, noise: 1e-6, settle: 100,
                 tessera: path.join(repo, 'build/tessera'), optLevel: 'all', label: '', json: '', config: [] };
  const take = (i) => { if (i + 1 >= argv.length) throw new Error(`${argv[i]} needs a value`); return argv[i + 1]; };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i], value = take(i);
    const [name, assigned] = value.split('=');
    switch (key) {
      case '--model': args.model = value; break;
      case '--threads': args.threads = Number(value); break;
      case '--rounds': args.rounds = Number(value); break;
      case '--runs': args.runs = Number(value); break;
      case '--budget': args.budget = Number(value); break;
      case '--warmup': args.warmup = Number(value); break;
      case '--settle': args.settle = Number(value); break;
      case '--seed': args.seed = Number(value); break;
      case '--tessera': args.tessera = value; break;
      case '--opt-level': args.optLevel = value; break;
      case '--config': args.config.push(value); break;
      case '--label': args.label = value; break;
      case '--json': args.json = value; break;
      case '--noise': args.noise = Number(value); break;
      case '--dim': args.dims[name] = Number(assigned); break;
      case '--shape': args.shapes[name] = assigned.split('x').map(Number); break;
      case '--fill': args.fills[name] = Number(assigned); break;
      default: throw new Error(`unknown option ${key}`);
    }
  }
  if (!args.model) {
    throw new Error('usage: compare_ort.mjs --model MODEL [--threads N] [--dim SYMBOL=V]... [--shape NAME=AxBx..]... ' +
                    '[--fill NAME=VALUE]... [--rounds R] [--runs K | --budget SECONDS] [--warmup W] [--settle MS] [--json FILE] ' +
                    '[--noise EPS]');
  }
  args.label ||= path.basename(path.dirname(args.model)) || path.basename(args.model);
  return args;
}

// ---- inputs ------------------------------------------------------------------------------------------

function mulberry32(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function concreteShape(meta, args) {
  if (args.shapes[meta.name]) return args.shapes[meta.name];
  return meta.shape.map((d) => (typeof d === 'number' && d >= 0 ? d : (args.dims[d] ?? 1)));
}

// Floats uniform in [-1, 1); integer inputs named *mask* are all ones, other integers uniform in [0, 100);
// bools are true; uint8 inputs (images) uniform in [0, 256), those named *mask* 0 or 255 at random; an input
// named in --fill holds that value everywhere (e.g. a sample rate, or 0 for a
// false flag such as a merged decoder's use_cache_branch).
function makeInput(ort, meta, shape, random, fill) {
  const count = shape.reduce((a, b) => a * b, 1);
  if (meta.type === 'uint8') {
    const data = new Uint8Array(count);
    const isMask = /mask/i.test(meta.name);
    for (let i = 0; i < count; ++i) data[i] = fill !== undefined ? fill : isMask ? (random() < 0.5 ? 0 : 255) : Math.floor(random() * 256);
    return new ort.Tensor('uint8', data, shape);
  }
  if (meta.type === 'bool') return new ort.Tensor('bool', new Uint8Array(count).fill(fill === undefined || fill ? 1 : 0), shape);
  if (fill !== undefined) {
    if (meta.type === 'float32') return new ort.Tensor('float32', new Float32Array(count).fill(fill), shape);
    if (meta.type === 'int64') return new ort.Tensor('int64', new BigInt64Array(count).fill(BigInt(fill)), shape);
  }
  if (meta.type === 'float32') {
    const data = new Float32Array(count);
    for (let i = 0; i < count; ++i) data[i] = random() * 2 - 1;
    return new ort.Tensor('float32', data, shape);
  }
  if (meta.type === 'int64') {
    const data = new BigInt64Array(count);
    const isMask = /mask/i.test(meta.name);
    for (let i = 0; i < count; ++i) data[i] = isMask ? 1n : BigInt(Math.floor(random() * 100));
    return new ort.Tensor('int64', data, shape);
  }
  throw new Error(`input ${meta.name}: element type ${meta.type} is not supported by the bench`);
}

// ---- .npy ----------------------------------------------------------------------------------------------

const npyDtypes = { float32: ['<f4', Float32Array], int64: ['<i8', BigInt64Array], float64: ['<f8', Float64Array],
                    int32: ['<i4', Int32Array], bool: ['|b1', Uint8Array], uint8: ['|u1', Uint8Array] };

function writeNpy(file, tensor) {
  const [descr] = npyDtypes[tensor.type];
  const dims = tensor.dims.join(', ') + (tensor.dims.length === 1 ? ',' : '');
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${dims}), }`;
  header += ' '.repeat((64 - ((10 + header.length + 1) % 64)) % 64) + '\n';
  const prefix = Buffer.alloc(10);
  prefix.write('\x93NUMPY', 0, 'latin1');
  prefix[6] = 1; prefix[7] = 0;
  prefix.writeUInt16LE(header.length, 8);
  const data = tensor.data;
  fs.writeFileSync(file, Buffer.concat([prefix, Buffer.from(header, 'latin1'),
                                        Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

function readNpy(file) {
  const bytes = fs.readFileSync(file);
  const major = bytes[6];
  const headerLength = major === 1 ? bytes.readUInt16LE(8) : bytes.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = bytes.toString('latin1', start, start + headerLength);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const entry = Object.values(npyDtypes).find(([d]) => d === descr);
  if (!entry) throw new Error(`${file}: dtype ${descr} is not supported by the bench`);
  const body = bytes.subarray(start + headerLength);
  const aligned = new Uint8Array(body.length);
  aligned.set(body);
  return new entry[1](aligned.buffer);
}

function maxAbsDiff(a, b) {
  if (a.length !== b.length) return Infinity;
  let worst = 0;
  for (let i = 0; i < a.length; ++i) worst = Math.max(worst, Math.abs(Number(a[i]) - Number(b[i])));
  return worst;
}

// The largest difference relative to the reference output's largest magnitude (0 for two all-zero outputs).
function maxRelDiff(a, b) {
  const scale = b.reduce((m, v) => Math.max(m, Math.abs(Number(v))), 0);
  const diff = maxAbsDiff(a, b);
  return diff === 0 ? 0 : diff / Math.max(scale, 1e-30);
}

// ---- Tessera bench-server --------------------------------------------------------------------------------

class TesseraServer {
  constructor(args, inputFiles) {
    const command = ['bench-server', args.model, '--threads', String(args.threads), '--opt-level', args.optLevel];
    for (const [name, file] of Object.entries(inputFiles)) command.push('--input', `${name}=${file}`);
    for (const setting of args.config) command.push('--config', setting);
    this.process = spawn(args.tessera, command, { stdio: ['pipe', 'pipe', 'inherit'] });
    this.lines = createInterface({ input: this.process.stdout })[Symbol.asyncIterator]();
    this.exited = new Promise((resolve) => this.process.on('exit', resolve));
  }
  async reply() {
    const { value, done } = await this.lines.next();
    if (done) throw new Error(`tessera bench-server exited (code ${await this.exited})`);
    const message = JSON.parse(value);
    if (message.error) throw new Error(`tessera bench-server: ${message.error}`);
    return message;
  }
  async request(line) {
    this.process.stdin.write(line + '\n');
    return this.reply();
  }
  async close() {
    this.process.stdin.end('quit\n');
    await this.exited;
  }
}

// ---- measurement -----------------------------------------------------------------------------------------

async function timeOrt(session, feeds, count) {
  const ms = [];
  for (let i = 0; i < count; ++i) {
    const start = performance.now();
    await session.run(feeds);
    ms.push(performance.now() - start);
  }
  return ms;
}

// Iterations per round so that the timed rounds take about `--budget` seconds in all (1 to 20), from the
// fastest warm-up run of each side (the first runs are slow).
function runsForBudget(args, msPerPair) {
  return Math.max(1, Math.min(20, Math.round((args.budget * 1000) / (args.rounds * msPerPair))));
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.round(p * (sorted.length - 1)))];
}

function summarize(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return { median: percentile(sorted, 0.5), p10: percentile(sorted, 0.1), p90: percentile(sorted, 0.9),
           min: sorted[0], runs: sorted.length };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (!fs.existsSync(ortEntry)) throw new Error(`${ortEntry} is missing: run bash scripts/fetch_onnxruntime.sh`);
  const ort = (await import(ortEntry)).default;
  const loadBefore = os.loadavg()[0];

  const ortSession = await ort.InferenceSession.create(args.model, {
    intraOpNumThreads: args.threads, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential',
  });
  const random = mulberry32(args.seed);
  const feeds = {}, inputFiles = {}, shapes = {};
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-bench-'));
  for (const meta of ortSession.inputMetadata) {
    shapes[meta.name] = concreteShape(meta, args);
    feeds[meta.name] = makeInput(ort, meta, shapes[meta.name], random, args.fills[meta.name]);
    inputFiles[meta.name] = path.join(workDir, `${meta.name}.npy`);
    writeNpy(inputFiles[meta.name], feeds[meta.name]);
  }
  const tessera = new TesseraServer(args, inputFiles);
  try {
    const ready = await tessera.reply();
    const outputsDir = path.join(workDir, 'outputs');
    await tessera.request(`outputs ${outputsDir}`);
    const reference = await ortSession.run(feeds);
    const diffs = {}, relDiffs = {};
    for (const name of ortSession.outputNames) {
      const actual = readNpy(path.join(outputsDir, `${name}.npy`));
      diffs[name] = maxAbsDiff(actual, reference[name].data);
      relDiffs[name] = maxRelDiff(actual, reference[name].data);
    }

    const noiseFloor = await ortNoiseFloor(ort, ortSession, feeds, reference, args.noise);

    const warmOrt = await timeOrt(ortSession, feeds, args.warmup);
    const warmTessera = (await tessera.request(`run ${args.warmup}`)).ms;
    args.runs ||= runsForBudget(args, Math.min(...warmOrt) + Math.min(...warmTessera));
    const tesseraMs = [], ortMs = [];
    for (let round = 0; round < args.rounds; ++round) {
      const settle = () => new Promise((resolve) => setTimeout(resolve, args.settle));
      const runTessera = async () => { await settle(); tesseraMs.push(...(await tessera.request(`run ${args.runs}`)).ms); };
      const runOrt = async () => { await settle(); ortMs.push(...(await timeOrt(ortSession, feeds, args.runs))); };
      if (round % 2 === 0) { await runOrt(); await runTessera(); } else { await runTessera(); await runOrt(); }
    }
    const result = {
      model: args.label, path: args.model, shapes, threads: args.threads, opt_level: args.optLevel,
      rounds: args.rounds, runs_per_round: args.runs, settle_ms: args.settle, tessera: summarize(tesseraMs), ort: summarize(ortMs),
      max_abs_diff: diffs, max_rel_diff: relDiffs, ort_noise_rel_diff: noiseFloor, ort_noise_eps: args.noise, load_before: loadBefore, load_after: os.loadavg()[0], tessera_load_ms: ready.load_ms,
      ort_version: ort.env.versions.node,
    };
    result.ratio = result.tessera.median / result.ort.median;
    result.min_ratio = result.tessera.min / result.ort.min;
    report(result);
    if (args.json) fs.appendFileSync(args.json, JSON.stringify(result) + '\n');
  } finally {
    await tessera.close();
    fs.rmSync(workDir, { recursive: true, force: true });
  }
}

// ONNX Runtime against itself with every float input moved by a few ulp (--noise, 1e-6 relative by default,
// alternating signs; 1e-3 for float16 models, whose first Cast would round a smaller change away): how far the
// outputs of this model move under rounding-level changes. Deep quantized models
// amplify such changes (a value crossing a rounding boundary of DynamicQuantizeLinear changes a whole
// row of the next product), so two correct runtimes differ by about this much; it is reported beside
// the Tessera / ONNX Runtime difference. Null when the model has no float input.
async function ortNoiseFloor(ort, session, feeds, reference, eps) {
  const perturbed = {};
  let any = false;
  for (const [name, tensor] of Object.entries(feeds)) {
    if (tensor.type !== 'float32') { perturbed[name] = tensor; continue; }
    any = true;
    const data = Float32Array.from(tensor.data, (v, i) => v * (1 + eps * ((i % 3) - 1)));
    perturbed[name] = new ort.Tensor('float32', data, tensor.dims);
  }
  if (!any) return null;
  const moved = await session.run(perturbed);
  const result = {};
  for (const name of session.outputNames) result[name] = maxRelDiff(moved[name].data, reference[name].data);
  return result;
}

function report(r) {
  const f = (x) => x.toFixed(2);
  const shapeText = Object.entries(r.shapes).map(([n, s]) => `${n}[${s.join('x')}]`).join(' ');
  const diffText = Object.entries(r.max_abs_diff)
    .map(([n, d]) => `${n} ${d.toExponential(2)} (relative ${r.max_rel_diff[n].toExponential(2)})`).join(', ');
  console.log(`${r.model} ${shapeText} threads=${r.threads} (${r.rounds} rounds x ${r.runs_per_round} runs)\n` +
              `  tessera median ${f(r.tessera.median)} ms (p10 ${f(r.tessera.p10)}, p90 ${f(r.tessera.p90)})\n` +
              `  ort     median ${f(r.ort.median)} ms (p10 ${f(r.ort.p10)}, p90 ${f(r.ort.p90)})\n` +
              `  ratio tessera/ort ${r.ratio.toFixed(3)} (of the minimums ${r.min_ratio.toFixed(3)}); ` +
              `max abs diff: ${diffText}; ` +
              (r.ort_noise_rel_diff ? `ORT vs ORT with inputs moved ${r.ort_noise_eps}: max relative ` +
                                      `${Math.max(...Object.values(r.ort_noise_rel_diff)).toExponential(2)}; ` : '') +
              `load ${r.load_before.toFixed(2)} -> ${r.load_after.toFixed(2)}`);
}

main().catch((error) => {
  console.error(`compare_ort.mjs: ${error.message}`);
  process.exit(1);
});
