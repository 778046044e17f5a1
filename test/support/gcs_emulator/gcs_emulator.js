#!/usr/bin/env node
// Loopback GCS JSON API server for etcdadm integration tests.
//
// Usage:
//   node gcs_emulator.js --port PORT --dir WORKDIR --ready-file PATH
//
//   --port        TCP port on 127.0.0.1; 0 or absent = pick a free port.
//   --dir         Work directory (required). All emulator state lives in memory
//                 or under WORKDIR (object blobs go to WORKDIR/tmp/firebase/
//                 storage/blobs). HOME/XDG_*/TMPDIR are pointed into WORKDIR
//                 before firebase-tools is loaded, so nothing is written to the
//                 real $HOME or to global dirs.
//   --ready-file  Written atomically (temp file + rename) once the server has
//                 answered a real JSON API request (GET /storage/v1/b/<probe>/o):
//                   {"endpoint":"http://127.0.0.1:PORT","pid":PID}
//                 Any stale ready file is removed at startup; the file is also
//                 removed again on clean shutdown.
//
// Install once (in this folder):  npm ci --ignore-scripts --no-audit --no-fund
//
// What this is: the Cloud Storage emulator from the `firebase-tools` npm
// package (class StorageEmulator), started directly instead of via the
// `firebase emulators:start` CLI. The Java-based security-rules runtime and the
// rules file watcher are replaced by no-ops: the GCS JSON API routes use the
// emulator's "admin" storage layer, which never consults rules. Therefore no
// Java, no jar download and no network access are needed. Any Authorization
// header (or none) is accepted.
//
// Buckets: NO bucket creation is needed. Every request whose path contains
// /b/<bucket>/ implicitly creates <bucket> (e.g. the first upload
// POST /upload/storage/v1/b/<bucket>/o?uploadType=media&name=... just works).
// There is no bucket-insert route: POST /storage/v1/b?project=... returns 501,
// and GET /storage/v1/b/<bucket> (bucket metadata) is not implemented either
// (it returns 404 "No such object: storage/v1/b/<bucket>").
//
// See NOTES.md for the verified behaviour and quirks of the JSON API.
//
// Exit: SIGTERM/SIGINT -> stop the server, delete the blob dir, exit 0.
// Startup failure -> reason on stderr, exit 1.

"use strict";

const fs = require("fs");
const http = require("http");
const path = require("path");

const HOST = "127.0.0.1";
const PROJECT_ID = "demo-etcdadm"; // "demo-" prefix: firebase-tools never contacts Google for it.
const PROBE_BUCKET = "gcs-emulator-readiness-probe";
const STARTUP_TIMEOUT_MS = 30000;

function fail(msg) {
  process.stderr.write(`gcs_emulator: ${msg}\n`);
  process.exit(1);
}

function parseArgs(argv) {
  const opts = { port: 0, dir: undefined, readyFile: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const eq = a.indexOf("=");
    const key = eq >= 0 ? a.slice(0, eq) : a;
    const takeValue = () => {
      if (eq >= 0) return a.slice(eq + 1);
      if (i + 1 >= argv.length) fail(`missing value for ${key}`);
      return argv[++i];
    };
    switch (key) {
      case "--port": {
        const v = takeValue();
        if (!/^\d+$/.test(v) || Number(v) > 65535) fail(`invalid --port: ${v}`);
        opts.port = Number(v);
        break;
      }
      case "--dir":
        opts.dir = takeValue();
        break;
      case "--ready-file":
        opts.readyFile = takeValue();
        break;
      case "-h":
      case "--help":
        process.stdout.write("usage: node gcs_emulator.js --port PORT --dir WORKDIR --ready-file PATH\n");
        process.exit(0);
        break;
      default:
        fail(`unknown argument: ${a}`);
    }
  }
  if (!opts.dir) fail("--dir WORKDIR is required");
  if (!opts.readyFile) fail("--ready-file PATH is required");
  opts.dir = path.resolve(opts.dir);
  opts.readyFile = path.resolve(opts.readyFile);
  return opts;
}

const opts = parseArgs(process.argv.slice(2));

// Confine everything firebase-tools might write (configstore, caches, debug
// logs, blob staging via os.tmpdir()) to WORKDIR. Must happen before require().
function confineEnvironment(dir) {
  const sub = (name) => {
    const p = path.join(dir, name);
    fs.mkdirSync(p, { recursive: true });
    return p;
  };
  fs.mkdirSync(dir, { recursive: true });
  process.env.HOME = sub("home");
  process.env.XDG_CONFIG_HOME = sub("home/.config");
  process.env.XDG_CACHE_HOME = sub("home/.cache");
  process.env.XDG_DATA_HOME = sub("home/.local/share");
  process.env.XDG_STATE_HOME = sub("home/.local/state");
  process.env.TMPDIR = sub("tmp");
  process.env.FIREBASE_DEBUG_PATH = path.join(dir, "firebase-debug.log");
  // Never let firebase-tools pick up the user's/CI's project, functions
  // emulator, credentials or proxy settings.
  for (const k of [
    "FUNCTIONS_EMULATOR_HOST",
    "FIREBASE_STORAGE_EMULATOR_HOST",
    "STORAGE_EMULATOR_HOST",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GCLOUD_PROJECT",
    "GOOGLE_CLOUD_PROJECT",
    "FIREBASE_CONFIG",
    "STORAGE_EMULATOR_DEBUG",
    "DEBUG",
    "IS_FIREBASE_CLI",
  ]) {
    delete process.env[k];
  }
  process.env.FIREBASE_CLI_DISABLE_UPDATE_CHECK = "true";
}

try {
  confineEnvironment(opts.dir);
  try {
    fs.unlinkSync(opts.readyFile);
  } catch (e) {
    if (e.code !== "ENOENT") throw e;
  }
} catch (e) {
  fail(`cannot prepare work dir ${opts.dir}: ${e.message}`);
}

let StorageEmulator, EmulatorRegistry, Emulators, createApp, createDestroyer;
try {
  const ftLib = path.join(path.dirname(require.resolve("firebase-tools/package.json")), "lib");
  ({ StorageEmulator } = require(path.join(ftLib, "emulator/storage/index.js")));
  ({ EmulatorRegistry } = require(path.join(ftLib, "emulator/registry.js")));
  ({ Emulators } = require(path.join(ftLib, "emulator/types.js")));
  ({ createApp } = require(path.join(ftLib, "emulator/storage/server.js")));
  ({ createDestroyer } = require(path.join(ftLib, "utils.js")));

  // firebase-tools uses Express 4, which does not catch rejected promises from
  // async route handlers; several emulator handlers can throw (e.g. malformed
  // multipart metadata JSON), which would otherwise become an unhandled
  // rejection and kill the whole process. Route such errors to Express' error
  // handler instead (-> HTTP 500), like the express-async-errors package does.
  const expressDir = path.dirname(
    require.resolve("express/package.json", { paths: [path.dirname(require.resolve("firebase-tools/package.json"))] }),
  );
  const Layer = require(path.join(expressDir, "lib/router/layer.js"));
  const origHandle = Layer.prototype.handle_request;
  Layer.prototype.handle_request = function handle_request(req, res, next) {
    const fn = this.handle;
    if (fn.length > 3) return origHandle.call(this, req, res, next);
    try {
      const r = fn(req, res, next);
      if (r && typeof r.then === "function") {
        r.then(undefined, (err) => {
          process.stderr.write(`gcs_emulator: error in handler for ${req.method} ${req.originalUrl}\n`);
          next(err); // Express logs err.stack to stderr and answers 500
        });
      }
    } catch (err) {
      next(err);
    }
  };
} catch (e) {
  fail(`cannot load firebase-tools (run 'npm ci --ignore-scripts --no-audit --no-fund' in ${__dirname}): ${e.stack || e}`);
}

const noopRulesRuntime = {
  alive: true,
  start: async () => {},
  stop: async () => {},
};
const noopRulesManager = {
  start: async () => ({ errors: [], warnings: [] }),
  stop: async () => {},
  getRuleset: () => undefined, // only used by the Firebase (/v0) API, which then denies
};

class OfflineStorageEmulator extends StorageEmulator {
  constructor(args) {
    super(args);
    this._rulesRuntime = noopRulesRuntime; // would spawn Java / download a jar
  }
  createRulesManager() {
    return noopRulesManager; // would watch a rules file and compile it via Java
  }
  async replaceRules() {
    return { errors: [], warnings: [] };
  }
  // Like StorageEmulator.start(), but without the rules runtime and with real
  // error handling for listen() (the original ignores EADDRINUSE etc.).
  async start() {
    this._app = await createApp(this.args.projectId, this);
    // Express error pages (413, 500) without stack traces in the body.
    this._app.set("env", "production");
    const server = http.createServer(this._app);
    await new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.args.port, this.args.host, () => {
        server.removeListener("error", reject);
        resolve();
      });
    });
    server.on("error", (e) => process.stderr.write(`gcs_emulator: server error: ${e.message}\n`));
    // selfLink/mediaLink and getInfo() use args.port; make it the real port.
    this.args.port = server.address().port;
    this.server = server;
    this.destroyServer = createDestroyer(server);
  }
}

function probe(port) {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: HOST, port, path: `/storage/v1/b/${PROBE_BUCKET}/o`, headers: { Authorization: "Bearer probe" } },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c) => (body += c));
        res.on("end", () => {
          try {
            const j = JSON.parse(body);
            if (res.statusCode === 200 && j.kind === "storage#objects") return resolve();
          } catch (_) {
            /* fall through */
          }
          reject(new Error(`readiness probe got HTTP ${res.statusCode}: ${body.slice(0, 200)}`));
        });
      },
    );
    req.setTimeout(5000, () => req.destroy(new Error("readiness probe timed out")));
    req.on("error", reject);
  });
}

function writeFileAtomic(file, content) {
  const tmp = `${file}.tmp.${process.pid}`;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const fd = fs.openSync(tmp, "w");
  try {
    fs.writeSync(fd, content);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
}

let emulator;
let stopping = false;

async function shutdown(signal) {
  if (stopping) return;
  stopping = true;
  const force = setTimeout(() => {
    process.stderr.write(`gcs_emulator: shutdown after ${signal} timed out\n`);
    process.exit(1);
  }, 5000);
  force.unref();
  try {
    if (emulator) await emulator.stop(); // closes sockets, deletes blob dir
  } catch (e) {
    process.stderr.write(`gcs_emulator: error while stopping: ${e.message}\n`);
  }
  try {
    fs.unlinkSync(opts.readyFile);
  } catch (_) {
    /* ignore */
  }
  process.exit(0);
}

process.on("SIGTERM", () => shutdown("SIGTERM"));
process.on("SIGINT", () => shutdown("SIGINT"));
process.on("unhandledRejection", (err) => {
  process.stderr.write(`gcs_emulator: unhandled rejection: ${err && err.stack ? err.stack : err}\n`);
});

async function main() {
  const t0 = process.hrtime.bigint();
  const startupTimer = setTimeout(() => fail(`startup did not finish within ${STARTUP_TIMEOUT_MS} ms`), STARTUP_TIMEOUT_MS);
  emulator = new OfflineStorageEmulator({ projectId: PROJECT_ID, host: HOST, port: opts.port, auto_download: false });
  // Needed for selfLink/mediaLink/Location URLs (EmulatorRegistry.url).
  EmulatorRegistry.set(Emulators.STORAGE, emulator);
  try {
    await emulator.start();
  } catch (e) {
    fail(`cannot listen on ${HOST}:${opts.port}: ${e.message}`);
  }
  const port = emulator.args.port;
  await probe(port);
  emulator._buckets.delete(PROBE_BUCKET); // the probe implicitly created it; keep GET /b clean
  clearTimeout(startupTimer);
  if (stopping) return;
  const endpoint = `http://${HOST}:${port}`;
  writeFileAtomic(opts.readyFile, JSON.stringify({ endpoint, pid: process.pid }) + "\n");
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  process.stderr.write(`gcs_emulator: ready at ${endpoint} (pid ${process.pid}, ${ms.toFixed(0)} ms after load)\n`);
}

main().catch((e) => fail(`startup failed: ${e && e.stack ? e.stack : e}`));
