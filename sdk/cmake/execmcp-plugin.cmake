# execmcp_add_plugin(<name> SOURCES <src>... [LIBRARIES <lib>...] [OUTPUT_DIRECTORY <dir>])
# Builds one execmcp plugin: a MODULE library named execmcp_<name>.so with hidden visibility,
# linked to execmcp::sdk. The host finds it by the descriptor inside, not by the file name.
include_guard(GLOBAL)

function(execmcp_add_plugin name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "execmcp_add_plugin(${name}): SOURCES is required")
  endif()
  set(target "execmcp_plugin_${name}")
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE execmcp::sdk ${ARG_LIBRARIES})
  if(TARGET execmcp_warnings)
    target_link_libraries(${target} PRIVATE execmcp_warnings)
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME "execmcp_${name}"
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON)
  target_compile_features(${target} PRIVATE cxx_std_20)
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIRECTORY}")
  elseif(DEFINED EXECMCP_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${EXECMCP_PLUGIN_OUTPUT_DIR}")
  endif()
  if(DEFINED EXECMCP_PLUGIN_INSTALL_DIR AND PROJECT_IS_TOP_LEVEL)
    install(TARGETS ${target} LIBRARY DESTINATION "${EXECMCP_PLUGIN_INSTALL_DIR}")
    # The in-tree build's `execmcp_product` target builds every installed plugin.
    set_property(GLOBAL APPEND PROPERTY EXECMCP_INSTALLED_PLUGINS ${target})
  endif()
endfunction()
