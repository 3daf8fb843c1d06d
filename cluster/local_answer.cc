#include "cluster/local_answer.h"

#include <simdjson.h>

#include <algorithm>
#include <functional>
#include <limits>

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
  if (!head.standby.empty()) {
    out->append(",\"standby\":");
    AppendPartitionsJson(head.standby, out);
  }
  out->append(",\"group\":");
  wire::AppendJsonString(head.group, out);
  out->append(",\"topics\":[");
  for (size_t i = 0; i < head.topics.size(); ++i) {
    if (i != 0) out->push_back(',');
    wire::AppendJsonString(head.topics[i], out);
  }
  out->push_back(']');
  AppendUnindexedJson(head.unindexed, out);
  if (!head.route_partitions.empty()) {
    out->append(",\"routable\":");
    AppendPartitionsJson(head.routable, out);
    out->append(",\"route_partitions\":{");
    bool first = true;
    for (const auto& [topic, count] : head.route_partitions) {
      if (!first) out->push_back(',');
      first = false;
      wire::AppendJsonString(topic, out);
      out->append(":" + std::to_string(count));
    }
    out->push_back('}');
  }
  if (!head.positions.empty()) {
    out->append(",\"positions\":{");
    const std::string* topic = nullptr;
    for (const auto& [tp, offset] : head.positions) {
      if (topic == nullptr || *topic != tp.topic) {
        if (topic != nullptr) out->append("],");
        wire::AppendJsonString(tp.topic, out);
        out->append(":[");
        topic = &tp.topic;
      } else {
        out->push_back(',');
      }
      out->append("[" + std::to_string(tp.partition) + "," + std::to_string(offset) + "]");
    }
    out->append("]}");
  }
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
  std::string_view id, topic;
  int64_t partition = 0;
  if (object["event_id"].get_string().get(id) != SUCCESS) {
    return Status::InvalidArgument("an event lacks event_id");
  }
  out->id.assign(id);
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

// {"t":[[P,OFFSET]...]} (AppendLocalHead's positions).
Status ReadPositions(simdjson::ondemand::value value,
                     std::map<store::TopicPartition, int64_t>* out) {
  simdjson::ondemand::object object;
  if (value.get_object().get(object) != SUCCESS) {
    return Status::InvalidArgument("positions is not an object");
  }
  for (auto field : object) {
    std::string_view topic;
    simdjson::ondemand::array list;
    if (field.unescaped_key().get(topic) != SUCCESS ||
        field.value().get_array().get(list) != SUCCESS) {
      return Status::InvalidArgument("positions is not {topic: [[partition, offset]...]}");
    }
    const std::string name(topic);
    for (auto item : list) {
      simdjson::ondemand::array pair;
      int64_t partition = -1, offset = -1;
      if (item.get_array().get(pair) != SUCCESS) {
        return Status::InvalidArgument("a position is not [partition, offset]");
      }
      size_t n = 0;
      for (auto number : pair) {
        int64_t v = 0;
        if (number.get_int64().get(v) != SUCCESS || n >= 2) {
          return Status::InvalidArgument("a position is not [partition, offset]");
        }
        (n++ == 0 ? partition : offset) = v;
      }
      if (n != 2 || partition < 0 || partition > INT32_MAX || offset < 0) {
        return Status::InvalidArgument("a position is not [partition, offset]");
      }
      (*out)[store::TopicPartition{name, static_cast<int32_t>(partition)}] = offset;
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
  if (key == "standby") return ReadPartitions(value, &head->standby);
  if (key == "unindexed") return ReadUnindexed(value, &head->unindexed);
  if (key == "routable") return ReadPartitions(value, &head->routable);
  if (key == "positions") return ReadPositions(value, &head->positions);
  if (key == "route_partitions") {
    simdjson::ondemand::object counts;
    if (value.get_object().get(counts) != SUCCESS) {
      return Status::InvalidArgument("route_partitions is not an object");
    }
    for (auto field : counts) {
      std::string_view topic;
      int64_t count = 0;
      if (field.unescaped_key().get(topic) != SUCCESS) {
        return Status::InvalidArgument("route_partitions is not valid JSON");
      }
      const std::string name(topic);  // `topic` is not kept once the value is read
      if (field.value().get_int64().get(count) != SUCCESS || count < 1 || count > INT32_MAX) {
        return Status::InvalidArgument("a route_partitions count is not a positive integer");
      }
      head->route_partitions[name] = static_cast<int32_t>(count);
    }
    return Status::Ok();
  }
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

// One member of an answer that is not the head's: `*known` false when the answer has no such
// member.
using BodyMember =
    std::function<Status(std::string_view key, simdjson::ondemand::value value, bool* known)>;

// Reads the members of `root` into `head`, the others through `body` (when not null), which must
// see `body_key`. Fails when "partitions" or "group" is absent: not a hotrow ?local=true answer.
Status ReadAnswerObject(simdjson::ondemand::object root, const BodyMember& body,
                        std::string_view body_key, LocalHead* head) {
  bool saw_body = false, saw_partitions = false, saw_group = false;
  for (auto field : root) {
    std::string_view key;
    if (field.unescaped_key().get(key) != SUCCESS) {
      return Status::InvalidArgument("the answer is not valid JSON");
    }
    simdjson::ondemand::value value;
    if (field.value().get(value) != SUCCESS) return Status::InvalidArgument("bad member");
    bool known = false;
    if (body) {
      const std::string member(key);  // `key` is not kept once the value is read
      HOTROW_RETURN_IF_ERROR(body(member, value, &known));
      if (known) {
        saw_body = saw_body || member == body_key;
        continue;
      }
    }
    HOTROW_RETURN_IF_ERROR(ReadHeadMember(key, value, head, &known));
    saw_partitions = saw_partitions || key == "partitions";
    saw_group = saw_group || key == "group";
  }
  if ((body && !saw_body) || !saw_partitions) {
    return Status::InvalidArgument("the answer lacks " +
                                   (body ? std::string(body_key) + " or " : std::string()) +
                                   "partitions (not a hotrow ?local=true answer)");
  }
  if (!saw_group) {
    return Status::InvalidArgument("the answer does not name its group (not a hotrow peer)");
  }
  return Status::Ok();
}

Status ReadEvents(simdjson::ondemand::value value, std::vector<PeerEvent>* events) {
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
  return Status::Ok();
}

BodyMember EventsMember(std::vector<PeerEvent>* events) {
  if (events == nullptr) return nullptr;
  return [events](std::string_view key, simdjson::ondemand::value value, bool* known) {
    *known = key == "events";
    return *known ? ReadEvents(value, events) : Status::Ok();
  };
}

Status ParseObject(std::string_view body, const BodyMember& member, std::string_view member_key,
                   LocalHead* head) {
  thread_local simdjson::ondemand::parser parser;  // its buffers are reused by the next answer
  const simdjson::padded_string padded(body);
  simdjson::ondemand::document doc;
  simdjson::ondemand::object root;
  if (parser.iterate(padded).get(doc) != SUCCESS || doc.get_object().get(root) != SUCCESS) {
    return Status::InvalidArgument("the answer is not a JSON object");
  }
  return ReadAnswerObject(root, member, member_key, head);
}

// A number of a series point; null (what the answering instance writes for a sum that
// overflowed) reads as infinity, which the merge's answer writes as null again.
Status ReadNumber(simdjson::ondemand::value value, double* out) {
  bool is_null = false;
  if (value.is_null().get(is_null) == SUCCESS && is_null) {
    *out = std::numeric_limits<double>::infinity();
    return Status::Ok();
  }
  return value.get_double().get(*out) == SUCCESS
             ? Status::Ok()
             : Status::InvalidArgument("a series number is not a number");
}

Status ReadSeriesPoint(simdjson::ondemand::value value, PeerSeriesPoint* p) {
  simdjson::ondemand::object object;
  if (value.get_object().get(object) != SUCCESS) {
    return Status::InvalidArgument("a series point is not an object");
  }
  bool saw_sum = false, saw_at = false;
  for (auto field : object) {
    std::string_view key;
    simdjson::ondemand::value v;
    if (field.unescaped_key().get(key) != SUCCESS || field.value().get(v) != SUCCESS) {
      return Status::InvalidArgument("a series point is not valid JSON");
    }
    if (key == "t") {
      if (v.get_int64().get(p->t_ms) != SUCCESS) return Status::InvalidArgument("bad t");
    } else if (key == "count") {
      if (v.get_uint64().get(p->count) != SUCCESS) return Status::InvalidArgument("bad count");
    } else if (key == "sum") {
      HOTROW_RETURN_IF_ERROR(ReadNumber(v, &p->sum));
      saw_sum = true;
    } else if (key == "min") {
      HOTROW_RETURN_IF_ERROR(ReadNumber(v, &p->min));
    } else if (key == "max") {
      HOTROW_RETURN_IF_ERROR(ReadNumber(v, &p->max));
    } else if (key == "last") {
      HOTROW_RETURN_IF_ERROR(ReadNumber(v, &p->last));
    } else if (key == "last_at") {
      simdjson::ondemand::object at;
      std::string_view topic;
      int64_t partition = 0;
      if (v.get_object().get(at) != SUCCESS || at["ts"].get_int64().get(p->last_ts_ms) != SUCCESS ||
          at["topic"].get_string().get(topic) != SUCCESS ||
          at["partition"].get_int64().get(partition) != SUCCESS ||
          at["offset"].get_int64().get(p->last_offset) != SUCCESS) {
        return Status::InvalidArgument("last_at is not {ts, topic, partition, offset}");
      }
      p->last_topic.assign(topic);
      p->last_partition = static_cast<int32_t>(partition);
      saw_at = true;
    }
  }
  if (!saw_sum || !saw_at || p->count == 0) {
    return Status::InvalidArgument("a series point lacks sum, last_at or count (not local)");
  }
  return Status::Ok();
}

Status ReadSeriesMember(std::string_view key, simdjson::ondemand::value value, PeerSeries* out,
                        bool* known) {
  *known = true;
  if (key == "step_ms") {
    return value.get_int64().get(out->step_ms) == SUCCESS
               ? Status::Ok()
               : Status::InvalidArgument("step_ms is not an integer");
  }
  if (key == "points") {
    simdjson::ondemand::array list;
    if (value.get_array().get(list) != SUCCESS) {
      return Status::InvalidArgument("points is not a list");
    }
    for (auto item : list) {
      simdjson::ondemand::value v;
      if (item.get(v) != SUCCESS) return Status::InvalidArgument("bad point");
      PeerSeriesPoint p;
      HOTROW_RETURN_IF_ERROR(ReadSeriesPoint(v, &p));
      out->points.push_back(std::move(p));
    }
    return Status::Ok();
  }
  if (key == "skipped") {
    simdjson::ondemand::object skipped;
    if (value.get_object().get(skipped) != SUCCESS ||
        skipped["absent"].get_uint64().get(out->absent) != SUCCESS ||
        skipped["not_number"].get_uint64().get(out->not_number) != SUCCESS) {
      return Status::InvalidArgument("skipped is not {absent, not_number}");
    }
    return Status::Ok();
  }
  *known = key == "event_id" || key == "field";  // the asker knows them
  return Status::Ok();
}

}  // namespace

Status ParseLocalAnswer(std::string_view body, std::vector<PeerEvent>* events, LocalHead* head) {
  return ParseObject(body, EventsMember(events), "events", head);
}

Status ParseClusterLocal(std::string_view body, LocalHead* head) {
  return ParseObject(body, nullptr, "", head);
}

Status ParseLocalLatestAll(std::string_view body, PeerLatestAll* out, LocalHead* head) {
  auto member = [out](std::string_view key, simdjson::ondemand::value value, bool* known) {
    *known = true;
    if (key == "events") return ReadEvents(value, &out->events);
    if (key == "next") {
      bool is_null = false;
      if (value.is_null().get(is_null) == SUCCESS && is_null) {
        out->next.reset();
        return Status::Ok();
      }
      std::string_view next;
      if (value.get_string().get(next) != SUCCESS) {
        return Status::InvalidArgument("next is neither a string nor null");
      }
      out->next = std::string(next);
      return Status::Ok();
    }
    *known = false;
    return Status::Ok();
  };
  return ParseObject(body, member, "events", head);
}

Status ParseLocalLatestIds(std::string_view body,
                           std::map<std::string, std::vector<PeerEvent>>* out, LocalHead* head) {
  auto member = [out](std::string_view key, simdjson::ondemand::value value, bool* known) {
    *known = key == "ids";
    if (!*known) return Status::Ok();
    simdjson::ondemand::object ids;
    if (value.get_object().get(ids) != SUCCESS) {
      return Status::InvalidArgument("ids is not an object");
    }
    for (auto field : ids) {
      std::string_view id;
      simdjson::ondemand::value list;
      if (field.unescaped_key().get(id) != SUCCESS || field.value().get(list) != SUCCESS) {
        return Status::InvalidArgument("ids is not {id: [event...]}");
      }
      HOTROW_RETURN_IF_ERROR(ReadEvents(list, &(*out)[std::string(id)]));
    }
    return Status::Ok();
  };
  return ParseObject(body, member, "ids", head);
}

Status ParseLocalSeries(std::string_view body, PeerSeries* out, LocalHead* head) {
  auto member = [out](std::string_view key, simdjson::ondemand::value value, bool* known) {
    return ReadSeriesMember(key, value, out, known);
  };
  return ParseObject(body, member, "points", head);
}

Status ParseScanLine(std::string_view line, bool* is_event, PeerEvent* event, LocalHead* head) {
  // hotrow writes these two lines itself, in this form (a scan's last line, and the
  // {"error": ...} line of a scan cut short).
  if (line.starts_with("{\"error\"")) {
    return Status::IOError("the peer's scan failed: " + std::string(line.substr(0, 300)));
  }
  if (line.starts_with("{\"complete\"")) {
    *is_event = false;
    return ParseObject(line, nullptr, "", head);
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
