// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/train/monitored_session.hpp>: a cluster of threads over loopback TCP (ps
// tasks and workers, each a dsgd::trainer) trains, checkpoints, stops, and a second cluster
// with another number of ps tasks restores from the checkpoint and goes on.
#include <dsgd/placement/partitioned.hpp>
#include <dsgd/tensor/init.hpp>
#include <dsgd/train/monitored_session.hpp>
#include <dsgd/trainer.hpp>

#include <support/loopback_cluster.hpp>

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <limits>
#include <sstream>
#include <thread>

using namespace std::chrono_literals;
using cpu = dsgd::device::cpu;
using trainer = dsgd::trainer<cpu, dsgd::placement::partitioned, dsgd::update::sync_average, dsgd::optim::sgd>;
using session = dsgd::train::monitored_session<trainer>;
using hooks = std::vector<std::unique_ptr<dsgd::train::session_hook<cpu>>>;

namespace {


trainer::options options() {
  trainer::options o;
  o.token = "t";
  o.optimizer = {0.1f};
  o.placement = dsgd::placement::partitioned::fixed_size(2);  // w is cut in row slices
  o.step_timeout = 30s;
  o.log = [](std::string_view) {};
  return o;
}

std::vector<dsgd::tensor<cpu>> fresh_variables() {
  std::vector<dsgd::tensor<cpu>> v;
  v.emplace_back(cpu{}, dsgd::shape{4, 3}, dsgd::init::constant{1.f});
  v.emplace_back(cpu{}, dsgd::shape{3}, dsgd::init::constant{-1.f});
  return v;
}
const std::vector<std::string> names{"w", "b"};

struct result {
  std::vector<std::vector<float>> values;  // the chief's final values
  std::optional<std::uint64_t> restored;
  std::uint64_t step = 0;
};

// Runs a cluster of @p ps ps tasks and 2 workers until step @p last, checkpointing every 5
// steps. Worker k's gradient pulls every value towards k + 1 (so the mean pulls towards 1.5).
result run_cluster(std::size_t ps, std::uint64_t last, const std::filesystem::path& dir, float poison = 0.f) {
  auto spec = dsgd::test::loopback_cluster(ps, 2);
  // The ps tasks as servers this test can stop if a worker fails (a launcher would kill them).
  using ps_type = dsgd::server::parameter_server<dsgd::update::sync_average, dsgd::optim::sgd>;
  std::vector<std::unique_ptr<ps_type>> servers;
  std::vector<std::thread> ps_threads, threads;
  for (std::size_t i = 0; i < ps; ++i) {
    ps_type::options o;
    o.token = "t";
    o.optimizer = options().optimizer;
    o.step_timeout = 30s;
    o.log = [](std::string_view) {};
    servers.push_back(std::make_unique<ps_type>(spec, int(i), o));
    ps_threads.emplace_back([&s = *servers.back()] { s.join(); });
  }
  result out;
  std::exception_ptr failure;
  std::mutex m;
  for (int k = 0; k < 2; ++k)
    threads.emplace_back([&, k] {
      try {
        trainer t(spec, {"worker", k}, options());
        auto vars = fresh_variables();
        auto grads = fresh_variables();
        hooks h;
        h.push_back(std::make_unique<dsgd::train::stop_at_step_hook<cpu>>(last));
        h.push_back(std::make_unique<dsgd::train::nan_guard_hook<cpu>>());
        session s(t, vars, names, std::move(h), {.checkpoint_dir = dir, .save_checkpoint_steps = 5});
        while (!s.should_stop()) {
          for (std::size_t v = 0; v < vars.size(); ++v) {
            auto w = vars[v].to_host();
            for (auto& x : w) x = x - float(k + 1) + (k == 1 ? poison : 0.f);
            grads[v].assign(w);
          }
          s.run(0.5f, grads);
        }
        s.close();
        if (k == 0) {
          std::lock_guard lock(m);
          for (auto& v : vars) out.values.push_back(v.to_host());
          out.restored = s.restored_step();
          out.step = s.step();
        }
      } catch (...) {
        std::lock_guard lock(m);
        if (!failure) failure = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& s : servers) s->stop();  // already returned after a clean shutdown
  for (auto& t : ps_threads) t.join();
  if (failure) std::rethrow_exception(failure);
  return out;
}

struct temp_dir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("dsgd_session_" + std::to_string(::getpid()) + "_" + std::to_string(dsgd::test::free_port()));
  ~temp_dir() { std::filesystem::remove_all(path); }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(monitored_session_over_tcp)

BOOST_AUTO_TEST_CASE(train_checkpoint_then_restore_into_another_number_of_ps_tasks) {
  temp_dir dir;
  auto first = run_cluster(1, 20, dir.path);
  BOOST_TEST(!first.restored.has_value());
  BOOST_TEST(first.step == 20u);
  dsgd::train::saver saver(dir.path);
  BOOST_TEST(saver.latest().value() == 20u);
  BOOST_TEST(saver.steps().size() == 4u);  // 5, 10, 15, 20 (keep 5)

  // Sync SGD pulling towards 1.5 with lr 0.1: x_t = 1.5 + (x_0 - 1.5) * 0.9^t.
  float w20 = 1.5f + (1.f - 1.5f) * std::pow(0.9f, 20.f);
  BOOST_TEST(first.values[0][7] == w20, boost::test_tools::tolerance(1e-4f));

  // A new cluster with 2 ps tasks restores step 20 (resharded) and continues to 30.
  auto second = run_cluster(2, 30, dir.path);
  BOOST_TEST(second.restored.value() == 20u);
  BOOST_TEST(second.step == 30u);
  float w30 = 1.5f + (1.f - 1.5f) * std::pow(0.9f, 30.f);
  float b30 = 1.5f + (-1.f - 1.5f) * std::pow(0.9f, 30.f);
  BOOST_TEST(second.values[0][0] == w30, boost::test_tools::tolerance(1e-4f));
  BOOST_TEST(second.values[1][2] == b30, boost::test_tools::tolerance(1e-4f));
  BOOST_TEST(dsgd::train::saver(dir.path).latest().value() == 30u);
}

BOOST_AUTO_TEST_CASE(the_nan_guard_names_the_variable) {
  temp_dir dir;
  BOOST_CHECK_EXCEPTION(run_cluster(1, 10, dir.path, std::numeric_limits<float>::quiet_NaN()), dsgd::error,
                        [](const dsgd::error& e) {
                          std::string w = e.what();
                          // Worker 1 sees its NaN gradient of w, worker 0 the NaN values of w that
                          // the mean produced: whichever fails first, the message names w.
                          return e.code() == dsgd::errc::invalid_argument &&
                                 (w.find("gradient of w holds ") != std::string::npos ||
                                  w.find("variable w holds ") != std::string::npos) &&
                                 w.find("nan") != std::string::npos;
                        });
}

BOOST_AUTO_TEST_SUITE_END()
