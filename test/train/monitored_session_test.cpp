// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/train/monitored_session.hpp>: a cluster of threads over loopback TCP (ps
// tasks and workers, each a dsgd::trainer) trains, checkpoints, stops, and a second cluster
// with another number of ps tasks restores from the checkpoint and goes on.
#include <dsgd/checkpoint/table_file.hpp>
#include <dsgd/embedding/table_spec.hpp>
#include <dsgd/optim/adam.hpp>
#include <dsgd/optim/clip.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/placement/partitioned.hpp>
#include <dsgd/tensor/init.hpp>
#include <dsgd/train/monitored_session.hpp>
#include <dsgd/trainer.hpp>

#include <support/loopback_cluster.hpp>

#include <boost/test/unit_test.hpp>

#include <bit>
#include <filesystem>
#include <functional>
#include <future>
#include <limits>
#include <sstream>
#include <thread>

BOOST_AUTO_TEST_SUITE(monitored_session_test)

using namespace std::chrono_literals;
using cpu = dsgd::device::cpu;
using hooks = std::vector<std::unique_ptr<dsgd::train::session_hook<cpu>>>;

namespace {

template <class O>
using trainer_of = dsgd::trainer<cpu, dsgd::placement::partitioned, dsgd::update::sync_average, O>;

// What the tasks of one cluster said, with the milliseconds since it started: printed when the
// cluster fails, so a failure in CI shows what every task did.
class cluster_log {
 public:
  std::function<void(std::string_view)> sink(std::string who) {
    return [this, who = std::move(who)](std::string_view line) {
      const auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start_).count();
      std::lock_guard lock(m_);
      lines_ << ms << " ms " << who << ": " << line << '\n';
    };
  }
  std::string str() const {
    std::lock_guard lock(m_);
    return lines_.str();
  }

 private:
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  mutable std::mutex m_;
  std::ostringstream lines_;
};

template <class O>
typename trainer_of<O>::options options(O optimizer, std::function<void(std::string_view)> log,
                                        std::chrono::milliseconds startup_timeout = 30s,
                                        dsgd::compress::selection compression = {}) {
  typename trainer_of<O>::options o;
  o.compression = compression;
  o.connection.token = "t";
  o.optimizer = optimizer;
  o.placement = dsgd::placement::partitioned::fixed_size(2);  // w is cut in row slices
  o.serving.step_timeout = 30s;
  o.requests.startup_timeout = startup_timeout;
  o.connection.log = std::move(log);
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
  std::size_t recoveries = 0;     // of both workers together
  std::string mismatch;           // with moving_gradients: what run(loss, views) said of views out of order
  std::vector<float> table_rows;  // with table_deltas: the chief's rows of table_keys at the end
};

// Calls a function once, the first time a step is reached (steps replay after a restore).
class at_step_hook final : public dsgd::train::session_hook<cpu> {
 public:
  at_step_hook(std::uint64_t step, std::function<void()> f) : step_(step), f_(std::move(f)) {}
  bool after_run(const dsgd::train::run_values<cpu>& v) override {
    if (v.step == step_ && f_) std::exchange(f_, nullptr)();
    return false;
  }

 private:
  std::uint64_t step_;
  std::function<void()> f_;
};

struct run_settings {
  std::size_t ps = 1;
  std::uint64_t last = 20;
  float poison = 0.f;  // added to worker 1's gradients
  // When the chief first reaches this step, ps task 0 is stopped, and started again 300 ms later
  // with nothing in memory.
  std::optional<std::uint64_t> restart_ps_at;
  bool views = false;  // the workers' variables are their own buffers, as views
  // With views: each step's gradients are in buffers made anew for it (as libtorch's
  // zero_grad() and backward() may make them), handed to the session by run(loss, views).
  bool moving_gradients = false;
  float clip_norm = 0;     // session_options::clip_norm
  float clip_by_hand = 0;  // > 0: each worker clips its gradients itself before run()
  // The ps tasks start this long after the workers, who give up connecting after
  // startup_timeout (and then recover within the session's recovery deadline).
  std::chrono::milliseconds ps_delay{0};
  std::chrono::milliseconds startup_timeout{30'000};
  dsgd::compress::selection compression{};  // of the workers' pushes (and the ps tasks')
  // > 0: the workers also train a sync embedding table (id 0) and the chief's checkpoints are
  // incremental with this session_options::table_deltas_per_full.
  std::size_t table_deltas = 0;
};

// The table of run_settings::table_deltas: worker k pulls keys 1 and 2 + k each step and
// pushes row - (k + 1), SGD at 0.1.
const std::vector<std::uint64_t> table_keys{1, 2, 3};
dsgd::embedding::table_spec step_table() {
  return {.name = "ids",
          .dim = 2,
          .rule = dsgd::embedding::table_rule::sync(),
          .optimizer = dsgd::embedding::row_optimizer_spec::sgd(0.1f),
          .initializer = dsgd::embedding::initializer_spec::constant(0.5f)};
}

// Runs a cluster of @p r.ps ps tasks and 2 workers until step @p r.last, checkpointing every 5
// steps. Worker k's gradient pulls every value towards k + 1 (so the mean pulls towards 1.5).
template <class O = dsgd::optim::sgd>
result run_cluster(const run_settings& r, const std::filesystem::path& dir, O optimizer = dsgd::optim::sgd{0.1f}) {
  auto spec = dsgd::test::loopback_cluster(r.ps, 2);
  cluster_log said;
  // The ps tasks as servers this test can stop if a worker fails (a launcher would kill them).
  using ps_type = dsgd::server::parameter_server<dsgd::update::sync_average, O>;
  auto start_ps = [&](std::size_t i) {
    typename ps_type::options o;
    o.connection.token = "t";
    o.optimizer = optimizer;
    o.compression = r.compression;
    o.serving.step_timeout = 30s;
    o.connection.log = said.sink("ps:" + std::to_string(i));
    return std::make_unique<ps_type>(spec, int(i), o);
  };
  std::vector<std::unique_ptr<ps_type>> servers;
  std::vector<std::thread> ps_threads, threads;
  auto start_all_ps = [&] {
    for (std::size_t i = 0; i < r.ps; ++i) {
      servers.push_back(start_ps(i));
      ps_threads.emplace_back([&s = *servers.back()] { s.join(); });
    }
  };
  if (r.ps_delay.count() == 0) start_all_ps();
  result out;
  std::exception_ptr failure;
  std::mutex m;
  // The chief says once whether ps task 0 is to restart now (true) or it has ended (false).
  std::promise<bool> chief_news;
  auto news = chief_news.get_future();
  bool told = false;
  auto tell = [&](bool restart) {
    std::lock_guard lock(m);
    if (!std::exchange(told, true)) chief_news.set_value(restart);
  };
  for (int k = 0; k < 2; ++k)
    threads.emplace_back([&, k] {
      try {
        const auto who = "worker:" + std::to_string(k);
        trainer_of<O> t(spec, {"worker", k}, options(optimizer, said.sink(who), r.startup_timeout, r.compression));
        auto vars = fresh_variables();
        auto grads = fresh_variables();
        // A session of views trains the same numbers in the worker's own buffers.
        std::vector<std::vector<float>> own_values, own_gradients;
        for (auto& v : vars) {
          own_values.push_back(v.to_host());
          own_gradients.emplace_back(v.size());
        }
        const auto own = dsgd::views(own_values, own_gradients, names, {dsgd::shape{4, 3}, dsgd::shape{3}});
        hooks h;
        h.push_back(std::make_unique<dsgd::train::stop_at_step_hook<cpu>>(r.last));
        h.push_back(std::make_unique<dsgd::train::nan_guard_hook<cpu>>());
        if (k == 0 && r.restart_ps_at)
          h.push_back(std::make_unique<at_step_hook>(*r.restart_ps_at, [&] { tell(true); }));
        const dsgd::train::session_options so{.checkpoint_dir = dir,
                                              .save_checkpoint_steps = 5,
                                              .table_deltas_per_full = r.table_deltas,
                                              .clip_norm = r.clip_norm,
                                              .log = said.sink(who + " session")};
        using session_type = dsgd::train::monitored_session<trainer_of<O>>;
        auto s = r.views ? std::make_unique<session_type>(t, own, std::move(h), so)
                         : std::make_unique<session_type>(t, vars, names, std::move(h), so);
        const std::vector<std::uint64_t> mine{1, 2 + std::uint64_t(k)};
        std::vector<float> rows(4);
        if (r.table_deltas > 0) t.create_table(0, step_table());
        while (!s->should_stop()) {
          if (r.table_deltas > 0) {
            t.pull_table(0, mine, rows);
            for (auto& x : rows) x -= float(k + 1);
            t.push_table(0, mine, rows);
          }
          for (std::size_t v = 0; v < vars.size(); ++v) {
            auto w = r.views ? own_values[v] : vars[v].to_host();
            for (auto& x : w) x = x - float(k + 1) + (k == 1 ? r.poison : 0.f);
            if (r.views) own_gradients[v] = w;
            else grads[v].assign(w);
          }
          if (r.clip_by_hand > 0) {
            if (r.views) dsgd::optim::clip_by_global_norm(cpu{}, own_gradients, r.clip_by_hand);
            else dsgd::optim::clip_by_global_norm(cpu{}, grads, r.clip_by_hand);
          }
          if (r.views && r.moving_gradients) {
            auto moved = own_gradients;  // new storage, the old freed once this step is done
            const auto current = dsgd::views(own_values, moved, names, {dsgd::shape{4, 3}, dsgd::shape{3}});
            if (k == 0 && out.mismatch.empty()) {
              const std::vector<dsgd::variable_view> swapped{current[1], current[0]};
              try {
                s->run(0.5f, swapped);
              } catch (const dsgd::error& e) {
                std::lock_guard lock(m);
                out.mismatch = e.what();
              }
            }
            s->run(0.5f, current);
          } else if (r.views) {
            s->run(0.5f);
          } else {
            s->run(0.5f, grads);
          }
        }
        if (r.table_deltas > 0 && k == 0) {
          // Every step's pushes applied (the other worker's last one may still be on its way).
          const auto until = std::chrono::steady_clock::now() + 30s;
          while (t.read_table(0, {}, {}) < s->step() && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(5ms);
          out.table_rows.resize(table_keys.size() * 2);
          t.read_table(0, table_keys, out.table_rows);
        }
        s->close();
        if (r.views)
          for (std::size_t v = 0; v < vars.size(); ++v) vars[v].assign(own_values[v]);
        std::lock_guard lock(m);
        out.recoveries += s->recoveries();
        if (k == 0) {
          for (auto& v : vars) out.values.push_back(v.to_host());
          out.restored = s->restored_step();
          out.step = s->step();
        }
      } catch (const std::exception& e) {
        said.sink("worker:" + std::to_string(k))(std::string("failed: ") + e.what());
        std::lock_guard lock(m);
        if (!failure) failure = std::current_exception();
      } catch (...) {
        std::lock_guard lock(m);
        if (!failure) failure = std::current_exception();
      }
      if (k == 0) tell(false);
    });
  if (r.ps_delay.count() > 0) {
    std::this_thread::sleep_for(r.ps_delay);
    start_all_ps();
  }
  if (r.restart_ps_at && news.get()) {
    servers[0]->stop();  // every connection to it breaks, its shards are gone
    ps_threads[0].join();
    std::this_thread::sleep_for(300ms);
    servers[0] = start_ps(0);
    ps_threads[0] = std::thread([&s = *servers[0]] { s.join(); });
  }
  for (auto& t : threads) t.join();
  for (auto& s : servers) s->stop();  // already returned after a clean shutdown
  for (auto& t : ps_threads) t.join();
  if (failure) {
    BOOST_TEST_MESSAGE("what the cluster's tasks said:\n" << said.str());
    std::rethrow_exception(failure);
  }
  return out;
}

struct temp_dir {
  std::filesystem::path path = std::filesystem::temp_directory_path() / ("dsgd_session_" + std::to_string(::getpid()) +
                                                                         "_" + std::to_string(dsgd::test::free_port()));
  ~temp_dir() { std::filesystem::remove_all(path); }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(monitored_session_over_tcp)

BOOST_AUTO_TEST_CASE(train_checkpoint_then_restore_into_another_number_of_ps_tasks) {
  temp_dir dir;
  auto first = run_cluster({.ps = 1, .last = 20}, dir.path);
  BOOST_TEST(!first.restored.has_value());
  BOOST_TEST(first.step == 20u);
  dsgd::train::saver saver(dir.path);
  BOOST_TEST(saver.latest().value() == 20u);
  BOOST_TEST(saver.steps().size() == 4u);  // 5, 10, 15, 20 (keep 5)

  // Sync SGD pulling towards 1.5 with lr 0.1: x_t = 1.5 + (x_0 - 1.5) * 0.9^t.
  float w20 = 1.5f + (1.f - 1.5f) * std::pow(0.9f, 20.f);
  BOOST_TEST(first.values[0][7] == w20, boost::test_tools::tolerance(1e-4f));

  // A new cluster with 2 ps tasks restores step 20 (resharded) and continues to 30.
  auto second = run_cluster({.ps = 2, .last = 30}, dir.path);
  BOOST_TEST(second.restored.value() == 20u);
  BOOST_TEST(second.step == 30u);
  float w30 = 1.5f + (1.f - 1.5f) * std::pow(0.9f, 30.f);
  float b30 = 1.5f + (-1.f - 1.5f) * std::pow(0.9f, 30.f);
  BOOST_TEST(second.values[0][0] == w30, boost::test_tools::tolerance(1e-4f));
  BOOST_TEST(second.values[1][2] == b30, boost::test_tools::tolerance(1e-4f));
  BOOST_TEST(dsgd::train::saver(dir.path).latest().value() == 30u);
}

// Checkpoints of a job with an embedding table: with table_deltas_per_full 2, every third is
// full and the two between are deltas of the one before; a cluster of another ps count resumes
// from a full one and writes deltas on it, and ends with the rows of a run never interrupted.
BOOST_AUTO_TEST_CASE(table_checkpoints_are_incremental_and_resume_as_an_uninterrupted_run) {
  temp_dir dir, whole;
  const auto first = run_cluster({.ps = 1, .last = 15, .table_deltas = 2}, dir.path);
  auto chain = [&](std::uint64_t step) { return dsgd::checkpoint::table_chain(dir.path, step).size(); };
  BOOST_TEST(chain(5) == 1u);   // full
  BOOST_TEST(chain(10) == 2u);  // a delta of 5
  BOOST_TEST(chain(15) == 3u);  // a delta of 10
  // Restored from 15 (two deltas on its base): the next, 20, is full; 25 and 30 deltas.
  const auto second = run_cluster({.ps = 2, .last = 30, .table_deltas = 2}, dir.path);
  BOOST_TEST(second.restored.value() == 15u);
  BOOST_TEST(chain(20) == 1u);
  BOOST_TEST(chain(25) == 2u);
  BOOST_TEST(chain(30) == 3u);
  const auto reference = run_cluster({.ps = 1, .last = 30, .table_deltas = 2}, whole.path);
  BOOST_TEST(second.step == 30u);
  BOOST_TEST(second.table_rows == reference.table_rows, boost::test_tools::per_element());
  // Key 1 is pulled by both workers towards 1 and 2: its rows move (they start at 0.5).
  BOOST_TEST(second.table_rows[0] != 0.5f);
}

BOOST_AUTO_TEST_CASE(the_nan_guard_names_the_variable) {
  temp_dir dir;
  BOOST_CHECK_EXCEPTION(run_cluster({.last = 10, .poison = std::numeric_limits<float>::quiet_NaN()}, dir.path),
                        dsgd::error, [](const dsgd::error& e) {
                          std::string w = e.what();
                          // Worker 1 sees its NaN gradient of w, worker 0 the NaN values of w that
                          // the mean produced: whichever fails first, the message names w.
                          return e.code() == dsgd::errc::invalid_argument &&
                                 (w.find("gradient of w holds ") != std::string::npos ||
                                  w.find("variable w holds ") != std::string::npos) &&
                                 w.find("nan") != std::string::npos;
                        });
}

// With momentum and with adam, a run cut at step 20 and restored (onto another number of ps
// tasks) ends where an uninterrupted run does: the checkpoint holds the velocity, the moments
// and adam's step count, not only the values.
template <class O>
void check_restore_continues_exactly(O optimizer) {
  temp_dir whole, cut;
  auto uninterrupted = run_cluster({.ps = 1, .last = 30}, whole.path, optimizer);
  run_cluster({.ps = 1, .last = 20}, cut.path, optimizer);
  auto resumed = run_cluster({.ps = 2, .last = 30}, cut.path, optimizer);
  BOOST_TEST(resumed.restored.value() == 20u);
  for (std::size_t v = 0; v < 2; ++v)
    BOOST_TEST(resumed.values[v] == uninterrupted.values[v], boost::test_tools::per_element());
  // The slots travel under TensorFlow-style names beside their variable.
  dsgd::train::saver saver(cut.path);
  auto reader = saver.open(20);
  BOOST_TEST(reader.contains("w/" + std::string(std::is_same_v<O, dsgd::optim::adam> ? "m" : "velocity")));
}

BOOST_AUTO_TEST_CASE(a_restored_momentum_run_continues_exactly_as_an_uninterrupted_one) {
  check_restore_continues_exactly(dsgd::optim::momentum{0.05f, 0.9f, false});
}

BOOST_AUTO_TEST_CASE(a_restored_adam_run_continues_exactly_including_its_step_count) {
  check_restore_continues_exactly(dsgd::optim::adam{0.05f});
  temp_dir dir;
  run_cluster({.ps = 1, .last = 10}, dir.path, dsgd::optim::adam{0.05f});
  auto reader = dsgd::train::saver(dir.path).open(10);
  auto t = reader.read("w/t");
  BOOST_TEST(std::bit_cast<std::uint32_t>(t[0]) == 10u);  // ten updates, as 64 bits in two halves
  BOOST_TEST(std::bit_cast<std::uint32_t>(t[1]) == 0u);
}

BOOST_AUTO_TEST_CASE(a_ps_lost_and_restarted_mid_run_is_recovered_from_the_last_checkpoint) {
  temp_dir whole, cut;
  const dsgd::optim::momentum optimizer{0.05f, 0.9f, false};
  auto uninterrupted = run_cluster({.ps = 2, .last = 30}, whole.path, optimizer);
  // ps:0 goes away at step 13 and comes back empty; both workers re-create their sessions, the
  // chief has both ps tasks restore step 10, and the run replays steps 10..30.
  auto recovered = run_cluster({.ps = 2, .last = 30, .restart_ps_at = 13}, cut.path, optimizer);
  BOOST_TEST(recovered.step == 30u);
  BOOST_TEST(recovered.recoveries >= 2u);  // each worker at least once
  for (std::size_t v = 0; v < 2; ++v)
    BOOST_TEST(recovered.values[v] == uninterrupted.values[v], boost::test_tools::per_element());
}

// top_k keeps what it did not send as each worker's residual: every worker writes it with each
// checkpoint (chief and non-chief alike) and takes it back when a ps restart or a new cluster
// restores that checkpoint, so the run ends bit for bit where an uninterrupted one does. Without
// the residual files the same restore ends elsewhere: they are what makes it exact.
BOOST_AUTO_TEST_CASE(top_k_residuals_travel_with_the_checkpoint_through_a_ps_restart_and_a_new_cluster) {
  temp_dir whole, cut, resumed_dir, bare_dir;
  const dsgd::optim::momentum optimizer{0.05f, 0.9f, false};
  const dsgd::compress::selection top_k{.all = dsgd::compress::top_k{0.25f}};
  auto uninterrupted = run_cluster({.ps = 2, .last = 30, .compression = top_k}, whole.path, optimizer);
  for (const char* task : {"worker-0", "worker-1"})
    for (int step : {25, 30})
      BOOST_TEST(std::filesystem::exists(whole.path / ("ckpt-" + std::to_string(step) + "." + task + ".residual")),
                 task << " at step " << step);
  BOOST_TEST(!std::filesystem::exists(whole.path / "ckpt-5.worker-1.residual"));  // pruned with its step (keep 5)

  // ps:0 goes away at step 13: the chief restores step 10, both workers take back their
  // residuals of step 10 and replay.
  auto recovered = run_cluster({.ps = 2, .last = 30, .restart_ps_at = 13, .compression = top_k}, cut.path, optimizer);
  BOOST_TEST(recovered.step == 30u);
  BOOST_TEST(recovered.recoveries >= 2u);
  for (std::size_t v = 0; v < 2; ++v)
    BOOST_TEST(recovered.values[v] == uninterrupted.values[v], boost::test_tools::per_element());

  // A new cluster restores step 20 of a run cut there, and goes on to 30.
  run_cluster({.ps = 2, .last = 20, .compression = top_k}, resumed_dir.path, optimizer);
  std::filesystem::copy(resumed_dir.path, bare_dir.path);
  auto resumed = run_cluster({.ps = 2, .last = 30, .compression = top_k}, resumed_dir.path, optimizer);
  BOOST_TEST(resumed.restored.value() == 20u);
  for (std::size_t v = 0; v < 2; ++v)
    BOOST_TEST(resumed.values[v] == uninterrupted.values[v], boost::test_tools::per_element());
  // The same restore without the workers' residual files starts them at zero: another end.
  for (const char* task : {"worker-0", "worker-1"})
    BOOST_TEST(std::filesystem::remove(bare_dir.path / ("ckpt-20." + std::string(task) + ".residual")));
  auto bare = run_cluster({.ps = 2, .last = 30, .compression = top_k}, bare_dir.path, optimizer);
  BOOST_TEST(bare.restored.value() == 20u);
  BOOST_TEST(bare.values[0] != uninterrupted.values[0]);
}

// A session of the workers' own buffers (views) trains the same numbers as one of tensors, bit
// for bit, through a checkpoint restore onto another number of ps tasks and a ps restart.
BOOST_AUTO_TEST_CASE(a_session_of_views_ends_where_a_session_of_tensors_does) {
  temp_dir tensors_dir, views_dir, cut_dir;
  const dsgd::optim::momentum optimizer{0.05f, 0.9f, false};
  auto of_tensors = run_cluster({.ps = 2, .last = 30}, tensors_dir.path, optimizer);
  auto of_views = run_cluster({.ps = 2, .last = 30, .views = true}, views_dir.path, optimizer);
  BOOST_TEST(of_views.step == 30u);
  for (std::size_t v = 0; v < 2; ++v)
    BOOST_TEST(of_views.values[v] == of_tensors.values[v], boost::test_tools::per_element());
  // Gradients in new storage every step, handed over by run(loss, views): the same numbers; and
  // views of other variables than the session's are refused, naming both, before any exchange.
  temp_dir moving_dir;
  auto of_moving =
      run_cluster({.ps = 2, .last = 30, .views = true, .moving_gradients = true}, moving_dir.path, optimizer);
  for (std::size_t v = 0; v < 2; ++v)
    BOOST_TEST(of_moving.values[v] == of_tensors.values[v], boost::test_tools::per_element());
  BOOST_TEST(of_moving.mismatch ==
             "monitored_session::run(loss, views): view 0 is 'b' of shape [3]; the session's variable 0 is 'w' of "
             "shape [4, 3]");
  run_cluster({.ps = 1, .last = 20, .views = true}, cut_dir.path, optimizer);
  auto resumed = run_cluster({.ps = 2, .last = 30, .restart_ps_at = 24, .views = true}, cut_dir.path, optimizer);
  BOOST_TEST(resumed.restored.value() == 20u);
  BOOST_TEST(resumed.recoveries >= 2u);
  for (std::size_t v = 0; v < 2; ++v)
    BOOST_TEST(resumed.values[v] == of_tensors.values[v], boost::test_tools::per_element());
}

// session_options::clip_norm pushes exactly what clipping by hand pushes, in sessions of
// tensors and of views; the clip bounds each step's move, so 20 steps end far from where the
// unclipped run does.
BOOST_AUTO_TEST_CASE(clip_norm_clips_each_push_by_its_global_norm) {
  temp_dir a, b, c, d, e;
  auto unclipped = run_cluster({.last = 20}, a.path);
  auto by_session = run_cluster({.last = 20, .clip_norm = 0.05f}, b.path);
  auto by_hand = run_cluster({.last = 20, .clip_by_hand = 0.05f}, c.path);
  auto views_by_session = run_cluster({.last = 20, .views = true, .clip_norm = 0.05f}, d.path);
  auto views_by_hand = run_cluster({.last = 20, .views = true, .clip_by_hand = 0.05f}, e.path);
  for (std::size_t v = 0; v < 2; ++v) {
    BOOST_TEST(by_session.values[v] == by_hand.values[v], boost::test_tools::per_element());
    BOOST_TEST(views_by_session.values[v] == views_by_hand.values[v], boost::test_tools::per_element());
    BOOST_TEST(views_by_session.values[v] == by_session.values[v], boost::test_tools::per_element());
  }
  // Each step moves the values by lr * (mean of two gradients of norm <= 0.05): at most 0.005,
  // 0.1 in 20 steps, where the unclipped run moves b's elements from -1 to about 1.2.
  const auto start = fresh_variables();
  double moved = 0;
  for (std::size_t v = 0; v < 2; ++v) {
    const auto x0 = start[v].to_host();
    for (std::size_t i = 0; i < x0.size(); ++i)
      moved += double(by_session.values[v][i] - x0[i]) * double(by_session.values[v][i] - x0[i]);
  }
  BOOST_TEST(std::sqrt(moved) <= 20 * 0.1 * 0.05 + 1e-5);
  BOOST_TEST(std::sqrt(moved) > 0.05);
  BOOST_TEST(unclipped.values[1][0] > 1.f);
}

BOOST_AUTO_TEST_CASE(a_bad_clip_norm_is_named) {
  auto spec = dsgd::test::loopback_cluster(1, 1);
  trainer_of<dsgd::optim::sgd> t(spec, {"worker", 0}, options(dsgd::optim::sgd{0.1f}, [](std::string_view) {}));
  auto vars = fresh_variables();
  BOOST_CHECK_EXCEPTION(
      dsgd::train::monitored_session<trainer_of<dsgd::optim::sgd>>(t, vars, names, {}, {.clip_norm = -1.f}),
      dsgd::error, [](const dsgd::error& e) {
        return e.code() == dsgd::errc::invalid_argument &&
               std::string(e.what()).find("session_options.clip_norm is -1") != std::string::npos;
      });
}

// A ps that is not there when the sessions are made (it starts 2.5 s after the workers, who stop
// trying to connect after 1 s): a session that never existed cannot be lost, so each worker fails
// at its startup deadline, naming the ps task and its address, instead of re-creating a session
// until its 300 s recovery deadline. (A ps lost once reached is recovered from:
// a_ps_lost_and_restarted_mid_run_is_recovered_from_the_last_checkpoint.)
BOOST_AUTO_TEST_CASE(a_ps_missing_while_the_session_is_made_fails_at_the_startup_deadline) {
  temp_dir late;
  BOOST_CHECK_EXCEPTION(run_cluster({.ps = 1, .last = 10, .ps_delay = 2500ms, .startup_timeout = 1000ms}, late.path),
                        dsgd::error, [](const dsgd::error& e) {
                          const std::string what = e.what();
                          BOOST_TEST_MESSAGE(what);
                          return e.code() == dsgd::errc::peer_unreachable &&
                                 what.find("could not reach ps:0 (127.0.0.1:") != std::string::npos &&
                                 what.find(") within 1000 ms") != std::string::npos;
                        });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
