// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/adapt/torch.hpp>: views of torch::Tensor and of a torch::nn::Module's
// parameters point into their storage and their .grad()'s; tensors that are not contiguous,
// not float32 or not on the CPU, a gradient never computed, and a module whose parameters
// changed number or shape since its views were made are errors naming the parameter. A module
// trained a few steps across a ps task and two workers (transport::inproc) through its views
// gets in its own parameters the values plain SGD on the averaged gradients gives. A module with
// buffers or frozen parameters is an error until module_options choose what to do with them;
// chosen, buffers are variables after the parameters, pushed as their values (integer counts
// as the count landed plus what the module counted since), frozen parameters are left out or
// kept the same way; and two workers whose BatchNorm saw different batches end every step with
// the same running statistics, their mean, when the ps task holding them averages its pushes.
#include <dsgd/adapt/torch.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/pinned.hpp>
#include <dsgd/train/ps_task.hpp>
#include <dsgd/train/worker.hpp>

#include <support/error_checks.hpp>
#include <support/inproc_cluster.hpp>
#include <support/role_cluster.hpp>
#include <support/run_tasks.hpp>

#include <torch/torch.h>
#include <boost/test/unit_test.hpp>

#include <functional>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(adapt_torch_test)

namespace libtorch = dsgd::adapt::libtorch;
using dsgd::test::contains;
using dsgd::test::error_of;

namespace {

struct net_impl : torch::nn::Module {
  net_impl()
      : fc1(register_module("fc1", torch::nn::Linear(4, 3))), fc2(register_module("fc2", torch::nn::Linear(3, 2))) {}
  torch::Tensor forward(const torch::Tensor& x) { return fc2(torch::relu(fc1(x))); }
  torch::nn::Linear fc1, fc2;
};

// A linear layer followed by batch normalisation: parameters fc.weight, fc.bias, bn.weight,
// bn.bias; buffers bn.running_mean, bn.running_var, bn.num_batches_tracked.
struct bn_net_impl : torch::nn::Module {
  explicit bn_net_impl(bool track = true)
      : fc(register_module("fc", torch::nn::Linear(4, 3))),
        bn(register_module("bn", torch::nn::BatchNorm1d(torch::nn::BatchNormOptions(3).track_running_stats(track)))) {}
  torch::Tensor forward(const torch::Tensor& x) { return bn(fc(x)); }
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
};

using libtorch::keep;
constexpr libtorch::module_options exchange_buffers{.buffers = keep::exchange};

}  // namespace

BOOST_AUTO_TEST_CASE(a_tensor_view_points_into_its_storage_and_its_gradient) {
  auto t = torch::zeros({3, 4}, torch::requires_grad());
  auto none = libtorch::view("t", t);
  BOOST_TEST(none.values.data() == t.data_ptr<float>());
  BOOST_TEST(none.shape.to_string() == "[3, 4]");
  BOOST_TEST(none.gradients.empty());  // no backward yet
  (t * 2).sum().backward();
  const auto v = libtorch::view("t", t);
  BOOST_TEST(v.gradients.data() == t.grad().data_ptr<float>());
  BOOST_TEST(v.gradients[5] == 2.f);
  v.values[5] = 7.f;
  BOOST_TEST(t[1][1].item<float>() == 7.f);
}

BOOST_AUTO_TEST_CASE(tensors_that_cannot_be_viewed_are_named_errors) {
  const auto m = torch::zeros({3, 4});
  auto msg = error_of([&] { libtorch::view("fc.weight", m.t()); }, dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "the values of parameter 'fc.weight' (sizes [4, 3]) is not contiguous"));
  msg = error_of([&] { libtorch::view("d", torch::zeros({2}, torch::kFloat64)); }, dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "the values of parameter 'd' is Double; dsgd variables are float32"));
  msg = error_of([&] { libtorch::view("meta", torch::empty({2}, torch::TensorOptions().device(torch::kMeta))); },
                 dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "the values of parameter 'meta' is on meta; views are of CPU memory"));
  msg = error_of([&] { libtorch::view("g", torch::zeros({2, 2}), torch::zeros({4})); }, dsgd::errc::shape_mismatch);
  BOOST_TEST(contains(msg, "the gradient of parameter 'g' has sizes [4], its values [2, 2]"));
  msg = error_of([&] { libtorch::view("e", torch::zeros({0})); }, dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "the values of parameter 'e' is empty"));
}

BOOST_AUTO_TEST_CASE(module_views_name_every_parameter_and_check_it_every_time) {
  auto net = std::make_shared<net_impl>();
  libtorch::module_views params(*net);
  BOOST_TEST(params.names() == (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}),
             boost::test_tools::per_element());
  const auto values = params.values();
  BOOST_TEST_REQUIRE(values.size() == 4u);
  BOOST_TEST(values[0].shape.to_string() == "[3, 4]");
  BOOST_TEST(values[0].values.data() == net->fc1->weight.data_ptr<float>());

  auto msg = error_of([&] { params.with_gradients(); }, dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg,
                      "module_views::with_gradients: the gradient of parameter 'fc1.weight' was never computed "
                      "(.grad() is undefined): run backward() before pushing"));
  net->forward(torch::ones({5, 4})).sum().backward();
  const auto both = params.with_gradients();
  BOOST_TEST(both.data() == values.data());  // refreshed in place
  BOOST_TEST(both[3].gradients.data() == net->fc2->bias.grad().data_ptr<float>());
  BOOST_TEST(both[3].gradients[0] == 5.f);  // d(sum)/d(bias) over 5 examples

  {
    torch::NoGradGuard no_grad;
    net->fc2->bias.set_data(torch::zeros({3}));  // the same parameter, another shape
  }
  msg = error_of([&] { params.values(); }, dsgd::errc::shape_mismatch);
  BOOST_TEST(contains(msg, "parameter 'fc2.bias' has sizes [3]; it was placed with [2]"));
  {
    torch::NoGradGuard no_grad;
    net->fc2->bias.set_data(torch::zeros({2}));
  }
  params.values();
  net->register_parameter("scale", torch::ones({1}));  // one more
  msg = error_of([&] { params.with_gradients(); }, dsgd::errc::shape_mismatch);
  BOOST_TEST(contains(msg, "has 5 parameters; it had 4 when placed"));
}

// Two workers train a module a few steps through module_views (sync, SGD at the ps); each
// step's values must be SGD on the mean of both workers' gradients, which the test recomputes.
BOOST_AUTO_TEST_CASE(a_module_trains_across_a_ps_and_two_workers_in_its_own_parameters) {
  using worker = dsgd::train::worker<dsgd::device::cpu, dsgd::placement::round_robin, dsgd::update::sync_average,
                                     dsgd::transport::inproc>;
  torch::manual_seed(3);
  const dsgd::test::test_net<dsgd::transport::inproc> net;
  const auto spec = net.spec(1, 2);
  const auto o = dsgd::test::quiet_options();  // SGD, learning rate 0.25
  const std::size_t steps = 4;
  std::vector<std::shared_ptr<net_impl>> models{std::make_shared<net_impl>(), std::make_shared<net_impl>()};
  const auto x = torch::randn({8, 4});
  const std::vector<torch::Tensor> inputs{x.slice(0, 0, 4).contiguous(), x.slice(0, 4, 8).contiguous()};
  // What the values should be: the chief's initial values, stepped by SGD on the mean gradient.
  const auto initial = models[0]->fc1->weight.detach().clone();
  std::vector<torch::Tensor> expected;
  {
    auto ref = std::make_shared<net_impl>();
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < ref->parameters().size(); ++i) ref->parameters()[i].copy_(models[0]->parameters()[i]);
    for (std::size_t s = 0; s < steps; ++s) {
      torch::AutoGradMode grad(true);
      ref->zero_grad();
      std::vector<std::vector<torch::Tensor>> g;
      for (const auto& in : inputs) {
        ref->zero_grad();
        ref->forward(in).pow(2).mean().backward();
        g.emplace_back();
        for (auto& p : ref->parameters()) g.back().push_back(p.grad().clone());
      }
      torch::NoGradGuard again;
      for (std::size_t i = 0; i < ref->parameters().size(); ++i)
        ref->parameters()[i].sub_(0.25f * ((g[0][i] + g[1][i]) / 2));
    }
    for (auto& p : ref->parameters()) expected.push_back(p.detach().clone());
  }
  BOOST_TEST(!torch::allclose(expected[0], initial));  // the steps move the values
  dsgd::test::run_with_ps(net, spec, o, 2, [&](std::size_t k) {
    worker w(spec, {"worker", int(k)}, o, {}, net.transport());
    auto& model = *models[k];
    libtorch::module_views params(model);
    w.create_variables(params.values());  // worker 1 gets the chief's initial values
    for (std::size_t s = 0; s < steps; ++s) {
      model.zero_grad();
      model.forward(inputs[k]).pow(2).mean().backward();
      w.push_pull(params.with_gradients());
    }
    w.finish();
  });
  for (std::size_t k = 0; k < 2; ++k)
    for (std::size_t i = 0; i < expected.size(); ++i)
      BOOST_TEST(torch::allclose(models[k]->parameters()[i], expected[i], 1e-5, 1e-6));
}

BOOST_AUTO_TEST_CASE(buffers_and_frozen_parameters_are_errors_until_chosen) {
  auto net = std::make_shared<bn_net_impl>();
  auto msg = error_of([&] { libtorch::module_views params(*net); }, dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg,
                      "has buffers ('bn.running_mean'), which get no gradient: choose "
                      "module_options{.buffers = keep::exchange}"));
  BOOST_TEST(contains(msg, "keep::leave_out"));
  net->fc->weight.requires_grad_(false);
  msg = error_of([&] { libtorch::module_views params(*net, exchange_buffers); }, dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "has frozen parameters (requires_grad() false) ('fc.weight')"));
  BOOST_TEST(contains(msg, "module_options{.frozen = keep::exchange}"));
  // A module without either is as before: no choice to make.
  auto plain = std::make_shared<net_impl>();
  BOOST_TEST(libtorch::module_views(*plain).names().size() == 4u);
}

BOOST_AUTO_TEST_CASE(buffers_are_variables_after_the_parameters_and_frozen_ones_as_chosen) {
  auto net = std::make_shared<bn_net_impl>();
  net->fc->weight.requires_grad_(false);
  libtorch::module_views left_out(*net, {.buffers = keep::leave_out, .frozen = keep::leave_out});
  BOOST_TEST(left_out.names() == (std::vector<std::string>{"fc.bias", "bn.weight", "bn.bias"}),
             boost::test_tools::per_element());
  BOOST_TEST(left_out.state_names().empty());
  // The frozen parameter is left out, so backward() leaving it no .grad() is no error (it was).
  net->forward(torch::randn({5, 4})).pow(2).sum().backward();
  BOOST_TEST(left_out.with_gradients().size() == 3u);

  libtorch::module_views kept(*net, {.buffers = keep::exchange, .frozen = keep::exchange});
  BOOST_TEST(kept.names() == (std::vector<std::string>{"fc.weight", "fc.bias", "bn.weight", "bn.bias",
                                                       "bn.running_mean", "bn.running_var", "bn.num_batches_tracked"}),
             boost::test_tools::per_element());
  BOOST_TEST(kept.state_names() ==
                 (std::vector<std::string>{"fc.weight", "bn.running_mean", "bn.running_var", "bn.num_batches_tracked"}),
             boost::test_tools::per_element());
  const auto views = kept.with_gradients();
  BOOST_TEST_REQUIRE(views.size() == 7u);
  BOOST_TEST(views[4].shape.to_string() == "[3]");
  BOOST_TEST(views[4].values.data() == net->bn->running_mean.data_ptr<float>());  // pulls land in place
  // A variable of state pushes a copy of its values, taken by with_gradients().
  BOOST_TEST(views[4].gradients.data() != views[4].values.data());
  BOOST_TEST(std::vector<float>(views[4].gradients.begin(), views[4].gradients.end()) ==
                 std::vector<float>(views[4].values.begin(), views[4].values.end()),
             boost::test_tools::per_element());
  BOOST_TEST(views[0].gradients[0] == net->fc->weight[0][0].item<float>());  // the frozen weight, as state
  BOOST_TEST(views[6].shape.to_string() == "[]");                            // the count: a scalar
  BOOST_TEST(views[6].values[0] == 1.f);                                     // one forward in training mode

  // BatchNorm without running statistics registers undefined buffers: no variables.
  auto untracked = std::make_shared<bn_net_impl>(false);
  BOOST_TEST(libtorch::module_views(*untracked, exchange_buffers).names().size() == 4u);

  auto msg = error_of(
      [&] {
        net->register_buffer("extra", torch::zeros({2}));
        kept.values();
      },
      dsgd::errc::shape_mismatch);
  BOOST_TEST(contains(msg, "has 4 buffers; it had 3 when placed"));
}

// num_batches_tracked is a count: pulls land in a float mirror; the module's int64 tensor holds
// the count last landed plus what it counted since, at each values() and with_gradients().
BOOST_AUTO_TEST_CASE(a_count_is_the_one_landed_plus_what_the_module_counted_since) {
  auto net = std::make_shared<bn_net_impl>();
  libtorch::module_views params(*net, exchange_buffers);
  auto count = params.values()[6];
  BOOST_TEST(net->bn->num_batches_tracked.scalar_type() == torch::kInt64);
  count.values[0] = 468.f;  // as a pull from a restored checkpoint lands
  params.values();
  BOOST_TEST(net->bn->num_batches_tracked.item<std::int64_t>() == 468);
  net->forward(torch::randn({5, 4}));
  net->forward(torch::randn({5, 4})).sum().backward();
  auto pushed = params.with_gradients()[6];
  BOOST_TEST(net->bn->num_batches_tracked.item<std::int64_t>() == 470);
  BOOST_TEST(pushed.gradients[0] == 470.f);
  BOOST_TEST(params.with_gradients()[6].gradients[0] == 470.f);  // again, nothing counted since
  net->eval();
  net->forward(torch::randn({5, 4}));  // eval mode counts nothing
  BOOST_TEST(params.values()[6].values[0] == 470.f);
}

// Two workers whose BatchNorm sees different batches train through module_views, the
// parameters on ps:0 (SGD) and the buffers on ps:1, whose SGD at learning rate -1 with weight
// decay -1 sets a value to the mean of the step's pushes. After every step both workers hold
// the same running statistics, bit for bit: the mean of the two they computed, and the count of
// batches each saw, not their sum.
BOOST_AUTO_TEST_CASE(two_workers_end_each_step_with_the_mean_of_their_running_statistics) {
  using placement = dsgd::placement::pinned<dsgd::placement::round_robin>;
  using options = dsgd::trainer_options<placement, dsgd::update::sync_average, dsgd::optim::sgd>;
  using worker = dsgd::train::worker<dsgd::device::cpu, placement, dsgd::update::sync_average, dsgd::transport::inproc>;
  using ps_task = dsgd::train::ps_task<dsgd::update::sync_average, dsgd::optim::sgd, dsgd::transport::inproc>;
  torch::manual_seed(5);
  const dsgd::test::test_net<dsgd::transport::inproc> net;
  const auto spec = net.spec(2, 2);
  const auto quiet = dsgd::test::quiet_options();
  options o;
  o.connection = quiet.connection;
  o.serving = quiet.serving;
  o.requests = quiet.requests;
  o.optimizer = {.learning_rate = 0.25f};
  std::vector<std::shared_ptr<bn_net_impl>> models{std::make_shared<bn_net_impl>(), std::make_shared<bn_net_impl>()};
  {
    torch::NoGradGuard no_grad;  // worker 1 starts elsewhere: the chief's values must win
    models[1]->bn->running_mean.fill_(5.f);
  }
  const libtorch::module_views placed(*models[0], exchange_buffers);
  for (const auto& name : placed.names())
    o.placement.pins.push_back(
        {name, name.starts_with("bn.running") || name.starts_with("bn.num") ? "/task:1" : "/task:0"});
  auto averaging = o;
  averaging.optimizer = {.learning_rate = -1.f, .weight_decay = -1.f};
  const std::vector<torch::Tensor> inputs{torch::randn({6, 4}), torch::randn({6, 4}) * 3 + 1};
  const std::size_t steps = 3;
  // Per step and worker: its running statistics after its forward, before the exchange; and
  // after the exchange.
  std::vector<std::vector<std::vector<float>>> before(steps, std::vector<std::vector<float>>(2)), after = before;
  std::vector<std::int64_t> counts(2);
  const auto flat = [](const bn_net_impl& m) {
    const auto t = torch::cat({m.bn->running_mean, m.bn->running_var});
    return std::vector<float>(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
  };
  std::vector<std::function<void()>> tasks;
  tasks.push_back([&] { ps_task(spec, {"ps", 0}, o, net.transport()).join(); });
  tasks.push_back([&] { ps_task(spec, {"ps", 1}, averaging, net.transport()).join(); });
  for (std::size_t k = 0; k < 2; ++k)
    tasks.push_back([&, k] {
      worker w(spec, {"worker", int(k)}, o, {}, net.transport());
      auto& model = *models[k];
      libtorch::module_views params(model, exchange_buffers);
      w.create_variables(params.values());
      for (std::size_t s = 0; s < steps; ++s) {
        model.zero_grad();
        model.forward(inputs[k]).pow(2).mean().backward();
        before[s][k] = flat(model);
        w.push_pull(params.with_gradients());
        after[s][k] = flat(model);
      }
      params.values();
      counts[k] = model.bn->num_batches_tracked.item<std::int64_t>();
      w.finish();
    });
  dsgd::test::run_tasks(tasks);
  for (std::size_t s = 0; s < steps; ++s) {
    BOOST_TEST(after[s][0] == after[s][1], boost::test_tools::per_element());  // bit for bit
    BOOST_TEST(before[s][0] != before[s][1]);                                  // they saw different batches
    for (std::size_t i = 0; i < after[s][0].size(); ++i)
      BOOST_TEST(after[s][0][i] == (before[s][0][i] + before[s][1][i]) * 0.5f);
  }
  BOOST_TEST(counts[0] == static_cast<std::int64_t>(steps));
  BOOST_TEST(counts[1] == static_cast<std::int64_t>(steps));
}

BOOST_AUTO_TEST_SUITE_END()
