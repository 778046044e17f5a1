// Printing results: human tables by default, JSON (-o json) for scripts. stdout carries only the
// result; logs and errors go to stderr.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "common/text.h"  // human_bytes
#include "restore/pitr.h"
#include "restore/restore_method.h"
#include "store/catalog.h"
#include "store/layout.h"

namespace etcdadm::cli {

enum class OutputFormat { kTable, kJson };
OutputFormat parse_output_format(const std::string& s);
// -o/--output-format, with etcdctl's -w/--write-out and ETCDCTL_WRITE_OUT as the same option.
void add_output_format_option(CLI::App* c, std::string& output);

// `windows`: how far each backup's change log reaches (restore/pitr.h log_windows), by name.
void print_backups(const std::vector<BackupRecord>& newest_first, OutputFormat format,
                   const std::map<std::string, LogWindow>& windows = {});
void print_attempts(const std::vector<AttemptRecord>& newest_first, OutputFormat format);
// `backup verify`'s report of a backup's change log (restore/pitr.h verify_change_log): JSON, and
// the lines of the table output (none when the backup has no log).
nlohmann::json change_log_check_json(const ChangeLogCheck& log);
// A late window of the change log (changelog/segment.h LateWindow), as `backup list`'s
// `changeLog.late` and a point-in-time restore's `replay.late` print it.
nlohmann::json late_window_json(int64_t first_revision, int64_t last_revision, int64_t committed_after_micros,
                                int64_t received_micros);
void print_change_log_check(const ChangeLogCheck& log);
// What a restore did to the revision (restore/restore_method.h): `backup restore`'s revisionBump.
nlohmann::json revision_bump_json(const RevisionBump& bump);

}  // namespace etcdadm::cli
