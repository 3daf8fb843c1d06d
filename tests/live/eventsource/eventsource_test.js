// The live streams read by the npm `eventsource` client (the EventSource of browsers, for Node),
// against `hotrow demo` on a free loopback port:
//
//   node eventsource_test.js HOTROW_BIN OUT_DIR     (run.sh installs eventsource)
//
// Checks, each of which fails the test: a per-id stream opens and carries that id's events, each
// partition's in offset order; a client that reconnects with the Last-Event-ID it last got
// receives every event after it once (checked against the store's own answer for the id) and
// nothing it had; the latest stream carries events of the prefix only.
"use strict";
const { spawn } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const readline = require("node:readline");
const EventSource = require("eventsource");

const [hotrow, outDir] = process.argv.slice(2);
let failures = 0;
function check(ok, what, detail) {
  console.log((ok ? "ok   " : "FAIL ") + what + (ok || detail === undefined ? "" : ": " + detail));
  if (!ok) failures++;
}

function startDemo(dataDir, logPath) {
  const log = fs.openSync(logPath, "w");
  const demo = spawn(hotrow, ["demo", "--listen", "127.0.0.1:0", "--rate", "3000", "--data", dataDir],
                     { stdio: ["ignore", "pipe", log] });
  const ready = new Promise((resolve, reject) => {
    let base = null;
    readline.createInterface({ input: demo.stdout }).on("line", (line) => {
      const m = /HTTP API:\s+(http:\/\/\S+)/.exec(line);
      if (m) base = m[1];
      if (line.startsWith("Stop with Ctrl-C.")) resolve(base);
    });
    demo.on("exit", (code) => reject(new Error("hotrow demo exited with " + code + "; see " + logPath)));
  });
  return { demo, ready };
}

// Collects events of `url` until `enough(events)` holds; resolves with them and the last id.
function collect(url, headers, enough) {
  return new Promise((resolve, reject) => {
    const events = [];
    let lastId = "";
    let opened = null;
    const source = new EventSource(url, { headers });
    const timer = setTimeout(() => { source.close(); reject(new Error("timed out on " + url)); }, 60000);
    source.addEventListener("open", (ev) => { if (ev.data) opened = JSON.parse(ev.data); });
    let done = false;
    source.onmessage = (ev) => {
      if (done) return;  // messages of the same chunk still dispatched after close()
      events.push(JSON.parse(ev.data));
      lastId = ev.lastEventId;
      if (enough(events)) {
        done = true;
        clearTimeout(timer);
        source.close();
        resolve({ events, lastId, opened });
      }
    };
    source.onerror = (err) => {
      if (source.readyState === EventSource.CLOSED) {
        clearTimeout(timer);
        reject(new Error("stream closed: " + JSON.stringify(err)));
      }
    };
  });
}

function inOrderPerPartition(events) {
  const last = new Map();
  for (const e of events) {
    const key = e.topic + "/" + e.partition;
    if (last.has(key) && last.get(key) >= e.offset) return false;
    last.set(key, e.offset);
  }
  return true;
}

const place = (e) => e.topic + "/" + e.partition + "@" + e.offset;

async function main() {
  fs.mkdirSync(outDir, { recursive: true });
  const dataDir = fs.mkdtempSync(path.join(outDir, "data-"));
  const { demo, ready } = startDemo(dataDir, path.join(outDir, "demo.log"));
  try {
    const base = await ready;
    const id = "dev-000001";
    const url = base + "/v1/events/" + id + "/stream";
    const first = await collect(url, {}, (events) => events.length >= 20);
    check(first.opened && first.opened.stream === "events" && first.opened.resumed === false,
          "a per-id stream opens with its open message", JSON.stringify(first.opened));
    check(first.events.every((e) => e.event_id === id), "it carries only the id's events");
    check(inOrderPerPartition(first.events), "each partition's events in offset order");
    // MS~TOPIC:FIRST.BASE.W.DIGITS,... (live/position.h)
    check(/^\d+~[A-Za-z0-9._-]+:\d+\.\d+\.\d+\.[A-Za-z0-9_-]+/.test(first.lastId),
          "each event's id is a position", first.lastId);

    // Reconnect from the last id after a pause: every event after it, once.
    await new Promise((r) => setTimeout(r, 1000));
    const resumedAt = Date.now();
    const second = await collect(url, { "Last-Event-ID": first.lastId },
                                 (events) => events.length > 0 && events[events.length - 1].ts >= resumedAt);
    check(second.opened && second.opened.resumed === true && second.opened.gap === false,
          "the resumed stream says so", JSON.stringify(second.opened));
    const seen = new Set(first.events.map(place));
    check(second.events.every((e) => !seen.has(place(e))), "nothing already received comes again");
    check(inOrderPerPartition(second.events), "the resumed stream keeps offset order per partition");
    // The store's own answer: every event of the id newer than the first session's last, up to the
    // last one the second session got, is in the second session.
    const newestFirst = Math.max(...first.events.map((e) => e.ts));
    const newestSecond = Math.max(...second.events.map((e) => e.ts));
    const res = await fetch(base + "/v1/events/" + id + "?from=" + (newestFirst + 1) + "&to=" + newestSecond +
                            "&limit=100000&order=asc");
    const stored = (await res.json()).events.map(place);
    const got = new Set(second.events.map(place));
    const lost = stored.filter((p) => !got.has(p));
    check(lost.length === 0, "no event between the two sessions is lost", lost.slice(0, 5).join(", "));

    const latest = await collect(base + "/v1/latest/stream?prefix=dev-00000", {}, (events) => events.length >= 10);
    check(latest.events.every((e) => e.event_id.startsWith("dev-00000")), "the latest stream keeps to its prefix");
  } catch (e) {
    check(false, "the stream checks ran", e.stack || e);
  } finally {
    demo.kill("SIGTERM");
  }
  console.log(failures === 0 ? "eventsource: all passed" : "eventsource: " + failures + " failed");
  process.exit(failures === 0 ? 0 : 1);
}

main();
