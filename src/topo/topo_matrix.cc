#include "topo/topo_matrix.h"

#include <cctype>
#include <vector>

namespace vgpu::topo {
namespace {

constexpr std::string_view kLegend =
    "\n"
    "Legend:\n"
    "\n"
    "  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes "
    "(e.g., QPI/UPI)\n"
    "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges "
    "within a NUMA node\n"
    "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
    "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host "
    "Bridge)\n"
    "  PIX  = Connection traversing at most a single PCIe bridge\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks\n";

struct Word {
  std::string text;
  int column = 0;  // 1-based
};

// Splits on tabs and spaces; ANSI escape sequences (ESC [ ... letter) are dropped but count
// towards columns as the raw bytes do.
std::vector<Word> Words(std::string_view line) {
  std::vector<Word> out;
  size_t i = 0;
  while (i < line.size()) {
    char c = line[i];
    if (c == '\x1b') {
      ++i;
      if (i < line.size() && line[i] == '[') {
        ++i;
        while (i < line.size() && !std::isalpha(static_cast<unsigned char>(line[i]))) ++i;
        if (i < line.size()) ++i;
      }
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    Word w;
    w.column = static_cast<int>(i) + 1;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') {
      if (line[i] == '\x1b') break;
      w.text += line[i++];
    }
    out.push_back(std::move(w));
  }
  return out;
}

bool DeviceName(std::string_view s, std::string_view prefix, int* index) {
  if (s.size() <= prefix.size() || s.substr(0, prefix.size()) != prefix) return false;
  int v = 0;
  for (char c : s.substr(prefix.size())) {
    if (c < '0' || c > '9' || v > 100000) return false;
    v = v * 10 + (c - '0');
  }
  *index = v;
  return true;
}

bool IsOtherDevice(std::string_view s) {
  int unused = 0;
  return DeviceName(s, "NIC", &unused) || DeviceName(s, "mlx5_", &unused) ||
         DeviceName(s, "mlx4_", &unused) || DeviceName(s, "CPU", &unused);
}

// A cell: "X", "NV<n>", or a PCIe token.
bool ParseCell(std::string_view s, int* nvlinks, PcieLevel* level, bool* self) {
  *self = false;
  *nvlinks = 0;
  if (s == "X") {
    *self = true;
    return true;
  }
  int n = 0;
  if (DeviceName(s, "NV", &n)) {
    if (n < 1 || n > 64) return false;
    *nvlinks = n;
    return true;
  }
  return ParsePcieLevelToken(s, level);
}

std::string Where(std::string_view file, int line, int column) {
  return std::string(file) + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
}

struct Cell {
  int nvlinks = 0;
  PcieLevel level = PcieLevel::kSystem;
  std::string text;
  int column = 0;
};

}  // namespace

std::string FormatTopoMatrix(const Topology& t) {
  std::string out;
  for (int b = 0; b < t.size(); ++b) out += "\tGPU" + std::to_string(b);
  out += "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n";
  for (int a = 0; a < t.size(); ++a) {
    out += "GPU" + std::to_string(a);
    for (int b = 0; b < t.size(); ++b) out += a == b ? "\t X " : "\t" + t.Token(a, b);
    const GpuPlace& g = t.Gpu(a);
    out += "\t" + (g.cpu_affinity.empty() ? std::string("N/A") : g.cpu_affinity);
    out += "\t" + (g.numa_node < 0 ? std::string("N/A") : std::to_string(g.numa_node));
    out += "\t\tN/A\n";
  }
  out += kLegend;
  return out;
}

Result<Topology> ParseTopoMatrix(std::string_view text, std::string_view file) {
  std::vector<std::string_view> lines;
  for (size_t pos = 0; pos <= text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  // The header: the first line whose first word is GPU0.
  size_t header = lines.size();
  std::vector<Word> head;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::vector<Word> w = Words(lines[i]);
    if (!w.empty() && w[0].text == "GPU0") {
      header = i;
      head = std::move(w);
      break;
    }
  }
  if (header == lines.size()) {
    return Status::InvalidArgument(std::string(file) +
                                   ": no `nvidia-smi topo -m` header (a line starting with GPU0)");
  }
  // Columns: GPUn (in order from 0), NIC/mlx5 columns, then the affinity columns.
  std::vector<int> gpu_columns;  // position in the cell list of each GPU column
  int columns = 0;
  bool numa_column = false;
  for (size_t i = 0; i < head.size(); ++i) {
    int index = 0;
    const std::string& w = head[i].text;
    if (DeviceName(w, "GPU", &index)) {
      if (index != static_cast<int>(gpu_columns.size())) {
        return Status::InvalidArgument(Where(file, static_cast<int>(header) + 1, head[i].column) +
                                       "header column " + w + " out of order (expected GPU" +
                                       std::to_string(gpu_columns.size()) + ")");
      }
      gpu_columns.push_back(columns++);
    } else if (IsOtherDevice(w) && w != "CPU") {
      ++columns;
    } else if (w == "CPU") {
      for (size_t j = i; j < head.size(); ++j) numa_column = numa_column || head[j].text == "NUMA";
      break;
    } else {
      return Status::InvalidArgument(Where(file, static_cast<int>(header) + 1, head[i].column) +
                                     "unexpected header column \"" + w + "\"");
    }
  }
  int n = static_cast<int>(gpu_columns.size());
  Topology t(n);
  std::vector<std::vector<Cell>> cells(n);
  std::vector<int> row_line(n, 0);
  int rows = 0;
  for (size_t i = header + 1; i < lines.size(); ++i) {
    std::vector<Word> w = Words(lines[i]);
    int line_no = static_cast<int>(i) + 1;
    if (w.empty() || w[0].text == "Legend:" || w[0].text == "NIC") break;
    int index = 0;
    bool gpu = DeviceName(w[0].text, "GPU", &index);
    if (!gpu && IsOtherDevice(w[0].text)) continue;  // NIC rows
    if (!gpu) {
      return Status::InvalidArgument(Where(file, line_no, w[0].column) + "unexpected row \"" +
                                     w[0].text + "\" (expected GPU" + std::to_string(rows) + ")");
    }
    if (index != rows || rows >= n) {
      return Status::InvalidArgument(
          Where(file, line_no, w[0].column) + "row " + w[0].text +
          (rows >= n ? " beyond the header's " + std::to_string(n) + " GPU columns"
                     : " out of order (expected GPU" + std::to_string(rows) + ")"));
    }
    // Link cells run until the first word that is not a link token.
    std::vector<Cell> row;
    size_t k = 1;
    for (; k < w.size(); ++k) {
      Cell c;
      bool self = false;
      c.text = w[k].text;
      c.column = w[k].column;
      if (!ParseCell(c.text, &c.nvlinks, &c.level, &self)) break;
      int position = static_cast<int>(row.size());
      bool diagonal = position < columns && gpu_columns[index] == position;
      if (self != diagonal) {
        return Status::InvalidArgument(Where(file, line_no, c.column) +
                                       (self ? "\"X\" (self) off the diagonal"
                                             : "GPU" + std::to_string(index) +
                                                   " against itself must be \"X\", not \"" +
                                                   c.text + "\""));
      }
      row.push_back(std::move(c));
    }
    if (static_cast<int>(row.size()) != columns) {
      int col = k < w.size() ? w[k].column : static_cast<int>(lines[i].size()) + 1;
      if (static_cast<int>(row.size()) < columns && k < w.size()) {
        // A word where a link cell should be: an unknown token, or a short row.
        bool affinity =
            std::isdigit(static_cast<unsigned char>(w[k].text[0])) || w[k].text == "N/A";
        if (!affinity) {
          return Status::InvalidArgument(Where(file, line_no, col) + "unknown link token \"" +
                                         w[k].text +
                                         "\" (known: X, NV#, PIX, PXB, PHB, NODE, SYS)");
        }
      }
      return Status::InvalidArgument(Where(file, line_no, col) + "row GPU" + std::to_string(index) +
                                     " has " + std::to_string(row.size()) +
                                     " link cells; the header has " + std::to_string(columns) +
                                     " columns");
    }
    // Affinity columns: CPU affinity, then NUMA affinity when the header has it.
    if (k < w.size()) t.MutableGpu(index).cpu_affinity = w[k].text == "N/A" ? "" : w[k].text;
    if (numa_column && k + 1 < w.size() && w[k + 1].text != "N/A") {
      const std::string& s = w[k + 1].text;
      int numa = 0;
      bool ok = !s.empty() && s.size() < 6;
      for (char ch : s) ok = ok && ch >= '0' && ch <= '9';
      if (!ok) {
        return Status::InvalidArgument(Where(file, line_no, w[k + 1].column) + "NUMA affinity \"" +
                                       s + "\" is not a node number");
      }
      for (char ch : s) numa = numa * 10 + (ch - '0');
      t.MutableGpu(index).numa_node = numa;
    }
    cells[index] = std::move(row);
    row_line[index] = line_no;
    ++rows;
  }
  if (n == 0 || rows != n) {
    return Status::InvalidArgument(std::string(file) + ": the header names " + std::to_string(n) +
                                   " GPUs but " + std::to_string(rows) + " GPU rows follow");
  }
  // Symmetry, then the links.
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      const Cell& x = cells[a][gpu_columns[b]];
      const Cell& y = cells[b][gpu_columns[a]];
      if (x.text != y.text) {
        return Status::InvalidArgument(Where(file, row_line[a], x.column) +
                                       "asymmetric matrix: GPU" + std::to_string(a) + "->GPU" +
                                       std::to_string(b) + " is " + x.text + " but GPU" +
                                       std::to_string(b) + "->GPU" + std::to_string(a) + " (line " +
                                       std::to_string(row_line[b]) + ") is " + y.text);
      }
    }
  }
  std::vector<bool> switched(n, false);
  for (int a = 0; a < n; ++a) {
    int sum = 0;
    for (int b = 0; b < n; ++b) sum += a == b ? 0 : cells[a][gpu_columns[b]].nvlinks;
    switched[a] = sum > kMaxNvLinksPerGpu;
  }
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      const Cell& c = cells[a][gpu_columns[b]];
      PairLink l;
      l.nvlinks = c.nvlinks;
      if (c.nvlinks > 0) {
        l.via_nvswitch = switched[a] && switched[b];
        int na = t.Gpu(a).numa_node, nb = t.Gpu(b).numa_node;
        l.pcie = na >= 0 && na == nb ? PcieLevel::kNode : PcieLevel::kSystem;
        l.pcie_inferred = true;
      } else {
        l.pcie = c.level;
      }
      t.SetLink(a, b, l);
    }
  }
  t.name = std::string(file);
  return t;
}

bool SameMatrix(const Topology& a, const Topology& b) {
  if (a.size() != b.size()) return false;
  for (int i = 0; i < a.size(); ++i) {
    if (!(a.Gpu(i) == b.Gpu(i))) return false;
    for (int j = 0; j < a.size(); ++j) {
      if (i == j) continue;
      if (a.Token(i, j) != b.Token(i, j)) return false;
      if (a.Link(i, j).via_nvswitch != b.Link(i, j).via_nvswitch) return false;
    }
  }
  return true;
}

}  // namespace vgpu::topo
