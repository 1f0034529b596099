// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// collective::ring: the training replicas of a job connected in a ring over any Transport, and
/// the collectives on it (reduce-scatter, all-gather, broadcast) with their deadlines. The
/// worker side's own communication: no ps takes part.
#pragma once

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/cluster/replicas.hpp>
#include <dsgd/collective/detail/wire.hpp>
#include <dsgd/error.hpp>
#include <dsgd/transport/asio_tcp_policy.hpp>
#include <dsgd/transport/concepts.hpp>

#include <boost/asio/buffer.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dsgd::collective {

/// One member of a ring: the identity it proves on its connections ("worker:1") and the
/// address it listens on.
struct member {
  std::string identity;
  cluster::task_address address;
};

/// @returns the training replicas of @p spec in replica order (the chief first), as ring
/// members at their cluster-spec addresses.
inline std::vector<member> ring_members(const cluster::cluster_spec& spec) {
  std::vector<member> out;
  for (const char* job : {"chief", "worker"})
    if (spec.has_job(job))
      for (std::size_t i = 0; i < spec.num_tasks(job); ++i)
        out.push_back({cluster::task_id{job, int(i)}.to_string(), spec.address(job, int(i))});
  return out;
}

/// The deadlines of a ring.
struct ring_options {
  /// connect(): the ring's neighbours must be connected within this (they may start later).
  std::chrono::milliseconds connect_timeout{120'000};
  /// Each collective must complete within this, or fails with errc::timed_out naming the
  /// neighbour it waited for; a step's compute on the slowest replica counts against it.
  std::chrono::milliseconds step_timeout{120'000};
};

/// Checks @p o, naming a bad field by its path. @throws dsgd::error(errc::invalid_argument)
inline void validate(const ring_options& o, std::string_view path = "ring_options") {
  auto positive = [&](std::chrono::milliseconds v, const char* field) {
    if (v.count() <= 0)
      throw error(errc::invalid_argument,
                  std::string(path) + "." + field + " must be positive, not " + std::to_string(v.count()) + " ms");
  };
  positive(o.connect_timeout, "connect_timeout");
  positive(o.step_timeout, "step_timeout");
}

/// Elements [begin, end) of a buffer.
struct segment {
  std::size_t begin = 0, end = 0;
  constexpr std::size_t size() const noexcept { return end - begin; }
  friend constexpr bool operator==(const segment&, const segment&) = default;
};

/// @returns segment @p k of @p n elements cut into @p parts nearly equal segments (the first
/// n % parts of them one element longer).
constexpr segment segment_of(std::size_t k, std::size_t n, std::size_t parts) noexcept {
  const std::size_t base = n / parts, extra = n % parts;
  const std::size_t begin = k * base + std::min(k, extra);
  return {begin, begin + base + (k < extra ? 1 : 0)};
}

/// The members of a job in a ring over the Transport @p T: each listens at its address, dials
/// its successor and accepts its predecessor (both authenticated as the transport does, with the
/// cluster token; any other peer is refused). A buffer of n elements is cut into size() segments
/// (segment_of); rank r reduces and owns segment (r + 1) % size().
///
/// - reduce_scatter(data): afterwards rank r's owned segment of @p data holds the sum over the
///   ranks, added in ring order (the same order whatever the timing, so the same bits in every
///   run); the other segments hold partial sums.
/// - all_gather(data): afterwards every segment of @p data holds its owner's bits.
/// - broadcast(data, root): afterwards @p data holds @p root's bits.
///
/// Every member must make the same collectives in the same order with buffers of the same size;
/// a frame that does not match (another collective, step or size) fails the call with
/// errc::bad_frame naming the sender and the field. The I/O runs on the calling thread. A
/// failed collective closes the ring: later calls throw errc::peer_lost. Not thread-safe.
template <Transport T = transport::asio_tcp>
class ring {
 public:
  using options_type = typename T::options_type;
  using connection_type = typename T::connection_type;
  using listener_type = typename T::listener_type;

  /// Rank @p rank of a ring of @p members, connecting with @p connection (its token, TLS,
  /// caps; identity and accept_peer are set here) over @p transport; nothing connected yet.
  /// @throws dsgd::error(errc::invalid_argument) for no members, a rank outside them, an empty
  ///         or repeated identity, or a bad option
  ring(std::vector<member> members, std::size_t rank, options_type connection, ring_options opts = {},
       T transport = T{})
      : members_(std::move(members)),
        rank_(rank),
        connection_(std::move(connection)),
        opts_(opts),
        transport_(std::move(transport)),
        work_(ioc_.get_executor()) {
    validate(opts_);
    if (members_.empty()) throw error(errc::invalid_argument, "collective::ring: no members");
    if (rank_ >= members_.size())
      throw error(errc::invalid_argument, "collective::ring: rank " + std::to_string(rank_) + " of a ring of " +
                                              std::to_string(members_.size()) + " members");
    std::set<std::string> seen;
    for (const auto& m : members_)
      if (m.identity.empty() || !seen.insert(m.identity).second)
        throw error(errc::invalid_argument, "collective::ring: member identity '" + m.identity + "' is " +
                                                (m.identity.empty() ? "empty" : "repeated"));
  }

  ~ring() {
    close();
    // A transport may still hold work on this context from another thread (inproc completes
    // this ring's sends from the receiver's thread): let it end, so that the context outlives it.
    work_.reset();
    ioc_.restart();
    ioc_.run_for(std::chrono::seconds(1));
  }

  ring(const ring&) = delete;
  ring& operator=(const ring&) = delete;

  std::size_t rank() const noexcept { return rank_; }
  std::size_t size() const noexcept { return members_.size(); }
  const std::string& identity() const noexcept { return members_[rank_].identity; }
  /// @returns the segment this rank reduces and owns.
  std::size_t owned_segment() const noexcept { return (rank_ + 1) % size(); }
  /// @returns the elements of an @p n-element buffer this rank reduces and owns.
  segment owned(std::size_t n) const noexcept { return segment_of(owned_segment(), n, size()); }
  /// @returns whether connect() succeeded and no collective has failed since.
  bool connected() const noexcept { return size() == 1 || (next_ && prev_ && next_->is_open() && prev_->is_open()); }

  /// Listens at this member's address, dials the successor (again and again while nobody
  /// listens there) and accepts the predecessor, within ring_options::connect_timeout.
  /// @throws dsgd::error errc::timed_out naming the neighbour missing at the deadline,
  ///         errc::handshake_failed where the successor refused this member (another token)
  void connect() {
    if (size() == 1 || connected()) return;
    close();
    closed_ = false;
    const auto deadline = std::chrono::steady_clock::now() + opts_.connect_timeout;
    const auto& me = members_[rank_];
    const auto& next = members_[(rank_ + 1) % size()];
    const auto& prev = members_[(rank_ + size() - 1) % size()];
    auto listening = connection_;
    listening.identity = me.identity;
    listening.accept_peer = [who = prev.identity](std::string_view peer) { return peer == who; };
    listening.frame_timeout = opts_.step_timeout;
    listener_ = transport_.listen(ioc_.get_executor(), me.address, listening);
    listener_->start([this](std::shared_ptr<connection_type> c) {
      if (prev_ && prev_->is_open()) c->close();  // one predecessor at a time
      else prev_ = std::move(c);
    });
    auto dialing = connection_;
    dialing.identity = me.identity;
    dialing.accept_peer = [who = next.identity](std::string_view peer) { return peer == who; };
    dialing.frame_timeout = opts_.step_timeout;
    auto backoff = std::chrono::milliseconds(10);
    while (!next_) {
      // The attempt's state outlives this frame: at the deadline connect() throws without
      // waiting for an attempt in flight, so the deadline is the bound; no attempt outlasts it.
      struct attempt {
        bool done = false;
        error_code ec;
        std::shared_ptr<connection_type> conn;
      };
      auto a = std::make_shared<attempt>();
      auto once = dialing;
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      once.handshake_timeout = std::max(std::chrono::milliseconds(1), std::min(once.handshake_timeout, left));
      transport_.async_connect(ioc_.get_executor(), next.address, once,
                               [a](error_code ec, std::shared_ptr<connection_type> c) {
                                 *a = {true, ec, std::move(c)};
                               });
      if (!run_until([&a] { return a->done; }, deadline))
        fail_connect(errc::timed_out, "could not reach " + next.identity + " (its successor) at " +
                                          next.address.to_string() + " within " +
                                          std::to_string(opts_.connect_timeout.count()) + " ms");
      if (!a->ec) {
        next_ = std::move(a->conn);
        break;
      }
      if (a->ec == make_error_code(errc::handshake_failed))
        fail_connect(errc::handshake_failed, next.identity + " (its successor) at " + next.address.to_string() +
                                                 " refused the handshake (" + a->ec.message() +
                                                 "): every member needs the same cluster token");
      if (std::chrono::steady_clock::now() + backoff >= deadline)
        fail_connect(errc::timed_out, "could not reach " + next.identity + " (its successor) at " +
                                          next.address.to_string() + " within " +
                                          std::to_string(opts_.connect_timeout.count()) + " ms: " + a->ec.message());
      ioc_.run_for(backoff);  // the listener keeps accepting meanwhile
      backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
    }
    if (!run_until([this] { return prev_ != nullptr; }, deadline))
      fail_connect(errc::timed_out, prev.identity + " (its predecessor) did not connect to " + me.address.to_string() +
                                        " within " + std::to_string(opts_.connect_timeout.count()) + " ms");
    listener_->close();
    listener_.reset();
  }

  /// Sums @p data over the ranks into each rank's owned segment (see the class). @p step names
  /// the training step in frames and errors.
  /// @throws dsgd::error errc::timed_out, errc::peer_lost or errc::bad_frame (see the class)
  void reduce_scatter(std::span<float> data, std::uint64_t step) {
    const std::size_t n = size(), r = rank_;
    run_collective(detail::phase::reduce_scatter, step, [&](std::uint64_t call, auto deadline) {
      for (std::size_t s = 0; s + 1 < n; ++s)
        exchange(detail::phase::reduce_scatter, call, step, s, data, (r + n - s) % n, (r + 2 * n - s - 1) % n, true,
                 deadline);
    });
  }

  /// Copies each segment of @p data from its owner to every rank (see the class).
  /// @throws dsgd::error as reduce_scatter()
  void all_gather(std::span<float> data, std::uint64_t step) {
    const std::size_t n = size(), r = rank_;
    run_collective(detail::phase::all_gather, step, [&](std::uint64_t call, auto deadline) {
      for (std::size_t s = 0; s + 1 < n; ++s)
        exchange(detail::phase::all_gather, call, step, s, data, (r + 1 + n - s) % n, (r + n - s) % n, false, deadline);
    });
  }

  /// Copies @p data from rank @p root to every rank, forwarded along the ring.
  /// @throws dsgd::error as reduce_scatter(), errc::invalid_argument for a root outside the ring
  void broadcast(std::span<float> data, std::size_t root, std::uint64_t step) {
    if (root >= size())
      throw error(errc::invalid_argument, "collective::ring::broadcast: root " + std::to_string(root) +
                                              " of a ring of " + std::to_string(size()) + " members");
    const std::size_t hops = (rank_ + size() - root) % size();  // this rank's distance from the root
    run_collective(detail::phase::broadcast, step, [&](std::uint64_t call, auto deadline) {
      detail::expected_frame f{detail::phase::broadcast, call, step, 0, std::uint32_t(root), data.size_bytes()};
      transfer x;
      if (hops != 0) {
        receive(x, f, data, false);
        wait(x, deadline, f);
      }
      if (hops + 1 != size()) {
        send(x, f, data);
        wait(x, deadline, f);
      }
    });
  }

  /// Closes the connections (and the listener); a later connect() makes them again.
  void close() {
    closed_ = true;
    if (listener_) listener_->close();
    listener_.reset();
    if (next_) next_->close();
    if (prev_) prev_->close();
    // Let the closed connections' pending handlers run while this object still lives.
    ioc_.restart();
    ioc_.poll();
    next_.reset();
    prev_.reset();
  }

 private:
  // One round's send and receive, their completions and the receive's progress.
  struct transfer {
    int pending = 0;
    bool sent = true, received = true;
    error_code send_ec, receive_ec;
    std::string why;      // what a mismatching frame got wrong
    detail::incoming in;  // the message expected, and how much of it is in
    float* into = nullptr;
    bool add = false;
    std::size_t added = 0;  // floats added from scratch_ so far
  };

  std::string where(detail::phase kind, std::uint64_t step, std::uint64_t round) const {
    return identity() + " (rank " + std::to_string(rank_) + " of " + std::to_string(size()) +
           "): " + detail::name_of(kind) + " at step " + std::to_string(step) +
           (kind == detail::phase::broadcast ? std::string() : ", round " + std::to_string(round));
  }

  template <class Body>
  void run_collective(detail::phase kind, std::uint64_t step, Body body) {
    if (size() == 1) return;
    // Only this end's state: a neighbour that has finished and closed is found by the
    // operations that need it (a member's last broadcast receives only).
    if (closed_ || !next_ || !prev_)
      throw error(errc::peer_lost, where(kind, step, 0) + ": the ring is not connected" +
                                       (broken_.empty() ? std::string(" (connect() first)") : " (" + broken_ + ")"));
    body(++calls_, std::chrono::steady_clock::now() + opts_.step_timeout);
  }

  // Round @p s: sends segment @p out of @p data to the successor and receives segment @p in
  // from the predecessor, added into data (reduce-scatter) or copied (all-gather).
  void exchange(detail::phase kind, std::uint64_t call, std::uint64_t step, std::size_t s, std::span<float> data,
                std::size_t out, std::size_t in, bool add, std::chrono::steady_clock::time_point deadline) {
    const std::size_t n = data.size(), parts = size();
    const segment o = segment_of(out, n, parts), i = segment_of(in, n, parts);
    const detail::expected_frame send_frame{
        kind, call, step, std::uint32_t(s), std::uint32_t(out), o.size() * sizeof(float)};
    const detail::expected_frame receive_frame{
        kind, call, step, std::uint32_t(s), std::uint32_t(in), i.size() * sizeof(float)};
    if (add && scratch_.size() < i.size()) scratch_.resize(i.size());
    transfer x;
    send(x, send_frame, data.subspan(o.begin, o.size()));
    receive(x, receive_frame, data.subspan(i.begin, i.size()), add);
    wait(x, deadline, receive_frame);
  }

  void send(transfer& x, const detail::expected_frame& f, std::span<const float> bytes) {
    x.sent = false;
    ++x.pending;
    next_->async_send(detail::header_of(f), boost::asio::buffer(bytes.data(), bytes.size_bytes()), [&x](error_code ec) {
      --x.pending;
      x.sent = true;
      x.send_ec = ec;
    });
  }

  void receive(transfer& x, const detail::expected_frame& f, std::span<float> into, bool add) {
    x.received = false;
    x.in = detail::incoming(f);
    x.into = into.data();
    x.add = add;
    x.added = 0;
    receive_next(x);
  }

  void receive_next(transfer& x) {
    ++x.pending;
    prev_->async_receive(
        [this, &x](const transport::frame_header& h, error_code& ec) -> boost::asio::mutable_buffer {
          x.why = x.in.accept(h);
          if (!x.why.empty()) {
            ec = make_error_code(errc::bad_frame);
            return {};
          }
          auto* base = reinterpret_cast<char*>(x.add ? scratch_.data() : x.into);
          return boost::asio::buffer(base + h.chunk_offset, static_cast<std::size_t>(h.payload_length));
        },
        [this, &x](error_code ec, transport::frame_header h) {
          --x.pending;
          if (ec) {
            x.receive_ec = ec;
            x.received = true;
            return;
          }
          const bool whole = x.in.arrived(h);
          if (x.add) {  // add what has come in, a chunk at a time, while the rest arrives
            const std::size_t upto = static_cast<std::size_t>(x.in.received() / sizeof(float));
            for (std::size_t e = x.added; e < upto; ++e) x.into[e] += scratch_[e];
            x.added = upto;
          }
          if (whole) x.received = true;
          else receive_next(x);
        });
  }

  // Waits for @p x's send and receive; a late or failed one closes the ring and throws.
  void wait(transfer& x, std::chrono::steady_clock::time_point deadline, const detail::expected_frame& f) {
    const bool in_time = run_until([&x] { return (x.sent && x.received) || x.send_ec || x.receive_ec; }, deadline);
    if (in_time && !x.send_ec && !x.receive_ec) return;
    const auto& next = members_[(rank_ + 1) % size()].identity;
    const auto& prev = members_[(rank_ + size() - 1) % size()].identity;
    std::string what = where(f.kind, f.step, f.round) + ": ";
    errc code = errc::peer_lost;
    if (!in_time) {
      code = errc::timed_out;
      what += (!x.received ? "nothing arrived from " + prev + " (its predecessor)"
                           : "the send to " + next + " (its successor) did not complete") +
              " within " + std::to_string(opts_.step_timeout.count()) + " ms (ring_options::step_timeout)";
    } else if (x.receive_ec == make_error_code(errc::bad_frame) && !x.why.empty()) {
      code = errc::bad_frame;
      what += prev + " (its predecessor) sent a frame of another collective: " + x.why +
              " (every member must make the same collectives on buffers of the same size)";
    } else if (x.receive_ec) {
      what += "connection from " + prev + " (its predecessor) lost: " +
              (prev_ && !prev_->close_reason().empty() ? prev_->close_reason() : x.receive_ec.message());
    } else {
      what += "sending to " + next + " (its successor) failed: " +
              (next_ && !next_->close_reason().empty() ? next_->close_reason() : x.send_ec.message());
    }
    broken_ = what;
    if (next_) next_->close();
    if (prev_) prev_->close();
    drain([&x] { return x.pending == 0; });
    closed_ = true;
    throw error(code, what);
  }

  [[noreturn]] void fail_connect(errc code, const std::string& why) {
    std::string what = identity() + " (rank " + std::to_string(rank_) + " of " + std::to_string(size()) +
                       "): connecting the collective ring: " + why;
    broken_ = what;
    close();
    throw error(code, what);
  }

  // Runs the I/O until @p done or @p deadline. @returns done()
  template <class Done>
  bool run_until(Done done, std::chrono::steady_clock::time_point deadline) {
    ioc_.restart();
    while (!done()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      ioc_.run_one_until(deadline);
    }
    return true;
  }

  // After closing: runs the aborted operations' handlers (they refer to the caller's frame).
  template <class Done>
  void drain(Done done) {
    run_until(done, std::chrono::steady_clock::now() + std::chrono::seconds(10));
  }

  std::vector<member> members_;
  std::size_t rank_;
  options_type connection_;
  ring_options opts_;
  T transport_;
  boost::asio::io_context ioc_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::shared_ptr<listener_type> listener_;
  std::shared_ptr<connection_type> next_, prev_;  // to the successor (sends), from the predecessor
  std::vector<float> scratch_;                    // a reduce-scatter's incoming partial sums
  std::uint64_t calls_ = 0;                       // collectives so far: every member counts the same
  bool closed_ = true;
  std::string broken_;  // why the last collective failed
};

}  // namespace dsgd::collective
