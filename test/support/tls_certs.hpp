// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support: certificate authorities and task certificates made at run time with the OpenSSL
// C API (EC P-256, SHA-256) and written as PEM files to a fresh temporary directory, so that no
// key is ever checked in. Used by the TLS tests and by the push/pull benchmark's --tls variant.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>

namespace dsgd::test {

// A directory of PEM files: CAs made with add_ca(), certificates they issue with add_cert().
// The directory and everything in it are removed on destruction.
class cert_dir {
 public:
  cert_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "dsgd-tls-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cert_dir: mkdtemp failed");
    dir_ = pattern;
  }
  ~cert_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  cert_dir(const cert_dir&) = delete;
  cert_dir& operator=(const cert_dir&) = delete;

  // The directory holding the files.
  const std::filesystem::path& path() const { return dir_; }
  // <dir>/<name>.pem: a certificate (a CA's or a task's).
  std::string cert(const std::string& name) const { return (dir_ / (name + ".pem")).string(); }
  // <dir>/<name>.key: its private key.
  std::string key(const std::string& name) const { return (dir_ / (name + ".key")).string(); }

  // A self-signed CA named @p name (subject CN = name).
  void add_ca(const std::string& name) {
    auto k = new_key();
    auto x = make_cert(name, k.get(), nullptr, k.get(), true, -3600, 30L * 86400, {});
    write(name, x.get(), k.get());
    cas_[name] = {std::move(k), std::move(x)};
  }

  // A task certificate @p name signed by CA @p ca, subject CN @p common_name, with
  // extendedKeyUsage serverAuth + clientAuth and subjectAltName @p alt_names (OpenSSL syntax,
  // "DNS:localhost,IP:127.0.0.1"; empty for none). @p expired makes one that expired yesterday.
  void add_cert(const std::string& name, const std::string& ca, const std::string& common_name,
                const std::string& alt_names = "", bool expired = false) {
    const auto& issuer = cas_.at(ca);
    auto k = new_key();
    auto x = make_cert(common_name, k.get(), issuer.cert.get(), issuer.key.get(), false, expired ? -2L * 86400 : -3600,
                       expired ? -86400 : 30L * 86400, alt_names);
    write(name, x.get(), k.get());
  }

 private:
  struct key_deleter {
    void operator()(EVP_PKEY* k) const noexcept { EVP_PKEY_free(k); }
  };
  struct x509_deleter {
    void operator()(X509* x) const noexcept { X509_free(x); }
  };
  using key_ptr = std::unique_ptr<EVP_PKEY, key_deleter>;
  using x509_ptr = std::unique_ptr<X509, x509_deleter>;
  struct authority {
    key_ptr key;
    x509_ptr cert;
  };

  static void check(bool ok, const char* what) {
    if (!ok) throw std::runtime_error(std::string("cert_dir: ") + what + " failed");
  }

  static key_ptr new_key() {
    key_ptr k(EVP_EC_gen("P-256"));
    check(k != nullptr, "EC P-256 key generation");
    return k;
  }

  static void add_ext(X509* x, X509V3_CTX* ctx, int nid, const std::string& value) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, ctx, nid, value.c_str());
    check(ext != nullptr, "making an extension");
    check(X509_add_ext(x, ext, -1) == 1, "adding an extension");
    X509_EXTENSION_free(ext);
  }

  x509_ptr make_cert(const std::string& cn, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key, bool is_ca,
                     long not_before_s, long not_after_s, const std::string& alt_names) {
    x509_ptr x(X509_new());
    check(x != nullptr, "X509_new");
    X509_set_version(x.get(), 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x.get()), ++serial_);
    X509_gmtime_adj(X509_getm_notBefore(x.get()), not_before_s);
    X509_gmtime_adj(X509_getm_notAfter(x.get()), not_after_s);
    check(X509_set_pubkey(x.get(), key) == 1, "X509_set_pubkey");
    X509_NAME* name = X509_get_subject_name(x.get());
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("dsgd test"), -1, -1, 0);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
    X509_set_issuer_name(x.get(), issuer != nullptr ? X509_get_subject_name(issuer) : name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer != nullptr ? issuer : x.get(), x.get(), nullptr, nullptr, 0);
    add_ext(x.get(), &ctx, NID_subject_key_identifier, "hash");
    if (is_ca) {
      add_ext(x.get(), &ctx, NID_basic_constraints, "critical,CA:TRUE");
      add_ext(x.get(), &ctx, NID_key_usage, "critical,keyCertSign,cRLSign");
    } else {
      add_ext(x.get(), &ctx, NID_authority_key_identifier, "keyid:always");
      add_ext(x.get(), &ctx, NID_basic_constraints, "critical,CA:FALSE");
      add_ext(x.get(), &ctx, NID_key_usage, "critical,digitalSignature");
      add_ext(x.get(), &ctx, NID_ext_key_usage, "serverAuth,clientAuth");
      if (!alt_names.empty()) add_ext(x.get(), &ctx, NID_subject_alt_name, alt_names);
    }
    check(X509_sign(x.get(), issuer_key, EVP_sha256()) > 0, "X509_sign");
    return x;
  }

  void write(const std::string& name, X509* x, EVP_PKEY* k) const {
    std::FILE* f = std::fopen(cert(name).c_str(), "w");
    check(f != nullptr, "opening a certificate file");
    const bool cert_ok = PEM_write_X509(f, x) == 1;
    std::fclose(f);
    check(cert_ok, "PEM_write_X509");
    f = std::fopen(key(name).c_str(), "w");
    check(f != nullptr, "opening a key file");
    const bool key_ok = PEM_write_PrivateKey(f, k, nullptr, nullptr, 0, nullptr, nullptr) == 1;
    std::fclose(f);
    check(key_ok, "PEM_write_PrivateKey");
  }

  std::filesystem::path dir_;
  std::map<std::string, authority> cas_;
  long serial_ = 0;
};

}  // namespace dsgd::test
