// Tests for decode_message and parse_message: the limits on one incoming line (depth, values,
// bytes), id recovery from a refused line, and JSON-RPC validation without any session.
#include "mcp/json_rpc.hpp"

#include <gtest/gtest.h>

#include <string>

namespace execmcp::host::mcp {
namespace {

using nlohmann::json;

std::string nested(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

ErrorReply error_of(const DecodedMessage& decoded) {
  const auto* error = std::get_if<ErrorReply>(&decoded);
  EXPECT_NE(error, nullptr) << "expected an error reply";
  return error != nullptr ? *error : ErrorReply{nullptr, {0, "not an error"}};
}

TEST(ParseMessage, DepthUpToTheLimitParsesAndOneMoreIsRefused) {
  const MessageLimits limits{1024, 1000, 8};
  const auto ok = parse_message(nested(8), limits);
  ASSERT_TRUE(std::holds_alternative<json>(ok));
  EXPECT_EQ(std::get<json>(ok).dump(), nested(8));
  const auto deep = parse_message(nested(9), limits);
  ASSERT_TRUE(std::holds_alternative<ParseRefusal>(deep));
  EXPECT_EQ(std::get<ParseRefusal>(deep).error.code, rpc_error::kInvalidRequest);
  EXPECT_NE(std::get<ParseRefusal>(deep).error.message.find("deeper than 8"), std::string::npos);
}

TEST(ParseMessage, ValuesUpToTheLimitParseAndOneMoreIsRefused) {
  const MessageLimits limits{1024, 5, 8};
  // The object, its key, the array and two values: five.
  EXPECT_TRUE(std::holds_alternative<json>(parse_message(R"({"a":[1,"x"]})", limits)));
  const auto many = parse_message(R"({"a":[1,"x",null]})", limits);
  ASSERT_TRUE(std::holds_alternative<ParseRefusal>(many));
  EXPECT_NE(std::get<ParseRefusal>(many).error.message.find("more than 5 JSON values"),
            std::string::npos);
}

TEST(ParseMessage, BuildsTheSameValueAsTheLibraryParser) {
  const std::string text =
      R"({"a":[1,-2,3.5,true,false,null,"s\u00e9",{"b":{}},[]],"c":{"d":[[1],[2,{"e":"f"}]]},"c2":18446744073709551615})";
  const auto parsed = parse_message(text, MessageLimits{});
  ASSERT_TRUE(std::holds_alternative<json>(parsed));
  EXPECT_EQ(std::get<json>(parsed), json::parse(text));
  // A repeated key keeps the last value, like the library parser.
  EXPECT_EQ(std::get<json>(parse_message(R"({"k":[1,2],"k":{"x":1}})", MessageLimits{})),
            json::parse(R"({"k":{"x":1}})"));
}

TEST(DecodeMessage, RefusedLinesKeepTheTopLevelIdWhenItWasRead) {
  const MessageLimits limits{64, 100, 4};
  // Too deep: the id came first.
  const auto deep = error_of(decode_message(
      R"({"jsonrpc":"2.0","id":"a","method":"m","params":)" + nested(10) + "}", limits));
  EXPECT_EQ(deep.id, "a");
  EXPECT_EQ(deep.error.code, rpc_error::kInvalidRequest);
  // Too long: the id is in the part that fits.
  const std::string long_line =
      R"({"jsonrpc":"2.0","id":7,"method":"m","params":{"s":")" + std::string(100, 'x') + "\"}}";
  const auto too_long = error_of(decode_message(long_line, limits));
  EXPECT_EQ(too_long.id, 7);
  EXPECT_NE(too_long.error.message.find("longer than 64 bytes"), std::string::npos);
  // Too long, the id after the cut: null.
  const std::string late_id =
      R"({"params":{"s":")" + std::string(100, 'x') + R"("},"id":8,"jsonrpc":"2.0"})";
  EXPECT_TRUE(error_of(decode_message(late_id, limits)).id.is_null());
  // An "id" nested below the top level is not the request's.
  const auto nested_id =
      error_of(decode_message(R"({"params":{"id":9,"x":)" + nested(10) + "}}", limits));
  EXPECT_TRUE(nested_id.id.is_null());
}

TEST(DecodeMessage, SyntaxErrorsAreParseErrorsWithANullId) {
  const auto error =
      error_of(decode_message(R"({"jsonrpc":"2.0","id":1,"method":)", MessageLimits{}));
  EXPECT_EQ(error.error.code, rpc_error::kParseError);
  EXPECT_TRUE(error.id.is_null());
  EXPECT_EQ(error_of(decode_message("{} trailing", MessageLimits{})).error.code,
            rpc_error::kParseError);
}

TEST(DecodeMessage, SortsRequestsNotificationsAndClientResponses) {
  const MessageLimits limits;
  const auto request = decode_message(R"({"jsonrpc":"2.0","id":3,"method":"ping"})", limits);
  ASSERT_TRUE(std::holds_alternative<Request>(request));
  EXPECT_EQ(std::get<Request>(request).id, 3);
  EXPECT_EQ(std::get<Request>(request).params, json::object());
  const auto notification = decode_message(
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}})", limits);
  ASSERT_TRUE(std::holds_alternative<Notification>(notification));
  EXPECT_EQ(std::get<Notification>(notification).params["requestId"], 3);
  EXPECT_TRUE(std::holds_alternative<Ignored>(
      decode_message(R"({"jsonrpc":"2.0","id":3,"result":{}})", limits)));
  EXPECT_TRUE(std::holds_alternative<Ignored>(decode_message(" \t\r", limits)));
}

TEST(DecodeMessage, OverlongStringIdsAndMethodsAreRefused) {
  const std::string id(kMaxIdBytes + 1, 'i');
  const auto error = error_of(decode_message(
      json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "ping"}}.dump(), MessageLimits{}));
  EXPECT_EQ(error.error.code, rpc_error::kInvalidRequest);
  EXPECT_TRUE(error.id.is_null());
  EXPECT_TRUE(std::holds_alternative<Request>(decode_message(
      json{{"jsonrpc", "2.0"}, {"id", id.substr(1)}, {"method", "ping"}}.dump(), MessageLimits{})));
  const auto long_method = error_of(decode_message(
      json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", std::string(kMaxIdBytes + 1, 'm')}}.dump(),
      MessageLimits{}));
  EXPECT_EQ(long_method.error.code, rpc_error::kInvalidRequest);
  EXPECT_EQ(long_method.id, 1);
}

}  // namespace
}  // namespace execmcp::host::mcp
