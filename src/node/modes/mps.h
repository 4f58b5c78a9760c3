// MPS mode: one MPS control daemon per GPU in mode `mps`, each with its own pipe and log
// directory, the GPU in exclusive-process compute mode (requested through the DeviceBackend), and
// per-container MPS limits from the container's slice.
//
// Start(gpu) creates <root>/<gpu uuid>/{pipe,log}, asks the backend for EXCLUSIVE_PROCESS (a
// refusal is reported, not fatal: the simulated GPU and some drivers keep the mode) and runs
// `<control> -d` with CUDA_VISIBLE_DEVICES=<uuid>, CUDA_MPS_PIPE_DIRECTORY and
// CUDA_MPS_LOG_DIRECTORY set, as NVIDIA documents (unless <pipe>/control exists: a control daemon
// left by an earlier run keeps serving its clients). Stop(gpu) sends `quit` on the control's stdin
// with the same environment. Commands run synchronously; each must exit 0 within 10 s.
//
// ContainerEnv() gives a container on an MPS GPU the same pipe directory (the daemon is reached
// through it, so it is mounted too) and its limits: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = the
// slice's cores, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT = "<index>=<MiB>M" for its memory. libvgpu's
// own memory limit stays in force beside MPS's (two independent caps, the smaller wins).
//
// MPS clients of one server share one fault domain: a fault in one kernel can end every client.
// The scheduler places a pod on an MPS GPU only with vgpu.io/allow-shared-fault-domain: "true".
//
// Thread safety: Start/Stop are serialised; ContainerEnv is pure.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "device/device_backend.h"

namespace vgpu::node {

struct MpsOptions {
  std::string control_binary = "nvidia-cuda-mps-control";
  std::string root = "/run/vgpu/mps";
};

struct MpsMount {
  std::string host_path;
  std::string container_path;
};

class MpsManager {
 public:
  // `backend` is not owned.
  MpsManager(MpsOptions options, device::DeviceBackend* backend);

  Status Start(int gpu_index, const std::string& gpu_uuid);
  Status Stop(const std::string& gpu_uuid);
  bool Running(const std::string& gpu_uuid) const;
  std::string PipeDir(const std::string& gpu_uuid) const;
  std::string LogDir(const std::string& gpu_uuid) const;

  // The environment of a container whose slice on this MPS GPU has `memory_bytes` and `cores`
  // (percent); `container_index` is the GPU's CUDA index inside the container.
  std::vector<std::pair<std::string, std::string>> ContainerEnv(const std::string& gpu_uuid,
                                                                int container_index,
                                                                uint64_t memory_bytes,
                                                                int cores) const;
  std::vector<MpsMount> ContainerMounts(const std::string& gpu_uuid) const;

 private:
  Status RunControl(const std::string& gpu_uuid, const std::vector<std::string>& args,
                    const std::string& stdin_text);

  MpsOptions options_;
  device::DeviceBackend* backend_;
  mutable std::mutex mu_;
  std::map<std::string, int> running_;  // uuid -> GPU index
};

}  // namespace vgpu::node
