// Prometheus' text exposition format (version 0.0.4), written one metric family at a time: the
// sidecar's and the controller's /metrics share this one writer, so both say HELP and TYPE the
// same way and escape label values alike.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace etcdadm {

// A sample value, exact: integers as integers ("3", "1795581998"), anything else as the shortest
// decimal that reads back as the same double ("0.005"). (An ostream's default 6 significant digits
// printed Unix times as 1.79549e+09, thousands of seconds off, and broke every age alert.)
std::string prometheus_value(double v);

class PrometheusText {
 public:
  // A family of one sample without labels: its HELP and TYPE lines, then "name value".
  void gauge(std::string_view name, std::string_view help, double value);
  void counter(std::string_view name, std::string_view help, uint64_t value);
  // A family whose samples follow (sample()): its HELP and TYPE lines. `type`: "gauge", "counter",
  // "histogram".
  void family(std::string_view name, std::string_view help, std::string_view type);
  // One sample of the family just begun: `name` may carry a suffix (_bucket, _sum, _count);
  // `label`/`label_value` one label ("" for none), its value escaped as the format asks.
  void sample(std::string_view name, std::string_view label, std::string_view label_value, std::string_view value);
  // Text another part wrote in this format already, appended as it is.
  void append(std::string_view text) { out_ += text; }

  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

}  // namespace etcdadm
