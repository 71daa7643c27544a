// execmcp-supervisor: the local backend's spare pool as a program of its own (see
// supervision/spare_pool.cpp). It links nothing beyond the C library and the pool, so it can be
// linked statically and starts in microseconds.
#include "supervision/spare_pool.hpp"

int main(int argc, char** argv) {
  return execmcp::plugins::supervision::spare_pool_main(argc, argv);
}
