// What decoding Avro and Protobuf costs at ingest, against JSON (docs/BENCHMARKS.md "Input
// formats"). The same synthetic readings (ingest/synthetic_formats.h) as JSON, as Avro and as
// Protobuf, both framed as Confluent's serializers write them (schema id 1, served from memory
// as a registry would: the fetch happens once, outside the timing), go through what
// IngestorImpl::HandleMessage does before keying: the decoder (framing, decode, JSON text) and
// RecordParser. Rounds alternate the three formats on the same thread; the figures are the
// medians over rounds of the thread's CPU µs per event, by stage (each stage a loop of its own,
// the later ones less the earlier: no clock is read per record):
//   framing  ParseConfluentHeader (+ the message-index list for Protobuf)
//   decode   Avro: the writer schema's lookup; Protobuf: the message type's lookup (both read the
//            wire bytes in the next stage)
//   text     Avro: the checked walk that reads the datum and writes JSON; Protobuf: the
//            wire-to-JSON transcoding
//   parse    RecordParser::Parse of the text (id, time, index), as for a JSON record
// and the events per second of the whole path, as a ratio to JSON's. Whole-ingest events per
// second are then estimated from ingest_bench's CPU per stored event (flag --ingest-us, default
// 3.8, docs/BENCHMARKS.md): ingest_us / (ingest_us + format path - JSON path).
//
//   format_bench [--events N] [--rounds R] [--ingest-us U]

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ingest/avro_decoder.h"
#include "ingest/confluent_framing.h"
#include "ingest/json_text.h"
#include "ingest/protobuf_decoder.h"
#include "ingest/record_parser.h"
#include "ingest/synthetic_formats.h"
#include "ingest/synthetic_producer.h"

namespace hotrow::bench {
namespace {

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Serves the synthetic schema of one format as id 1.
class SyntheticRegistry final : public ingest::SchemaSource {
 public:
  explicit SyntheticRegistry(ingest::Format format) : format_(format) {}
  Result<ingest::RegistrySchema> ById(uint32_t id, bool) override {
    if (id != 1) return Status::NotFound("no schema " + std::to_string(id));
    ingest::RegistrySchema s;
    if (format_ == ingest::Format::kAvro) {
      s.schema = ingest::SyntheticAvroSchema();
      s.schema_type = "AVRO";
    } else {
      ingest::AppendBase64(ingest::SyntheticProtoFile(), &s.schema);
      s.schema_type = "PROTOBUF";
    }
    return s;
  }
  Result<ingest::RegistrySchema> BySubjectVersion(const std::string&, int, bool) override {
    return Status::NotFound("no references");
  }

 private:
  ingest::Format format_;
};

struct Stages {
  double framing = 0, decode = 0, text = 0, parse = 0;
  double total() const { return framing + decode + text + parse; }
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace
}  // namespace hotrow::bench

int main(int argc, char** argv) {
  using namespace hotrow;
  using namespace hotrow::bench;
  int64_t events = 200000;
  int rounds = 7;
  double ingest_us = 3.8;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--events")) events = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--ingest-us")) ingest_us = std::atof(argv[i + 1]);
  }
  // The same readings in each format; times inside the default hot window.
  std::vector<std::string> json, avro, proto;
  {
    ingest::SyntheticEvents gen(1000, 1.1, 1);
    ingest::SyntheticReading r;
    const int64_t now = 1'700'000'000'000;
    for (int64_t i = 0; i < events; ++i) {
      gen.NextReading(now + i % 1000, &r);
      std::string j, a, p;
      ingest::AppendSyntheticJson(r, &j);
      ingest::AppendConfluentHeader(1, &a);
      ingest::AppendSyntheticAvro(r, &a);
      ingest::AppendConfluentHeader(1, &p);
      ingest::AppendMessageIndexes({0}, &p);
      ingest::AppendSyntheticProtobuf(r, &p);
      json.push_back(std::move(j));
      avro.push_back(std::move(a));
      proto.push_back(std::move(p));
    }
  }
  auto avro_decoder =
      ingest::AvroDecoder::WithRegistry(std::make_unique<SyntheticRegistry>(ingest::Format::kAvro));
  auto proto_decoder = ingest::ProtobufDecoder::WithRegistry(
      std::make_unique<SyntheticRegistry>(ingest::Format::kProtobuf));
  ingest::RecordParser parser(ingest::ParserOptions{"event_id", "ts", {}});
  ingest::ParsedRecord parsed;
  std::string text, detail;
  const char* reject = nullptr;
  const int64_t window_start = 0, max_time = INT64_MAX;
  uint32_t id = 0;
  std::string_view rest, body;
  std::vector<int> indexes;

  // Every record must decode to the same event as its JSON form (checked once, untimed).
  for (int64_t i = 0; i < std::min<int64_t>(events, 1000); ++i) {
    for (auto* d : {static_cast<ingest::Decoder*>(avro_decoder.get()),
                    static_cast<ingest::Decoder*>(proto_decoder.get())}) {
      const std::string& v = d == avro_decoder.get() ? avro[i] : proto[i];
      if (d->Decode(v, &text, &reject, &detail) != ingest::DecodeStatus::kOk) {
        std::fprintf(stderr, "format_bench: record %lld does not decode: %s\n",
                     static_cast<long long>(i), detail.c_str());
        return 1;
      }
      parser.Parse({text, {}, -1}, window_start, max_time, &parsed);
      ingest::ParsedRecord from_json;
      parser.Parse({json[i], {}, -1}, window_start, max_time, &from_json);
      if (!parsed.ok() || parsed.id != from_json.id || parsed.ts_ms != from_json.ts_ms) {
        std::fprintf(stderr, "format_bench: record %lld decodes to another event\n",
                     static_cast<long long>(i));
        return 1;
      }
    }
  }

  // Each stage is a loop of its own over every record (no clock read per record, whose cost
  // would be counted in the stages): framing alone; framing + decode; framing + decode + text;
  // the parse of texts decoded beforehand; and the whole path (decode and parse) per record.
  std::vector<std::string> avro_text(events), proto_text(events);
  for (int64_t i = 0; i < events; ++i) {
    (void)avro_decoder->Decode(avro[i], &avro_text[i], &reject, &detail);
    (void)proto_decoder->Decode(proto[i], &proto_text[i], &reject, &detail);
  }
  std::vector<double> jp, af, ar, arw, ap, apath, pf, pl, plt, pp, ppath;
  const double n = static_cast<double>(events);
  auto per_event = [n](double t0) { return (CpuSeconds() - t0) * 1e6 / n; };
  const google::protobuf::Descriptor* message = nullptr;
  for (int round = 0; round < rounds; ++round) {
    double t0 = CpuSeconds();
    for (const std::string& v : json) parser.Parse({v, {}, -1}, window_start, max_time, &parsed);
    jp.push_back(per_event(t0));

    t0 = CpuSeconds();
    for (const std::string& v : avro) (void)ingest::ParseConfluentHeader(v, &id, &rest);
    af.push_back(per_event(t0));
    t0 = CpuSeconds();
    for (const std::string& v : avro) (void)avro_decoder->Read(v, &reject, &detail);
    ar.push_back(per_event(t0));
    t0 = CpuSeconds();
    for (const std::string& v : avro) {
      (void)avro_decoder->Read(v, &reject, &detail);
      (void)avro_decoder->WriteJson(&text, &detail);
    }
    arw.push_back(per_event(t0));
    t0 = CpuSeconds();
    for (const std::string& v : avro_text) {
      parser.Parse({v, {}, -1}, window_start, max_time, &parsed);
    }
    ap.push_back(per_event(t0));
    t0 = CpuSeconds();
    for (const std::string& v : avro) {
      (void)avro_decoder->Decode(v, &text, &reject, &detail);
      parser.Parse({text, {}, -1}, window_start, max_time, &parsed);
    }
    apath.push_back(per_event(t0));

    t0 = CpuSeconds();
    for (const std::string& v : proto) {
      (void)ingest::ParseConfluentHeader(v, &id, &rest);
      (void)ingest::ParseMessageIndexes(rest, &indexes, &body);
    }
    pf.push_back(per_event(t0));
    t0 = CpuSeconds();
    for (const std::string& v : proto) {
      (void)proto_decoder->Locate(v, &message, &body, &reject, &detail);
    }
    pl.push_back(per_event(t0));
    t0 = CpuSeconds();
    for (const std::string& v : proto) {
      (void)proto_decoder->Locate(v, &message, &body, &reject, &detail);
      (void)proto_decoder->Transcode(message, body, &text, &detail);
    }
    plt.push_back(per_event(t0));
    t0 = CpuSeconds();
    for (const std::string& v : proto_text) {
      parser.Parse({v, {}, -1}, window_start, max_time, &parsed);
    }
    pp.push_back(per_event(t0));
    t0 = CpuSeconds();
    for (const std::string& v : proto) {
      (void)proto_decoder->Decode(v, &text, &reject, &detail);
      parser.Parse({text, {}, -1}, window_start, max_time, &parsed);
    }
    ppath.push_back(per_event(t0));
  }
  Stages j{0, 0, 0, Median(jp)};
  Stages a{Median(af), std::max(0.0, Median(ar) - Median(af)),
           std::max(0.0, Median(arw) - Median(ar)), Median(ap)};
  Stages p{Median(pf), std::max(0.0, Median(pl) - Median(pf)),
           std::max(0.0, Median(plt) - Median(pl)), Median(pp)};
  const double path_json = Median(jp), path_avro = Median(apath), path_proto = Median(ppath);
  std::printf("format_bench: %lld events x %d alternated rounds, medians of CPU us per event\n",
              static_cast<long long>(events), rounds);
  std::printf("%-9s %8s %8s %8s %8s %8s %12s %14s\n", "format", "framing", "decode", "text",
              "parse", "path", "path ev/s", "ingest vs json");
  struct Row {
    const char* name;
    Stages stages;
    double path;
  };
  for (const Row& r :
       {Row{"json", j, path_json}, Row{"avro", a, path_avro}, Row{"protobuf", p, path_proto}}) {
    const double ingest_ratio = ingest_us / (ingest_us + r.path - path_json);
    std::printf("%-9s %8.3f %8.3f %8.3f %8.3f %8.3f %12.0f %14.2f\n", r.name, r.stages.framing,
                r.stages.decode, r.stages.text, r.stages.parse, r.path, 1e6 / r.path, ingest_ratio);
  }
  for (const Row& r : {Row{"avro", a, path_avro}, Row{"protobuf", p, path_proto}}) {
    std::printf(
        "RATIO ingest events/s, %s over json (est.: CPU us per event, json / %s) "
        "%.2f / %.2f = %.2f\n",
        r.name, r.name, ingest_us, ingest_us + r.path - path_json,
        ingest_us / (ingest_us + r.path - path_json));
  }
  std::printf(
      "(ingest vs json: estimated from %.2f CPU us per stored JSON event end to end, "
      "--ingest-us)\n",
      ingest_us);
  return 0;
}
