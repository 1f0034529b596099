// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/adapt/torch.hpp>: views of torch::Tensor and of a torch::nn::Module's
// parameters point into their storage and their .grad()'s; tensors that are not contiguous,
// not float32 or not on the CPU, a gradient never computed, and a module whose parameters
// changed number or shape since its views were made are errors naming the parameter. A module
// trained a few steps across a ps task and two workers (transport::inproc) through its views
// gets in its own parameters the values plain SGD on the averaged gradients gives.
#include <dsgd/adapt/torch.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/train/ps_task.hpp>
#include <dsgd/train/worker.hpp>

#include <support/error_checks.hpp>
#include <support/inproc_cluster.hpp>
#include <support/role_cluster.hpp>

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

BOOST_AUTO_TEST_SUITE_END()
