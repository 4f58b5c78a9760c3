// An SVG chart of a time-based replay: allocated GPU % over time for the shared and the whole-GPU
// allocation (solid), the demand that would run if nothing waited (grey, dashed), and the queue
// length of each mode (thin dotted lines, right axis). One panel per (queue discipline, load
// point), up to kMaxPanels, for the first policy and the first seed of the experiment.
// Self-contained SVG 1.1, no scripts or external fonts.
#pragma once

#include <string>

#include "sim/replay_experiment.h"

namespace vgpu::sim {

inline constexpr size_t kMaxPanels = 12;

std::string RenderReplayChart(const ReplayExperiment& e, const ReplayPlan& plan,
                              const std::string& title);

}  // namespace vgpu::sim
