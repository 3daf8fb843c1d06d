#pragma once

// Reads what GET /metrics answers (Prometheus' text exposition format) into samples, so that tests
// assert a metric's value rather than that its name appears somewhere in the text.

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hotrow::testing {

// One sample line: `name{label="value",...} value [timestamp]`.
struct MetricSample {
  std::string name;
  std::map<std::string, std::string> labels;  // unescaped values
  double value = 0;
};

// Every sample of `text`; comment (`#`) and blank lines are skipped. A line that is not a sample
// is appended to `*bad` (when not null) and skipped.
std::vector<MetricSample> ParsePrometheusText(const std::string& text,
                                              std::vector<std::string>* bad = nullptr);

// The samples named `name` whose labels include every pair of `labels`.
std::vector<MetricSample> FindSamples(const std::vector<MetricSample>& samples,
                                      const std::string& name,
                                      const std::map<std::string, std::string>& labels = {});

// The value of the one sample FindSamples finds; nullopt when it finds none or several.
std::optional<double> MetricValue(const std::vector<MetricSample>& samples, const std::string& name,
                                  const std::map<std::string, std::string>& labels = {});

}  // namespace hotrow::testing
