// The bounded JSON parser (see bounded_json.hpp).
#include "common/bounded_json.hpp"

#include <utility>
#include <vector>

namespace execmcp::host {

using nlohmann::json;

namespace {

// A SAX handler that builds the DOM like nlohmann's own parser, without recursion, and stops the
// parse (by returning false) as soon as the message passes a limit.
class BoundedBuilder {
 public:
  enum class Refused { kNothing, kDepth, kValues };

  BoundedBuilder(const JsonLimits& limits, std::string_view watch)
      : limits_(limits), watch_(watch) {}

  bool null() { return add(json(nullptr)); }
  bool boolean(bool value) { return add(json(value)); }
  bool number_integer(json::number_integer_t value) { return add(json(value)); }
  bool number_unsigned(json::number_unsigned_t value) { return add(json(value)); }
  bool number_float(json::number_float_t value, const json::string_t&) { return add(json(value)); }
  bool string(json::string_t& value) { return add(json(std::move(value))); }
  bool binary(json::binary_t& value) { return add(json::binary(std::move(value))); }
  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(json::string_t& name) {
    if (!count()) return false;
    const bool watched = !watch_.empty() && stack_.size() == 1 && name == watch_;
    key_slot_ = &(*stack_.back())[std::move(name)];  // std::map: the slot's address is stable
    if (watched) watched_slot_ = key_slot_;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const json::exception&) {
    error_position_ = position;
    return false;
  }

  [[nodiscard]] Refused refused() const { return refused_; }
  [[nodiscard]] std::size_t error_position() const { return error_position_; }
  [[nodiscard]] json take_root() { return std::move(root_); }
  // The watched top-level member read so far; else null.
  [[nodiscard]] json watched() const {
    return watched_slot_ == nullptr ? json(nullptr) : *watched_slot_;
  }

 private:
  bool count() {
    if (++values_ <= limits_.max_values) return true;
    refused_ = Refused::kValues;
    return false;
  }
  json* place(json value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    json& parent = *stack_.back();
    if (parent.is_array()) {
      // Only the innermost container grows, so pointers to its ancestors' elements stay valid.
      parent.push_back(std::move(value));
      return &parent.back();
    }
    *key_slot_ = std::move(value);
    return key_slot_;
  }
  bool add(json value) {
    if (!count()) return false;
    place(std::move(value));
    return true;
  }
  bool open(json container) {
    if (stack_.size() >= limits_.max_depth) {
      refused_ = Refused::kDepth;
      return false;
    }
    if (!count()) return false;
    stack_.push_back(place(std::move(container)));
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  const JsonLimits& limits_;
  const std::string_view watch_;
  json root_;
  std::vector<json*> stack_;      // the open containers, outermost first
  json* key_slot_ = nullptr;      // where the next value of the innermost object goes
  json* watched_slot_ = nullptr;  // the watched top-level member, once its key was read
  std::size_t values_ = 0;
  std::size_t error_position_ = 0;
  Refused refused_ = Refused::kNothing;
};

}  // namespace

std::variant<json, JsonRefusal> parse_bounded_json(std::string_view text, const JsonLimits& limits,
                                                   std::string_view watch) {
  const bool too_long = text.size() > limits.max_bytes;
  if (too_long) text = text.substr(0, limits.max_bytes);  // read what fits, for `watch`
  BoundedBuilder builder(limits, watch);
  const bool parsed = json::sax_parse(text, &builder, json::input_format_t::json, true, false);
  if (parsed && !too_long) return builder.take_root();
  JsonRefusal refusal;
  if (too_long) {
    refusal.kind = JsonRefusal::Kind::kTooLong;
  } else if (builder.refused() == BoundedBuilder::Refused::kDepth) {
    refusal.kind = JsonRefusal::Kind::kTooDeep;
  } else if (builder.refused() == BoundedBuilder::Refused::kValues) {
    refusal.kind = JsonRefusal::Kind::kTooManyValues;
  } else {
    refusal.position = builder.error_position();
    return refusal;
  }
  refusal.watched = builder.watched();
  return refusal;
}

}  // namespace execmcp::host
