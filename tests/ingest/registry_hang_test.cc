// A Schema Registry that accepts connections and never answers must not stall ingestion: the
// partitions whose records need a schema it has not given wait (paused, nothing after the waiting
// record stored), the others keep ingesting, the poller keeps iterating (the watchdog's view),
// and the waiting partitions resume, in order and exactly once, when it answers.
//
// The registry is an in-process httplib server: schema id 1 is answered at once, schema id 2
// only once the test opens its gate. The registry client's timeout is longer than the test, so
// a fetch made on the poller would hold it for the whole test.

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "ingest/confluent_framing.h"
#include "ingest/ingestor.h"
#include "tests/ingest/ingest_test_base.h"
#include "tests/ingest/kafka_test_util.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::ingest {
namespace {

using hotrow::testing::FreePort;
using hotrow::testing::TempDir;
using hotrow::testing::WaitFor;
using testing::CheckExactlyOnce;
using testing::IngestTestBase;
using testing::kTopic;
using testing::OffsetCounts;
using testing::ReadStore;
using testing::TestProducer;
using namespace std::chrono_literals;

constexpr const char* kSchema =
    R"({"type":"record","name":"R","fields":[{"name":"event_id","type":"string"},)"
    R"({"name":"ts","type":"long"},{"name":"seq","type":"long"}]})";

void AppendLong(int64_t v, std::string* out) {
  uint64_t z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  while (z >= 0x80) {
    out->push_back(static_cast<char>((z & 0x7f) | 0x80));
    z >>= 7;
  }
  out->push_back(static_cast<char>(z));
}

// A framed Avro record of kSchema under `schema_id`.
std::string Record(uint32_t schema_id, const std::string& id, int64_t ts, int64_t seq) {
  std::string value;
  AppendConfluentHeader(schema_id, &value);
  AppendLong(static_cast<int64_t>(id.size()), &value);
  value += id;
  AppendLong(ts, &value);
  AppendLong(seq, &value);
  return value;
}

// Serves /schemas/ids/1 and /schemas/ids/2 (both kSchema); the answer for id 2 waits for Open().
class HangingRegistry {
 public:
  HangingRegistry() : port_(FreePort()) {
    server_.Get(R"(/schemas/ids/(\d+))", [this](const httplib::Request& req,
                                                httplib::Response& res) {
      const std::string id = req.matches[1];
      if (id == "2") {
        asked_for_2_.fetch_add(1);
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return open_; });
      }
      if (id != "1" && id != "2") {
        res.status = 404;
        res.set_content(R"({"error_code":40403,"message":"Schema not found"})", "application/json");
        return;
      }
      Reply(res);
    });
    // Bound before the thread listens: a connection made meanwhile waits in the backlog.
    bound_ = server_.bind_to_port("127.0.0.1", port_);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~HangingRegistry() {
    Open();
    server_.stop();
    thread_.join();
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int asked_for_2() const { return asked_for_2_.load(); }
  bool bound() const { return bound_; }

 private:
  static void Reply(httplib::Response& res) {
    std::string escaped;
    for (char c : std::string(kSchema)) {
      if (c == '"') escaped += '\\';
      escaped += c;
    }
    res.set_content("{\"schema\":\"" + escaped + "\"}", "application/vnd.schemaregistry.v1+json");
  }

  const int port_;
  httplib::Server server_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  bool bound_ = false;
  std::atomic<int> asked_for_2_{0};
};

class RegistryHangTest : public IngestTestBase {
 protected:
  RegistryHangTest() { partitions_ = 12; }
};

TEST_F(RegistryHangTest, PartitionsThatNeedNothingNewKeepIngestingWhileTheRegistryHangs) {
  HangingRegistry registry;
  ASSERT_TRUE(registry.bound());
  TempDir dir;
  auto store = OpenStore(dir.Sub("store"));
  ASSERT_NE(store, nullptr);
  IngestOptions options = Options();
  options.format.format = Format::kAvro;
  options.format.registry_url = registry.url();
  options.format.registry_timeout_ms = 3'600'000;  // longer than the test: the hang is a hang
  auto ingestor = StartIngestor(options, store.get());
  ASSERT_NE(ingestor, nullptr);
  // Whatever fails, the registry answers before the ingestor stops (a poller blocked in a fetch
  // could not stop otherwise).
  struct OpenAtEnd {
    HangingRegistry* registry;
    ~OpenAtEnd() { registry->Open(); }
  } open_at_end{&registry};

  const int64_t ts = testing::WallNow();
  TestProducer producer(kafka_->bootstrap());
  int64_t seq = 0;
  // Schema 1 becomes known: one record of it per partition.
  for (int p = 0; p < partitions_; ++p) {
    producer.Produce(kTopic, p, std::nullopt, Record(1, "d" + std::to_string(p), ts, seq++));
  }
  producer.Flush();
  ASSERT_TRUE(WaitCaughtUp(*store, *ingestor)) << ingestor->Stats().last_error;

  // Partitions 0-2: a record of schema 2 (the registry hangs on it), then two of schema 1 (which
  // must wait behind it). The other nine: three records of schema 1 each.
  for (int p = 0; p < partitions_; ++p) {
    for (int i = 0; i < 3; ++i) {
      const uint32_t schema = p < 3 && i == 0 ? 2 : 1;
      producer.Produce(kTopic, p, std::nullopt, Record(schema, "d" + std::to_string(p), ts, seq++));
    }
  }
  producer.Flush();
  const std::map<int32_t, int64_t> high = High();

  // The nine partitions that need nothing new are stored up to their end while the registry
  // hangs; the three held stay at their first record.
  ASSERT_TRUE(WaitFor(
      [&] {
        const auto stored = store->StoredOffsets();
        for (int p = 3; p < partitions_; ++p) {
          auto it = stored.find({kTopic, p});
          if (it == stored.end() || it->second < high.at(p)) return false;
        }
        return true;
      },
      60s))
      << ingestor->Stats().last_error;
  ASSERT_TRUE(WaitFor([&] { return ingestor->Stats().held_partitions == 3; }));
  EXPECT_EQ(registry.asked_for_2(), 1);  // one fetch per schema id, however many wait on it
  IngestStats stats = ingestor->Stats();
  EXPECT_EQ(stats.schema_fetches_waiting, 1u);
  EXPECT_NE(stats.registry_wait.find("schema id 2"), std::string::npos) << stats.registry_wait;
  for (int p = 0; p < 3; ++p) EXPECT_EQ(store->StoredOffsets().at({kTopic, p}), 1) << p;
  EXPECT_FALSE(ingestor->Ready().ok());  // the outage is reported
  // The poller keeps iterating: the watchdog sees a live process, not a wedged one.
  const int64_t began = ingestor->Liveness().poll_began_ms;
  ASSERT_TRUE(WaitFor([&] { return ingestor->Liveness().poll_began_ms > began; }));

  registry.Open();
  ASSERT_TRUE(WaitCaughtUp(*store, *ingestor)) << ingestor->Stats().last_error;
  EXPECT_EQ(CheckExactlyOnce(OffsetCounts(ReadStore(*store), kTopic), high), "");
  stats = ingestor->Stats();
  EXPECT_EQ(stats.held_partitions, 0u);
  EXPECT_EQ(stats.schema_fetches_waiting, 0u);
  EXPECT_EQ(stats.events_stored, 48u);
  for (const auto& [reason, n] : stats.rejected) EXPECT_EQ(n, 0u) << reason;
  ASSERT_TRUE(WaitFor([&] { return ingestor->Ready().ok(); }));
  EXPECT_TRUE(ingestor->Stop().ok());
}

}  // namespace
}  // namespace hotrow::ingest
