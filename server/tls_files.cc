#include "server/tls_files.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>

#include "common/strings.h"
#include "proto/rpc_util.h"

namespace iosfarm::server {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};

std::unique_ptr<BIO, BioFree> MemoryBio(const std::string& text) {
  return std::unique_ptr<BIO, BioFree>(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

}  // namespace

StatusOr<TlsPem> LoadServerTls(const std::string& cert_file, const std::string& key_file) {
  TlsPem pem;
  ASSIGN_OR_RETURN(pem.cert_chain, rpc::ReadFileToString(cert_file));
  ASSIGN_OR_RETURN(pem.private_key, rpc::ReadFileToString(key_file));
  ERR_clear_error();
  auto cert_bio = MemoryBio(pem.cert_chain);
  std::unique_ptr<X509, X509Free> cert(
      PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  if (!cert) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        StrCat("--tls-cert '", cert_file, "' holds no PEM certificate"));
  }
  auto key_bio = MemoryBio(pem.private_key);
  std::unique_ptr<EVP_PKEY, KeyFree> key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (!key) {
    ERR_clear_error();
    return absl::InvalidArgumentError(StrCat("--tls-key '", key_file,
                                             "' holds no PEM private key (or it is encrypted)"));
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(StrCat("--tls-key '", key_file,
                                             "' does not belong to the certificate in '",
                                             cert_file, "'"));
  }
  return pem;
}

}  // namespace iosfarm::server
