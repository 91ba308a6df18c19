// Drives `agentbox mcp` with the official MCP TypeScript SDK client.
//
// Usage: node client.mjs PLAN.json
//
// The plan names a transport ({"transport":"stdio","command":..,"args":[..],
// "env":{..},"cwd":..} or {"transport":"http","url":..,"token":..}) and a
// list of steps. Each step's observations are printed, as one JSON document
// on stdout, for the Go test to judge: this script asserts nothing itself,
// it only reports what the real client saw.
import { existsSync, readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import Ajv2020 from 'ajv/dist/2020.js';
import Ajv from 'ajv';

const plan = JSON.parse(readFileSync(process.argv[2], 'utf8'));

// Values captured from earlier results (step.capture: {name: regex with one
// group}); a later step's string argument "$name" is replaced by the value.
const captured = {};
function substitute(args) {
  const out = {};
  for (const [k, v] of Object.entries(args || {})) {
    out[k] = typeof v === 'string' && v.startsWith('$') && v.slice(1) in captured ? captured[v.slice(1)] : v;
  }
  return out;
}

// Elicitation answers are taken in order from the step that is running.
let elicitQueue = [];
const elicitations = [];

const client = new Client(
  { name: 'agentbox-ts-harness', version: '1.0.0' },
  { capabilities: plan.elicit === false ? {} : { elicitation: { form: {} } } },
);
if (plan.elicit !== false) {
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    const answer = elicitQueue.length ? elicitQueue.shift() : 'deny';
    elicitations.push({ message: req.params.message, requestedSchema: req.params.requestedSchema, answer });
    if (answer === 'cancel') return { action: 'cancel' };
    if (answer === 'decline') return { action: 'decline' };
    return { action: 'accept', content: { decision: answer } };
  });
}

function transport() {
  if (plan.transport === 'stdio') {
    return new StdioClientTransport({
      command: plan.command,
      args: plan.args || [],
      env: plan.env,
      cwd: plan.cwd,
      stderr: 'inherit',
    });
  }
  const headers = plan.token ? { Authorization: `Bearer ${plan.token}` } : {};
  return new StreamableHTTPClientTransport(new URL(plan.url), { requestInit: { headers } });
}

function summarize(res) {
  const content = (res.content || []).map((c) => {
    if (c.type === 'text') return { type: 'text', text: c.text };
    if (c.type === 'image') return { type: 'image', mimeType: c.mimeType, bytes: Buffer.from(c.data, 'base64').length };
    return { type: c.type };
  });
  return { isError: !!res.isError, content, structured: res.structuredContent ?? null };
}

function validateSchemas(tools) {
  const out = [];
  for (const t of tools) {
    const schema = t.inputSchema;
    const draft2020 = typeof schema.$schema === 'string' && schema.$schema.includes('2020-12');
    const ajv = draft2020 ? new Ajv2020({ strict: true, allErrors: true }) : new Ajv({ strict: true, allErrors: true });
    try {
      ajv.compile(schema);
      out.push({ name: t.name, ok: true, draft: draft2020 ? '2020-12' : 'default' });
    } catch (e) {
      out.push({ name: t.name, ok: false, error: String(e.message || e) });
    }
  }
  return out;
}

async function call(step) {
  elicitQueue = [...(step.elicit || [])];
  const seen = elicitations.length;
  const progress = [];
  const ac = new AbortController();
  let timer;
  if (step.cancel_after_ms) timer = setTimeout(() => ac.abort('cancelled by harness'), step.cancel_after_ms);
  // cancel_when_file: cancel once that file exists (the test creates it
  // when it sees the call's container running).
  let poll;
  if (step.cancel_when_file) {
    poll = setInterval(() => {
      if (existsSync(step.cancel_when_file) && !ac.signal.aborted) ac.abort('cancelled by harness');
    }, 100);
  }
  const opts = {
    signal: ac.signal,
    timeout: step.timeout_ms || 120000,
    resetTimeoutOnProgress: true,
    onprogress: (p) => {
      progress.push({ progress: p.progress, total: p.total ?? null, message: p.message ?? null });
      if (step.cancel_on_progress && !ac.signal.aborted) ac.abort('cancelled by harness');
    },
  };
  const t0 = performance.now();
  try {
    const res = await client.callTool({ name: step.name, arguments: substitute(step.args) }, CallToolResultSchema, opts);
    const sum = summarize(res);
    const text = sum.content.filter((c) => c.type === 'text').map((c) => c.text).join('');
    for (const [name, re] of Object.entries(step.capture || {})) {
      const m = new RegExp(re).exec(text);
      if (m) captured[name] = m[1];
    }
    return { ...sum, meta: res._meta ?? null, ms: performance.now() - t0, progress, elicitations: elicitations.slice(seen) };
  } catch (e) {
    return { error: String(e.message || e), ms: performance.now() - t0, progress, elicitations: elicitations.slice(seen) };
  } finally {
    clearTimeout(timer);
    clearInterval(poll);
  }
}

const results = [];
try {
  await client.connect(transport());
  const caps = client.getServerCapabilities();
  const server = client.getServerVersion();
  results.push({ op: 'connect', server, capabilities: caps });
  for (const step of plan.steps) {
    switch (step.op) {
      case 'list': {
        const res = await client.listTools();
        results.push({ op: 'list', tools: res.tools });
        break;
      }
      case 'validate': {
        const res = await client.listTools();
        results.push({ op: 'validate', schemas: validateSchemas(res.tools) });
        break;
      }
      case 'call': {
        // With "until", the call is repeated (every interval_ms, at most
        // tries times) until its text contains that string.
        let r = await call(step);
        for (let i = 1; step.until && i < (step.tries || 20); i++) {
          const text = (r.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('');
          if (text.includes(step.until)) break;
          await new Promise((res) => setTimeout(res, step.interval_ms || 500));
          r = await call(step);
        }
        results.push({ op: 'call', name: step.name, ...r });
        break;
      }
      case 'sleep':
        await new Promise((r) => setTimeout(r, step.ms));
        results.push({ op: 'sleep' });
        break;
      default:
        results.push({ op: step.op, error: 'unknown op' });
    }
  }
} catch (e) {
  results.push({ op: 'fatal', error: String((e && e.stack) || e) });
} finally {
  try { await client.close(); } catch { /* already closed */ }
}
process.stdout.write(JSON.stringify(results) + '\n');
