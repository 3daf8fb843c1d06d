// The live streams of the HTTP API (CONTRACT.md "Live"), as server-sent events:
//   GET /v1/events/{id}/stream   GET /v1/latest/stream[?prefix=P]
//   GET /v1/index/{field}/{value}/stream
// each with `?after=POSITION` or a Last-Event-ID header to resume. The hub (live/stream_hub.h)
// decides what a stream carries; this file only turns a subscription into SSE text.
//
// Threads: a stream is written by the connection's own thread (cpp-httplib 0.11.4 hands a content
// provider no socket to take over, and under TLS the connection's state lives in its stream
// object), which leaves the connection threads' count when the stream starts
// (BoundedTaskQueue::StreamBegins): streams never take the threads that answer queries, and are
// bounded apart by http.max_streams (docs/ARCHITECTURE.md, "Live streams").
//
// Messages:
//   retry: 1000
//   event: open     id: POS  data: {"stream": ..., "resumed": bool, "gap": bool, ...}
//   (no event:)     id: POS  data: E                      one per event, E as the queries write it
//   event: partitions id: POS data: {"added": {T: {P: FROM}}, "removed": {T: {P: NEXT}}}
//   : keep-alive                                          every http.stream keep-alive (15 s)
//   event: closed   id: POS  data: {"reason": "..."}      then the answer ends

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/coverage.h"
#include "http/query_params.h"
#include "http/server_impl.h"
#include "http/task_queue.h"
#include "keying/row_value.h"
#include "live/position.h"
#include "live/stream_hub.h"
#include "wire/event_json.h"
#include "wire/url_codec.h"

namespace hotrow::http {
namespace {

// What one stream needs after its handler returned: the subscription, where the client stands,
// and what it still has to be told.
struct StreamJob {
  HttpServer::Impl* impl = nullptr;
  live::StreamHub* hub = nullptr;
  std::shared_ptr<live::Subscription> subscription;
  live::StreamPosition position;
  std::string open_data;  // the open message's data, sent first
  bool opened = false;
  std::vector<live::StreamItem> batch;
  std::string text;
};

void AppendMessage(const char* event, const std::string& id, const std::string& data,
                   std::string* out) {
  if (event != nullptr) {
    out->append("event: ");
    out->append(event);
    out->push_back('\n');
  }
  out->append("id: ");
  out->append(id);
  out->append("\ndata: ");
  out->append(data);  // one line: event JSON never holds a raw line break (wire/event_json.h)
  out->append("\n\n");
}

// Writes what is ready, or a keep-alive comment after a quiet interval. False: the client is gone.
bool WriteStream(StreamJob& job, httplib::DataSink& sink) {
  job.text.clear();
  if (!job.opened) {
    job.opened = true;
    job.text = "retry: 1000\n";
    AppendMessage("open", job.position.ToString(), job.open_data, &job.text);
    return sink.write(job.text.data(), job.text.size());
  }
  const auto deadline =
      HttpClock::now() + std::chrono::milliseconds(job.impl->options.stream_keepalive_ms);
  job.batch.clear();
  const live::Subscription::State state = job.subscription->Take(deadline, &job.batch);
  if (!job.batch.empty()) {
    job.position.made_ms = job.hub->NowMs();
    uint64_t events = 0;
    for (const live::StreamItem& item : job.batch) {
      if (item.change != nullptr) {
        // A partition this instance began or stopped serving as owner: below the offset given,
        // nothing more is this stream's.
        for (const auto& changed : {item.change->added, item.change->removed}) {
          for (const auto& [tp, next] : changed) job.position.Advance(tp, next - 1);
        }
        AppendMessage("partitions", job.position.ToString(), item.change->ToJson(), &job.text);
        continue;
      }
      const live::LiveEvent& e = *item.event;
      job.position.Advance(e.tp, e.offset);
      AppendMessage(nullptr, job.position.ToString(), e.json, &job.text);
      ++events;
    }
    job.hub->CountSent(events);
    job.batch.clear();
  }
  if (state != live::Subscription::State::kOpen) {
    std::string data = "{\"reason\":";
    wire::AppendJsonString(job.subscription->reason(), &data);
    data.push_back('}');
    AppendMessage("closed", job.position.ToString(), data, &job.text);
    const bool ok = sink.write(job.text.data(), job.text.size());
    if (ok) sink.done();
    return ok;
  }
  if (job.text.empty()) job.text = ": keep-alive\n\n";
  return sink.write(job.text.data(), job.text.size());
}

}  // namespace

bool HttpServer::Impl::StreamRoute(const httplib::Request& req,
                                   const std::vector<std::string>& s, std::string_view raw_query,
                                   httplib::Response& res) {
  if (s.empty() || s.back() != "stream" || s.size() < 3 || s[0] != "v1") return false;
  live::StreamSpec spec;
  if (s.size() == 4 && s[1] == "events") {
    spec.kind = live::StreamSpec::Kind::kId;
    spec.id = s[2];
  } else if (s.size() == 3 && s[1] == "latest") {
    spec.kind = live::StreamSpec::Kind::kLatest;
  } else if (s.size() == 5 && s[1] == "index") {
    spec.kind = live::StreamSpec::Kind::kIndex;
    spec.field = s[2];
    spec.value = s[3];
  } else {
    return false;
  }
  if (backend.hub == nullptr) {
    SetError(res, 404, "live streams are not served by this server");
    return true;
  }
  if (spec.kind == live::StreamSpec::Kind::kId) {
    if (Status st = CheckQueryId(spec.id); !st.ok()) return SetError(res, 400, st.message()), true;
  }
  Result<std::vector<wire::QueryParam>> params = wire::ParseQueryString(raw_query);
  if (!params.ok()) return SetError(res, 400, params.status().message()), true;
  std::string after_text;
  bool have_after = false, have_prefix = false, local = false, have_local = false;
  for (const auto& [name, value] : *params) {
    bool* seen = nullptr;
    if (name == "after") {
      seen = &have_after;
      after_text = value;
    } else if (name == "prefix" && spec.kind == live::StreamSpec::Kind::kLatest) {
      seen = &have_prefix;
      spec.prefix = value;
    } else if (name == "local") {
      seen = &have_local;
      if (value != "true" && value != "false") {
        return SetError(res, 400, "local must be true or false, got " + QuoteClientText(value)),
               true;
      }
      local = value == "true";
    } else {
      return SetError(res, 400,
                      "unknown parameter " + QuoteClientText(name) + " for a stream; it takes " +
                          (spec.kind == live::StreamSpec::Kind::kLatest ? "prefix, " : "") +
                          "after (or a Last-Event-ID header)"),
             true;
    }
    if (*seen) {
      return SetError(res, 400, "parameter " + QuoteClientText(name) + " is given more than once"),
             true;
    }
    *seen = true;
  }
  if (spec.prefix.size() > keying::kMaxIdSize) {
    return SetError(res, 400, "prefix over " + std::to_string(keying::kMaxIdSize) + " bytes"), true;
  }
  // ?after= wins over the header: a client that names a position means it.
  if (!have_after && req.has_header("Last-Event-ID")) {
    after_text = req.get_header_value("Last-Event-ID");
    have_after = !after_text.empty();
  }
  std::optional<live::StreamPosition> after;
  if (have_after) {
    Result<live::StreamPosition> parsed = live::ParseStreamPosition(after_text);
    if (!parsed.ok()) return SetError(res, 400, parsed.status().message()), true;
    after = std::move(parsed).value();
  }
  if (stopping.load()) return SetError(res, 503, "the server is stopping"), true;

  Result<live::StreamStart> started =
      backend.hub->Subscribe(spec, after ? &*after : nullptr, nullptr);
  if (!started.ok()) {
    return SetError(res, HttpStatusOf(started.status()), started.status().message()), true;
  }
  auto job = std::make_shared<StreamJob>();
  job->impl = this;
  job->hub = backend.hub;
  job->subscription = started->subscription;
  job->position = after ? *after : job->subscription->start();
  job->position.made_ms = backend.hub->NowMs();
  std::string& open = job->open_data;
  open = "{\"stream\":";
  switch (spec.kind) {
    case live::StreamSpec::Kind::kId:
      open += "\"events\",\"event_id\":";
      wire::AppendJsonString(spec.id, &open);
      break;
    case live::StreamSpec::Kind::kLatest:
      open += "\"latest\",\"prefix\":";
      wire::AppendJsonString(spec.prefix, &open);
      break;
    case live::StreamSpec::Kind::kIndex:
      open += "\"index\",\"field\":";
      wire::AppendJsonString(spec.field, &open);
      open += ",\"value\":";
      wire::AppendJsonString(spec.value, &open);
      break;
  }
  open += ",\"resumed\":";
  open += after ? "true" : "false";
  open += ",\"gap\":";
  open += started->gap ? "true" : "false";
  if (started->gap) {
    open += ",\"warning\":\"events after the position may be gone: it is older than the hot "
            "window, or events it was owed were dropped with an expired bucket\"";
  }
  if (started->replay_truncated) {
    open += ",\"truncated\":true";
  }
  open += ",\"window_start\":" + std::to_string(backend.store->WindowStartMs());
  if (backend.cluster != nullptr && backend.cluster->enabled()) {
    // A stream carries what this instance stores: its serving partitions. It does not merge the
    // peers' streams; it says which of the group's partitions it cannot stream, as answers do,
    // and a client that wants them all subscribes to each instance (GET /v1/cluster lists them).
    const std::vector<store::TopicPartition> serving = backend.cluster->Local().Serving();
    cluster::Partitions missing;
    for (const store::TopicPartition& tp : backend.cluster->KnownPartitions().partitions) {
      if (!std::binary_search(serving.begin(), serving.end(), tp)) missing.push_back(tp);
    }
    open += ",\"partitions\":";
    cluster::AppendPartitionsJson(serving, &open);
    if (!local) {
      open += ",\"complete\":";
      open += missing.empty() ? "true" : "false";
      open += ",\"missing\":";
      cluster::AppendPartitionsJson(missing, &open);
    }
  }
  open += "}";

  {
    std::lock_guard lock(streams_mu);
    streams.insert(job->subscription);
  }
  if (stopping.load()) job->subscription->Close("the server is stopping");
  // This thread writes the stream from now on: it leaves the connection threads' count, so a
  // new connection gets a thread of its own while the stream lasts.
  BoundedTaskQueue* queue = task_queue.load();
  if (queue != nullptr) queue->StreamBegins();
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_header("Connection", "close");
  res.set_chunked_content_provider(
      "text/event-stream",
      [job](size_t, httplib::DataSink& sink) { return WriteStream(*job, sink); },
      [job, queue](bool) {
        job->hub->Unsubscribe(job->subscription);
        {
          std::lock_guard lock(job->impl->streams_mu);
          job->impl->streams.erase(job->subscription);
        }
        if (queue != nullptr) queue->StreamEnds();
      });
  return true;
}

void HttpServer::Impl::CloseStreams(const std::string& reason) {
  std::lock_guard lock(streams_mu);
  for (const auto& s : streams) s->Close(reason);
}

}  // namespace hotrow::http
