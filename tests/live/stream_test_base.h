#pragma once

// The fixture of the live streams' in-process tests (stream_test.cc, stream_slow_client_test.cc):
// a real HttpServer on loopback over a real RocksDB store, and an SSE client on its own thread.
// Events are written with EventStore::Write, the call ingestion makes, so the hub is fed exactly
// as in a running service.

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "access/credentials.h"
#include "common/clock.h"
#include "http/auth.h"
#include "http/metrics.h"
#include "http/server.h"
#include "live/stream_hub.h"
#include "query/query_engine.h"
#include "store/event_store.h"
#include "tests/http/http_api_test_base.h"
#include "tests/support/event_gen.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::live {

using nlohmann::json;
using testing::TestEvent;
using testing::WaitFor;

constexpr int64_t kNowMs = 1'764'330'000'000;

struct SseMessage {
  std::string event;  // "" for an event message, "open", "closed"; "comment" for ": ..." lines
  std::string id;
  std::string data;
};

// An SSE client on its own thread (httplib's client, as curl -N would read it): collects every
// message; `on_event` runs on the reading thread for each event message as it arrives.
class SseReader {
 public:
  SseReader(int port, const std::string& target, const std::string& last_event_id = "",
            std::function<void(const SseMessage&)> on_event = {})
      : client_("127.0.0.1", port), on_event_(std::move(on_event)) {
    client_.set_read_timeout(std::chrono::seconds(60));
    thread_ = std::thread([this, target, last_event_id] {
      httplib::Headers headers;
      if (!last_event_id.empty()) headers.emplace("Last-Event-ID", last_event_id);
      headers.emplace("Accept-Encoding", "gzip, deflate");  // what browsers send
      auto result = client_.Get(
          target, headers,
          [this](const httplib::Response& response) {
            std::lock_guard lock(mu_);
            status_ = response.status;
            content_type_ = response.get_header_value("Content-Type");
            content_encoding_ = response.get_header_value("Content-Encoding");
            return true;
          },
          [this](const char* data, size_t n) {
            Feed(std::string_view(data, n));
            return true;
          });
      std::lock_guard lock(mu_);
      if (result && status_ == 0) status_ = result->status;
      if (result && status_ != 200) body_ = result->body;
      ended_ = true;
    });
  }
  ~SseReader() { Stop(); }
  void Stop() {
    client_.stop();
    if (thread_.joinable()) thread_.join();
  }
  std::vector<SseMessage> messages() const {
    std::lock_guard lock(mu_);
    return messages_;
  }
  std::vector<SseMessage> events() const {
    std::vector<SseMessage> out;
    for (SseMessage& m : messages())
      if (m.event.empty()) out.push_back(std::move(m));
    return out;
  }
  size_t event_count() const { return events().size(); }
  bool ended() const {
    std::lock_guard lock(mu_);
    return ended_;
  }
  int status() const {
    std::lock_guard lock(mu_);
    return status_;
  }
  std::string content_encoding() const {
    std::lock_guard lock(mu_);
    return content_encoding_;
  }
  std::string content_type() const {
    std::lock_guard lock(mu_);
    return content_type_;
  }
  bool Opened() const {
    for (const SseMessage& m : messages())
      if (m.event == "open") return true;
    return false;
  }
  // The id of the last message with one.
  std::string last_id() const {
    std::string id;
    for (const SseMessage& m : messages())
      if (!m.id.empty()) id = m.id;
    return id;
  }

 private:
  void Feed(std::string_view bytes) {
    std::vector<SseMessage> parsed;
    {
      std::lock_guard lock(mu_);
      buffer_.append(bytes);
      size_t end;
      while ((end = buffer_.find("\n\n")) != std::string::npos) {
        const std::string block = buffer_.substr(0, end);
        buffer_.erase(0, end + 2);
        SseMessage m;
        bool any = false;
        size_t at = 0;
        while (at <= block.size()) {
          size_t nl = block.find('\n', at);
          if (nl == std::string::npos) nl = block.size();
          const std::string line = block.substr(at, nl - at);
          at = nl + 1;
          if (line.rfind(":", 0) == 0) {
            m.event = "comment";
            any = true;
          } else if (line.rfind("event: ", 0) == 0) {
            m.event = line.substr(7);
            any = true;
          } else if (line.rfind("id: ", 0) == 0) {
            m.id = line.substr(4);
          } else if (line.rfind("data: ", 0) == 0) {
            m.data += line.substr(6);
            any = true;
          }
        }
        if (!any) continue;  // "retry:" alone
        messages_.push_back(m);
        parsed.push_back(std::move(m));
      }
    }
    if (on_event_) {
      for (const SseMessage& m : parsed)
        if (m.event.empty()) on_event_(m);
    }
  }

  httplib::Client client_;
  std::function<void(const SseMessage&)> on_event_;
  std::thread thread_;
  mutable std::mutex mu_;
  std::string buffer_;
  std::vector<SseMessage> messages_;
  int status_ = 0;
  std::string content_type_, content_encoding_, body_;
  bool ended_ = false;
};

using Place = std::tuple<std::string, int32_t, int64_t>;  // topic, partition, offset

inline Place PlaceOf(const json& e) {
  return {e["topic"].get<std::string>(), e["partition"].get<int32_t>(), e["offset"].get<int64_t>()};
}

class StreamTest : public ::testing::Test {
 protected:
  void SetUp() override { OpenStore(); }
  void TearDown() override { Shutdown(); }

  void OpenStore(std::vector<std::string> index_fields = {"kind"}) {
    store::StoreOptions options;
    options.path = dir_.Sub("store");
    options.ttl_ms = 10 * 60'000;
    options.bucket_ms = 60'000;
    options.salts = 4;
    options.wall_clock = &clock_;
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 16 << 20;
    options.index_fields = std::move(index_fields);
    Result<std::unique_ptr<store::EventStore>> store = store::EventStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    query::QueryOptions q;
    q.threads = 2;
    engine_ = std::make_unique<query::QueryEngine>(store_.get(), q);
  }

  void Start(StreamHubOptions hub_options = {}, http::HttpServerOptions options = {},
             const std::string& token = "") {
    hub_ = std::make_unique<StreamHub>(store_.get(), engine_.get(), hub_options);
    store_->AddWriteObserver(hub_.get());
    options.listen = "127.0.0.1:0";
    http::HttpBackend backend{store_.get(), engine_.get(), nullptr, &metrics_};
    backend.hub = hub_.get();
    if (!token.empty()) {
      std::ofstream(dir_.Sub("token")) << token << "\n";
      access::CredentialsOptions credentials;
      credentials.token_file = dir_.Sub("token");
      auto opened = access::Credentials::Open(credentials);
      ASSERT_TRUE(opened.ok()) << opened.status().ToString();
      credentials_ = std::move(opened).value();
      auth_ = std::make_unique<http::Authenticator>(credentials_.get(), &metrics_);
      backend.auth = auth_.get();
      backend.credentials = credentials_.get();
    }
    Result<std::unique_ptr<http::HttpServer>> http = http::HttpServer::Start(options, backend);
    ASSERT_TRUE(http.ok()) << http.status().ToString();
    http_ = std::move(http).value();
  }

  void Shutdown() {
    if (http_) http_->Stop();
    http_.reset();
    if (hub_) store_->RemoveWriteObserver(hub_.get());
    hub_.reset();
  }

  // Writes one batch of events of `ids` (round robin), over 3 partitions of topic "t", each with
  // the next offset of its partition; returns them.
  std::vector<TestEvent> Write(const std::vector<std::string>& ids, int count,
                               const std::string& kind = "reading", size_t pad_bytes = 0) {
    std::vector<TestEvent> events;
    store::WriteBatchInput batch;
    for (int i = 0; i < count; ++i) {
      TestEvent e;
      e.id = ids[static_cast<size_t>(i) % ids.size()];
      e.topic = "t";
      e.partition = static_cast<int32_t>(serial_ % 3);
      e.offset = next_[e.partition]++;
      e.ts_ms = kNowMs - 1000 + static_cast<int64_t>(serial_ % 500);
      e.payload = "{\"n\":" + std::to_string(serial_) + ",\"kind\":\"" + kind + "\",\"pad\":\"" +
                  std::string(pad_bytes, 'x') + "\"}";
      ++serial_;
      Result<store::Row> row = testing::MakeRow(store_.get(), e);
      EXPECT_TRUE(row.ok());
      row->index.push_back({"kind", kind});
      batch.rows.push_back(std::move(row).value());
      int64_t& next = batch.next_offsets[{e.topic, e.partition}];
      next = std::max(next, e.offset + 1);
      events.push_back(e);
    }
    store::WriteOutcome outcome;
    Status st = store_->Write(batch, &outcome);
    EXPECT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(outcome.stored, events.size());
    return events;
  }

  int port() const { return http_->port(); }

  static std::set<Place> PlacesOf(const std::vector<TestEvent>& events, const std::string& id) {
    std::set<Place> out;
    for (const TestEvent& e : events)
      if (id.empty() || e.id == id) out.insert({e.topic, e.partition, e.offset});
    return out;
  }

  // Every event message's place, checking that none comes twice and each partition's come in
  // offset order.
  static std::vector<Place> Places(const std::vector<SseMessage>& events) {
    std::vector<Place> out;
    std::map<std::pair<std::string, int32_t>, int64_t> last;
    for (const SseMessage& m : events) {
      const Place p = PlaceOf(json::parse(m.data));
      auto [it, fresh] = last.try_emplace({std::get<0>(p), std::get<1>(p)}, std::get<2>(p));
      if (!fresh) {
        EXPECT_LT(it->second, std::get<2>(p)) << "out of order or twice in a partition";
        it->second = std::get<2>(p);
      }
      out.push_back(p);
    }
    return out;
  }

  testing::TempDir dir_;
  ManualClock clock_{kNowMs};
  std::unique_ptr<store::EventStore> store_;
  std::unique_ptr<query::QueryEngine> engine_;
  http::Metrics metrics_;
  std::unique_ptr<StreamHub> hub_;
  std::unique_ptr<access::Credentials> credentials_;
  std::unique_ptr<http::Authenticator> auth_;
  std::unique_ptr<http::HttpServer> http_;
  std::map<int32_t, int64_t> next_;
  uint64_t serial_ = 0;
};

}  // namespace hotrow::live
