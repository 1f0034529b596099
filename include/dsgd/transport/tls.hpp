// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Optional TLS for the TCP transport (tcp_options::tls): mutual certificate verification
/// against a cluster CA, TLS 1.2 or newer, through Boost.Asio SSL (OpenSSL). The options name
/// PEM files or carry PEM text; the OpenSSL context built from them is shared by every copy of
/// the options. The protocol and how to make certificates are in docs/transport.md ("TLS").
#pragma once

#include <utility>  // Boost 1.74's Asio headers use std::exchange without including <utility>

#include <dsgd/error.hpp>

#include <boost/asio/ssl/context.hpp>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace dsgd::transport {

/// The oldest TLS version a connection accepts.
enum class tls_version {
  v1_2,  ///< TLS 1.2 or 1.3 (1.3 whenever both ends have it)
  v1_3,  ///< TLS 1.3 only
};

/// What a peer's certificate must name, beyond being signed by the cluster CA.
enum class peer_name_check {
  /// Nothing: any certificate the CA signed is accepted (the CA is the cluster's own).
  any,
  /// The certificate's subject CN, or one of its subjectAltName DNS or URI entries, must equal
  /// the task identity the peer proves in the token handshake ("ps:0", "worker:3"): a stolen
  /// worker certificate cannot then pose as a ps.
  task_identity,
};

namespace detail {

/// The context cache behind tls_options::context_cache.
struct tls_context_cache {
  std::mutex mutex;
  std::shared_ptr<boost::asio::ssl::context> context;
  std::vector<std::string> built_from;  // the fields the context was built from
};

}  // namespace detail

/// TLS settings of a task (tcp_options::tls). Every field pair is "file, or PEM text": the file
/// is read when it is named, the text is used otherwise. Keys must not be encrypted (protect
/// the file with its permissions instead).
struct tls_options {
  std::string ca_file;                          ///< PEM file of the CA certificate(s) every peer's chain must end at
  std::string ca_pem;                           ///< or the CA certificate(s) as PEM text
  std::string cert_file;                        ///< PEM file of this task's certificate, then any intermediates
  std::string cert_pem;                         ///< or that chain as PEM text
  std::string key_file;                         ///< PEM file of this task's private key (unencrypted)
  std::string key_pem;                          ///< or the key as PEM text
  tls_version min_version = tls_version::v1_2;  ///< oldest protocol version accepted
  peer_name_check peer_names = peer_name_check::any;  ///< what a peer's certificate must name
  /// The OpenSSL context built from the fields above, shared by every copy of these options:
  /// built on first use (a listener's creation, a connect), rebuilt only if the fields change.
  std::shared_ptr<detail::tls_context_cache> context_cache = std::make_shared<detail::tls_context_cache>();
};

namespace detail {

/// The last OpenSSL error of this thread as text (empty when there is none); clears the queue.
inline std::string openssl_error_text() {
  std::string text;
  while (const unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!text.empty()) text += "; ";
    text += buf;
  }
  return text;
}

/// Where a piece of PEM comes from, for error messages: "cert_file 'task.pem'" or "cert_pem".
inline std::string pem_source(std::string_view field, const std::string& file) {
  return file.empty() ? "tls_options." + std::string(field) + "_pem"
                      : "tls_options." + std::string(field) + "_file '" + file + "'";
}

/// The PEM text of a field: the file's contents when it is named, else the inline text.
inline std::string load_pem(std::string_view field, const std::string& file, const std::string& pem) {
  if (file.empty()) {
    if (pem.empty())
      throw error(errc::invalid_argument,
                  "tls_options: neither " + std::string(field) + "_file nor " + std::string(field) + "_pem is set");
    return pem;
  }
  errno = 0;
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw error(errc::not_found,
                pem_source(field, file) + ": cannot open: " + (errno != 0 ? std::strerror(errno) : "unknown error"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw error(errc::not_found, pem_source(field, file) + ": read error");
  return text;
}

struct bio_deleter {
  void operator()(BIO* b) const noexcept { BIO_free(b); }
};
struct x509_deleter {
  void operator()(X509* x) const noexcept { X509_free(x); }
};
struct pkey_deleter {
  void operator()(EVP_PKEY* k) const noexcept { EVP_PKEY_free(k); }
};
using bio_ptr = std::unique_ptr<BIO, bio_deleter>;
using x509_ptr = std::unique_ptr<X509, x509_deleter>;

inline bio_ptr memory_bio(const std::string& text) {
  return bio_ptr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

/// Every certificate in a PEM text, in order; throws naming @p source when there is none.
inline std::vector<x509_ptr> read_certificates(const std::string& text, const std::string& source) {
  std::vector<x509_ptr> certs;
  auto bio = memory_bio(text);
  ERR_clear_error();
  while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) certs.emplace_back(x);
  const unsigned long last = ERR_peek_last_error();
  // Running out of PEM blocks ends the loop with "no start line"; anything else is damage.
  if (last != 0 && !(ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE))
    throw error(errc::invalid_argument, source + ": malformed PEM certificate (" + openssl_error_text() + ")");
  ERR_clear_error();
  if (certs.empty()) throw error(errc::invalid_argument, source + ": holds no PEM certificate");
  return certs;
}

/// Builds a fresh context from @p o (see make_tls_context()).
inline std::shared_ptr<boost::asio::ssl::context> build_tls_context(const tls_options& o) {
  namespace ssl = boost::asio::ssl;
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls);
  SSL_CTX* native = ctx->native_handle();
  const int min = o.min_version == tls_version::v1_3 ? TLS1_3_VERSION : TLS1_2_VERSION;
  if (SSL_CTX_set_min_proto_version(native, min) != 1)
    throw error(errc::invalid_argument, "tls_options: cannot set the minimum TLS version: " + openssl_error_text());
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_compression);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
  // Frames carry their lengths, so a peer closing TCP without close_notify between frames is a
  // clean end and inside one is caught by the framing; report it as eof, as plain TCP does.
  SSL_CTX_set_options(native, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
  SSL_CTX_set_num_tickets(native, 0);  // connections are long-lived and never resumed
  static constexpr unsigned char session_context[] = "dsgd";
  SSL_CTX_set_session_id_context(native, session_context, sizeof session_context - 1);

  const auto ca_source = pem_source("ca", o.ca_file);
  for (auto& ca : read_certificates(load_pem("ca", o.ca_file, o.ca_pem), ca_source))
    if (X509_STORE_add_cert(SSL_CTX_get_cert_store(native), ca.get()) != 1)
      throw error(errc::invalid_argument, ca_source + ": cannot add a CA certificate: " + openssl_error_text());

  const auto cert_source = pem_source("cert", o.cert_file);
  auto chain = read_certificates(load_pem("cert", o.cert_file, o.cert_pem), cert_source);
  if (X509_cmp_current_time(X509_get0_notAfter(chain.front().get())) < 0)
    throw error(errc::invalid_argument, cert_source + ": the certificate has expired");
  if (SSL_CTX_use_certificate(native, chain.front().get()) != 1)
    throw error(errc::invalid_argument, cert_source + ": certificate rejected: " + openssl_error_text());
  for (std::size_t i = 1; i < chain.size(); ++i)
    if (SSL_CTX_add1_chain_cert(native, chain[i].get()) != 1)
      throw error(errc::invalid_argument, cert_source + ": intermediate certificate " + std::to_string(i) +
                                              " rejected: " + openssl_error_text());

  const auto key_source = pem_source("key", o.key_file);
  const auto key_text = load_pem("key", o.key_file, o.key_pem);
  auto bio = memory_bio(key_text);
  ERR_clear_error();
  // A callback that supplies no password: an encrypted key fails here instead of prompting.
  auto no_password = [](char*, int, int, void*) -> int { return 0; };
  std::unique_ptr<EVP_PKEY, pkey_deleter> key(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_password, nullptr));
  if (!key)
    throw error(errc::invalid_argument,
                key_source + ": no readable unencrypted PEM private key (" + openssl_error_text() + ")");
  if (SSL_CTX_use_PrivateKey(native, key.get()) != 1 || SSL_CTX_check_private_key(native) != 1)
    throw error(errc::invalid_argument, key_source + ": the key does not match the certificate in " + cert_source +
                                            " (" + openssl_error_text() + ")");

  // Mutual verification: a server requires a client certificate, a client checks the server's.
  ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  return ctx;
}

inline std::vector<std::string> tls_key(const tls_options& o) {
  return {o.ca_file,
          o.ca_pem,
          o.cert_file,
          o.cert_pem,
          o.key_file,
          o.key_pem,
          std::to_string(static_cast<int>(o.min_version))};
}

/// The names a certificate gives its subject: subjectAltName DNS and URI entries, then CNs.
inline std::vector<std::string> certificate_names(X509* cert) {
  std::vector<std::string> names;
  if (cert == nullptr) return names;
  auto* alt = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (alt != nullptr) {
    for (int i = 0; i < sk_GENERAL_NAME_num(alt); ++i) {
      const GENERAL_NAME* g = sk_GENERAL_NAME_value(alt, i);
      if (g->type == GEN_DNS || g->type == GEN_URI) {
        const ASN1_IA5STRING* s = g->type == GEN_DNS ? g->d.dNSName : g->d.uniformResourceIdentifier;
        names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                           static_cast<std::size_t>(ASN1_STRING_length(s)));
      }
    }
    GENERAL_NAMES_free(alt);
  }
  const X509_NAME* subject = X509_get_subject_name(cert);
  for (int i = -1; (i = X509_NAME_get_index_by_NID(subject, NID_commonName, i)) >= 0;) {
    unsigned char* utf8 = nullptr;
    const int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i)));
    if (n >= 0) names.emplace_back(reinterpret_cast<const char*>(utf8), static_cast<std::size_t>(n));
    OPENSSL_free(utf8);
  }
  return names;
}

/// A certificate's subject as one line ("CN=worker:0, O=dsgd"), for log messages.
inline std::string subject_line(X509* cert) {
  if (cert == nullptr) return "(no certificate)";
  bio_ptr out(BIO_new(BIO_s_mem()));
  X509_NAME_print_ex(out.get(), X509_get_subject_name(cert), 0, XN_FLAG_ONELINE & ~ASN1_STRFLGS_ESC_MSB);
  char* data = nullptr;
  const long n = BIO_get_mem_data(out.get(), &data);
  return n > 0 ? std::string(data, static_cast<std::size_t>(n)) : std::string("(empty subject)");
}

}  // namespace detail

/// Builds the OpenSSL context that @p o describes: the CA certificates as the only trust
/// anchors, this task's certificate chain and key, TLS @p o.min_version or newer, and
/// verification of the peer's certificate in both directions (a server requires one).
/// @throws dsgd::error naming the file (or PEM field) that is missing, unreadable, malformed,
///         expired, or whose key does not match its certificate: errc::not_found when a file
///         cannot be opened, errc::invalid_argument otherwise
/// @code
///   auto ctx = dsgd::transport::make_tls_context({.ca_file = "ca.pem", .cert_file = "ps0.pem",
///                                                 .key_file = "ps0.key"});
/// @endcode
inline std::shared_ptr<boost::asio::ssl::context> make_tls_context(const tls_options& o) {
  return detail::build_tls_context(o);
}

/// The context shared by @p o and its copies: built on the first call, again only when the
/// fields changed since. Thread-safe.
/// @throws dsgd::error as make_tls_context() does
inline std::shared_ptr<boost::asio::ssl::context> shared_tls_context(const tls_options& o) {
  if (!o.context_cache) return make_tls_context(o);
  auto key = detail::tls_key(o);
  std::lock_guard lock(o.context_cache->mutex);
  if (!o.context_cache->context || o.context_cache->built_from != key) {
    o.context_cache->context = make_tls_context(o);
    o.context_cache->built_from = std::move(key);
  }
  return o.context_cache->context;
}

}  // namespace dsgd::transport
