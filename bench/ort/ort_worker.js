// The ONNX Runtime side of the side-by-side benchmark (bench/run_bench.py): a long-lived worker
// with the same line protocol as bench/ember_bench_runner.cc.
//
//   node ort_worker.js model.onnx --threads 2 --input x=x.npy --out-dir d --warmup 3
//   stdin "run 5" -> stdout "times 12.1 12.3 12.0 12.2 12.4" (ms per run); "quit" ends it.
//
// Session: CPU execution provider, intra-op threads = --threads, inter-op 1, sequential
// execution, all graph optimizations. On start it prints "info <versions> <providers>", runs
// once, writes output_<i>.npy, warms up and prints "ready".
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');
const ort = require('onnxruntime-node');

// Minimal .npy reader/writer for the dtypes the benchmark uses (little-endian, C order).
const NPY_TYPES = {'<f4': ['float32', Float32Array], '<i8': ['int64', BigInt64Array],
                   '<i4': ['int32', Int32Array]};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file}: not an .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: Fortran order`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim())
      .filter((s) => s.length).map(Number);
  const type = NPY_TYPES[descr];
  if (!type) throw new Error(`${file}: dtype ${descr} is not supported here`);
  const data = buf.subarray(start + headerLen);
  const copy = new Uint8Array(data.length);  // typed arrays need an aligned buffer
  copy.set(data);
  return new ort.Tensor(type[0], new type[1](copy.buffer), shape);
}

function writeNpy(file, tensor) {
  const descr = {float32: '<f4', int64: '<i8', int32: '<i4'}[tensor.type];
  if (!descr) throw new Error(`output dtype ${tensor.type} is not supported here`);
  const dims = tensor.dims.join(', ') + (tensor.dims.length === 1 ? ',' : '');
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${dims}), }`;
  header += ' '.repeat(64 - ((10 + header.length + 1) % 64)) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const data = tensor.data;
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'),
    Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

function parseArgs(argv) {
  const o = {model: argv[0], threads: 1, inputs: [], outDir: '', warmup: 3};
  for (let i = 1; i < argv.length; i += 2) {
    const [a, v] = [argv[i], argv[i + 1]];
    if (v === undefined) throw new Error(`${a} needs a value`);
    if (a === '--threads') o.threads = Number(v);
    else if (a === '--input') o.inputs.push(v.split('='));
    else if (a === '--out-dir') o.outDir = v;
    else if (a === '--warmup') o.warmup = Number(v);
    else throw new Error(`unknown option ${a}`);
  }
  return o;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const session = await ort.InferenceSession.create(o.model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: o.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const feeds = {};
  for (const [name, file] of o.inputs) feeds[name] = readNpy(file);
  const cpu = ort.listSupportedBackends().some((b) => b.name === 'cpu' && b.bundled);
  if (!cpu) throw new Error('this onnxruntime-node has no bundled CPU execution provider');
  console.log(`info onnxruntime-node ${ort.env.versions.node}, CPU execution provider, ` +
              `intra-op ${o.threads} inter-op 1 sequential`);
  let out = await session.run(feeds);
  if (o.outDir) {
    session.outputNames.forEach((n, i) => writeNpy(path.join(o.outDir, `output_${i}.npy`), out[n]));
  }
  const warmStart = process.hrtime.bigint();
  for (let r = 0; r < o.warmup; ++r) {  // up to --warmup runs, stopping after 5 s (at least one)
    if (r > 0 && process.hrtime.bigint() - warmStart > 5000000000n) break;
    out = await session.run(feeds);
  }
  console.log('ready');

  const rl = readline.createInterface({input: process.stdin});
  for await (const line of rl) {
    if (line === 'quit') break;
    const m = /^run (\d+)$/.exec(line);
    if (!m) throw new Error(`unknown command '${line}'`);
    const times = [];
    for (let r = 0; r < Number(m[1]); ++r) {
      const t0 = process.hrtime.bigint();
      out = await session.run(feeds);
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    console.log('times ' + times.map((t) => t.toFixed(4)).join(' '));
  }
  rl.close();
}

main().catch((e) => {
  console.log(`error: ${String(e.message || e).split('\n')[0]}`);
  process.exit(1);
});
