// What operators bring from etcdctl works the same: -w/--write-out and ETCDCTL_WRITE_OUT, a password
// asked for on a terminal or read from --password-file, --insecure-skip-tls-verify for etcd's TLS,
// --version, one meaning of --prefix on get, diff and restore-keys, and a restore whose file flag
// cannot be mistaken for the output format.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "common/fs.h"
#include "test/support/cli_fixture.h"

namespace etcdadm::test {
namespace {

class EtcdctlHabits : public CliTest {};

std::string value_of(EtcdClient& client, const std::string& key) {
  etcdserverpb::RangeRequest req;
  req.set_key(key);
  auto resp = client.range(req);
  return resp.kvs_size() == 0 ? "" : resp.kvs(0).value();
}

TEST_F(EtcdctlHabits, WriteOutVersionAndOutputFile) {
  auto& m = start_member();
  save(m);
  auto version = cli({"--version"});
  EXPECT_EQ(version.exit_code, 0) << version.output;
  EXPECT_EQ(version.output.rfind("etcdadm ", 0), 0u) << version.output;
  for (const char* flag : {"-w", "--write-out", "-o", "--output-format"}) {
    auto listed = cli({"backup", "list", "--store", store_, flag, "json"});
    EXPECT_EQ(listed.exit_code, 0) << listed.output;
    EXPECT_EQ(nlohmann::json::parse(listed.output).size(), 1u) << flag;
  }
  // `backup get` takes -o raw too (etcdctl's values as they are), and its help says so.
  auto get_help = cli({"backup", "get", "--help"});
  EXPECT_NE(get_help.output.find("table|json|raw"), std::string::npos) << get_help.output;
  RunOptions env;
  env.env["ETCDCTL_WRITE_OUT"] = "json";
  auto from_env = cli({"backup", "list", "--store", store_}, env);
  EXPECT_EQ(nlohmann::json::parse(from_env.output).size(), 1u) << from_env.output;
  // `--output json` on restore is a format mistaken for a file: refused, nothing written.
  RunOptions in_dir;
  in_dir.working_dir = dir_.path();
  auto mistaken = cli({"backup", "restore", "latest", "--store", store_, "--output", "json"}, in_dir);
  EXPECT_EQ(mistaken.exit_code, 2) << mistaken.output;
  EXPECT_NE(mistaken.output.find("use -o json"), std::string::npos) << mistaken.output;
  EXPECT_FALSE(path_exists(dir_ / "json"));
  auto file = cli({"backup", "restore", "latest", "--store", store_, "--output-file", dir_ / "snap.db"});
  EXPECT_EQ(file.exit_code, 0) << file.output;
}

TEST_F(EtcdctlHabits, PasswordFromTerminalPromptOrFile) {
  auto& m = start_member();
  enable_auth_with_root(m, "r00t-pass");
  write_file_atomic(dir_ / "password", "r00t-pass\n", 0600);
  auto from_file = cli({"backup", "save", "--store", store_, "--endpoints", m.client_url(), "--user", "root",
                        "--password-file", dir_ / "password"});
  EXPECT_EQ(from_file.exit_code, 0) << from_file.output;
  // No terminal (cron): a clear refusal that points at the file and the variable.
  auto no_tty = cli({"backup", "save", "--store", store_, "--endpoints", m.client_url(), "--user", "root"});
  EXPECT_EQ(no_tty.exit_code, 2) << no_tty.output;
  EXPECT_NE(no_tty.output.find("--password-file"), std::string::npos) << no_tty.output;
  // On a terminal (util-linux `script` gives it a pty): asked for, without echo.
  std::string command = std::string("ETCDADM_CATALOG='") + (dir_ / "catalog.db") + "' '" + ETCDADM_BIN +
                        "' backup save --store '" + store_ + "' --endpoints " + m.client_url() + " --user root";
  // The answer comes 2 s later, as typed by a person: typed ahead, the pty would echo it before
  // etcdadm could turn echo off, and the test could not tell.
  auto prompted = run_process({"sh", "-c", "(sleep 2; printf 'r00t-pass\\n') | script -qec \"" + command + "\" /dev/null"});
  EXPECT_EQ(prompted.exit_code, 0) << prompted.output;
  EXPECT_NE(prompted.output.find("Password for root:"), std::string::npos) << prompted.output;
  EXPECT_EQ(prompted.output.find("r00t-pass"), std::string::npos) << "the password was echoed: " << prompted.output;
  EXPECT_EQ(cli_json({"backup", "list", "--store", store_, "-o", "json"}).size(), 2u);
}

TEST_F(EtcdctlHabits, InsecureSkipTlsVerifyMeansEtcdsTls) {
  TlsFiles tls = make_tls_files(dir_ / "pki");
  EtcdOptions o;
  o.tls = true;
  o.tls_files = &tls;
  auto& m = start_member(o);
  std::vector<std::string> base = {"backup", "save", "--store", store_, "--endpoints", m.client_url(), "--cert",
                                   tls.client_cert, "--key", tls.client_key, "--dial-timeout", "3s"};
  auto with = [&](std::vector<std::string> extra) {
    auto v = base;
    v.insert(v.end(), extra.begin(), extra.end());
    return cli(v);
  };
  auto wrong_ca = with({"--cacert", tls.other_ca_cert});
  EXPECT_EQ(wrong_ca.exit_code, 6) << wrong_ca.output;
  auto skipped = with({"--cacert", tls.other_ca_cert, "--insecure-skip-tls-verify"});
  EXPECT_EQ(skipped.exit_code, 0) << skipped.output;
  auto no_ca = with({"--insecure-skip-tls-verify"});
  EXPECT_EQ(no_ca.exit_code, 0) << no_ca.output;
  RunOptions env;
  env.env["ETCDCTL_INSECURE_SKIP_TLS_VERIFY"] = "true";
  auto v = base;
  v.insert(v.end(), {"--cacert", tls.other_ca_cert});
  EXPECT_EQ(cli(v, env).exit_code, 0);
}

TEST_F(EtcdctlHabits, PrefixMeansTheSameOnGetDiffAndRestoreKeys) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  client.put("/app/a", "1");
  client.put("/app/ab", "2");
  client.put("/apps", "3");
  std::string a = save(m)["backup"];
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  client.put("/app/a", "changed");
  client.put("/app/ab", "changed");
  std::string b = save(m)["backup"];

  auto get_one = cli_json({"backup", "get", a, "/app/a", "--store", store_, "-o", "json"});
  EXPECT_EQ(get_one["count"], 1);
  auto get_all = cli_json({"backup", "get", a, "/app/a", "--prefix", "--store", store_, "-o", "json"});
  EXPECT_EQ(get_all["count"], 2);

  auto diff_one = cli_json({"backup", "diff", a, b, "/app/a", "--store", store_, "-o", "json"});
  EXPECT_EQ(diff_one["changed"], 1) << diff_one;
  auto diff_prefix = cli_json({"backup", "diff", a, b, "/app/a", "--prefix", "--store", store_, "-o", "json"});
  EXPECT_EQ(diff_prefix["changed"], 2) << diff_prefix;
  auto diff_all = cli_json({"backup", "diff", a, b, "--store", store_, "-o", "json"});
  EXPECT_EQ(diff_all["changed"], 2) << diff_all;

  std::vector<std::string> live = {"--store", store_, "--endpoints", m.client_url(), "--conflict", "overwrite", "-o", "json"};
  auto one = live;
  one.insert(one.begin(), {"backup", "restore-keys", a, "/app/a"});
  cli_json(one);
  EXPECT_EQ(value_of(client, "/app/a"), "1");
  EXPECT_EQ(value_of(client, "/app/ab"), "changed") << "a key without --prefix is one key";
  auto prefixed = live;
  prefixed.insert(prefixed.begin(), {"backup", "restore-keys", a, "/app/a", "--prefix"});
  cli_json(prefixed);
  EXPECT_EQ(value_of(client, "/app/ab"), "2");
}

// A key the table prints can be typed back: UTF-8 prints as it is, a NUL or other byte as \xNN,
// a backslash as \\, and get, diff and restore-keys read a KEY in that form. Two positionals
// show in the usage as what they are, not as "args(1x)".
TEST_F(EtcdctlHabits, AKeyIsTypedAsTheTablePrintsIt) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  const std::string utf8 = "/registry/configmaps/\xc3\xbc" "ber/\xe5\x90\x8d\xe5\x89\x8d";
  const std::string nul("/registry/bin/\x00\x01", 16);
  const std::string slash = "/registry/back\\slash";
  client.put(utf8, "utf8");
  client.put(nul, "nul");
  client.put(slash, "slash");
  std::string a = save(m)["backup"];
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  client.put(nul, "nul changed");
  std::string b = save(m)["backup"];

  auto table = cli({"backup", "get", a, "/registry/", "--prefix", "--store", store_});
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find(utf8), std::string::npos) << "UTF-8 prints as it is: " << table.output;
  EXPECT_NE(table.output.find("/registry/bin/\\x00\\x01"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("/registry/back\\\\slash"), std::string::npos) << table.output;

  for (const std::string& typed : {utf8, std::string("/registry/bin/\\x00\\x01"), std::string("/registry/back\\\\slash")}) {
    auto got = cli_json({"backup", "get", a, typed, "--store", store_, "-o", "json"});
    EXPECT_EQ(got["count"], 1) << typed << ": " << got;
  }
  auto diff = cli_json({"backup", "diff", a, b, "/registry/bin/\\x00\\x01", "--store", store_, "-o", "json"});
  EXPECT_EQ(diff["changed"], 1) << diff;
  auto restored = cli_json({"backup", "restore-keys", a, "/registry/bin/\\x00\\x01", "--store", store_, "--endpoints",
                            m.client_url(), "--conflict", "overwrite", "-o", "json"});
  EXPECT_EQ(value_of(client, nul), "nul") << restored;

  auto help = cli({"backup", "get", "--help"});
  EXPECT_NE(help.output.find("backup get [OPTIONS] BACKUP KEY"), std::string::npos) << help.output;
  EXPECT_EQ(help.output.find("args("), std::string::npos) << help.output;
}

}  // namespace
}  // namespace etcdadm::test

namespace etcdadm::test {
namespace {

// The product's top-level folders: those of the rooms in docs/architecture.md's ```layers block
// (the layering check holds every product file to a room, so none is left out).
std::set<std::string> product_folders() {
  std::istringstream doc(read_file(std::string(ETCDADM_SOURCE_DIR) + "/docs/architecture.md"));
  std::set<std::string> folders;
  bool inside = false;
  for (std::string line; std::getline(doc, line);) {
    if (line == "```layers") {
      inside = true;
    } else if (inside && line.rfind("```", 0) == 0) {
      break;
    } else if (inside && !line.empty() && line.rfind("unchecked:", 0) != 0) {
      folders.insert(line.substr(0, line.find_first_of(":/")));
    }
  }
  return folders;
}

// Every environment variable the product reads is named in --help, of the top level and of each
// subcommand: found in the sources, so a new variable without help fails here.
TEST(Help, EveryEnvironmentVariableIsInTheHelp) {
  std::set<std::string> names;
  std::regex quoted(R"re("((ETCDCTL|ETCDADM|AWS|S3|GOOGLE|STORAGE|GCE|ETCD_MANAGER)_[A-Z0-9_]+)")re");
  std::regex getenv_call(R"re(getenv\("([A-Z_]+)"\))re");
  std::set<std::string> folders = product_folders();
  ASSERT_TRUE(folders.count("store") && folders.count("cmd")) << "no layers block in docs/architecture.md?";
  for (const std::string& dir : folders) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(ETCDADM_SOURCE_DIR) + "/" + dir)) {
      std::string ext = e.path().extension().string();
      if (ext != ".cc" && ext != ".h") continue;
      std::string text = read_file(e.path().string());
      for (const std::regex* re : {&quoted, &getenv_call}) {
        for (std::sregex_iterator it(text.begin(), text.end(), *re), end; it != end; ++it) names.insert((*it)[1]);
      }
    }
  }
  // Set for the etcd tools etcdadm runs, never read; and the variables every program reads.
  for (const char* not_ours : {"ETCDCTL_API", "HOME", "PATH"}) names.erase(not_ours);
  ASSERT_GT(names.size(), 30u);
  for (std::vector<std::string> args : {std::vector<std::string>{"--help"}, {"backup", "save", "--help"},
                                        {"backup", "list", "--help"}, {"init", "--help"}}) {
    auto r = run_etcdadm(args, "/nonexistent/catalog.db");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    for (const auto& n : names) EXPECT_NE(r.output.find(n), std::string::npos) << n << " missing from " << args[0];
  }
}

}  // namespace
}  // namespace etcdadm::test
