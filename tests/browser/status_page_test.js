// The status page (GET /) in a real browser: headless Chromium (Debian's /usr/bin/chromium) driven
// by playwright-core, against `hotrow demo` on a free loopback port.
//
//   node status_page_test.js HOTROW_BIN OUT_DIR     (tests/browser/run.sh installs playwright-core)
//
// Checks, each of which fails the test:
//   - GET / is text/html; charset=utf-8 and loads nothing but this server (the page's CSP);
//   - #stat-ingested, #stat-lag and #stat-buckets hold plain numbers; ingested grows; the bucket
//     count is the API's;
//   - the page polls /v1/stats at most once a second;
//   - the query form's latest and range answers are the events the API returns, shown as rows; an
//     index query shows the API's answer: its events, or its error text when it answers 4xx;
//   - the devices table follows GET /v1/latest/stream (EventSource): its rows update from the stream
//     and the table is not polled meanwhile; the device view follows GET /v1/events/{id}/stream: new
//     events go on top in ts order, and it is not polled meanwhile;
//   - the devices table shows the ids of the API's /v1/latest pages (first, next, previous, by id
//     prefix); choosing a device shows its latest events as the API answered them and a chart of
//     a numeric field with as many points as the API's series, and another field redraws it;
//   - with a group view (GET /v1/cluster of three instances with standbys, simulated by intercepting
//     the page's request: the demo is one instance), the cluster card shows each partition's owner
//     and its lag, its standbys with theirs, and the instance that answers for it;
//   - with a server that wants a bearer token (simulated by intercepting the page's requests), the
//     page asks for it, keeps it in sessionStorage only and sends it on every request; its streams
//     are opened with a stream token of POST /v1/stream-tokens in ?access_token=, never the bearer;
//   - no console error and no uncaught exception, but for the 4xx answers a check asked for.
// It saves OUT_DIR/status_page.png (the whole page after a query) and status_page_devices.png (a
// device chosen) for a person to look at.

"use strict";
const { spawn } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const readline = require("node:readline");
const { chromium } = require("playwright-core");

const [hotrow, outDir] = process.argv.slice(2);
if (!hotrow || !outDir) {
  console.error("usage: node status_page_test.js HOTROW_BIN OUT_DIR");
  process.exit(2);
}

let failures = 0;
let passes = 0;
function check(ok, what, detail) {
  if (ok) {
    passes++;
    console.log("ok   " + what);
  } else {
    failures++;
    console.log("FAIL " + what + (detail === undefined ? "" : ": " + detail));
  }
}

// Polls `condition` (async) every 100 ms until it returns a truthy value; null after `ms`.
async function waitFor(condition, ms = 30000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const value = await condition();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
  return null;
}

// Starts `hotrow demo` on a free port; resolves with its base URL once it printed its curl lines.
function startDemo(dataDir, logPath) {
  const log = fs.openSync(logPath, "w");
  const demo = spawn(hotrow, ["demo", "--listen", "127.0.0.1:0", "--rate", "2000", "--data", dataDir],
                     { stdio: ["ignore", "pipe", log] });
  const ready = new Promise((resolve, reject) => {
    let base = null;
    const lines = readline.createInterface({ input: demo.stdout });
    lines.on("line", (line) => {
      const m = /HTTP API:\s+(http:\/\/\S+)/.exec(line);
      if (m) base = m[1];
      if (line.startsWith("Stop with Ctrl-C.")) resolve(base);
    });
    demo.on("exit", (code) => reject(new Error("hotrow demo exited with " + code + " before it was ready; see " + logPath)));
    setTimeout(() => reject(new Error("hotrow demo was not ready within 120 s; see " + logPath)), 120000);
  });
  return { demo, ready };
}

function stopDemo(demo) {
  return new Promise((resolve) => {
    if (demo.exitCode !== null || demo.signalCode !== null) return resolve(demo.exitCode === null ? 128 : demo.exitCode);
    const timer = setTimeout(() => demo.kill("SIGKILL"), 15000);
    demo.on("exit", (code, signal) => { clearTimeout(timer); resolve(code === null ? 128 : code); });
    demo.kill("SIGTERM");
  });
}

async function getJson(url) {
  const res = await fetch(url);
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch (e) { /* not JSON */ }
  return { status: res.status, json, text };
}

// The rows of the page's result table as the API's event fields (payload compared as JSON).
async function resultRows(page) {
  return page.$$eval("#q-results tbody tr", (trs) => trs.map((tr) => {
    const td = [...tr.children].map((c) => c.textContent);
    return { ts: td[0], event_id: td[1], topic: td[2], partition: Number(td[3]), offset: Number(td[4]), payload: td[5] };
  }));
}
function asRows(events) {
  return events.map((e) => ({
    ts: new Date(e.ts).toISOString().replace("T", " ").replace("Z", ""), event_id: e.event_id, topic: e.topic,
    partition: e.partition, offset: e.offset, payload: JSON.stringify(e.payload),
  }));
}
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// Runs the form with `fields` ({"#q-kind": "latest", "#q-id": ...}); returns the page's own
// answer ({status, body}) and its request URL.
async function runQuery(page, fields) {
  for (const [selector, value] of Object.entries(fields)) {
    if (selector === "#q-kind" || selector === "#q-order") await page.selectOption(selector, value);
    else await page.fill(selector, value);
  }
  const answer = page.waitForResponse((r) => /\/v1\/(events|index)\//.test(r.url()));
  await page.click("#q-run");
  const res = await answer;
  await page.waitForFunction(() => !document.querySelector("#q-run").disabled);
  return { status: res.status(), body: await res.text(), url: res.url() };
}

// Console errors and uncaught exceptions of `page`, but "Failed to load resource" for URLs that
// `expected(url)` says a check asked for.
function watchErrors(page, expected) {
  const errors = [];
  page.on("console", (msg) => {
    if (msg.type() !== "error") return;
    const url = (msg.location() || {}).url || "";
    if (msg.text().startsWith("Failed to load resource") && expected(url)) return;
    errors.push(msg.text() + (url ? " (" + url + ")" : ""));
  });
  page.on("pageerror", (e) => errors.push("uncaught: " + e.message));
  return errors;
}

async function main() {
  fs.mkdirSync(outDir, { recursive: true });
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "hotrow-browser-"));
  const { demo, ready } = startDemo(path.join(work, "data"), path.join(outDir, "demo.log"));
  let context = null;
  try {
    const base = await ready;
    console.log("demo at " + base);
    context = await chromium.launchPersistentContext(path.join(work, "profile"), {
      executablePath: "/usr/bin/chromium",
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-quic", "--no-first-run", "--disable-sync"],
      viewport: { width: 1360, height: 900 },
    });
    await checkPage(context, base);
    await checkDevices(context, base);
    await checkClusterView(context, base);
    await checkToken(context, base);
    // The server goes away under an open page: it says so and keeps the last figures.
    const page = await context.newPage();
    await page.goto(base + "/");
    await waitFor(async () => /^\d+$/.test(await page.textContent("#stat-ingested")));
    const code = await stopDemo(demo);
    check(code === 0, "hotrow demo exits 0 on SIGTERM", "exit " + code);
    const told = await waitFor(() => page.isVisible("#error-banner"), 10000);
    check(told !== null && (await page.textContent("#ready")) === "unreachable",
          "with the server gone the page says it cannot reach the API", await page.textContent("#ready"));
    check(/^\d+$/.test(await page.textContent("#stat-ingested")), "and keeps the last numbers");
  } finally {
    if (context) await context.close();
    await stopDemo(demo);  // at once when it already stopped
    fs.rmSync(work, { recursive: true, force: true });
  }
}

async function checkPage(context, base) {
  const page = await context.newPage();
  const errors = watchErrors(page, (url) => url.includes("/v1/index/") || url.endsWith("/readyz"));
  const statsRequests = [];
  page.on("request", (r) => { if (r.url().endsWith("/v1/stats")) statsRequests.push(Date.now()); });
  const offsite = [];
  page.on("request", (r) => { if (!r.url().startsWith(base) && !r.url().startsWith("data:")) offsite.push(r.url()); });

  const res = await page.goto(base + "/");
  check(res.status() === 200, "GET / answers 200", res.status());
  check(res.headers()["content-type"] === "text/html; charset=utf-8", "GET / is text/html; charset=utf-8",
        res.headers()["content-type"]);

  // The three numbers appear, as digits only.
  const digits = async (id) => page.textContent(id);
  const first = await waitFor(async () => {
    const v = await Promise.all(["#stat-ingested", "#stat-lag", "#stat-buckets"].map(digits));
    return v.every((t) => /^\d+$/.test(t)) ? v : null;
  });
  check(first !== null, "#stat-ingested, #stat-lag and #stat-buckets hold plain numbers",
        JSON.stringify(await Promise.all(["#stat-ingested", "#stat-lag", "#stat-buckets"].map(digits))));
  if (first === null) return;
  const grown = await waitFor(async () => {
    const t = await digits("#stat-ingested");
    return /^\d+$/.test(t) && Number(t) > Number(first[0]) ? t : null;
  });
  check(grown !== null, "#stat-ingested grows while the demo produces", first[0] + " then " + (await digits("#stat-ingested")));
  check(Number(first[2]) >= 1, "#stat-buckets counts at least one bucket", first[2]);
  const bucketsMatch = await waitFor(async () => {
    const api = await getJson(base + "/v1/stats");
    return String(api.json.buckets.length) === (await digits("#stat-buckets"));
  });
  check(bucketsMatch !== null, "#stat-buckets is the API's number of buckets");
  const lagMatch = await waitFor(async () => {
    const api = await getJson(base + "/v1/stats");
    const lag = api.json.partitions.reduce((a, p) => a + p.lag, 0);
    return String(lag) === (await digits("#stat-lag"));
  });
  check(lagMatch !== null, "#stat-lag is the API's total lag");
  const readyText = await page.textContent("#ready");
  check(readyText === "ready", "readiness shows ready", readyText);

  // At most one poll a second: count /v1/stats requests over five seconds.
  const from = Date.now();
  await page.waitForTimeout(5000);
  const polls = statsRequests.filter((t) => t >= from).length;
  check(polls >= 1 && polls <= 6, "the page polls /v1/stats at most once a second (1..6 in 5 s)", polls);

  // The query form: latest, as the page received it and shown row by row.
  let q = await runQuery(page, { "#q-kind": "latest", "#q-id": "dev-000000", "#q-n": "5" });
  let body = JSON.parse(q.body);
  check(q.status === 200 && body.events.length === 5, "latest 5 of dev-000000 answers 5 events", q.status + " " + q.body.slice(0, 200));
  check(same(await resultRows(page), asRows(body.events)), "the latest rows are the events the API answered");

  // Range over a past window: the page's answer is the API's answer to the same URL. A record
  // still on its way into the store could land between the two requests: then the pair is asked
  // again (a page that shows something else never matches).
  const stats = (await getJson(base + "/v1/stats")).json;
  const to = stats.store.now_ms - 5000;
  const fromMs = to - 20000;
  let api = null;
  for (let attempt = 0; attempt < 3; attempt++) {
    q = await runQuery(page, { "#q-kind": "range", "#q-id": "dev-000001", "#q-from": String(fromMs), "#q-to": String(to),
                               "#q-limit": "50", "#q-order": "asc" });
    api = await getJson(q.url);
    if (same(JSON.parse(q.body), api.json)) break;
  }
  body = JSON.parse(q.body);
  check(q.status === 200 && body.events.length > 0, "range of dev-000001 answers events", q.status + " " + q.body.slice(0, 200));
  check(same(body, api.json), "the range answer the page got is the API's answer to the same URL");
  check(same(await resultRows(page), asRows(api.json.events)), "the range rows are the API's events, in its order");
  const curl = await page.textContent("#q-curl");
  check(curl === "curl '" + q.url + "'", "the page shows the query as a curl line", curl);
  await page.screenshot({ path: path.join(outDir, "status_page.png"), fullPage: true });
  console.log("screenshot: " + path.join(outDir, "status_page.png"));

  // An index query: rows when the API answers 200, its error text when it answers 4xx.
  q = await runQuery(page, { "#q-kind": "index-latest", "#q-field": "device", "#q-value": "dev-000000", "#q-n": "5" });
  const indexApi = await getJson(q.url);
  if (indexApi.status === 200) {
    check(same(await resultRows(page), asRows(indexApi.json.events)), "the index rows are the API's events");
  } else {
    const shown = await page.textContent("#q-status");
    check(indexApi.status >= 400 && indexApi.status < 500 && indexApi.json &&
          shown === "HTTP " + indexApi.status + ": " + indexApi.json.error,
          "an index query the API refuses shows its status and error text", shown);
    check(await page.isHidden("#q-results"), "no stale rows stay under an error");
  }

  check(offsite.length === 0, "the page requests nothing from another origin", offsite.join(", "));
  check(errors.length === 0, "no console error on the status page", errors.join(" | "));
  await page.close();
}

// The ids of the devices table's rows.
async function deviceIds(page) {
  return page.$$eval("#devices-table tbody tr", (trs) => trs.map((tr) => tr.cells[0].textContent));
}

// Runs `action` and returns the body of the page's first response whose URL matches `pattern`.
async function responseOf(page, pattern, action) {
  const response = page.waitForResponse((r) => pattern.test(r.url()));
  await action();
  const res = await response;
  return { status: res.status(), json: JSON.parse(await res.text()), url: res.url() };
}

async function checkDevices(context, base) {
  const page = await context.newPage();
  const errors = watchErrors(page, () => false);
  // Every answer of the device view's latest events, the last one last: the view refreshes itself.
  const latestAnswers = [];
  // And of its chart's series, per field: the chart redraws itself from each new answer too.
  const seriesAnswers = {};
  page.on("response", async (r) => {
    const latest = /\/latest\?n=10$/.test(r.url());
    const series = r.url().includes("/series?") && r.status() === 200;
    if (!latest && !series) return;
    let body;
    try {
      body = JSON.parse(await r.text());
    } catch (e) {
      // A refresh answered while the page closed at the end of these checks: no body to read.
      if (page.isClosed() || /has been closed/.test(String(e && e.message))) return;
      throw e;
    }
    if (latest) latestAnswers.push(body);
    if (series) {
      const field = new URL(r.url()).searchParams.get("field");
      (seriesAnswers[field] = seriesAnswers[field] || []).push(body);
    }
  });
  // Whether the chart shows as many points as the newest series answer of `field` has.
  const drawsLastSeries = (field) => waitFor(async () => {
    const answers = seriesAnswers[field] || [];
    const last = answers[answers.length - 1];
    return last && last.points.length > 0 &&
           (await page.getAttribute("#device-chart", "data-points")) === String(last.points.length);
  });
  const shows = async (want) => waitFor(async () => same(await deviceIds(page), want), 5000);
  await page.goto(base + "/");
  const loaded = await waitFor(async () => (await deviceIds(page)).length > 0);
  check(loaded !== null, "the devices table fills by itself");

  // The rows follow GET /v1/latest/stream (EventSource), and the table is not polled meanwhile.
  const streaming = await waitFor(async () => (await page.getAttribute("body", "data-devices-live")) === "stream");
  check(streaming !== null, "the devices table follows /v1/latest/stream",
        await page.getAttribute("body", "data-devices-live"));
  const updates = async () => Number((await page.getAttribute("#devices-table", "data-live-updates")) || 0);
  const before = await updates();
  let polled = 0;
  const countPolls = (r) => { if (/\/v1\/latest\?limit=50$/.test(r.url())) polled++; };
  page.on("request", countPolls);
  const moved = await waitFor(async () => (await updates()) >= before + 20);
  check(moved !== null, "rows of the devices table update from the stream (20 updates)", before + " then " + (await updates()));
  const liveRow = await page.$eval("#devices-table tbody tr[data-live]", (tr) =>
    ({ id: tr.cells[0].textContent, ts: Number(tr.dataset.ts) })).catch(() => null);
  if (liveRow) {
    const newest = await getJson(base + "/v1/events/" + encodeURIComponent(liveRow.id) + "/latest?n=1");
    check(newest.status === 200 && newest.json.events.length === 1 && newest.json.events[0].ts >= liveRow.ts,
          "a row updated from the stream shows an event the API holds", JSON.stringify(liveRow));
  } else {
    check(false, "a row of the table carries data-live once updated from the stream");
  }
  page.off("request", countPolls);
  check(polled === 0, "the table is not polled while the stream is open", polled + " reads of /v1/latest");

  // First page, by id: the ids the API answered for the same URL (times move on, ids do not).
  let got = await responseOf(page, /\/v1\/latest\?limit=50$/, () => page.click("#devices-search"));
  const firstPage = got.json.events.map((e) => e.event_id);
  check(got.status === 200 && firstPage.length === 50 && (await shows(firstPage)) !== null,
        "the devices table shows the 50 ids of the API's first page", JSON.stringify((await deviceIds(page)).slice(0, 3)));
  check(same([...firstPage].sort(), firstPage), "the devices are in id order");
  const api = await getJson(got.url);
  check(same(api.json.events.map((e) => e.event_id), firstPage), "the API answers the same ids to the page's URL");

  // Next page: after the first page's last id; previous comes back.
  got = await responseOf(page, /\/v1\/latest\?limit=50&after=/, () => page.click("#devices-next"));
  let ids = got.json.events.map((e) => e.event_id);
  check(new URL(got.url).searchParams.get("after") === firstPage[firstPage.length - 1] && ids.length > 0 &&
        ids[0] > firstPage[firstPage.length - 1] && (await shows(ids)) !== null,
        "next shows the page after the first page's last id", got.url);
  await responseOf(page, /\/v1\/latest\?limit=50$/, () => page.click("#devices-prev"));
  check((await shows(firstPage)) !== null, "previous shows the first page again");

  // Search by prefix.
  // dev-0002..: ids of about one event a second each (the demo's devices are skewed; dev-000010
  // sends ~25 a second, which would push the view's answered rows out before they can be compared).
  await page.fill("#devices-prefix", "dev-0002");
  got = await responseOf(page, /\/v1\/latest\?limit=50&prefix=dev-0002$/, () => page.click("#devices-search"));
  ids = got.json.events.map((e) => e.event_id);
  check(ids.length > 0 && ids.every((id) => id.startsWith("dev-0002")) && (await shows(ids)) !== null,
        "a prefix search shows only the ids with that prefix, as the API answered", JSON.stringify(ids));

  // The device view: its latest events, then the chart of its first reading.
  const id = ids[0];
  const series = page.waitForResponse((r) => r.url().includes("/v1/events/" + id + "/series?"));
  await page.click("#devices-table tbody tr:first-child a");
  const opened = await waitFor(async () => (await page.isVisible("#device-view")) && (await page.textContent("#device-id")) === id);
  check(opened !== null, "choosing a device opens its view", await page.textContent("#device-id"));
  const offsets = () => page.$$eval("#device-latest tbody tr", (trs) => trs.map((tr) => Number(tr.cells[2].textContent)));
  // The rows the API answered, under the rows its stream added on top since (data-live).
  const answered = () => page.$$eval("#device-latest tbody tr:not([data-live])", (trs) => trs.map((tr) => Number(tr.cells[2].textContent)));
  const listed = await waitFor(async () => {
    const last = latestAnswers[latestAnswers.length - 1];
    const rows = await answered();
    return last && last.events.length === 10 && (await offsets()).length === 10 && rows.length > 0 &&
           same(rows, last.events.map((e) => e.offset).slice(0, rows.length));
  });
  check(listed !== null, "the device view lists the 10 newest events the API answered", JSON.stringify(await offsets()));

  // Its events follow GET /v1/events/{id}/stream: new ones go on top, and the view is not polled.
  const deviceStreaming = await waitFor(async () => (await page.getAttribute("body", "data-device-live")) === "stream");
  check(deviceStreaming !== null, "the device view follows /v1/events/{id}/stream",
        await page.getAttribute("body", "data-device-live"));
  const deviceUpdates = async () => Number((await page.getAttribute("#device-latest", "data-live-updates")) || 0);
  const deviceBefore = await deviceUpdates();
  let viewPolled = 0;
  const countViewPolls = (r) => { if (r.url().includes("/v1/events/" + id + "/latest?n=10")) viewPolled++; };
  page.on("request", countViewPolls);
  const streamed = await waitFor(async () => (await deviceUpdates()) >= deviceBefore + 3);
  check(streamed !== null, "the device view adds events from its stream (3 events)", deviceBefore + " then " + (await deviceUpdates()));
  const top = await page.$eval("#device-latest tbody tr:first-child", (tr) =>
    ({ ts: Number(tr.dataset.ts), where: tr.cells[1].textContent, offset: Number(tr.cells[2].textContent) })).catch(() => null);
  const held = top && await getJson(base + "/v1/events/" + encodeURIComponent(id) + "/latest?n=10");
  check(held && held.status === 200 && held.json.events.some((e) => e.offset === top.offset && e.topic + "/" + e.partition === top.where),
        "the view's newest row is an event the API holds", JSON.stringify(top));
  const tsOrder = await page.$$eval("#device-latest tbody tr", (trs) => trs.map((tr) => Number(tr.dataset.ts)));
  check(tsOrder.length === 10 && tsOrder.every((t, i) => i === 0 || tsOrder[i - 1] >= t),
        "the view keeps its 10 newest events in ts order", JSON.stringify(tsOrder));
  page.off("request", countViewPolls);
  check(viewPolled === 0, "the device view is not polled while its stream is open", viewPolled + " reads of its latest");
  let res = await series;
  let body = JSON.parse(await res.text());
  const field = new URL(res.url()).searchParams.get("field");
  check(res.status() === 200 && field === "temp", "the chart asks the series of the first reading (temp)", res.url());
  let drawn = await drawsLastSeries("temp");
  check(drawn !== null && body.points.length > 0, "the chart draws the API's points",
        await page.getAttribute("#device-chart", "data-points"));
  const options = await page.$$eval("#device-field option", (os) => os.map((o) => o.value));
  check(["temp", "humidity", "battery"].every((f) => options.includes(f)), "every numeric field can be charted", JSON.stringify(options));
  const humidity = page.waitForResponse((r) => r.url().includes("/series?field=humidity"));
  await page.selectOption("#device-field", "humidity");
  res = await humidity;
  body = JSON.parse(await res.text());
  drawn = await drawsLastSeries("humidity");
  check(res.status() === 200 && body.points.length > 0 && drawn !== null,
        "choosing another field redraws the chart from its series");
  await page.screenshot({ path: path.join(outDir, "status_page_devices.png"), fullPage: true });
  check(errors.length === 0, "no console error on the devices", errors.join(" | "));
  await page.close();
}

// A server with http.token_file (CONTRACT.md, "Access") answers 401 to /v1/* and /metrics without
// the token; simulated here by intercepting the page's requests, so the page's side is tested
// either way.
// The cluster card's per-partition table, from a group view in the shape GET /v1/cluster answers
// with cluster.peers and standbys (CONTRACT.md "Standby replicas"; its JSON is tested against real
// instances in tests/cluster/cluster_fanout_test.cc).
async function checkClusterView(context, base) {
  const page = await context.newPage();
  const errors = watchErrors(page, () => false);
  const a = "127.0.0.1:7001", b = "127.0.0.1:7002", c = "127.0.0.1:7003";
  const instance = (address, self) => ({ address, self, reachable: true, answered: true, ready: true, lag: 0, stale: {}, status: {} });
  const view = {
    self: a, instances: [instance(a, true), instance(b, false), instance(c, false)],
    by_partition: [
      { topic: "events", partition: 0, owner: { address: a, serving: true, lag: 12, staleness_ms: 0, rebuilding: false },
        standbys: [{ address: b, serving: true, lag: 30, staleness_ms: 5 }], served_by: a, from_standby: false, serving_copies: 2 },
      { topic: "events", partition: 1, owner: { address: c, serving: false, lag: 4000, staleness_ms: -1, rebuilding: true, why: "rebuilding its window from Kafka" },
        standbys: [{ address: a, serving: true, lag: 7, staleness_ms: 1 }, { address: b, serving: false, lag: 900, staleness_ms: 9000, why: "trails" }],
        served_by: a, from_standby: true, serving_copies: 1 },
      { topic: "events", partition: 2, owner: null, standbys: [], served_by: null, from_standby: false, serving_copies: 0 },
    ],
    complete: false, missing: { events: [2] }, stale: {},
  };
  await page.route((url) => url.pathname === "/v1/cluster", (route) =>
    route.fulfill({ status: 200, contentType: "application/json", body: JSON.stringify(view) }));
  await page.goto(base + "/");
  const rowsOf = async () => page.$$eval("#cluster-partitions tbody tr", (trs) =>
    trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)));
  const rows = await waitFor(async () => { const r = await rowsOf(); return r.length === 3 ? r : null; }, 10000);
  check(rows !== null && await page.isVisible("#cluster-partitions"), "the cluster card shows one row per partition", JSON.stringify(await rowsOf()));
  if (rows) {
    check(JSON.stringify(rows[0]) === JSON.stringify(["events:0", a, "12", b + " 30", a]),
          "a partition's row names its owner, its lag, its standby with its lag and who answers", JSON.stringify(rows[0]));
    check(JSON.stringify(rows[1]) === JSON.stringify(["events:1", c + " (rebuilding)", "4000",
                                                      a + " 7, " + b + " 900 (not serving)", a + " (standby)"]),
          "an owner rebuilding is said, and the standby that answers meanwhile", JSON.stringify(rows[1]));
    check(JSON.stringify(rows[2]) === JSON.stringify(["events:2", "none", "–", "none", "nobody"]),
          "a partition nobody holds says so", JSON.stringify(rows[2]));
  }
  check(errors.length === 0, "no console error on the cluster view", errors.join(" | "));
  await page.close();
}

async function checkToken(context, base) {
  const TOKEN = "s3cret-token";
  const page = await context.newPage();
  const errors = watchErrors(page, () => true);  // every 401 below is asked for
  const STREAM_TOKEN = "st-0123456789abcdef0123456789abcdef";
  const seen = [];  // [path, authorization] of each API request but the streams
  const streams = [];  // [path, access_token, authorization] of each stream request
  let issued = 0;  // POST /v1/stream-tokens with the bearer token
  await page.route((url) => url.pathname.startsWith("/v1/") || url.pathname === "/metrics", async (route) => {
    const req = route.request();
    const auth = (await req.allHeaders()).authorization || "";
    const url = new URL(req.url());
    if (url.pathname.endsWith("/stream")) {
      // EventSource sends no Authorization: the stream token of POST /v1/stream-tokens opens it
      // (the demo asks for none, so the request goes on as it is).
      const token = url.searchParams.get("access_token") || "";
      streams.push([url.pathname, token, auth]);
      if (token !== STREAM_TOKEN) {
        return route.fulfill({ status: 401, contentType: "application/json", body: '{"error":"a bearer token is required"}' });
      }
      return route.continue();
    }
    seen.push([url.pathname, auth]);
    if (url.pathname === "/v1/stream-tokens" && req.method() === "POST" && auth === "Bearer " + TOKEN) {
      issued++;
      return route.fulfill({ status: 200, contentType: "application/json", headers: { "Cache-Control": "no-store" },
                             body: JSON.stringify({ token: STREAM_TOKEN, ttl_ms: 60000 }) });
    }
    if (auth !== "Bearer " + TOKEN) {
      return route.fulfill({ status: 401, contentType: "application/json", body: '{"error":"a bearer token is required"}' });
    }
    return route.continue();
  });
  await page.goto(base + "/");
  const asked = await waitFor(() => page.isVisible("#token-input"), 10000);
  check(asked !== null, "on a 401 the page asks for the token");
  await page.fill("#token-input", TOKEN);
  await page.click("#token-form button");
  const loaded = await waitFor(async () => /^\d+$/.test(await page.textContent("#stat-ingested")), 15000);
  check(loaded !== null, "with the token the numbers load");
  check(await page.isHidden("#token-box"), "the token prompt goes away once the token is accepted");
  const firstWithToken = seen.findIndex(([, auth]) => auth !== "");
  const after = firstWithToken < 0 ? [] : seen.slice(firstWithToken);
  check(after.length > 0 && after.every(([, auth]) => auth === "Bearer " + TOKEN),
        "every request after the token carries Authorization: Bearer", JSON.stringify(after.slice(0, 5)));
  const storage = await page.evaluate(() => ({ session: sessionStorage.getItem("hotrow.token"), local: localStorage.length }));
  check(storage.session === TOKEN && storage.local === 0, "the token is in sessionStorage only", JSON.stringify(storage));
  const q = await runQuery(page, { "#q-kind": "latest", "#q-id": "dev-000000", "#q-n": "3" });
  check(q.status === 200 && (await resultRows(page)).length === 3, "a query from the form sends the token", q.status);
  // The devices table follows its stream with a stream token (CONTRACT.md "Browsers"), never
  // with the bearer token in the address.
  const live = await waitFor(async () => (await page.getAttribute("body", "data-devices-live")) === "stream" || null, 15000);
  check(live !== null && issued > 0, "with a token the devices table follows its stream, opened with a token of POST /v1/stream-tokens",
        JSON.stringify({ issued, streams: streams.slice(0, 3) }));
  check(streams.length > 0 && streams.every(([, token, auth]) => token === STREAM_TOKEN && auth === ""),
        "every stream request carries the stream token as access_token and no bearer token", JSON.stringify(streams.slice(0, 3)));
  check(errors.length === 0, "no console error on the token page", errors.join(" | "));
  await page.close();
}

main().then(
  () => {
    console.log(passes + " passed, " + failures + " failed");
    process.exit(failures === 0 ? 0 : 1);
  },
  (e) => {
    console.log("FAIL " + (e && e.stack ? e.stack : e));
    console.log(passes + " passed, " + (failures + 1) + " failed");
    process.exit(1);
  });
