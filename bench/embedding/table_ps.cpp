// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// A ps task's side of a dynamic embedding table, the two figures issue 35 asks of it:
//
// 1. Row updates per second per core. Pushes of U unique keys (Zipf-drawn, exponent 1.05, from
//    a key space of 2^19 keys, every key with a row) through update::table_shard<async,
//    any_row_optimizer, any_table>: what a ps runs per table_push once the request is read
//    (the gradient check, the lock, the duplicate-key pass, update_batch with the optimizer's row
//    rule, the change record). Against it, in the same run, the bare tsl::robin_map holding the
//    same rows inline (weights and optimizer state, the same width), each key found and its row
//    updated by the same optimizer's row rule, on the same pushes. One thread: items_per_second
//    is rows per second on one core. After the benchmarks it prints the ratio shard / bare map
//    per optimizer and dim (target: at least 0.5).
//
// 2. Bytes per sync step and worker. One ps task (parameter_server over transport::asio_tcp,
//    on a thread of this process) and one worker (ps_client) on loopback, a sync table; each
//    step the worker pulls the rows of U unique keys (pull_table) and pushes their gradients
//    (push_table). The bytes are counted by the kernel on the worker's TCP connection to the ps
//    (getsockopt TCP_INFO: tcpi_bytes_acked sent, tcpi_bytes_received received; TCP payload
//    bytes, no TCP/IP headers), shared memory between the two turned off so that every payload
//    goes on the socket as it would between hosts. Printed against U x (8 + 4 dim) x 2 (target:
//    within 1.1x), with the breakdown the protocol implies (frame headers, keys, rows, the push
//    reply's dropped count) and the difference between it and the measured bytes.
//
// Run:      dsgd_bench_embedding_table_ps --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//           [--unique=U] [--keys=N] [--traffic-steps=S] [--no-traffic] [--smoke]
// Expected: the benchmark table, then "row updates: table_shard / robin_map" (medians when
//           repeated) and "bytes per sync step" tables. Exits 1 if a pulled row is wrong or the
//           measured bytes do not match the breakdown (--smoke: tiny sizes, checks only that).
#include <dsgd/client/ps_client.hpp>
#include <dsgd/embedding/any_row_optimizer.hpp>
#include <dsgd/embedding/any_table.hpp>
#include <dsgd/embedding/row_table.hpp>
#include <dsgd/embedding/table_spec.hpp>
#include <dsgd/optim/adagrad.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/server/parameter_server.hpp>
#include <dsgd/transport/frame.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/sync_average.hpp>
#include <dsgd/update/table_shard.hpp>

#include <benchmark/benchmark.h>

#include <tsl/robin_map.h>
#include <tsl/robin_set.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace {

namespace emb = dsgd::embedding;
using clock_type = std::chrono::steady_clock;

struct settings {
  std::size_t keys = std::size_t{1} << 19;  // the key space (every key has a row)
  std::size_t unique = 4096;                // U: unique keys per push
  std::size_t batches = 64;                 // distinct pushes, cycled
  std::size_t traffic_steps = 200;          // sync steps measured per traffic row
  bool traffic = true;
  bool smoke = false;
};
settings cfg;

constexpr float learning_rate = 0.01f;
constexpr double zipf_exponent = 1.05;

std::uint64_t key_of_rank(std::uint64_t rank) { return emb::detail::finalise(rank + 0x5eedull); }

// cfg.batches pushes of cfg.unique distinct keys each: Zipf draws over cfg.keys ranks
// (inversion of the cumulative weights), repeats within a push skipped; drawn once.
const std::vector<std::vector<std::uint64_t>>& pushes() {
  static const auto made = [] {
    std::vector<double> cumulative(cfg.keys);
    double total = 0;
    for (std::size_t r = 0; r < cfg.keys; ++r) cumulative[r] = total += std::pow(double(r + 1), -zipf_exponent);
    std::uint64_t state = 42;
    std::vector<std::vector<std::uint64_t>> out(cfg.batches);
    tsl::robin_set<std::uint64_t> seen;
    for (auto& batch : out) {
      seen.clear();
      // A bound on the draws: Zipf over 2^19 keys needs about 3 draws per new key at U = 4096.
      for (std::size_t draws = 0; batch.size() < cfg.unique && draws < 1000 * cfg.unique; ++draws) {
        const double u = emb::detail::unit_double(emb::detail::finalise(state += emb::detail::golden_gamma)) * total;
        const auto rank = std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin();
        const std::uint64_t key = key_of_rank(std::min<std::uint64_t>(rank, cfg.keys - 1));
        if (seen.insert(key).second) batch.push_back(key);
      }
    }
    return out;
  }();
  return made;
}

// A gradient of @p rows rows of @p dim floats, small and finite.
std::vector<float> gradient(std::size_t rows, std::size_t dim) {
  std::vector<float> g(rows * dim);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = 0.001f * float(1 + i % 7) - 0.003f;
  return g;
}

emb::table_spec spec_of(const char* optimizer, std::size_t dim, emb::table_rule rule) {
  return {.name = "ids",
          .dim = static_cast<std::uint32_t>(dim),
          .rule = rule,
          .optimizer = std::string_view(optimizer) == "adagrad" ? emb::row_optimizer_spec::adagrad(learning_rate)
                                                                : emb::row_optimizer_spec::sgd(learning_rate),
          .initializer = emb::initializer_spec::of(emb::initializer::uniform{-0.05f, 0.05f, 1})};
}

// ---- 1. row updates per second per core -------------------------------------------------

using shard_type = dsgd::update::table_shard<dsgd::update::async, emb::any_row_optimizer, emb::any_table>;

// The shard of one (optimizer, dim), every key of the key space with a row; made once and kept
// while that configuration's benchmarks run (Google Benchmark calls a function several times).
struct shard_fixture {
  std::string config;
  std::unique_ptr<shard_type> shard;
};
shard_fixture& shard_for(const char* optimizer, std::size_t dim) {
  static shard_fixture f;
  const std::string config = std::string(optimizer) + "/" + std::to_string(dim);
  if (f.config != config) {
    f.shard.reset();
    const auto spec = spec_of(optimizer, dim, emb::table_rule::async());
    emb::any_table table = emb::make_table(spec);
    for (std::size_t r = 0; r < cfg.keys; ++r) (void)table.find_or_admit(key_of_rank(r), 0);
    f.shard = std::make_unique<shard_type>(std::move(table), emb::make_row_optimizer(spec.optimizer), 1);
    f.config = config;
  }
  return f;
}

void shard_push(benchmark::State& state, const char* optimizer, std::size_t dim) {
  auto& shard = *shard_for(optimizer, dim).shard;
  const auto& batches = pushes();
  const std::vector<float> g = gradient(cfg.unique, dim);
  std::size_t b = 0, rows = 0, dropped = 0;
  for (auto _ : state) {
    const auto& keys = batches[b];
    dropped += shard.push(0, 0, keys, std::span(g).first(keys.size() * dim)).dropped_keys;
    rows += keys.size();
    b = (b + 1) % batches.size();
  }
  if (dropped != 0) state.SkipWithError("a key of the key space had no row");
  state.SetItemsProcessed(static_cast<std::int64_t>(rows));
}

// The bare map: the row (Width floats: the weights, then the optimizer's state) inline.
template <std::size_t Width>
using bare_map = tsl::robin_map<std::uint64_t, std::array<float, Width>, emb::detail::key_hasher>;

template <std::size_t Width>
bare_map<Width>& bare_for(const char* optimizer, std::size_t dim) {
  static std::string config;
  static std::unique_ptr<bare_map<Width>> map;
  const std::string want = std::string(optimizer) + "/" + std::to_string(dim);
  if (config != want) {
    map.reset();  // before the next one is made: one table at a time
    map = std::make_unique<bare_map<Width>>();
    const emb::any_table like = emb::make_table(spec_of(optimizer, dim, emb::table_rule::async()));
    std::array<float, Width> row{};
    const auto opt = emb::make_row_optimizer(spec_of(optimizer, dim, emb::table_rule::async()).optimizer);
    opt.init_row_slots(row.data() + dim, dim);
    for (std::size_t r = 0; r < cfg.keys; ++r) {
      like.initial_row(key_of_rank(r), std::span(row).first(dim));
      map->emplace(key_of_rank(r), row);
    }
    config = want;
  }
  return *map;
}

template <class O, std::size_t Dim>
void bare_push(benchmark::State& state, const char* optimizer) {
  constexpr std::size_t width = Dim + (std::is_same_v<O, dsgd::optim::adagrad> ? Dim : 0);
  auto& map = bare_for<width>(optimizer, Dim);
  const auto& batches = pushes();
  const std::vector<float> g = gradient(cfg.unique, Dim);
  const O opt{.learning_rate = learning_rate};
  std::size_t b = 0, rows = 0;
  std::uint64_t t = 0;
  for (auto _ : state) {
    const auto& keys = batches[b];
    opt.with_row_rule(1.f, dsgd::optim::row_step{++t}, [&](const auto& rule) {
      for (std::size_t i = 0; i < keys.size(); ++i) {
        float* row = map.find(keys[i]).value().data();
        rule(row, row + Dim, g.data() + i * Dim, Dim);
      }
    });
    benchmark::ClobberMemory();
    rows += keys.size();
    b = (b + 1) % batches.size();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(rows));
}

// Keeps each benchmark's rows per second (its median when repeated) for the ratio table.
class recording_reporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      const auto it = r.counters.find("items_per_second");
      if (it == r.counters.end() || r.error_occurred) continue;
      const std::string name = r.run_name.function_name;
      if (r.run_type == Run::RT_Aggregate) {
        if (r.aggregate_name == "median") medians_[name] = it->second.value;
      } else {
        singles_[name].push_back(it->second.value);
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  // @returns the median of @p name's rows per second, or 0 if it did not run.
  double median(const std::string& name) const {
    if (auto it = medians_.find(name); it != medians_.end()) return it->second;
    auto it = singles_.find(name);
    if (it == singles_.end() || it->second.empty()) return 0;
    auto v = it->second;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  }

 private:
  std::map<std::string, double> medians_;
  std::map<std::string, std::vector<double>> singles_;
};

void register_updates() {
  const auto add = [](const std::string& name, auto f) {
    auto* b = benchmark::RegisterBenchmark(name.c_str(), f)->Unit(benchmark::kMicrosecond);
    if (cfg.smoke) b->Iterations(8);
    else b->MinTime(0.5);
  };
  // Each configuration's shard and bare map run one after the other (one table in memory).
  add("push/table_shard/sgd/16", [](benchmark::State& s) { shard_push(s, "sgd", 16); });
  add("push/robin_map/sgd/16", [](benchmark::State& s) { bare_push<dsgd::optim::sgd, 16>(s, "sgd"); });
  add("push/table_shard/sgd/64", [](benchmark::State& s) { shard_push(s, "sgd", 64); });
  add("push/robin_map/sgd/64", [](benchmark::State& s) { bare_push<dsgd::optim::sgd, 64>(s, "sgd"); });
  add("push/table_shard/adagrad/16", [](benchmark::State& s) { shard_push(s, "adagrad", 16); });
  add("push/robin_map/adagrad/16", [](benchmark::State& s) { bare_push<dsgd::optim::adagrad, 16>(s, "adagrad"); });
  add("push/table_shard/adagrad/64", [](benchmark::State& s) { shard_push(s, "adagrad", 64); });
  add("push/robin_map/adagrad/64", [](benchmark::State& s) { bare_push<dsgd::optim::adagrad, 64>(s, "adagrad"); });
}

void print_update_ratios(const recording_reporter& r) {
  std::printf("\nrow updates per second per core, U = %zu unique keys a push, %zu keys (Zipf %.2f)\n", cfg.unique,
              cfg.keys, zipf_exponent);
  std::printf("%-8s %4s %16s %16s %8s\n", "opt", "dim", "table_shard", "robin_map", "ratio");
  for (const char* opt : {"sgd", "adagrad"})
    for (int dim : {16, 64}) {
      const std::string tail = std::string(opt) + "/" + std::to_string(dim);
      const double shard = r.median("push/table_shard/" + tail), bare = r.median("push/robin_map/" + tail);
      if (shard == 0 || bare == 0) continue;
      std::printf("%-8s %4d %16.0f %16.0f %8.2f\n", opt, dim, shard, bare, shard / bare);
    }
}

// ---- 2. bytes per sync step and worker ---------------------------------------------------

// The payload bytes the kernel counted on one TCP connection. glibc's struct tcp_info stops at
// tcpi_total_retrans; Linux (4.1, 4.6) appends the counters below after it, in this order
// (<linux/tcp.h>, which cannot be included beside <netinet/tcp.h>).
struct tcp_info_bytes {
  tcp_info base;
  std::uint64_t pacing_rate, max_pacing_rate, bytes_acked, bytes_received;
};
static_assert(sizeof(tcp_info) == 104, "glibc's struct tcp_info is not the layout this reads after");

struct socket_bytes {
  std::uint64_t sent = 0, received = 0;
};

// The bytes sent (acknowledged) and received on every TCP connection of this process whose peer
// is 127.0.0.1:@p port: the worker's side of its connections to the ps.
socket_bytes worker_bytes(std::uint16_t port) {
  socket_bytes total;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) throw std::runtime_error("no /proc/self/fd: cannot find the worker's sockets");
  while (const dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    struct stat st {};
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_in peer{};
    socklen_t len = sizeof peer;
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &len) != 0 ||
        peer.sin_family != AF_INET || ntohs(peer.sin_port) != port)
      continue;
    tcp_info_bytes info{};
    socklen_t info_len = sizeof info;
    if (getsockopt(static_cast<int>(fd), IPPROTO_TCP, TCP_INFO, &info, &info_len) != 0 || info_len < sizeof info)
      throw std::runtime_error("getsockopt(TCP_INFO) has no byte counters on this kernel");
    total.sent += info.bytes_acked;
    total.received += info.bytes_received;
  }
  closedir(dir);
  return total;
}

std::uint16_t free_port() {
  boost::asio::io_context ctx;
  boost::asio::ip::tcp::acceptor a(ctx, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}

using sync_ps = dsgd::server::parameter_server<dsgd::update::sync_average, dsgd::optim::sgd>;

struct traffic_row {
  std::size_t dim = 0, unique = 0, steps = 0;
  double measured = 0;                                         // bytes per step, both directions
  std::uint64_t headers = 0, keys = 0, rows = 0, replies = 0;  // the breakdown, bytes per step
  double target() const { return double(unique) * double(8 + 4 * dim) * 2; }
  double explained() const { return double(headers + keys + rows + replies); }
};

// Frames a message of @p payload bytes takes, each with a frame header (chunks of @p chunk).
std::uint64_t frames(std::uint64_t payload, std::uint64_t chunk) {
  return payload == 0 ? 1 : (payload + chunk - 1) / chunk;
}

// One ps task and one worker over loopback TCP, a sync table of @p dim; @p steps steps of
// pull_table + push_table of U unique keys measured after one step of warm-up.
traffic_row measure_traffic(std::size_t dim, std::size_t steps) {
  const std::uint16_t port = free_port();
  const dsgd::cluster::cluster_spec spec({{"ps", {"127.0.0.1:" + std::to_string(port)}}, {"worker", {"127.0.0.1:1"}}});
  sync_ps::options o;
  o.connection.token = "bench";
  o.connection.shared_memory.enabled = false;  // every payload on the socket, as between hosts
  o.connection.log = [](std::string_view) {};
  o.optimizer = {learning_rate};
  auto ps = std::make_unique<sync_ps>(spec, 0, o);
  std::thread serving([&] { ps->join(); });
  struct joiner {
    std::thread& t;
    sync_ps& ps;
    ~joiner() {
      ps.stop();
      t.join();
    }
  } stop_at_exit{serving, *ps};

  dsgd::client::client_options c;
  c.connection.token = "bench";
  c.connection.shared_memory.enabled = false;
  dsgd::client::ps_client client(spec, dsgd::cluster::task_id{"worker", 0}, c);
  const auto plan = dsgd::placement::round_robin{}.place({{"b", dsgd::shape{1}}}, 1);
  client.connect();
  client.register_worker(plan, 0, true);
  std::vector<float> b{0.f};
  std::vector<std::span<const float>> init{std::span<const float>(b)};
  client.initialize(plan, init);
  client.wait_ready();
  const auto table = spec_of("sgd", dim, emb::table_rule::sync());
  client.create_table(0, table);

  const auto& batches = pushes();
  const emb::any_table reference = emb::make_table(table);
  std::vector<float> rows(cfg.unique * dim), g = gradient(cfg.unique, dim), initial(dim);
  tsl::robin_map<std::uint64_t, std::vector<float>> expected;  // the worker's own model of the rows
  const auto step = [&](std::uint64_t s) {
    const auto& keys = batches[s % batches.size()];
    const std::span<float> out = std::span(rows).first(keys.size() * dim);
    if (client.pull_table(0, dim, keys, out, s) != s) throw std::runtime_error("pull_table answered another step");
    for (std::size_t i = 0; i < keys.size(); ++i) {  // one worker, sgd: w - lr g per push of the key
      auto it = expected.find(keys[i]);
      if (it == expected.end()) {
        reference.initial_row(keys[i], initial);
        it = expected.emplace(keys[i], initial).first;
      }
      if (!std::equal(it.value().begin(), it.value().end(), out.begin() + i * dim))
        throw std::runtime_error("pull_table: the row of key " + std::to_string(keys[i]) + " is not what was pushed");
      for (std::size_t d = 0; d < dim; ++d) it.value()[d] -= learning_rate * g[i * dim + d];
    }
    if (client.push_table(0, dim, keys, std::span<const float>(g).first(keys.size() * dim), s) != 0)
      throw std::runtime_error("push_table dropped keys (admission is always)");
  };
  step(0);
  const socket_bytes before = worker_bytes(port);
  for (std::uint64_t s = 1; s <= steps; ++s) step(s);
  const socket_bytes after = worker_bytes(port);
  client.finish();
  client.shutdown_cluster();

  traffic_row r{.dim = dim, .unique = cfg.unique, .steps = steps};
  r.measured = double((after.sent - before.sent) + (after.received - before.received)) / double(steps);
  // Per step (mean over the measured steps, whose pushes hold U keys each): a pull request of
  // keys, its reply of rows, a push request of keys then rows, its reply of one u64 (the keys
  // dropped); a frame header per chunk of each message.
  const std::uint64_t chunk = dsgd::transport::tcp_options{}.chunk_bytes;
  std::uint64_t headers = 0, keys = 0, row_bytes = 0;
  for (std::uint64_t s = 1; s <= steps; ++s) {
    const std::uint64_t n = batches[s % batches.size()].size();
    keys += 2 * 8 * n;
    row_bytes += 2 * 4 * dim * n;
    headers += dsgd::transport::frame_header_size * (frames(8 * n, chunk) + frames(4 * dim * n, chunk) +
                                                     frames((8 + 4 * dim) * n, chunk) + frames(8, chunk));
  }
  r.headers = headers / steps;
  r.keys = keys / steps;
  r.rows = row_bytes / steps;
  r.replies = 8;
  return r;
}

bool print_traffic(const std::vector<traffic_row>& rows) {
  std::printf("\nbytes per sync step and worker (one ps task, loopback TCP, shared memory off), U = %zu\n", cfg.unique);
  std::printf("%4s %7s %12s %12s %7s | %9s %9s %10s %8s %9s\n", "dim", "steps", "measured", "U(8+4d)2", "ratio",
              "headers", "keys", "rows", "replies", "unexpl.");
  bool ok = true;
  for (const auto& r : rows) {
    const double unexplained = r.measured - r.explained();
    std::printf("%4zu %7zu %12.0f %12.0f %7.4f | %9llu %9llu %10llu %8llu %9.0f\n", r.dim, r.steps, r.measured,
                r.target(), r.measured / r.target(), static_cast<unsigned long long>(r.headers),
                static_cast<unsigned long long>(r.keys), static_cast<unsigned long long>(r.rows),
                static_cast<unsigned long long>(r.replies), unexplained);
    // The breakdown must account for what the socket carried (a byte or so a step of rounding).
    if (std::abs(unexplained) > 0.01 * r.target()) {
      std::fprintf(stderr, "dim %zu: %.0f bytes a step the breakdown does not explain\n", r.dim, unexplained);
      ok = false;
    }
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  // Our flags first; the rest is Google Benchmark's.
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    const auto value = [&](std::string_view flag) { return std::strtoull(argv[i] + flag.size(), nullptr, 10); };
    if (a == "--smoke") {
      cfg.smoke = true;
      cfg.keys = std::size_t{1} << 12;
      cfg.unique = 256;
      cfg.batches = 4;
      cfg.traffic_steps = 5;
    } else if (a.starts_with("--unique=")) {
      cfg.unique = value("--unique=");
    } else if (a.starts_with("--keys=")) {
      cfg.keys = value("--keys=");
    } else if (a.starts_with("--traffic-steps=")) {
      cfg.traffic_steps = value("--traffic-steps=");
    } else if (a == "--no-traffic") {
      cfg.traffic = false;
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (cfg.unique == 0 || cfg.keys < 2 * cfg.unique || cfg.traffic_steps == 0) {
    std::fprintf(stderr, "need --unique > 0, --keys >= 2 x unique and --traffic-steps > 0\n");
    return 2;
  }
  int bench_argc = static_cast<int>(rest.size());
  register_updates();
  benchmark::Initialize(&bench_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(bench_argc, rest.data())) return 1;
  recording_reporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  print_update_ratios(reporter);
  benchmark::Shutdown();
  if (!cfg.traffic) return 0;
  try {
    std::vector<traffic_row> rows;
    for (std::size_t dim : {16, 64}) rows.push_back(measure_traffic(dim, cfg.traffic_steps));
    return print_traffic(rows) ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "traffic: %s\n", e.what());
    return 1;
  }
}
