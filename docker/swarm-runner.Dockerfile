# An image plus execmcp-runner, for the docker-swarm backend: a sandbox there is a Swarm service
# whose task's command is the runner listening on the sandbox's overlay network (the backend cannot
# deliver it at run time: Swarm has no exec across nodes). Built by docker/build.sh --swarm-runtime
# (FROM the runtime image) and --swarm-test (FROM the tests' static busybox image), with the
# static runner of the build tree in the context.
ARG BASE_IMAGE=execmcp/runtime:latest
FROM ${BASE_IMAGE}

# The protocol version the runner speaks (runner_protocol.hpp kVersion), for the backend to check.
ARG RUNNER_VERSION
# The image user's uid/gid (docker/build.sh --uid), the owner of /workspace.
ARG EXECMCP_UID=1000
ARG EXECMCP_GID=1000
LABEL org.execmcp.runner-version="${RUNNER_VERSION}"

USER root
COPY execmcp-runner /usr/lib/execmcp/execmcp-runner
# Root-owned and not writable by the commands' uid (they cannot swap the runner for the next task),
# and /workspace the image user's: a new volume mounted there copies that ownership.
RUN chown 0:0 /usr/lib/execmcp /usr/lib/execmcp/execmcp-runner && \
    chmod 0755 /usr/lib/execmcp /usr/lib/execmcp/execmcp-runner && \
    mkdir -p /workspace && chown "${EXECMCP_UID}:${EXECMCP_GID}" /workspace

USER ${EXECMCP_UID}:${EXECMCP_GID}
WORKDIR /workspace
