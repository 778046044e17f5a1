// `backup restore`: a backup restored into a data dir (natively or by etcd's tool, perhaps with
// its change log replayed to a point in time), or with --output-file only fetched and verified.
// The JSON of both names the backup and its store (docs/json.md); the text ends with what
// the person does next.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "restore/data_dir.h"
#include "restore/fetch.h"
#include "restore/static_pod_restore.h"

namespace etcdadm::render {

nlohmann::json restore_result_json(const RestoreResult& r, const std::string& store_url);
// `member_name`: the --name the restore wrote, which etcd must be started with.
std::string restore_result_text(const RestoreResult& r, const std::string& member_name);

// `backup restore --kubeadm-manifest`: the restore, the old data set aside, and whether the member
// the kubelet started again answers.
nlohmann::json static_pod_restore_json(const StaticPodRestoreResult& r, const std::string& store_url);
std::string static_pod_restore_text(const StaticPodRestoreResult& r);

nlohmann::json fetched_snapshot_json(const std::string& backup, const std::string& store_url,
                                     const std::string& output_file, const FetchResult& r);
std::string fetched_snapshot_text(const std::string& backup, const std::string& output_file, const FetchResult& r);

}  // namespace etcdadm::render
