// `backup diff` and `backup restore-keys` against a real etcd: what changed between two backups, and
// putting a deleted prefix back into the live cluster under each conflict policy, with a dry run
// that changes nothing.
#include <gtest/gtest.h>

#include "test/support/cli_fixture.h"

namespace etcdadm::test {
namespace {

class RestoreKeys : public CliTest {
 protected:
  std::string value_of(EtcdClient& client, const std::string& key) {
    etcdserverpb::RangeRequest r;
    r.set_key(key);
    auto resp = client.range(r);
    return resp.kvs_size() == 0 ? "<absent>" : resp.kvs(0).value();
  }
  void del_prefix(EtcdClient& client, const std::string& prefix) {
    etcdserverpb::DeleteRangeRequest d;
    d.set_key(prefix);
    std::string end = prefix;
    end.back() = static_cast<char>(end.back() + 1);
    d.set_range_end(end);
    client.delete_range(d);
  }
  int64_t revision(EtcdClient& client, const EtcdMember& m) {
    return client.status(m.client_url()).header().revision();
  }
};

std::map<std::string, std::vector<std::string>> by_kind(const nlohmann::json& entries, const char* field) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& e : entries) out[e[field].get<std::string>()].push_back(e["key"]);
  return out;
}

TEST_F(RestoreKeys, DiffThenRestoreADeletedPrefixUnderEachPolicy) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  const std::string ns1 = "/registry/configmaps/ns1/";
  for (const char* k : {"a", "b", "c", "d", "e"}) client.put(ns1 + k, std::string("orig-") + k);
  client.put("/registry/configmaps/ns2/x", "x");
  client.put("/other/k", "v1");
  std::string a = save(m)["backup"];

  del_prefix(client, ns1);
  client.put(ns1 + "c", "changed");
  client.put("/other/k", "v2");
  client.put("/new/key", "n");
  std::string b = save(m)["backup"];

  auto diff = cli_json({"backup", "diff", a, b, "--store", store_, "-o", "json"});
  auto kinds = by_kind(diff["entries"], "kind");
  EXPECT_EQ(kinds["removed"], (std::vector<std::string>{ns1 + "a", ns1 + "b", ns1 + "d", ns1 + "e"})) << diff.dump();
  EXPECT_EQ(kinds["changed"], (std::vector<std::string>{"/other/k", ns1 + "c"})) << diff.dump();
  EXPECT_EQ(kinds["added"], (std::vector<std::string>{"/new/key"})) << diff.dump();
  auto scoped = cli_json({"backup", "diff", a, b, "--store", store_, "--prefix", ns1, "-o", "json"});
  EXPECT_EQ(scoped["removed"], 4);
  EXPECT_EQ(scoped["changed"], 1);
  EXPECT_EQ(scoped["added"], 0);

  std::vector<std::string> to_live = {"--store", store_, "--endpoints", m.client_url(), "--prefix", ns1, "-o", "json"};
  auto restore_keys = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"backup", "restore-keys", a};
    args.insert(args.end(), to_live.begin(), to_live.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return cli(args);
  };

  // Dry run: the plan, and not one write.
  int64_t before = revision(client, m);
  auto dry = restore_keys({"--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << dry.output;
  auto plan = nlohmann::json::parse(dry.output.substr(dry.output.find('{')));
  auto actions = by_kind(plan["actions"], "action");
  EXPECT_EQ(actions["create"], (std::vector<std::string>{ns1 + "a", ns1 + "b", ns1 + "d", ns1 + "e"})) << plan.dump();
  EXPECT_EQ(actions["skip"], (std::vector<std::string>{ns1 + "c"})) << plan.dump();
  EXPECT_EQ(revision(client, m), before) << "a dry run must not write";

  // skip-existing (default): the absent keys come back, the re-created one is left alone.
  auto skip = restore_keys({});
  ASSERT_EQ(skip.exit_code, 0) << skip.output;
  for (const char* k : {"a", "b", "d", "e"}) EXPECT_EQ(value_of(client, ns1 + k), std::string("orig-") + k);
  EXPECT_EQ(value_of(client, ns1 + "c"), "changed");
  EXPECT_EQ(value_of(client, "/other/k"), "v2") << "keys outside the prefix are not touched";
  EXPECT_EQ(value_of(client, "/new/key"), "n");

  // overwrite: the changed key gets the backup's value too.
  auto over = restore_keys({"--conflict", "overwrite"});
  ASSERT_EQ(over.exit_code, 0) << over.output;
  EXPECT_EQ(value_of(client, ns1 + "c"), "orig-c");

  // only-if-absent: all or nothing.
  etcdserverpb::DeleteRangeRequest one;
  one.set_key(ns1 + "a");
  client.delete_range(one);
  before = revision(client, m);
  auto refused = restore_keys({"--conflict", "only-if-absent"});
  EXPECT_EQ(refused.exit_code, 4) << refused.output;
  EXPECT_EQ(value_of(client, ns1 + "a"), "<absent>");
  EXPECT_EQ(revision(client, m), before);
  del_prefix(client, ns1);
  auto all = restore_keys({"--conflict", "only-if-absent"});
  ASSERT_EQ(all.exit_code, 0) << all.output;
  for (const char* k : {"a", "b", "c", "d", "e"}) EXPECT_EQ(value_of(client, ns1 + k), std::string("orig-") + k);

  auto bad = restore_keys({"--conflict", "clobber"});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
}

}  // namespace
}  // namespace etcdadm::test
