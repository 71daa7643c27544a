// An mcp::AccessCheck whose decisions are a test's function.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "transport/http/http_endpoint.hpp"

namespace execmcp::host::testing {

class FakeAccessCheck final : public mcp::AccessCheck {
 public:
  using Decide = std::function<mcp::AccessDecision(const http::HttpRequest& request,
                                                   const std::string& agent)>;
  explicit FakeAccessCheck(Decide decide) : decide_(std::move(decide)) {}
  mcp::AccessDecision check(const http::HttpRequest& request,
                            const std::string& agent_id) const override {
    return decide_(request, agent_id);
  }

 private:
  Decide decide_;
};

}  // namespace execmcp::host::testing
