#include "cluster/coverage.h"

#include <algorithm>
#include <tuple>

#include <simdjson.h>

#include "wire/event_json.h"

namespace hotrow::cluster {

CoverageDecision DecideCoverage(const Partitions& all, const std::vector<PeerCoverage>& peers) {
  CoverageDecision out;
  for (size_t i = 0; i < peers.size(); ++i) {
    if (!peers[i].answered) continue;
    for (const store::TopicPartition& tp : peers[i].covered) out.owner.emplace(tp, i);
  }
  for (const store::TopicPartition& tp : all) {
    if (out.owner.count(tp) == 0) out.missing.push_back(tp);
  }
  std::sort(out.missing.begin(), out.missing.end());
  out.missing.erase(std::unique(out.missing.begin(), out.missing.end()), out.missing.end());
  out.complete = out.missing.empty();
  if (all.empty()) {
    // The partitions are not known (the brokers did not answer yet): only an answer from every
    // instance can be complete.
    for (const PeerCoverage& peer : peers) out.complete = out.complete && peer.answered;
  }
  return out;
}

std::vector<PeerEvent> MergePeerEvents(std::vector<std::vector<PeerEvent>> per_peer,
                                       const CoverageDecision& decision, int64_t limit,
                                       query::Order order) {
  std::vector<PeerEvent> all;
  for (size_t i = 0; i < per_peer.size(); ++i) {
    for (PeerEvent& e : per_peer[i]) {
      auto it = decision.owner.find(store::TopicPartition{e.topic, e.partition});
      if (it == decision.owner.end() || it->second != i) continue;
      all.push_back(std::move(e));
    }
  }
  auto key = [](const PeerEvent& e) { return std::tie(e.ts_ms, e.topic, e.partition, e.offset); };
  if (order == query::Order::kDesc) {
    std::sort(all.begin(), all.end(), [&](const auto& a, const auto& b) { return key(a) > key(b); });
  } else {
    std::sort(all.begin(), all.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  }
  // The same record twice (an instance that answered twice): once.
  all.erase(std::unique(all.begin(), all.end(),
                        [&](const auto& a, const auto& b) { return key(a) == key(b); }),
            all.end());
  if (limit >= 0 && static_cast<int64_t>(all.size()) > limit) all.resize(static_cast<size_t>(limit));
  return all;
}

namespace {

Status ReadEvent(simdjson::ondemand::value value, PeerEvent* out) {
  simdjson::ondemand::object object;
  if (value.get_object().get(object) != simdjson::SUCCESS) {
    return Status::InvalidArgument("an event is not an object");
  }
  std::string_view raw;
  if (object.raw_json().get(raw) != simdjson::SUCCESS) {
    return Status::InvalidArgument("an event is not valid JSON");
  }
  out->json.assign(raw);
  object.reset();
  std::string_view topic;
  int64_t partition = 0;
  if (object["ts"].get_int64().get(out->ts_ms) != simdjson::SUCCESS ||
      object["topic"].get_string().get(topic) != simdjson::SUCCESS ||
      object["partition"].get_int64().get(partition) != simdjson::SUCCESS ||
      object["offset"].get_int64().get(out->offset) != simdjson::SUCCESS) {
    return Status::InvalidArgument("an event lacks ts, topic, partition or offset");
  }
  out->topic.assign(topic);
  out->partition = static_cast<int32_t>(partition);
  return Status::Ok();
}

Status ReadPartitions(simdjson::ondemand::value value, Partitions* out) {
  simdjson::ondemand::object object;
  if (value.get_object().get(object) != simdjson::SUCCESS) {
    return Status::InvalidArgument("partitions is not an object");
  }
  for (auto field : object) {
    std::string_view topic;
    simdjson::ondemand::array list;
    if (field.unescaped_key().get(topic) != simdjson::SUCCESS ||
        field.value().get_array().get(list) != simdjson::SUCCESS) {
      return Status::InvalidArgument("partitions is not {topic: [partition...]}");
    }
    const std::string name(topic);
    for (auto item : list) {
      int64_t p = 0;
      if (item.get_int64().get(p) != simdjson::SUCCESS) {
        return Status::InvalidArgument("a partition is not an integer");
      }
      out->push_back({name, static_cast<int32_t>(p)});
    }
  }
  return Status::Ok();
}

}  // namespace

Status ParseLocalAnswer(std::string_view body, std::vector<PeerEvent>* events,
                        Partitions* covered) {
  simdjson::ondemand::parser parser;
  const simdjson::padded_string padded(body);
  simdjson::ondemand::document doc;
  simdjson::ondemand::object root;
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS ||
      doc.get_object().get(root) != simdjson::SUCCESS) {
    return Status::InvalidArgument("the answer is not a JSON object");
  }
  bool saw_events = false, saw_partitions = false;
  for (auto field : root) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) {
      return Status::InvalidArgument("the answer is not valid JSON");
    }
    if (key == "events") {
      simdjson::ondemand::array list;
      if (field.value().get_array().get(list) != simdjson::SUCCESS) {
        return Status::InvalidArgument("events is not a list");
      }
      for (auto item : list) {
        simdjson::ondemand::value v;
        if (item.get(v) != simdjson::SUCCESS) return Status::InvalidArgument("bad event");
        PeerEvent e;
        HOTROW_RETURN_IF_ERROR(ReadEvent(v, &e));
        events->push_back(std::move(e));
      }
      saw_events = true;
    } else if (key == "partitions") {
      simdjson::ondemand::value v;
      if (field.value().get(v) != simdjson::SUCCESS) return Status::InvalidArgument("bad partitions");
      HOTROW_RETURN_IF_ERROR(ReadPartitions(v, covered));
      saw_partitions = true;
    }
  }
  if (!saw_events || !saw_partitions) {
    return Status::InvalidArgument("the answer lacks events or partitions (not a ?local=true answer)");
  }
  return Status::Ok();
}

Status ParseScanLine(std::string_view line, bool* is_event, PeerEvent* event,
                     Partitions* covered) {
  // hotrow writes these two lines itself, in this form (http_cluster_handlers.cc, and the
  // {"error": ...} line of a scan cut short).
  if (line.starts_with("{\"error\"")) {
    return Status::IOError("the peer's scan failed: " + std::string(line.substr(0, 300)));
  }
  simdjson::ondemand::parser parser;
  const simdjson::padded_string padded(line);
  simdjson::ondemand::document doc;
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS) {
    return Status::InvalidArgument("a scan line is not JSON");
  }
  if (line.starts_with("{\"complete\"")) {
    *is_event = false;
    simdjson::ondemand::value partitions;
    if (doc["partitions"].get(partitions) != simdjson::SUCCESS) {
      return Status::InvalidArgument("the scan's last line has no partitions");
    }
    return ReadPartitions(partitions, covered);
  }
  *is_event = true;
  simdjson::ondemand::value v;
  if (doc.get_value().get(v) != simdjson::SUCCESS) return Status::InvalidArgument("bad line");
  return ReadEvent(v, event);
}

Status ParseServingPartitions(std::string_view body, Partitions* out) {
  simdjson::ondemand::parser parser;
  const simdjson::padded_string padded(body);
  simdjson::ondemand::document doc;
  simdjson::ondemand::value v;
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS ||
      doc["partitions"].get(v) != simdjson::SUCCESS) {
    return Status::InvalidArgument("not a /v1/cluster?local=true answer");
  }
  return ReadPartitions(v, out);
}

Status ParsePartitionsJson(std::string_view text, Partitions* out) {
  simdjson::ondemand::parser parser;
  const simdjson::padded_string padded(text);
  simdjson::ondemand::document doc;
  simdjson::ondemand::value v;
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS ||
      doc.get_value().get(v) != simdjson::SUCCESS) {
    return Status::InvalidArgument("partitions is not JSON");
  }
  return ReadPartitions(v, out);
}

void AppendPartitionsJson(Partitions partitions, std::string* out) {
  std::sort(partitions.begin(), partitions.end());
  out->push_back('{');
  for (size_t i = 0; i < partitions.size(); ++i) {
    const bool new_topic = i == 0 || partitions[i].topic != partitions[i - 1].topic;
    if (new_topic) {
      if (i != 0) out->append("],");
      wire::AppendJsonString(partitions[i].topic, out);
      out->append(":[");
    } else {
      out->push_back(',');
    }
    out->append(std::to_string(partitions[i].partition));
  }
  if (!partitions.empty()) out->push_back(']');
  out->push_back('}');
}

}  // namespace hotrow::cluster
