#include "tools/profile.h"

#include <algorithm>
#include <map>
#include <string>

namespace ember::tools {
namespace {

struct Row {
  size_t calls = 0;
  uint64_t total_ns = 0;
};

void print_rows(std::FILE* out, const char* title,
                const std::vector<std::pair<std::string, Row>>& rows, uint64_t all_ns,
                size_t executes) {
  std::fprintf(out, "%-52s %8s %11s %11s %7s\n", title, "calls", "total ms", "mean us", "share");
  for (const auto& [name, row] : rows) {
    const double total_ms = static_cast<double>(row.total_ns) / 1e6;
    const double mean_us = static_cast<double>(row.total_ns) / 1e3 / static_cast<double>(row.calls);
    const double share =
        all_ns ? 100.0 * static_cast<double>(row.total_ns) / static_cast<double>(all_ns) : 0.0;
    std::fprintf(out, "%-52s %8zu %11.3f %11.2f %6.1f%%\n", name.c_str(),
                 row.calls / std::max<size_t>(executes, 1),
                 total_ms / static_cast<double>(std::max<size_t>(executes, 1)), mean_us, share);
  }
}

std::vector<std::pair<std::string, Row>> sorted_by_total(const std::map<std::string, Row>& m) {
  std::vector<std::pair<std::string, Row>> rows(m.begin(), m.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.total_ns > b.second.total_ns;
  });
  return rows;
}

// JSON string contents: names come from programs, so quotes, backslashes and controls are escaped.
std::string json_escape(const char* s) {
  std::string out;
  for (; *s != '\0'; ++s) {
    const unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

void Profile::on_instruction(size_t pc, const char* name, int delegate, uint64_t start_ns,
                             uint64_t end_ns) {
  for (size_t k = events_.size() - pending_steps_; k < events_.size(); ++k) {
    events_[k].pc = static_cast<int64_t>(pc);
    events_[k].delegate = delegate;
  }
  pending_steps_ = 0;
  events_.push_back({name, nullptr, static_cast<int64_t>(pc), delegate, start_ns, end_ns});
}

void Profile::on_delegate_step(const char* backend, const char* step, uint64_t start_ns,
                               uint64_t end_ns) {
  events_.push_back({step, backend, -1, -1, start_ns, end_ns});
  ++pending_steps_;
}

void Profile::clear() {
  events_.clear();
  pending_steps_ = 0;
  calls_ = 0;
}

void Profile::print_table(std::FILE* out) const {
  std::map<std::string, Row> by_kind, by_instruction, by_step;
  uint64_t all_ns = 0;
  for (const ProfileEvent& e : events_) {
    const uint64_t ns = e.end_ns - e.start_ns;
    if (e.backend != nullptr) {
      Row& r = by_step[std::string(e.backend) + ": " + e.name];
      ++r.calls;
      r.total_ns += ns;
      continue;
    }
    all_ns += ns;
    const std::string kind = e.delegate >= 0 ? std::string("delegate ") + e.name : e.name;
    Row& k = by_kind[kind];
    ++k.calls;
    k.total_ns += ns;
    char label[32];
    std::snprintf(label, sizeof label, "%5lld  ", static_cast<long long>(e.pc));
    Row& i = by_instruction[std::string(label) + kind];
    ++i.calls;
    i.total_ns += ns;
  }
  std::fprintf(out, "profile: %zu calls; times are per call; share of the instructions' time\n",
               calls_);
  print_rows(out, "op kind", sorted_by_total(by_kind), all_ns, calls_);
  if (!by_step.empty()) {
    std::fprintf(out, "\n");
    print_rows(out, "delegate step", sorted_by_total(by_step), all_ns, calls_);
  }
  std::fprintf(out, "\n");
  // Instructions in program order, not by time: the table reads as the program does.
  print_rows(out, "   pc  instruction", {by_instruction.begin(), by_instruction.end()}, all_ns,
             calls_);
}

Error Profile::write_chrome_trace(const std::string& path) const {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr)
    return fail(Error::AccessFailed, "cannot write the trace to '%s'", path.c_str());
  uint64_t origin = UINT64_MAX;
  for (const ProfileEvent& e : events_) origin = std::min(origin, e.start_ns);
  std::fprintf(f, "{\"traceEvents\": [\n");
  for (size_t k = 0; k < events_.size(); ++k) {
    const ProfileEvent& e = events_[k];
    const bool step = e.backend != nullptr;
    std::fprintf(f,
                 "{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, "
                 "\"pid\": 1, \"tid\": %d, \"args\": {\"pc\": %lld}}%s\n",
                 json_escape(e.name).c_str(),
                 step ? json_escape(e.backend).c_str() : (e.delegate >= 0 ? "delegate" : "kernel"),
                 static_cast<double>(e.start_ns - origin) / 1e3,
                 static_cast<double>(e.end_ns - e.start_ns) / 1e3, step ? 2 : 1,
                 static_cast<long long>(e.pc), k + 1 < events_.size() ? "," : "");
  }
  std::fprintf(f, "],\n\"displayTimeUnit\": \"ms\"}\n");
  const bool ok = std::fflush(f) == 0 && std::ferror(f) == 0;
  if (std::fclose(f) != 0 || !ok) {
    return fail(Error::AccessFailed, "writing the trace to '%s' failed", path.c_str());
  }
  return Error::Ok;
}

}  // namespace ember::tools
