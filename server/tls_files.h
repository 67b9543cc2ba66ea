// Loading the server's TLS certificate and key, checked before gRPC sees them
// (gRPC only says that it could not listen, which reads like "address in
// use").
#ifndef IOSFARM_SERVER_TLS_FILES_H_
#define IOSFARM_SERVER_TLS_FILES_H_

#include <string>

#include "common/status.h"

namespace iosfarm::server {

struct TlsPem {
  std::string cert_chain;
  std::string private_key;
};

// Reads both PEM files and checks that the first holds a certificate, the
// second a private key, and that the key belongs to the certificate.
// NotFound for a missing file, InvalidArgument naming the file and what is
// wrong otherwise.
StatusOr<TlsPem> LoadServerTls(const std::string& cert_file, const std::string& key_file);

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_TLS_FILES_H_
