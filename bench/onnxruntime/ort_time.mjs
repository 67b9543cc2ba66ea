// ort_time.mjs: times ONNX Runtime (onnxruntime-node, CPU execution provider)
// inferences for bench/onnxruntime_cpu_bench.py.
//
//   node ort_time.mjs [--intra N] [--inter N] MODEL.onnx [--runs N] [--warmup N]
//       one shot: loads MODEL, runs it --warmup untimed then --runs timed
//       times and prints one JSON object (below) on stdout.
//   node ort_time.mjs [--intra N] [--inter N] --serve
//       serves requests, one JSON object a line on stdin, one answer a line on
//       stdout: {"op": "info"} or {"op": "time", "model": PATH, "runs": N,
//       "warmup": N}. Sessions are created once per model and kept, so a
//       driver can alternate with another program between calls.
//
// A "time" answer: {"ok": true, "model", "input": {"name", "shape"},
// "load_ms", "times_ms": [...]} (each time is one `await session.run(feeds)`,
// process.hrtime around it: the input tensor is made once, outputs are
// allocated by each run as onnxruntime-node does); {"ok": false, "error"} on
// a failure. Session options: intraOpNumThreads --intra (default 2),
// interOpNumThreads --inter (default 1), executionMode sequential,
// graphOptimizationLevel left at its default ("all"), executionProviders
// ["cpu"]. The input holds deterministic values (sin of the index), not zeros.
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';

const require = createRequire(import.meta.url);
let ort;
try {
  ort = require('onnxruntime-node');
} catch (error) {
  process.stderr.write(`ort_time: onnxruntime-node is not installed next to this script ` +
                       `(npm install there): ${error.message}\n`);
  process.exit(3);
}

function parseArgs(argv) {
  const args = { intra: 2, inter: 1, runs: 30, warmup: 5, serve: false, model: null };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const value = () => {
      const v = Number(argv[++i]);
      if (!Number.isInteger(v) || v < 0) throw new Error(`${a} needs a whole number`);
      return v;
    };
    if (a === '--intra') args.intra = value();
    else if (a === '--inter') args.inter = value();
    else if (a === '--runs') args.runs = value();
    else if (a === '--warmup') args.warmup = value();
    else if (a === '--serve') args.serve = true;
    else if (a === '--help' || a === '-h') args.help = true;
    else if (!a.startsWith('--') && args.model === null) args.model = a;
    else throw new Error(`unknown argument ${a}`);
  }
  return args;
}

const sessions = new Map();  // model path -> {session, feeds, input, loadMs}

async function load(model, args) {
  if (sessions.has(model)) return sessions.get(model);
  const start = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: args.intra,
    interOpNumThreads: args.inter,
    executionMode: 'sequential',
  });
  const loadMs = Number(process.hrtime.bigint() - start) / 1e6;
  if (session.inputNames.length !== 1) {
    throw new Error(`${model}: ${session.inputNames.length} inputs; only one-input models are timed`);
  }
  const meta = session.inputMetadata[0];
  const shape = meta.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1));
  const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
  for (let i = 0; i < data.length; ++i) data[i] = Math.sin(0.001 * i);
  const entry = {
    session,
    feeds: { [session.inputNames[0]]: new ort.Tensor('float32', data, shape) },
    input: { name: session.inputNames[0], shape },
    loadMs,
  };
  sessions.set(model, entry);
  return entry;
}

async function time(model, runs, warmup, args) {
  const entry = await load(model, args);
  for (let i = 0; i < warmup; ++i) await entry.session.run(entry.feeds);
  const times = [];
  for (let i = 0; i < runs; ++i) {
    const start = process.hrtime.bigint();
    await entry.session.run(entry.feeds);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return { ok: true, model, input: entry.input, load_ms: entry.loadMs, times_ms: times };
}

function info(args) {
  return {
    ok: true,
    onnxruntime_node: ort.env.versions.node,
    onnxruntime_common: ort.env.versions.common,
    node: process.version,
    execution_provider: 'cpu',
    intra_op_threads: args.intra,
    inter_op_threads: args.inter,
    execution_mode: 'sequential',
    graph_optimization_level: 'all (default)',
  };
}

async function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`ort_time: ${error.message}\n`);
    return 2;
  }
  if (args.help || (!args.serve && args.model === null)) {
    process.stdout.write('usage: node ort_time.mjs [--intra N] [--inter N] ' +
                         '(MODEL.onnx [--runs N] [--warmup N] | --serve)\n');
    return args.help ? 0 : 2;
  }
  if (!args.serve) {
    try {
      process.stdout.write(JSON.stringify({ ...info(args), ...(await time(args.model, args.runs,
                                                                         args.warmup, args)) }) + '\n');
      return 0;
    } catch (error) {
      process.stderr.write(`ort_time: ${error.message}\n`);
      return 1;
    }
  }
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    let answer;
    try {
      const request = JSON.parse(line);
      if (request.op === 'info') answer = info(args);
      else if (request.op === 'time') {
        answer = await time(request.model, request.runs ?? args.runs, request.warmup ?? args.warmup,
                            args);
      } else answer = { ok: false, error: `unknown op ${request.op}` };
    } catch (error) {
      answer = { ok: false, error: String(error.message ?? error) };
    }
    process.stdout.write(JSON.stringify(answer) + '\n');
  }
  return 0;
}

process.exitCode = await main();
