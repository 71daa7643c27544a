# Builds execmcp from source on the offline base and installs it into /stage, for the server
# image (docker/build.sh --server without --from-build). The packages come from
# scripts/install-deps.sh, so the list of build dependencies lives in one place.
ARG BASE_IMAGE=execmcp/debian-base:bookworm
FROM ${BASE_IMAGE}
SHELL ["/bin/sh", "-eu", "-c"]

COPY scripts/install-deps.sh /tmp/install-deps.sh
RUN apt-get update -qq; /tmp/install-deps.sh; apt-get clean; rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY . .
# JOBS: the machine's cores are often shared; docker/build.sh passes EXECMCP_JOBS.
ARG JOBS=2
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DEXECMCP_BUILD_TESTS=OFF -DEXECMCP_BUILD_BENCH=OFF -DCMAKE_INSTALL_PREFIX=/usr/local; \
    cmake --build /build -j"${JOBS}"; \
    cmake --install /build --prefix /stage --strip; \
    rm -rf /stage/include /stage/lib/cmake; find /stage -name '*.a' -delete; \
    docker/server/runtime-packages.sh /stage >/runtime-packages.txt; \
    cat /runtime-packages.txt
