// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// collective::ring and collective::sharded_update, with the replicas as threads of this test
// over the in-process transport and over loopback TCP: the collectives' sums and copies, the
// sharded update against one process on the concatenated batch, and the errors that name the
// neighbour and the deadline.
#include <dsgd/checkpoint/state_records.hpp>
#include <dsgd/collective/ring.hpp>
#include <dsgd/collective/sharded_update.hpp>
#include <dsgd/optim/adam.hpp>
#include <dsgd/optim/exponential_decay.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/per_variable.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/transport/inproc.hpp>

#include <support/error_checks.hpp>
#include <support/inproc_cluster.hpp>
#include <support/run_tasks.hpp>
#include <support/temp_dir.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

BOOST_AUTO_TEST_SUITE(collective_ring_test)

namespace {

using namespace dsgd;
using test::both_transports;
using test::test_net;

transport::tcp_options connection(std::size_t chunk_bytes = std::size_t{1} << 20) {
  transport::tcp_options o;
  o.token = "collective-test-token";
  o.chunk_bytes = chunk_bytes;
  o.log = [](std::string_view) {};
  return o;
}

collective::ring_options quick_deadlines(std::chrono::milliseconds connect = std::chrono::seconds(30),
                                         std::chrono::milliseconds step = std::chrono::seconds(30)) {
  return {.connect_timeout = connect, .step_timeout = step};
}

// Runs body(ring) on every rank of a ring of @p n workers over @p net, each on a thread.
template <class T>
void on_ring(const test_net<T>& net, std::size_t n, const std::function<void(collective::ring<T>&)>& body,
             transport::tcp_options conn = connection(), collective::ring_options opts = quick_deadlines()) {
  auto members = collective::ring_members(net.spec(0, n));
  std::vector<std::function<void()>> tasks;
  for (std::size_t r = 0; r < n; ++r)
    tasks.push_back([&, r] {
      collective::ring<T> ring(members, r, conn, opts, net.transport());
      ring.connect();
      body(ring);
    });
  test::run_tasks(tasks);
}

// What a rank's thread saw go wrong, checked on the test's thread afterwards (Boost.Test's
// checks are not for other threads): "" when nothing did.
using findings = std::vector<std::string>;

// Runs @p f on a rank's thread: @returns the dsgd::error it threw (its code and message), or no
// code when it returned.
template <class F>
std::pair<std::optional<error_code>, std::string> outcome_of(F&& f) {
  try {
    f();
    return {std::nullopt, {}};
  } catch (const error& e) {
    return {e.code(), e.what()};
  }
}

// An integer-valued element of rank r's buffer: sums of them are exact in float.
float value_of(std::size_t rank, std::size_t i, std::uint64_t round) {
  return static_cast<float>((rank * 7 + i * 3 + round) % 101) - 50.f;
}

}  // namespace

BOOST_AUTO_TEST_CASE(segments_cut_a_buffer_into_nearly_equal_parts) {
  for (std::size_t n : {0, 1, 2, 5, 1003, 4096})
    for (std::size_t parts : {1, 2, 3, 4, 5}) {
      std::size_t at = 0;
      for (std::size_t k = 0; k < parts; ++k) {
        auto s = collective::segment_of(k, n, parts);
        BOOST_TEST(s.begin == at);
        BOOST_TEST((s.size() == n / parts || s.size() == n / parts + 1));
        at = s.end;
      }
      BOOST_TEST(at == n);
    }
}

// Every rank's owned segment holds the exact sum after reduce_scatter, every element after
// all_gather, and broadcast copies the root's buffer; with several chunk sizes (one that cuts
// floats in two) and buffers smaller than the ring (empty segments).
BOOST_AUTO_TEST_CASE_TEMPLATE(collectives_sum_and_copy_every_segment, T, both_transports) {
  test_net<T> net;
  for (std::size_t n : {1, 2, 3, 5}) {
    for (std::size_t chunk : {std::size_t{1} << 20, std::size_t{30}}) {
      BOOST_TEST_CONTEXT("ring of " << n << ", chunks of " << chunk << " bytes") {
        findings wrong(n);
        on_ring<T>(
            net, n,
            [&](collective::ring<T>& ring) {
              auto& mistakes = wrong[ring.rank()];
              auto expect = [&](bool ok, const char* what, std::size_t i) {
                if (!ok && mistakes.empty()) mistakes = std::string(what) + " wrong at element " + std::to_string(i);
              };
              for (std::size_t elements : {std::size_t{1003}, std::size_t{2}}) {
                std::vector<float> data(elements);
                for (std::uint64_t round = 1; round <= 3; ++round) {
                  for (std::size_t i = 0; i < elements; ++i) data[i] = value_of(ring.rank(), i, round);
                  ring.reduce_scatter(data, round);
                  auto sum = [&](std::size_t i) {
                    float s = 0;
                    for (std::size_t r = 0; r < n; ++r) s += value_of(r, i, round);
                    return s;
                  };
                  auto mine = ring.owned(elements);
                  for (std::size_t i = mine.begin; i < mine.end; ++i) expect(data[i] == sum(i), "reduce-scatter", i);
                  ring.all_gather(data, round);
                  for (std::size_t i = 0; i < elements; ++i) expect(data[i] == sum(i), "all-gather", i);
                }
                const std::size_t root = n - 1;
                for (std::size_t i = 0; i < elements; ++i) data[i] = value_of(ring.rank(), i, 9);
                ring.broadcast(data, root, 9);
                for (std::size_t i = 0; i < elements; ++i) expect(data[i] == value_of(root, i, 9), "broadcast", i);
              }
            },
            connection(chunk));
        for (std::size_t r = 0; r < n; ++r) BOOST_TEST(wrong[r] == "", "rank " << r << ": " << wrong[r]);
      }
    }
  }
}

namespace {

// Softmax regression, d inputs and k classes, on a fixed random data set: the mean gradient of
// the cross entropy over examples [first, first + count).
struct softmax_problem {
  static constexpr std::size_t d = 12, k = 4;
  std::vector<float> x;
  std::vector<int> y;

  explicit softmax_problem(std::size_t examples) : x(examples * d), y(examples) {
    std::mt19937 gen(7);
    std::normal_distribution<float> normal;
    for (auto& v : x) v = normal(gen);
    for (std::size_t e = 0; e < examples; ++e) y[e] = int(gen() % k);
  }

  void gradient(const std::vector<float>& w, const std::vector<float>& b, std::size_t first, std::size_t count,
                std::vector<float>& dw, std::vector<float>& db) const {
    std::fill(dw.begin(), dw.end(), 0.f);
    std::fill(db.begin(), db.end(), 0.f);
    for (std::size_t e = first; e < first + count; ++e) {
      float logits[k], top = -1e30f, total = 0;
      for (std::size_t c = 0; c < k; ++c) {
        logits[c] = b[c];
        for (std::size_t i = 0; i < d; ++i) logits[c] += x[e * d + i] * w[i * k + c];
        top = std::max(top, logits[c]);
      }
      for (auto& l : logits) total += (l = std::exp(l - top));
      for (std::size_t c = 0; c < k; ++c) {
        const float g = (logits[c] / total - (int(c) == y[e] ? 1.f : 0.f)) / float(count);
        db[c] += g;
        for (std::size_t i = 0; i < d; ++i) dw[i * k + c] += g * x[e * d + i];
      }
    }
  }
};

// Trains the problem for @p steps on a ring of @p n replicas, each taking its @p batch of each
// step's n x batch examples, and in one process on the whole n x batch; checks after every step
// that the replicas are bit-identical and within 1e-5 of the one process.
template <class T, class O>
void train_against_one_process(const test_net<T>& net, std::size_t n, O optimizer) {
  constexpr std::size_t batch = 8, steps = 25;
  const softmax_problem data(n * batch * steps);
  using P = softmax_problem;
  std::vector<float> w0(P::d * P::k), b0(P::k);
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> u(-0.1f, 0.1f);
  for (auto& v : w0) v = u(gen);

  // One process on the concatenated batches, each variable under its own optimizer.
  std::vector<std::vector<float>> w_ref(steps + 1), b_ref(steps + 1);
  {
    auto w = w0, b = b0;
    std::vector<float> dw(w.size()), db(b.size());
    auto ow = optim::for_variable(optimizer, "softmax/w");
    auto ob = optim::for_variable(optimizer, "softmax/b");
    auto sw = optim::make_state(ow, device::cpu{}, w.size());
    auto sb = optim::make_state(ob, device::cpu{}, b.size());
    w_ref[0] = w, b_ref[0] = b;
    for (std::size_t s = 0; s < steps; ++s) {
      data.gradient(w, b, s * n * batch, n * batch, dw, db);
      ow.apply(device::cpu{}, sw, w.data(), dw.data(), w.size(), 1.f);
      ob.apply(device::cpu{}, sb, b.data(), db.data(), b.size(), 1.f);
      w_ref[s + 1] = w, b_ref[s + 1] = b;
    }
  }

  std::vector<std::vector<std::vector<float>>> seen(n);  // per replica, per step: w then b
  on_ring<T>(net, n, [&](collective::ring<T>& ring) {
    const std::size_t r = ring.rank();
    // Every replica but the chief starts elsewhere: the broadcast gives them the chief's values.
    std::vector<float> w = r == 0 ? w0 : std::vector<float>(w0.size(), float(r)), b = b0;
    std::vector<float> dw(w.size()), db(b.size());
    std::vector<variable_view> vars{view("softmax/w", {P::d, P::k}, w, dw), view("softmax/b", {P::k}, b, db)};
    collective::sharded_update<O, T> update(ring, optimizer, vars);
    update.broadcast_values(vars);
    for (std::size_t s = 0; s < steps; ++s) {
      data.gradient(w, b, (s * n + r) * batch, batch, dw, db);
      update.step(vars, s);
      auto& mine = seen[r];
      mine.push_back(w);
      mine.back().insert(mine.back().end(), b.begin(), b.end());
    }
  });
  double worst = 0;
  for (std::size_t s = 0; s < steps; ++s) {
    for (std::size_t r = 1; r < n; ++r)
      BOOST_REQUIRE_MESSAGE(std::memcmp(seen[r][s].data(), seen[0][s].data(), seen[0][s].size() * sizeof(float)) == 0,
                            "replica " << r << " differs from the chief after step " << s);
    for (std::size_t i = 0; i < w_ref[s + 1].size(); ++i)
      worst = std::max(worst, double(std::abs(seen[0][s][i] - w_ref[s + 1][i])));
    for (std::size_t i = 0; i < b_ref[s + 1].size(); ++i)
      worst = std::max(worst, double(std::abs(seen[0][s][w_ref[s + 1].size() + i] - b_ref[s + 1][i])));
  }
  BOOST_TEST_MESSAGE(n << " replicas: largest difference from one process " << worst);
  BOOST_TEST(worst <= 1e-5);
  // The update moved the values: a comparison of unchanged values would prove nothing.
  double moved = 0;
  for (std::size_t i = 0; i < w0.size(); ++i) moved = std::max(moved, double(std::abs(w_ref[steps][i] - w0[i])));
  BOOST_TEST(moved > 0.01);
}

}  // namespace

BOOST_AUTO_TEST_CASE(sharded_update_equals_one_process_on_the_concatenated_batch) {
  test_net<transport::inproc> net;
  for (std::size_t n : {3, 4, 5}) {
    BOOST_TEST_CONTEXT(n << " replicas, momentum") {
      train_against_one_process<transport::inproc>(net, n, optim::momentum{.learning_rate = 0.1f, .momentum = 0.9f});
    }
    BOOST_TEST_CONTEXT(n << " replicas, adam on w and momentum on b") {
      using O = optim::per_variable<optim::momentum>;
      O o{.all = {.learning_rate = 0.1f, .momentum = 0.9f},
          .variables = {{"softmax/w", optim::adam{.learning_rate = 0.01f}}}};
      train_against_one_process<transport::inproc>(net, n, o);
    }
  }
}

BOOST_AUTO_TEST_CASE(sharded_update_over_tcp) {
  test_net<transport::asio_tcp> net;
  train_against_one_process<transport::asio_tcp>(net, 3, optim::momentum{.learning_rate = 0.1f, .momentum = 0.9f});
}

namespace {

// Trains the problem from @p first to @p last on a ring of @p n replicas under momentum with a
// decaying rate (its slots and its counter both in the checkpoint), restoring checkpoint
// @p resume_from in @p dir first if set, saving checkpoint @p save_at there when reached.
// @returns the chief's values (w then b) after the last step.
std::vector<float> train_span(const test_net<transport::inproc>& net, std::size_t n, std::uint64_t first,
                              std::uint64_t last, const std::filesystem::path& dir,
                              std::optional<std::uint64_t> resume_from, std::optional<std::uint64_t> save_at) {
  using O = optim::exponential_decay<optim::momentum>;
  const O optimizer{{.learning_rate = 0.1f, .momentum = 0.9f}, 0.5f, 4, false};
  constexpr std::size_t batch = 12;  // every step trains the same 12 examples, split n ways
  const softmax_problem data(batch * last);
  using P = softmax_problem;
  std::vector<float> out;
  on_ring<transport::inproc>(net, n, [&](collective::ring<transport::inproc>& ring) {
    const std::size_t r = ring.rank(), mine = batch / n;
    std::vector<float> w(P::d * P::k, 0.01f), b(P::k), dw(w.size()), db(b.size());
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * float(i % 7);
    std::vector<variable_view> vars{view("softmax/w", {P::d, P::k}, w, dw), view("softmax/b", {P::k}, b, db)};
    collective::sharded_update<O, transport::inproc> update(ring, optimizer, vars);
    checkpoint::saver saver(dir, 0);
    if (resume_from) update.restore(saver.open(*resume_from), vars);
    for (std::uint64_t s = first; s < last; ++s) {
      data.gradient(w, b, s * batch + r * mine, mine, dw, db);
      update.step(vars, s);
      if (save_at && s + 1 == *save_at) update.save(saver, s + 1, vars);
    }
    if (r == 0) {
      out = w;
      out.insert(out.end(), b.begin(), b.end());
    }
  });
  return out;
}

}  // namespace

// A checkpoint the replicas write together resumes bit for bit with the same number of
// replicas (values, momentum slots and the schedule's counter restored), and within rounding
// with another number (the slots re-cut by range); the chief commits it like a ps job's.
BOOST_AUTO_TEST_CASE(checkpoints_resume_bit_for_bit_and_with_another_number_of_replicas) {
  test_net<transport::inproc> net;
  test::temp_dir dir("dsgd_collective_ckpt_");
  const auto straight = train_span(net, 3, 0, 10, dir.path, std::nullopt, 4);
  BOOST_TEST((checkpoint::saver(dir.path).latest() == std::optional<std::uint64_t>(4)));
  {
    auto reader = checkpoint::saver(dir.path).open(4);
    BOOST_TEST(reader.ps_tasks() == 3u);  // one part per replica
    BOOST_TEST(reader.contains("softmax/w/velocity"));
    BOOST_TEST(checkpoint::read_counter(reader, "softmax/w/schedule_step") == 4u);
  }
  const auto resumed = train_span(net, 3, 4, 10, dir.path, 4, std::nullopt);
  BOOST_REQUIRE(resumed.size() == straight.size());
  BOOST_TEST(std::memcmp(resumed.data(), straight.data(), straight.size() * sizeof(float)) == 0);
  const auto resharded = train_span(net, 2, 4, 10, dir.path, 4, std::nullopt);
  double worst = 0;
  for (std::size_t i = 0; i < straight.size(); ++i)
    worst = std::max(worst, double(std::abs(resharded[i] - straight[i])));
  BOOST_TEST_MESSAGE("2 replicas resuming 3's checkpoint: largest difference " << worst);
  BOOST_TEST(worst <= 1e-5);
  // A checkpoint of another optimizer is refused, naming the slot it lacks.
  test::temp_dir plain("dsgd_collective_ckpt_plain_");
  std::vector<std::pair<std::optional<error_code>, std::string>> refused(2);
  on_ring<transport::inproc>(net, 2, [&](collective::ring<transport::inproc>& ring) {
    std::vector<float> w(8, 1.f), dw(8, 0.f);
    std::vector<variable_view> vars{view("softmax/w", {8}, w, dw)};
    collective::sharded_update<optim::sgd, transport::inproc> sgd(ring, {}, vars);
    sgd.save(checkpoint::saver(plain.path), 1, vars);
    collective::sharded_update<optim::momentum, transport::inproc> momentum(ring, {}, vars);
    refused[ring.rank()] = outcome_of([&] { momentum.restore(checkpoint::saver(plain.path).open(1), vars); });
  });
  for (const auto& [code, what] : refused) {
    BOOST_TEST((code == make_error_code(errc::not_found)), what);
    BOOST_TEST(test::contains(what, "holds no softmax/w/velocity"));
  }
}

BOOST_AUTO_TEST_CASE(bad_rings_are_refused_by_name) {
  auto members = collective::ring_members(test::inproc_cluster(0, 3));
  transport::inproc net{transport::inproc_hub::create()};
  using ring = collective::ring<transport::inproc>;
  BOOST_TEST(test::contains(test::error_of([&] { ring(members, 3, connection(), {}, net); }, errc::invalid_argument),
                            "rank 3 of a ring of 3 members"));
  auto twice = members;
  twice[2].identity = twice[0].identity;
  BOOST_TEST(test::contains(test::error_of([&] { ring(twice, 0, connection(), {}, net); }, errc::invalid_argument),
                            "'worker:0' is repeated"));
  BOOST_TEST(test::contains(
      test::error_of([&] { ring(members, 0, connection(), {.step_timeout = std::chrono::milliseconds(0)}, net); },
                     errc::invalid_argument),
      "ring_options.step_timeout must be positive"));
}

// A member that never starts: its neighbours fail within the connect deadline, naming it.
BOOST_AUTO_TEST_CASE(a_missing_member_fails_connect_within_its_deadline) {
  test_net<transport::inproc> net;
  auto members = collective::ring_members(net.spec(0, 3));
  const auto limit = std::chrono::milliseconds(400);
  std::vector<std::pair<std::optional<error_code>, std::string>> errors(2);
  std::vector<std::chrono::steady_clock::duration> took(2);
  std::vector<std::function<void()>> tasks;
  for (std::size_t r = 0; r < 2; ++r)
    tasks.push_back([&, r] {
      const auto start = std::chrono::steady_clock::now();
      errors[r] = outcome_of([&] {
        collective::ring<transport::inproc> ring(members, r, connection(), quick_deadlines(limit), net.transport());
        ring.connect();
      });
      took[r] = std::chrono::steady_clock::now() - start;
    });
  test::run_tasks(tasks);
  for (std::size_t r = 0; r < 2; ++r) {
    BOOST_TEST((errors[r].first == make_error_code(errc::timed_out)), errors[r].second);
    BOOST_TEST((took[r] < limit + std::chrono::seconds(2)));
  }
  // Rank 1 dials worker:2, its successor; rank 0 waits for worker:2, its predecessor.
  BOOST_TEST(test::contains(errors[1].second, "could not reach worker:2 (its successor)"));
  BOOST_TEST(test::contains(errors[0].second, "worker:2 (its predecessor) did not connect"));
}

// A member with another token is refused at the handshake, and the error says so. Whichever
// rank dials first is refused; the other may then find nobody listening (its deadline).
BOOST_AUTO_TEST_CASE(a_member_with_another_token_is_refused) {
  test_net<transport::inproc> net;
  auto members = collective::ring_members(net.spec(0, 2));
  std::vector<std::pair<std::optional<error_code>, std::string>> outcomes(2);
  std::vector<std::function<void()>> tasks;
  for (std::size_t r = 0; r < 2; ++r)
    tasks.push_back([&, r] {
      auto conn = connection();
      if (r == 1) conn.token = "another-token";
      collective::ring<transport::inproc> ring(members, r, conn, quick_deadlines(std::chrono::milliseconds(1500)),
                                               net.transport());
      outcomes[r] = outcome_of([&] { ring.connect(); });
    });
  test::run_tasks(tasks);
  std::vector<std::string> refused(2);
  for (std::size_t r = 0; r < 2; ++r) {
    const auto& [code, what] = outcomes[r];
    BOOST_TEST((code == make_error_code(errc::handshake_failed) || code == make_error_code(errc::timed_out)),
               "rank " << r << ": " << (code ? what : "connected to a member with another token"));
    if (code == make_error_code(errc::handshake_failed)) refused[r] = what;
  }
  const std::string& named = refused[0].empty() ? refused[1] : refused[0];
  BOOST_TEST(test::contains(named, refused[0].empty() ? "worker:0 (its successor)" : "worker:1 (its successor)"));
  BOOST_TEST(test::contains(named, "same cluster token"));
}

// A replica that stops taking part: the others' collective fails within the step deadline,
// naming the neighbour they waited for; a replica whose buffer has another size is a named desync.
BOOST_AUTO_TEST_CASE(a_silent_or_mismatched_member_fails_the_collective_by_name) {
  test_net<transport::inproc> net;
  const auto limit = std::chrono::milliseconds(300);
  std::pair<std::optional<error_code>, std::string> late, after;
  std::chrono::steady_clock::duration took{};
  on_ring<transport::inproc>(
      net, 2,
      [&](collective::ring<transport::inproc>& ring) {
        std::vector<float> data(64, 1.f);
        if (ring.rank() == 1) {
          std::this_thread::sleep_for(limit * 3);  // never calls reduce_scatter
          return;
        }
        const auto start = std::chrono::steady_clock::now();
        late = outcome_of([&] { ring.reduce_scatter(data, 4); });
        took = std::chrono::steady_clock::now() - start;
        after = outcome_of([&] { ring.all_gather(data, 5); });  // the ring is closed now
      },
      connection(), quick_deadlines(std::chrono::seconds(30), limit));
  BOOST_TEST((late.first == make_error_code(errc::timed_out)), late.second);
  BOOST_TEST(test::contains(
      late.second, "worker:0 (rank 0 of 2): reduce-scatter at step 4, round 0: nothing arrived from worker:1"));
  BOOST_TEST((took < limit + std::chrono::seconds(2)));
  // The next collective says why the ring is closed.
  BOOST_TEST((after.first == make_error_code(errc::peer_lost)), after.second);
  BOOST_TEST(test::contains(after.second, "nothing arrived from worker:1"));

  std::vector<std::pair<std::optional<error_code>, std::string>> errors(2);
  on_ring<transport::inproc>(net, 2, [&](collective::ring<transport::inproc>& ring) {
    std::vector<float> data(ring.rank() == 0 ? 100 : 102, 1.f);
    errors[ring.rank()] = outcome_of([&] { ring.reduce_scatter(data, 1); });
  });
  for (const auto& [code, what] : errors)
    BOOST_TEST(code.has_value(), "a reduce-scatter of 100 and 102 elements completed");
  BOOST_TEST((test::contains(errors[0].second, "sent a frame of another collective: a segment of") ||
              test::contains(errors[1].second, "sent a frame of another collective: a segment of")));
}

BOOST_AUTO_TEST_SUITE_END()
