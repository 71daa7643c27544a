// The egress-secrets tests' upstream (secret_upstream.py) as a fixture: a test CA and a server
// certificate for the upstream's names made with openssl, the script run in a container of the
// runtime image on a network of the test's, and what it recorded read back with `docker exec`
// (only the test can: the record lies on a tmpfs of that container).
// Needs EXECMCP_SECRET_UPSTREAM_SCRIPT (the script's path) and docker_test_support.hpp's engine.
#pragma once

#include <sys/stat.h>

#include <cctype>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "../docker_test_support.hpp"

namespace execmcp::docker_test {

// Writes `text` to `path` with `mode` (the upstream runs as the image's user, uid 1000).
inline void write_test_file(const std::string& path, const std::string& text, mode_t mode = 0644) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  ::chmod(path.c_str(), mode);
}

// In `dir`: ca.pem and ca.key (a P-256 test CA, two days), server.pem and server.key (a leaf
// signed by it for `names`, serverAuth). "" or what openssl said.
inline std::string make_test_certs(const std::string& dir, const std::vector<std::string>& names) {
  std::string san = "subjectAltName=";
  for (std::size_t i = 0; i < names.size(); ++i) san += (i ? ",DNS:" : "DNS:") + names[i];
  write_test_file(dir + "/server.ext", san +
                                           "\nbasicConstraints=critical,CA:FALSE\n"
                                           "keyUsage=critical,digitalSignature\n"
                                           "extendedKeyUsage=serverAuth\n");
  const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
  const std::string script =
      "set -e; cd '" + dir + "'; exec 2>openssl.log; " + "openssl req -x509" + ec +
      " -keyout ca.key -out ca.pem -days 2 -subj '/CN=execmcp test CA'"
      " -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign;"
      " openssl req -new" +
      ec + " -keyout server.key -out server.csr -subj '/CN=execmcp test upstream';" +
      " openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial"
      " -out server.pem -days 2 -extfile server.ext;"
      " chmod 644 ca.pem server.pem server.key; echo made";
  if (trim(sh(script)) != "made")
    return "openssl could not make the test certificates: " + read_host_file(dir + "/openssl.log");
  return {};
}

class SecretUpstream {
 public:
  // Starts the upstream on `network` (which exists) under `aliases`, serving HTTPS on 443 and
  // HTTP on 80 with a certificate for the aliases; `auth` is what /need-auth, /git, /simple and
  // /packages want ("" for nothing): values one a line, each `VALUE` (any host) or `HOST VALUE`
  // (that host only). Check error() before use.
  SecretUpstream(std::string network, const std::vector<std::string>& aliases,
                 const std::string& auth)
      : dir_("upstream"),
        name_("execmcp-secretup-" + std::to_string(::getpid()) + "-" + std::to_string(++count())),
        network_(std::move(network)) {
    error_ = make_test_certs(dir_.path(), aliases);
    if (!error_.empty()) return;
    write_test_file(dir_.path() + "/secret_upstream.py",
                    read_host_file(EXECMCP_SECRET_UPSTREAM_SCRIPT));
    std::string args =
        " --cert /upstream/server.pem --key /upstream/server.key"
        " --record /record/requests.jsonl";
    if (!auth.empty()) {
      write_test_file(dir_.path() + "/auth", auth);  // a file: never on a command line
      args += " --auth-file /upstream/auth";
    }
    std::string alias_flags;
    for (const auto& a : aliases) alias_flags += " --network-alias " + a;
    sh(outside_cli() + " run -d --name " + name_ + " --label execmcp.test=secret-upstream" +
       " --network " + network_ + alias_flags +
       " --read-only --tmpfs /tmp:rw,mode=1777 --tmpfs /record:rw,mode=1777"
       " --cap-drop ALL --security-opt no-new-privileges -v " +
       dir_.path() + ":/upstream:ro " + kImage + " python3 /upstream/secret_upstream.py" + args);
    for (int i = 0; i < 200; ++i) {
      const std::string log = sh(outside_cli() + " logs " + name_ + " 2>&1");
      if (log.find("secret-upstream: listening") != std::string::npos) return;
      if (!container_running()) {
        error_ = "the upstream did not start: " + log;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    error_ = "the upstream did not listen within 20 s";
  }
  ~SecretUpstream() { sh(outside_cli() + " rm -f " + name_); }
  SecretUpstream(const SecretUpstream&) = delete;
  SecretUpstream& operator=(const SecretUpstream&) = delete;

  [[nodiscard]] const std::string& error() const { return error_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  // The test CA: its PEM, and its path on this machine (to mount or pass as upstream_ca).
  [[nodiscard]] std::string ca_path() const { return dir_.path() + "/ca.pem"; }
  [[nodiscard]] std::string ca_pem() const { return read_host_file(ca_path()); }

  // Every request the upstream got so far, in order: {method, path, headers: [[name, value]...],
  // body: base64}.
  [[nodiscard]] std::vector<nlohmann::json> requests() const {
    std::vector<nlohmann::json> out;
    std::istringstream lines(sh(outside_cli() + " exec " + name_ + " cat /record/requests.jsonl"));
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) out.push_back(nlohmann::json::parse(line, nullptr, false));
    return out;
  }
  // The value of header `name` (any case) in one recorded request, or "".
  static std::string header(const nlohmann::json& request, const std::string& name) {
    for (const auto& h : request.value("headers", nlohmann::json::array())) {
      std::string key = h.at(0).get<std::string>();
      if (key.size() != name.size()) continue;
      bool same = true;
      for (std::size_t i = 0; i < key.size(); ++i)
        same = same && std::tolower(static_cast<unsigned char>(key[i])) ==
                           std::tolower(static_cast<unsigned char>(name[i]));
      if (same) return h.at(1).get<std::string>();
    }
    return {};
  }

 private:
  bool container_running() const {
    return trim(sh(outside_cli() + " inspect -f '{{.State.Running}}' " + name_)) == "true";
  }
  static int& count() {
    static int n = 0;
    return n;
  }

  TempDir dir_;
  std::string name_;
  std::string network_;
  std::string error_;
};

}  // namespace execmcp::docker_test
