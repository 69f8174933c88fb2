// Prints the corpus table (markdown) from the JSON lines bench/compare_ort.mjs appended (run_corpus.sh).
//   node bench/corpus/corpus_table.mjs build/corpus.jsonl
import fs from 'node:fs';

const rows = fs.readFileSync(process.argv[2], 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line));
// "ORT noise": ONNX Runtime against itself with the float inputs moved 1e-6 relative (1e-3 for float16 models;
// compare_ort.mjs --noise).
console.log('| model | loads | max relative difference | ORT noise | ORT median (ms) | Tessera median (ms) | Tessera / ORT |');
console.log('|---|---|---:|---:|---:|---:|---:|');
for (const r of rows) {
  if (r.error) {
    console.log(`| ${r.model} | no: ${r.error} | | | | | |`);
    continue;
  }
  const rel = Math.max(...Object.values(r.max_rel_diff));
  const noise = r.ort_noise_rel_diff ? Math.max(...Object.values(r.ort_noise_rel_diff)).toExponential(1) : '-';
  console.log(`| ${r.model} | yes | ${rel.toExponential(1)} | ${noise} | ${r.ort.median.toFixed(2)} | ` +
              `${r.tessera.median.toFixed(2)} | ${r.ratio.toFixed(2)} |`);
}
