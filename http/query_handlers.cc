// The query handlers of the HTTP API: latest, range and the streamed scan.

#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <utility>

#include "http/query_params.h"
#include "http/server_impl.h"
#include "query/small_query.h"
#include "wire/event_json.h"

namespace hotrow::http {

namespace {
constexpr size_t kScanFlushBytes = 32 << 10;
constexpr auto kScanFlushInterval = std::chrono::milliseconds(50);
}  // namespace

void HttpServer::Impl::Busy(Response& res, QueryKind kind, const std::string& why) {
  backend.metrics->RecordQuery(kind, QueryOutcome::kBusy, 0);
  res.set_header("Retry-After", "1");
  SetError(res, 503, why);
}

// Answers a bad parameter, or a query's failure.
void HttpServer::Impl::Fail(Response& res, QueryKind kind, const Status& st) {
  backend.metrics->RecordQuery(kind, OutcomeOf(st), 0);
  const int status = HttpStatusOf(st);
  if (status == 503) res.set_header("Retry-After", "1");
  if (status >= 500) Warn(std::string(QueryKindName(kind)) + " query failed: " + st.ToString());
  SetError(res, status, status == 500 ? "query failed: " + st.ToString() : st.message());
}

void HttpServer::Impl::Latest(const std::string& id, std::string_view raw_query,
                              Response& res) {
  const auto start = HttpClock::now();
  Result<LatestParams> params = ParseLatestParams(raw_query);
  if (!params.ok()) return Fail(res, QueryKind::kLatest, params.status());
  if (Status st = CheckQueryId(id); !st.ok()) return Fail(res, QueryKind::kLatest, st);
  std::vector<query::Event> events;
  if (OnIoThread()) {
    // The I/O thread answers what the cache holds, and leaves a read of the store to a worker.
    if (!backend.engine->LatestCached(id, params->n, &events)) return res.Defer(WorkLane::kClient);
  } else {
    QuerySlot slot(this);
    if (!slot.acquired())
      return Busy(res, QueryKind::kLatest, "too many queries at once; retry later");
    Result<std::vector<query::Event>> read = backend.engine->Latest(id, params->n);
    if (!read.ok()) return Fail(res, QueryKind::kLatest, read.status());
    events = std::move(read).value();
  }
  std::string body = OpenEventsBody(id);
  bool first = true;
  for (const auto& e : events) {
    if (!first) body.push_back(',');
    first = false;
    wire::AppendEventJson(e, &body);
  }
  body.append("]}");
  SetJson(res, 200, std::move(body));
  backend.metrics->RecordQuery(QueryKind::kLatest, QueryOutcome::kOk, SecondsSince(start));
}

void HttpServer::Impl::Range(const std::string& id, std::string_view raw_query,
                             Response& res) {
  const auto start = HttpClock::now();
  Result<RangeParams> params = ParseRangeParams(raw_query);
  if (!params.ok()) return Fail(res, QueryKind::kRange, params.status());
  if (Status st = CheckQueryId(id); !st.ok()) return Fail(res, QueryKind::kRange, st);
  if (params->limit > query::kSmallQueryLimit) return StreamRange(id, *params, res);
  QuerySlot slot(this);
  if (!slot.acquired())
    return Busy(res, QueryKind::kRange, "too many queries at once; retry later");
  std::string body = OpenEventsBody(id);
  bool first = true;
  Status st = backend.engine->RangeTo(id, params->from_ms, params->to_ms, params->limit,
                                      params->order, [&](const query::Event& e) {
                                        if (!first) body.push_back(',');
                                        first = false;
                                        wire::AppendEventJson(e, &body);
                                        return !stopping.load(std::memory_order_relaxed);
                                      });
  if (!st.ok()) return Fail(res, QueryKind::kRange, st);
  if (stopping.load()) {
    return Fail(res, QueryKind::kRange, Status::Busy("the server is shutting down"));
  }
  body.append("]}");
  SetJson(res, 200, std::move(body));
  backend.metrics->RecordQuery(QueryKind::kRange, QueryOutcome::kOk, SecondsSince(start));
}

// A range that may be large is streamed in chunks (about kScanFlushBytes each) as the engine
// produces it, rather than built whole: the answer starts at once and memory stays bounded. An
// error after the first byte ends the answer without its final chunk, as for scans.
void HttpServer::Impl::StreamRange(const std::string& id, const RangeParams& params,
                                   Response& res) {
  auto slot = std::make_shared<QuerySlot>(this);
  if (!slot->acquired()) {
    return Busy(res, QueryKind::kRange, "too many queries at once; retry later");
  }
  auto start = HttpClock::now();
  auto recorded = std::make_shared<bool>(false);
  res.status = 200;
  res.set_chunked_content_provider(
      "application/json",
      [this, slot, id, params, start, recorded](DataSink& sink) {
        if (*recorded) return false;
        *recorded = true;
        std::string buffer = OpenEventsBody(id);
        buffer.reserve(kScanFlushBytes + 4096);
        bool first = true, write_failed = false;
        // The pool threads encode each event as they read it, each behind a comma, so that this
        // thread writes out the text of many events at once; the answer's first comma is dropped.
        const query::EventEncoder encode = [](const query::Event& e, std::string* out) {
          out->push_back(',');
          wire::AppendEventJson(e, out);
        };
        Status st = backend.engine->RangeEncoded(
            id, params.from_ms, params.to_ms, params.limit, params.order, encode,
            [&](std::string_view text, int64_t /*events*/) {
              if (stopping.load(std::memory_order_relaxed)) return false;
              if (first) text.remove_prefix(1);
              first = false;
              if (text.size() >= kScanFlushBytes) {
                // A bucket's text goes out as it is, without a copy, behind what is buffered.
                write_failed = (!buffer.empty() && !sink.write(buffer.data(), buffer.size())) ||
                               !sink.write(text.data(), text.size());
                buffer.clear();
                return !write_failed;
              }
              buffer.append(text);
              if (buffer.size() < kScanFlushBytes) return true;
              write_failed = !sink.write(buffer.data(), buffer.size());
              buffer.clear();
              return !write_failed;
            });
        if (write_failed || stopping.load()) {
          backend.metrics->RecordQuery(QueryKind::kRange, QueryOutcome::kCancelled, 0);
          return false;
        }
        if (!st.ok()) {
          backend.metrics->RecordQuery(QueryKind::kRange, OutcomeOf(st), 0);
          Warn("range failed after its first byte: " + st.ToString());
          return false;
        }
        buffer.append("]}\n");
        if (!sink.write(buffer.data(), buffer.size())) return false;
        sink.done();
        backend.metrics->RecordQuery(QueryKind::kRange, QueryOutcome::kOk, SecondsSince(start));
        return true;
      });
}

std::string HttpServer::Impl::OpenEventsBody(const std::string& id) {
  std::string body = "{\"event_id\":";
  wire::AppendJsonString(id, &body);
  body.append(",\"events\":[");
  return body;
}

void HttpServer::Impl::Scan(std::string_view raw_query, Response& res) {
  Result<ScanParams> params = ParseScanParams(raw_query);
  if (!params.ok()) return Fail(res, QueryKind::kScan, params.status());
  auto job = std::make_shared<ScanJob>(this, params->from_ms, params->to_ms, params->limit);
  if (!job->slot.acquired()) {
    job->recorded = true;
    return Busy(res, QueryKind::kScan, "too many queries at once; retry later");
  }
  res.status = 200;
  res.set_chunked_content_provider("application/x-ndjson",
                                   [job](DataSink& sink) {
                                     return job->impl->StreamScan(*job, sink);
                                   });
}

// Runs the whole scan on the first call of the content provider, writing as it goes. Returns
// false (no final chunk) when the answer is cut short.
bool HttpServer::Impl::StreamScan(ScanJob& job, DataSink& sink) {
  if (job.started) return false;  // never expected: the first call ends with done() or false
  job.started = true;
  std::string buffer;
  buffer.reserve(kScanFlushBytes + 4096);
  auto last_flush = HttpClock::now();
  bool write_failed = false;
  auto flush = [&] {
    if (buffer.empty() || write_failed) return !write_failed;
    if (!sink.write(buffer.data(), buffer.size())) write_failed = true;
    buffer.clear();
    last_flush = HttpClock::now();
    return !write_failed;
  };
  auto finish = [&](QueryOutcome outcome, const std::string& error) {
    job.recorded = true;
    backend.metrics->RecordQuery(QueryKind::kScan, outcome, SecondsSince(job.start));
    if (error.empty()) {
      if (!flush()) return false;
      sink.done();
      return true;
    }
    buffer.append(ErrorBody(error));
    buffer.push_back('\n');
    flush();
    return false;
  };
  try {
    // The pool threads encode each event as they read it; this thread only gathers their chunks
    // and writes them out.
    const query::EventEncoder encode = [](const query::Event& e, std::string* out) {
      wire::AppendEventJson(e, out);
      out->push_back('\n');
    };
    Status st = backend.engine->ScanEncoded(
        job.from_ms, job.to_ms, job.limit, encode, [&](std::string_view text, int64_t /*events*/) {
          if (stopping.load(std::memory_order_relaxed)) return false;
          if (buffer.empty() && text.size() >= kScanFlushBytes) {
            // A whole chunk goes out as it is, without a copy.
            if (!sink.write(text.data(), text.size())) write_failed = true;
            last_flush = HttpClock::now();
            return !write_failed;
          }
          buffer.append(text);
          if (buffer.size() >= kScanFlushBytes ||
              HttpClock::now() - last_flush >= kScanFlushInterval) {
            return flush();
          }
          return true;
        });
    if (write_failed) {
      job.recorded = true;
      backend.metrics->RecordQuery(QueryKind::kScan, QueryOutcome::kCancelled, 0);
      return false;
    }
    if (stopping.load()) return finish(QueryOutcome::kCancelled, "the server is shutting down");
    if (!st.ok()) {
      if (!st.IsBusy()) Warn("scan failed: " + st.ToString());
      return finish(OutcomeOf(st), "scan failed: " + st.ToString());
    }
    return finish(QueryOutcome::kOk, "");
  } catch (const std::exception& e) {
    Warn(std::string("scan failed: ") + e.what());
    return finish(QueryOutcome::kError, std::string("scan failed: ") + e.what());
  }
}

}  // namespace hotrow::http
