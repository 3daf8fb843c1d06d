// The live streams of the HTTP API (CONTRACT.md "Live"), as server-sent events:
//   GET /v1/events/{id}/stream   GET /v1/latest/stream[?prefix=P]
//   GET /v1/index/{field}/{value}/stream
// each with `?after=POSITION` or a Last-Event-ID header to resume. The hub (live/stream_hub.h)
// decides what a stream carries; this file only turns a subscription into SSE text.
//
// Threads: none of its own. A stream is opened on a worker (the resume reads the store), then
// written by the transport's I/O thread whenever its subscription wakes it (http/exchange.h,
// EventStream); between messages it holds its connection's buffer and its subscription's queue,
// no thread. Streams are bounded by http.max_streams (docs/ARCHITECTURE.md, "Live streams").
//
// Messages:
//   retry: 1000
//   event: open     id: POS  data: {"stream": ..., "resumed": bool, "gap": bool, ...}
//   (no event:)     id: POS  data: E                      one per event, E as the queries write it
//   event: partitions id: POS data: {"added": {T: {P: FROM}}, "removed": {T: {P: NEXT}}}
//   : keep-alive                                          every http.stream keep-alive (15 s)
//   event: closed   id: POS  data: {"reason": "..."}      then the answer ends

#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "access/bearer_token.h"
#include "access/credentials.h"
#include "cluster/cluster.h"
#include "cluster/coverage.h"
#include "http/query_params.h"
#include "http/server_impl.h"
#include "keying/row_value.h"
#include "live/position.h"
#include "live/stream_hub.h"
#include "wire/event_json.h"
#include "wire/url_codec.h"

namespace hotrow::http {
namespace {

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

// One stream as the transport writes it (http/exchange.h, EventStream): the subscription, where
// the client stands, and what it still has to be told. Its messages are taken without waiting;
// the subscription wakes the transport when it has more.
class SseStream final : public EventStream {
 public:
  SseStream(HttpServer::Impl* impl, std::shared_ptr<live::Subscription> subscription,
            live::StreamPosition position, std::string open_data)
      : impl_(impl),
        hub_(impl->backend.hub),
        subscription_(std::move(subscription)),
        position_(std::move(position)),
        open_data_(std::move(open_data)) {}

  void SetWaker(std::function<void()> wake) override { subscription_->SetWaker(std::move(wake)); }

  bool Next(std::string* out) override {
    if (!opened_) {
      opened_ = true;
      out->append("retry: 1000\n");
      AppendMessage("open", position_.ToString(), open_data_, out);
      return true;
    }
    batch_.clear();
    const live::Subscription::State state =
        subscription_->Take(std::chrono::steady_clock::time_point::min(), &batch_);
    if (!batch_.empty()) {
      position_.made_ms = hub_->NowMs();
      uint64_t events = 0;
      for (const live::StreamItem& item : batch_) {
        if (item.change != nullptr) {
          // A partition this instance began or stopped serving as owner: below the offset given,
          // nothing more is this stream's.
          for (const auto& changed : {item.change->added, item.change->removed}) {
            for (const auto& [tp, next] : changed) position_.Advance(tp, next - 1);
          }
          AppendMessage("partitions", position_.ToString(), item.change->ToJson(), out);
          continue;
        }
        const live::LiveEvent& e = *item.event;
        position_.Advance(e.tp, e.offset);
        AppendMessage(nullptr, position_.ToString(), e.json, out);
        ++events;
      }
      hub_->CountSent(events);
      batch_.clear();
    }
    if (state == live::Subscription::State::kOpen) return true;
    std::string data = "{\"reason\":";
    wire::AppendJsonString(subscription_->reason(), &data);
    data.push_back('}');
    AppendMessage("closed", position_.ToString(), data, out);
    return false;
  }

  void KeepAlive(std::string* out) override { out->append(": keep-alive\n\n"); }

  void Closed() override {
    subscription_->SetWaker(nullptr);
    hub_->Unsubscribe(subscription_);
    std::lock_guard lock(impl_->streams_mu);
    impl_->streams.erase(subscription_);
  }

  int64_t keepalive_ms() const override { return impl_->options.stream_keepalive_ms; }

 private:
  HttpServer::Impl* const impl_;
  live::StreamHub* const hub_;
  const std::shared_ptr<live::Subscription> subscription_;
  live::StreamPosition position_;
  const std::string open_data_;
  bool opened_ = false;
  std::vector<live::StreamItem> batch_;
};

}  // namespace

bool HttpServer::Impl::StreamRoute(const Request& req, const std::vector<std::string>& s,
                                   std::string_view raw_query, Response& res) {
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
  std::string after_text, access_token;
  bool have_after = false, have_prefix = false, local = false, have_local = false,
       have_access_token = false;
  for (const auto& [name, value] : *params) {
    bool* seen = nullptr;
    if (name == "access_token") {
      // Judged at admission (AdmitByStreamToken); here only its tag is looked up.
      seen = &have_access_token;
      access_token = value;
    } else if (name == "after") {
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
                          "after (or a Last-Event-ID header) and access_token"),
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

  // The stream is tagged with the bearer token it was opened with, or the one its stream token
  // was issued for: a reload that retires that token ends it either way.
  std::string tag = StreamTag(req.get_header_value("Authorization"));
  if (tag.empty() && have_access_token && backend.auth != nullptr) {
    if (stream_tokens.Check(access_token, CurrentStreamTag(), &tag) != StreamTokens::Verdict::kOk) {
      // Admitted a moment ago on the I/O thread; expired or retired since.
      SetError(res, 401,
               "the stream token is no longer valid: ask POST /v1/stream-tokens for "
               "another");
      res.set_header("WWW-Authenticate", "Bearer");
      return true;
    }
  }
  Result<live::StreamStart> started =
      backend.hub->Subscribe(spec, after ? &*after : nullptr, nullptr, std::move(tag));
  if (!started.ok()) {
    return SetError(res, HttpStatusOf(started.status()), started.status().message()), true;
  }
  live::StreamPosition position = after ? *after : started->subscription->start();
  position.made_ms = backend.hub->NowMs();
  std::string open;
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
    open +=
        ",\"warning\":\"events after the position may be gone: it is older than the hot "
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

  const std::shared_ptr<live::Subscription>& subscription = started->subscription;
  {
    std::lock_guard lock(streams_mu);
    streams.insert(subscription);
  }
  if (stopping.load()) subscription->Close("the server is stopping");
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_event_stream(
      std::make_shared<SseStream>(this, subscription, std::move(position), std::move(open)));
  return true;
}

// A stream opened with a bearer token is tagged with a digest of it (never the token itself), so
// that a reload which no longer accepts that token ends it.
std::string HttpServer::Impl::StreamTag(const std::string& authorization) {
  std::string_view token;
  if (authorization.empty() || !access::ParseBearer(authorization, &token)) return "";
  return "token:" + std::to_string(std::hash<std::string_view>{}(token));
}

std::string HttpServer::Impl::CurrentStreamTag() const {
  if (backend.credentials == nullptr) return "";
  const std::shared_ptr<const access::CredentialsSnapshot> now = backend.credentials->Current();
  return now == nullptr || now->token.empty() ? "" : StreamTag("Bearer " + now->token);
}

std::optional<bool> HttpServer::Impl::AdmitByStreamToken(const Request& req, Response& res) {
  if (req.has_header("Authorization") || (req.method != "GET" && req.method != "HEAD")) {
    return std::nullopt;
  }
  Result<wire::RequestTarget> target = wire::SplitRequestTarget(req.target);
  if (!target.ok()) return std::nullopt;
  const std::vector<std::string>& s = target->segments;
  // Only a stream's path: on any other the token is not looked at, and the request is judged as
  // one without credentials (401).
  if (s.size() < 3 || s[0] != "v1" || s.back() != "stream") return std::nullopt;
  Result<std::vector<wire::QueryParam>> params = wire::ParseQueryString(target->raw_query);
  if (!params.ok()) return std::nullopt;
  const std::string* token = nullptr;
  for (const auto& [name, value] : *params) {
    if (name == "access_token") token = &value;
  }
  if (token == nullptr) return std::nullopt;
  std::string parent;
  const StreamTokens::Verdict verdict = stream_tokens.Check(*token, CurrentStreamTag(), &parent);
  if (verdict == StreamTokens::Verdict::kOk) {
    backend.metrics->RecordAuth(AuthOutcomeName(AuthOutcome::kOk));
    return true;
  }
  backend.metrics->RecordAuth(AuthOutcomeName(AuthOutcome::kWrong));
  const char* why = verdict == StreamTokens::Verdict::kExpired
                        ? "the stream token has expired: ask POST /v1/stream-tokens for another"
                    : verdict == StreamTokens::Verdict::kParentRetired
                        ? "the stream token was issued for a bearer token no longer accepted"
                        : "wrong stream token";
  SetError(res, 401, why);
  res.set_header("WWW-Authenticate", "Bearer");
  return false;
}

bool HttpServer::Impl::StreamTokenRoute(const Request& req, const std::vector<std::string>& s,
                                        Response& res) {
  if (s.size() != 2 || s[0] != "v1" || s[1] != "stream-tokens") return false;
  if (req.method != "POST") {
    SetError(
        res, 405,
        "method " + QuoteClientText(req.method) + " is not allowed on /v1/stream-tokens; use POST");
    return true;
  }
  if (backend.auth == nullptr) {
    SetError(res, 404, "this server has no http.token_file: its streams need no token");
    return true;
  }
  // Admitted with the bearer token (a stream token opens streams only): its streams' tag.
  const std::string tag = StreamTag(req.get_header_value("Authorization"));
  Result<StreamTokens::Issued> issued = stream_tokens.Issue(tag);
  if (!issued.ok()) {
    SetError(res, HttpStatusOf(issued.status()), issued.status().message());
    return true;
  }
  std::string body = "{\"token\":";
  wire::AppendJsonString(issued->token, &body);
  body += ",\"ttl_ms\":" + std::to_string(issued->ttl_ms) + "}";
  SetJson(res, 200, std::move(body));
  res.set_header("Cache-Control", "no-store");
  return true;
}

void HttpServer::Impl::EndStreamsOfRetiredTokens() {
  if (backend.hub == nullptr || backend.credentials == nullptr) return;
  const std::string current = CurrentStreamTag();
  if (current.empty() && backend.auth == nullptr) return;
  const size_t ended = backend.hub->CloseWhere(
      [&current](const live::Subscription& s) { return !s.tag().empty() && s.tag() != current; },
      "the token this stream was opened with is no longer accepted (the token file changed); "
      "open it again with the new token");
  if (ended > 0) spdlog::info("http: ended {} stream(s) opened with a retired token", ended);
}

void HttpServer::Impl::CloseStreams(const std::string& reason) {
  std::lock_guard lock(streams_mu);
  for (const auto& s : streams) s->Close(reason);
}

}  // namespace hotrow::http
