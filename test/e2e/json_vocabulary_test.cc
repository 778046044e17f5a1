// The JSON vocabulary (docs/json.md) held across every result a script reads about a backup: the
// backup's name is under `backup` wherever it appears, every time has one form, a result has the
// same keys whatever it could check, and the backup schema is exactly the one docs/json.md lists.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>

#include "common/fs.h"
#include "test/support/cli_fixture.h"

namespace etcdadm::test {

namespace {

class JsonVocabulary : public CliTest {
 protected:
  // Every place in `j` where the string `name` is a value, as a path ("/a/0/b"), with the key that
  // holds it ("" inside an array); and every string that starts like a date, with its path.
  struct Found {
    std::vector<std::pair<std::string, std::string>> name_under;  // path, key
    std::vector<std::pair<std::string, std::string>> times;       // path, value
  };
  static void walk(const nlohmann::json& j, const std::string& name, const std::string& path, const std::string& key,
                   Found& out) {
    static const std::regex date_like(R"(^\d{4}-\d\d-\d\dT)");
    static const std::regex backup_name(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ-\d{6}$)");
    if (j.is_object()) {
      for (const auto& [k, v] : j.items()) walk(v, name, path + "/" + k, k, out);
    } else if (j.is_array()) {
      for (size_t i = 0; i < j.size(); ++i) walk(j[i], name, path + "/" + std::to_string(i), "", out);
    } else if (j.is_string()) {
      const std::string s = j.get<std::string>();
      if (s == name) {
        out.name_under.emplace_back(path, key);
      } else if (std::regex_search(s, date_like) && !std::regex_match(s, backup_name)) {
        out.times.emplace_back(path, s);
      }
    }
  }

  // The backup's name appears only under `backup` (or in an array of names), times only as RFC 3339
  // UTC with six fractional digits; returns how often the name appeared.
  static size_t expect_vocabulary(const std::string& what, const nlohmann::json& j, const std::string& name) {
    SCOPED_TRACE(what);
    Found f;
    walk(j, name, "", "", f);
    static const std::regex micros(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$)");
    for (const auto& [path, key] : f.name_under) {
      EXPECT_TRUE(key == "backup" || key.empty()) << "the backup's name is under '" << key << "' at " << path << ": " << j.dump(2);
    }
    for (const auto& [path, value] : f.times) {
      EXPECT_TRUE(std::regex_match(value, micros)) << "time '" << value << "' at " << path << " is not in the one form";
    }
    return f.name_under.size();
  }

  // The keys the table under `heading` in docs/json.md lists (first column; a cell may list several).
  static std::set<std::string> documented_keys(const std::string& heading) {
    std::istringstream doc(read_file(std::string(ETCDADM_SOURCE_DIR) + "/docs/json.md"));
    std::set<std::string> keys;
    std::string line;
    bool in_section = false;
    static const std::regex key_cell(R"(`([A-Za-z0-9]+)`)");
    while (std::getline(doc, line)) {
      if (line.rfind("## ", 0) == 0) in_section = line == "## " + heading;
      if (!in_section || line.rfind("| `", 0) != 0) continue;
      std::string first = line.substr(2, line.find(" |", 2) - 2);
      for (std::sregex_iterator it(first.begin(), first.end(), key_cell), end; it != end; ++it) keys.insert((*it)[1]);
    }
    return keys;
  }

  static std::set<std::string> keys_of(const nlohmann::json& j) {
    std::set<std::string> out;
    for (const auto& [k, v] : j.items()) out.insert(k);
    return out;
  }
};

TEST_F(JsonVocabulary, EveryResultNamesTheBackupOneWayAndGivesTimesInOneForm) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/vocabulary/k-", 10, 50, 1);
  auto first = save(m);
  const std::string name = first["backup"];
  client.put("/vocabulary/later", "1");
  const std::string second = save(m)["backup"];

  // The backup schema is the documented one, key for key, in list and in save (plus what save adds).
  const std::set<std::string> documented = documented_keys("A backup (`backup list`, `backup save`, `backup import`, `GET /backups`)");
  ASSERT_GT(documented.size(), 20u) << "docs/json.md's backup table was not found";
  auto list = cli_json({"backup", "list", "--store", store_, "-o", "json"});
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(keys_of(list[1]), documented);
  std::set<std::string> saved_keys = documented;
  saved_keys.erase("changeLog");
  saved_keys.insert({"store", "durationSeconds"});
  EXPECT_EQ(keys_of(first), saved_keys);

  const std::string out = dir_ / "fetched.db";
  struct Result {
    std::string what;
    nlohmann::json json;
  };
  std::vector<Result> results = {
      {"save", first},
      {"list", list},
      {"list --history", cli_json({"backup", "list", "--history", "--store", store_, "-o", "json"})},
      {"verify", cli_json({"backup", "verify", name, "--store", store_, "-o", "json"})},
      {"verify --shallow", cli_json({"backup", "verify", name, "--shallow", "--store", store_, "-o", "json"})},
      {"inspect", cli_json({"backup", "inspect", name, "--store", store_, "-o", "json"})},
      {"get", cli_json({"backup", "get", name, "/vocabulary/k-000001", "--store", store_, "-o", "json"})},
      {"diff", cli_json({"backup", "diff", name, second, "--store", store_, "-o", "json"})},
      {"restore --output-file", cli_json({"backup", "restore", name, "--store", store_, "--output-file", out, "-o", "json"})},
      {"copy", cli_json({"backup", "copy", "--from", store_, "--to", dir_ / "second-store", "--all", "-o", "json"})},
      {"prune --dry-run", cli_json({"backup", "prune", "--store", store_, "--policy", "count:1", "--dry-run",
                                    "--allow-no-recent-backup", "-o", "json"})},
  };
  for (const auto& r : results) {
    EXPECT_GT(expect_vocabulary(r.what, r.json, name), 0u) << r.what << " does not name the backup: " << r.json.dump(2);
  }
  // Each result about one backup in one store names both.
  for (const char* what : {"verify", "inspect", "get", "restore --output-file"}) {
    for (const auto& r : results) {
      if (r.what != what) continue;
      EXPECT_EQ(r.json["backup"], name) << what;
      EXPECT_TRUE(r.json["store"].is_string()) << what << ": " << r.json.dump(2);
    }
  }
  // A result has the same keys whatever it could check: a shallow verify has nulls where a deep one
  // has values.
  EXPECT_EQ(keys_of(results[3].json), keys_of(results[4].json));
  EXPECT_TRUE(results[4].json["revision"].is_null()) << results[4].json.dump(2);
  EXPECT_EQ(results[3].json["revision"], first["revision"]);
}

}  // namespace

}  // namespace etcdadm::test
