// The status page's devices (http/status_page.html), inlined after status_page.js at build time:
// the devices table (the newest event of each id, GET /v1/latest, paged by its cursor and searched
// by id prefix) and the device view (its latest events and a chart of a numeric payload field over
// the window, GET /v1/events/{id}/series). The table's rows follow GET /v1/latest/stream (server-sent
// events) and the view's events follow GET /v1/events/{id}/stream while those are open; where
// EventSource fails, the table and the view are read again every few polls of status_page.js. A
// server that asks for a bearer token (which EventSource cannot send) is given a stream token of
// POST /v1/stream-tokens in the stream's address; when a stream that had opened is refused later
// (its token expired before a reconnection, or its bearer token was retired), it is opened once
// more with a new one.
"use strict";
(() => {
  const shared = window.hotrowPage;  // from status_page.js
  const { $, api, errorText, Unauthorized, askForToken, cell, fillTable, svgEl, utc, compact, clock } = shared;
  const PAGE_SIZE = 50;
  const REFRESH_POLLS = 5;  // the table and the view are read again every 5th poll (about 5 s)
  const CHART_POINTS = 120;
  const enc = encodeURIComponent;

  let store = null;        // the last /v1/stats "store" object: the window and "now"
  let oldestBucket = null;  // the start of its oldest bucket: the chart starts there or later
  let polls = 0;

  // ---- the devices table ----------------------------------------------------------------------
  // The page shown is the one after cursors[cursors.length - 1] ("" for the first); `next` is the
  // API's cursor of the page after it.
  // `asked` numbers the reads: an answer to one that is not the latest is dropped.
  const devices = { prefix: "", cursors: [""], next: null, asked: 0 };

  function devicesPath() {
    const params = new URLSearchParams();
    params.set("limit", String(PAGE_SIZE));
    if (devices.prefix) params.set("prefix", devices.prefix);
    const after = devices.cursors[devices.cursors.length - 1];
    if (after) params.set("after", after);
    return "/v1/latest?" + params;
  }

  async function loadDevices() {
    const asked = ++devices.asked;
    const status = $("devices-status");
    try {
      const res = await api(devicesPath());
      if (asked !== devices.asked) return;
      if (!res.ok) {
        status.className = "error";
        status.textContent = "HTTP " + res.status + ": " + (await errorText(res));
        return;
      }
      const body = await res.json();
      if (asked !== devices.asked) return;
      const events = Array.isArray(body.events) ? body.events : [];
      const now = store ? Number(store.now_ms) : Date.now();
      const chosen = $("device-id").textContent;
      fillTable($("devices-table").tBodies[0], events, (tr, e) => {
        if (e.event_id === chosen) tr.className = "chosen";
        const link = document.createElement("a");
        link.href = "#device";
        link.textContent = e.event_id;
        link.addEventListener("click", (ev) => { ev.preventDefault(); openDevice(e.event_id); });
        cell(tr, "", "mono").appendChild(link);
        tr.dataset.ts = String(e.ts);
        cell(tr, utc(e.ts), "mono");
        cell(tr, age(now - e.ts), "num");
        cell(tr, e.topic + "/" + e.partition, "mono");
        const payload = JSON.stringify(e.payload);
        cell(tr, payload, "payload").title = payload;
      });
      devices.next = typeof body.next === "string" ? body.next : null;
      $("devices-next").disabled = devices.next === null;
      $("devices-prev").disabled = devices.cursors.length <= 1;
      const page = devices.cursors.length;
      status.className = "muted";
      status.textContent = (events.length ? "page " + page + ", " + events.length + " id" +
        (events.length === 1 ? "" : "s") : "no id" + (devices.prefix ? " starts with " + devices.prefix : "")) +
        (body.complete === false ? " (incomplete)" : "");
    } catch (e) {
      if (asked !== devices.asked) return;
      status.className = "error";
      if (e instanceof Unauthorized) askForToken(e.message);
      status.textContent = "The devices could not be read: " + e.message;
    }
  }

  function age(ms) {
    if (!isFinite(ms)) return "–";
    if (ms < 0) return "0 s";
    if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + " s";
    return Math.round(ms / 60000) + " min";
  }

  // ---- live rows (GET /v1/latest/stream) ------------------------------------------------------
  // Each stored event of an id on the page shown replaces its row's cells (the newest by ts wins:
  // a stream sends each partition in order, and an id may span partitions). The browser resumes a
  // dropped stream by itself (Last-Event-ID). body[data-devices-live] says how the table is kept
  // fresh ("stream" or "poll"), for people and for the browser test.
  // generation: bumped by every stop, so that an address that arrives after a stop is dropped.
  const live = { source: null, ok: false, failed: false, updates: 0, generation: 0 };

  function stopLive() {
    live.generation++;
    if (live.source) live.source.close();
    live.source = null;
    live.ok = false;
  }

  function startLive() {
    stopLive();
    document.body.dataset.devicesLive = "poll";
    if (live.failed || typeof EventSource !== "function") return;
    const generation = live.generation;
    shared.streamAddress("/v1/latest/stream", devices.prefix ? { prefix: devices.prefix } : null).then(
      (url) => { if (generation === live.generation) openLive(url); },
      () => { if (generation === live.generation) live.failed = true; });
  }

  function openLive(url) {
    const source = new EventSource(url);
    let opened = false;
    live.source = source;
    source.addEventListener("open", () => {
      opened = true;
      live.ok = true;
      document.body.dataset.devicesLive = "stream";
    });
    source.addEventListener("error", () => {
      live.ok = false;
      document.body.dataset.devicesLive = "poll";
      // CLOSED: refused (401, 503, not an event stream); the browser will not retry. A stream
      // with a stream token that had opened starts again with a new token; else: poll.
      if (source.readyState === EventSource.CLOSED) {
        if (opened && url.includes("access_token=")) return startLive();
        live.failed = true;
        stopLive();
      }
    });
    source.addEventListener("message", (ev) => {
      let e;
      try { e = JSON.parse(ev.data); } catch (_) { return; }
      const rows = $("devices-table").tBodies[0].rows;
      for (const tr of rows) {
        if (tr.cells[0].textContent !== e.event_id) continue;
        if (Number(tr.dataset.ts || 0) > e.ts) return;
        tr.dataset.ts = String(e.ts);
        const now = store ? Math.max(Number(store.now_ms), e.ts) : Date.now();
        tr.cells[1].textContent = utc(e.ts);
        tr.cells[2].textContent = age(now - e.ts);
        tr.cells[3].textContent = e.topic + "/" + e.partition;
        const payload = JSON.stringify(e.payload);
        tr.cells[4].textContent = payload;
        tr.cells[4].title = payload;
        tr.dataset.live = String(++live.updates);
        $("devices-table").dataset.liveUpdates = String(live.updates);
        return;
      }
    });
  }

  $("devices-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    devices.prefix = $("devices-prefix").value;
    devices.cursors = [""];
    loadDevices();
    startLive();
  });
  $("devices-next").addEventListener("click", () => {
    if (devices.next === null) return;
    devices.cursors.push(devices.next);
    loadDevices();
  });
  $("devices-prev").addEventListener("click", () => {
    if (devices.cursors.length <= 1) return;
    devices.cursors.pop();
    loadDevices();
  });

  // ---- the device view ------------------------------------------------------------------------
  const view = { id: null, field: "", asked: 0 };  // `asked` as for the table

  // The dotted paths of the numbers in a payload, in the payload's order, but those that look like
  // times in ms since the epoch (the event's own time is usually one) last.
  function numericFields(payload) {
    const readings = [], times = [];
    (function walk(value, prefix) {
      if (value === null || typeof value !== "object" || Array.isArray(value)) return;
      for (const [k, v] of Object.entries(value)) {
        const path = prefix ? prefix + "." + k : k;
        if (typeof v === "number") (v > 1e12 ? times : readings).push(path);
        else walk(v, path);
      }
    })(payload, "");
    return readings.concat(times);
  }

  // One row of the view's latest events.
  function deviceRow(tr, e) {
    tr.dataset.ts = String(e.ts);
    cell(tr, utc(e.ts), "mono");
    cell(tr, e.topic + "/" + e.partition, "mono");
    cell(tr, String(e.offset), "num");
    const payload = JSON.stringify(e.payload);
    cell(tr, payload, "payload").title = payload;
  }

  // ---- the view's live events (GET /v1/events/{id}/stream) ------------------------------------
  // Each stored event of the id shown goes on top of its latest events, in ts order, the newest
  // DEVICE_EVENTS kept (an event already listed is not listed twice). body[data-device-live] says
  // how the view is kept fresh ("stream" or "poll"); the chart is redrawn every few polls either way.
  const DEVICE_EVENTS = 10;
  const deviceLive = { source: null, ok: false, failed: false, updates: 0, generation: 0 };

  function stopDeviceLive() {
    deviceLive.generation++;
    if (deviceLive.source) deviceLive.source.close();
    deviceLive.source = null;
    deviceLive.ok = false;
  }

  function startDeviceLive(id) {
    stopDeviceLive();
    document.body.dataset.deviceLive = "poll";
    if (deviceLive.failed || typeof EventSource !== "function") return;
    const generation = deviceLive.generation;
    shared.streamAddress("/v1/events/" + enc(id) + "/stream").then(
      (url) => { if (generation === deviceLive.generation) openDeviceLive(id, url); },
      () => { if (generation === deviceLive.generation) deviceLive.failed = true; });
  }

  function openDeviceLive(id, url) {
    const source = new EventSource(url);
    let opened = false;
    deviceLive.source = source;
    source.addEventListener("open", () => {
      opened = true;
      deviceLive.ok = true;
      document.body.dataset.deviceLive = "stream";
    });
    source.addEventListener("error", () => {
      deviceLive.ok = false;
      document.body.dataset.deviceLive = "poll";
      if (source.readyState === EventSource.CLOSED) {  // refused: the browser will not retry
        if (opened && url.includes("access_token=")) return startDeviceLive(id);
        deviceLive.failed = true;
        stopDeviceLive();
      }
    });
    source.addEventListener("message", (ev) => {
      let e;
      try { e = JSON.parse(ev.data); } catch (_) { return; }
      if (view.id !== id || e.event_id !== id) return;
      const tbody = $("device-latest").tBodies[0];
      const where = e.topic + "/" + e.partition;
      let before = null;
      for (const tr of tbody.rows) {
        if (tr.cells[1].textContent === where && tr.cells[2].textContent === String(e.offset)) return;
        if (before === null && Number(tr.dataset.ts) < e.ts) before = tr;
      }
      if (before === null && tbody.rows.length >= DEVICE_EVENTS) return;  // older than every row
      const tr = document.createElement("tr");
      deviceRow(tr, e);
      tr.dataset.live = String(++deviceLive.updates);
      tbody.insertBefore(tr, before);
      while (tbody.rows.length > DEVICE_EVENTS) tbody.deleteRow(-1);
      $("device-latest").dataset.liveUpdates = String(deviceLive.updates);
      $("device-note").textContent = "its " + tbody.rows.length + " newest events";
    });
  }

  function openDevice(id) {
    view.id = id;
    startDeviceLive(id);
    $("device-view").hidden = false;
    $("device-id").textContent = id;
    for (const tr of $("devices-table").tBodies[0].rows) {
      tr.className = tr.cells[0].textContent === id ? "chosen" : "";
    }
    loadDevice();
    $("device-view").scrollIntoView({ block: "nearest" });
  }

  async function loadDevice() {
    if (view.id === null) return;
    const asked = ++view.asked;
    const id = view.id;
    try {
      const res = await api("/v1/events/" + enc(id) + "/latest?n=10");
      if (!res.ok) throw new Error("HTTP " + res.status + ": " + (await errorText(res)));
      const body = await res.json();
      if (asked !== view.asked) return;  // asked again meanwhile (another device, a refresh)
      const events = Array.isArray(body.events) ? body.events : [];
      fillTable($("device-latest").tBodies[0], events, deviceRow);
      $("device-note").textContent = events.length ? "its " + events.length + " newest events" : "no event in the window";
      const fields = events.length ? numericFields(events[0].payload) : [];
      const select = $("device-field");
      if (fields.join("\n") !== [...select.options].map((o) => o.value).join("\n")) {
        select.replaceChildren(...fields.map((f) => new Option(f, f)));
      }
      if (!fields.includes(view.field)) view.field = fields.length ? fields[0] : "";
      select.value = view.field;
      await drawSeries(asked, id, view.field);
    } catch (e) {
      if (asked !== view.asked) return;
      if (e instanceof Unauthorized) askForToken(e.message);
      $("device-note").textContent = "could not be read: " + e.message;
    }
  }

  $("device-field").addEventListener("change", () => {
    view.field = $("device-field").value;
    if (view.id === null) return;
    const asked = ++view.asked;
    drawSeries(asked, view.id, view.field).catch((e) => {
      if (asked === view.asked) $("device-note").textContent = "could not be read: " + e.message;
    });
  });

  // The chart of `field` over the window: the mean per step as a line, min to max as a band.
  async function drawSeries(asked, id, field) {
    const svg = $("device-chart");
    const W = 600, H = 200, top = 16, bottom = 20, left = 4;
    if (!field || !store) {
      svg.setAttribute("data-points", "0");
      svg.replaceChildren(svgEl("text", { x: W / 2, y: H / 2, "text-anchor": "middle" },
                                field ? "waiting for the window…" : "no numeric field in its newest event"));
      $("device-skipped").textContent = "";
      return;
    }
    // The window, but from its oldest bucket when the store holds less than a window.
    const from = Math.max(Number(store.window_start_ms), oldestBucket === null ? 0 : oldestBucket);
    const to = Number(store.now_ms) + 1000;
    const res = await api("/v1/events/" + enc(id) + "/series?field=" + enc(field) + "&from=" + from + "&to=" + to +
                          "&max_points=" + CHART_POINTS + "&agg=avg,min,max,count");
    if (!res.ok) throw new Error("HTTP " + res.status + ": " + (await errorText(res)));
    const body = await res.json();
    if (asked !== view.asked) return;
    const points = Array.isArray(body.points) ? body.points : [];
    const x = (t) => left + (W - left) * ((t - from) / Math.max(1, to - from));
    const children = [svgEl("line", { x1: 0, y1: H - bottom, x2: W, y2: H - bottom, class: "axis" })];
    children.push(svgEl("text", { x: 2, y: H - 4 }, clock(from, true)));
    children.push(svgEl("text", { x: W - 2, y: H - 4, "text-anchor": "end" }, "now"));
    if (!points.length) {
      children.push(svgEl("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "no number in the window"));
    } else {
      const lo = Math.min(...points.map((p) => p.min)), hi = Math.max(...points.map((p) => p.max));
      const pad = hi > lo ? (hi - lo) * 0.05 : 1;
      const y = (v) => H - bottom - (H - bottom - top) * ((v - (lo - pad)) / (hi - lo + 2 * pad));
      const mid = (p) => x(p.t + body.step_ms / 2).toFixed(1);
      const band = points.map((p) => mid(p) + "," + y(p.max).toFixed(1))
        .concat([...points].reverse().map((p) => mid(p) + "," + y(p.min).toFixed(1)));
      children.push(svgEl("polygon", { class: "series-band", points: band.join(" ") }));
      children.push(svgEl("polyline", { class: "series-line", points: points.map((p) => mid(p) + "," + y(p.avg).toFixed(1)).join(" "),
                                        "vector-effect": "non-scaling-stroke" }));
      children.push(svgEl("text", { x: 2, y: 11 }, "max " + compact(hi)));
      children.push(svgEl("text", { x: 2, y: H - bottom - 3 }, "min " + compact(lo)));
    }
    svg.setAttribute("data-points", String(points.length));
    svg.replaceChildren(...children);
    const skipped = body.skipped || {};
    const absent = Number(skipped.absent) || 0, notNumber = Number(skipped.not_number) || 0;
    $("device-skipped").textContent = points.reduce((a, p) => a + p.count, 0) + " values in " + points.length +
      " steps of " + body.step_ms + " ms" + (absent + notNumber ? "; " + absent + " events without it, " + notNumber +
      " not a number" : "");
  }

  shared.onStats((stats) => {
    const first = store === null;
    store = stats.store || null;
    oldestBucket = Array.isArray(stats.buckets) && stats.buckets.length ? Number(stats.buckets[0].start) : null;
    if (first) {
      loadDevices();
      startLive();
    }
    if (++polls % REFRESH_POLLS !== 0) return;
    if (!live.ok) loadDevices();  // the stream keeps the rows fresh while it is open
    if (!deviceLive.ok) return loadDevice();  // as the view's events while its stream is open
    if (view.id === null) return;
    const asked = ++view.asked;
    drawSeries(asked, view.id, view.field).catch((e) => {
      if (asked === view.asked) $("device-note").textContent = "could not be read: " + e.message;
    });
  });
})();
