// Renders the JSON lines written by compare_ort.mjs --json as a Markdown report.
//   node bench/render_results.mjs RESULTS.jsonl "COMMAND THAT PRODUCED THEM"
import fs from 'node:fs';
import os from 'node:os';

const [file, command = ''] = process.argv.slice(2);
const rows = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line));
const f = (x) => x.toFixed(2);
const cpu = os.cpus()[0]?.model ?? 'unknown CPU';

const lines = [
  `# CPU bench: Tessera vs ONNX Runtime ${rows[0]?.ort_version ?? ''}`,
  '',
  `- host: ${os.hostname()}, ${cpu}, ${os.cpus().length} logical CPUs; date: ${new Date().toISOString()}`,
  `- command: \`${command}\``,
  '- latency of one Run in ms: median over all timed runs (p10/p90); rounds alternate which runtime goes first;',
  '  ratio = Tessera median / ONNX Runtime median (<= 1.0 means Tessera is at least as fast); min ratio = ratio',
  '  of the fastest runs (less sensitive to other load on the machine)',
  '- load: the 1-minute load average before -> after the row (the machine may be shared)',
  '',
  '| model | batch | inputs | threads | Tessera ms (p10/p90) | ORT ms (p10/p90) | ratio | min ratio | runs ' +
    '| max abs diff | load |',
  '|---|---:|---|---:|---:|---:|---:|---:|---:|---|---|',
];
for (const r of rows) {
  const inputs = Object.entries(r.shapes).map(([n, s]) => `${n} ${s.join('x')}`).join(', ');
  const batch = Object.values(r.shapes)[0]?.[0] ?? '';
  const diff = Math.max(...Object.values(r.max_abs_diff)).toExponential(1);
  const latency = (s) => `${f(s.median)} (${f(s.p10)}/${f(s.p90)})`;
  lines.push(`| ${r.model} | ${batch} | ${inputs} | ${r.threads} | ${latency(r.tessera)} | ${latency(r.ort)} | ` +
             `**${r.ratio.toFixed(2)}** | ${(r.min_ratio ?? NaN).toFixed(2)} | ${r.rounds}x${r.runs_per_round} | ` +
             `${diff} | ${r.load_before.toFixed(1)} -> ${r.load_after.toFixed(1)} |`);
}
console.log(lines.join('\n'));
