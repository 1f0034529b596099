// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// How large a dynamic table one ps task holds: a table of --rows rows (50 million) of --dim
// floats (16) with row-wise Adagrad, trained to that size by a worker over loopback (both in
// this process, the ps on a thread: parameter_server over TCP with shared memory, a ps_client):
// each step pulls the rows of --batch new keys (the pull admits them) and pushes a gradient row
// for each, so every row is made and updated once. Every 5 million rows it prints the rows, the
// process's resident memory above what it held before the table, bytes per row against the
// row's payload (8 key + 4 dim + 4 accumulator bytes), and rows per second; at the end the
// table's own count of its bytes (table_stats) beside the resident figure.
//
// Run:      dsgd_bench_embedding_table_rows [--rows N] [--dim D] [--batch B] [--max-rss-gib G]
// Expected: lines "rows ... resident ... bytes/row"; exits 1 if the resident memory grew past
//           --max-rss-gib (16), or a pushed key was dropped.
#include <dsgd/client/ps_client.hpp>
#include <dsgd/detail/mix64.hpp>
#include <dsgd/embedding/table_spec.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/server/parameter_server.hpp>
#include <dsgd/update/async.hpp>

#include <boost/asio/ip/tcp.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace emb = dsgd::embedding;
using ps_type = dsgd::server::parameter_server<dsgd::update::async, dsgd::optim::sgd>;

std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

std::uint16_t free_port() {
  boost::asio::io_context ctx;
  boost::asio::ip::tcp::acceptor a(ctx, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}

std::uint64_t number(const char* option, const char* text) {
  char* end = nullptr;
  const auto v = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0' || v == 0) {
    std::fprintf(stderr, "dsgd_bench_embedding_table_rows: %s %s: expected a whole number above 0\n", option, text);
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t rows = 50'000'000, dim = 16, batch = 65'536, max_gib = 16;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr,
                   "usage: dsgd_bench_embedding_table_rows [--rows N] [--dim D] [--batch B] [--max-rss-gib G]\n");
      return 2;
    }
    if (a == "--rows") rows = number("--rows", argv[++i]);
    else if (a == "--dim") dim = number("--dim", argv[++i]);
    else if (a == "--batch") batch = number("--batch", argv[++i]);
    else if (a == "--max-rss-gib") max_gib = number("--max-rss-gib", argv[++i]);
    else {
      std::fprintf(stderr, "dsgd_bench_embedding_table_rows: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  const std::uint16_t port = free_port();
  const dsgd::cluster::cluster_spec spec({{"ps", {"127.0.0.1:" + std::to_string(port)}}, {"worker", {"127.0.0.1:1"}}});
  ps_type::options o;
  o.connection.token = "bench";
  o.connection.log = [](std::string_view) {};
  auto ps = std::make_unique<ps_type>(spec, 0, o);
  std::thread serving([&] { ps->join(); });
  dsgd::client::client_options c;
  c.connection.token = "bench";
  dsgd::client::ps_client client(spec, dsgd::cluster::task_id{"worker", 0}, c);
  const auto plan = dsgd::placement::round_robin{}.place({{"b", dsgd::shape{1}}}, 1);
  client.connect();
  client.register_worker(plan, 0, true);
  std::vector<float> b{0.f};
  std::vector<std::span<const float>> init{std::span<const float>(b)};
  client.initialize(plan, init);
  client.wait_ready();

  const emb::table_spec table{.name = "ids",
                              .dim = static_cast<std::uint32_t>(dim),
                              .rule = emb::table_rule::async(),
                              .optimizer = emb::row_optimizer_spec::rowwise_adagrad(0.05f),
                              .initializer = emb::initializer_spec::uniform(-0.05f, 0.05f, 7)};
  std::vector<std::uint64_t> keys(batch);
  std::vector<float> out(batch * dim), grads(batch * dim, 0.01f);
  const std::size_t before = resident_bytes();
  client.create_table(0, table);
  std::printf("table: %s; one ps task, rows pulled and pushed %llu at a time\n", table.describe().c_str(),
              static_cast<unsigned long long>(batch));
  const double payload = 8.0 + 4.0 * double(dim) + 4.0;
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t made = 0, next_report = 5'000'000, dropped = 0;
  int status = 0;
  const double max_bytes = double(max_gib) * double(1ull << 30);
  auto report = [&] {
    const double grown = double(resident_bytes()) - double(before);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("rows %11llu  resident +%6.2f GiB  %6.1f bytes/row (%.2fx the %g-byte payload)  %8.0f rows/s\n",
                static_cast<unsigned long long>(made), grown / double(1ull << 30), grown / double(made),
                grown / double(made) / payload, payload, double(made) / seconds);
    std::fflush(stdout);
    if (grown > max_bytes) {
      std::printf("FAIL: resident memory grew past %llu GiB\n", static_cast<unsigned long long>(max_gib));
      status = 1;
    }
  };
  for (std::uint64_t step = 0; made < rows && status == 0; ++step) {
    const std::size_t n = std::min<std::uint64_t>(batch, rows - made);
    for (std::size_t i = 0; i < n; ++i) keys[i] = dsgd::detail::mix64(made + i + 1);
    const std::span<const std::uint64_t> k(keys.data(), n);
    client.pull_table(0, dim, k, std::span<float>(out).first(n * dim), step);
    dropped += client.push_table(0, dim, k, std::span<const float>(grads).first(n * dim), step);
    made += n;
    if (made >= next_report || made == rows) {
      report();
      next_report += 5'000'000;
    }
  }
  const auto counts = client.table_stats(0);
  std::printf(
      "table_stats: %llu rows, %.2f GiB by the table's own count (%.1f bytes/row); %llu gradient rows dropped\n",
      static_cast<unsigned long long>(counts.rows), double(counts.bytes) / double(1ull << 30),
      counts.rows ? double(counts.bytes) / double(counts.rows) : 0.0, static_cast<unsigned long long>(dropped));
  if (dropped != 0 || counts.rows != made) {
    std::printf("FAIL: the table holds %llu rows of the %llu made\n", static_cast<unsigned long long>(counts.rows),
                static_cast<unsigned long long>(made));
    status = 1;
  }
  client.finish();
  client.shutdown_cluster();
  ps->stop();
  serving.join();
  return status;
}
