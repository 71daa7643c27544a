// A scripted engine under SwarmApi: each request is recorded, and answered by the first canned
// answer whose method and path prefix match (the version prefix included), else 404. An answer
// given with answer_once() is used up by the first request it answers.
// Header-only, for the docker-swarm backend's unit tests.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "docker_swarm/swarm_api.hpp"

namespace execmcp::plugins::docker_swarm {

class FakeSwarmTransport final : public SwarmTransport {
 public:
  struct Request {
    std::string method;
    std::string path;
    std::string body;
  };
  struct Answer {
    std::string method;
    std::string path_prefix;
    HttpResponse response;
    bool once = false;
  };
  std::vector<Request> requests;
  std::vector<Answer> answers;

  void answer(std::string method, std::string path_prefix, int status, std::string body) {
    HttpResponse r;
    r.status = status;
    r.body = std::move(body);
    answers.push_back({std::move(method), std::move(path_prefix), std::move(r)});
  }
  // Answers one request only (then the next matching answer takes over): a sequence of states.
  void answer_once(std::string method, std::string path_prefix, int status, std::string body) {
    answer(std::move(method), std::move(path_prefix), status, std::move(body));
    answers.back().once = true;
  }
  // The engine unreachable for a call.
  void fail(std::string method, std::string path_prefix, std::string error) {
    HttpResponse r;
    r.error = std::move(error);
    answers.push_back({std::move(method), std::move(path_prefix), std::move(r)});
  }

  HttpResponse request(std::string_view method, const std::string& path,
                       const std::string& body) override {
    requests.push_back({std::string(method), path, body});
    for (auto it = answers.begin(); it != answers.end(); ++it) {
      if (it->method != method || path.rfind(it->path_prefix, 0) != 0) continue;
      HttpResponse r = it->response;
      if (it->once) answers.erase(it);
      return r;
    }
    HttpResponse r;
    r.status = 404;
    r.body = R"({"message":"no such object"})";
    return r;
  }
};

}  // namespace execmcp::plugins::docker_swarm
