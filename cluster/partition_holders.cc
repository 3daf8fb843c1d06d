#include "cluster/partition_holders.h"

#include <simdjson.h>

#include <algorithm>
#include <map>

#include "wire/event_json.h"

namespace hotrow::cluster {

namespace {

using simdjson::SUCCESS;

// One entry of an "owned" or "followed" list: {"topic", "partition", "serving", "lag",
// "staleness_ms"[, "rebuilding"][, "why"], ...}; other members are skipped.
Status ReadHolding(simdjson::ondemand::value value, const std::string& address,
                   std::pair<store::TopicPartition, PartitionHolding>* out) {
  simdjson::ondemand::object object;
  if (value.get_object().get(object) != SUCCESS) {
    return Status::InvalidArgument("a partition of the status is not an object");
  }
  out->second.address = address;
  bool saw_topic = false, saw_partition = false, saw_serving = false;
  for (auto field : object) {
    std::string_view key;
    simdjson::ondemand::value v;
    if (field.unescaped_key().get(key) != SUCCESS || field.value().get(v) != SUCCESS) {
      return Status::InvalidArgument("a partition of the status is not valid JSON");
    }
    bool ok = true;
    if (key == "topic") {
      std::string_view topic;
      ok = v.get_string().get(topic) == SUCCESS;
      if (ok) out->first.topic.assign(topic);
      saw_topic = ok;
    } else if (key == "partition") {
      int64_t p = 0;
      ok = v.get_int64().get(p) == SUCCESS && p >= 0 && p <= INT32_MAX;
      out->first.partition = static_cast<int32_t>(p);
      saw_partition = ok;
    } else if (key == "serving") {
      ok = v.get_bool().get(out->second.serving) == SUCCESS;
      saw_serving = ok;
    } else if (key == "rebuilding") {
      ok = v.get_bool().get(out->second.rebuilding) == SUCCESS;
    } else if (key == "lag") {
      ok = v.get_int64().get(out->second.lag) == SUCCESS;
    } else if (key == "staleness_ms") {
      ok = v.get_int64().get(out->second.staleness_ms) == SUCCESS;
    } else if (key == "why") {
      std::string_view why;
      ok = v.get_string().get(why) == SUCCESS;
      if (ok) out->second.why.assign(why);
    }
    if (!ok) {
      return Status::InvalidArgument("a partition of the status has a bad " + std::string(key));
    }
  }
  if (!saw_topic || !saw_partition || !saw_serving) {
    return Status::InvalidArgument("a partition of the status lacks topic, partition or serving");
  }
  return Status::Ok();
}

Status ReadList(simdjson::ondemand::value value, const std::string& address,
                std::vector<std::pair<store::TopicPartition, PartitionHolding>>* out) {
  simdjson::ondemand::array list;
  if (value.get_array().get(list) != SUCCESS) {
    return Status::InvalidArgument("owned or followed is not a list");
  }
  for (auto item : list) {
    simdjson::ondemand::value v;
    if (item.get(v) != SUCCESS) return Status::InvalidArgument("bad partition of the status");
    std::pair<store::TopicPartition, PartitionHolding> one;
    HOTROW_RETURN_IF_ERROR(ReadHolding(v, address, &one));
    out->push_back(std::move(one));
  }
  return Status::Ok();
}

void AppendHolding(const PartitionHolding& h, bool owner, std::string* out) {
  out->append("{\"address\":");
  wire::AppendJsonString(h.address, out);
  out->append(std::string(",\"serving\":") + (h.serving ? "true" : "false") + ",\"lag\":" +
              std::to_string(h.lag) + ",\"staleness_ms\":" + std::to_string(h.staleness_ms));
  if (owner) out->append(h.rebuilding ? ",\"rebuilding\":true" : ",\"rebuilding\":false");
  if (!h.serving && !h.why.empty()) {
    out->append(",\"why\":");
    wire::AppendJsonString(h.why, out);
  }
  out->push_back('}');
}

}  // namespace

Status ReadHoldings(std::string_view status, const std::string& address, InstanceHoldings* out) {
  thread_local simdjson::ondemand::parser parser;
  const simdjson::padded_string padded(status);
  simdjson::ondemand::document doc;
  simdjson::ondemand::object root;
  if (parser.iterate(padded).get(doc) != SUCCESS || doc.get_object().get(root) != SUCCESS) {
    return Status::InvalidArgument("the status is not a JSON object");
  }
  out->address = address;
  out->owned.clear();
  out->followed.clear();
  bool saw_owned = false;
  for (auto field : root) {
    std::string_view key;
    simdjson::ondemand::value value;
    if (field.unescaped_key().get(key) != SUCCESS || field.value().get(value) != SUCCESS) {
      return Status::InvalidArgument("the status is not valid JSON");
    }
    if (key == "owned") {
      HOTROW_RETURN_IF_ERROR(ReadList(value, address, &out->owned));
      saw_owned = true;
    } else if (key == "followed") {
      HOTROW_RETURN_IF_ERROR(ReadList(value, address, &out->followed));
    }
  }
  if (!saw_owned) return Status::InvalidArgument("the status lacks owned (not a hotrow status)");
  out->answered = true;
  return Status::Ok();
}

std::vector<PartitionHolders> CollectHolders(const Partitions& all,
                                             const std::vector<InstanceHoldings>& instances) {
  std::map<store::TopicPartition, PartitionHolders> by;
  for (const store::TopicPartition& tp : all) by[tp].partition = tp;
  for (const InstanceHoldings& instance : instances) {
    if (!instance.answered) continue;
    for (const auto& [tp, holding] : instance.owned) {
      PartitionHolders& h = by[tp];
      h.partition = tp;
      h.owners.push_back(holding);
    }
    for (const auto& [tp, holding] : instance.followed) {
      PartitionHolders& h = by[tp];
      h.partition = tp;
      h.standbys.push_back(holding);
    }
  }
  std::vector<PartitionHolders> out;
  out.reserve(by.size());
  for (auto& [tp, h] : by) {
    // The serving owner first: it is the one answers take and the one "owner" names.
    std::stable_partition(h.owners.begin(), h.owners.end(),
                          [](const PartitionHolding& o) { return o.serving; });
    for (const std::vector<PartitionHolding>* list : {&h.owners, &h.standbys}) {
      for (const PartitionHolding& holding : *list) {
        if (!holding.serving) continue;
        ++h.serving_copies;
        if (h.served_by.empty()) {
          h.served_by = holding.address;
          h.from_standby = list == &h.standbys;
        }
      }
    }
    out.push_back(std::move(h));
  }
  return out;
}

void AppendHoldersJson(const std::vector<PartitionHolders>& holders, std::string* out) {
  out->append(",\"by_partition\":[");
  for (size_t i = 0; i < holders.size(); ++i) {
    const PartitionHolders& h = holders[i];
    if (i != 0) out->push_back(',');
    out->append("{\"topic\":");
    wire::AppendJsonString(h.partition.topic, out);
    out->append(",\"partition\":" + std::to_string(h.partition.partition) + ",\"owner\":");
    if (h.owners.empty()) {
      out->append("null");
    } else {
      AppendHolding(h.owners[0], true, out);
    }
    if (h.owners.size() > 1) {
      out->append(",\"other_owners\":[");
      for (size_t j = 1; j < h.owners.size(); ++j) {
        if (j != 1) out->push_back(',');
        AppendHolding(h.owners[j], true, out);
      }
      out->push_back(']');
    }
    out->append(",\"standbys\":[");
    for (size_t j = 0; j < h.standbys.size(); ++j) {
      if (j != 0) out->push_back(',');
      AppendHolding(h.standbys[j], false, out);
    }
    out->append("],\"served_by\":");
    if (h.served_by.empty()) {
      out->append("null");
    } else {
      wire::AppendJsonString(h.served_by, out);
    }
    out->append(std::string(",\"from_standby\":") + (h.from_standby ? "true" : "false") +
                ",\"serving_copies\":" + std::to_string(h.serving_copies) + "}");
  }
  out->push_back(']');
}

}  // namespace hotrow::cluster
