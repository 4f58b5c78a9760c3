// The request log: what a program asks the simulated driver for beyond the plain API calls —
// the private export tables (cuGetExportTable), each call of a table's slots, and every entry
// point looked up through cuGetProcAddress — so that what NVIDIA's CUDA runtime needs can be
// read off a run, and coverage can be measured.
//
// Lines go to the file named by VGPU_SIMGPU_REQUEST_LOG (opened once, appended with one write(2)
// per line, so processes and threads sharing the file never interleave within a line) and, at
// log level debug, to standard error. Without either, LogRequest costs one relaxed load.
// Formats (space-separated fields, documented in docs/simgpu.md):
//   export-table <uuid> <name|unknown> <served|not-supported>
//   export-call <table> <slot> <result> <arg>...
//   proc <name|""> <version> <flags> <found|unsimulated|not-found|version-not-sufficient>
#pragma once

namespace vgpu::simgpu::driver {

// True if requests are recorded anywhere (callers skip formatting work otherwise).
bool RequestLogEnabled();

__attribute__((format(printf, 1, 2))) void LogRequest(const char* format, ...);

}  // namespace vgpu::simgpu::driver
