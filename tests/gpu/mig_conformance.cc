// Conformance test of NVML's MIG calls, written once and run against two libraries:
//
//   mig_conformance --nvml PATH --read-only
//       Against the real NVML (ctest label gpu): lists every GPU's MIG profiles (v1, and v2/v3
//       when MIG is on) and possible placements, checks their invariants and prints them (the
//       `nvidia-smi mig -lgip/-lgipp` facts, to compare with src/mig's tables). It never changes
//       the MIG mode, creates or destroys anything: shared machines must not be reconfigured.
//       Exit 77 (skipped) without a GPU, without NVML, or when PATH is the simulated NVML.
//   mig_conformance --nvml PATH --simulated --worker PATH
//       Against the simulated NVML: the same read-only checks, then the state machine (mode
//       changes, create with placement, overlap, capacity, compute instances, MIG handles, UUIDs,
//       IN_USE with a process on the instance, stale handles, destroys), on a private simulated
//       machine (an H200 with MIG on, an A100 and an H100) written into a temporary directory.
//       The worker (simgpu_worker) runs with CUDA_VISIBLE_DEVICES=MIG-<uuid>.
//
// Output: one line per check that failed, the tables, and "PASS"/"FAIL". Exit 0, 1, 2 (usage), 77.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "common/nvml_api.h"

namespace {

int g_failures = 0;

#define EXPECT(cond)                                                \
  do {                                                              \
    if (!(cond)) {                                                  \
      std::printf("FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                 \
    }                                                               \
  } while (0)
#define EXPECT_RC(call, want)                                                                \
  do {                                                                                       \
    nvmlReturn_t rc_ = (call);                                                               \
    if (rc_ != (want)) {                                                                     \
      std::printf("FAILED %s:%d: %s returned %d, want %d (%s)\n", __FILE__, __LINE__, #call, \
                  static_cast<int>(rc_), static_cast<int>(want), #want);                     \
      ++g_failures;                                                                          \
    }                                                                                        \
  } while (0)

// The entry points, loaded with dlopen from the library under test.
struct Nvml {
  void* lib = nullptr;
  nvmlReturn_t (*Init)() = nullptr;
  nvmlReturn_t (*SystemGetDriverVersion)(char*, unsigned) = nullptr;
  nvmlReturn_t (*DeviceGetCount)(unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetHandleByIndex)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*DeviceGetHandleByUUID)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*DeviceGetName)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*DeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*DeviceGetUtilizationRates)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*DeviceGetComputeRunningProcesses_v3)(nvmlDevice_t, unsigned*,
                                                      nvmlProcessInfo_t*) = nullptr;
  nvmlDeviceGetMigMode_fn DeviceGetMigMode = nullptr;
  nvmlDeviceSetMigMode_fn DeviceSetMigMode = nullptr;
  nvmlDeviceGetGpuInstanceProfileInfo_fn DeviceGetGpuInstanceProfileInfo = nullptr;
  nvmlDeviceGetGpuInstanceProfileInfoV_fn DeviceGetGpuInstanceProfileInfoV = nullptr;
  nvmlDeviceGetGpuInstancePossiblePlacements_v2_fn DeviceGetGpuInstancePossiblePlacements_v2 =
      nullptr;
  nvmlDeviceGetGpuInstanceRemainingCapacity_fn DeviceGetGpuInstanceRemainingCapacity = nullptr;
  nvmlDeviceCreateGpuInstanceWithPlacement_fn DeviceCreateGpuInstanceWithPlacement = nullptr;
  nvmlDeviceGetGpuInstances_fn DeviceGetGpuInstances = nullptr;
  nvmlDeviceGetGpuInstanceById_fn DeviceGetGpuInstanceById = nullptr;
  nvmlGpuInstanceGetInfo_fn GpuInstanceGetInfo = nullptr;
  nvmlGpuInstanceDestroy_fn GpuInstanceDestroy = nullptr;
  nvmlGpuInstanceGetComputeInstanceProfileInfo_fn GpuInstanceGetComputeInstanceProfileInfo =
      nullptr;
  nvmlGpuInstanceCreateComputeInstance_fn GpuInstanceCreateComputeInstance = nullptr;
  nvmlComputeInstanceGetInfo_v2_fn ComputeInstanceGetInfo_v2 = nullptr;
  nvmlComputeInstanceDestroy_fn ComputeInstanceDestroy = nullptr;
  nvmlDeviceGetMaxMigDeviceCount_fn DeviceGetMaxMigDeviceCount = nullptr;
  nvmlDeviceGetMigDeviceHandleByIndex_fn DeviceGetMigDeviceHandleByIndex = nullptr;
  nvmlDeviceIsMigDeviceHandle_fn DeviceIsMigDeviceHandle = nullptr;
  nvmlDeviceGetDeviceHandleFromMigDeviceHandle_fn DeviceGetDeviceHandleFromMigDeviceHandle =
      nullptr;
  nvmlDeviceGetGpuInstanceId_fn DeviceGetGpuInstanceId = nullptr;
  nvmlDeviceGetComputeInstanceId_fn DeviceGetComputeInstanceId = nullptr;
  nvmlReturn_t (*SimReset)(unsigned) = nullptr;  // the simulated GPU's reset (not NVML)
  std::vector<std::string> missing;

  template <typename F>
  void Load(F* slot, const char* name) {
    *slot = reinterpret_cast<F>(dlsym(lib, name));
    if (*slot == nullptr) missing.emplace_back(name);
  }
};

bool LoadNvml(const std::string& path, Nvml* n) {
  n->lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (n->lib == nullptr) return false;
  n->Load(&n->Init, "nvmlInit_v2");
  n->Load(&n->SystemGetDriverVersion, "nvmlSystemGetDriverVersion");
  n->Load(&n->DeviceGetCount, "nvmlDeviceGetCount_v2");
  n->Load(&n->DeviceGetHandleByIndex, "nvmlDeviceGetHandleByIndex_v2");
  n->Load(&n->DeviceGetHandleByUUID, "nvmlDeviceGetHandleByUUID");
  n->Load(&n->DeviceGetName, "nvmlDeviceGetName");
  n->Load(&n->DeviceGetUUID, "nvmlDeviceGetUUID");
  n->Load(&n->DeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo");
  n->Load(&n->DeviceGetUtilizationRates, "nvmlDeviceGetUtilizationRates");
  n->Load(&n->DeviceGetComputeRunningProcesses_v3, "nvmlDeviceGetComputeRunningProcesses_v3");
  n->Load(&n->DeviceGetMigMode, "nvmlDeviceGetMigMode");
  n->Load(&n->DeviceSetMigMode, "nvmlDeviceSetMigMode");
  n->Load(&n->DeviceGetGpuInstanceProfileInfo, "nvmlDeviceGetGpuInstanceProfileInfo");
  n->Load(&n->DeviceGetGpuInstanceProfileInfoV, "nvmlDeviceGetGpuInstanceProfileInfoV");
  n->Load(&n->DeviceGetGpuInstancePossiblePlacements_v2,
          "nvmlDeviceGetGpuInstancePossiblePlacements_v2");
  n->Load(&n->DeviceGetGpuInstanceRemainingCapacity, "nvmlDeviceGetGpuInstanceRemainingCapacity");
  n->Load(&n->DeviceCreateGpuInstanceWithPlacement, "nvmlDeviceCreateGpuInstanceWithPlacement");
  n->Load(&n->DeviceGetGpuInstances, "nvmlDeviceGetGpuInstances");
  n->Load(&n->DeviceGetGpuInstanceById, "nvmlDeviceGetGpuInstanceById");
  n->Load(&n->GpuInstanceGetInfo, "nvmlGpuInstanceGetInfo");
  n->Load(&n->GpuInstanceDestroy, "nvmlGpuInstanceDestroy");
  n->Load(&n->GpuInstanceGetComputeInstanceProfileInfo,
          "nvmlGpuInstanceGetComputeInstanceProfileInfo");
  n->Load(&n->GpuInstanceCreateComputeInstance, "nvmlGpuInstanceCreateComputeInstance");
  n->Load(&n->ComputeInstanceGetInfo_v2, "nvmlComputeInstanceGetInfo_v2");
  n->Load(&n->ComputeInstanceDestroy, "nvmlComputeInstanceDestroy");
  n->Load(&n->DeviceGetMaxMigDeviceCount, "nvmlDeviceGetMaxMigDeviceCount");
  n->Load(&n->DeviceGetMigDeviceHandleByIndex, "nvmlDeviceGetMigDeviceHandleByIndex");
  n->Load(&n->DeviceIsMigDeviceHandle, "nvmlDeviceIsMigDeviceHandle");
  n->Load(&n->DeviceGetDeviceHandleFromMigDeviceHandle,
          "nvmlDeviceGetDeviceHandleFromMigDeviceHandle");
  n->Load(&n->DeviceGetGpuInstanceId, "nvmlDeviceGetGpuInstanceId");
  n->Load(&n->DeviceGetComputeInstanceId, "nvmlDeviceGetComputeInstanceId");
  n->SimReset =
      reinterpret_cast<nvmlReturn_t (*)(unsigned)>(dlsym(n->lib, "vgpuSimgpuResetDevice"));
  return true;
}

struct ProfileRow {
  unsigned index;
  nvmlGpuInstanceProfileInfo_t info;
  std::vector<nvmlGpuInstancePlacement_t> placements;
};

// --- The read-only part: the same on a real and a simulated GPU. ---

std::vector<ProfileRow> ListProfiles(const Nvml& n, nvmlDevice_t dev, bool mig_on) {
  std::vector<ProfileRow> rows;
  std::set<unsigned> ids;
  for (unsigned index = 0; index < NVML_GPU_INSTANCE_PROFILE_COUNT; ++index) {
    ProfileRow row{index, {}, {}};
    nvmlReturn_t rc = n.DeviceGetGpuInstanceProfileInfo(dev, index, &row.info);
    if (rc == NVML_ERROR_INVALID_ARGUMENT) break;
    if (rc == NVML_ERROR_NOT_SUPPORTED) continue;
    EXPECT_RC(rc, NVML_SUCCESS);
    if (rc != NVML_SUCCESS) continue;
    const nvmlGpuInstanceProfileInfo_t& p = row.info;
    EXPECT(ids.insert(p.id).second);  // profile ids are unique
    EXPECT(p.sliceCount >= 1 && p.sliceCount <= 8);
    EXPECT(p.instanceCount >= 1 && p.instanceCount <= 7);
    EXPECT(p.multiprocessorCount >= 1);
    EXPECT(p.memorySizeMB >= 1024);
    unsigned count = 0;
    EXPECT_RC(n.DeviceGetGpuInstancePossiblePlacements_v2(dev, p.id, nullptr, &count),
              NVML_SUCCESS);
    EXPECT(count >= p.instanceCount && count <= 8);
    row.placements.resize(count);
    if (count > 0) {
      unsigned small = count - 1;
      EXPECT_RC(
          n.DeviceGetGpuInstancePossiblePlacements_v2(dev, p.id, row.placements.data(), &small),
          NVML_ERROR_INSUFFICIENT_SIZE);
      EXPECT_RC(
          n.DeviceGetGpuInstancePossiblePlacements_v2(dev, p.id, row.placements.data(), &count),
          NVML_SUCCESS);
    }
    unsigned size = row.placements.empty() ? 0 : row.placements[0].size;
    for (const nvmlGpuInstancePlacement_t& pl : row.placements) {
      EXPECT(pl.size == size && pl.size >= 1);
      EXPECT(pl.start + pl.size <= 8);
    }
    if (mig_on) {
      // v2 and v3 describe the same profile as v1, each in its own layout.
      nvmlGpuInstanceProfileInfo_v2_t v2{};
      v2.version = nvmlGpuInstanceProfileInfo_v2;
      EXPECT_RC(n.DeviceGetGpuInstanceProfileInfoV(dev, index, &v2), NVML_SUCCESS);
      EXPECT(v2.id == p.id && v2.memorySizeMB == p.memorySizeMB &&
             v2.multiprocessorCount == p.multiprocessorCount && v2.sliceCount == p.sliceCount);
      EXPECT(std::strncmp(v2.name, "MIG ", 4) == 0);
      nvmlGpuInstanceProfileInfo_v3_t v3{};
      v3.version = nvmlGpuInstanceProfileInfo_v3;
      EXPECT_RC(n.DeviceGetGpuInstanceProfileInfoV(
                    dev, index, reinterpret_cast<nvmlGpuInstanceProfileInfo_v2_t*>(&v3)),
                NVML_SUCCESS);
      EXPECT(v3.id == p.id && v3.memorySizeMB == p.memorySizeMB &&
             v3.instanceCount == p.instanceCount);
      EXPECT(std::strcmp(v3.name, v2.name) == 0);
      nvmlGpuInstanceProfileInfo_v2_t bad{};
      bad.version = 0x01000098u;
      EXPECT_RC(n.DeviceGetGpuInstanceProfileInfoV(dev, index, &bad),
                NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    }
    rows.push_back(row);
  }
  return rows;
}

void PrintProfiles(unsigned gpu, const char* name, const std::vector<ProfileRow>& rows) {
  std::printf("GPU %u: %s\n", gpu, name);
  std::printf("  %-5s %-4s %-6s %-4s %-10s %-4s %s\n", "index", "id", "slices", "SMs", "MiB", "max",
              "placements");
  for (const ProfileRow& r : rows) {
    std::string placements;
    for (const nvmlGpuInstancePlacement_t& p : r.placements) {
      if (!placements.empty()) placements += ",";
      placements += std::to_string(p.start);
    }
    std::printf("  0x%-3x %-4u %-6u %-4u %-10llu %-4u {%s}:%u\n", r.index, r.info.id,
                r.info.sliceCount, r.info.multiprocessorCount, r.info.memorySizeMB,
                r.info.instanceCount, placements.c_str(),
                r.placements.empty() ? 0 : r.placements[0].size);
  }
}

// Returns how many GPUs support MIG.
int ReadOnlyChecks(const Nvml& n) {
  unsigned count = 0;
  EXPECT_RC(n.DeviceGetCount(&count), NVML_SUCCESS);
  int mig_capable = 0;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    EXPECT_RC(n.DeviceGetHandleByIndex(i, &dev), NVML_SUCCESS);
    char name[96] = {};
    n.DeviceGetName(dev, name, sizeof(name));
    unsigned current = 9, pending = 9;
    nvmlReturn_t rc = n.DeviceGetMigMode(dev, &current, &pending);
    if (rc == NVML_ERROR_NOT_SUPPORTED) {
      std::printf("GPU %u: %s: no MIG\n", i, name);
      continue;
    }
    EXPECT_RC(rc, NVML_SUCCESS);
    EXPECT(current <= 1 && pending <= 1);
    ++mig_capable;
    std::vector<ProfileRow> rows = ListProfiles(n, dev, current == NVML_DEVICE_MIG_ENABLE);
    EXPECT(!rows.empty());
    PrintProfiles(i, name, rows);
    unsigned max = 0;
    EXPECT_RC(n.DeviceGetMaxMigDeviceCount(dev, &max), NVML_SUCCESS);
    EXPECT(max >= 1 && max <= 7);
    if (current == NVML_DEVICE_MIG_DISABLE) {
      nvmlGpuInstanceProfileInfo_v2_t v2{};
      v2.version = nvmlGpuInstanceProfileInfo_v2;
      EXPECT_RC(n.DeviceGetGpuInstanceProfileInfoV(dev, 0, &v2), NVML_ERROR_NOT_SUPPORTED);
    }
  }
  return mig_capable;
}

// --- The simulated part: the state machine. ---

struct Child {
  pid_t pid = -1;
  int in = -1;   // its stdin
  int out = -1;  // its stdout
};

Child Spawn(const std::string& worker, const std::string& mode, const std::string& visible) {
  int in[2], out[2];
  if (pipe(in) != 0 || pipe(out) != 0) return {};
  Child c;
  c.pid = fork();
  if (c.pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[1]);
    close(out[0]);
    setenv("CUDA_VISIBLE_DEVICES", visible.c_str(), 1);
    std::vector<char*> argv = {const_cast<char*>(worker.c_str()), const_cast<char*>(mode.c_str())};
    std::string a1 = "25000000", a2 = "500";  // launch: 25 ms kernels for 500 ms
    if (mode == "launch") {
      argv.push_back(a1.data());
      argv.push_back(a2.data());
    }
    argv.push_back(nullptr);
    execv(worker.c_str(), argv.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  c.in = in[1];
  c.out = out[0];
  return c;
}

// Reads lines until one starts with `prefix` (returned) or the child's output ends ("").
std::string ReadUntil(const Child& c, const std::string& prefix, std::string* all = nullptr) {
  std::string line;
  char ch;
  while (read(c.out, &ch, 1) == 1) {
    if (ch != '\n') {
      line += ch;
      continue;
    }
    if (all != nullptr) *all += line + "\n";
    if (line.rfind(prefix, 0) == 0) return line;
    line.clear();
  }
  return "";
}

int Finish(Child& c) {
  if (c.in >= 0) close(c.in);
  c.in = -1;
  int status = 0;
  waitpid(c.pid, &status, 0);
  close(c.out);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

nvmlGpuInstanceProfileInfo_t ProfileByName(const Nvml& n, nvmlDevice_t dev, const char* name) {
  for (unsigned index = 0; index < NVML_GPU_INSTANCE_PROFILE_COUNT; ++index) {
    nvmlGpuInstanceProfileInfo_v2_t v2{};
    v2.version = nvmlGpuInstanceProfileInfo_v2;
    if (n.DeviceGetGpuInstanceProfileInfoV(dev, index, &v2) != NVML_SUCCESS) continue;
    if (std::string(v2.name) == std::string("MIG ") + name) {
      nvmlGpuInstanceProfileInfo_t info{};
      n.DeviceGetGpuInstanceProfileInfo(dev, index, &info);
      return info;
    }
  }
  std::printf("FAILED: no profile %s\n", name);
  ++g_failures;
  return {};
}

// Creates a GI at `start` with one compute instance over all its slices.
bool CreateInstance(const Nvml& n, nvmlDevice_t dev, const nvmlGpuInstanceProfileInfo_t& p,
                    unsigned start, nvmlGpuInstance_t* gi, nvmlComputeInstance_t* ci) {
  nvmlGpuInstancePlacement_t pl{start, 0};
  std::vector<nvmlGpuInstancePlacement_t> all(8);
  unsigned count = 8;
  n.DeviceGetGpuInstancePossiblePlacements_v2(dev, p.id, all.data(), &count);
  pl.size = count > 0 ? all[0].size : 0;
  if (n.DeviceCreateGpuInstanceWithPlacement(dev, p.id, &pl, gi) != NVML_SUCCESS) return false;
  nvmlComputeInstanceProfileInfo_t cip{};
  unsigned ci_index = p.sliceCount == 7 ? NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE : p.sliceCount - 1;
  if (n.GpuInstanceGetComputeInstanceProfileInfo(
          *gi, ci_index, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &cip) != NVML_SUCCESS) {
    return false;
  }
  EXPECT(cip.sliceCount == p.sliceCount && cip.multiprocessorCount == p.multiprocessorCount);
  return n.GpuInstanceCreateComputeInstance(*gi, cip.id, ci) == NVML_SUCCESS;
}

std::string MigUuidOf(const Nvml& n, nvmlComputeInstance_t ci, nvmlDevice_t* mig = nullptr) {
  nvmlComputeInstanceInfo_t info{};
  if (n.ComputeInstanceGetInfo_v2(ci, &info) != NVML_SUCCESS) return "";
  char uuid[96] = {};
  if (n.DeviceGetUUID(info.device, uuid, sizeof(uuid)) != NVML_SUCCESS) return "";
  if (mig != nullptr) *mig = info.device;
  return uuid;
}

void SimulatedChecks(const Nvml& n, const std::string& worker) {
  nvmlDevice_t h200 = nullptr, a100 = nullptr;
  EXPECT_RC(n.DeviceGetHandleByIndex(0, &h200), NVML_SUCCESS);
  EXPECT_RC(n.DeviceGetHandleByIndex(1, &a100), NVML_SUCCESS);
  unsigned current = 9, pending = 9;
  nvmlReturn_t activation = NVML_ERROR_UNKNOWN;

  // Hopper: the mode changes at once. Ampere: pending until a reset.
  EXPECT_RC(n.DeviceGetMigMode(h200, &current, &pending), NVML_SUCCESS);
  EXPECT(current == 1 && pending == 1);
  EXPECT_RC(n.DeviceSetMigMode(h200, NVML_DEVICE_MIG_DISABLE, &activation), NVML_SUCCESS);
  EXPECT(activation == NVML_SUCCESS);
  n.DeviceGetMigMode(h200, &current, &pending);
  EXPECT(current == 0 && pending == 0);
  EXPECT_RC(n.DeviceSetMigMode(h200, NVML_DEVICE_MIG_ENABLE, &activation), NVML_SUCCESS);
  n.DeviceGetMigMode(h200, &current, &pending);
  EXPECT(current == 1 && pending == 1);
  EXPECT_RC(n.DeviceSetMigMode(a100, NVML_DEVICE_MIG_ENABLE, &activation), NVML_SUCCESS);
  EXPECT(activation == NVML_ERROR_RESET_REQUIRED);
  n.DeviceGetMigMode(a100, &current, &pending);
  EXPECT(current == 0 && pending == 1);
  nvmlUtilization_t util{};
  EXPECT_RC(n.DeviceGetUtilizationRates(a100, &util), NVML_SUCCESS);
  EXPECT(n.SimReset != nullptr);
  if (n.SimReset != nullptr) EXPECT_RC(n.SimReset(1), NVML_SUCCESS);
  n.DeviceGetMigMode(a100, &current, &pending);
  EXPECT(current == 1 && pending == 1);
  EXPECT_RC(n.DeviceGetUtilizationRates(a100, &util), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_RC(n.DeviceGetUtilizationRates(h200, &util), NVML_ERROR_NOT_SUPPORTED);

  // Create with placement; overlap; capacity.
  nvmlGpuInstanceProfileInfo_t p3g = ProfileByName(n, h200, "3g.71gb");
  nvmlGpuInstanceProfileInfo_t p1g = ProfileByName(n, h200, "1g.18gb");
  nvmlGpuInstanceProfileInfo_t p7g = ProfileByName(n, h200, "7g.141gb");
  unsigned left = 0;
  EXPECT_RC(n.DeviceGetGpuInstanceRemainingCapacity(h200, p1g.id, &left), NVML_SUCCESS);
  EXPECT(left == 7);
  nvmlGpuInstance_t gi3 = nullptr, gi1 = nullptr, gi_bad = nullptr;
  nvmlComputeInstance_t ci3 = nullptr, ci1 = nullptr;
  EXPECT(CreateInstance(n, h200, p3g, 0, &gi3, &ci3));
  nvmlGpuInstancePlacement_t overlap{2, 1};
  EXPECT_RC(n.DeviceCreateGpuInstanceWithPlacement(h200, p1g.id, &overlap, &gi_bad),
            NVML_ERROR_INSUFFICIENT_RESOURCES);
  nvmlGpuInstancePlacement_t whole{0, 8};
  EXPECT_RC(n.DeviceCreateGpuInstanceWithPlacement(h200, p7g.id, &whole, &gi_bad),
            NVML_ERROR_INSUFFICIENT_RESOURCES);
  nvmlGpuInstancePlacement_t illegal{1, 4};
  EXPECT_RC(n.DeviceCreateGpuInstanceWithPlacement(h200, p3g.id, &illegal, &gi_bad),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT(CreateInstance(n, h200, p1g, 4, &gi1, &ci1));
  EXPECT_RC(n.DeviceGetGpuInstanceRemainingCapacity(h200, p1g.id, &left), NVML_SUCCESS);
  EXPECT(left == 2);  // slices 5 and 6 (slice 7 is no legal 1g start)
  EXPECT_RC(n.DeviceGetGpuInstanceRemainingCapacity(h200, p3g.id, &left), NVML_SUCCESS);
  EXPECT(left == 0);

  // Instance info and ids; listing.
  nvmlGpuInstanceInfo_t gi_info{};
  EXPECT_RC(n.GpuInstanceGetInfo(gi1, &gi_info), NVML_SUCCESS);
  EXPECT(gi_info.device == h200 && gi_info.profileId == p1g.id && gi_info.placement.start == 4 &&
         gi_info.placement.size == 1);
  nvmlGpuInstance_t by_id = nullptr;
  EXPECT_RC(n.DeviceGetGpuInstanceById(h200, gi_info.id, &by_id), NVML_SUCCESS);
  EXPECT(by_id == gi1);
  nvmlGpuInstance_t list[8];
  unsigned listed = 8;
  EXPECT_RC(n.DeviceGetGpuInstances(h200, p3g.id, list, &listed), NVML_SUCCESS);
  EXPECT(listed == 1 && list[0] == gi3);

  // MIG device handles: UUID, memory, parent, ids.
  nvmlDevice_t mig3 = nullptr, mig1 = nullptr;
  std::string uuid3 = MigUuidOf(n, ci3, &mig3);
  std::string uuid1 = MigUuidOf(n, ci1, &mig1);
  EXPECT(uuid3.rfind("MIG-", 0) == 0 && uuid3.size() == 40 && uuid1 != uuid3);
  unsigned is_mig = 9;
  EXPECT_RC(n.DeviceIsMigDeviceHandle(mig3, &is_mig), NVML_SUCCESS);
  EXPECT(is_mig == 1);
  EXPECT_RC(n.DeviceIsMigDeviceHandle(h200, &is_mig), NVML_SUCCESS);
  EXPECT(is_mig == 0);
  nvmlDevice_t parent = nullptr;
  EXPECT_RC(n.DeviceGetDeviceHandleFromMigDeviceHandle(mig1, &parent), NVML_SUCCESS);
  EXPECT(parent == h200);
  nvmlMemory_t mem{};
  EXPECT_RC(n.DeviceGetMemoryInfo(mig3, &mem), NVML_SUCCESS);
  EXPECT(mem.total == p3g.memorySizeMB << 20 && mem.used == 0);
  unsigned id = 99;
  EXPECT_RC(n.DeviceGetGpuInstanceId(mig1, &id), NVML_SUCCESS);
  EXPECT(id == gi_info.id);
  EXPECT_RC(n.DeviceGetComputeInstanceId(mig1, &id), NVML_SUCCESS);
  EXPECT(id == 0);
  nvmlDevice_t by_uuid = nullptr;
  EXPECT_RC(n.DeviceGetHandleByUUID(uuid1.c_str(), &by_uuid), NVML_SUCCESS);
  EXPECT(by_uuid == mig1);
  nvmlDevice_t by_index = nullptr;
  EXPECT_RC(n.DeviceGetMigDeviceHandleByIndex(h200, 0, &by_index), NVML_SUCCESS);
  EXPECT_RC(n.DeviceGetMigDeviceHandleByIndex(h200, 1, &by_index), NVML_SUCCESS);
  EXPECT_RC(n.DeviceGetMigDeviceHandleByIndex(h200, 2, &by_index), NVML_ERROR_NOT_FOUND);

  // A process on the 3g instance: it sees one device with the instance's memory and SMs; the
  // instance is IN_USE while it runs; mode changes are refused.
  Child c = Spawn(worker, "limits", uuid3);
  std::string out;
  std::string ready = ReadUntil(c, "ready", &out);
  EXPECT(!ready.empty());
  char expect_device[128];
  std::snprintf(expect_device, sizeof(expect_device), "device %llu %u ", p3g.memorySizeMB << 20,
                p3g.multiprocessorCount);
  EXPECT(out.find("count 1\n") != std::string::npos);
  EXPECT(out.find(expect_device) != std::string::npos);
  EXPECT(out.find("alloc_all OK") != std::string::npos);
  EXPECT(out.find("alloc_more ERR") != std::string::npos);
  if (g_failures > 0) std::printf("worker said:\n%s", out.c_str());
  nvmlProcessInfo_t procs[4];
  unsigned nprocs = 4;
  EXPECT_RC(n.DeviceGetComputeRunningProcesses_v3(mig3, &nprocs, procs), NVML_SUCCESS);
  EXPECT(nprocs == 1 && static_cast<pid_t>(procs[0].pid) == c.pid);
  EXPECT_RC(n.ComputeInstanceDestroy(ci3), NVML_ERROR_IN_USE);
  EXPECT_RC(n.DeviceSetMigMode(h200, NVML_DEVICE_MIG_DISABLE, &activation), NVML_ERROR_IN_USE);
  EXPECT(Finish(c) == 0);

  // The GPU itself is not a CUDA device while in MIG mode.
  Child whole_gpu = Spawn(worker, "info", "0");
  std::string info = ReadUntil(whole_gpu, "count");
  Finish(whole_gpu);
  EXPECT(info == "" || info == "count 0");

  // Instances do not share time: two processes on two instances each run all the time.
  Child l3 = Spawn(worker, "launch", uuid3);
  Child l1 = Spawn(worker, "launch", uuid1);
  std::string d3 = ReadUntil(l3, "done");
  std::string d1 = ReadUntil(l1, "done");
  Finish(l3);
  Finish(l1);
  long k3 = 0, k1 = 0;
  std::sscanf(d3.c_str(), "done %ld", &k3);
  std::sscanf(d1.c_str(), "done %ld", &k1);
  // 500 ms of 25 ms kernels: 20 each when the instances do not share time, 10 if they did.
  EXPECT(k3 >= 15 && k1 >= 15);
  if (k3 < 15 || k1 < 15) std::printf("kernels: %ld and %ld\n", k3, k1);

  // Destroy order: GI with a CI is IN_USE; stale handles after destroy.
  EXPECT_RC(n.GpuInstanceDestroy(gi3), NVML_ERROR_IN_USE);
  EXPECT_RC(n.ComputeInstanceDestroy(ci3), NVML_SUCCESS);
  EXPECT_RC(n.ComputeInstanceDestroy(ci3), NVML_ERROR_INVALID_ARGUMENT);
  char buf[96];
  EXPECT_RC(n.DeviceGetUUID(mig3, buf, sizeof(buf)), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_RC(n.GpuInstanceDestroy(gi3), NVML_SUCCESS);
  EXPECT_RC(n.GpuInstanceGetInfo(gi3, &gi_info), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_RC(n.DeviceSetMigMode(h200, NVML_DEVICE_MIG_DISABLE, &activation), NVML_ERROR_IN_USE);

  // Re-created at the same place, an instance has the same UUID.
  EXPECT(CreateInstance(n, h200, p3g, 0, &gi3, &ci3));
  EXPECT(MigUuidOf(n, ci3) == uuid3);
  for (auto [gi, ci] : {std::pair{gi3, ci3}, std::pair{gi1, ci1}}) {
    EXPECT_RC(n.ComputeInstanceDestroy(ci), NVML_SUCCESS);
    EXPECT_RC(n.GpuInstanceDestroy(gi), NVML_SUCCESS);
  }
  EXPECT_RC(n.DeviceGetGpuInstanceRemainingCapacity(h200, p1g.id, &left), NVML_SUCCESS);
  EXPECT(left == 7);
  EXPECT_RC(n.DeviceSetMigMode(h200, NVML_DEVICE_MIG_DISABLE, &activation), NVML_SUCCESS);
}

std::string WriteSimulatedMachine() {
  char dir[] = "/tmp/vgpu-mig-conformance-XXXXXX";
  if (mkdtemp(dir) == nullptr) return "";
  std::string config = std::string(dir) + "/simgpu.conf";
  FILE* f = std::fopen(config.c_str(), "w");
  if (f == nullptr) return "";
  std::fprintf(f, "model=h200 mig=on\nmodel=a100\nmodel=h100\n");
  std::fclose(f);
  setenv("VGPU_SIMGPU_CONFIG", config.c_str(), 1);
  setenv("VGPU_SIMGPU_STATE", (std::string(dir) + "/state").c_str(), 1);
  return dir;
}

int Usage() {
  std::fprintf(stderr,
               "usage: mig_conformance --nvml PATH (--read-only | --simulated --worker PATH)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string nvml_path, worker;
  bool read_only = false, simulated = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      Usage();
      return 0;
    }
    if (a == "--nvml" && i + 1 < argc) {
      nvml_path = argv[++i];
    } else if (a == "--worker" && i + 1 < argc) {
      worker = argv[++i];
    } else if (a == "--read-only") {
      read_only = true;
    } else if (a == "--simulated") {
      simulated = true;
    } else {
      std::fprintf(stderr, "mig_conformance: unknown argument \"%s\"\n", a.c_str());
      return Usage();
    }
  }
  if (nvml_path.empty() || read_only == simulated || (simulated && worker.empty())) return Usage();
  std::string dir;
  if (simulated) {
    dir = WriteSimulatedMachine();
    if (dir.empty()) {
      std::perror("mig_conformance: temporary directory");
      return 1;
    }
  }
  Nvml n;
  if (!LoadNvml(nvml_path, &n)) {
    std::printf("SKIP: cannot load %s: %s\n", nvml_path.c_str(), dlerror());
    return 77;
  }
  if (!n.missing.empty()) {
    for (const std::string& m : n.missing) std::printf("missing entry point: %s\n", m.c_str());
    return read_only ? 77 : 1;
  }
  if (n.Init() != NVML_SUCCESS) {
    std::printf("SKIP: nvmlInit failed (no driver or no GPU)\n");
    return 77;
  }
  char version[96] = {};
  n.SystemGetDriverVersion(version, sizeof(version));
  bool is_simulated = std::strstr(version, "simgpu") != nullptr;
  if (read_only && is_simulated) {
    std::printf("SKIP: %s is the simulated NVML; --read-only is for a real GPU\n",
                nvml_path.c_str());
    return 77;
  }
  if (simulated && !is_simulated) {
    std::printf("refusing: --simulated changes MIG modes, and %s is a real driver (%s)\n",
                nvml_path.c_str(), version);
    return 2;
  }
  std::printf("driver %s\n", version);
  int mig_capable = ReadOnlyChecks(n);
  if (read_only && mig_capable == 0) {
    std::printf("SKIP: no MIG-capable GPU\n");
    return 77;
  }
  if (simulated) {
    EXPECT(mig_capable == 3);
    SimulatedChecks(n, worker);
    std::string cmd = "rm -rf '" + dir + "'";
    if (std::system(cmd.c_str()) != 0) std::printf("could not remove %s\n", dir.c_str());
  }
  std::printf(g_failures == 0 ? "PASS\n" : "FAIL (%d checks)\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
