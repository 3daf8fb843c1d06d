#include "ingest/record_parser.h"

#include <simdjson.h>

#include <charconv>
#include <type_traits>
#include <nlohmann/json.hpp>

#include "common/time_format.h"
#include "ingest/ingestor.h"
#include "keying/row_value.h"

namespace hotrow::ingest {

std::vector<std::string> SplitDottedPath(std::string_view path) {
  std::vector<std::string> segments;
  if (path.empty()) return segments;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    if (dot == std::string_view::npos) {
      segments.emplace_back(path.substr(start));
      break;
    }
    segments.emplace_back(path.substr(start, dot - start));
    start = dot + 1;
  }
  return segments;
}

namespace {

// Where a dotted path leads in a document.
enum class Lookup {
  kFound,   // *out is the element at the path
  kAbsent,  // some segment is missing, or the value there is JSON null
  kBlocked  // an intermediate segment is not an object
};

Lookup Find(simdjson::dom::element root, const std::vector<std::string>& path,
            simdjson::dom::element* out) {
  simdjson::dom::element cur = root;
  for (const std::string& segment : path) {
    simdjson::dom::object obj;
    if (cur.get_object().get(obj) != simdjson::SUCCESS) return Lookup::kBlocked;
    if (obj.at_key(segment).get(cur) != simdjson::SUCCESS) return Lookup::kAbsent;
  }
  if (cur.is_null()) return Lookup::kAbsent;
  *out = cur;
  return Lookup::kFound;
}

// A short, printable rendering of a JSON value for reject details.
std::string Describe(simdjson::dom::element e) {
  std::string text = simdjson::minify(e);
  if (text.size() > 64) {
    text.resize(61);
    text += "...";
  }
  return text;
}

void Reject(ParsedRecord* out, const char* reason, std::string detail) {
  out->reject = reason;
  out->detail = std::move(detail);
}

// Where a dotted path leads in a document parsed by nlohmann::json (the fallback parser).
Lookup FindSlow(const nlohmann::json& root, const std::vector<std::string>& path,
                const nlohmann::json** out) {
  const nlohmann::json* cur = &root;
  for (const std::string& segment : path) {
    if (!cur->is_object()) return Lookup::kBlocked;
    auto it = cur->find(segment);
    if (it == cur->end()) return Lookup::kAbsent;
    cur = &*it;
  }
  if (cur->is_null()) return Lookup::kAbsent;
  *out = cur;
  return Lookup::kFound;
}

std::string DescribeSlow(const nlohmann::json& e) {
  std::string text = e.dump();
  if (text.size() > 64) {
    text.resize(61);
    text += "...";
  }
  return text;
}

}  // namespace

struct RecordParser::Impl {
  std::vector<std::vector<std::string>> index_paths;  // one per ParserOptions::index_fields
  std::vector<MetaRef> index_meta;                    // one per ParserOptions::index_fields
  MetaRef id_meta;
  MetaRef ts_meta;
  std::vector<std::string> index_fields;
  std::vector<std::string> id_path;
  std::vector<std::string> ts_path;
  std::string id_field;
  std::string ts_field;
  simdjson::dom::parser parser;
};

RecordParser::RecordParser(const ParserOptions& options) : impl_(std::make_unique<Impl>()) {
  impl_->id_path = SplitDottedPath(options.id_field);
  impl_->ts_path = SplitDottedPath(options.ts_field);
  impl_->id_field = options.id_field;
  impl_->ts_field = options.ts_field;
  impl_->index_fields = options.index_fields;
  // A name that is not a valid meta reference is read as a path (config refuses such names).
  if (!ParseMetaRef(options.id_field, &impl_->id_meta)) impl_->id_meta = MetaRef();
  if (!ParseMetaRef(options.ts_field, &impl_->ts_meta)) impl_->ts_meta = MetaRef();
  for (const std::string& f : options.index_fields) {
    impl_->index_paths.push_back(SplitDottedPath(f));
    MetaRef meta;
    if (!ParseMetaRef(f, &meta)) meta = MetaRef();
    impl_->index_meta.push_back(std::move(meta));
  }
}

RecordParser::~RecordParser() = default;

namespace {

// One field of the record as found by either parser.
struct Field {
  Lookup lookup = Lookup::kAbsent;
  enum class Kind { kString, kSigned, kUnsigned, kOther } kind = Kind::kOther;
  std::string_view str;  // kString; points into the parsed document
  int64_t i = 0;         // kSigned
  uint64_t u = 0;        // kUnsigned
  std::string other;     // kOther: a short rendering for the reject detail
};

Field FieldAt(simdjson::dom::element root, const std::vector<std::string>& path) {
  Field f;
  if (path.empty()) return f;
  simdjson::dom::element e;
  f.lookup = Find(root, path, &e);
  if (f.lookup != Lookup::kFound) return f;
  switch (e.type()) {
    case simdjson::dom::element_type::STRING:
      f.kind = Field::Kind::kString;
      f.str = e.get_string().value_unsafe();
      break;
    case simdjson::dom::element_type::INT64:
      f.kind = Field::Kind::kSigned;
      f.i = e.get_int64().value_unsafe();
      break;
    case simdjson::dom::element_type::UINT64:
      f.kind = Field::Kind::kUnsigned;
      f.u = e.get_uint64().value_unsafe();
      break;
    default:
      f.other = Describe(e);
      break;
  }
  return f;
}

Field FieldAt(const nlohmann::json& root, const std::vector<std::string>& path) {
  Field f;
  if (path.empty()) return f;
  const nlohmann::json* e = nullptr;
  f.lookup = FindSlow(root, path, &e);
  if (f.lookup != Lookup::kFound) return f;
  if (e->is_string()) {
    f.kind = Field::Kind::kString;
    f.str = e->get_ref<const std::string&>();
  } else if (e->is_number_unsigned()) {
    f.kind = Field::Kind::kUnsigned;
    f.u = e->get<uint64_t>();
  } else if (e->is_number_integer()) {
    f.kind = Field::Kind::kSigned;
    f.i = e->get<int64_t>();
  } else {
    f.other = DescribeSlow(*e);
  }
  return f;
}

// The record's key, a header or its Kafka timestamp (record_meta.h) as a field.
Field MetaFieldAt(const RecordView& record, const MetaRef& meta) {
  Field f;
  switch (meta.kind) {
    case MetaRef::Kind::kNone:
      break;
    case MetaRef::Kind::kKey:
      if (!record.key.empty()) {
        f.lookup = Lookup::kFound;
        f.kind = Field::Kind::kString;
        f.str = record.key;
      }
      break;
    case MetaRef::Kind::kHeader:
      if (const RecordHeader* h = FindHeader(record.headers, meta.header); h && !h->null) {
        f.lookup = Lookup::kFound;
        f.kind = Field::Kind::kString;
        f.str = h->value;
      }
      break;
    case MetaRef::Kind::kTimestamp:
      if (record.kafka_ts_ms >= 0) {
        f.lookup = Lookup::kFound;
        f.kind = Field::Kind::kSigned;
        f.i = record.kafka_ts_ms;
      }
      break;
  }
  return f;
}

// Applies the id and time rules to the fields found. See the class comment.
void Decide(const Field& id, const Field& ts, const RecordView& record, const std::string& id_field,
            const std::string& ts_field, int64_t window_start_ms, int64_t max_time_ms,
            ParsedRecord* out) {
  char digits[24];
  switch (id.lookup) {
    case Lookup::kBlocked:
      Reject(out, kRejectNoId, id_field + ": a segment of the path is not an object");
      return;
    case Lookup::kAbsent:
      if (record.key.empty()) {
        Reject(out, kRejectNoId, "no " + id_field + " and no record key");
        return;
      }
      out->id.assign(record.key);
      break;
    case Lookup::kFound:
      switch (id.kind) {
        case Field::Kind::kString:
          out->id.assign(id.str);
          break;
        case Field::Kind::kSigned:
          out->id.assign(digits, std::to_chars(digits, digits + sizeof(digits), id.i).ptr);
          break;
        case Field::Kind::kUnsigned:
          out->id.assign(digits, std::to_chars(digits, digits + sizeof(digits), id.u).ptr);
          break;
        case Field::Kind::kOther:
          Reject(out, kRejectNoId, id_field + ": expected a string or an integer, got " + id.other);
          return;
      }
      if (out->id.empty()) {
        Reject(out, kRejectNoId, id_field + " is an empty string");
        return;
      }
      break;
  }
  if (out->id.size() > keying::kMaxIdSize) {
    Reject(out, kRejectIdTooLong,
           "id of " + std::to_string(out->id.size()) + " bytes, at most " +
               std::to_string(keying::kMaxIdSize) + " allowed");
    return;
  }
  // Only a record key can bring one: simdjson has validated every string of the value.
  if (!simdjson::validate_utf8(out->id.data(), out->id.size())) {
    Reject(out, kRejectIdNotUtf8, "the id is not valid UTF-8");
    return;
  }

  switch (ts.lookup) {
    case Lookup::kBlocked:
      Reject(out, kRejectBadTime, ts_field + ": a segment of the path is not an object");
      return;
    case Lookup::kAbsent:
      if (record.kafka_ts_ms < 0) {
        Reject(out, kRejectBadTime, "no " + ts_field + " and no Kafka timestamp");
        return;
      }
      out->ts_ms = record.kafka_ts_ms;
      break;
    case Lookup::kFound:
      switch (ts.kind) {
        case Field::Kind::kSigned:
          if (ts.i < 0) {
            Reject(out, kRejectBadTime, ts_field + ": negative time " + std::to_string(ts.i));
            return;
          }
          out->ts_ms = ts.i / record.ts_units_per_ms;
          break;
        case Field::Kind::kUnsigned:
          if (ts.u > static_cast<uint64_t>(INT64_MAX)) {
            Reject(out, kRejectBadTime, ts_field + ": time out of range " + std::to_string(ts.u));
            return;
          }
          out->ts_ms = static_cast<int64_t>(ts.u) / record.ts_units_per_ms;
          break;
        case Field::Kind::kString: {
          Result<int64_t> t = ParseTimeMs(ts.str);
          if (!t.ok()) {
            Reject(out, kRejectBadTime, ts_field + ": " + t.status().message());
            return;
          }
          out->ts_ms = *t;
          break;
        }
        case Field::Kind::kOther:
          Reject(out, kRejectBadTime,
                 ts_field + ": expected integer ms or an RFC 3339 string, got " + ts.other);
          return;
      }
      break;
  }

  if (out->ts_ms < window_start_ms) {
    Reject(out, kRejectExpired,
           "time " + FormatRfc3339Ms(out->ts_ms) + " is before the hot window (starts " +
               FormatRfc3339Ms(window_start_ms) + ")");
    return;
  }
  if (out->ts_ms > max_time_ms) {
    Reject(out, kRejectFuture,
           "time " + FormatRfc3339Ms(out->ts_ms) + " is after the allowed future (" +
               FormatRfc3339Ms(max_time_ms) + ")");
    return;
  }
}

// The field at `path` of the value, or the record's part that `meta` names.
template <typename Root>
Field FieldOf(const Root& root, const RecordView& record, const std::vector<std::string>& path,
              const MetaRef& meta) {
  return meta.kind != MetaRef::Kind::kNone ? MetaFieldAt(record, meta) : FieldAt(root, path);
}

bool ScalarText(simdjson::dom::element e, std::string* text) {
  char digits[24];
  switch (e.type()) {
    case simdjson::dom::element_type::STRING:
      text->assign(e.get_string().value_unsafe());
      return true;
    case simdjson::dom::element_type::INT64: {
      const int64_t v = e.get_int64().value_unsafe();
      text->assign(digits, std::to_chars(digits, digits + sizeof(digits), v).ptr);
      return true;
    }
    case simdjson::dom::element_type::UINT64: {
      const uint64_t v = e.get_uint64().value_unsafe();
      text->assign(digits, std::to_chars(digits, digits + sizeof(digits), v).ptr);
      return true;
    }
    case simdjson::dom::element_type::DOUBLE:
      text->assign(simdjson::minify(e));
      return true;
    case simdjson::dom::element_type::BOOL:
      text->assign(e.get_bool().value_unsafe() ? "true" : "false");
      return true;
    default:
      return false;
  }
}

bool ScalarText(const nlohmann::json& e, std::string* text) {
  if (e.is_string()) {
    text->assign(e.get_ref<const std::string&>());
    return true;
  }
  if (e.is_number() || e.is_boolean()) {
    text->assign(e.dump());
    return true;
  }
  return false;
}

// Counts a field that gives no index row, or keeps the text in `*entry` as one more entry.
// Returns true when the entry is kept.
bool KeepIndexText(Lookup lookup, bool scalar, const keying::IndexEntry& entry, ParsedRecord* out) {
  if (lookup == Lookup::kAbsent) {
    ++out->index_absent;
  } else if (lookup == Lookup::kBlocked || !scalar) {
    ++out->index_not_scalar;
  } else if (entry.value.size() > keying::kMaxIndexValueSize) {
    ++out->index_too_long;
  } else {
    return true;
  }
  return false;
}

// Fills out->index and its counters for every index path. Entries reuse their strings' capacity.
template <typename Root>
void ExtractIndex(const Root& root, const RecordView& record, const std::vector<std::string>& fields,
                  const std::vector<std::vector<std::string>>& paths,
                  const std::vector<MetaRef>& metas, ParsedRecord* out) {
  size_t n = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (out->index.size() == n) out->index.emplace_back();
    keying::IndexEntry& entry = out->index[n];
    bool scalar = false;
    Lookup lookup;
    if (metas[i].kind != MetaRef::Kind::kNone) {
      const Field f = MetaFieldAt(record, metas[i]);
      lookup = f.lookup;
      if (lookup == Lookup::kFound && f.kind == Field::Kind::kString) {
        scalar = simdjson::validate_utf8(f.str.data(), f.str.size());
        entry.value.assign(f.str);
      } else if (lookup == Lookup::kFound) {
        scalar = true;
        entry.value = std::to_string(f.i);
      }
    } else if constexpr (std::is_same_v<Root, nlohmann::json>) {
      const nlohmann::json* e = nullptr;
      lookup = FindSlow(root, paths[i], &e);
      if (lookup == Lookup::kFound) scalar = ScalarText(*e, &entry.value);
    } else {
      simdjson::dom::element e;
      lookup = Find(root, paths[i], &e);
      if (lookup == Lookup::kFound) scalar = ScalarText(e, &entry.value);
    }
    if (!KeepIndexText(lookup, scalar, entry, out)) continue;
    entry.field.assign(fields[i]);
    ++n;
  }
  out->index.resize(n);
}

}  // namespace

void RecordParser::Parse(const RecordView& record, int64_t window_start_ms, int64_t max_time_ms,
                         ParsedRecord* out) {
  out->reject = nullptr;
  out->detail.clear();
  out->id.clear();
  out->ts_ms = 0;
  out->index_absent = out->index_not_scalar = out->index_too_long = 0;
  out->index.clear();
  if (record.value.empty()) {
    Reject(out, kRejectNotJson, "empty value");
    return;
  }

  simdjson::dom::element doc;
  // realloc_if_needed: copies the value into the parser's own padded buffer (reused).
  simdjson::error_code err =
      impl_->parser.parse(record.value.data(), record.value.size(), true).get(doc);
  if (err == simdjson::SUCCESS) {
    if (!doc.is_object()) {
      Reject(out, kRejectNotJson, "not a JSON object");
      return;
    }
    Decide(FieldOf(doc, record, impl_->id_path, impl_->id_meta),
           FieldOf(doc, record, impl_->ts_path, impl_->ts_meta), record, impl_->id_field,
           impl_->ts_field, window_start_ms, max_time_ms, out);
    if (out->ok()) {
      ExtractIndex(doc, record, impl_->index_fields, impl_->index_paths, impl_->index_meta, out);
    }
    return;
  }
  if (err != simdjson::NUMBER_ERROR && err != simdjson::NUMBER_OUT_OF_RANGE) {
    Reject(out, kRejectNotJson, std::string("not JSON: ") + simdjson::error_message(err));
    return;
  }
  // simdjson refuses integers beyond 64 bits, which JSON allows: records with a number simdjson
  // refuses take the slower parser, which reads big integers as doubles and refuses malformed
  // numbers as simdjson does. nlohmann stops reading at a NUL byte and would accept what precedes
  // it; JSON text holds no raw NUL anywhere, so such a value is refused first (found by fuzzing).
  if (record.value.find('\0') != std::string_view::npos) {
    Reject(out, kRejectNotJson, "not JSON: a NUL byte");
    return;
  }
  nlohmann::json slow = nlohmann::json::parse(record.value, nullptr, /*allow_exceptions=*/false);
  if (slow.is_discarded()) {
    Reject(out, kRejectNotJson, "not JSON");
    return;
  }
  if (!slow.is_object()) {
    Reject(out, kRejectNotJson, "not a JSON object");
    return;
  }
  Decide(FieldOf(slow, record, impl_->id_path, impl_->id_meta),
         FieldOf(slow, record, impl_->ts_path, impl_->ts_meta), record, impl_->id_field,
         impl_->ts_field, window_start_ms, max_time_ms, out);
  if (out->ok()) {
    ExtractIndex(slow, record, impl_->index_fields, impl_->index_paths, impl_->index_meta, out);
  }
}

}  // namespace hotrow::ingest
