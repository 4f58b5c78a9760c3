// KubeClient: the small part of the Kubernetes API that vgpu uses (nodes, pods, bindings), as an
// interface so components can be tested against a fake and so the node daemon and the scheduler
// share one client.
//
// Contract:
// - Objects are nlohmann::json values exactly as the API server sends them.
// - Errors map HTTP statuses to Status codes, with the API server's message:
//     400/422 kInvalidArgument, 401/403 kPermissionDenied, 404 kNotFound,
//     409 kAlreadyExists ("conflict": stale resourceVersion, UID mismatch, pod already bound),
//     410 kOutOfRange ("gone": the resourceVersion is too old; relist),
//     429/5xx and transport failures kUnavailable (after the implementation's own retries).
// - Watch() streams events of one resource kind from `resource_version` on. It returns OK when the
//   server ends the stream (its timeout), when `on_event` returns false or when the canceller
//   fires; kOutOfRange when the server answers 410 or sends an ERROR event with code 410 (the
//   caller must relist); kUnavailable when the connection drops (the caller resumes from the last
//   resourceVersion it saw). Only one thread may run a given Watch; other calls are thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace vgpu::k8s {

using Json = nlohmann::json;

// Nodes and pods (core API); the scheduler's own MutatingWebhookConfiguration (cluster-scoped,
// admissionregistration.k8s.io/v1), whose caBundle it keeps current; the Secret (core API,
// namespaced) that holds the webhook's CA and serving certificate; the node's Events
// (namespaced). The DRA driver's ResourceClaims (namespaced) and ResourceSlices (cluster-scoped),
// resource.k8s.io/v1.
enum class ResourceKind {
  kNode,
  kPod,
  kMutatingWebhookConfiguration,
  kSecret,
  kEvent,
  kResourceClaim,
  kResourceSlice
};
// "nodes" / "pods" / "mutatingwebhookconfigurations" / "secrets" / "events" / "resourceclaims" /
// "resourceslices"
std::string_view KindName(ResourceKind kind);
// Whether objects of the kind live in a namespace (pods, secrets, resource claims).
bool Namespaced(ResourceKind kind);
// The API path of the kind's group and version: "/api/v1" or "/apis/<group>/<version>".
std::string_view ApiGroupPath(ResourceKind kind);

enum class PatchType { kMerge, kStrategicMerge, kJsonPatch };
std::string_view PatchContentType(PatchType type);

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;  // items per request (the list is followed to the end); 0 = unpaged
};

struct ObjectList {
  std::vector<Json> items;
  std::string resource_version;  // of the list, to start a watch from
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // events after this version
  int timeout_seconds = 300;     // the server ends the watch after this
  bool allow_bookmarks = true;
};

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK (ERROR events become Watch's status)
  Json object;
};

// Lets another thread end a running Watch promptly. Thread-safe.
class WatchCanceller {
 public:
  void Cancel();
  bool cancelled() const { return cancelled_.load(); }
  // Used by implementations: `abort` is called by Cancel() while registered.
  void Register(std::function<void()> abort);
  void Unregister();
  void Reset() { cancelled_.store(false); }

 private:
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::function<void()> abort_;
};

class KubeClient {
 public:
  virtual ~KubeClient() = default;

  // `ns` is the namespace of namespaced kinds ("" for cluster-scoped kinds; "" lists pods of all
  // namespaces).
  virtual Result<Json> Get(ResourceKind kind, const std::string& ns, const std::string& name) = 0;
  virtual Result<ObjectList> List(ResourceKind kind, const std::string& ns,
                                  const ListOptions& options) = 0;
  virtual Result<Json> Patch(ResourceKind kind, const std::string& ns, const std::string& name,
                             const Json& patch, PatchType type) = 0;
  // POST a new object (its metadata.name names it); 409 (kAlreadyExists) when one exists.
  // Returns the object as stored.
  virtual Result<Json> Create(ResourceKind kind, const std::string& ns, const Json& object) = 0;
  // PUT the whole object `name`; a metadata.resourceVersion in it is a precondition (409 when
  // stale). kNotFound when it does not exist. Returns the object as stored.
  virtual Result<Json> Update(ResourceKind kind, const std::string& ns, const std::string& name,
                              const Json& object) = 0;
  // DELETE the object `name`; `uid`, when not empty, is a precondition (409 when the object
  // there now has another UID). kNotFound when it does not exist.
  virtual Status Delete(ResourceKind kind, const std::string& ns, const std::string& name,
                        const std::string& uid) = 0;
  // GET /version: the API server's {"major", "minor", "gitVersion", ...}.
  virtual Result<Json> ServerVersion() = 0;
  // POST pods/<name>/binding. `uid` may be empty.
  virtual Status CreateBinding(const std::string& ns, const std::string& name,
                               const std::string& uid, const std::string& node) = 0;
  virtual Status Watch(ResourceKind kind, const std::string& ns, const WatchOptions& options,
                       const std::function<bool(WatchEvent&&)>& on_event,
                       WatchCanceller* canceller) = 0;
};

// ---- Helpers over any KubeClient ----

// Annotation changes: a value sets the key, std::nullopt removes it.
using AnnotationChanges = std::map<std::string, std::optional<std::string>>;

// One JSON merge patch that sets / removes the given annotations. `uid` and `resource_version`,
// when not empty, are preconditions: the API server answers 409 if they do not match.
Json AnnotationPatch(const AnnotationChanges& changes, const std::string& uid = "",
                     const std::string& resource_version = "");

// Patches annotations with a merge patch (no read first). `uid` as above.
Result<Json> PatchAnnotations(KubeClient& client, ResourceKind kind, const std::string& ns,
                              const std::string& name, const AnnotationChanges& changes,
                              const std::string& uid = "");

// Read-modify-write with optimistic concurrency: reads the object, asks `mutate` for the changes
// (it may fail to abort; returning no changes skips the write), patches with the object's
// resourceVersion as precondition and, on 409, reads again and re-applies, up to `max_attempts`.
// Returns the object as written (or as read when there was nothing to change).
Result<Json> UpdateAnnotations(
    KubeClient& client, ResourceKind kind, const std::string& ns, const std::string& name,
    const std::function<Result<AnnotationChanges>(const Json& object)>& mutate,
    int max_attempts = 8);

// Annotation `key` of an object, "" when absent.
std::string AnnotationOf(const Json& object, const std::string& key);
// metadata.<field> as a string ("" when absent): name, namespace, uid, resourceVersion.
std::string MetaString(const Json& object, const char* field);

}  // namespace vgpu::k8s
