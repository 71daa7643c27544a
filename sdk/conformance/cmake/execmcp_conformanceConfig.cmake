# execmcp backend conformance kit: provides execmcp::conformance (needs the execmcp SDK package).
include(CMakeFindDependencyMacro)
find_dependency(execmcp)
find_dependency(Threads)
find_dependency(GTest)
find_dependency(Boost 1.74 COMPONENTS filesystem)
include("${CMAKE_CURRENT_LIST_DIR}/execmcpConformanceTargets.cmake")
