// Tests of plugin discovery and loading: the good plugin, and one clear error per kind of bad file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "plugins/plugin_registry.hpp"
#include "test_support.hpp"

namespace execmcp::host {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string fixture(const std::string& name) {
  return (fs::path(EXECMCP_FIXTURE_PLUGIN_DIR) / (name + ".so")).string();
}

std::string only_error(const PluginRegistry& registry) {
  EXPECT_EQ(registry.errors().size(), 1u);
  return registry.errors().empty() ? std::string() : registry.errors().front();
}

TEST(PluginRegistry, LoadsAGoodBackendAndCreatesIt) {
  PluginRegistry registry;
  ASSERT_TRUE(registry.load_file(fixture("fixture_echo_backend")));
  const PluginInfo* info = registry.find("fixture-echo");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->kind, sdk::PluginKind::Backend);
  EXPECT_EQ(info->version, "1.0.0");
  EXPECT_EQ(info->abi_major, sdk::kAbiMajor);
  EXPECT_EQ(info->file, fs::canonical(fixture("fixture_echo_backend")).string());

  sdk::BackendInit init;
  init.cwd = "/ws";
  init.settings_json = "{}";
  auto backend = registry.create_backend("fixture-echo", init);
  ASSERT_NE(backend, nullptr);
  sdk::ExecRequest request;
  request.command = "hello";
  EXPECT_EQ(backend->execute(request).stdout_data, "echo:hello\n");
}

TEST(PluginRegistry, ObjectsKeepTheirLibraryLoadedAfterTheRegistryIsGone) {
  PluginPtr<sdk::ExecutorBackend> backend;
  {
    PluginRegistry registry;
    ASSERT_TRUE(registry.load_file(fixture("fixture_echo_backend")));
    backend = registry.create_backend("fixture-echo", sdk::BackendInit{});
  }
  sdk::ExecRequest request;
  request.command = "still here";
  EXPECT_EQ(backend->execute(request).stdout_data, "echo:still here\n");  // would crash if unloaded
}

TEST(PluginRegistry, PluginSettingsErrorNamesPluginAndFile) {
  PluginRegistry registry;
  ASSERT_TRUE(registry.load_file(fixture("fixture_echo_backend")));
  sdk::BackendInit init;
  init.settings_json = R"({"colour": "red"})";
  try {
    (void)registry.create_backend("fixture-echo", init);
    FAIL() << "expected PluginError";
  } catch (const PluginError& e) {
    EXPECT_THAT(e.what(),
                AllOf(HasSubstr("plugin 'fixture-echo'"), HasSubstr("fixture_echo_backend.so"),
                      HasSubstr("unknown setting 'colour' (known: exit_code, start_error, "
                                "cleanup_marker, start_delay_ms, start_marker)")));
  }
}

TEST(PluginRegistry, WrongAbiMajorIsRefusedWithExpectedAndFound) {
  PluginRegistry registry;
  EXPECT_FALSE(registry.load_file(fixture("fixture_abi_major")));
  const std::string error = only_error(registry);
  const std::string host_abi =
      std::to_string(sdk::kAbiMajor) + "." + std::to_string(sdk::kAbiMinor);
  EXPECT_THAT(error, AllOf(HasSubstr("fixture_abi_major.so: incompatible plugin ABI"),
                           HasSubstr("expected " + host_abi), HasSubstr("found 99.0"),
                           HasSubstr("major version must match"),
                           HasSubstr("Rebuild the plugin against execmcp SDK " + host_abi)));
  EXPECT_EQ(registry.find("fixture-abi-major"), nullptr);
}

TEST(PluginRegistry, AnOlderAbiMajorIsRefusedWithHowToRebuild) {
  // A plugin built against SDK 1.x: its vtable lacks query_interface, so calling it would read
  // past the table. Refused before its factory runs, with what changed and what to do.
  PluginRegistry registry;
  EXPECT_FALSE(registry.load_file(fixture("fixture_abi_old")));
  const std::string host_abi =
      std::to_string(sdk::kAbiMajor) + "." + std::to_string(sdk::kAbiMinor);
  EXPECT_THAT(
      only_error(registry),
      AllOf(HasSubstr("fixture_abi_old.so: incompatible plugin ABI"), HasSubstr("found 1.1"),
            HasSubstr("plugin ABI 1.1 is no longer supported"), HasSubstr("query_interface"),
            HasSubstr("Rebuild the plugin against execmcp SDK " + host_abi),
            HasSubstr("needs no source change")));
  EXPECT_EQ(registry.find("fixture-abi-old"), nullptr);
}

TEST(PluginRegistry, NewerAbiMinorIsRefused) {
  PluginRegistry registry;
  EXPECT_FALSE(registry.load_file(fixture("fixture_abi_minor")));
  const std::string found =
      std::to_string(sdk::kAbiMajor) + "." + std::to_string(sdk::kAbiMinor + 1);
  EXPECT_THAT(only_error(registry),
              AllOf(HasSubstr("fixture_abi_minor.so: incompatible plugin ABI"),
                    HasSubstr("minor <= " + std::to_string(sdk::kAbiMinor)),
                    HasSubstr("found " + found), HasSubstr("needs a newer host")));
}

TEST(PluginRegistry, OtherCompilerIsOnlyAWarning) {
  PluginRegistry registry;
  EXPECT_TRUE(registry.load_file(fixture("fixture_other_compiler")));
  EXPECT_TRUE(registry.errors().empty());
  ASSERT_EQ(registry.warnings().size(), 1u);
  EXPECT_THAT(registry.warnings()[0], AllOf(HasSubstr("fixture_other_compiler.so"),
                                            HasSubstr("othercc-1.0"), HasSubstr(sdk::kCompilerId)));
  EXPECT_NE(registry.create_filter("fixture-other-compiler", sdk::FilterInit{}), nullptr);
}

TEST(PluginRegistry, ThrowingFactoryBecomesOneClearError) {
  PluginRegistry registry;
  ASSERT_TRUE(registry.load_file(fixture("fixture_throwing_factory")));
  try {
    (void)registry.create_backend("fixture-throws", sdk::BackendInit{});
    FAIL() << "expected PluginError";
  } catch (const PluginError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("fixture_throwing_factory.so"),
                                HasSubstr("factory threw: fixture factory exploded")));
  }
  sdk::BackendInit init;
  init.settings_json = "null";
  try {
    (void)registry.create_backend("fixture-throws", init);
    FAIL() << "expected PluginError";
  } catch (const PluginError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("fixture_throwing_factory.so"),
                                HasSubstr("fixture factory refuses: asked to return null")));
  }
}

TEST(PluginRegistry, PlainLibraryIsNotAPlugin) {
  PluginRegistry registry;
  EXPECT_FALSE(registry.load_file(fixture("fixture_no_descriptor")));
  EXPECT_THAT(only_error(registry),
              AllOf(HasSubstr("fixture_no_descriptor.so: not an execmcp plugin"),
                    HasSubstr("execmcp_plugin_descriptor")));
}

TEST(PluginRegistry, LoaderFailureCarriesTheDlopenMessage) {
  PluginRegistry registry;
  EXPECT_FALSE(registry.load_file(fixture("fixture_unresolved_symbol")));
  EXPECT_THAT(only_error(registry), AllOf(HasSubstr("fixture_unresolved_symbol.so: cannot load"),
                                          HasSubstr("execmcp_fixture_symbol_that_does_not_exist")));

  tests::TempDir dir;
  tests::write_text(dir.path() / "garbage.so", "this is not an ELF file");
  PluginRegistry garbage;
  EXPECT_FALSE(garbage.load_file((dir.path() / "garbage.so").string()));
  EXPECT_THAT(only_error(garbage),
              AllOf(HasSubstr("garbage.so: cannot load"), HasSubstr("garbage.so")));
}

TEST(PluginRegistry, MissingExplicitFileOrPathIsAnError) {
  PluginRegistry registry;
  EXPECT_FALSE(registry.load_file("/nonexistent/execmcp_nothing.so"));
  EXPECT_THAT(only_error(registry),
              HasSubstr("/nonexistent/execmcp_nothing.so: plugin file does not exist"));

  PluginRegistry scanned;
  scanned.scan({"/nonexistent/required", "/nonexistent/optional"}, {"/nonexistent/required"});
  EXPECT_THAT(only_error(scanned), HasSubstr("/nonexistent/required: plugin path does not exist"));
}

TEST(PluginRegistry, ScanFindsGoodPluginsAndReportsEveryBadFile) {
  PluginRegistry registry;
  registry.scan({EXECMCP_FIXTURE_PLUGIN_DIR});
  EXPECT_NE(registry.find("fixture-echo"), nullptr);
  EXPECT_NE(registry.find("fixture-word"), nullptr);
  EXPECT_NE(registry.find("fixture-throws"), nullptr);
  EXPECT_NE(registry.find("fixture-other-compiler"), nullptr);
  EXPECT_EQ(registry.find("fixture-abi-major"), nullptr);
  EXPECT_EQ(registry.find("fixture-abi-minor"), nullptr);
  EXPECT_EQ(registry.find("fixture-abi-old"), nullptr);
  // abi major, older abi major, abi minor, no descriptor, unresolved
  EXPECT_EQ(registry.errors().size(), 5u);
}

TEST(PluginRegistry, FirstFoundWinsAndDuplicatesAreReported) {
  tests::TempDir first;
  tests::TempDir second;
  fs::copy_file(fixture("fixture_echo_backend"), first.path() / "a.so");
  fs::copy_file(fixture("fixture_echo_backend"), second.path() / "b.so");
  PluginRegistry registry;
  registry.scan({first.str(), second.str()});
  ASSERT_NE(registry.find("fixture-echo"), nullptr);
  EXPECT_EQ(registry.find("fixture-echo")->file, fs::canonical(first.path() / "a.so").string());
  ASSERT_EQ(registry.warnings().size(), 1u);
  EXPECT_THAT(registry.warnings()[0],
              AllOf(HasSubstr("b.so: plugin 'fixture-echo' ignored: already loaded from"),
                    HasSubstr("a.so")));
}

TEST(PluginRegistry, UnknownNameAndWrongKindAreClearErrors) {
  PluginRegistry registry;
  registry.scan({EXECMCP_FIXTURE_PLUGIN_DIR});
  try {
    (void)registry.create_backend("nope", sdk::BackendInit{});
    FAIL();
  } catch (const PluginError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("no backend plugin named 'nope'"),
                                HasSubstr("fixture-echo"), HasSubstr(EXECMCP_FIXTURE_PLUGIN_DIR)));
  }
  try {
    (void)registry.create_backend("fixture-word", sdk::BackendInit{});
    FAIL();
  } catch (const PluginError& e) {
    EXPECT_THAT(e.what(), HasSubstr("is a filter, not a backend"));
  }
}

TEST(PluginRegistry, DefaultSearchDirsKeepTheDocumentedOrder) {
  tests::ScopedEnv env("EXECMCP_PLUGIN_PATH", std::string("/env/one::/env/two"));
  const auto dirs = PluginRegistry::default_search_dirs({"/from/config"});
  ASSERT_EQ(dirs.size(), 5u);
  EXPECT_EQ(dirs[0], "/from/config");
  EXPECT_EQ(dirs[1], "/env/one");
  EXPECT_EQ(dirs[2], "/env/two");
  EXPECT_THAT(dirs[3], HasSubstr("lib/execmcp/plugins"));
  EXPECT_EQ(fs::path(dirs[3]).parent_path().parent_path().parent_path(),
            fs::path(dirs[4]).parent_path());
}

}  // namespace
}  // namespace execmcp::host
