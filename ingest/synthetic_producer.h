#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "ingest/decoder.h"
#include "ingest/synthetic_formats.h"

struct rd_kafka_s;
struct rd_kafka_message_s;

namespace hotrow::ingest {

// Synthetic IoT readings: `{"event_id":"dev-000042","ts":1700000000000,"temp":21.5,
// "humidity":40.1,"battery":87}`. Device ids follow a Zipf-like law (device k is chosen with
// probability proportional to 1 / (k+1)^skew), as real fleets have a few chatty devices and a long
// quiet tail. Everything but the time is a pure function of the seed.
//
// Thread-safety: not thread-safe.
class SyntheticEvents {
 public:
  // REQUIRES: devices >= 1, skew >= 0 (0 is uniform).
  SyntheticEvents(int devices, double skew, uint64_t seed);

  // The next event for time `ts_ms`: its device id (also the record key) and its JSON.
  void Next(int64_t ts_ms, std::string* device_id, std::string* json);
  // The same event as fields (synthetic_formats.h encodes it as Avro or Protobuf); its event_id
  // is the device id. The same sequence as Next for the same seed.
  void NextReading(int64_t ts_ms, SyntheticReading* reading);

  // "dev-000042" for index 42 (at least six digits).
  static std::string DeviceId(int index);

 private:
  double Uniform();  // in [0, 1)

  std::vector<double> cdf_;  // cumulative probability of devices 0..k
  std::mt19937_64 rng_;
};

struct ProducerOptions {
  // Bootstrap servers. Required.
  std::string brokers;
  // Topic to produce to. Required.
  std::string topic;
  // Events per second; 0 means as fast as the broker takes them. Default: 20000.
  int64_t rate = 20000;
  // Events to produce; 0 means until Stop(). Default: 0.
  int64_t count = 0;
  // Distinct devices. Default: 1000.
  int devices = 1000;
  // Zipf exponent of the device choice; 0 is uniform. Default: 1.1.
  double skew = 1.1;
  // Seed of the device and reading choice. Default: 1.
  uint64_t seed = 1;
  // Passed to librdkafka as is, after hotrow's settings (idempotent, lz4, linger 5 ms).
  std::map<std::string, std::string> properties;
  // The values' encoding: JSON, or the reading as Avro / Protobuf (synthetic_formats.h), then
  // framed for `registry_url` (the schema registered under "<topic>-value") or unframed, with
  // the schema written to `schema_file` (Avro JSON, or a FileDescriptorSet) for the reader.
  // One of the two with Avro and Protobuf. Defaults: JSON, none.
  Format format = Format::kJson;
  std::string registry_url;
  std::string schema_file;
  // Source of the events' ts. Not owned. Default: the system clock.
  const Clock* clock = WallClock::Default();
};

// Produces SyntheticEvents to a topic at a steady rate, keyed by device id. Used by
// `hotrow produce`, the demo, tests and benchmarks.
//
// Thread-safety: Start/Stop/Wait from one thread; the counters from any.
class SyntheticProducer {
 public:
  // Creates the producer (no thread yet). InvalidArgument for bad options or properties
  // librdkafka refuses.
  static Result<std::unique_ptr<SyntheticProducer>> Create(const ProducerOptions& options);
  ~SyntheticProducer();  // stops and joins
  SyntheticProducer(const SyntheticProducer&) = delete;
  SyntheticProducer& operator=(const SyntheticProducer&) = delete;

  // Produces on the calling thread until `count` events are produced and delivered, or until
  // Stop(); then flushes what is in flight (up to 30 s). Fails with IOError when events could
  // not be delivered.
  Status Run();

  // Runs Run() on a thread named "hotrow-produce".
  void Start();
  // Asks Run() to stop producing; it then flushes and returns. Any thread.
  void Stop() { stop_.store(true); }
  // Joins the thread of Start() and returns what Run() returned.
  Status Wait();
  // True once Run() has returned.
  bool done() const { return done_.load(); }

  uint64_t produced() const { return produced_.load(); }
  uint64_t delivered() const { return delivered_.load(); }
  uint64_t failed() const { return failed_.load(); }

 private:
  explicit SyntheticProducer(const ProducerOptions& options);
  static void OnDelivery(rd_kafka_s* rk, const rd_kafka_message_s* msg, void* opaque);

  const ProducerOptions options_;
  std::string frame_;  // written before each value: Confluent's header (and message index)
  rd_kafka_s* producer_ = nullptr;
  std::thread thread_;
  Status result_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> done_{false};
  std::atomic<uint64_t> produced_{0};
  std::atomic<uint64_t> delivered_{0};
  std::atomic<uint64_t> failed_{0};
  std::atomic<bool> logged_failure_{false};
};

}  // namespace hotrow::ingest
