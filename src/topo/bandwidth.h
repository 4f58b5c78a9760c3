// The bandwidth model: predicted collective bus bandwidth of a GPU set, and the communication
// time of a job's pattern on an ordered set (rank i on gpus[i]).
//
// Pair bandwidth (GB/s per direction, what one NCCL ring hop sustains):
//   NVLink, direct:        links x 25 GB/s x 0.87   (0.87: 783 of 900 GB/s measured, nccl#1264)
//   NVLink via NVSwitch:   links x 25 GB/s x 1.058  (calibrated: 8 x H100 all_reduce busbw
//                                                    476 GB/s with NVLS, nccl-tests#290)
//   PCIe Gen5 PIX 40, PXB 35, PHB 30, NODE 30, SYS 28; no P2P: 28 (through host memory)
//                          (SYS 28 and PXB 35: calibrated to 8 and 4 PCIe Gen5 GPUs behind
//                           switches, nccl#1639; PIX, PHB and NODE are interpolated, not
//                           measured); halved per generation below 5 (Topology::pcie_generation)
//                          and scaled by lanes / 16 (Topology::pcie_width)
// Bus bandwidth of a set: the ring bottleneck, max over Hamiltonian rings of the set of the
// slowest hop (NCCL builds its rings from the topology; one ring is modelled). Exact for any set
// of up to 16 GPUs (a bitmask search per bandwidth threshold).
//
// Communication time per step (bytes in GB, time in seconds):
//   all-reduce of B on k GPUs:       2 (k-1)/k x B / busbw        (NCCL's busbw definition)
//   explicit matrix W (GB per pair): max over ranks a of sum_b W[a][b] / bw(gpu_a, gpu_b)
//   pipeline of S stages:            the matrix with W[r][r+1] = W[r+1][r] = B
//   tp x dp:                         all-reduce inside each tensor-parallel group (ranks
//                                    t*g .. t*g+t-1), slowest group, plus all-reduce across
//                                    each data-parallel group (ranks g, g+t, ...), slowest group,
//                                    with tp_bytes and dp_bytes
// Thread safety: an Evaluator memoises per GPU subset and is not thread-safe; build one per
// thread or node.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "topo/topology.h"

namespace vgpu::topo {

struct BandwidthModel {
  double nvlink_gbps_per_link = 25.0;
  double nvlink_direct_efficiency = 0.87;
  double nvswitch_efficiency = 476.0 / 450.0;
  double pix_gbps = 40.0;
  double pxb_gbps = 35.0;
  double phb_gbps = 30.0;
  double node_gbps = 30.0;
  double sys_gbps = 28.0;
  double no_p2p_gbps = 28.0;
};

// `pcie_generation` scales the PCIe figures (Gen5 as given, halved per generation below, Gen6
// counted as Gen5: no published figure) and `pcie_width` by lanes / 16 (x16 as given).
double PairBandwidth(const BandwidthModel& model, const PairLink& link, int pcie_generation = 5,
                     int pcie_width = 16);

using GpuMask = uint32_t;  // bit i: GPU i (up to 32 GPUs; searches are bounded to 16)

inline int MaskCount(GpuMask m) { return __builtin_popcount(m); }
std::vector<int> MaskGpus(GpuMask m);
GpuMask GpusMask(const std::vector<int>& gpus);

class Evaluator {
 public:
  Evaluator(const Topology& topology, BandwidthModel model = {});

  int size() const { return n_; }
  double Pair(int a, int b) const { return bw_[a * n_ + b]; }
  // Ring-bottleneck bus bandwidth of the set, GB/s; 0 for fewer than 2 GPUs.
  double RingBusBandwidth(GpuMask set);
  // A ring order achieving RingBusBandwidth (visible-device order for all-reduce).
  std::vector<int> Ring(GpuMask set);
  // All-reduce time of `gb` GB on the set.
  double AllReduceSeconds(GpuMask set, double gb);
  // A memo slot for the best k-subset bandwidth of `free` (choose.cc); negative when unset.
  double* BestMemo(GpuMask free, int k) {
    auto it = best_memo_.try_emplace((uint64_t{free} << 8) | static_cast<uint64_t>(k), -1.0);
    return &it.first->second;
  }
  const Topology& topology() const { return topology_; }
  const BandwidthModel& model() const { return model_; }

 private:
  bool HasRing(const std::vector<int>& gpus, double threshold, std::vector<int>* ring) const;

  Topology topology_;
  BandwidthModel model_;
  int n_ = 0;
  std::vector<double> bw_;
  std::vector<double> ring_memo_;  // per mask for n <= 16; negative: not computed
  std::unordered_map<uint64_t, double> best_memo_;
};

}  // namespace vgpu::topo
