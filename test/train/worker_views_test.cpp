// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for the variable_view calls of <dsgd/train/worker.hpp> (tensor/view.hpp): a ps task and
// two workers over transport::inproc train std::vector<float> buffers through views, by push
// then pull, push_pull and the overlap, to the same bits as the tensor path of
// support/role_cluster.hpp, landing in the buffers' own memory (no staging, even off the host);
// a view set that changed since create_variables(), or lacks a buffer, is a named error; a
// checkpoint restores into views and recover() re-initialises the ps from them.
#include <dsgd/checkpoint/saver.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/tensor/view.hpp>
#include <dsgd/train/worker.hpp>

#include <support/error_checks.hpp>
#include <support/inproc_cluster.hpp>
#include <support/off_host_device.hpp>
#include <support/role_cluster.hpp>

#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(worker_views_test)

using cpu = dsgd::device::cpu;
using dsgd::test::contains;
using dsgd::test::error_of;
using dsgd::test::exchange;

namespace {

// What a worker's buffers ended as, and whether they stayed where they were.
struct views_outcome {
  dsgd::test::worker_outcome outcome;
  bool in_place = true;  // every view still points into its std::vector
};

// role_cluster.hpp's train_roles(), the model kept in std::vector<float> buffers: the same
// shapes, names, initial values and gradients (gradients_of()'s arithmetic on the same floats).
template <class D>
std::vector<views_outcome> train_views(exchange how, std::size_t steps) {
  using worker =
      dsgd::train::worker<D, dsgd::placement::round_robin, dsgd::update::sync_average, dsgd::transport::inproc>;
  const dsgd::test::test_net<dsgd::transport::inproc> net;
  const auto spec = net.spec(1, 2);
  const auto o = dsgd::test::quiet_options();
  std::vector<views_outcome> out(2);
  dsgd::test::run_with_ps(net, spec, o, 2, [&](std::size_t k) {
    worker w(spec, {"worker", int(k)}, o, D{}, net.transport());
    std::vector<std::vector<float>> values{std::vector<float>(12), std::vector<float>(5)};
    std::vector<std::vector<float>> grads{std::vector<float>(12), std::vector<float>(5)};
    for (auto& x : values)
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * float(i);
    const auto vars = dsgd::views(values, grads, {"w", "b"}, {{3, 4}, {5}});
    w.create_variables(vars);
    auto gradients = [&] {
      for (std::size_t v = 0; v < values.size(); ++v)
        for (std::size_t i = 0; i < values[v].size(); ++i)
          grads[v][i] = 0.5f * values[v][i] + float(k + 1) + 0.125f * float(v);
    };
    auto& r = out[k].outcome;
    auto step_with = [&](exchange e) {
      if (e == exchange::overlapped) {
        auto ex = w.overlapped(vars);
        for (std::size_t v = 0; v < vars.size(); ++v) ex.parameters_needed(v);
        gradients();
        for (std::size_t v = vars.size(); v-- > 0;) ex.gradient_ready(v);  // the last layer's first
        r.dropped += ex.end_step();
        ex.step();
        return;
      }
      gradients();
      if (e == exchange::push_pull) {
        r.dropped += w.push_pull(vars);
      } else {
        r.dropped += w.push(vars);
        w.pull(vars);
      }
    };
    for (std::size_t s = 0; s < steps; ++s) step_with(how == exchange::mixed ? exchange(s % 3) : how);
    r.values = values;
    r.step = w.step();
    r.allocations = w.staged().allocations();
    for (std::size_t v = 0; v < vars.size(); ++v)
      out[k].in_place = out[k].in_place && vars[v].values.data() == values[v].data();
    w.finish();
  });
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(vector_buffers_train_to_the_bits_of_the_tensor_path_in_their_own_memory) {
  const std::size_t steps = 6;
  for (auto how : {exchange::push_then_pull, exchange::push_pull, exchange::overlapped, exchange::mixed}) {
    BOOST_TEST_CONTEXT("exchange " << int(how)) {
      const auto tensors = dsgd::test::train_roles<cpu>(how, steps);
      const auto host = train_views<cpu>(how, steps);
      const auto off = train_views<dsgd::test::off_host>(how, steps);  // views skip the staging
      BOOST_TEST_REQUIRE(tensors.size() == 2u);
      BOOST_TEST(tensors[0].values[0][1] != 0.1f);  // it trained
      for (const auto* run : {&host, &off})
        for (std::size_t k = 0; k < 2; ++k) {
          const auto& r = (*run)[k];
          BOOST_TEST(r.outcome.step == steps);
          BOOST_TEST(r.outcome.dropped == 0u);
          BOOST_TEST(r.outcome.allocations == 0u);
          BOOST_TEST(r.in_place);
          BOOST_TEST_REQUIRE(r.outcome.values.size() == 2u);
          for (std::size_t v = 0; v < 2; ++v)
            BOOST_TEST(r.outcome.values[v] == tensors[k].values[v], boost::test_tools::per_element());
        }
    }
  }
}

// A worker whose create_variables() saw {w [3, 4], b [5]}; @p check gets it and the views.
template <class Check>
void with_placed_worker(Check check) {
  using worker =
      dsgd::train::worker<cpu, dsgd::placement::round_robin, dsgd::update::sync_average, dsgd::transport::inproc>;
  const dsgd::test::test_net<dsgd::transport::inproc> net;
  const auto spec = net.spec(1, 1);
  const auto o = dsgd::test::quiet_options();
  dsgd::train::ps_task<dsgd::update::sync_average, dsgd::optim::sgd, dsgd::transport::inproc> ps(spec, {"ps", 0}, o,
                                                                                                 net.transport());
  dsgd::test::serving serve(ps);
  worker w(spec, {"worker", 0}, o, cpu{}, net.transport());
  std::vector<std::vector<float>> values{std::vector<float>(12, 1.f), std::vector<float>(5, 1.f)};
  std::vector<std::vector<float>> grads{std::vector<float>(12), std::vector<float>(5)};
  auto vars = dsgd::views(values, grads, {"w", "b"}, {{3, 4}, {5}});
  w.create_variables(vars);
  check(w, vars);
  w.push_pull(vars);  // the checks changed nothing: the worker still trains
  BOOST_TEST(w.step() == 1u);
  w.finish();
  serve.join();
}

BOOST_AUTO_TEST_CASE(a_view_set_that_changed_since_create_variables_is_a_named_error) {
  with_placed_worker([](auto& w, std::vector<dsgd::variable_view>& vars) {
    auto fewer = vars;
    fewer.pop_back();
    auto msg = error_of([&] { w.pull(fewer); }, dsgd::errc::shape_mismatch);
    BOOST_TEST(contains(msg, "train::worker::pull: 1 views for the 2 variables placed by create_variables() (w, b)"));

    std::vector<float> bigger(6), bigger_grads(6);
    auto resized = vars;
    resized[1] = dsgd::view("b", bigger, bigger_grads);
    msg = error_of([&] { w.push_pull(resized); }, dsgd::errc::shape_mismatch);
    BOOST_TEST(contains(
        msg, "train::worker::push_pull: variable 'b' (1) has 6 values; it was placed with shape [5] (5 elements)"));

    auto swapped = std::vector<dsgd::variable_view>{vars[1], vars[0]};
    msg = error_of([&] { w.push(swapped); }, dsgd::errc::shape_mismatch);
    BOOST_TEST(contains(msg, "train::worker::push: view 0 is named 'b', but the variable placed there is 'w'"));
  });
}

BOOST_AUTO_TEST_CASE(a_missing_buffer_is_a_named_error) {
  with_placed_worker([](auto& w, std::vector<dsgd::variable_view>& vars) {
    auto no_grads = vars;
    no_grads[0].gradients = {};
    auto msg = error_of([&] { w.push(no_grads); }, dsgd::errc::invalid_argument);
    BOOST_TEST(contains(
        msg, "train::worker::push: variable 'w' (0) has no gradients buffer (null or empty); expected 12 floats"));
    msg = error_of([&] { w.overlapped(no_grads); }, dsgd::errc::invalid_argument);
    BOOST_TEST(contains(msg, "train::worker::overlapped: variable 'w' (0) has no gradients buffer"));
    w.pull(no_grads);  // a pull needs no gradients

    auto short_grads = vars;
    short_grads[1].gradients = short_grads[1].gradients.first(3);
    msg = error_of([&] { w.push_pull(short_grads); }, dsgd::errc::shape_mismatch);
    BOOST_TEST(contains(msg, "train::worker::push_pull: variable 'b' (1) has 3 gradients for 5 values"));

    auto no_values = vars;
    no_values[1].values = {};
    msg = error_of([&] { w.pull(no_values); }, dsgd::errc::invalid_argument);
    BOOST_TEST(
        contains(msg, "train::worker::pull: variable 'b' (1) has no values buffer (null or empty); expected 5 floats"));
  });
}

// A checkpoint of views is restored into other views, and recover() re-initialises the ps from
// them: the values are the checkpoint's, in the new buffers, and training goes on.
BOOST_AUTO_TEST_CASE(views_restore_a_checkpoint_and_recover_in_place) {
  using worker =
      dsgd::train::worker<cpu, dsgd::placement::round_robin, dsgd::update::sync_average, dsgd::transport::inproc>;
  using ps_task = dsgd::train::ps_task<dsgd::update::sync_average, dsgd::optim::sgd, dsgd::transport::inproc>;
  const auto dir = std::filesystem::temp_directory_path() / ("dsgd_views_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const auto o = dsgd::test::quiet_options();
  std::vector<std::vector<float>> saved;
  std::uint64_t saved_step = 0;
  {
    const dsgd::test::test_net<dsgd::transport::inproc> net;
    const auto spec = net.spec(1, 1);
    ps_task ps(spec, {"ps", 0}, o, net.transport());
    dsgd::test::serving serve(ps);
    worker w(spec, {"worker", 0}, o, cpu{}, net.transport());
    std::vector<std::vector<float>> values{std::vector<float>(12, 1.f), std::vector<float>(5, 2.f)};
    std::vector<std::vector<float>> grads{std::vector<float>(12, 0.5f), std::vector<float>(5, 0.25f)};
    const auto vars = dsgd::views(values, grads, {"w", "b"}, {{3, 4}, {5}});
    w.create_variables(vars);
    for (int s = 0; s < 3; ++s) w.push_pull(vars);
    w.save_shards(dir);
    dsgd::checkpoint::saver(dir).commit(w.step(), w.plan());
    saved = values;
    saved_step = w.step();
    w.finish();
    serve.join();
  }
  BOOST_TEST(saved[0][0] != 1.f);  // it trained
  const dsgd::test::test_net<dsgd::transport::inproc> net;
  const auto spec = net.spec(1, 1);
  ps_task ps(spec, {"ps", 0}, o, net.transport());
  dsgd::test::serving serve(ps);
  worker w(spec, {"worker", 0}, o, cpu{}, net.transport());
  std::vector<std::vector<float>> values{std::vector<float>(12), std::vector<float>(5)};
  std::vector<std::vector<float>> grads{std::vector<float>(12, 0.5f), std::vector<float>(5, 0.25f)};
  auto vars = dsgd::views(values, grads, {"w", "b"}, {{3, 4}, {5}});
  w.restore_variables(vars, dir, saved_step);
  BOOST_TEST(w.step() == saved_step);
  for (std::size_t v = 0; v < 2; ++v) BOOST_TEST(values[v] == saved[v], boost::test_tools::per_element());
  w.recover(vars);  // the chief re-initialises the ps from its views at step()
  BOOST_TEST(w.step() == saved_step);
  for (std::size_t v = 0; v < 2; ++v) BOOST_TEST(values[v] == saved[v], boost::test_tools::per_element());
  auto fewer = vars;
  fewer.pop_back();
  const auto msg = error_of([&] { w.recover(fewer); }, dsgd::errc::shape_mismatch);
  BOOST_TEST(contains(msg, "train::worker::recover: 1 views for the 2 variables placed"));
  w.push_pull(vars);
  BOOST_TEST(w.step() == saved_step + 1);
  BOOST_TEST(values[0][0] == saved[0][0] - 0.25f * 0.5f);  // SGD, learning rate 0.25
  w.finish();
  serve.join();
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()
