#include "common/prometheus_text.h"

#include <fmt/format.h>

namespace etcdadm {

std::string prometheus_value(double v) { return fmt::format("{}", v); }

void PrometheusText::family(std::string_view name, std::string_view help, std::string_view type) {
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void PrometheusText::sample(std::string_view name, std::string_view label, std::string_view label_value,
                            std::string_view value) {
  out_ += name;
  if (!label.empty()) {
    out_ += fmt::format("{{{}=\"", label);
    for (char c : label_value) {
      if (c == '\\') {
        out_ += "\\\\";
      } else if (c == '"') {
        out_ += "\\\"";
      } else if (c == '\n') {
        out_ += "\\n";
      } else {
        out_ += c;
      }
    }
    out_ += "\"}";
  }
  out_ += fmt::format(" {}\n", value);
}

void PrometheusText::gauge(std::string_view name, std::string_view help, double value) {
  family(name, help, "gauge");
  sample(name, "", "", prometheus_value(value));
}

void PrometheusText::counter(std::string_view name, std::string_view help, uint64_t value) {
  family(name, help, "counter");
  sample(name, "", "", std::to_string(value));
}

}  // namespace etcdadm
