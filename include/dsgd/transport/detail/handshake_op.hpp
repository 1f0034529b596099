// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The connect and the handshake of a tcp_connection: TLS first when configured, then the token
/// exchange (hellos, proofs) and the shared-memory negotiation (offers, answers), as one
/// operation with named steps. Out-of-line members of tcp_connection (asio_tcp.hpp).
// IWYU pragma: private, include <dsgd/transport/asio_tcp.hpp>
#pragma once

#include <dsgd/transport/asio_tcp.hpp>

#include <boost/asio/error.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>

namespace dsgd::transport::detail {

// One handshake in flight. It owns the messages being read and written and travels inside the
// pending I/O (moved from handler to handler, never stored in the connection), so that a
// handler holding the connection makes no cycle. Both sides write before they read, and every
// message fits any socket buffer, so the symmetric exchange cannot deadlock. A ring is made
// only once the peer has proved the token: an unauthenticated peer can make this side reserve
// no memory.
class handshake_op {
 public:
  using done_type = std::unique_ptr<erased_completion<error_code>>;

  // Runs the handshake on @p conn as @p side under options().handshake_timeout.
  static void start(std::shared_ptr<tcp_connection> conn, handshake::role side, done_type done) {
    auto& c = *conn;
    if (c.closed_ || c.authenticated_ || c.handshaking_) {
      const auto ec =
          c.closed_ ? c.io_error(boost::asio::error::not_connected) : make_error_code(errc::invalid_argument);
      done->complete(false, ec);
      return;
    }
    c.handshaking_ = true;
    std::unique_ptr<handshake_op> op(new handshake_op(std::move(conn), std::move(done)));
    auto& o = *op;
    try {
      o.hs_.emplace(side, c.options_.identity, c.options_.token);
    } catch (const error& e) {
      return finish(std::move(op), e.code(), e.what());
    }
    c.arm(c.read_timer_, c.read_seq_, c.options_.handshake_timeout,
          "handshake timed out after " + std::to_string(c.options_.handshake_timeout.count()) + " ms");
    if (!c.tls_) return run(std::move(op), step::send_hello, {});
    c.tls_->async_handshake(side == handshake::role::initiator ? boost::asio::ssl::stream_base::client
                                                               : boost::asio::ssl::stream_base::server,
                            [op = std::move(op)](error_code ec) mutable { on_tls(std::move(op), ec); });
  }

 private:
  // The token handshake's steps, in order; each send_ or read_ step is one write or read.
  enum class step {
    send_hello,    // our hello (version, role, identity, nonce)
    read_hello,    // the peer's
    check_hello,   // its version, role, identity and accept_peer; then send our proof
    read_proof,    // the peer's HMAC over both hellos
    check_proof,   // it knows the token; then offer our ring (or none)
    read_offer,    // the peer's ring offer
    answer_offer,  // map its ring when allowed; then say whether we did
    read_answer,   // whether the peer mapped ours
    check_answer,  // keep or drop our ring; authenticated
  };

  handshake_op(std::shared_ptr<tcp_connection> conn, done_type done) : conn_(std::move(conn)), done_(std::move(done)) {}

  static void on_tls(std::unique_ptr<handshake_op> op, error_code ec) {
    auto& o = *op;
    auto& c = *o.conn_;
    if (!ec) return run(std::move(op), step::send_hello, {});  // the token handshake, inside TLS
    if (c.closed_) {
      const auto why = c.io_error(ec);
      return finish(std::move(op), why, "TLS handshake aborted: " + why.message());
    }
    finish(std::move(op), errc::handshake_failed, "TLS handshake failed: " + o.tls_failure(ec));
  }

  // Runs @p s, the step after an I/O that ended with @p ec.
  static void run(std::unique_ptr<handshake_op> op, step s, error_code ec) {
    auto& o = *op;
    auto& c = *o.conn_;
    if (ec) return failed(std::move(op), s, ec);
    std::string reason;
    switch (s) {
      case step::send_hello:
        return o.write(std::move(op), o.hs_->hello(), step::read_hello);
      case step::read_hello:
        return o.read(std::move(op), o.peer_hello_, step::check_hello);
      case step::check_hello:
        if (auto e = o.hs_->receive_hello(o.peer_hello_, reason)) return finish(std::move(op), e, reason);
        if (c.options_.accept_peer && !c.options_.accept_peer(o.hs_->peer_identity()))
          return finish(std::move(op), errc::handshake_failed,
                        "unknown peer identity '" + o.hs_->peer_identity() + "'");
        if (c.tls_ && c.options_.tls->peer_names == peer_name_check::task_identity && !o.tls_names_match(reason))
          return finish(std::move(op), errc::handshake_failed, reason);
        o.own_proof_ = o.hs_->proof();
        return o.write(std::move(op), o.own_proof_, step::read_proof);
      case step::read_proof:
        return o.read(std::move(op), o.peer_proof_, step::check_proof);
      case step::check_proof: {
        if (auto e = o.hs_->verify_proof(o.peer_proof_, reason)) return finish(std::move(op), e, reason);
        c.peer_identity_ = o.hs_->peer_identity();
        // A ring the system cannot make (no memory to reserve) only means payloads go inline.
        std::string ignored;
        if (o.shared_memory_eligible()) {
          c.tx_ring_ = shared_ring::create(c.options_.shared_memory.ring_bytes, ignored);
        }
        o.own_offer_ = c.tx_ring_ ? c.tx_ring_->offer().encode() : ring_offer{}.encode();
        return o.write(std::move(op), o.own_offer_, step::read_offer);
      }
      case step::read_offer:
        return o.read(std::move(op), o.peer_offer_, step::answer_offer);
      case step::answer_offer: {
        auto offer = ring_offer::decode(o.peer_offer_, reason);
        if (!offer) return finish(std::move(op), errc::handshake_failed, reason);
        // Mapped only when this side would have offered too (same host, allowed, no TLS), and
        // no larger than the largest payload this side accepts.
        std::string ignored;
        if (offer->bytes > 0 && o.shared_memory_eligible())
          c.rx_ring_ = shared_ring::open(*offer, c.options_.caps.max_payload_bytes, ignored);
        o.own_answer_ = ring_answer::encode(c.rx_ring_.has_value());
        return o.write(std::move(op), o.own_answer_, step::read_answer);
      }
      case step::read_answer:
        return o.read(std::move(op), o.peer_answer_, step::check_answer);
      case step::check_answer: {
        auto mapped = ring_answer::decode(o.peer_answer_, reason);
        if (!mapped) return finish(std::move(op), errc::handshake_failed, reason);
        if (c.tx_ring_) {
          c.tx_ring_->withdraw();  // mapped by the peer, or declined: either way nobody opens it again
          if (!*mapped) c.tx_ring_.reset();
        }
        c.authenticated_ = true;
        return finish(std::move(op), {}, {});
      }
    }
  }

  // An I/O of the handshake failed with @p ec before step @p next: says why in the peer's terms
  // where it can. A peer that closes tells by when it closes what it refused: before its hello
  // it never spoke dsgd (or gave up at once); after the hellos it refused ours (version, role,
  // identity); after the proofs, our proof (a wrong token).
  static void failed(std::unique_ptr<handshake_op> op, step next, error_code ec) {
    auto& o = *op;
    auto& c = *o.conn_;
    if (!c.closed_ && c.tls_ && ec.category() == boost::asio::error::get_ssl_category())
      return finish(std::move(op), errc::handshake_failed,
                    "TLS error during the token handshake: " + o.tls_failure(ec));
    if (ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset ||
        ec == boost::asio::ssl::error::stream_truncated) {
      std::string why;
      switch (next) {
        case step::read_hello:
        case step::check_hello:
          why = "peer closed the connection before its hello (not a dsgd peer, or it gave up at once)";
          break;
        case step::read_proof:
        case step::check_proof:
          why = "peer closed the connection after the hellos (it rejected our protocol version, role or identity)";
          break;
        case step::read_offer:
        case step::answer_offer:
          why = "peer closed the connection after the proofs (it rejected our token: a wrong cluster token?)";
          break;
        default:
          why = "peer closed the connection during the handshake's ring negotiation";
      }
      return finish(std::move(op), errc::handshake_failed, why);
    }
    const auto why = c.io_error(ec);
    finish(std::move(op), why, "handshake I/O error: " + why.message());
  }

  static void finish(std::unique_ptr<handshake_op> op, error_code ec, const std::string& reason) {
    const auto conn = std::move(op->conn_);  // alive until the completion is delivered
    auto done = std::move(op->done_);
    const std::string claimed = ec && op->hs_ ? op->hs_->peer_identity() : std::string();
    op.reset();  // drops the token copy and the nonces
    auto& c = *conn;
    c.disarm(c.read_timer_, c.read_seq_);
    c.handshaking_ = false;
    if (ec) {
      c.close_with(ec, "handshake failed: " + reason);
      c.tx_ring_.reset();  // removes its name if the peer never got to map it
      c.rx_ring_.reset();
      if (!claimed.empty() && c.options_.on_refused) c.options_.on_refused(claimed, reason);
    }
    done->complete(true, ec);
  }

  // The completion of each read and write: the next step, with the operation.
  static auto then(std::unique_ptr<handshake_op> self, step next) {
    return [self = std::move(self), next](error_code e, std::size_t) mutable { run(std::move(self), next, e); };
  }
  template <class Bytes>
  void write(std::unique_ptr<handshake_op> self, const Bytes& bytes, step next) {
    conn_->with_stream(
        [&](auto& s) { boost::asio::async_write(s, boost::asio::buffer(bytes), then(std::move(self), next)); });
  }
  template <class Bytes>
  void read(std::unique_ptr<handshake_op> self, Bytes& bytes, step next) {
    conn_->with_stream(
        [&](auto& s) { boost::asio::async_read(s, boost::asio::buffer(bytes), then(std::move(self), next)); });
  }

  bool shared_memory_eligible() const {
    const auto& c = *conn_;
    if (!c.options_.shared_memory.enabled || c.options_.shared_memory.ring_bytes == 0 || c.tls_) return false;
    const auto local = c.local_endpoint().address();
    return c.remote_.address().is_loopback() || (!local.is_unspecified() && local == c.remote_.address());
  }

  std::string tls_failure(error_code ec) const {
    auto& c = *conn_;
    std::string what;
    if (ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset ||
        ec == boost::asio::ssl::error::stream_truncated)
      what = "the peer closed the connection (it does not speak TLS, or rejected our certificate)";
    else what = ec.message();  // OpenSSL's reason: "certificate verify failed", "tlsv1 alert unknown ca"
    if (!c.tls_verify_failure_.empty()) {
      what += ": " + c.tls_verify_failure_;
    } else if (c.tls_) {
      const long result = SSL_get_verify_result(c.tls_->native_handle());
      if (result != X509_V_OK) what += std::string(": ") + X509_verify_cert_error_string(result);
    }
    return what;
  }

  bool tls_names_match(std::string& reason) const {
    auto& c = *conn_;
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
    x509_ptr peer(SSL_get1_peer_certificate(c.tls_->native_handle()));
#else
    x509_ptr peer(SSL_get_peer_certificate(c.tls_->native_handle()));
#endif
    const auto names = certificate_names(peer.get());
    const auto& identity = hs_->peer_identity();
    if (std::find(names.begin(), names.end(), identity) != names.end()) return true;
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    reason = "the peer proved identity '" + identity + "' but its TLS certificate names only [" + list +
             "] (tls_options::peer_names is task_identity)";
    return false;
  }

  std::shared_ptr<tcp_connection> conn_;
  done_type done_;
  std::optional<handshake> hs_;
  handshake::hello_bytes peer_hello_{};
  handshake::proof_bytes own_proof_{}, peer_proof_{};
  ring_offer::bytes_type own_offer_{}, peer_offer_{};
  ring_answer::bytes_type own_answer_{}, peer_answer_{};
};

}  // namespace dsgd::transport::detail

namespace dsgd::transport {

inline void tcp_connection::start_connect(const endpoint_type& to, done_type done) {
  remote_ = to;
  arm(read_timer_, read_seq_, options_.handshake_timeout,
      "connect timed out after " + std::to_string(options_.handshake_timeout.count()) + " ms");
  socket_.async_connect(to, [self = shared_from_this(), done = std::move(done)](error_code ec) mutable {
    if (ec) {
      const auto why = self->io_error(ec);
      self->close_with(why, "connect failed: " + why.message(), false);
      done->complete(true, why);
      return;
    }
    self->apply_socket_options();
    self->start_handshake(handshake::role::initiator, std::move(done));  // re-arms the deadline
  });
}

inline void tcp_connection::start_handshake(handshake::role side, done_type done) {
  detail::handshake_op::start(shared_from_this(), side, std::move(done));
}

}  // namespace dsgd::transport
