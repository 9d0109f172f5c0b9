#include "tools/plan_svg.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace ember::tools {
namespace {

// Distinct, readable fills; an operator keeps its color within one picture.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
                                    "#86bcb6", "#d37295", "#a0cbe8", "#ffbe7d", "#8cd17d"};

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string human_bytes(int64_t b) {
  char buf[32];
  if (b >= (1 << 20)) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / (1 << 20));
  } else if (b >= 1024) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  }
  return buf;
}

}  // namespace

LiveBytesPeak live_bytes_peak(const std::vector<PlannedBuffer>& buffers) {
  std::map<int64_t, int64_t> delta;
  for (const PlannedBuffer& b : buffers) {
    delta[b.begin] += b.bytes;
    delta[b.end + 1] -= b.bytes;
  }
  LiveBytesPeak peak;
  int64_t live = 0;
  for (const auto& [at, d] : delta) {
    live += d;
    if (live > peak.bytes) peak = {live, at};
  }
  return peak;
}

Error write_plan_svg(const PlanPicture& p, const std::string& path) {
  constexpr double kLeft = 90, kTop = 70, kWidth = 1000, kArenaGap = 24, kLegendRow = 18;
  int64_t total = 0;
  for (int64_t a : p.arena_bytes) total += a;
  // Each arena gets height in proportion to its bytes, at least 40 px.
  const double bytes_per_px = total > 0 ? static_cast<double>(total) / 600.0 : 1.0;
  std::vector<double> arena_top, arena_height;
  double y = kTop;
  for (int64_t a : p.arena_bytes) {
    arena_top.push_back(y);
    arena_height.push_back(std::max(40.0, static_cast<double>(a) / bytes_per_px));
    y += arena_height.back() + kArenaGap;
  }
  std::map<std::string, const char*> colors;
  for (const PlannedBuffer& b : p.buffers) {
    if (colors.count(b.op) == 0) {
      colors[b.op] = kPalette[colors.size() % (sizeof kPalette / sizeof kPalette[0])];
    }
  }
  const double legend_top = y + 10;
  const double height = legend_top + kLegendRow * static_cast<double>((colors.size() + 2) / 3) + 20;
  const double columns = static_cast<double>(std::max<int64_t>(p.instructions + 1, 1));
  const double px_per_instruction = kWidth / columns;

  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return fail(Error::AccessFailed, "cannot write the plan to '%s'", path.c_str());
  std::fprintf(f,
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "font-family=\"sans-serif\" font-size=\"12\" data-planned-bytes=\"%lld\" "
               "data-lower-bound-bytes=\"%lld\">\n",
               kLeft + kWidth + 20, height, static_cast<long long>(total),
               static_cast<long long>(live_bytes_peak(p.buffers).bytes));
  std::fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  const LiveBytesPeak peak = live_bytes_peak(p.buffers);
  std::fprintf(f,
               "<text x=\"%.0f\" y=\"22\" font-size=\"15\">method '%s': planned %s in %zu "
               "arena%s; lower bound %s (the bytes live at instruction %lld)</text>\n",
               kLeft, xml_escape(p.method).c_str(), human_bytes(total).c_str(),
               p.arena_bytes.size(), p.arena_bytes.size() == 1 ? "" : "s",
               human_bytes(peak.bytes).c_str(), static_cast<long long>(peak.at));
  std::fprintf(f,
               "<text x=\"%.0f\" y=\"42\" fill=\"#555\">x: instruction (0..%lld, then after the "
               "last); y: byte offset in the arena; one box per planned tensor, colored by the "
               "operator that first references it (hover for details)</text>\n",
               kLeft, static_cast<long long>(p.instructions - 1));
  for (size_t a = 0; a < p.arena_bytes.size(); ++a) {
    std::fprintf(f,
                 "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f4f4f4\" "
                 "stroke=\"#999\"/>\n",
                 kLeft, arena_top[a], kWidth, arena_height[a]);
    std::fprintf(f,
                 "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">arena %zu</text>\n"
                 "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#555\">%s</text>\n",
                 kLeft - 6, arena_top[a] + 12, a + 1, kLeft - 6, arena_top[a] + 26,
                 human_bytes(p.arena_bytes[a]).c_str());
  }
  for (const PlannedBuffer& b : p.buffers) {
    const size_t a = static_cast<size_t>(b.arena - 1);
    if (b.arena < 1 || a >= p.arena_bytes.size() || p.arena_bytes[a] <= 0) continue;
    const double scale = arena_height[a] / static_cast<double>(p.arena_bytes[a]);
    const double x = kLeft + static_cast<double>(b.begin) * px_per_instruction;
    const double w = static_cast<double>(b.end - b.begin + 1) * px_per_instruction;
    const double top = arena_top[a] + static_cast<double>(b.offset) * scale;
    const double h = std::max(1.0, static_cast<double>(b.bytes) * scale);
    std::fprintf(f,
                 "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" "
                 "stroke=\"white\" stroke-width=\"0.5\"><title>value %lld: %s, %lld bytes (%s) at "
                 "offset %lld of arena %d, instructions %lld..%lld</title></rect>\n",
                 x, top, w, h, colors[b.op], static_cast<long long>(b.value),
                 xml_escape(b.op).c_str(), static_cast<long long>(b.bytes),
                 human_bytes(b.bytes).c_str(), static_cast<long long>(b.offset), b.arena,
                 static_cast<long long>(b.begin), static_cast<long long>(b.end));
  }
  // The instruction where the lower bound is reached.
  const double peak_x = kLeft + (static_cast<double>(peak.at) + 0.5) * px_per_instruction;
  std::fprintf(f,
               "<line x1=\"%.2f\" y1=\"%.0f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"black\" "
               "stroke-dasharray=\"4 3\"/><text x=\"%.2f\" y=\"%.0f\" "
               "text-anchor=\"middle\">lower bound: %s</text>\n",
               peak_x, kTop - 8, peak_x, legend_top - 12, peak_x, kTop - 12,
               human_bytes(peak.bytes).c_str());
  size_t k = 0;
  for (const auto& [op, color] : colors) {
    const double lx = kLeft + static_cast<double>(k % 3) * (kWidth / 3);
    const double ly = legend_top + kLegendRow * static_cast<double>(k / 3);
    std::fprintf(f,
                 "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                 "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                 lx, ly, color, lx + 16, ly + 11, xml_escape(op).c_str());
    ++k;
  }
  std::fprintf(f, "</svg>\n");
  const bool ok = std::fflush(f) == 0 && std::ferror(f) == 0;
  if (std::fclose(f) != 0 || !ok) {
    return fail(Error::AccessFailed, "writing the plan to '%s' failed", path.c_str());
  }
  return Error::Ok;
}

}  // namespace ember::tools
