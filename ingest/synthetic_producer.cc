#include "ingest/synthetic_producer.h"

#include <pthread.h>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "ingest/confluent_framing.h"
#include "ingest/kafka_conf.h"

namespace hotrow::ingest {

SyntheticEvents::SyntheticEvents(int devices, double skew, uint64_t seed) : rng_(seed) {
  devices = std::max(devices, 1);
  cdf_.resize(static_cast<size_t>(devices));
  double sum = 0;
  for (int k = 0; k < devices; ++k) {
    sum += 1.0 / std::pow(static_cast<double>(k + 1), skew);
    cdf_[static_cast<size_t>(k)] = sum;
  }
  for (double& c : cdf_) c /= sum;
}

double SyntheticEvents::Uniform() {
  // 53 random bits: the same on every platform, unlike std::uniform_real_distribution.
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

std::string SyntheticEvents::DeviceId(int index) { return fmt::format("dev-{:06d}", index); }

void SyntheticEvents::NextReading(int64_t ts_ms, SyntheticReading* reading) {
  const double u = Uniform();
  size_t device = static_cast<size_t>(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
  if (device >= cdf_.size()) device = cdf_.size() - 1;
  reading->temp = std::round((15.0 + 15.0 * Uniform()) * 10) / 10;
  reading->humidity = std::round((30.0 + 40.0 * Uniform()) * 10) / 10;
  reading->battery = static_cast<int>(Uniform() * 101);
  reading->event_id.clear();
  fmt::format_to(std::back_inserter(reading->event_id), "dev-{:06d}", device);
  reading->ts_ms = ts_ms;
}

void SyntheticEvents::Next(int64_t ts_ms, std::string* device_id, std::string* json) {
  const double u = Uniform();
  size_t device = static_cast<size_t>(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
  if (device >= cdf_.size()) device = cdf_.size() - 1;
  const double temp = std::round((15.0 + 15.0 * Uniform()) * 10) / 10;
  const double humidity = std::round((30.0 + 40.0 * Uniform()) * 10) / 10;
  const int battery = static_cast<int>(Uniform() * 101);
  device_id->clear();
  fmt::format_to(std::back_inserter(*device_id), "dev-{:06d}", device);
  json->clear();
  fmt::format_to(std::back_inserter(*json),
                 "{{\"event_id\":\"{}\",\"ts\":{},\"temp\":{:.1f},\"humidity\":{:.1f},"
                 "\"battery\":{}}}",
                 *device_id, ts_ms, temp, humidity, battery);
}

SyntheticProducer::SyntheticProducer(const ProducerOptions& options) : options_(options) {}

Result<std::unique_ptr<SyntheticProducer>> SyntheticProducer::Create(
    const ProducerOptions& options) {
  if (options.brokers.empty()) return Status::InvalidArgument("produce: --brokers is required");
  if (options.topic.empty()) return Status::InvalidArgument("produce: --topic is required");
  if (options.rate < 0) return Status::InvalidArgument("produce: --rate must be >= 0");
  if (options.count < 0) return Status::InvalidArgument("produce: --count must be >= 0");
  if (options.devices < 1) return Status::InvalidArgument("produce: --devices must be >= 1");
  std::unique_ptr<SyntheticProducer> p(new SyntheticProducer(options));
  if (options.format != Format::kJson) {
    if (options.registry_url.empty() == options.schema_file.empty()) {
      return Status::InvalidArgument(
          "produce: --format avro or protobuf needs --schema-registry URL (framed records) or "
          "--schema-file FILE (unframed; the schema is written there), one of the two");
    }
    if (!options.registry_url.empty()) {
      Result<uint32_t> id =
          RegisterSyntheticSchema(options.registry_url, options.format, options.topic + "-value");
      if (!id.ok()) return Status::IOError("produce: " + id.status().message());
      AppendConfluentHeader(*id, &p->frame_);
      if (options.format == Format::kProtobuf) AppendMessageIndexes({0}, &p->frame_);
    } else {
      std::FILE* f = std::fopen(options.schema_file.c_str(), "wb");
      const std::string schema = options.format == Format::kAvro ? SyntheticAvroSchema()
                                                                 : SyntheticProtoDescriptorSet();
      const bool written = f != nullptr && std::fwrite(schema.data(), 1, schema.size(), f) ==
                                               schema.size();
      if (f != nullptr && std::fclose(f) != 0) f = nullptr;
      if (!written || f == nullptr) {
        return Status::InvalidArgument("produce: --schema-file: cannot write " +
                                       options.schema_file);
      }
    }
  }
  KafkaConfPtr conf(rd_kafka_conf_new());
  HOTROW_RETURN_IF_ERROR(SetKafkaProperties(conf.get(),
                                            {{"bootstrap.servers", options.brokers},
                                             {"client.id", "hotrow-produce"},
                                             {"enable.idempotence", "true"},
                                             {"compression.type", "lz4"},
                                             // Large batches: the mock broker walks a
                                             // partition's message sets one by one on every
                                             // fetch, so thousands of tiny batches per second
                                             // saturate it long before hotrow (seen in the soak).
                                             {"linger.ms", "100"}},
                                            "producer"));
  HOTROW_RETURN_IF_ERROR(SetKafkaProperties(conf.get(), options.properties, "producer"));
  RouteKafkaLogs(conf.get());
  rd_kafka_conf_set_opaque(conf.get(), p.get());
  rd_kafka_conf_set_dr_msg_cb(conf.get(), &SyntheticProducer::OnDelivery);
  char errstr[512];
  p->producer_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), errstr, sizeof(errstr));
  if (p->producer_ == nullptr) {
    return Status::InvalidArgument(std::string("produce: cannot create the producer: ") + errstr);
  }
  conf.release();  // owned by the handle now
  return p;
}

SyntheticProducer::~SyntheticProducer() {
  Stop();
  if (thread_.joinable()) thread_.join();
  if (producer_ != nullptr) rd_kafka_destroy(producer_);
}

void SyntheticProducer::OnDelivery(rd_kafka_s* /*rk*/, const rd_kafka_message_s* msg,
                                   void* opaque) {
  auto* self = static_cast<SyntheticProducer*>(opaque);
  if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    self->delivered_.fetch_add(1, std::memory_order_relaxed);
  } else {
    self->failed_.fetch_add(1, std::memory_order_relaxed);
    if (!self->logged_failure_.exchange(true)) {
      spdlog::error("produce: delivery to {} failed: {}", self->options_.topic,
                    rd_kafka_err2str(msg->err));
    }
  }
}

Status SyntheticProducer::Run() {
  SyntheticEvents events(options_.devices, options_.skew, options_.seed);
  std::string key;
  SyntheticReading reading;
  std::string value;
  const auto start = std::chrono::steady_clock::now();
  int64_t sent = 0;
  while (!stop_.load(std::memory_order_relaxed) && (options_.count == 0 || sent < options_.count)) {
    int64_t allowed = INT64_MAX;
    if (options_.rate > 0) {
      const double elapsed_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      allowed = static_cast<int64_t>(elapsed_s * static_cast<double>(options_.rate)) + 1;
      if (sent >= allowed) {
        rd_kafka_poll(producer_, 1);  // serves delivery reports and waits a little
        continue;
      }
    }
    int64_t burst = std::min<int64_t>(allowed - sent, 1000);
    if (options_.count > 0) burst = std::min(burst, options_.count - sent);
    for (int64_t i = 0; i < burst && !stop_.load(std::memory_order_relaxed); ++i) {
      if (options_.format == Format::kJson) {
        events.Next(options_.clock->NowMs(), &key, &value);
      } else {
        events.NextReading(options_.clock->NowMs(), &reading);
        key = reading.event_id;
        value = frame_;
        if (options_.format == Format::kAvro) {
          AppendSyntheticAvro(reading, &value);
        } else {
          AppendSyntheticProtobuf(reading, &value);
        }
      }
      while (true) {
        rd_kafka_resp_err_t err = rd_kafka_producev(
            producer_, RD_KAFKA_V_TOPIC(options_.topic.c_str()),
            RD_KAFKA_V_KEY(key.data(), key.size()), RD_KAFKA_V_VALUE(value.data(), value.size()),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) break;
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
          return Status::IOError(std::string("produce: ") + rd_kafka_err2str(err));
        }
        rd_kafka_poll(producer_, 10);
        if (stop_.load(std::memory_order_relaxed)) break;
      }
      ++sent;
      produced_.store(static_cast<uint64_t>(sent), std::memory_order_relaxed);
    }
    rd_kafka_poll(producer_, 0);
  }
  // Deliver what is in flight.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (rd_kafka_outq_len(producer_) > 0 && std::chrono::steady_clock::now() < deadline) {
    rd_kafka_flush(producer_, 100);
  }
  const int left = rd_kafka_outq_len(producer_);
  if (left > 0) {
    return Status::IOError("produce: " + std::to_string(left) +
                           " events still undelivered after 30 s; is the broker up?");
  }
  if (failed() > 0) {
    return Status::IOError("produce: " + std::to_string(failed()) + " of " +
                           std::to_string(produced()) + " events could not be delivered");
  }
  return Status::Ok();
}

void SyntheticProducer::Start() {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "hotrow-produce");
    result_ = Run();
    done_.store(true);
  });
}

Status SyntheticProducer::Wait() {
  if (thread_.joinable()) thread_.join();
  return result_;
}

}  // namespace hotrow::ingest
