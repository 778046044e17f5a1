// Progress of long work as an operator sees it: a live line on a terminal (a pseudo-terminal made by
// util-linux's `script`), periodic structured lines in JSON logs, and nothing at all when stderr is
// no terminal, which keeps scripted output exactly as it was.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>

#include <nlohmann/json.hpp>

#include <sstream>
#include <thread>

#include "common/fs.h"
#include "common/shell.h"
#include "test/support/cli_fixture.h"
#include "test/support/etcd_versions.h"
#include "test/support/fixture_server.h"
#include "test/support/release_fixture.h"

namespace etcdadm::test {

namespace {

class ProgressTest : public CliTest {
 protected:
  // Runs etcdadm with stdout and stderr on a pseudo-terminal; returns what the terminal received.
  ProcessResult cli_on_terminal(const std::vector<std::string>& args) {
    std::string command = shell_quote(ETCDADM_BIN);
    for (const auto& a : args) command += " " + shell_quote(a);
    RunOptions o;
    o.env["COLUMNS"] = "200";
    return run_etcdadm_wrapped({"script", "--quiet", "--return", "--command", command, "/dev/null"}, o);
  }

  ProcessResult run_etcdadm_wrapped(const std::vector<std::string>& argv, RunOptions o) {
    o.env["ETCDADM_CATALOG"] = dir_ / "catalog.db";
    o.timeout = std::chrono::seconds(120);
    return run_process(argv, o);
  }

  static bool has_live_line(const std::string& out, const std::string& what) {
    return out.find("\r\033[K" + what) != std::string::npos;
  }
};

}  // namespace

TEST_F(ProgressTest, SaveAndRestoreShowALiveLineOnATerminalAndNothingWithoutOne) {
  auto& m1 = start_member();
  EtcdClient client(m1.connection());
  load_keys(client, "/registry/pods/default/pod-", 2000, 1000, 3);

  const std::string snapshot_of = "snapshot of " + m1.client_url() + ": ";
  auto saved = cli_on_terminal({"backup", "save", "--store", store_, "--endpoints", m1.client_url()});
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  EXPECT_TRUE(has_live_line(saved.output, snapshot_of)) << saved.output;
  // Its last state: everything received against the member's db size, and what was stored.
  EXPECT_NE(saved.output.find("(100%), stored "), std::string::npos) << saved.output;
  EXPECT_NE(saved.output.find("saved"), std::string::npos) << saved.output;

  auto listed = cli_json({"backup", "list", "--store", store_, "-o", "json"});
  ASSERT_EQ(listed.size(), 1u);
  const std::string name = listed[0]["backup"];
  auto restored = cli_on_terminal({"backup", "restore", "latest", "--store", store_, "--output-file", dir_ / "out.db"});
  ASSERT_EQ(restored.exit_code, 0) << restored.output;
  EXPECT_TRUE(has_live_line(restored.output, "backup " + name + ": ")) << restored.output;
  EXPECT_NE(restored.output.find("(100%)"), std::string::npos) << restored.output;

  // --progress never on a terminal, and auto without one: not a byte of progress.
  auto quiet = cli_on_terminal({"backup", "save", "--progress", "never", "--store", store_, "--endpoints", m1.client_url()});
  ASSERT_EQ(quiet.exit_code, 0) << quiet.output;
  EXPECT_EQ(quiet.output.find(snapshot_of), std::string::npos) << quiet.output;
  EXPECT_EQ(quiet.output.find('\r' + std::string("\033[K")), std::string::npos) << quiet.output;
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"backup", "save", "--store", store_, "--endpoints", m1.client_url()},
           {"backup", "restore", "latest", "--store", store_, "--output-file", dir_ / "out2.db"},
           {"backup", "verify", "latest", "--store", store_}}) {
    auto r = cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.find("\033["), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find(snapshot_of), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("(100%)"), std::string::npos) << r.output;
  }
}

TEST_F(ProgressTest, JsonLogsCarryPeriodicProgressOfASlowTransfer) {
  auto& m1 = start_member();
  EtcdClient client(m1.connection());
  load_keys(client, "/registry/configmaps/cm-", 1000, 1000, 4);
  std::string snap = dir_ / "etcdctl.db";
  etcdctl_snapshot(m1, snap);
  const std::string bytes = read_file(snap);

  // `etcdctl snapshot save` piped into `backup import`: a source that trickles in over ~2 s, so
  // that lines every 0.2 s must appear whatever the machine's speed.
  std::string fifo = dir_ / "snapshot.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] {
    // Non-blocking until etcdadm opens its end, so that an etcdadm that fails first cannot hang the test.
    int fd = -1;
    for (int i = 0; i < 600 && fd < 0; ++i) {
      fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (fd < 0) return;
    ::fcntl(fd, F_SETFL, 0);
    // An etcdadm that died mid-read must fail the test, not kill it with SIGPIPE.
    sigset_t pipe_signal;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
    const size_t piece = bytes.size() / 8 + 1;
    for (size_t off = 0; off < bytes.size(); off += piece) {
      size_t n = std::min(piece, bytes.size() - off);
      for (size_t w = 0; w < n;) {
        ssize_t k = ::write(fd, bytes.data() + off + w, n - w);
        if (k <= 0) {
          ::close(fd);
          return;
        }
        w += static_cast<size_t>(k);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    ::close(fd);
  });
  auto r = cli({"--log-format", "json", "--progress-interval", "0.2", "backup", "import", fifo, "--store", store_,
                "--etcd-version", etcd_under_test().version});
  writer.join();
  ASSERT_EQ(r.exit_code, 0) << r.output;

  std::istringstream lines(r.output);
  std::string line;
  int progress_lines = 0;
  uint64_t last_done = 0;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] != '{') continue;
    auto j = nlohmann::json::parse(line);  // every log line stays one JSON object
    if (!j.contains("progress")) continue;
    ++progress_lines;
    EXPECT_EQ(j["progress"], "import of " + fifo);
    EXPECT_EQ(j["unit"], "bytes");
    EXPECT_EQ(j["level"], "info");
    EXPECT_GE(j["done"].get<uint64_t>(), last_done);
    EXPECT_TRUE(j.contains("stored") && j.contains("rate") && j.contains("elapsedSeconds")) << line;
    EXPECT_FALSE(j.contains("percent")) << line;  // a pipe has no size to count against
    last_done = j["done"];
  }
  EXPECT_GE(progress_lines, 3) << r.output;
  EXPECT_GT(last_done, 0u);
  EXPECT_LE(last_done, bytes.size());
  EXPECT_EQ(r.output.find("\033["), std::string::npos) << r.output;
}

// A release download is long work like any other: a live line on a terminal, nothing with
// --progress never, periodic lines with --log-format json (they used to be a bar of its own, drawn
// on any terminal whatever the flags said). The release is served from loopback, slowly: its
// tarball in 8 pieces 250 ms apart.
TEST_F(ProgressTest, ReleaseDownloadsFollowProgressAndLogFormat) {
  LocalRelease rel = make_local_release(dir_ / "releases");
  const std::string tarball = read_file(rel.tarball);
  const std::string sums = read_file(rel.dir + "/v" + rel.version + "/SHA256SUMS");
  const std::string name = rel.tarball.substr(rel.tarball.rfind('/') + 1);
  FixtureServer server;
  server.server.Get(R"(/v[^/]+/([^/]+))", [&](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] == "SHA256SUMS") {
      res.set_content(sums, "text/plain");
    } else if (req.matches[1] == name) {
      res.set_content_provider(tarball.size(), "application/gzip", [&](size_t offset, size_t length, httplib::DataSink& sink) {
        size_t n = std::min(length, tarball.size() / 8 + 1);
        if (offset > 0) std::this_thread::sleep_for(std::chrono::milliseconds(250));
        sink.write(tarball.data() + offset, n);
        return true;
      });
    } else {
      res.status = 404;
    }
  });
  server.start();
  int caches = 0;
  auto download = [&](std::vector<std::string> global) {
    global.insert(global.end(), {"download", "--cache-only", "--version", rel.version, "--release-url", server.url(), "--cache-dir",
                                 dir_ / ("cache-" + std::to_string(++caches))});
    return global;
  };
  const std::string what = "download of " + name;

  auto json = cli(download({"--log-format", "json", "--progress-interval", "0.2"}));
  ASSERT_EQ(json.exit_code, 0) << json.output;
  std::istringstream lines(json.output);
  std::string line;
  int progress_lines = 0;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] != '{') continue;
    auto j = nlohmann::json::parse(line);
    if (!j.contains("progress")) continue;
    ++progress_lines;
    EXPECT_EQ(j["progress"], what);
    EXPECT_EQ(j["total"], tarball.size()) << "the size from the server's HEAD answer";
  }
  EXPECT_GE(progress_lines, 3) << json.output;
  EXPECT_EQ(json.output.find("\033["), std::string::npos) << json.output;

  auto shown = cli_on_terminal(download({}));
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  EXPECT_TRUE(has_live_line(shown.output, what)) << shown.output;

  auto quiet = cli_on_terminal(download({"--progress", "never"}));
  ASSERT_EQ(quiet.exit_code, 0) << quiet.output;
  EXPECT_EQ(quiet.output.find(what), std::string::npos) << quiet.output;
  EXPECT_EQ(quiet.output.find("\r\033[K"), std::string::npos) << "a live line: " << quiet.output;
  EXPECT_EQ(quiet.output.find(" MiB"), std::string::npos) << "a count of bytes: " << quiet.output;
}

}  // namespace etcdadm::test
