// The Prometheus text writer (common/prometheus_text.h) the sidecar's and the controller's /metrics
// share: known answers of the exposition format (the end-to-end tests parse whole expositions with
// the Prometheus project's own parser: Sidecar.MetricsAreExactAndCountOnlySidecarAttempts).
#include <gtest/gtest.h>

#include "common/prometheus_text.h"

namespace etcdadm {
namespace {

TEST(PrometheusText, ValuesAreExactIntegersOrTheShortestDecimal) {
  EXPECT_EQ(prometheus_value(0), "0");
  EXPECT_EQ(prometheus_value(1), "1");
  EXPECT_EQ(prometheus_value(-1), "-1");
  EXPECT_EQ(prometheus_value(1795581998), "1795581998") << "a Unix time, never 1.79558e+09";
  EXPECT_EQ(prometheus_value(1795581998.25), "1795581998.25");
  EXPECT_EQ(prometheus_value(0.005), "0.005");
}

TEST(PrometheusText, FamiliesHaveHelpAndTypeAndLabelValuesAreEscaped) {
  PrometheusText t;
  t.gauge("a_seconds", "Seconds of a.", 1.5);
  t.counter("b_total", "Bs.", 18446744073709551615u);
  t.family("c_total", "Cs by reason.", "counter");
  t.sample("c_total", "reason", "quote \" backslash \\ newline \n end", "2");
  t.family("d_seconds", "Ds.", "histogram");
  t.sample("d_seconds_bucket", "le", "+Inf", "3");
  t.sample("d_seconds_sum", "", "", "4.5");
  t.append("e 1\n");
  EXPECT_EQ(t.text(),
            "# HELP a_seconds Seconds of a.\n# TYPE a_seconds gauge\na_seconds 1.5\n"
            "# HELP b_total Bs.\n# TYPE b_total counter\nb_total 18446744073709551615\n"
            "# HELP c_total Cs by reason.\n# TYPE c_total counter\n"
            "c_total{reason=\"quote \\\" backslash \\\\ newline \\n end\"} 2\n"
            "# HELP d_seconds Ds.\n# TYPE d_seconds histogram\nd_seconds_bucket{le=\"+Inf\"} 3\nd_seconds_sum 4.5\n"
            "e 1\n");
}

}  // namespace
}  // namespace etcdadm
