// Fuzz target: the record parser (ingest/record_parser.h), the code every Kafka record goes through.
//
// Input: a header line, then the record value:
//   id_field|ts_field|kafka_ts|key\n<value>
// Missing header pieces keep the defaults (event_id, ts, no Kafka timestamp, no key); an input
// without a newline is all value. The hot window is fixed: [kWindowStartMs, kMaxTimeMs].
//
// Properties, checked against nlohmann::json as an independent reader of the same value:
// - a rejected record names one of the six reasons and says why; a record that is not a JSON
//   object (by nlohmann) is rejected as not_json;
// - an accepted record is a JSON object, has an id of 1..256 bytes and a time inside the window,
//   and that id and time are the ones its fields (or its key and Kafka timestamp) hold;
// - a record whose id is a plain string and whose time is an integer in the window is accepted.
#include <charconv>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/time_format.h"
#include "ingest/ingestor.h"
#include "ingest/record_parser.h"
#include "keying/row_value.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using hotrow::ingest::ParsedRecord;
using hotrow::ingest::RecordView;
using Json = nlohmann::json;

constexpr int64_t kWindowStartMs = 1'000'000'000'000;  // 2001-09-09
constexpr int64_t kMaxTimeMs = 2'000'000'000'000;      // 2033-05-18

struct Input {
  hotrow::ingest::ParserOptions options;
  RecordView record;
};

Input Split(std::string_view bytes) {
  Input in;
  const size_t newline = bytes.find('\n');
  if (newline == std::string_view::npos) {
    in.record.value = bytes;
    return in;
  }
  std::string_view header = bytes.substr(0, newline);
  in.record.value = bytes.substr(newline + 1);
  std::string_view pieces[4];
  for (int i = 0; i < 3; ++i) {
    const size_t bar = header.find('|');
    pieces[i] = header.substr(0, bar);
    header = bar == std::string_view::npos ? std::string_view() : header.substr(bar + 1);
  }
  pieces[3] = header;  // the key: the rest, '|' included
  if (!pieces[0].empty()) in.options.id_field = std::string(pieces[0]);
  if (!pieces[1].empty()) in.options.ts_field = std::string(pieces[1]);
  int64_t ts = -1;
  if (std::from_chars(pieces[2].data(), pieces[2].data() + pieces[2].size(), ts).ec ==
      std::errc()) {
    in.record.kafka_ts_ms = ts;
  }
  in.record.key = pieces[3];
  return in;
}

// Parses like the record parser's own fallback, and tells whether some object repeats a name: the
// parser reads the first of two equal names, nlohmann keeps the last, so ids and times are only
// compared for documents without repeats.
Json ParseWithNlohmann(std::string_view value, bool* repeated_name) {
  std::vector<std::set<std::string>> open_objects;
  *repeated_name = false;
  auto track = [&](int /*depth*/, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) open_objects.emplace_back();
    if (event == Json::parse_event_t::object_end && !open_objects.empty()) open_objects.pop_back();
    if (event == Json::parse_event_t::key && !open_objects.empty() &&
        !open_objects.back().insert(parsed.get<std::string>()).second) {
      *repeated_name = true;
    }
    return true;
  };
  return Json::parse(value, track, /*allow_exceptions=*/false);
}

// The element at a dotted path, or nullptr when a segment is missing, not an object, or null.
const Json* At(const Json& root, const std::string& path) {
  const Json* cur = &root;
  for (const std::string& segment : hotrow::ingest::SplitDottedPath(path)) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(segment);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  if (path.empty() || cur->is_null()) return nullptr;
  return cur;
}

bool IsReason(const char* reason) {
  for (const char* known : hotrow::ingest::kRejectReasons) {
    if (std::strcmp(known, reason) == 0) return true;
  }
  return false;
}

void CheckAccepted(const Input& in, const Json& doc, const ParsedRecord& out) {
  FUZZ_CHECK(!out.id.empty() && out.id.size() <= hotrow::keying::kMaxIdSize);
  FUZZ_CHECK(out.ts_ms >= kWindowStartMs && out.ts_ms <= kMaxTimeMs);
  const Json* id = At(doc, in.options.id_field);
  if (id == nullptr) {
    FUZZ_CHECK(out.id == in.record.key);
  } else if (id->is_string()) {
    FUZZ_CHECK(out.id == id->get<std::string>());
  } else if (id->is_number_integer()) {
    FUZZ_CHECK(out.id == id->dump());
  }
  const Json* ts = At(doc, in.options.ts_field);
  if (ts == nullptr) {
    FUZZ_CHECK(out.ts_ms == in.record.kafka_ts_ms);
  } else if (ts->is_number_unsigned()) {
    FUZZ_CHECK(static_cast<uint64_t>(out.ts_ms) == ts->get<uint64_t>());
  } else if (ts->is_string()) {
    hotrow::Result<int64_t> parsed = hotrow::ParseTimeMs(ts->get<std::string>());
    FUZZ_CHECK(parsed.ok() && *parsed == out.ts_ms);
  }
}

// A record with a plain string id and an integer time in the window must be stored.
bool MustAccept(const Input& in, const Json& doc) {
  const Json* id = At(doc, in.options.id_field);
  const Json* ts = At(doc, in.options.ts_field);
  if (id == nullptr || ts == nullptr || !id->is_string() || !ts->is_number_unsigned()) return false;
  const std::string& text = id->get_ref<const std::string&>();
  const uint64_t t = ts->get<uint64_t>();
  return !text.empty() && text.size() <= hotrow::keying::kMaxIdSize &&
         t >= static_cast<uint64_t>(kWindowStartMs) && t <= static_cast<uint64_t>(kMaxTimeMs);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Input in = Split(std::string_view(reinterpret_cast<const char*>(data), size));
  hotrow::ingest::RecordParser parser(in.options);
  ParsedRecord out;
  parser.Parse(in.record, kWindowStartMs, kMaxTimeMs, &out);

  bool repeated_name = false;
  const Json doc = ParseWithNlohmann(in.record.value, &repeated_name);
  // nlohmann stops reading at a NUL byte as if the input ended there; JSON allows none anywhere.
  const bool has_nul = in.record.value.find('\0') != std::string_view::npos;
  const bool is_object = !has_nul && !doc.is_discarded() && doc.is_object();
  if (!out.ok()) {
    FUZZ_CHECK(IsReason(out.reject) && !out.detail.empty());
    FUZZ_CHECK(is_object || std::strcmp(out.reject, hotrow::ingest::kRejectNotJson) == 0);
    FUZZ_CHECK(repeated_name || !is_object || !MustAccept(in, doc));
    return 0;
  }
  FUZZ_CHECK(is_object);
  if (!repeated_name) CheckAccepted(in, doc, out);
  return 0;
}
