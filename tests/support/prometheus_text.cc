#include "tests/support/prometheus_text.h"

#include <cctype>
#include <cstdlib>
#include <sstream>

namespace hotrow::testing {
namespace {

bool IsMetricNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == ':';
}

// Reads `{k="v",...}` from text[*pos] (just past the `{`) up to and including the `}`.
bool ReadMetricLabels(const std::string& text, size_t* pos,
                      std::map<std::string, std::string>* out) {
  size_t i = *pos;
  while (i < text.size()) {
    if (text[i] == '}') {
      *pos = i + 1;
      return true;
    }
    const size_t name_start = i;
    while (i < text.size() && IsMetricNameChar(text[i])) ++i;
    const std::string name = text.substr(name_start, i - name_start);
    if (name.empty() || i + 1 >= text.size() || text[i] != '=' || text[i + 1] != '"') return false;
    i += 2;
    std::string value;
    for (; i < text.size() && text[i] != '"'; ++i) {
      if (text[i] != '\\') {
        value.push_back(text[i]);
        continue;
      }
      if (++i >= text.size()) return false;
      value.push_back(text[i] == 'n' ? '\n' : text[i]);  // \\ and \" stand for themselves
    }
    if (i >= text.size()) return false;
    ++i;  // the closing quote
    (*out)[name] = value;
    if (i < text.size() && text[i] == ',') ++i;
  }
  return false;
}

}  // namespace

std::vector<MetricSample> ParsePrometheusText(const std::string& text,
                                              std::vector<std::string>* bad) {
  std::vector<MetricSample> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    MetricSample sample;
    size_t i = 0;
    while (i < line.size() && IsMetricNameChar(line[i])) ++i;
    sample.name = line.substr(0, i);
    bool ok = !sample.name.empty();
    if (ok && i < line.size() && line[i] == '{') {
      ++i;
      ok = ReadMetricLabels(line, &i, &sample.labels);
    }
    if (ok) {
      ok = i < line.size() && line[i] == ' ';
      const char* start = line.c_str() + i;
      char* end = nullptr;
      sample.value = std::strtod(start, &end);
      ok = ok && end != start && (*end == '\0' || *end == ' ');
    }
    if (!ok) {
      if (bad != nullptr) bad->push_back(line);
      continue;
    }
    out.push_back(std::move(sample));
  }
  return out;
}

std::vector<MetricSample> FindSamples(const std::vector<MetricSample>& samples,
                                      const std::string& name,
                                      const std::map<std::string, std::string>& labels) {
  std::vector<MetricSample> out;
  for (const MetricSample& s : samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels) {
      auto it = s.labels.find(k);
      if (it == s.labels.end() || it->second != v) match = false;
    }
    if (match) out.push_back(s);
  }
  return out;
}

std::optional<double> MetricValue(const std::vector<MetricSample>& samples, const std::string& name,
                                  const std::map<std::string, std::string>& labels) {
  const std::vector<MetricSample> found = FindSamples(samples, name, labels);
  if (found.size() != 1) return std::nullopt;
  return found[0].value;
}

}  // namespace hotrow::testing
