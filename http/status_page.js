// The status page's script (http/status_page.html), inlined into the page at build time: the API
// and its token, the figures polled from /v1/stats, /readyz and /metrics, and the query form.
"use strict";
(() => {
  const POLL_MS = 1000;               // at most one poll of the API per second
  const RATE_HISTORY_MS = 5 * 60000;  // what the ingest-rate chart shows
  const LATENCY_WINDOW_MS = 60000;    // query latency over this long
  const TOKEN_KEY = "hotrow.token";
  const $ = (id) => document.getElementById(id);

  // ---- the API, with the bearer token when one is set -------------------------------------
  class Unauthorized extends Error {}
  function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }
  async function api(path) {
    const headers = {};
    if (token()) headers.Authorization = "Bearer " + token();
    const res = await fetch(path, { headers, cache: "no-store" });
    if (res.status === 401) throw new Unauthorized(await errorText(res));
    return res;
  }
  // A live stream's address. EventSource cannot send the bearer token, so with one the page asks
  // POST /v1/stream-tokens for a short-lived stream token and puts it in the address as
  // access_token (CONTRACT.md, "Live streams", "Browsers"); the server never logs it.
  async function streamAddress(path, params) {
    const query = new URLSearchParams(params || {});
    if (token()) {
      const res = await fetch("/v1/stream-tokens", {
        method: "POST", headers: { Authorization: "Bearer " + token() }, cache: "no-store",
      });
      if (res.status === 401) throw new Unauthorized(await errorText(res));
      if (!res.ok) throw new Error(await errorText(res));
      query.set("access_token", (await res.json()).token);
    }
    const text = query.toString();
    return path + (text ? "?" + text : "");
  }
  async function errorText(res) {
    const text = await res.text();
    try { const j = JSON.parse(text); if (j && typeof j.error === "string") return j.error; } catch (e) { /* not JSON */ }
    return text.trim() || res.statusText;
  }
  function askForToken(message) {
    $("token-box").hidden = false;
    $("token-why").textContent = token()
      ? "The token was refused (" + message + "); enter it again."
      : "This hotrow asks for a bearer token (http.token_file).";
    $("token-input").focus();
  }
  $("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const value = $("token-input").value.trim();
    if (!value) return;
    sessionStorage.setItem(TOKEN_KEY, value);
    $("token-input").value = "";
    $("token-box").hidden = true;
    wake();
  });

  // ---- formatting -------------------------------------------------------------------------
  const plain = (n) => String(Math.max(0, Math.round(Number(n) || 0)));  // digits only
  function compact(n) {
    n = Number(n) || 0;
    const a = Math.abs(n);
    if (a >= 1e9) return (n / 1e9).toFixed(a >= 1e10 ? 0 : 1) + "G";
    if (a >= 1e6) return (n / 1e6).toFixed(a >= 1e7 ? 0 : 1) + "M";
    if (a >= 1e4) return (n / 1e3).toFixed(0) + "k";
    if (a >= 1e3) return (n / 1e3).toFixed(1) + "k";
    return String(Math.round(n));
  }
  function bytes(n) {
    n = Number(n) || 0;
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i === 0 ? String(n) : n.toFixed(n >= 100 ? 0 : 1)) + " " + units[i];
  }
  function seconds(s) {
    if (!isFinite(s)) return "–";
    if (s < 0.001) return (s * 1e6).toFixed(0) + " µs";
    if (s < 1) return (s * 1e3).toFixed(s < 0.01 ? 2 : 1) + " ms";
    return s.toFixed(2) + " s";
  }
  function duration(ms) {
    if (ms % 3600000 === 0) return ms / 3600000 + "h";
    if (ms % 60000 === 0) return ms / 60000 + "m";
    if (ms % 1000 === 0) return ms / 1000 + "s";
    return ms + "ms";
  }
  const utc = (ms) => new Date(ms).toISOString().replace("T", " ").replace("Z", "");
  const clock = (ms, withSeconds) => new Date(ms).toISOString().slice(11, withSeconds ? 19 : 16);

  function cell(tr, text, cls) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }
  function fillTable(tbody, rows, render) {
    const frag = document.createDocumentFragment();
    for (const row of rows) { const tr = document.createElement("tr"); render(tr, row); frag.appendChild(tr); }
    tbody.replaceChildren(frag);
  }
  const SVG = "http://www.w3.org/2000/svg";
  function svgEl(name, attrs, text) {
    const el = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    if (text !== undefined) el.textContent = text;
    return el;
  }

  // ---- /metrics: only what the latency table needs (the Prometheus text format) ------------
  function parseMetrics(text) {
    const out = {};  // kind -> {buckets: [[le, count]], sum, count, failed}
    const kindOf = (k) => (out[k] = out[k] || { buckets: [], sum: 0, count: 0, failed: 0 });
    for (const line of text.split("\n")) {
      if (!line.startsWith("hotrow_query")) continue;
      const m = /^(\w+)\{([^}]*)\}\s+(\S+)/.exec(line);
      if (!m) continue;
      const labels = {};
      for (const l of m[2].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
      const value = Number(m[3]);
      if (!labels.kind) continue;
      const k = kindOf(labels.kind);
      if (m[1] === "hotrow_query_seconds_bucket") k.buckets.push([labels.le === "+Inf" ? Infinity : Number(labels.le), value]);
      else if (m[1] === "hotrow_query_seconds_sum") k.sum = value;
      else if (m[1] === "hotrow_query_seconds_count") k.count = value;
      else if (m[1] === "hotrow_queries_total" && labels.outcome !== "ok") k.failed += value;
    }
    for (const k of Object.values(out)) k.buckets.sort((a, b) => a[0] - b[0]);
    return out;
  }
  // The q-quantile of a cumulative histogram, interpolated inside its bucket (as PromQL's
  // histogram_quantile does).
  function quantile(q, buckets) {
    const total = buckets.length ? buckets[buckets.length - 1][1] : 0;
    if (total <= 0) return NaN;
    const rank = q * total;
    let prevLe = 0, prevCount = 0;
    for (const [le, count] of buckets) {
      if (count >= rank) {
        if (le === Infinity) return prevLe;
        return prevLe + (le - prevLe) * (count > prevCount ? (rank - prevCount) / (count - prevCount) : 1);
      }
      prevLe = le; prevCount = count;
    }
    return prevLe;
  }
  function diffMetrics(now, then) {
    if (!then) return now;
    const out = {};
    for (const [kind, k] of Object.entries(now)) {
      const t = then[kind] || { buckets: [], sum: 0, count: 0, failed: 0 };
      out[kind] = {
        buckets: k.buckets.map(([le, c], i) => [le, c - ((t.buckets[i] || [le, 0])[1])]),
        sum: k.sum - t.sum, count: k.count - t.count, failed: k.failed - t.failed,
      };
    }
    return out;
  }

  // ---- state kept between polls ------------------------------------------------------------
  const rateSamples = [];     // {t, ingested}: wall-clock ms of the poll, events stored so far
  const metricSamples = [];   // {t, metrics}

  // ---- rendering ----------------------------------------------------------------------------
  function renderStats(s) {
    $("where").textContent = location.host;
    $("stat-ingested").textContent = plain(s.ingested);
    const st = s.store || {};
    $("stat-window").textContent = compact(st.events);
    $("stat-window").title = String(st.events);
    $("stat-window-sub").textContent = st.ttl_ms ? "window " + duration(st.ttl_ms) + ", clock " + st.clock : "";
    const parts = Array.isArray(s.partitions) ? s.partitions : [];
    const lag = parts.reduce((a, p) => a + Math.max(0, Number(p.lag) || 0), 0);
    $("stat-lag").textContent = plain(lag);
    $("stat-lag-sub").textContent = parts.length + " partition" + (parts.length === 1 ? "" : "s") +
      (s.assigned === false ? ", none assigned" : "");
    const buckets = Array.isArray(s.buckets) ? s.buckets : [];
    $("stat-buckets").textContent = plain(buckets.length);
    $("stat-buckets-sub").textContent = st.bucket_ms ? duration(st.bucket_ms) + " each, " +
      bytes(buckets.reduce((a, b) => a + (Number(b.bytes) || 0), 0)) : "";
    const rejected = s.rejected || {};
    $("stat-rejected").textContent = compact(Object.values(rejected).reduce((a, b) => a + (Number(b) || 0), 0));

    const now = Date.now();
    rateSamples.push({ t: now, ingested: Number(s.ingested) || 0 });
    while (rateSamples.length > 2 && rateSamples[0].t < now - RATE_HISTORY_MS) rateSamples.shift();
    renderRate();
    renderBuckets(buckets, st);
    renderPartitions(parts);
    fillTable($("rejected").tBodies[0], Object.entries(rejected), (tr, [reason, count]) => {
      if (!count) tr.className = "zero";
      cell(tr, reason.replace(/_/g, " "));
      cell(tr, String(count), "num");
    });
    const rows = [
      ["records consumed", s.records_consumed], ["duplicates skipped", s.duplicates],
      ["dead-lettered", s.dead_lettered], ["lost to retention", s.lost_to_retention],
      ["batches written", s.batches_written],
      ["mean batch", s.batch_size_mean === undefined ? undefined : Math.round(s.batch_size_mean) + " events"],
      ["stalled", s.stalled], ["out of disk", s.out_of_disk],
      ["salts", Array.isArray(s.salts) ? s.salts.length + " (by " + s.salt_by + ")" : undefined],
      ["last error", s.last_error || "none"],
    ].filter((r) => r[1] !== undefined);
    fillTable($("ingestion").tBodies[0], rows, (tr, [k, v]) => {
      cell(tr, k);
      const td = cell(tr, String(v), "num");
      if (v === true || (k === "last error" && v !== "none")) td.style.color = "var(--bad)";
    });
  }

  function renderRate() {
    const svg = $("rate-chart");
    const W = 600, H = 160, top = 14, bottom = 18, left = 4;
    const points = [];
    for (let i = 1; i < rateSamples.length; i++) {
      const a = rateSamples[i - 1], b = rateSamples[i];
      const dt = (b.t - a.t) / 1000;
      if (dt > 0) points.push({ t: b.t, rate: Math.max(0, (b.ingested - a.ingested) / dt) });
    }
    const last = points.length ? points[points.length - 1].rate : NaN;
    $("stat-rate").textContent = isFinite(last) ? compact(last) : "–";
    const children = [svgEl("line", { x1: 0, y1: H - bottom, x2: W, y2: H - bottom, class: "axis" })];
    const now = rateSamples.length ? rateSamples[rateSamples.length - 1].t : Date.now();
    // The axis grows with the history, from one minute up to five, so that a fresh page is no
    // sliver at the right-hand edge.
    const span = Math.min(RATE_HISTORY_MS, Math.max(60000, rateSamples.length ? now - rateSamples[0].t : 0));
    const x = (t) => left + (W - left) * (1 - (now - t) / span);
    children.push(svgEl("text", { x: 2, y: H - 4 }, "−" + Math.round(span / 1000) + " s"));
    children.push(svgEl("text", { x: W - 2, y: H - 4, "text-anchor": "end" }, "now"));
    if (points.length < 2) {
      children.push(svgEl("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "collecting samples…"));
    } else {
      const max = Math.max(1, ...points.map((p) => p.rate)) * 1.1;
      const y = (r) => H - bottom - (H - bottom - top) * (r / max);
      const line = points.map((p) => x(p.t).toFixed(1) + "," + y(p.rate).toFixed(1)).join(" ");
      const first = x(points[0].t).toFixed(1), lastX = x(points[points.length - 1].t).toFixed(1);
      children.push(svgEl("polygon", { class: "rate-area", points: first + "," + (H - bottom) + " " + line + " " + lastX + "," + (H - bottom) }));
      children.push(svgEl("polyline", { class: "rate-line", points: line, "vector-effect": "non-scaling-stroke" }));
      children.push(svgEl("text", { x: 2, y: 11 }, "max " + compact(max / 1.1) + "/s"));
    }
    svg.replaceChildren(...children);
  }

  function renderBuckets(buckets, st) {
    const svg = $("bucket-chart");
    const W = 600, H = 170, top = 42, bottom = 20;
    const bucketMs = Number(st.bucket_ms) || 60000;
    const now = Number(st.now_ms) || Date.now();
    const windowStart = Number(st.window_start_ms) || now - (Number(st.ttl_ms) || 600000);
    const lo = Math.min(windowStart, ...buckets.map((b) => b.start));
    const hi = Math.max(now, ...buckets.map((b) => b.start + bucketMs));
    const x = (t) => (W * (t - lo)) / Math.max(1, hi - lo);
    const maxEvents = Math.max(1, ...buckets.map((b) => Number(b.events) || 0));
    const children = [svgEl("line", { x1: 0, y1: H - bottom, x2: W, y2: H - bottom, class: "axis" })];
    const barW = x(lo + bucketMs) - x(lo);
    buckets.forEach((b, i) => {
      const h = Math.max(2, (H - bottom - top) * ((Number(b.events) || 0) / maxEvents));
      const bx = x(b.start) + 1, bw = Math.max(1, barW - 2);
      const rect = svgEl("rect", { class: "bucket", x: bx, y: H - bottom - h, width: bw, height: h, rx: 2 });
      rect.appendChild(svgEl("title", {}, utc(b.start) + " UTC, " + duration(bucketMs) + ": " + b.events + " events, " + bytes(b.bytes)));
      children.push(rect);
      if (barW >= 46 || i === buckets.length - 1 || i === 0) {
        const cx = bx + bw / 2;
        children.push(svgEl("text", { x: cx, y: H - bottom - h - 14, "text-anchor": "middle", class: "strong" }, compact(b.events)));
        children.push(svgEl("text", { x: cx, y: H - bottom - h - 3, "text-anchor": "middle" }, bytes(b.bytes)));
        children.push(svgEl("text", { x: cx, y: H - bottom + 13, "text-anchor": "middle" }, clock(b.start, bucketMs < 60000)));
      }
    });
    const ws = x(windowStart);
    children.push(svgEl("line", { x1: ws, y1: 8, x2: ws, y2: H - bottom, class: "marker" }));
    children.push(svgEl("text", { x: Math.min(ws + 3, W - 80), y: 10 }, "window start"));
    const nx = x(now);
    children.push(svgEl("line", { x1: nx, y1: 8, x2: nx, y2: H - bottom, class: "marker" }));
    children.push(svgEl("text", { x: Math.max(nx - 3, 30), y: 10, "text-anchor": "end" }, "now"));
    if (!buckets.length) children.push(svgEl("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "no buckets yet"));
    svg.replaceChildren(...children);
    $("buckets-note").textContent = "events and bytes per " + duration(bucketMs) + " bucket, UTC";
    fillTable($("buckets").tBodies[0], buckets, (tr, b) => {
      cell(tr, utc(b.start), "mono"); cell(tr, String(b.events), "num"); cell(tr, bytes(b.bytes), "num");
    });
  }

  function renderPartitions(parts) {
    const sorted = [...parts].sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
    const maxLag = Math.max(1, ...sorted.map((p) => Number(p.lag) || 0));
    $("partitions-note").textContent = sorted.length ? "records behind the partition's end" : "no partition assigned";
    fillTable($("partitions").tBodies[0], sorted, (tr, p) => {
      cell(tr, p.topic + "/" + p.partition, "mono");
      cell(tr, String(p.next_offset), "num");
      cell(tr, String(p.high_watermark), "num");
      cell(tr, String(p.lag), "num");
      const td = cell(tr, p.paused ? "paused" : "");
      if (p.lag > 0) {
        const bar = document.createElement("span");
        bar.className = "lagbar";
        bar.style.width = Math.max(2, 60 * (p.lag / maxLag)) + "px";
        td.prepend(bar);
      }
    });
  }

  function renderLatency(metricsText) {
    const now = Date.now();
    const metrics = parseMetrics(metricsText);
    metricSamples.push({ t: now, metrics });
    while (metricSamples.length > 2 && metricSamples[1].t <= now - LATENCY_WINDOW_MS) metricSamples.shift();
    // Over the last minute once the page has a minute of samples; until then, since hotrow started.
    // A restarted hotrow starts its counters again: forget the samples of the one before.
    if (Object.entries(metrics).some(([kind, k]) => metricSamples[0].metrics[kind] && k.count < metricSamples[0].metrics[kind].count)) {
      metricSamples.splice(0, metricSamples.length - 1);
    }
    const base = metricSamples.length > 1 && now - metricSamples[0].t >= LATENCY_WINDOW_MS ? metricSamples[0] : null;
    const recent = diffMetrics(metrics, base && base.metrics);
    const kinds = Object.keys(metrics).sort();
    fillTable($("latency").tBodies[0], kinds, (tr, kind) => {
      const k = recent[kind];
      if (!k.count && !k.failed) tr.className = "zero";
      cell(tr, kind);
      cell(tr, String(k.count), "num");
      cell(tr, String(k.failed), "num");
      cell(tr, k.count ? seconds(k.sum / k.count) : "–", "num");
      cell(tr, seconds(quantile(0.5, k.buckets)), "num");
      cell(tr, seconds(quantile(0.99, k.buckets)), "num");
    });
    const span = base ? Math.round((now - base.t) / 1000) : 0;
    $("latency-note").textContent = kinds.length
      ? (base ? "over the last " + span + " s; " : "since hotrow started; ") + "quantiles estimated from the histogram buckets"
      : "no query metrics";
  }

  function renderReady(status, body) {
    const badge = $("ready");
    let j = {};
    try { j = JSON.parse(body); } catch (e) { /* not JSON */ }
    if (status === 200) {
      badge.className = "badge ok"; badge.textContent = "ready"; $("ready-reason").textContent = "";
    } else {
      badge.className = "badge bad"; badge.textContent = "not ready";
      $("ready-reason").textContent = j.reason || j.error || ("HTTP " + status);
    }
  }

  // ---- polling --------------------------------------------------------------------------------
  let timer = null, waiting = false;
  function wake() {
    if (waiting) return;
    clearTimeout(timer);
    timer = setTimeout(poll, 0);
  }
  // ---- the cluster view (GET /v1/cluster; shown only with cluster.peers) -------------------
  function partitionsText(byTopic) {
    const parts = [];
    for (const [topic, list] of Object.entries(byTopic || {})) parts.push(topic + " " + list.join(","));
    return parts.join("; ") || "none";
  }
  async function pollCluster() {
    try {
      const res = await api("/v1/cluster");
      if (!res.ok) return;
      const view = await res.json();
      if (!Array.isArray(view.instances)) { $("cluster-card").hidden = true; return; }
      $("cluster-card").hidden = false;
      $("cluster-note").textContent = view.complete
        ? "every partition served"
        : "incomplete: missing " + partitionsText(view.missing) + ", stale " + partitionsText(view.stale) +
          (view.unknown_topics ? ", partitions unknown for " + view.unknown_topics.join(", ") : "");
      fillTable($("cluster").querySelector("tbody"), view.instances, (tr, i) => {
        cell(tr, i.address + (i.self ? " (this one)" : ""));
        cell(tr, i.reachable ? "yes" : "no", i.reachable ? "" : "bad");
        cell(tr, !i.answered ? "–" : (i.ready ? "yes" : "no"), i.answered && !i.ready ? "bad" : "");
        cell(tr, i.answered ? partitionsText(i.stale) : "–");
        cell(tr, i.answered ? plain(i.lag) : "–", "num");
        cell(tr, i.error || "", "muted");
      });
      // Per partition: its owner and standbys with their lag, and who answers for it now.
      const holder = (h) => h.address + " " + plain(h.lag) + (h.serving ? "" : " (not serving)");
      fillTable($("cluster-partitions").querySelector("tbody"), view.by_partition || [], (tr, p) => {
        tr.dataset.partition = p.topic + ":" + p.partition;
        cell(tr, p.topic + ":" + p.partition);
        const owner = p.owner;
        cell(tr, owner ? owner.address + (owner.serving ? "" : owner.rebuilding ? " (rebuilding)" : " (not serving)") : "none",
          owner && owner.serving ? "" : "bad");
        cell(tr, owner ? plain(owner.lag) : "–", "num");
        cell(tr, (p.standbys || []).map(holder).join(", ") || "none");
        cell(tr, p.served_by ? p.served_by + (p.from_standby ? " (standby)" : "") : "nobody", p.served_by ? "" : "bad")
          .title = (owner && owner.why) || "";
      });
    } catch (e) { /* the main poll reports what is wrong */ }
  }

  async function poll() {
    timer = null;
    if (document.visibilityState === "hidden") return;  // visibilitychange wakes us
    waiting = true;
    const started = Date.now();
    let authNeeded = false;
    try {
      pollCluster();
      const [stats, ready, metrics] = await Promise.all([api("/v1/stats"), api("/readyz"), api("/metrics")]);
      if (!stats.ok) throw new Error("/v1/stats answered " + stats.status + ": " + (await errorText(stats)));
      const statsJson = await stats.json();
      renderStats(statsJson);
      for (const listener of statsListeners) listener(statsJson);
      renderReady(ready.status, await ready.text());
      if (metrics.ok) renderLatency(await metrics.text());
      $("error-banner").hidden = true;
      document.querySelector("main").classList.remove("stale");
      $("updated").textContent = "updated " + new Date().toLocaleTimeString();
    } catch (e) {
      if (e instanceof Unauthorized) {
        authNeeded = true;
        askForToken(e.message);
      } else {
        $("error-banner").hidden = false;
        document.querySelector("main").classList.add("stale");
        $("error-banner").textContent = "Cannot read the API at " + location.origin + ": " + e.message + ". Retrying every second.";
        $("ready").className = "badge unknown"; $("ready").textContent = "unreachable";
      }
    } finally {
      waiting = false;
    }
    // A 401 waits for a token instead of polling again; everything else comes back within a second.
    if (!authNeeded) timer = setTimeout(poll, Math.max(0, POLL_MS - (Date.now() - started)));
  }
  document.addEventListener("visibilitychange", () => { if (document.visibilityState === "visible" && !timer) wake(); });

  // ---- the query form ---------------------------------------------------------------------------
  const FIELDS = {
    latest: ["id", "n"], range: ["id", "from", "to", "limit", "order"],
    "index-latest": ["field", "value", "n"], "index-range": ["field", "value", "from", "to", "limit", "order"],
  };
  function showFields() {
    const wanted = FIELDS[$("q-kind").value];
    for (const label of document.querySelectorAll("#query-form label[data-for]")) {
      const shown = wanted.includes(label.dataset.for);
      label.hidden = !shown;
      label.querySelector("input, select").disabled = !shown;
    }
    $("q-id").required = wanted.includes("id");
    $("q-field").required = $("q-value").required = wanted.includes("field");
  }
  $("q-kind").addEventListener("change", showFields);
  showFields();

  function queryPath() {
    const kind = $("q-kind").value;
    const enc = encodeURIComponent;
    const base = kind.startsWith("index")
      ? "/v1/index/" + enc($("q-field").value.trim()) + "/" + enc($("q-value").value)
      : "/v1/events/" + enc($("q-id").value);
    const params = new URLSearchParams();
    if (kind.endsWith("latest")) {
      params.set("n", $("q-n").value || "10");
      return base + "/latest?" + params;
    }
    const now = Date.now();
    params.set("from", $("q-from").value.trim() || String(now - 600000));
    params.set("to", $("q-to").value.trim() || String(now + 60000));
    if ($("q-limit").value) params.set("limit", $("q-limit").value);
    params.set("order", $("q-order").value);
    return base + "?" + params;
  }

  $("query-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const path = queryPath();
    const status = $("q-status"), table = $("q-results");
    status.className = "muted"; status.textContent = "running…";
    $("q-curl").textContent = "curl '" + location.origin + path + "'";
    $("q-run").disabled = true;
    const started = performance.now();
    try {
      const res = await api(path);
      const ms = performance.now() - started;
      if (!res.ok) {
        table.hidden = true;
        status.className = "error";
        status.textContent = "HTTP " + res.status + ": " + (await errorText(res));
        return;
      }
      const body = await res.json();
      const events = Array.isArray(body.events) ? body.events : [];
      fillTable(table.tBodies[0], events, (tr, e) => {
        cell(tr, utc(e.ts), "mono");
        cell(tr, e.event_id, "mono");
        cell(tr, e.topic);
        cell(tr, String(e.partition), "num");
        cell(tr, String(e.offset), "num");
        const payload = JSON.stringify(e.payload);
        cell(tr, payload, "payload").title = payload;
      });
      table.hidden = events.length === 0;
      status.className = "";
      status.textContent = events.length + " event" + (events.length === 1 ? "" : "s") + " in " + ms.toFixed(0) + " ms" +
        (body.complete === false ? " (incomplete: partitions " + JSON.stringify(body.missing) + " unreachable)" : "");
    } catch (e) {
      table.hidden = true;
      status.className = "error";
      if (e instanceof Unauthorized) { status.textContent = "HTTP 401: " + e.message; askForToken(e.message); }
      else status.textContent = "The query failed: " + e.message;
    } finally {
      $("q-run").disabled = false;
    }
  });

  // For status_page_devices.js, joined after this script: the API, the helpers, and each poll's
  // stats.
  const statsListeners = [];
  window.hotrowPage = {
    $, api, errorText, Unauthorized, askForToken, cell, fillTable, svgEl, utc, compact, clock,
    onStats: (listener) => statsListeners.push(listener),
    hasToken: () => token() !== "",
    streamAddress,
  };

  poll();
})();
