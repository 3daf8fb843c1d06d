#include "cluster/local_answer.h"

#include <simdjson.h>

#include <algorithm>

#include "wire/event_json.h"

namespace hotrow::cluster {

void AppendUnindexedJson(const std::vector<query::UnindexedSpan>& spans, std::string* out) {
  if (spans.empty()) return;
  out->append(",\"unindexed\":[");
  for (size_t i = 0; i < spans.size(); ++i) {
    if (i > 0) out->push_back(',');
    out->append("{\"from\":" + std::to_string(spans[i].start_ms) +
                ",\"to\":" + std::to_string(spans[i].end_ms) + "}");
  }
  out->push_back(']');
}

void AppendLocalHead(const LocalHead& head, std::string* out) {
  out->append(",\"partitions\":");
  AppendPartitionsJson(head.partitions, out);
  out->append(",\"stale\":");
  AppendPartitionsJson(head.stale, out);
  out->append(",\"group\":");
  wire::AppendJsonString(head.group, out);
  out->append(",\"topics\":[");
  for (size_t i = 0; i < head.topics.size(); ++i) {
    if (i != 0) out->push_back(',');
    wire::AppendJsonString(head.topics[i], out);
  }
  out->push_back(']');
  AppendUnindexedJson(head.unindexed, out);
  out->append(head.complete ? ",\"complete\":true" : ",\"complete\":false");
}

namespace {

using simdjson::SUCCESS;

Status ReadEvent(simdjson::ondemand::value value, PeerEvent* out) {
  simdjson::ondemand::object object;
  if (value.get_object().get(object) != SUCCESS) {
    return Status::InvalidArgument("an event is not an object");
  }
  std::string_view raw;
  if (object.raw_json().get(raw) != SUCCESS) {
    return Status::InvalidArgument("an event is not valid JSON");
  }
  out->json.assign(raw);
  object.reset();
  std::string_view topic;
  int64_t partition = 0;
  if (object["ts"].get_int64().get(out->ts_ms) != SUCCESS ||
      object["topic"].get_string().get(topic) != SUCCESS ||
      object["partition"].get_int64().get(partition) != SUCCESS ||
      object["offset"].get_int64().get(out->offset) != SUCCESS) {
    return Status::InvalidArgument("an event lacks ts, topic, partition or offset");
  }
  out->topic.assign(topic);
  out->partition = static_cast<int32_t>(partition);
  return Status::Ok();
}

Status ReadPartitions(simdjson::ondemand::value value, Partitions* out) {
  simdjson::ondemand::object object;
  if (value.get_object().get(object) != SUCCESS) {
    return Status::InvalidArgument("partitions is not an object");
  }
  for (auto field : object) {
    std::string_view topic;
    simdjson::ondemand::array list;
    if (field.unescaped_key().get(topic) != SUCCESS ||
        field.value().get_array().get(list) != SUCCESS) {
      return Status::InvalidArgument("partitions is not {topic: [partition...]}");
    }
    const std::string name(topic);
    for (auto item : list) {
      int64_t p = 0;
      if (item.get_int64().get(p) != SUCCESS) {
        return Status::InvalidArgument("a partition is not an integer");
      }
      out->push_back({name, static_cast<int32_t>(p)});
    }
  }
  return Status::Ok();
}

Status ReadUnindexed(simdjson::ondemand::value value, std::vector<query::UnindexedSpan>* out) {
  simdjson::ondemand::array list;
  if (value.get_array().get(list) != SUCCESS) {
    return Status::InvalidArgument("unindexed is not a list");
  }
  for (auto item : list) {
    simdjson::ondemand::object span;
    query::UnindexedSpan s;
    if (item.get_object().get(span) != SUCCESS ||
        span["from"].get_int64().get(s.start_ms) != SUCCESS ||
        span["to"].get_int64().get(s.end_ms) != SUCCESS) {
      return Status::InvalidArgument("unindexed is not [{\"from\": MS, \"to\": MS}...]");
    }
    out->push_back(s);
  }
  return Status::Ok();
}

// One member of an answer object that belongs to the head; `*known` false for any other.
Status ReadHeadMember(std::string_view key, simdjson::ondemand::value value, LocalHead* head,
                      bool* known) {
  *known = true;
  if (key == "partitions") return ReadPartitions(value, &head->partitions);
  if (key == "stale") return ReadPartitions(value, &head->stale);
  if (key == "unindexed") return ReadUnindexed(value, &head->unindexed);
  if (key == "complete") {
    return value.get_bool().get(head->complete) == SUCCESS
               ? Status::Ok()
               : Status::InvalidArgument("complete is not a boolean");
  }
  if (key == "ready") {
    return value.get_bool().get(head->ready) == SUCCESS
               ? Status::Ok()
               : Status::InvalidArgument("ready is not a boolean");
  }
  if (key == "lag") {
    return value.get_int64().get(head->lag) == SUCCESS
               ? Status::Ok()
               : Status::InvalidArgument("lag is not an integer");
  }
  if (key == "group") {
    std::string_view group;
    if (value.get_string().get(group) != SUCCESS) {
      return Status::InvalidArgument("group is not a string");
    }
    head->group.assign(group);
    return Status::Ok();
  }
  if (key == "topics") {
    simdjson::ondemand::array list;
    if (value.get_array().get(list) != SUCCESS)
      return Status::InvalidArgument("topics is not a list");
    for (auto item : list) {
      std::string_view topic;
      if (item.get_string().get(topic) != SUCCESS) {
        return Status::InvalidArgument("a topic is not a string");
      }
      head->topics.emplace_back(topic);
    }
    std::sort(head->topics.begin(), head->topics.end());
    return Status::Ok();
  }
  *known = false;
  return Status::Ok();
}

// Reads the members of `root` into `head` (and "events" into `events` when not null). Fails when
// "partitions" or "group" is absent: not a hotrow ?local=true answer.
Status ReadAnswerObject(simdjson::ondemand::object root, std::vector<PeerEvent>* events,
                        LocalHead* head) {
  bool saw_events = false, saw_partitions = false, saw_group = false;
  for (auto field : root) {
    std::string_view key;
    if (field.unescaped_key().get(key) != SUCCESS) {
      return Status::InvalidArgument("the answer is not valid JSON");
    }
    simdjson::ondemand::value value;
    if (field.value().get(value) != SUCCESS) return Status::InvalidArgument("bad member");
    if (key == "events" && events != nullptr) {
      simdjson::ondemand::array list;
      if (value.get_array().get(list) != SUCCESS) {
        return Status::InvalidArgument("events is not a list");
      }
      for (auto item : list) {
        simdjson::ondemand::value v;
        if (item.get(v) != SUCCESS) return Status::InvalidArgument("bad event");
        PeerEvent e;
        HOTROW_RETURN_IF_ERROR(ReadEvent(v, &e));
        events->push_back(std::move(e));
      }
      saw_events = true;
      continue;
    }
    bool known = false;
    HOTROW_RETURN_IF_ERROR(ReadHeadMember(key, value, head, &known));
    saw_partitions = saw_partitions || key == "partitions";
    saw_group = saw_group || key == "group";
  }
  if ((events != nullptr && !saw_events) || !saw_partitions) {
    return Status::InvalidArgument(
        "the answer lacks events or partitions (not a hotrow ?local=true answer)");
  }
  if (!saw_group) {
    return Status::InvalidArgument("the answer does not name its group (not a hotrow peer)");
  }
  return Status::Ok();
}

Status ParseObject(std::string_view body, std::vector<PeerEvent>* events, LocalHead* head) {
  thread_local simdjson::ondemand::parser parser;  // its buffers are reused by the next answer
  const simdjson::padded_string padded(body);
  simdjson::ondemand::document doc;
  simdjson::ondemand::object root;
  if (parser.iterate(padded).get(doc) != SUCCESS || doc.get_object().get(root) != SUCCESS) {
    return Status::InvalidArgument("the answer is not a JSON object");
  }
  return ReadAnswerObject(root, events, head);
}

}  // namespace

Status ParseLocalAnswer(std::string_view body, std::vector<PeerEvent>* events, LocalHead* head) {
  return ParseObject(body, events, head);
}

Status ParseClusterLocal(std::string_view body, LocalHead* head) {
  return ParseObject(body, nullptr, head);
}

Status ParseScanLine(std::string_view line, bool* is_event, PeerEvent* event, LocalHead* head) {
  // hotrow writes these two lines itself, in this form (a scan's last line, and the
  // {"error": ...} line of a scan cut short).
  if (line.starts_with("{\"error\"")) {
    return Status::IOError("the peer's scan failed: " + std::string(line.substr(0, 300)));
  }
  if (line.starts_with("{\"complete\"")) {
    *is_event = false;
    return ParseObject(line, nullptr, head);
  }
  thread_local simdjson::ondemand::parser parser;  // its buffers are reused by the next answer
  const simdjson::padded_string padded(line);
  simdjson::ondemand::document doc;
  simdjson::ondemand::value v;
  if (parser.iterate(padded).get(doc) != SUCCESS || doc.get_value().get(v) != SUCCESS) {
    return Status::InvalidArgument("a scan line is not JSON");
  }
  *is_event = true;
  return ReadEvent(v, event);
}

Status ParsePartitionsJson(std::string_view text, Partitions* out) {
  thread_local simdjson::ondemand::parser parser;  // its buffers are reused by the next answer
  const simdjson::padded_string padded(text);
  simdjson::ondemand::document doc;
  simdjson::ondemand::value v;
  if (parser.iterate(padded).get(doc) != SUCCESS || doc.get_value().get(v) != SUCCESS) {
    return Status::InvalidArgument("partitions is not JSON");
  }
  return ReadPartitions(v, out);
}

Status SameGroup(const LocalHead& self, const LocalHead& peer) {
  if (peer.group != self.group) {
    return Status::InvalidArgument("it is an instance of group \"" + peer.group +
                                   "\", this one of \"" + self.group + "\"");
  }
  if (peer.topics != self.topics) {
    std::string theirs;
    for (const std::string& t : peer.topics) theirs += (theirs.empty() ? "" : ",") + t;
    std::string ours;
    for (const std::string& t : self.topics) ours += (ours.empty() ? "" : ",") + t;
    return Status::InvalidArgument("it consumes topics [" + theirs + "], this one [" + ours + "]");
  }
  return Status::Ok();
}

}  // namespace hotrow::cluster
