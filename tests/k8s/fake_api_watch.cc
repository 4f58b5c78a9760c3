// FakeApiServer's watch streams (see fake_api_server.h): replay from a resourceVersion, live
// events, bookmarks, 410 for compacted versions, injected drops.
#include <algorithm>
#include <chrono>

#include "fake_api_server.h"

namespace vgpu::k8s::testing {
namespace {

using namespace std::chrono_literals;

std::string Meta(const Json& o, const char* f) {
  if (!o.is_object() || !o.contains("metadata") || !o["metadata"].is_object()) return "";
  const Json& m = o["metadata"];
  return m.contains(f) && m[f].is_string() ? m[f].get<std::string>() : "";
}

}  // namespace

void FakeApiServer::HandleWatch(const std::string& kind, const std::string& ns,
                                const httplib::Request& req, httplib::Response& res) {
  struct WatchState {
    int64_t cursor = 0;
    int64_t start = 0;
    int sent = 0;
    bool drop_pending = false;
    bool bookmarks = false;
    uint64_t generation = 0;
    std::chrono::steady_clock::time_point deadline, last_write;
  };
  auto st = std::make_shared<WatchState>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string rv = req.get_param_value("resourceVersion");
    st->cursor = st->start = rv.empty() ? rv_ : std::stoll(rv);
    st->generation = drop_generation_;
    if (compact_http_ && st->start < compacted_rv_) {
      SendStatus(res, 410, "Expired", "too old resource version: " + rv);
      return;
    }
  }
  const int timeout =
      req.has_param("timeoutSeconds") ? std::stoi(req.get_param_value("timeoutSeconds")) : 1800;
  st->deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
  st->last_write = std::chrono::steady_clock::now();
  st->bookmarks = req.get_param_value("allowWatchBookmarks") == "true";
  ++watches_started_;
  ++active_watches_;
  res.set_chunked_content_provider(
      "application/json",
      [this, st, kind, ns](size_t, httplib::DataSink& sink) {
        std::string out;
        bool finish = false;
        {
          std::unique_lock<std::mutex> lock(mu_);
          if (st->drop_pending || drop_generation_ != st->generation || stopping_) {
            return false;  // cut the connection without ending the stream
          }
          if (st->start < compacted_rv_) {
            const Json err = {{"type", "ERROR"},
                              {"object",
                               {{"kind", "Status"},
                                {"apiVersion", "v1"},
                                {"status", "Failure"},
                                {"message", "too old resource version"},
                                {"reason", "Expired"},
                                {"code", 410}}}};
            out = err.dump() + "\n";
            finish = true;
          } else {
            const auto has_new = [&] { return !log_.empty() && log_.back().rv > st->cursor; };
            cv_.wait_for(lock, 50ms, [&] {
              return has_new() || drop_generation_ != st->generation || stopping_;
            });
            if (drop_generation_ != st->generation || stopping_) return false;
            auto it = std::upper_bound(log_.begin(), log_.end(), st->cursor,
                                       [](int64_t rv, const Event& e) { return rv < e.rv; });
            for (; it != log_.end(); ++it) {
              st->cursor = it->rv;
              if (it->kind != kind) continue;
              if (!ns.empty() && Meta(it->object, "namespace") != ns) continue;
              out += Json{{"type", it->type}, {"object", it->object}}.dump() + "\n";
              ++st->sent;
              if (drop_after_ > 0 && st->sent >= drop_after_) {
                st->drop_pending = true;
                break;
              }
            }
            const auto now = std::chrono::steady_clock::now();
            if (out.empty() && st->bookmarks && now - st->last_write > 1s) {
              const Json bm = {{"type", "BOOKMARK"},
                               {"object",
                                {{"kind", kind == "nodes" ? "Node" : "Pod"},
                                 {"apiVersion", "v1"},
                                 {"metadata", {{"resourceVersion", std::to_string(st->cursor)}}}}}};
              out = bm.dump() + "\n";
            }
            if (now >= st->deadline) finish = true;
          }
        }
        if (!out.empty()) {
          st->last_write = std::chrono::steady_clock::now();
          if (!sink.write(out.data(), out.size())) return false;
        }
        if (finish) sink.done();
        return true;
      },
      [this](bool) { --active_watches_; });
}

}  // namespace vgpu::k8s::testing
