// Everything a plugin author needs, in one include.
#pragma once

#include "execmcp/sdk/abi_check.hpp"
#include "execmcp/sdk/background_processes.hpp"
#include "execmcp/sdk/command_filter.hpp"
#include "execmcp/sdk/executor_backend.hpp"
#include "execmcp/sdk/log_text.hpp"
#include "execmcp/sdk/network_events.hpp"
#include "execmcp/sdk/path_policy.hpp"
#include "execmcp/sdk/plugin.hpp"
#include "execmcp/sdk/sandbox_control.hpp"
#include "execmcp/sdk/secret_events.hpp"
#include "execmcp/sdk/settings_check.hpp"
#include "execmcp/sdk/types.hpp"
#include "execmcp/sdk/version.hpp"
