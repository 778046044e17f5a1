#include "sidecar/changelog_loop.h"

#include <spdlog/spdlog.h>

#include "backup/member_select.h"
#include "changelog/heartbeat.h"
#include "common/error.h"
#include "common/timefmt.h"
#include "store/audience.h"
#include "store/layout.h"

namespace etcdadm {

namespace {

// Sleeps up to `d`, waking early when `stop` is set.
void nap(const std::atomic<bool>& stop, std::chrono::milliseconds d) {
  auto until = std::chrono::steady_clock::now() + d;
  while (!stop.load() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

}  // namespace

ChangeLogLoop::ChangeLogLoop(EtcdClient& client, BlobStore& store, Catalog* catalog, ChangeLogLoopOptions options,
                             std::function<void(const std::string&, int64_t)> request_backup)
    : client_(client),
      store_(store),
      catalog_(catalog),
      options_(std::move(options)),
      request_backup_(std::move(request_backup)) {}

ChangeLogLoop::~ChangeLogLoop() { stop(); }

void ChangeLogLoop::start() {
  stop_ = false;
  thread_ = std::thread([this] { loop(); });
}

void ChangeLogLoop::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

ChangeLogLoopStatus ChangeLogLoop::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  ChangeLogLoopStatus s = status_;
  if (live_ != nullptr) {
    s.stored_revision = live_->stored_revision.load();
    s.stored_observed_micros = live_->stored_observed_micros.load();
    s.received_revision = live_->received_revision.load();
    s.segments_written = status_.segments_written + live_->segments_written.load();
    s.bytes_written = status_.bytes_written + live_->bytes_written.load();
  }
  return s;
}

std::optional<double> ChangeLogLoop::rpo_seconds() const {
  ChangeLogLoopStatus s = status();
  if ((!s.running && !s.failing) || s.stored_observed_micros == 0) return std::nullopt;
  // Nothing received since what is stored: the store is as fresh as the cluster (a quiet cluster).
  // Not while capture fails: whatever the cluster wrote since then is not in the store.
  if (s.running && s.received_revision <= s.stored_revision) return 0.0;
  return static_cast<double>(to_unix_micros(std::chrono::system_clock::now()) - s.stored_observed_micros) / 1e6;
}

std::optional<ChangeLogLoop::Continuation> ChangeLogLoop::start_revision(const std::string& cluster_id) {
  auto listed = scan_backups(store_);
  for (auto it = listed.rbegin(); it != listed.rend(); ++it) {  // newest first
    BackupRecord b;
    try {
      b = load_backup_record(store_, *it);
    } catch (const Error& e) {
      continue;  // unreadable: `backup list` reports it
    }
    if (b.cluster_id != cluster_id || !b.revision) continue;
    if (options_.backup_accepted && !options_.backup_accepted(b)) continue;
    std::vector<changelog::LateWindow> late;
    bool heartbeat_listed = false;
    auto segments = changelog::list_segments(store_, cluster_id, &heartbeat_listed, &late);
    if (options_.segment_accepted) {
      std::erase_if(segments, [&](const auto& s) { return !options_.segment_accepted(s); });
    }
    auto chain = changelog::chain_from(segments, *b.revision);
    const auto heartbeat = heartbeat_listed ? changelog::read_heartbeat(store_, cluster_id) : std::nullopt;
    const int64_t until = changelog::complete_until_micros(chain, heartbeat, late);
    return Continuation{chain.reaches + 1, until > 0 ? until : b.taken_at_micros};
  }
  return std::nullopt;
}

void ChangeLogLoop::loop() {
  int64_t restart_after_gap = 0;  // after a gap: a backup must reach this revision first
  bool asked_for_backup = false;
  // Asked again while no backup reaches: the one asked for may have failed, or been pruned.
  std::chrono::steady_clock::time_point asked_at;
  // This loop's own connections, made anew after a failure: a fresh channel connects at once when
  // the member serves again, where the old one would wait out gRPC's reconnect back-off (12 s
  // measured after a 4 s restart of etcd 3.4).
  std::unique_ptr<EtcdClient> own;
  // Since when capturing fails: logged once when it starts failing and once when it recovers.
  std::optional<std::chrono::steady_clock::time_point> failing_since;
  while (!stop_.load()) {
    try {
      if (!own) own = std::make_unique<EtcdClient>(client_.config());
      EtcdClient& client = *own;
      auto st = client.status(options_.member_endpoint);
      std::string cluster_id = id_hex(st.header().cluster_id());
      bool leader = st.leader() == st.header().member_id();
      if (options_.leader_only && !leader) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          status_.failing = false;  // a follower: the leader's sidecar writes the log
        }
        nap(stop_, std::chrono::seconds(1));
        continue;
      }
      auto start = start_revision(cluster_id);
      if (!start || start->revision < restart_after_gap) {
        if (!asked_for_backup || std::chrono::steady_clock::now() - asked_at > std::chrono::seconds(60)) {
          asked_at = std::chrono::steady_clock::now();
          // The log continues from the revision after the snapshot's: a snapshot at the compact
          // revision (first_available - 1) is enough.
          request_backup_(
              start ? "change log gap: a new snapshot starts the log again" : "change log: no backup to start from",
              std::max<int64_t>(restart_after_gap - 1, 1));
          asked_for_backup = true;
        }
        nap(stop_, std::chrono::seconds(1));
        continue;
      }
      asked_for_backup = false;
      changelog::CaptureOptions co = options_.capture;
      co.cluster_id = cluster_id;
      // Segments are stored as the store stores backups: its compression, its recipients, once
      // they are the ones this host writes for.
      StoreRequest writing;
      writing.encryption = options_.writer;
      StoreSettings settings = settings_for_writing(store_, catalog_, writing);
      co.compression = settings.compression;
      co.encrypt_to.reset();
      co.key_id.clear();
      if (settings.encryption) {
        co.encrypt_to = recipients_for_save(*settings.encryption, options_.writer, store_.url());
        co.key_id = settings.encryption->key_id();
      }
      changelog::Capture capture(client, store_, options_.member_endpoint, co);
      std::atomic<bool> capture_stop{false};
      // Ends the capture when the sidecar stops or (leader_only) the member no longer leads.
      // Ends the capture too when the store's recipients change (`backup rekey` with new ones):
      // the next capture encrypts to them, and the segments written before are rekey's to re-wrap.
      const std::string key_id = co.key_id;
      std::thread guard([&] {
        for (int tick = 1; !stop_.load() && !capture_stop.load(); ++tick) {
          nap(stop_, std::chrono::seconds(1));
          if (stop_.load()) continue;
          if (tick % 30 == 0) {
            try {
              auto now = read_store_settings(store_).value_or(StoreSettings{});
              if ((now.encryption ? now.encryption->key_id() : std::string()) != key_id) {
                spdlog::info("change log: the store's recipients changed; segments from now on are encrypted to them");
                break;
              }
            } catch (const std::exception& e) {
              spdlog::debug("change log: store marker check failed: {}", e.what());
            }
          }
          if (!options_.leader_only) continue;
          try {
            auto s = client.status(options_.member_endpoint);
            if (s.leader() != s.header().member_id()) {
              spdlog::info("change log: member {} no longer leads; the new leader's sidecar continues the log",
                           id_hex(s.header().member_id()));
              break;
            }
          } catch (const Error& e) {
            spdlog::debug("change log: leadership check failed: {}", e.what());
          }
        }
        capture_stop = true;
      });
      {
        std::lock_guard<std::mutex> lock(mu_);
        status_.running = true;
        status_.failing = false;
        live_ = &capture.stats();
      }
      if (failing_since) {
        spdlog::info("change log: member {} answers again after {:.1f}s", options_.member_endpoint,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - *failing_since).count());
        failing_since.reset();
      }
      spdlog::info("change log: capturing cluster {} from revision {}", cluster_id, start->revision);
      std::exception_ptr failure;
      try {
        capture.run(start->revision, capture_stop, start->complete_until_micros);
      } catch (...) {
        failure = std::current_exception();
      }
      capture_stop = true;
      guard.join();
      {
        std::lock_guard<std::mutex> lock(mu_);
        status_.running = false;
        status_.segments_written += capture.stats().segments_written.load();
        status_.bytes_written += capture.stats().bytes_written.load();
        status_.stored_revision = capture.stats().stored_revision.load();
        status_.stored_observed_micros = capture.stats().stored_observed_micros.load();
        status_.received_revision = capture.stats().received_revision.load();
        live_ = nullptr;
      }
      if (failure) std::rethrow_exception(failure);
    } catch (const changelog::LogGap& gap) {
      spdlog::error(
          "change log GAP: {}; revisions {}..{} cannot be restored to. Taking a new snapshot now; the log "
          "restarts from it",
          gap.what(), gap.wanted_revision, gap.first_available > 0 ? gap.first_available - 1 : gap.wanted_revision);
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++status_.gaps;
        status_.last_error = gap.what();
        status_.failing = true;
      }
      // The top of the loop asks for the backup, after looking at the store once more: a backup
      // that landed meanwhile (the sidecar's start-up one) may already reach past the gap.
      restart_after_gap = gap.first_available;
      asked_for_backup = false;
    } catch (const std::exception& e) {
      own.reset();
      if (!failing_since) {
        failing_since = std::chrono::steady_clock::now();
        spdlog::warn("change log: capture stopped: {}; trying again every second (logged again when it resumes)",
                     e.what());
      } else {
        spdlog::debug("change log: {}; trying again", e.what());
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        status_.last_error = e.what();
        status_.failing = true;
      }
      nap(stop_, std::chrono::seconds(1));
    }
  }
}

}  // namespace etcdadm
